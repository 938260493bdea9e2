"""The ground floor: every file chperf writes or reads, one reader and one writer per format,
and the one error type. Imports nothing of chperf's other packages."""
