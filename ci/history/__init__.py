"""History: every check's results in a ClickHouse database, and a query's past medians."""
