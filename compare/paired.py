"""The two verdict methods. paired (the default): a rank test within the blocks of each
query's runs, with the Hodges-Lehmann estimate and its interval (compare/blocked.py);
pooled: ClickHouse's randomization test over the pooled runs (compare/randomization.py).
docs/method.md, "The verdict statistic"."""

from __future__ import annotations

PAIRED = "paired"
POOLED = "pooled"
METHODS = (PAIRED, POOLED)
