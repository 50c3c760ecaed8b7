"""The LoCoMo retrieval benchmark: loading the dataset, running retrievers on it, and its CLI.

The data (CC BY-NC) is read in place from the shared folder beside the repo and never copied
into it. Run `python -m bench.locomo --out bench/results/locomo-baselines.json`.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from bench.baselines import BM25Retriever, MiniLMCosineRetriever, Retriever, load_minilm
from bench.metrics import (
    BenchmarkResult,
    DatasetSummary,
    GroupResult,
    QueryScores,
    RetrieverResult,
    format_table,
    group_result,
    score_query,
    summarise_by_category,
    write_results,
)

DEFAULT_DATA_PATH = (
    Path(__file__).resolve().parents[1].parent / "shared/benchmarks/locomo/locomo10.json"
)

CATEGORY_LABELS = {
    "1": "multi-hop",
    "2": "temporal",
    "3": "open-domain",
    "4": "single-hop",
    "1-4": "all",
    "5": "adversarial",
}
# Recall's parameters are chosen on the first five conversations; the other five are held out,
# so the figures on them do not come from tuning on the test (docs/retrieval.md).
SPLITS = {"conversations 1-5 (tuning)": slice(0, 5), "conversations 6-10 (held out)": slice(5, 10)}
SPLITS_NEED = 10
# LoCoMo's headline figures leave out the adversarial questions (code 5), reported apart.
HEADLINE_CODES = (1, 2, 3, 4)
ADVERSARIAL = "5"

_SESSION_KEY = re.compile(r"session_(\d+)")
# Also matches the malformed "D:11:26" and "D30:05"; a bare "D" matches nothing.
_TURN_ID = re.compile(r"D:?(\d+):(\d+)")


@dataclass(frozen=True)
class Turn:
    """One dialog turn, which the benchmark stores as one memory."""

    conversation_id: str
    dia_id: str
    session_no: int
    speaker: str
    # The memory text: "<speaker>: <utterance>", plus " [shares a photo: <caption>]".
    text: str
    # The date of the turn's session; LoCoMo gives no time zone, so it is read as UTC.
    occurred_at: datetime


@dataclass(frozen=True)
class Question:
    """One QA item: the query, and the turn ids that hold its answer."""

    conversation_id: str
    question: str
    category: int
    # Cleaned turn ids, each naming a turn of the conversation; empty when none survives.
    evidence: tuple[str, ...]
    # Empty when the item gives none, as most adversarial (code 5) items do.
    answer: str


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo conversation: two speakers, their turns in order, and the questions on it."""

    id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def clean_evidence(raw: Iterable[str]) -> tuple[str, ...]:
    """Normalise evidence ids ("D:11:26", "D8:6; D9:17", "D30:05") to "D<session>:<turn>"."""
    cleaned = (
        f"D{int(session)}:{int(turn)}" for item in raw for session, turn in _TURN_ID.findall(item)
    )
    return tuple(dict.fromkeys(cleaned))


def load_locomo(path: Path | str = DEFAULT_DATA_PATH) -> list[Conversation]:
    """Load LoCoMo conversations from its JSON file.

    Evidence ids that name no turn of their conversation are dropped; a question left with
    none is kept with empty evidence, and the runner leaves it out of the scores.
    """
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    return [_conversation(sample) for sample in samples]


def _conversation(sample: dict[str, Any]) -> Conversation:
    conversation_id = str(sample["sample_id"])
    dialog = sample["conversation"]
    session_numbers = sorted(int(m[1]) for key in dialog if (m := _SESSION_KEY.fullmatch(key)))
    turns = tuple(
        _turn(
            conversation_id, number, _parse_session_date(dialog[f"session_{number}_date_time"]), raw
        )
        for number in session_numbers
        for raw in dialog[f"session_{number}"]
    )
    turn_ids = {turn.dia_id for turn in turns}
    questions = tuple(
        Question(
            conversation_id=conversation_id,
            question=item["question"],
            category=int(item["category"]),
            evidence=tuple(e for e in clean_evidence(item["evidence"]) if e in turn_ids),
            answer=str(item.get("answer", "")),
        )
        for item in sample["qa"]
    )
    speakers = (str(dialog["speaker_a"]), str(dialog["speaker_b"]))
    return Conversation(id=conversation_id, speakers=speakers, turns=turns, questions=questions)


def _turn(
    conversation_id: str, session_no: int, occurred_at: datetime, raw: dict[str, Any]
) -> Turn:
    text = f"{raw['speaker']}: {raw['text']}"
    if raw.get("blip_caption"):
        text += f" [shares a photo: {raw['blip_caption']}]"
    return Turn(
        conversation_id=conversation_id,
        dia_id=raw["dia_id"],
        session_no=session_no,
        speaker=raw["speaker"],
        text=text,
        occurred_at=occurred_at,
    )


def _parse_session_date(value: str) -> datetime:
    # LoCoMo writes session dates like "1:56 pm on 8 May, 2023".
    return datetime.strptime(value, "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def run_benchmark(
    conversations: Sequence[Conversation],
    retrievers: Sequence[Retriever],
    k: int = 10,
    progress: bool = True,
) -> BenchmarkResult:
    """Index each conversation in each retriever, ask every question, and score the rankings.

    Every retriever sees the same turns and the same questions. Raises ValueError when k < 10,
    since the metrics read the top 10.
    """
    if k < 10:
        raise ValueError(f"k must be at least 10, the depth the metrics read; got {k}")
    questions = [q for c in conversations for q in c.questions]
    scorable = [q for q in questions if q.evidence]
    excluded = Counter(q.category for q in questions if not q.evidence)
    result = BenchmarkResult(
        k=k,
        dataset=DatasetSummary(
            name="LoCoMo",
            conversations=len(conversations),
            turns=sum(len(c.turns) for c in conversations),
            questions=len(questions),
            scored_questions=len(scorable),
            excluded_no_evidence={str(code): excluded[code] for code in sorted(excluded)},
        ),
        retrievers={},
    )
    for retriever in retrievers:
        result["retrievers"][retriever.name] = _run_retriever(
            conversations, retriever, k=k, total=len(scorable), progress=progress
        )
    return result


def _run_retriever(
    conversations: Sequence[Conversation],
    retriever: Retriever,
    *,
    k: int,
    total: int,
    progress: bool,
) -> RetrieverResult:
    started = time.perf_counter()
    scored = []
    scored_by_conversation: list[list[tuple[int, QueryScores]]] = []
    with tqdm(total=total, desc=retriever.name, unit="query", disable=not progress) as bar:
        for conversation in conversations:
            scored_by_conversation.append([])
            bar.set_postfix_str(f"indexing {conversation.id}")
            retriever.index(conversation)
            bar.set_postfix_str(conversation.id)
            session_of = {turn.dia_id: turn.session_no for turn in conversation.turns}
            for question in conversation.questions:
                if not question.evidence:
                    continue
                ranked = retriever.search(conversation.id, question.question, k)
                scores = score_query(ranked, question.evidence, session_of)
                scored.append((question.category, scores))
                scored_by_conversation[-1].append((question.category, scores))
                bar.update()
    seconds = time.perf_counter() - started
    result = RetrieverResult(seconds=round(seconds, 1), groups=_groups(scored))
    if len(conversations) >= SPLITS_NEED:
        result["splits"] = {
            name: _groups([s for part in scored_by_conversation[span] for s in part])
            for name, span in SPLITS.items()
        }
    return result


def _groups(scored: Sequence[tuple[int, QueryScores]]) -> dict[str, GroupResult]:
    summaries = summarise_by_category(scored, combined={"1-4": HEADLINE_CODES})
    keys = [key for key in summaries if key != ADVERSARIAL] + [ADVERSARIAL]
    return {
        key: group_result(CATEGORY_LABELS.get(key, "other"), summaries[key])
        for key in keys
        if key in summaries and summaries[key].n
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark from the command line, print the table, and optionally save JSON."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.locomo", description="Run the LoCoMo retrieval benchmark."
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA_PATH, help="locomo10.json")
    parser.add_argument("--out", type=Path, help="write the results as JSON to this file")
    parser.add_argument(
        "--retriever",
        choices=("bm25", "minilm"),
        action="append",
        help="a baseline to run; repeat for several (default: both)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        parser.error(f"no LoCoMo file at {args.data}; pass --data")
    conversations = load_locomo(args.data)
    retrievers: list[Retriever] = []
    for name in args.retriever or ["bm25", "minilm"]:
        if name == "bm25":
            retrievers.append(BM25Retriever())
        else:
            retrievers.append(MiniLMCosineRetriever(load_minilm()))
    result = run_benchmark(conversations, retrievers, progress=not args.no_progress)
    result["dataset"]["name"] = f"LoCoMo ({args.data.name})"
    print(format_table(result), end="")
    if args.out:
        write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
