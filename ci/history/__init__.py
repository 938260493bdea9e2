"""History: every check's results in a ClickHouse database, and a query's past medians.

Modules: target (where the database is, credentials), schema.sql (the tables), records
(artifacts -> rows, pure), store (the only module talking to the database), show (the
`chperf history` table, pure). The schema and how to scale it out are in the README,
"History database".
"""
