"""The bilingual retrieval benchmark: the same personal memories in French and in English.

80 personal facts (bench/data/bilingual_memories.json, written by the team), each told in
English and in French, each with a question in both languages that paraphrases it with little
word overlap ("My sister Claire lives in Lyon" / "Dans quelle ville vit ma frangine ?"). They
are stored among 150 short first-person sentences from Tatoeba in both languages
(bench/data/tatoeba_en_fr.tsv, CC BY 2.0 FR, public), distractors that read like chat memories.

Four conditions, one user per memory language, through MemoryHub's own `remember_many` and
`search_memories` (160 distinct questions, each asked of both users):
- en→en and fr→fr: the same content, asked in the language it was told in;
- fr→en and en→fr: cross-lingual, a French question about an English memory and the reverse.
Facts with an even index are the tuning half, odd ones the held-out half: every figure is given
for both, and only the tuning half may guide a choice.
"""

from __future__ import annotations

import csv
import json
import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.queries.recall import search_memories
from memoryhub.services.agents import get_or_create_workspace
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.users import create_user, ensure_mode

DATA = Path(__file__).resolve().parent / "data"
FACTS_FILE = DATA / "bilingual_memories.json"
DISTRACTORS_FILE = DATA / "tatoeba_en_fr.tsv"
LANGUAGES = ("en", "fr")
# (question language, memory language)
CONDITIONS = (("en", "en"), ("fr", "fr"), ("fr", "en"), ("en", "fr"))
SPLITS = ("tuning", "held_out")


@dataclass(frozen=True)
class Fact:
    number: int
    text: dict[str, str]
    question: dict[str, str]

    @property
    def split(self) -> str:
        return SPLITS[self.number % 2]


def load_facts(path: Path = FACTS_FILE) -> list[Fact]:
    rows = json.loads(path.read_text(encoding="utf-8"))
    return [
        Fact(
            number=number,
            text={"en": row["en"], "fr": row["fr"]},
            question={"en": row["q_en"], "fr": row["q_fr"]},
        )
        for number, row in enumerate(rows)
    ]


def load_distractors(path: Path = DISTRACTORS_FILE) -> dict[str, list[str]]:
    """Tatoeba's English and French sentences, in parallel (the third column credits them)."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return {"en": [row[0] for row in rows], "fr": [row[1] for row in rows]}


def run_bilingual(embedder: Embedder, *, k: int = 3) -> dict[str, Any]:
    """hit@1 and hit@3 per condition and split, through remember_many and search_memories."""
    facts = load_facts()
    distractors = load_distractors()
    workspace = get_or_create_workspace(slug="bench-bilingual")
    actor = Actor.system("bench")
    run = uuid4().hex[:8]
    hits: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    for memory_language in LANGUAGES:
        user = create_user(workspace=workspace, external_id=f"bilingual-{memory_language}-{run}")
        mode = ensure_mode(user=user, slug="personal")
        texts = [
            *(fact.text[memory_language] for fact in facts),
            *distractors[memory_language],
        ]
        # Told in a fixed shuffled order, so a fact has no neighbour that is its twin.
        order = list(range(len(texts)))
        random.Random(28).shuffle(order)
        rows = remember_many(
            user=user,
            mode=mode,
            items=[NewMemory(kind="fact", content=texts[i]) for i in order],
            actor=actor,
            embedder=embedder,
        )
        fact_of: dict[UUID, int] = {
            row.id: i for row, i in zip(rows, order, strict=True) if i < len(facts)
        }
        for question_language, target in CONDITIONS:
            if target != memory_language:
                continue
            for fact in facts:
                found = search_memories(
                    user=user,
                    mode=mode,
                    query=fact.question[question_language],
                    actor=actor,
                    embedder=embedder,
                    k=k,
                    record_access=False,
                )
                numbers = [fact_of.get(item.id) for item in found]
                key = (f"{question_language}->{memory_language}", fact.split)
                hits.setdefault(key, []).append(
                    (numbers[:1] == [fact.number], fact.number in numbers[:k])
                )
    result: dict[str, Any] = {}
    for (condition, split), outcomes in sorted(hits.items()):
        result.setdefault(condition, {})[split] = {
            "questions": len(outcomes),
            "hit@1": round(sum(one for one, _ in outcomes) / len(outcomes), 3),
            f"hit@{k}": round(sum(three for _, three in outcomes) / len(outcomes), 3),
        }
    return result


def measure_speed(
    embedder: Embedder, *, queries: Sequence[str], texts: Sequence[str]
) -> dict[str, Any]:
    """Query embedding p50/p95 (one text, as a request embeds it) and batch texts per second."""
    embedder.embed_query("warm up")
    embedder.embed(list(texts[:8]))
    timings = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        timings.append(time.perf_counter() - started)
    timings.sort()
    started = time.perf_counter()
    embedder.embed(list(texts))
    batch_seconds = time.perf_counter() - started
    return {
        "query_p50_ms": round(statistics.median(timings) * 1000, 2),
        "query_p95_ms": round(timings[int(len(timings) * 0.95) - 1] * 1000, 2),
        "queries": len(timings),
        "batch_texts_per_second": round(len(texts) / batch_seconds, 1),
        "batch_texts": len(texts),
    }


def measure_remember_many(
    embedder: Embedder, *, texts: Sequence[str], batch: int = 100
) -> dict[str, Any]:
    """Memories per second stored through `remember_many` in batches of 100 (the API's largest)."""
    workspace = get_or_create_workspace(slug="bench-bilingual")
    user = create_user(workspace=workspace, external_id=f"bilingual-speed-{uuid4().hex[:8]}")
    mode = ensure_mode(user=user, slug="personal")
    actor = Actor.system("bench")
    started = time.perf_counter()
    for start in range(0, len(texts), batch):
        remember_many(
            user=user,
            mode=mode,
            items=[NewMemory(kind="fact", content=text) for text in texts[start : start + batch]],
            actor=actor,
            embedder=embedder,
        )
    seconds = time.perf_counter() - started
    return {"remember_many_per_second": round(len(texts) / seconds, 1), "memories": len(texts)}


def format_bilingual(report: dict[str, Any]) -> str:
    """One table: a row per model, condition and split."""
    lines = [
        f"{'model':<26} {'condition':<9} {'split':<9} {'n':>4} {'hit@1':>6} {'hit@3':>6}",
    ]
    for model, figures in report["models"].items():
        for condition, splits in figures["bilingual"].items():
            for split in SPLITS:
                row = splits[split]
                lines.append(
                    f"{model:<26} {condition:<9} {split:<9} {row['questions']:>4} "
                    f"{row['hit@1']:>6.3f} {row['hit@3']:>6.3f}"
                )
    lines.append("")
    lines.append(
        f"{'model':<26} {'query p50 ms':>12} {'p95 ms':>8} {'batch texts/s':>14} "
        f"{'remember_many/s':>16} {'LoCoMo R@10 1-4':>16}"
    )
    for model, figures in report["models"].items():
        speed = figures["speed"]
        locomo = figures.get("locomo_codes_1_4_recall_at_10")
        lines.append(
            f"{model:<26} {speed['query_p50_ms']:>12.2f} {speed['query_p95_ms']:>8.2f} "
            f"{speed['batch_texts_per_second']:>14.1f} "
            f"{figures['ingestion']['remember_many_per_second']:>16.1f} "
            f"{'' if locomo is None else f'{locomo:.3f}':>16}"
        )
    return "\n".join(lines)


def write_bilingual(report: dict[str, Any], directory: Path) -> Path:
    """Save the report as JSON: a dated file, and `bilingual-latest.json` beside it."""
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    text = json.dumps(report, indent=2, default=str) + "\n"
    path = directory / f"bilingual-{stamp}.json"
    path.write_text(text, encoding="utf-8")
    (directory / "bilingual-latest.json").write_text(text, encoding="utf-8")
    return path
