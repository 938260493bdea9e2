"""chperf: side-by-side performance regression check for ClickHouse. This package is only
the command line; the stages live in runner/, compare/, report/ and ci/."""

from artifacts.manifest import CHPERF_VERSION

__version__ = CHPERF_VERSION
