"""Peak memory of a web process serving one user's dashboard export, and the quota check's cost.

`python -m bench.export_memory [--memories 100000] [--code PATH] [--label NAME]` fills one bench
user with sealed memories (rows built by `services.memories.build_memory`, the services' own
sealing, and inserted in bulk; no embeddings, which the export leaves out), then starts a fresh
interpreter that imports what a web worker imports (`memoryhub.asgi`), sends GET
/dashboard/export/ through the ASGI application as a signed-in user, reads the body as it
arrives without keeping it, and reports its resident set before the request and its peak
(VmHWM) after. `--code PATH` runs that child on another checkout's code (the "before"
figures: `git worktree add /tmp/before <commit>`). Prints a table and writes
bench/results/export-memory-<label>.json.

It also times `check_memory_quota` for that user (one locked usage row) against what a count of
the user's memories and their bytes would cost on every write.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "bench" / "results"
MARKER = "export-memory: "
BENCH_EMAIL = "export-bench@example.com"
BENCH_WORKSPACE = "export-bench"
BATCH = 5000


def _resident_mb() -> dict[str, float]:
    figures = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            figures[name] = round(int(value.split()[0]) * 1024 / 1_000_000, 1)
    return figures


def populate(total: int) -> Any:
    """The bench user, topped up to `total` memories in two modes."""
    from django.db import transaction

    from memoryhub.keyring import cipher_for
    from memoryhub.models import Memory, User
    from memoryhub.services.agents import get_or_create_workspace
    from memoryhub.services.memories import NewMemory, build_memory
    from memoryhub.services.users import create_user, ensure_mode

    user = User.objects.filter(email=BENCH_EMAIL).first()
    if user is None:
        user = create_user(
            workspace=get_or_create_workspace(slug=BENCH_WORKSPACE),
            email=BENCH_EMAIL,
            external_id="export-bench",
            password="export bench password",  # noqa: S106  # A local bench account.
        )
    modes = [ensure_mode(user=user, slug=slug, create=True) for slug in ("personal", "work")]
    cipher = cipher_for(user)
    have = Memory.all_owners.filter(user=user).count()
    while have < total:
        rows = [
            build_memory(
                NewMemory(
                    kind="fact",
                    content=f"Bench memory {n}: the user mentioned a detail worth keeping, "
                    f"number {n * 7919 % 100_003}, about their plans and preferences.",
                    payload={"topic": f"topic {n % 97}"} if n % 3 == 0 else None,
                ),
                user=user,
                mode=modes[n % 2],
                cipher=cipher,
                embedding=None,
            )
            for n in range(have, min(total, have + BATCH))
        ]
        with transaction.atomic():
            Memory.all_owners.bulk_create(rows)
        have += len(rows)
        print(f"  {have} memories", file=sys.stderr)
    return user


def time_quota_check(user: Any, rounds: int = 50) -> dict[str, float]:
    """Median milliseconds of the quota check and of the count it replaces."""
    from django.db import connection, transaction

    from memoryhub.services.quotas import check_memory_quota

    def timed(call: Any) -> float:
        laps = []
        for _ in range(rounds):
            with transaction.atomic():
                start = time.perf_counter()
                call()
                laps.append((time.perf_counter() - start) * 1000)
                transaction.set_rollback(True)
        return round(statistics.median(laps), 3)

    def count() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT count(*), sum(octet_length(content_ciphertext)"
                " + coalesce(octet_length(payload_ciphertext), 0))"
                " FROM memoryhub_memory WHERE user_id = %s",
                [user.pk],
            )

    return {
        "quota_check_ms": timed(lambda: check_memory_quota(user=user, memories=1, stored_bytes=1)),
        "count_and_sum_ms": timed(count),
    }


def run_child(user_id: str, code: Path) -> dict[str, Any]:
    environment = {
        **os.environ,
        "PYTHONPATH": str(code),
        # The same database and development secrets as this checkout, whichever code runs.
        "MEMORYHUB_DATA_DIR": os.environ.get("MEMORYHUB_DATA_DIR", str(REPO / ".data")),
        "EXPORT_BENCH_USER": user_id,
        "DJANGO_SETTINGS_MODULE": "memoryhub.settings",
    }
    result = subprocess.run(  # noqa: S603  # Our own interpreter and module.
        [sys.executable, str(REPO / "bench" / "export_memory.py"), "--child"],
        cwd=code,
        env=environment,
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    for line in result.stdout.splitlines():
        if line.startswith(MARKER):
            figures: dict[str, Any] = json.loads(line.removeprefix(MARKER))
            return figures
    raise RuntimeError(f"export probe failed:\n{result.stdout}\n{result.stderr[-3000:]}")


async def _get_through_asgi(application: Any, path: str, cookie: str) -> dict[str, Any]:
    """Send one GET through the ASGI app; count the body's bytes and chunks, keep none."""
    never = asyncio.Event()
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await never.wait()  # The client stays connected until the response is done.
        return {"type": "http.disconnect"}

    figures: dict[str, Any] = {"status": 0, "bytes": 0, "chunks": 0}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            figures["status"] = message["status"]
        elif message["type"] == "http.response.body":
            figures["bytes"] += len(message.get("body", b""))
            figures["chunks"] += 1

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"cookie", cookie.encode())],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    await application(scope, receive, send)
    return figures


def child() -> None:
    import django

    django.setup()
    from django.conf import settings
    from django.test import Client

    from memoryhub.asgi import application
    from memoryhub.models import User

    user = User.objects.get(pk=os.environ["EXPORT_BENCH_USER"])
    client = Client()
    client.force_login(user)
    cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
    before = _resident_mb()
    start = time.perf_counter()
    figures = asyncio.run(_get_through_asgi(application, "/dashboard/export/", cookie))
    seconds = time.perf_counter() - start
    after = _resident_mb()
    print(
        MARKER
        + json.dumps(
            {
                **figures,
                "seconds": round(seconds, 1),
                "rss_before_mb": before["VmRSS"],
                "peak_rss_mb": after["VmHWM"],
                "growth_mb": round(after["VmHWM"] - before["VmRSS"], 1),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--code", type=Path, default=REPO, help="checkout the web child runs")
    parser.add_argument("--label", default="current")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child()
        return
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    import django

    django.setup()
    user = populate(args.memories)
    costs = time_quota_check(user)
    figures = run_child(str(user.pk), args.code.resolve())
    report = {"label": args.label, "memories": args.memories, **figures, **costs}
    print(f"{'':24}{args.label}")
    for name in (
        "status",
        "bytes",
        "chunks",
        "seconds",
        "rss_before_mb",
        "peak_rss_mb",
        "growth_mb",
        "quota_check_ms",
        "count_and_sum_ms",
    ):
        print(f"{name:24}{report[name]}")
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    path = RESULTS_DIR / f"export-memory-{args.label}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {path.relative_to(REPO)}")


if __name__ == "__main__":
    main()
