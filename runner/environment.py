"""Machine facts that can make measurements noisy, with warnings. DAMON proactive reclaim pages
out memory idle for ~30 s, the server's code among it; an A/A run with it stopped was not
quieter (bench/bench_aa.py), so it is reported as a fact, not as a known cause."""

from __future__ import annotations

from pathlib import Path

DAMON_ADMIN = Path("/sys/kernel/mm/damon/admin/kdamonds")
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def proactive_reclaim(admin: Path = DAMON_ADMIN) -> str | None:
    """A description of every running DAMON "pageout" scheme, or None when there is none."""
    found = []
    for kdamond in sorted(admin.glob("[0-9]*")):
        if _read(kdamond / "state") != "on":
            continue
        for context in sorted((kdamond / "contexts").glob("[0-9]*")):
            aggregation_us = _read(context / "monitoring_attrs" / "intervals" / "aggr_us")
            for scheme in sorted((context / "schemes").glob("[0-9]*")):
                if _read(scheme / "action") != "pageout":
                    continue
                age = _read(scheme / "access_pattern" / "age" / "min")
                idle = ""
                if age.isdigit() and aggregation_us.isdigit():
                    idle = f" memory idle for {int(age) * int(aggregation_us) / 1e6:.0f} s"
                found.append(f"DAMON pageout (kdamond {kdamond.name}):{idle} is paged out")
    return "; ".join(found) or None


def transparent_hugepages() -> str:
    text = _read(THP)
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else "unknown"


def environment_facts() -> dict[str, object]:
    return {
        "proactive_reclaim": proactive_reclaim() or "none",
        "transparent_hugepages": transparent_hugepages(),
    }


def environment_warnings(facts: dict[str, object]) -> list[str]:
    reclaim = facts.get("proactive_reclaim")
    if not reclaim or reclaim == "none":
        return []
    return [
        f"proactive memory reclaim is on ({reclaim}): a server may run slower while its "
        "paged-out code and data come back; if queries are unstable, compare with it "
        f"stopped (echo off > {DAMON_ADMIN}/N/state)"
    ]
