"""The external extraction benchmark: LoCoMo's human-checked observations as labels.

LoCoMo (Maharana et al., 2024; CC BY-NC 4.0, read in place from the shared folder, never copied
into the repo) gives, for each session and each speaker, *observations*: short third-person
statements ("Caroline attended an LGBTQ support group recently …") with the dialog turn ids
they come from. Each session is played twice, once with each speaker as the user (the other
one is the assistant), through an extractor; its grounded items are scored against the
speaker's observations of that session:

- observation recall: the share of observations for which at least one item taken from one of
  the observation's evidence turns means the same thing: cosine similarity of their MiniLM
  embeddings at least `MATCH_THRESHOLD` (the observation with the speaker's name replaced by
  "the user"; the threshold and a sample checked by hand are in docs/extraction.md);
- precision: the share of items taken from an observation's evidence turn (`evidence`); the
  share that mean the same thing as any observation of the speaker in the session is reported
  beside it (`semantic`).

Conversations 1-5 are for tuning and training; 6-10 are held out and reported apart.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from bench.locomo import DEFAULT_DATA_PATH, clean_evidence
from memoryhub import text_patterns
from memoryhub.embeddings import Embedder
from memoryhub.extraction import (
    ExtractedItem,
    ExtractionError,
    Extractor,
    Transcript,
    TranscriptMessage,
    split_grounded,
)

# The shared folder beside the repository (../shared/benchmarks), as for the retrieval bench.
DATA_PATH = DEFAULT_DATA_PATH
RESULTS_DIR = Path(__file__).resolve().parent.parent / "results"
# Hand-check pairs quote LoCoMo: kept in the git-ignored data folder, never in the repository.
PAIRS_DIR = Path(__file__).resolve().parent.parent.parent / ".data" / "bench"

# Chosen on conversations 1-5 by reading pairs by hand (docs/extraction.md): at 0.55 and above
# a pair states the same thing about the speaker; below 0.45 most pairs do not.
MATCH_THRESHOLD = 0.55
CURVE_THRESHOLDS = (0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75)
TUNING = (1, 2, 3, 4, 5)
HELD_OUT = (6, 7, 8, 9, 10)
SPLIT_NAMES = {"tuning": TUNING, "held_out": HELD_OUT}

# The targets for the offline extractor, on the held-out conversations.
RECALL_TARGET = 0.70
PRECISION_TARGET = 0.80

KINDS = ("fact", "preference", "episode", "open_item")

# The kind of an observation, read from its wording (LoCoMo gives none). The first that
# matches wins; what matches none is a fact. A weak label, used to report by kind and to train
# the kind of the learned decision (memoryhub/extraction/statements.py).
_KIND_CUES: tuple[tuple[str, text_patterns.Pattern[str]], ...] = (
    (
        "open_item",
        text_patterns.compile(
            r"\b(?:plans? to|planning|plans? (?:for|on)|will|is going to|are going to|intends?"
            r"|aims? to|hopes? to|wants? to|would like to|looking forward|promised|promises"
            r"|is about to|upcoming|next (?:week|month|year|weekend)|soon|goal is|decided to"
            r"|is preparing|is considering|is thinking (?:of|about))\b",
            text_patterns.IGNORECASE,
        ),
    ),
    (
        "preference",
        text_patterns.compile(
            r"\b(?:likes?|loves?|enjoys?|enjoyed|prefers?|favou?rite|is (?:a )?(?:big |huge )?fan"
            r"|passionate|is (?:really )?into|interested in|fond of|appreciates?|dislikes?"
            r"|hates?|admires?|is inspired|finds? (?:joy|peace|comfort)|values?)\b",
            text_patterns.IGNORECASE,
        ),
    ),
    (
        "episode",
        text_patterns.compile(
            r"\b(?:recently|yesterday|last (?:week|month|year|weekend|night|friday|saturday"
            r"|sunday|summer|time)|(?:a few|two|three|several) (?:days|weeks|months) ago"
            r"|just|went|attended|visited|took|had|got|made|finished|started|joined|won|lost"
            r"|received|bought|met|ran|painted|gave|participated|celebrated|completed"
            r"|traveled|travelled|organi[sz]ed|hosted|signed|adopted|launched|released"
            r"|was|were|did|found|saw|tried|learned|learnt|read|wrote|created|built)\b",
            text_patterns.IGNORECASE,
        ),
    ),
)


def observation_kind(text: str) -> str:
    """The kind of memory an observation states: open_item, preference, episode or fact."""
    for kind, cue in _KIND_CUES:
        if cue.search(text):
            return kind
    return "fact"


@dataclass(frozen=True)
class Observation:
    text: str
    # The observation's wording about "the user", the way stored items are written.
    as_user: str
    evidence: tuple[str, ...]
    kind: str


@dataclass(frozen=True)
class SpeakerSession:
    """One session seen by one speaker: their turns are the user's, the other's the assistant's."""

    conversation: int
    conversation_id: str
    session_no: int
    speaker: str
    transcript: Transcript
    observations: tuple[Observation, ...]

    @property
    def key(self) -> str:
        return f"{self.conversation_id}/s{self.session_no}/{self.speaker}"


def load_speaker_sessions(
    conversations: Sequence[int], path: Path = DATA_PATH
) -> list[SpeakerSession]:
    """Every (session, speaker) of the given conversations (numbered 1-10 in file order)."""
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    chosen = []
    for number in conversations:
        if not 1 <= number <= len(samples):
            raise ValueError(f"LoCoMo has conversations 1-{len(samples)}, not {number}")
        chosen.extend(_speaker_sessions(number, samples[number - 1]))
    return chosen


def _speaker_sessions(number: int, sample: dict[str, Any]) -> list[SpeakerSession]:
    dialog = sample["conversation"]
    observations = sample["observation"]
    sessions = []
    session_no = 1
    while f"session_{session_no}" in dialog:
        turns = dialog[f"session_{session_no}"]
        date = datetime.strptime(
            dialog[f"session_{session_no}_date_time"], "%I:%M %p on %d %B, %Y"
        ).replace(tzinfo=UTC)
        by_speaker = observations.get(f"session_{session_no}_observation", {})
        for speaker in (dialog["speaker_a"], dialog["speaker_b"]):
            messages = tuple(
                TranscriptMessage(
                    id=turn["dia_id"],
                    role="user" if turn["speaker"] == speaker else "assistant",
                    content=turn["text"],
                    created_at=date,
                )
                for turn in turns
            )
            sessions.append(
                SpeakerSession(
                    conversation=number,
                    conversation_id=str(sample["sample_id"]),
                    session_no=session_no,
                    speaker=speaker,
                    transcript=Transcript(
                        session_id=f"{sample['sample_id']}-{session_no}-{speaker}",
                        messages=messages,
                    ),
                    observations=tuple(
                        _observation(text, evidence, speaker)
                        for text, evidence in by_speaker.get(speaker, [])
                    ),
                )
            )
        session_no += 1
    return sessions


def _observation(text: str, evidence: str | list[str], speaker: str) -> Observation:
    raw = [evidence] if isinstance(evidence, str) else evidence
    return Observation(
        text=text,
        as_user=about_the_user(text, speaker),
        evidence=clean_evidence(raw),
        kind=observation_kind(text),
    )


def about_the_user(text: str, speaker: str) -> str:
    """ "Caroline's friend …" -> "The user's friend …": an observation worded as items are."""
    name = text_patterns.whole_phrase(speaker.split()[0])
    text = name.sub("the user", text)
    text = text.replace("the user", "The user", 1) if text.startswith("the user") else text
    return text


@dataclass
class SessionRun:
    session: SpeakerSession
    items: list[ExtractedItem]
    seconds: float
    error: str = ""


def extract_sessions(
    sessions: Sequence[SpeakerSession],
    extractor_factory: Callable[[], Extractor],
    *,
    progress: bool = True,
) -> list[SessionRun]:
    """Run the extractor on each session; keep only the items grounded in the transcript."""
    runs = []
    for session in tqdm(sessions, desc="locomo", unit="session", disable=not progress):
        started = time.perf_counter()
        try:
            result = extractor_factory().extract(session.transcript)
        except ExtractionError as error:
            runs.append(SessionRun(session, [], time.perf_counter() - started, str(error)))
            continue
        grounded, _ = split_grounded(result, session.transcript)
        runs.append(SessionRun(session, list(grounded.items), time.perf_counter() - started))
    return runs


@dataclass(frozen=True)
class _Scored:
    """The similarity of every item of a run to every observation of its session."""

    run: SessionRun
    similarity: np.ndarray  # (observations, items)


def score_runs(
    runs: Sequence[SessionRun], embedder: Embedder, *, threshold: float = MATCH_THRESHOLD
) -> dict[str, Any]:
    """Recall and precision per split and kind, the curve over thresholds, pairs to check."""
    scored = _similarities(runs, embedder)
    report: dict[str, Any] = {"threshold": threshold, "splits": {}}
    for split, numbers in SPLIT_NAMES.items():
        chosen = [s for s in scored if s.run.session.conversation in numbers]
        if not chosen:
            continue
        figures = _figures(chosen, threshold)
        figures["curve"] = [
            {
                "threshold": value,
                "recall": _figures(chosen, value)["recall"],
                "semantic_precision": _figures(chosen, value)["semantic_precision"],
            }
            for value in CURVE_THRESHOLDS
        ]
        report["splits"][split] = figures
    report["errors"] = sum(1 for run in runs if run.error)
    report["pairs"] = _pairs(scored)
    return report


def _similarities(runs: Sequence[SessionRun], embedder: Embedder) -> list[_Scored]:
    observations = [o.as_user for run in runs for o in run.session.observations]
    contents = [item.content for run in runs for item in run.items]
    vectors = np.asarray(embedder.embed(observations + contents), dtype=np.float32)
    observation_vectors, item_vectors = vectors[: len(observations)], vectors[len(observations) :]
    scored = []
    o_start = i_start = 0
    for run in runs:
        o_end = o_start + len(run.session.observations)
        i_end = i_start + len(run.items)
        similarity = observation_vectors[o_start:o_end] @ item_vectors[i_start:i_end].T
        scored.append(_Scored(run, similarity.reshape(o_end - o_start, i_end - i_start)))
        o_start, i_start = o_end, i_end
    return scored


def _figures(scored: Sequence[_Scored], threshold: float) -> dict[str, Any]:
    found: Counter[str] = Counter()
    total: Counter[str] = Counter()
    items: Counter[str] = Counter()
    from_evidence: Counter[str] = Counter()
    meaning: Counter[str] = Counter()
    for entry in scored:
        session, run_items = entry.run.session, entry.run.items
        evidence_turns = {turn for o in session.observations for turn in o.evidence}
        for row, observation in enumerate(session.observations):
            total[observation.kind] += 1
            total["all"] += 1
            if any(
                entry.similarity[row, column] >= threshold
                for column, item in enumerate(run_items)
                if set(item.message_ids) & set(observation.evidence)
            ):
                found[observation.kind] += 1
                found["all"] += 1
        for column, item in enumerate(run_items):
            for key in (item.kind, "all"):
                items[key] += 1
                from_evidence[key] += int(bool(set(item.message_ids) & evidence_turns))
                meaning[key] += int(
                    bool(session.observations) and entry.similarity[:, column].max() >= threshold
                )
    return {
        "speaker_sessions": len(scored),
        "observations": total["all"],
        "found": found["all"],
        "recall": _ratio(found["all"], total["all"]),
        "items": items["all"],
        "precision": _ratio(from_evidence["all"], items["all"]),
        "semantic_precision": _ratio(meaning["all"], items["all"]),
        "by_kind": {
            kind: {
                "observations": total[kind],
                "recall": _ratio(found[kind], total[kind]),
                "items": items[kind],
                "precision": _ratio(from_evidence[kind], items[kind]),
            }
            for kind in (*KINDS, "procedure")
        },
        "seconds_per_session_p95": _p95([e.run.seconds for e in scored]),
    }


def _pairs(scored: Sequence[_Scored], per_split: int = 40) -> dict[str, list[dict[str, Any]]]:
    """For hand checking: each observation with its most similar item from its evidence turns."""
    pairs: dict[str, list[dict[str, Any]]] = {}
    for split, numbers in SPLIT_NAMES.items():
        rows = []
        for entry in scored:
            session = entry.run.session
            if session.conversation not in numbers:
                continue
            for row, observation in enumerate(session.observations):
                columns = [
                    column
                    for column, item in enumerate(entry.run.items)
                    if set(item.message_ids) & set(observation.evidence)
                ]
                if columns:
                    best = max(columns, key=lambda column: entry.similarity[row, column])
                    rows.append(
                        {
                            "session": session.key,
                            "observation": observation.as_user,
                            "item": entry.run.items[best].content,
                            "similarity": round(float(entry.similarity[row, best]), 3),
                        }
                    )
        # Every n-th pair: a spread over sessions and similarities, the same on every run.
        step = max(1, len(rows) // per_split)
        pairs[split] = rows[::step][:per_split]
    return pairs


def _ratio(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None


def _p95(values: Sequence[float]) -> float | None:
    if not values:
        return None
    return round(float(np.percentile(values, 95)) * 1000, 2)


def format_table(name: str, report: dict[str, Any]) -> str:
    """The figures of one extractor as a plain-text table: kind by split."""
    lines = [f"\nLoCoMo extraction, {name} (match at cosine >= {report['threshold']}):"]
    header = f"{'kind':<12}" + "".join(
        f"{split + ' ' + h:>24}" for split in report["splits"] for h in ("recall", "precision")
    )
    lines.append(header)
    for kind in (*KINDS, "procedure", "all"):
        cells = []
        for figures in report["splits"].values():
            row = figures if kind == "all" else figures["by_kind"][kind]
            count = row["observations"]
            cells.append(f"{_cell(row['recall'])} of {count}")
            cells.append(f"{_cell(row['precision'])} of {row['items']}")
        lines.append(f"{kind:<12}" + "".join(f"{cell:>24}" for cell in cells))
    for split, figures in report["splits"].items():
        lines.append(
            f"{split}: {figures['speaker_sessions']} speaker-sessions; semantic precision "
            f"{_cell(figures['semantic_precision'])}; p95 {figures['seconds_per_session_p95']} ms"
            " per session"
        )
    held_out = report["splits"].get("held_out")
    if held_out is not None:
        recall, precision = held_out["recall"] or 0, held_out["precision"] or 0
        lines.append(
            f"targets (held out): recall >= {RECALL_TARGET} "
            f"{'met' if recall >= RECALL_TARGET else 'NOT met'} ({_cell(recall)}); "
            f"precision >= {PRECISION_TARGET} "
            f"{'met' if precision >= PRECISION_TARGET else 'NOT met'} ({_cell(precision)})"
        )
    if report["errors"]:
        lines.append(f"sessions whose extraction failed: {report['errors']}")
    return "\n".join(lines) + "\n"


def _cell(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def write_report(report: dict[str, Any], name: str, directory: Path = RESULTS_DIR) -> Path:
    """Save the report as `extraction-locomo-<name>.json`, stamped with the time of the run.

    The pairs to check by hand quote LoCoMo (CC BY-NC), which must never be copied into the
    repository: they go to `extraction-locomo-<name>-pairs.json` in the data folder instead.
    """
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    figures = {key: value for key, value in report.items() if key != "pairs"}
    path = directory / f"extraction-locomo-{name}.json"
    path.write_text(
        json.dumps({"finished_at": stamp, **figures}, indent=2, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
    if "pairs" in report:
        PAIRS_DIR.mkdir(parents=True, exist_ok=True)
        pairs_path = PAIRS_DIR / f"extraction-locomo-{name}-pairs.json"
        pairs_path.write_text(
            json.dumps(report["pairs"], indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    return path
