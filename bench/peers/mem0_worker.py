"""Mem0's side of the peer benchmark: runs inside Mem0's own virtualenv, never the project's.

`bench/peers/mem0.py` starts it with that venv's interpreter and talks to it in JSON lines:
one command on stdin, one answer on stdout. It imports nothing of MemoryHub (none of it is
installed here) and times each Mem0 call itself, so the pipe's cost is in neither side's
figures. Offline: the environment it is started with turns telemetry off and forbids any
model download, and the LLM Mem0 builds points at a closed loopback port, so a call to it
could not leave the machine (with `infer=False` none is made).
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from typing import Any

# Nothing may reach the network: checked before Mem0 is imported, as its modules read these
# at import time (mem0/memory/telemetry.py reads MEM0_TELEMETRY once).
REQUIRED_ENVIRONMENT = {
    "MEM0_TELEMETRY": "False",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}
# The discard port on loopback: nothing listens there, a connection is refused at once.
UNREACHABLE_LLM = "http://127.0.0.1:9/v1"


def peak_rss_mb() -> float:
    """The most memory this process has held resident, in MB (Linux counts ru_maxrss in KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


class Mem0Side:
    """One Mem0 `Memory` on pgvector with the packaged MiniLM, and the commands it answers."""

    def __init__(
        self, *, database_url: str, model_path: str, collection: str, torch_threads: int
    ) -> None:
        import torch
        from mem0 import Memory
        from mem0.memory import telemetry

        if torch_threads:
            # Mem0 embeds one text per call; on a shared 2-core machine torch's default pool
            # (a thread per core) spins against PostgreSQL and the other jobs: one text then
            # took 370 ms instead of 17 ms at load average 5. MemoryHub embeds one text on one
            # thread too.
            torch.set_num_threads(torch_threads)
        self.torch_threads = torch.get_num_threads()
        if telemetry.MEM0_TELEMETRY:
            raise RuntimeError("Mem0's telemetry is on: MEM0_TELEMETRY must be False")
        self.collection = collection
        self.database_url = database_url
        self.memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "pgvector",
                    # Everything else as Mem0 sets it by default: an HNSW index, cosine.
                    "config": {
                        "connection_string": database_url,
                        "collection_name": collection,
                        "embedding_model_dims": 384,
                    },
                },
                "embedder": {
                    "provider": "huggingface",
                    "config": {"model": model_path, "embedding_dims": 384},
                },
                # Mem0 builds its LLM client when constructed; with infer=False it is never
                # called. A dummy key and a closed loopback port keep it off the network.
                "llm": {
                    "provider": "openai",
                    "config": {"api_key": "not-used", "openai_base_url": UNREACHABLE_LLM},
                },
                "history_db_path": os.path.join(os.environ["MEM0_DIR"], "history.db"),
            }
        )

    def add_one(self, *, user: str, texts: list[str]) -> dict[str, Any]:
        """Add each text with its own call, as an agent storing a memory does."""
        seconds = []
        for text in texts:
            started = time.perf_counter()
            self.memory.add(text, user_id=user, infer=False)
            seconds.append(time.perf_counter() - started)
        return {"seconds": seconds}

    def add_batch(self, *, user: str, texts: list[str], batch: int) -> dict[str, Any]:
        """Add the texts `batch` at a time: one `add` call with a list of messages each."""
        seconds = []
        for start in range(0, len(texts), batch):
            messages = [{"role": "user", "content": text} for text in texts[start : start + batch]]
            started = time.perf_counter()
            self.memory.add(messages, user_id=user, infer=False)
            seconds.append(time.perf_counter() - started)
        return {"seconds": seconds}

    def search(self, *, user: str, queries: list[str], k: int) -> dict[str, Any]:
        """Search each query in the user's memories: seconds and the texts found, best first."""
        seconds = []
        found = []
        for query in queries:
            started = time.perf_counter()
            answer = self.memory.search(query, top_k=k, filters={"user_id": user})
            seconds.append(time.perf_counter() - started)
            found.append([item["memory"] for item in answer["results"]])
        return {"seconds": seconds, "found": found}

    def drop_vector_index(self) -> dict[str, Any]:
        """Drop the HNSW index Mem0 created: its searches then scan every row, exactly."""
        import psycopg
        from psycopg import sql

        index = f"{self.collection}_hnsw_idx"
        with psycopg.connect(self.database_url, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(index)))
        return {"dropped": index}

    def versions(self) -> dict[str, Any]:
        from importlib.metadata import version

        packages = ("mem0ai", "sentence-transformers", "transformers", "torch", "psycopg")
        return {name: version(name) for name in packages}


def answer(side: Mem0Side | None, command: dict[str, Any]) -> tuple[Mem0Side | None, Any]:
    """Run one command; return the (possibly new) Mem0 side and the answer."""
    operation = command.pop("op")
    if operation == "start":
        side = Mem0Side(**command)
        return side, {"versions": side.versions(), "torch_threads": side.torch_threads}
    if side is None:
        raise RuntimeError("the first command must be 'start'")
    if operation == "add_one":
        return side, side.add_one(**command)
    if operation == "add_batch":
        return side, side.add_batch(**command)
    if operation == "search":
        return side, side.search(**command)
    if operation == "drop_vector_index":
        return side, side.drop_vector_index()
    if operation == "peak_rss":
        return side, {"peak_rss_mb": peak_rss_mb()}
    raise ValueError(f"unknown command {operation!r}")


def main() -> None:
    wrong = {k: v for k, v in REQUIRED_ENVIRONMENT.items() if os.environ.get(k) != v}
    if wrong or not os.environ.get("MEM0_DIR"):
        raise SystemExit(f"refusing to start: set {REQUIRED_ENVIRONMENT} and MEM0_DIR")
    # Answers go to the real stdout only; anything a library prints lands on stderr instead.
    replies = sys.stdout
    sys.stdout = sys.stderr
    side = None
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("op") == "stop":
            break
        try:
            side, result = answer(side, command)
            reply = {"ok": True, **result}
        except Exception as error:  # Reported to the driver, which stops.
            reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    main()
