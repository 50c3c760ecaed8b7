"""POST /api/v1/answers latency with and without the knowledge-graph hook (issue 9).

Run `python -m bench.graph_latency [--requests 200] [--out bench/results/graph-latency.json]`.
It builds a throwaway database (DATABASE_TEST_NAME, default `bench_graph_latency`), then times
the same answer report through Django's test client in three set-ups, interleaved in rounds so
that drift on a shared machine hits all three alike:

- `no_hook`: the review service finds no graph task, so nothing is enqueued;
- `on_commit`: the real set-up, the task published to a broker (filesystem, in a temporary
  folder) once the answer's transaction commits; the graph is written later by a worker;
- `eager`: the task run inside the request, for contrast: what the graph would cost if it
  were not fire-and-forget.

Answers are confident (no review capture), so no embedding runs and the figures isolate the
hook. The time a worker spends recording one answer is reported separately.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
os.environ.setdefault("DATABASE_TEST_NAME", "bench_graph_latency")
# The bench sends more than a minute's worth of requests with one key.
os.environ.setdefault("MEMORYHUB_RATE_LIMIT_PER_MINUTE", "1000000")

import django  # The settings module must be chosen before Django starts.

django.setup()

from django.db import connection  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

from memoryhub import graph  # noqa: E402
from memoryhub.celery import app  # noqa: E402
from memoryhub.knowledge import answers as review_services  # noqa: E402
from memoryhub.models import GraphNode  # noqa: E402
from memoryhub.services.agents import create_agent, get_or_create_workspace  # noqa: E402
from memoryhub.services.users import create_user  # noqa: E402

SIGNALS = {"retrieval": 0.9, "policy": 1.0, "completeness": 0.9, "memory": 0.9}
QUESTION = "Is the Hotel Lumiere in Lyon free on Friday? Write to me at alice@example.com"
ANSWER = "Yes, the Hotel Lumiere has two rooms left on Friday."
ITEMS = [{"name": "Hotel Lumiere", "id": "h-1"}, {"name": "search_rooms", "type": "tool_call"}]
MODES = ("no_hook", "on_commit", "eager")


def _post(client: Client, key: str) -> tuple[float, str]:
    body = json.dumps(
        {
            "user": "alice",
            "question": QUESTION,
            "answer": ANSWER,
            "signals": SIGNALS,
            "items": ITEMS,
        }
    )
    started = time.perf_counter()
    response = client.post(
        "/api/v1/answers",
        body,
        content_type="application/json",
        headers={"Authorization": f"Bearer {key}"},
    )
    elapsed = time.perf_counter() - started
    if response.status_code != 201:
        raise RuntimeError(f"POST /answers failed: {response.status_code} {response.content!r}")
    return elapsed * 1000, response.json()["id"]


def _set_mode(mode: str, original_task: str) -> None:
    review_services.GRAPH_TASK = (
        "memoryhub.tasks.no_such_task" if mode == "no_hook" else original_task
    )
    app.conf.task_always_eager = mode == "eager"


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "n": len(ordered),
        "median_ms": round(statistics.median(ordered), 3),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))], 3),
        "mean_ms": round(statistics.fmean(ordered), 3),
    }


def _time_recording(answer_id: str) -> float:
    started = time.perf_counter()
    graph.record_answer(answer_id=answer_id)
    return (time.perf_counter() - started) * 1000


def run(requests: int, rounds: int) -> dict[str, Any]:
    workspace = get_or_create_workspace(slug="bench-graph")
    create_user(workspace=workspace, email="alice@example.com", external_id="alice", password=None)
    _, issued = create_agent(workspace=workspace, name="bench")
    client = Client()
    original_task = review_services.GRAPH_TASK
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    queued: list[str] = []
    per_round = max(1, requests // rounds)
    for mode in MODES:  # Warm-up: connections, imports, the broker's folders.
        _set_mode(mode, original_task)
        for _ in range(5):
            _post(client, issued.raw_key)
    for _ in range(rounds):
        for mode in MODES:
            _set_mode(mode, original_task)
            for _ in range(per_round):
                elapsed, answer_id = _post(client, issued.raw_key)
                samples[mode].append(elapsed)
                if mode == "on_commit":
                    queued.append(answer_id)
    _set_mode("on_commit", original_task)
    app.conf.task_always_eager = False
    # What the worker does later for each queued answer, off the request path.
    worker = [_time_recording(answer_id) for answer_id in queued]
    summaries = {mode: _summary(values) for mode, values in samples.items()}
    overhead = summaries["on_commit"]["median_ms"] - summaries["no_hook"]["median_ms"]
    return {
        **summaries,
        "worker_record_answer": _summary(worker),
        "graph_nodes": GraphNode.objects.count(),
        "hook_overhead_median_ms": round(overhead, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=200, help="timed requests per set-up")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds")
    parser.add_argument("--out", type=Path, help="write the results as JSON to this file")
    args = parser.parse_args()
    setup_test_environment()
    with tempfile.TemporaryDirectory() as queue_dir:
        # A private broker folder: nothing published here reaches a real worker.
        app.conf.broker_url = "filesystem://"
        app.conf.broker_transport_options = {
            "data_folder_in": queue_dir,
            "data_folder_out": queue_dir,
        }
        test_db = connection.creation.create_test_db(verbosity=0, autoclobber=True)
        try:
            result = run(args.requests, args.rounds)
        finally:
            connection.creation.destroy_test_db(test_db, verbosity=0)
        # Proof that the hook really enqueued: one message per on_commit request (and warm-up).
        result["published_messages"] = len(list(Path(queue_dir).iterdir()))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
