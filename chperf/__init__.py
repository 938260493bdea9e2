"""chperf: side-by-side performance regression check for ClickHouse."""

__version__ = "0.1.0"
