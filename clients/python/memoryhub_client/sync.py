"""The synchronous client: `MemoryHub(base_url, key)`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import Concatenate, ParamSpec, TypeVar, cast

import httpx

from . import operations
from .errors import TransportError
from .operations import DEFAULT_MODE, Call, Kind, as_method
from .responses import MemoryOut
from .retry import RetryPolicy
from .transport import api_root, headers_for, result_of, wait_before_retry

P = ParamSpec("P")
R = TypeVar("R")


def _sends(build: Callable[P, Call[R]]) -> Callable[Concatenate[MemoryHub, P], R]:
    """A method taking `build`'s parameters that sends its call and returns the typed answer."""

    def method(self: MemoryHub, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._send(build(*args, **kwargs))

    as_method(method, build)
    return method


class MemoryHub:
    """Every API operation as a method returning the answer (a TypedDict of
    `memoryhub_client.responses`); errors raise ApiError.

    hub = MemoryHub("http://127.0.0.1:8000", key="mh_…")
    hub.remember("alice", "Allergic to peanuts", kind="fact")
    """

    def __init__(
        self,
        base_url: str,
        key: str,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = 30.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.retry = retry or RetryPolicy()
        self._sleep = sleep
        self._http = httpx.Client(
            base_url=api_root(base_url),
            headers=headers_for(key),
            timeout=timeout,
            transport=transport,
        )

    # Users
    create_user = _sends(operations.create_user)
    get_user = _sends(operations.get_user)
    create_user_link = _sends(operations.create_user_link)

    # Memories
    remember = _sends(operations.remember)
    remember_many = _sends(operations.remember_many)
    list_memories = _sends(operations.list_memories)
    get_memory = _sends(operations.get_memory)
    memory_history = _sends(operations.memory_history)
    export = _sends(operations.export)
    edit_memory = _sends(operations.edit_memory)
    delete_memory = _sends(operations.delete_memory)
    forget = _sends(operations.forget)
    get_forget_task = _sends(operations.get_forget_task)

    # Journal
    add_journal_entry = _sends(operations.add_journal_entry)
    list_journal = _sends(operations.list_journal)
    resolve_journal_entry = _sends(operations.resolve_journal_entry)

    # Profile
    get_profile = _sends(operations.get_profile)
    list_open_items = _sends(operations.list_open_items)

    # Sessions
    start_session = _sends(operations.start_session)
    add_message = _sends(operations.add_message)
    end_session = _sends(operations.end_session)
    put_working_memory = _sends(operations.put_working_memory)
    get_working_memory = _sends(operations.get_working_memory)

    # Recall
    search = _sends(operations.search)
    get_context = _sends(operations.get_context)

    # Answers and the workspace graph
    report_answer = _sends(operations.report_answer)
    answer_feedback = _sends(operations.answer_feedback)
    propose_knowledge = _sends(operations.propose_knowledge)
    graph_insights = _sends(operations.graph_insights)

    # Webhooks (the agent's workspace)
    list_webhooks = _sends(operations.list_webhooks)
    create_webhook = _sends(operations.create_webhook)
    rotate_webhook_secret = _sends(operations.rotate_webhook_secret)
    disable_webhook = _sends(operations.disable_webhook)
    enable_webhook = _sends(operations.enable_webhook)
    list_webhook_deliveries = _sends(operations.list_webhook_deliveries)
    replay_webhook_delivery = _sends(operations.replay_webhook_delivery)

    # Review (a reviewer key, minted on the review pages)
    list_review_candidates = _sends(operations.list_review_candidates)
    get_review_candidate = _sends(operations.get_review_candidate)
    approve_candidate = _sends(operations.approve_candidate)
    reject_candidate = _sends(operations.reject_candidate)
    answer_for_user = _sends(operations.answer_for_user)
    leave_to_user = _sends(operations.leave_to_user)
    import_file = _sends(operations.import_file)
    get_import = _sends(operations.get_import)
    keep_imported = _sends(operations.keep_imported)
    discard_imported = _sends(operations.discard_imported)

    def _send(self, call: Call[R]) -> R:
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._http.request(
                    call.method,
                    call.path,
                    params=call.query,
                    json=call.body if call.files is None else None,
                    files=call.files,
                )
            except httpx.TransportError as exc:
                wait = self.retry.delay(attempt, None) if call.is_repeatable else None
                if wait is None:
                    raise TransportError(f"{call.method} {call.path}: {exc}") from exc
            else:
                wait = wait_before_retry(response, attempt, self.retry)
                if wait is None:
                    # The server's answer to this operation, as its schema says (checked in tests).
                    return cast(R, result_of(response))
            self._sleep(wait)

    def iter_memories(
        self,
        user: str | None = None,
        *,
        mode: str = DEFAULT_MODE,
        kind: Kind | None = None,
        status: str | None = None,
        page_size: int = 50,
    ) -> Iterator[MemoryOut]:
        """Every memory, newest first, fetching pages as the iteration goes."""
        cursor: str | None = None
        while True:
            page = self.list_memories(
                user, mode=mode, kind=kind, status=status, cursor=cursor, limit=page_size
            )
            yield from page["items"]
            cursor = page["next_cursor"]
            if not cursor:
                return

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> MemoryHub:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
