"""Forget by query in the background when it picks more memories than a request should delete.

A query compares every memory, message, note and version of the mode with the query; one that
picks thousands of memories cascades over all of them. Above MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE
picked memories the forget is queued as a ForgetTask; the worker runs the same `forget` and
keeps its receipt on the task, which the caller reads back by id.
"""

from __future__ import annotations

from functools import partial
from uuid import UUID, uuid4

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.embeddings import Embedder
from memoryhub.keyring import cipher_for
from memoryhub.models import ActorType, Channel, ForgetTask, Memory, Mode, User
from memoryhub.sealed_tables import FORGET_TASK_TABLE
from memoryhub.services.forget import DeletionReceipt, forget
from memoryhub.services.forget_selection import (
    QUERY_MIN_SIMILARITY,
    ForgetSelector,
    check_selector,
    in_window,
)
from memoryhub.task_queue import RUN_FORGET_TASK, enqueue
from memoryhub.vector_search import cosine_distance


def count_query_matches(
    *, user: User, mode: Mode, selector: ForgetSelector, embedder: Embedder
) -> int:
    """How many memories of the mode the selector's query picks (one indexed count)."""
    if not selector.query:
        return 0
    vector = embedder.embed_query(selector.query)
    return (
        Memory.objects.for_owner(user=user, mode=mode)
        .filter(in_window("created_at", selector))
        .annotate(distance=cosine_distance(vector, model=embedder.name))
        .filter(distance__lt=1 - QUERY_MIN_SIMILARITY)
        .count()
    )


def forget_or_queue(
    *, user: User, mode: Mode, selector: ForgetSelector, actor: Actor, embedder: Embedder
) -> DeletionReceipt | ForgetTask:
    """Forget now, or queue a ForgetTask when the query picks many memories.

    Only forgets by query (without explicit ids) go to the background: ids are bounded by the
    API, and a period or topic costs no embedding. Raises InvalidInputError like `forget`.
    """
    ids = check_selector(selector)
    threshold = settings.MEMORYHUB_FORGET_IN_BACKGROUND_ABOVE
    if (
        ids
        or threshold <= 0
        or count_query_matches(user=user, mode=mode, selector=selector, embedder=embedder)
        <= threshold
    ):
        return forget(user=user, mode=mode, selector=selector, actor=actor, embedder=embedder)
    task_id = uuid4()
    sealed = cipher_for(user).encrypt_json(
        {"query": selector.query, "topic": selector.topic},
        table=FORGET_TASK_TABLE,
        row_id=task_id,
        field="selector",
    )
    with transaction.atomic():
        task = ForgetTask.objects.create(
            id=task_id,
            user=user,
            mode=mode,
            selector_ciphertext=sealed,
            since=selector.since,
            until=selector.until,
            actor_type=actor.actor_type,
            actor_id=actor.actor_id,
            actor_channel=actor.channel,
            actor_label=actor.label[:200],
        )
        transaction.on_commit(partial(enqueue, RUN_FORGET_TASK, str(task.pk)))
    return task


def run_forget_task(*, task_id: UUID | str, embedder: Embedder | None = None) -> ForgetTask:
    """Run a queued forget and keep its receipt on the task; a task already done is left as is.

    The forget and the receipt commit together under the task's row lock: a task delivered
    twice forgets once.
    """
    with transaction.atomic():
        task = (
            ForgetTask.objects.select_for_update()
            .select_related("user__workspace", "mode")
            .get(pk=task_id)
        )
        if task.status == ForgetTask.Status.DONE:
            return task
        opened = cipher_for(task.user).decrypt_json(
            task.selector_ciphertext, table=FORGET_TASK_TABLE, row_id=task.pk, field="selector"
        )
        receipt = forget(
            user=task.user,
            mode=task.mode,
            selector=ForgetSelector(
                since=task.since, until=task.until, topic=opened["topic"], query=opened["query"]
            ),
            actor=Actor(
                ActorType(task.actor_type),
                task.actor_id,
                Channel(task.actor_channel),
                label=task.actor_label,
            ),
            embedder=embedder,
        )
        task.status = ForgetTask.Status.DONE
        task.counts = dict(sorted(receipt.counts.items()))
        task.memory_ids = [str(pk) for pk in receipt.memory_ids]
        task.finished_at = timezone.now()
        task.save(update_fields=["status", "counts", "memory_ids", "finished_at"])
    return task
