"""Peak memory of importing a large ChatGPT conversations.json (issue 31: bounded memory).

`python -m bench.import_memory [--megabytes 50] [--keep-file]` writes a conversations.json of
about that size in ChatGPT's shape (made-up conversations, a message tree per conversation),
then, in this process, measures:

- the parse alone (`imports.formats.read_records`), with tracemalloc's peak;
- the whole import of a bench user as the services run it: `start_import` (sealed to disk and
  checked through once) and `run_import` (past sessions and their messages written in batches;
  their extraction is queued on an in-memory broker and not run here);

and reports the process's resident set before and its peak (VmHWM) after each. The bench user
is deleted at the end. Not a test: `bench/` measures, tests assert behaviour.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

BENCH_EMAIL = "import-bench@example.com"
BENCH_WORKSPACE = "import-bench"
SENTENCE = (
    "I live in Lyon and work as a nurse at the hospital near the river; my sister visits on "
    "Sundays and we cook together. Could you help me plan a trip to the mountains next month?"
)
WORDS = SENTENCE.split()


def _resident_mb() -> dict[str, float]:
    figures = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            figures[name] = round(int(value.split()[0]) * 1024 / 1_000_000, 1)
    return figures


def _conversation(number: int, turns: int) -> dict[str, Any]:
    start = 1_600_000_000.0 + number * 3600
    mapping: dict[str, Any] = {
        "root": {"id": "root", "message": None, "parent": None, "children": []}
    }
    parent = "root"
    for turn in range(turns):
        node_id = f"n{number}-{turn}"
        role = "user" if turn % 2 == 0 else "assistant"
        length = 20 + (number * 7 + turn * 13) % 60
        text = " ".join(WORDS[(turn + i) % len(WORDS)] for i in range(length))
        mapping[parent]["children"].append(node_id)
        mapping[node_id] = {
            "id": node_id,
            "message": {
                "id": node_id,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": start + turn * 30,
                "update_time": None,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "end_turn": role == "assistant",
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            },
            "parent": parent,
            "children": [],
        }
        parent = node_id
    return {
        "title": f"Conversation {number}",
        "create_time": start,
        "update_time": start + turns * 30,
        "mapping": mapping,
        "moderation_results": [],
        "current_node": parent,
        "conversation_id": f"bench-{number}",
        "id": f"bench-{number}",
    }


def write_file(path: Path, megabytes: int) -> tuple[int, int]:
    """Write conversations until the file passes `megabytes`; return (conversations, bytes)."""
    target = megabytes * 1_000_000
    count = 0
    with path.open("w") as out:
        out.write("[")
        while out.tell() < target:
            if count:
                out.write(",")
            json.dump(_conversation(count, turns=8 + count % 30), out)
            count += 1
        out.write("]")
    return count, path.stat().st_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=50)
    parser.add_argument("--keep-file", action="store_true")
    arguments = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    django.setup()
    from memoryhub.actors import Actor
    from memoryhub.celery import app
    from memoryhub.embeddings import default_embedder
    from memoryhub.imports import services
    from memoryhub.imports.formats import read_records
    from memoryhub.models import User
    from memoryhub.services.agents import get_or_create_workspace
    from memoryhub.services.users import create_user, ensure_mode

    # Queued extractions stay in this process: no dev worker picks them up later.
    app.conf.broker_url = "memory://"
    app.conf.broker_transport_options = {}

    folder = Path(tempfile.mkdtemp(prefix="import-bench-"))
    path = folder / "conversations.json"
    conversations, size = write_file(path, arguments.megabytes)
    print(f"file: {size / 1_000_000:.1f} MB, {conversations} conversations")
    report: dict[str, Any] = {"file_mb": round(size / 1_000_000, 1), "conversations": conversations}

    before = _resident_mb()
    tracemalloc.start()
    started = time.perf_counter()
    records = sum(1 for _ in read_records(lambda: path.open("rb"), "chatgpt"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    report["parse"] = {
        "records": records,
        "seconds": round(time.perf_counter() - started, 1),
        "tracemalloc_peak_mb": round(peak / 1_000_000, 1),
        "rss_before_mb": before["VmRSS"],
    }
    print("parse:", report["parse"])

    User.objects.filter(email=BENCH_EMAIL).delete()
    user = create_user(workspace=get_or_create_workspace(slug=BENCH_WORKSPACE), email=BENCH_EMAIL)
    mode = ensure_mode(user=user, slug="personal")
    try:
        before = _resident_mb()
        started = time.perf_counter()
        with path.open("rb") as upload:
            job = services.start_import(
                user=user,
                mode=mode,
                actor=Actor.for_user(user.pk),
                agent=None,
                chunks=iter(lambda: upload.read(64 * 1024), b""),
            )
        uploaded = time.perf_counter()
        job = services.run_import(job_id=job.pk, embedder=default_embedder())
        after = _resident_mb()
        report["import"] = {
            "status": job.status,
            "counts": job.counts,
            "upload_and_check_seconds": round(uploaded - started, 1),
            "import_seconds": round(time.perf_counter() - uploaded, 1),
            "rss_before_mb": before["VmRSS"],
            "rss_peak_mb": after["VmHWM"],
        }
        print("import:", report["import"])
    finally:
        User.objects.filter(pk=user.pk).delete()
        if not arguments.keep_file:
            path.unlink(missing_ok=True)
            folder.rmdir()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
