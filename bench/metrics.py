"""Retrieval metrics: scores for one ranked list of turn ids, their means per group, and reports."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import NotRequired, TypedDict


@dataclass(frozen=True)
class QueryScores:
    """Scores of one query, each in [0, 1]; a mean of them is the score of a group."""

    # Share of the evidence turns found in the top k. This is the figure the product owner
    # reported as "Recall@10" (BM25 0.509, MiniLM 0.444 on codes 1-4).
    recall_at_5: float
    recall_at_10: float
    # 1 if any evidence turn is in the top k.
    recall_any_at_5: float
    recall_any_at_10: float
    # 1 if every evidence turn is in the top k.
    recall_all_at_5: float
    recall_all_at_10: float
    ndcg_at_10: float
    # Reciprocal rank of the first evidence turn, 0 when none is in the top 10.
    mrr_at_10: float
    # 1 if any of the top-5 turns is in a session that holds an evidence turn (the issue's
    # definition).
    session_recall_at_5: float
    # 1 if any of the first five distinct sessions met in the ranking holds an evidence turn.
    # The owner's "session-level Recall@5" of 0.828 matches this reading, not the one above.
    session_recall_at_5_distinct: float


@dataclass(frozen=True)
class Summary:
    """The mean scores of a group of queries."""

    n: int
    mean: QueryScores


class GroupResult(TypedDict):
    label: str
    n: int
    metrics: dict[str, float]


class RetrieverResult(TypedDict):
    seconds: float
    groups: dict[str, GroupResult]
    # The same groups for parts of the dataset (LoCoMo: tuning and held-out conversations).
    splits: NotRequired[dict[str, dict[str, GroupResult]]]


class DatasetSummary(TypedDict):
    name: str
    conversations: int
    turns: int
    questions: int
    scored_questions: int
    # Questions left out because no evidence turn survives cleaning, by category code.
    excluded_no_evidence: dict[str, int]


class BenchmarkResult(TypedDict):
    k: int
    dataset: DatasetSummary
    retrievers: dict[str, RetrieverResult]


# Table columns in print order: QueryScores field, header.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("recall_at_5", "R@5"),
    ("recall_at_10", "R@10"),
    ("recall_any_at_5", "any@5"),
    ("recall_any_at_10", "any@10"),
    ("recall_all_at_5", "all@5"),
    ("recall_all_at_10", "all@10"),
    ("ndcg_at_10", "NDCG@10"),
    ("mrr_at_10", "MRR@10"),
    ("session_recall_at_5", "sess@5"),
    ("session_recall_at_5_distinct", "sess@5d"),
)


def score_query(
    ranked: Sequence[str], evidence: Collection[str], session_of: Mapping[str, int]
) -> QueryScores:
    """Score a ranked list of turn ids against the evidence turn ids of one query.

    `session_of` maps every turn id of the conversation to its session number.
    Raises ValueError when `evidence` is empty: such a query has no right answer to find.
    """
    if not evidence:
        raise ValueError("a query needs at least one evidence turn to be scored")
    # A retriever that repeats an id must not be credited twice for it.
    ranked = list(dict.fromkeys(ranked))
    relevant = set(evidence)
    evidence_sessions = {session_of[turn_id] for turn_id in relevant}
    top_5, top_10 = set(ranked[:5]), set(ranked[:10])
    sessions_in_order = list(dict.fromkeys(session_of.get(turn_id) for turn_id in ranked))
    return QueryScores(
        recall_at_5=len(relevant & top_5) / len(relevant),
        recall_at_10=len(relevant & top_10) / len(relevant),
        recall_any_at_5=float(bool(relevant & top_5)),
        recall_any_at_10=float(bool(relevant & top_10)),
        recall_all_at_5=float(relevant <= top_5),
        recall_all_at_10=float(relevant <= top_10),
        ndcg_at_10=_ndcg(ranked[:10], relevant),
        mrr_at_10=next(
            (1 / rank for rank, turn_id in enumerate(ranked[:10], 1) if turn_id in relevant), 0.0
        ),
        session_recall_at_5=float(
            any(session_of.get(turn_id) in evidence_sessions for turn_id in ranked[:5])
        ),
        session_recall_at_5_distinct=float(bool(evidence_sessions & set(sessions_in_order[:5]))),
    )


def _ndcg(ranked: Sequence[str], relevant: set[str]) -> float:
    # Binary relevance; the ideal ranking puts every evidence turn first.
    gain = sum(1 / math.log2(rank + 1) for rank, t in enumerate(ranked, 1) if t in relevant)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, min(len(relevant), len(ranked)) + 1))
    return gain / ideal if ideal else 0.0


def summarise(scores: Sequence[QueryScores]) -> Summary:
    """Average the scores of a group of queries; an empty group averages to zeros."""
    means = {
        field.name: (sum(getattr(s, field.name) for s in scores) / len(scores) if scores else 0.0)
        for field in fields(QueryScores)
    }
    return Summary(n=len(scores), mean=QueryScores(**means))


def summarise_by_category(
    scored: Iterable[tuple[int, QueryScores]], *, combined: Mapping[str, Collection[int]]
) -> dict[str, Summary]:
    """Summarise per category code (keys "1", "2", ...), then each named union of codes."""
    by_category: dict[int, list[QueryScores]] = {}
    for category, scores in scored:
        by_category.setdefault(category, []).append(scores)
    summaries = {str(code): summarise(by_category[code]) for code in sorted(by_category)}
    for name, codes in combined.items():
        summaries[name] = summarise([s for code in codes for s in by_category.get(code, [])])
    return summaries


def group_result(label: str, summary: Summary) -> GroupResult:
    """Turn a summary into its JSON shape, metrics rounded to four places."""
    metrics = {name: round(value, 4) for name, value in asdict(summary.mean).items()}
    return GroupResult(label=label, n=summary.n, metrics=metrics)


def format_table(result: BenchmarkResult) -> str:
    """Render a benchmark result as a plain-text table, one block per retriever."""
    dataset = result["dataset"]
    excluded = ", ".join(
        f"category {code}: {count}" for code, count in dataset["excluded_no_evidence"].items()
    )
    lines = [
        f"{dataset['name']}: {dataset['conversations']} conversations, {dataset['turns']} turns, "
        f"{dataset['questions']} questions, {dataset['scored_questions']} scored "
        f"(excluded for lack of evidence: {excluded or 'none'}); top k = {result['k']}",
    ]
    header = f"{'group':<18}{'n':>6}" + "".join(f"{title:>9}" for _, title in COLUMNS)
    for name, retriever in result["retrievers"].items():
        lines += ["", f"{name} ({retriever['seconds']:.1f} s)", header]
        for key, group in retriever["groups"].items():
            cells = "".join(f"{group['metrics'][field]:>9.3f}" for field, _ in COLUMNS)
            lines.append(f"{key + ' ' + group['label']:<18}{group['n']:>6}{cells}")
        for split, groups in retriever.get("splits", {}).items():
            lines.append(f"  {split}")
            for key, group in groups.items():
                cells = "".join(f"{group['metrics'][field]:>9.3f}" for field, _ in COLUMNS)
                lines.append(f"{key + ' ' + group['label']:<18}{group['n']:>6}{cells}")
    return "\n".join(lines) + "\n"


def write_results(result: BenchmarkResult, path: Path) -> None:
    """Write a benchmark result as indented JSON, creating the folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
