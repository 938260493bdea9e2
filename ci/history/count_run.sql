-- How many rows of one run a table holds (check-before-insert).
-- Input: any table of schema.sql; {table} is one of its fixed names, never user input.
-- Parameters: run_id String. Output: count.
SELECT count() FROM {table} WHERE run_id = %(run_id)s
