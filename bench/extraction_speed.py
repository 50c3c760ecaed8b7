"""Offline extraction time per user message of about 2 kB, rules alone and with the learned decision.

Run `python -m bench.extraction_speed [--messages 40] [--bytes 2048] [--source project|locomo]
[--compare-model PATH] [--out bench/results/...]`. Messages are user turns of the project's own
conversations (bench/extraction/conversations.json, written by the team) or, with `--source
locomo`, of LoCoMo conversations 1-5 (public data read in place at run time; chattier, so more
sentences reach the learned decision), shuffled with a fixed seed and joined until the next turn
would pass the size. Each message is one transcript through `OfflineExtractor.extract`, in each
set-up in turn on the same message, so that drift on a shared machine hits all alike:

- `rules`: the rules alone (`is_learned=False`);
- `learned`: the shipped path, the learned decision over MiniLM's token means (one tokenizer
  call and a table lookup per transcript);
- `compared` (with `--compare-model`): another statement model with the vectors it reads, e.g.
  the full MiniLM model's (an ONNX pass over every candidate sentence in one batch).

No database and no network.
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
from memoryhub.embeddings import DIMENSIONS, Embedder  # noqa: E402
from memoryhub.extraction.base import Transcript, TranscriptMessage  # noqa: E402
from memoryhub.extraction.offline import OfflineExtractor  # noqa: E402
from memoryhub.extraction.statements import decision_embedder, load_statement_model  # noqa: E402

SEED = 27


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
    count: int,
    size: int,
    source: str = "project",
    locomo_data: Path = locomo.DATA_PATH,
    compare_model: Path | None = None,
) -> dict[str, Any]:
    shipped = load_statement_model()
    embedders = {"learned": Counting(decision_embedder(shipped))}
    extractors = {
        "rules": OfflineExtractor(is_learned=False),
        "learned": OfflineExtractor(embedder=embedders["learned"], model=shipped),
    }
    if compare_model is not None:
        other = load_statement_model(compare_model)
        embedders["compared"] = Counting(decision_embedder(other))
        extractors["compared"] = OfflineExtractor(embedder=embedders["compared"], model=other)
    modes = tuple(extractors)
    messages = build_messages(count, size, source, locomo_data)
    # Warm up: the ONNX session, the model's weights, the patterns' caches.
    for extractor in extractors.values():
        extractor.extract(_transcript(-1, messages[0]))
    for counting in embedders.values():
        counting.calls = counting.texts = 0
    seconds: dict[str, list[float]] = {mode: [] for mode in modes}
    items: dict[str, int] = dict.fromkeys(modes, 0)
    for index, content in enumerate(messages):
        transcript = _transcript(index, content)
        # Rotate the order so that no set-up always runs first after a pause.
        turn = index % len(modes)
        for mode in modes[turn:] + modes[:turn]:
            start = time.perf_counter()
            result = extractors[mode].extract(transcript)
            seconds[mode].append(time.perf_counter() - start)
            items[mode] += len(result.items)
    sizes = [len(message.encode()) for message in messages]
    models = {"learned": shipped}
    if compare_model is not None:
        models["compared"] = other
    return {
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "messages": count,
        "message_bytes": {"min": min(sizes), "max": max(sizes), "target": size},
        "data": SOURCES[source],
        "models": {
            mode: {"version": model.version, "vectors": model.embedding_model}
            for mode, model in models.items()
        },
        "candidate_sentences_per_message": round(embedders["learned"].texts / count, 1),
        "embed_calls_per_message": {
            mode: round(counting.calls / count, 1) for mode, counting in embedders.items()
        },
        "items_per_message": {mode: round(items[mode] / count, 1) for mode in modes},
        "latency": {mode: percentiles(seconds[mode]) for mode in modes},
    }


def format_table(report: dict[str, Any]) -> str:
    lines = [
        f"{report['messages']} messages of {report['message_bytes']['min']}-"
        f"{report['message_bytes']['max']} bytes; "
        f"{report['candidate_sentences_per_message']} candidate sentences per message",
        *(
            f"{mode}: model {model['version']} over {model['vectors']} vectors"
            for mode, model in report["models"].items()
        ),
        f"{'set-up':<20} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8} {'embed calls':>12} {'items':>6}",
    ]
    calls = report["embed_calls_per_message"]
    for mode in report["latency"]:
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
        "--compare-model",
        type=Path,
        help="another statement model (.npz) timed beside the shipped one, e.g. one trained with "
        "`train_extraction_model --features minilm --out PATH`",
    )
    parser.add_argument(
        "--out", type=Path, help="default bench/results/extraction-speed-<source>.json"
    )
    options = parser.parse_args()
    if options.messages < 1 or not 200 <= options.bytes <= 32768:
        parser.error("--messages must be at least 1 and --bytes between 200 and 32768")
    if options.source == "locomo" and not options.locomo_data.is_file():
        parser.error(f"LoCoMo data not found at {options.locomo_data} (--locomo-data)")
    if options.compare_model is not None and not options.compare_model.is_file():
        parser.error(f"no statement model at {options.compare_model}")
    report = run(
        options.messages, options.bytes, options.source, options.locomo_data, options.compare_model
    )
    options.out = options.out or RESULTS_DIR / f"extraction-speed-{options.source}.json"
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(format_table(report))
    print(f"written to {options.out}")


if __name__ == "__main__":
    main()
