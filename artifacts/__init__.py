"""Every file format (one reader, one writer each) and the error type; imports no chperf package."""
