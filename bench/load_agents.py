"""The simulated agents of the load benchmark: the mix of requests each one sends, the warm-up
of a fresh web process, and the read-back of every write the server acknowledged.
"""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from bench.load_report import OPERATIONS, THROTTLED, Outcome
from bench.load_stack import MODE, ApiClient, LoadAgent, Reply, WebServer, memory_texts, queries

SETTLED_SECONDS = 1.5  # Warm-up ends when no request of three rounds in a row is slower.
TEXTS = memory_texts(300)
QUERIES = queries()


@dataclass(frozen=True)
class Write:
    memory_id: str
    content: str
    user: str


@dataclass
class AgentResults:
    outcomes: list[Outcome] = field(default_factory=list)
    writes: list[Write] = field(default_factory=list)


def perform(
    client: ApiClient, agent: LoadAgent, operation: str, n: int, label: str
) -> tuple[Reply, str]:
    """Send the agent's n-th request; return the reply and, for remember, the content sent."""
    query = QUERIES[(agent.index + n) % len(QUERIES)]
    scope = {"user": agent.user, "mode": MODE}
    if operation == "remember":
        content = f"{label} {agent.user} #{n}: {TEXTS[(agent.index * 7 + n) % len(TEXTS)]}"
        body = {**scope, "kind": "fact", "content": content}
        return client.request("POST", "/api/v1/memories", body=body), content
    if operation == "search":
        return client.request("POST", "/api/v1/search", body={**scope, "query": query}), ""
    if operation == "context":
        return client.request("POST", "/api/v1/context", body={**scope, "message": query}), ""
    return client.request("GET", "/api/v1/memories", query=scope), ""


def drive(agent: LoadAgent, *, port: int, until: float, timeout: float, label: str) -> AgentResults:
    """One agent: the four operations in turn until `until`, honouring Retry-After."""
    results = AgentResults()
    client = ApiClient(port=port, key=agent.key, timeout=timeout)
    n = agent.index  # Agents start at different operations, so the mix is mixed at every moment.
    try:
        while time.monotonic() < until:
            operation = OPERATIONS[n % len(OPERATIONS)]
            started = time.perf_counter()
            try:
                reply, content = perform(client, agent, operation, n, label)
            except (OSError, http.client.HTTPException) as exc:
                seconds = time.perf_counter() - started
                failure = Outcome(
                    operation, 0, seconds, has_retry_after=False, error=type(exc).__name__
                )
                results.outcomes.append(failure)
                time.sleep(0.1)  # A server that refuses connections must not make a busy loop.
                n += 1
                continue
            has_retry_after = reply.retry_after is not None
            results.outcomes.append(
                Outcome(operation, reply.status, reply.seconds, has_retry_after)
            )
            if operation == "remember" and reply.status in {200, 201}:
                results.writes.append(Write(str(reply.json()["id"]), content, agent.user))
            if reply.status in THROTTLED:
                wait = float(reply.retry_after or 1)
                time.sleep(max(0.0, min(wait, until - time.monotonic())))
            n += 1
    finally:
        client.close()
    return results


def read_back(writes: Sequence[Write], *, port: int, key: str, timeout: float) -> dict[str, Any]:
    """Read every acknowledged write again; lost: anything but 200 with the same content."""
    lost: list[dict[str, Any]] = []
    statuses: Counter[str] = Counter()
    lock = threading.Lock()

    def check(chunk: Sequence[Write]) -> None:
        client = ApiClient(port=port, key=key, timeout=timeout)
        try:
            for write in chunk:
                status, content = _read_once(client, write)
                with lock:
                    statuses[str(status)] += 1
                    if status != 200 or content != write.content:
                        lost.append({"id": write.memory_id, "status": status})
        finally:
            client.close()

    chunks = [writes[n::4] for n in range(4)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(check, chunks))
    return {
        "acknowledged": len(writes),
        "lost": len(lost),
        "lost_examples": lost[:10],
        "read_statuses": dict(statuses),
    }


def _read_once(client: ApiClient, write: Write) -> tuple[int, str | None]:
    """The memory's status and content, retrying a throttled or failed read a few times."""
    status = 0
    for _ in range(5):
        try:
            reply = client.request(
                "GET",
                f"/api/v1/memories/{write.memory_id}",
                query={"user": write.user, "mode": MODE},
            )
        except (OSError, http.client.HTTPException):
            time.sleep(0.5)
            continue
        status = reply.status
        if status == 200:
            return status, str(reply.json()["content"])
        if status not in THROTTLED:
            return status, None
        time.sleep(min(5.0, float(reply.retry_after or 1)))
    return status, None


def warm_up(
    server: WebServer, agents: Sequence[LoadAgent], *, timeout: float, cap_seconds: float = 120
) -> dict[str, Any]:
    """Until every worker has loaded the embedding model and run each operation once.

    Rounds of concurrent requests on fresh connections (so every worker gets some), until the
    slowest request of three rounds in a row is under SETTLED_SECONDS.
    """
    width = 4 * server.workers
    slowest: list[float] = []
    statuses: Counter[str] = Counter()
    lock = threading.Lock()
    settled = 0
    deadline = time.monotonic() + cap_seconds

    def one(n: int) -> float:
        agent = agents[n % len(agents)]
        client = ApiClient(port=server.port, key=agent.key, timeout=timeout)
        longest = 0.0
        try:
            for operation in OPERATIONS:
                try:
                    reply, _ = perform(client, agent, operation, n, "warm-up")
                except (OSError, http.client.HTTPException) as exc:
                    with lock:
                        statuses[type(exc).__name__] += 1
                    continue
                with lock:
                    statuses[str(reply.status)] += 1
                longest = max(longest, reply.seconds)
        finally:
            client.close()
        return longest

    with ThreadPoolExecutor(max_workers=width) as pool:
        while settled < 3 and time.monotonic() < deadline:
            first = len(slowest) * width  # Each request of the warm-up has a number of its own.
            round_slowest = max(pool.map(one, range(first, first + width)))
            slowest.append(round(round_slowest, 3))
            settled = settled + 1 if round_slowest < SETTLED_SECONDS else 0
    return {
        "rounds": len(slowest),
        "slowest_seconds": slowest,
        "settled": settled >= 3,
        "statuses": dict(statuses),
    }
