"""The peer benchmark's arithmetic and output: recall against exact, ratios, the table.

Pure functions of what the two sides measured, so they are tested without Mem0 installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean
from typing import Any

from bench.load_report import percentiles

SYSTEMS = ("memoryhub", "mem0")
# The two ways each system searches: as it ships, and with every vector compared (no ANN).
SEARCHES = ("default", "exact")
# Figures where more is better, and where less is; a ratio is MemoryHub's over Mem0's either way.
HIGHER_IS_BETTER = (
    "add_one_per_second",
    "add_batch_per_second",
    "search_default_recall_at_10",
    "search_default_results",
    "search_default_evidence_recall_at_10",
    "search_exact_evidence_recall_at_10",
)
LOWER_IS_BETTER = (
    "add_one_p50_ms",
    "add_one_p95_ms",
    "search_default_p50_ms",
    "search_default_p95_ms",
    "search_exact_p50_ms",
    "search_exact_p95_ms",
    "peak_rss_mb",
)


def recall_against(found: Sequence[str], exact: Sequence[str], *, k: int = 10) -> float | None:
    """Share of the exact search's top k that the search found in its own top k.

    None when the exact search found nothing (there is nothing to miss).
    """
    truth = set(exact[:k])
    if not truth:
        return None
    return len(truth & set(found[:k])) / len(truth)


def mean_recall(
    found: Sequence[Sequence[str]], exact: Sequence[Sequence[str]], *, k: int = 10
) -> float | None:
    """Mean of `recall_against` over the queries where the exact search found something."""
    recalls = [
        recall
        for one, truth in zip(found, exact, strict=True)
        if (recall := recall_against(one, truth, k=k)) is not None
    ]
    return round(fmean(recalls), 4) if recalls else None


def evidence_recall(
    found: Sequence[Sequence[str]],
    evidence: Sequence[Sequence[str]],
    turns_of: Mapping[str, Sequence[str]],
    *,
    k: int = 10,
) -> float | None:
    """LoCoMo's Recall@k: mean share of a question's evidence turns among the texts found.

    `turns_of` maps a memory text to the turn ids that said it; questions without evidence
    are left out, as in bench/locomo.py.
    """
    shares = []
    for texts, turns in zip(found, evidence, strict=True):
        if not turns:
            continue
        hit = {turn for text in texts[:k] for turn in turns_of.get(text, ())}
        shares.append(len(hit & set(turns)) / len(set(turns)))
    return round(fmean(shares), 4) if shares else None


def throughput(*, count: int, seconds: Sequence[float]) -> float:
    """Items per second over the summed time of the calls that stored them."""
    total = sum(seconds)
    return round(count / total, 1) if total else 0.0


def system_figures(
    *,
    single: Sequence[float],
    batch_seconds: Sequence[float],
    batch_count: int,
    searches: Mapping[str, Mapping[str, Any]],
    peak_rss_mb: float,
) -> dict[str, Any]:
    """One system's figures: `searches[name]` holds `seconds`, `found` and its recalls."""
    return {
        "add_one": {"per_second": throughput(count=len(single), seconds=single)}
        | percentiles(single),
        "add_batch": {
            "per_second": throughput(count=batch_count, seconds=batch_seconds),
            "memories": batch_count,
            "calls": len(batch_seconds),
        },
        "search": {
            name: percentiles(search["seconds"])
            | {
                "results": round(fmean(len(f) for f in search["found"]), 2)
                if search["found"]
                else 0.0,
                "recall_at_10": search["recall_at_10"],
                "evidence_recall_at_10": search["evidence_recall_at_10"],
            }
            for name, search in searches.items()
        },
        "peak_rss_mb": peak_rss_mb,
    }


def flat(figures: Mapping[str, Any]) -> dict[str, float | None]:
    """The figures the ratios compare, under the names HIGHER_IS_BETTER and LOWER_IS_BETTER use."""
    values: dict[str, float | None] = {
        "add_one_per_second": figures["add_one"]["per_second"],
        "add_one_p50_ms": figures["add_one"]["p50_ms"],
        "add_one_p95_ms": figures["add_one"]["p95_ms"],
        "add_batch_per_second": figures["add_batch"]["per_second"],
        "peak_rss_mb": figures["peak_rss_mb"],
    }
    for name in SEARCHES:
        search = figures["search"][name]
        for key in ("p50_ms", "p95_ms", "recall_at_10", "results", "evidence_recall_at_10"):
            values[f"search_{name}_{key}"] = search[key]
    return values


def ratios(memoryhub: Mapping[str, Any], mem0: Mapping[str, Any]) -> dict[str, float | None]:
    """MemoryHub's figure over Mem0's, for every compared figure (None when either is missing
    or Mem0's is zero)."""
    ours, theirs = flat(memoryhub), flat(mem0)
    result: dict[str, float | None] = {}
    for name in (*HIGHER_IS_BETTER, *LOWER_IS_BETTER):
        a, b = ours[name], theirs[name]
        result[name] = round(a / b, 3) if a is not None and b else None
    return result


def _cell(value: float | None, suffix: str = "") -> str:
    return "n/a" if value is None else f"{value:g}{suffix}"


def format_report(report: Mapping[str, Any]) -> str:
    """The table printed at the end of a run."""
    ours, theirs = (flat(report["systems"][name]) for name in SYSTEMS)
    rows = [
        ("add one by one, memories/s", "add_one_per_second"),
        ("add one by one, p50 ms", "add_one_p50_ms"),
        ("add one by one, p95 ms", "add_one_p95_ms"),
        ("batch add, memories/s", "add_batch_per_second"),
        ("search (default index), p50 ms", "search_default_p50_ms"),
        ("search (default index), p95 ms", "search_default_p95_ms"),
        ("search (default index), results of 10", "search_default_results"),
        ("search (default index), recall@10 vs exact", "search_default_recall_at_10"),
        ("search (default), LoCoMo evidence R@10", "search_default_evidence_recall_at_10"),
        ("search (exact scan), p50 ms", "search_exact_p50_ms"),
        ("search (exact scan), p95 ms", "search_exact_p95_ms"),
        ("search (exact scan), LoCoMo evidence R@10", "search_exact_evidence_recall_at_10"),
        ("peak memory (RSS), MB", "peak_rss_mb"),
    ]
    ratio = report["ratios"]
    width = max(len(label) for label, _ in rows)
    lines = [
        f"{'':<{width}}  {'MemoryHub':>10}  {'Mem0':>10}  {'MH/Mem0':>8}",
        *(
            f"{label:<{width}}  {_cell(ours[key]):>10}  {_cell(theirs[key]):>10}  "
            f"{_cell(ratio.get(key)):>8}"
            for label, key in rows
        ),
    ]
    workload = report["workload"]
    lines.append(
        f"{workload['memories']} memories per system ({workload['users']} users), "
        f"{workload['queries']} queries, load average {report['machine']['load_average']} "
        f"at the start, {report['machine']['load_average_after']} at the end"
    )
    return "\n".join(lines) + "\n"
