"""Offline extraction time per user message of about 2 kB, rules alone and with the learned decision.

Run `python -m bench.extraction_speed [--messages 40] [--bytes 2048] [--source project|locomo]
[--out bench/results/...]`. Messages are user turns of the project's own conversations
(bench/extraction/conversations.json, written by the team) or, with `--source locomo`, of LoCoMo
conversations 1-5 (public data read in place at run time; chattier, so more sentences reach the
learned decision), shuffled with a fixed seed and joined until the next turn would pass the
size. Each message is one transcript through `OfflineExtractor.extract`, in three set-ups run in
turn on the same message, so that drift on a shared machine hits all three alike:

- `rules`: the rules alone (`is_learned=False`);
- `learned_one_by_one`: the learned decision with one MiniLM call per candidate sentence, what
  embedding each sentence as it is read would cost;
- `learned_batch`: the shipped path, every candidate of the transcript in one `embed` call
  (sorted by length, cut into chunks and shared among the cores by the ONNX embedder).

No database and no network: the embedder is the process-wide ONNX MiniLM.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")

import django  # The settings module must be chosen before Django starts.

django.setup()

from bench.extraction import locomo  # noqa: E402
from bench.extraction.dataset import load_conversations  # noqa: E402
from bench.extraction.runner import RESULTS_DIR  # noqa: E402
from bench.load_report import percentiles  # noqa: E402
from bench.retrieval import machine  # noqa: E402
from memoryhub.embeddings import DIMENSIONS, Embedder, default_embedder  # noqa: E402
from memoryhub.extraction.base import Transcript, TranscriptMessage  # noqa: E402
from memoryhub.extraction.offline import OfflineExtractor  # noqa: E402

MODES = ("rules", "learned_one_by_one", "learned_batch")
SEED = 27


class OneByOne:
    """The embedder called once per text, as a per-sentence embedding would."""

    dimensions = DIMENSIONS

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += len(texts)
        return [self.inner.embed([text])[0] for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


class Counting:
    """The embedder as it is, counting its calls and texts."""

    dimensions = DIMENSIONS

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.calls = 0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return self.inner.embed(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.inner.embed_query(text)


SOURCES = {
    "project": "bench/extraction/conversations.json user turns (written by the team)",
    "locomo": "LoCoMo conversations 1-5, one speaker's turns (public data, read in place)",
}


def user_turns(source: str, locomo_data: Path = locomo.DATA_PATH) -> list[str]:
    if source == "locomo":
        sessions = locomo.load_speaker_sessions(locomo.TUNING, locomo_data)
        return [m.content for s in sessions for m in s.transcript.messages if m.role == "user"]
    return [
        turn.content
        for conversation in load_conversations()
        for session in conversation.sessions
        for turn in session
        if turn.role == "user"
    ]


def build_messages(
    count: int, size: int, source: str = "project", locomo_data: Path = locomo.DATA_PATH
) -> list[str]:
    """`count` user messages of at most `size` bytes, each made of whole user turns."""
    turns = user_turns(source, locomo_data)
    generator = random.Random(SEED)
    messages = []
    for _ in range(count):
        generator.shuffle(turns)
        parts: list[str] = []
        length = 0
        for turn in turns:
            added = len(turn.encode()) + 1
            if length + added > size:
                continue
            parts.append(turn)
            length += added
            if length > size - 40:
                break
        messages.append(" ".join(parts))
    return messages


def _transcript(index: int, content: str) -> Transcript:
    message = TranscriptMessage(f"m{index}", "user", content, datetime(2025, 3, 12, tzinfo=UTC))
    return Transcript(session_id=f"speed-{index}", messages=(message,))


def run(
    count: int, size: int, source: str = "project", locomo_data: Path = locomo.DATA_PATH
) -> dict[str, Any]:
    embedder = default_embedder()
    one_by_one = OneByOne(embedder)
    batch = Counting(embedder)
    extractors = {
        "rules": OfflineExtractor(is_learned=False),
        "learned_one_by_one": OfflineExtractor(embedder=one_by_one),
        "learned_batch": OfflineExtractor(embedder=batch),
    }
    messages = build_messages(count, size, source, locomo_data)
    # Warm up: the ONNX session, the model's weights, the patterns' caches.
    for extractor in extractors.values():
        extractor.extract(_transcript(-1, messages[0]))
    one_by_one.calls = batch.calls = batch.texts = 0
    seconds: dict[str, list[float]] = {mode: [] for mode in MODES}
    items: dict[str, int] = dict.fromkeys(MODES, 0)
    for index, content in enumerate(messages):
        transcript = _transcript(index, content)
        # Rotate the order so that no set-up always runs first after a pause.
        order = MODES[index % 3 :] + MODES[: index % 3]
        for mode in order:
            start = time.perf_counter()
            result = extractors[mode].extract(transcript)
            seconds[mode].append(time.perf_counter() - start)
            items[mode] += len(result.items)
    sizes = [len(message.encode()) for message in messages]
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "messages": count,
        "message_bytes": {"min": min(sizes), "max": max(sizes), "target": size},
        "data": SOURCES[source],
        "candidate_sentences_per_message": round(batch.texts / count, 1),
        "embed_calls_per_message": {
            "learned_one_by_one": round(one_by_one.calls / count, 1),
            "learned_batch": round(batch.calls / count, 1),
        },
        "items_per_message": {mode: round(items[mode] / count, 1) for mode in MODES},
        "latency": {mode: percentiles(seconds[mode]) for mode in MODES},
    }


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['messages']} messages of {report['message_bytes']['min']}-"
        f"{report['message_bytes']['max']} bytes; "
        f"{report['candidate_sentences_per_message']} candidate sentences per message",
        f"{'set-up':<20} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'embed calls':>12} {'items':>6}",
    ]
    calls = report["embed_calls_per_message"]
    for mode in MODES:
        figures = report["latency"][mode]
        lines.append(
            f"{mode:<20} {figures['p50_ms']:>8} {figures['p95_ms']:>8} {figures['mean_ms']:>8} "
            f"{calls.get(mode, 0):>12} {report['items_per_message'][mode]:>6}"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--bytes", type=int, default=2048, help="size of each message")
    parser.add_argument("--source", choices=sorted(SOURCES), default="project")
    parser.add_argument("--locomo-data", type=Path, default=locomo.DATA_PATH)
    parser.add_argument(
        "--out", type=Path, help="default bench/results/extraction-speed-<source>.json"
    )
    options = parser.parse_args()
    if options.messages < 1 or not 200 <= options.bytes <= 32768:
        parser.error("--messages must be at least 1 and --bytes between 200 and 32768")
    if options.source == "locomo" and not options.locomo_data.is_file():
        parser.error(f"LoCoMo data not found at {options.locomo_data} (--locomo-data)")
    report = run(options.messages, options.bytes, options.source, options.locomo_data)
    options.out = options.out or RESULTS_DIR / f"extraction-speed-{options.source}.json"
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(format_table(report))
    print(f"written to {options.out}")


if __name__ == "__main__":
    main()
