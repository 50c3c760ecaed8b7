"""The memory a web process holds after it has served a search and a context assembly.

A fresh interpreter imports what a web worker imports (`memoryhub.asgi`: Django, the URL conf,
ninja, the MCP app), then sends one search and one context request for the bench's user through
the whole HTTP stack in process, and reports its resident set (VmRSS) and its peak (VmHWM).
Run as `python -m bench.web_memory` by `measure_web_memory`, with the bench database's URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MARKER = "web-memory: "


def resident_megabytes(status: str) -> dict[str, float]:
    """VmRSS and VmHWM of a /proc/<pid>/status text, in MB (1,000,000 bytes)."""
    figures = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in {"VmRSS", "VmHWM"}:
            kilobytes = int(value.split()[0])
            figures[name] = round(kilobytes * 1024 / 1_000_000, 1)
    return {"rss_mb": figures["VmRSS"], "peak_rss_mb": figures["VmHWM"]}


def measure_web_memory(
    *, database_url: str, agent_key: str, user: str, mode: str, query: str
) -> dict[str, Any]:
    """Start the child below and return what it reports; RuntimeError if it fails."""
    environment = {
        **os.environ,
        "DATABASE_URL": database_url,
        # The bench's agent key has just sent hundreds of latency requests in this minute.
        "MEMORYHUB_RATE_LIMIT_PER_MINUTE": "1000000",
        "WEB_MEMORY_REQUEST": json.dumps(
            {"key": agent_key, "user": user, "mode": mode, "query": query}
        ),
    }
    result = subprocess.run(  # Our own interpreter and module.
        [sys.executable, "-m", "bench.web_memory"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    for line in result.stdout.splitlines():
        if line.startswith(MARKER):
            figures: dict[str, Any] = json.loads(line.removeprefix(MARKER))
            return figures
    raise RuntimeError(f"web memory probe failed:\n{result.stdout}\n{result.stderr[-3000:]}")


def _serve_two_requests(request: Mapping[str, str]) -> list[int]:
    from django.test import Client

    import memoryhub.asgi  # noqa: F401  # Everything a web worker imports.

    client = Client(HTTP_AUTHORIZATION=f"Bearer {request['key']}", HTTP_HOST="127.0.0.1")
    scope = {"user": request["user"], "mode": request["mode"]}
    statuses = []
    for path, field in (("/api/v1/search", "query"), ("/api/v1/context", "message")):
        response = client.post(
            path, {**scope, field: request["query"]}, content_type="application/json"
        )
        statuses.append(response.status_code)
    return statuses


if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryhub.settings")
    statuses = _serve_two_requests(json.loads(os.environ["WEB_MEMORY_REQUEST"]))
    if statuses != [200, 200]:
        sys.exit(f"search and context answered {statuses}")
    from django.conf import settings

    figures = resident_megabytes(Path("/proc/self/status").read_text())
    print(MARKER + json.dumps({**figures, "runtime": settings.MEMORYHUB_EMBEDDING_RUNTIME}))
