"""Webhook state changes: endpoints, the deliveries of each change, sending and replaying them."""

from __future__ import annotations

import http.client
import json
import logging
import uuid
from datetime import datetime, timedelta
from functools import partial
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.changes import Change
from memoryhub.audit.log import record_access
from memoryhub.errors import InvalidInputError, NotFoundError
from memoryhub.keyring import cipher_for, workspace_cipher
from memoryhub.memory_rows import memories_of, open_content
from memoryhub.models import (
    LearningCandidate,
    User,
    WebhookDelivery,
    WebhookEndpoint,
    Workspace,
)
from memoryhub.sealed_tables import WEBHOOK_TABLE
from memoryhub.task_queue import SEND_WEBHOOK, enqueue

from . import destinations, events, signing

logger = logging.getLogger(__name__)

Status = WebhookDelivery.Status
MAX_ERROR = 300


# Endpoints ------------------------------------------------------------------------------------


def _check_events(event_types: list[str]) -> list[str]:
    unknown = sorted(set(event_types) - set(events.EVENT_TYPES))
    if unknown or not event_types:
        raise InvalidInputError(
            gettext_noop("event_types must name at least one of {events}"),
            events=", ".join(events.EVENT_TYPES),
        )
    return [event for event in events.EVENT_TYPES if event in event_types]


def create_endpoint(
    *,
    workspace: Workspace,
    url: str,
    event_types: list[str],
    actor: Actor,
    include_text: bool = False,
    description: str = "",
) -> WebhookEndpoint:
    """A new endpoint with a fresh secret (shown to its creator once, in the returned row)."""
    endpoint = WebhookEndpoint(
        workspace=workspace,
        url=destinations.check_url(url),
        event_types=_check_events(event_types),
        include_text=include_text,
        description=description.strip()[:200],
    )
    endpoint.secret_ciphertext = _seal(endpoint, signing.new_secret(), "secret")
    with transaction.atomic():
        endpoint.save(force_insert=True)
        _audit(actor, AuditAction.WEBHOOK_CREATE, endpoint)
    return endpoint


def get_endpoint(*, workspace: Workspace, endpoint_id: uuid.UUID | str) -> WebhookEndpoint:
    """An endpoint of this workspace; another workspace's id is NotFound."""
    try:
        return WebhookEndpoint.objects.get(workspace=workspace, pk=endpoint_id)
    except (WebhookEndpoint.DoesNotExist, ValueError):
        raise NotFoundError(gettext_noop("webhook endpoint not found")) from None


def rotate_secret(
    *, workspace: Workspace, endpoint_id: uuid.UUID | str, actor: Actor
) -> WebhookEndpoint:
    """A new secret; the old one keeps signing beside it for the grace period."""
    with transaction.atomic():
        endpoint = get_endpoint(workspace=workspace, endpoint_id=endpoint_id)
        grace = timedelta(hours=settings.MEMORYHUB_WEBHOOK_SECRET_GRACE_HOURS)
        endpoint.previous_secret_ciphertext = _seal(endpoint, current_secret(endpoint), "previous")
        endpoint.previous_secret_expires_at = timezone.now() + grace
        endpoint.secret_ciphertext = _seal(endpoint, signing.new_secret(), "secret")
        endpoint.save(
            update_fields=[
                "secret_ciphertext",
                "previous_secret_ciphertext",
                "previous_secret_expires_at",
            ]
        )
        _audit(actor, AuditAction.WEBHOOK_ROTATE, endpoint)
    return endpoint


def current_secret(endpoint: WebhookEndpoint) -> str:
    """The endpoint's signing secret in clear, to sign or to show once after creation/rotation."""
    return workspace_cipher(endpoint.workspace_id).decrypt(
        endpoint.secret_ciphertext, table=WEBHOOK_TABLE, row_id=endpoint.pk, field="secret"
    )


def _seal(endpoint: WebhookEndpoint, secret: str, field: str) -> bytes:
    return workspace_cipher(endpoint.workspace_id).encrypt(
        secret, table=WEBHOOK_TABLE, row_id=endpoint.pk, field=field
    )


def set_enabled(
    *, workspace: Workspace, endpoint_id: uuid.UUID | str, enabled: bool, actor: Actor
) -> WebhookEndpoint:
    """Enable or disable an endpoint; enabling closes its circuit."""
    with transaction.atomic():
        endpoint = get_endpoint(workspace=workspace, endpoint_id=endpoint_id)
        endpoint.is_enabled = enabled
        if enabled:
            endpoint.consecutive_failures = 0
            endpoint.circuit_opened_at = None
        endpoint.save(update_fields=["is_enabled", "consecutive_failures", "circuit_opened_at"])
        action = AuditAction.WEBHOOK_ENABLE if enabled else AuditAction.WEBHOOK_DISABLE
        _audit(actor, action, endpoint)
    return endpoint


def replay_delivery(*, workspace: Workspace, delivery_id: int, actor: Actor) -> WebhookDelivery:
    """Send a delivery again, with the same message id, whatever its state."""
    with transaction.atomic():
        try:
            delivery = WebhookDelivery.objects.select_for_update().get(
                pk=delivery_id, endpoint__workspace=workspace
            )
        except WebhookDelivery.DoesNotExist:
            raise NotFoundError(gettext_noop("webhook delivery not found")) from None
        delivery.status = Status.PENDING
        delivery.attempts = 0
        delivery.next_attempt_at = timezone.now()
        delivery.save(update_fields=["status", "attempts", "next_attempt_at"])
        record_access(
            actor=actor,
            subject_user_id=None,
            action=AuditAction.WEBHOOK_REPLAY,
            object_ids=[delivery.endpoint_id, delivery.message_id],
        )
        transaction.on_commit(partial(enqueue, SEND_WEBHOOK, str(delivery.pk)))
    return delivery


def _audit(actor: Actor, action: AuditAction, endpoint: WebhookEndpoint) -> None:
    record_access(actor=actor, subject_user_id=None, action=action, object_ids=[endpoint.pk])


# Deliveries of a change -----------------------------------------------------------------------


def record_deliveries(change: Change) -> None:
    """The change-hook subscriber: one delivery per event and subscribed endpoint, then sent.

    Runs once the change committed (audit/changes.py), so a rolled-back change sends nothing.
    """
    event_types = events.EVENTS_OF.get(change.action, ())
    if not event_types:
        return
    # Every change of memory comes here after its commit, and most workspaces have no endpoint:
    # one query finds the endpoints (through the user's workspace), the user only when needed.
    enabled = WebhookEndpoint.objects.filter(is_enabled=True)
    if change.workspace_id:
        endpoints = list(enabled.filter(workspace_id=change.workspace_id))
    elif change.user_id:
        endpoints = list(enabled.filter(workspace__users__pk=change.user_id))
    else:
        return
    if not endpoints:
        return
    user = User.objects.filter(pk=change.user_id).first() if change.user_id else None
    now = timezone.now()
    created: list[WebhookDelivery] = []
    for event_type in event_types:
        targets = [e for e in endpoints if event_type in e.event_types]
        if not targets:
            continue
        data = _event_data(event_type, change, user)
        if data is None:
            continue
        message_id = f"msg_{uuid.uuid4().hex}"
        payload = {"type": event_type, "timestamp": now.isoformat(), "data": data}
        created += WebhookDelivery.objects.bulk_create(
            WebhookDelivery(
                endpoint=endpoint,
                message_id=message_id,
                event_type=event_type,
                payload=payload,
                next_attempt_at=now,
                created_at=now,
            )
            for endpoint in targets
        )
    for delivery in created:
        # A broker outage loses nothing: the due-deliveries sweep sends what is still pending.
        transaction.on_commit(partial(_enqueue_quietly, delivery.pk))


def _enqueue_quietly(delivery_id: int) -> None:
    try:
        enqueue(SEND_WEBHOOK, str(delivery_id))
    except Exception:  # Any broker failure: the sweep sends it later.
        logger.warning("webhook delivery %s not queued; the sweep will send it", delivery_id)


def _event_data(event_type: str, change: Change, user: User | None) -> dict[str, Any] | None:
    """Ids, kinds and timestamps of the change; never text. None: nothing to announce."""
    data: dict[str, Any] = {
        "action": change.action.value,
        "user_id": change.user_id,
        "mode": change.mode,
        "actor_type": str(change.actor.actor_type),
    }
    ids = list(change.object_ids)
    if event_type == events.CANDIDATE_WAITING and change.action is AuditAction.ANSWER_REPORT:
        # The answer's ids: only a low-scoring answer left a candidate waiting.
        ids = [
            str(pk)
            for pk in LearningCandidate.objects.filter(
                answer_id__in=[uuid.UUID(pk) for pk in ids], status=LearningCandidate.Status.PENDING
            ).values_list("pk", flat=True)
        ]
        if not ids:
            return None
    if event_type in (events.MEMORY_CREATED, events.MEMORY_UPDATED) and user is not None:
        rows = memories_of(user=user, mode=None).filter(pk__in=ids)
        data["memories"] = [
            {"id": str(pk), "kind": kind, "updated_at": updated.isoformat()}
            for pk, kind, updated in rows.values_list("pk", "kind", "updated_at")
        ]
    if event_type == events.SESSION_EXTRACTED and user is not None:
        # Which session(s) the extracted memories came from, so a receiver can fetch them.
        sessions = memories_of(user=user, mode=None).filter(pk__in=ids, session__isnull=False)
        data["session_ids"] = sorted(
            {str(pk) for pk in sessions.values_list("session_id", flat=True)}
        )
    key = (
        "candidate_ids"
        if event_type in (events.CANDIDATE_WAITING, events.REVIEW_DECIDED)
        else "ids"
    )
    data[key] = ids
    return data


# Sending --------------------------------------------------------------------------------------


def due_delivery_ids(*, now: datetime | None = None, limit: int = 500) -> list[int]:
    """Deliveries whose (next) attempt is due, to enabled endpoints, oldest first."""
    rows = WebhookDelivery.objects.filter(
        status__in=(Status.PENDING, Status.FAILED),
        next_attempt_at__lte=now or timezone.now(),
        endpoint__is_enabled=True,
    ).order_by("next_attempt_at", "id")
    return list(rows.values_list("pk", flat=True)[:limit])


def send_delivery(delivery_id: int, *, now: datetime | None = None) -> WebhookDelivery | None:
    """Attempt one delivery if it is due and its endpoint's circuit lets it through.

    The row stays locked during the attempt, so two workers never send it at once; a
    delivered one is never sent again (unless replayed). Returns the row, or None if not due.
    """
    now = now or timezone.now()
    with transaction.atomic():
        delivery = (
            WebhookDelivery.objects.select_for_update(skip_locked=True)
            .select_related("endpoint")
            .filter(
                pk=delivery_id,
                status__in=(Status.PENDING, Status.FAILED),
                next_attempt_at__lte=now,
            )
            .first()
        )
        if delivery is None:
            return None
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=delivery.endpoint_id)
        if not endpoint.is_enabled:
            return None
        reopens_at = _circuit_reopens_at(endpoint)
        if reopens_at is not None and reopens_at > now:
            # Open circuit: wait for the half-open probe; no attempt is spent.
            delivery.next_attempt_at = reopens_at
            delivery.save(update_fields=["next_attempt_at"])
            return delivery
        status_code, error = _post(endpoint, delivery, now)
        _record_attempt(delivery, endpoint, status_code=status_code, error=error, now=now)
    return delivery


def _circuit_reopens_at(endpoint: WebhookEndpoint) -> datetime | None:
    if endpoint.circuit_opened_at is None:
        return None
    cooldown = timedelta(seconds=settings.MEMORYHUB_WEBHOOK_CIRCUIT_COOLDOWN_SECONDS)
    return endpoint.circuit_opened_at + cooldown


def _record_attempt(
    delivery: WebhookDelivery,
    endpoint: WebhookEndpoint,
    *,
    status_code: int | None,
    error: str,
    now: datetime,
) -> None:
    delivery.attempts += 1
    delivery.last_status_code = status_code
    delivery.last_error = error[:MAX_ERROR]
    if status_code is not None and 200 <= status_code < 300:
        delivery.status = Status.DELIVERED
        delivery.delivered_at = now
        endpoint.consecutive_failures = 0
        endpoint.circuit_opened_at = None
    else:
        endpoint.consecutive_failures += 1
        if endpoint.consecutive_failures >= settings.MEMORYHUB_WEBHOOK_CIRCUIT_FAILURES:
            endpoint.circuit_opened_at = now  # Opens, or re-opens after a failed probe.
        if delivery.attempts >= settings.MEMORYHUB_WEBHOOK_MAX_ATTEMPTS:
            delivery.status = Status.DEAD
        else:
            delivery.status = Status.FAILED
            delivery.next_attempt_at = now + backoff(delivery.attempts)
    delivery.save(
        update_fields=[
            "attempts",
            "last_status_code",
            "last_error",
            "status",
            "delivered_at",
            "next_attempt_at",
        ]
    )
    endpoint.save(update_fields=["consecutive_failures", "circuit_opened_at"])


def backoff(attempts: int) -> timedelta:
    """The wait after the `attempts`-th failure: base * 2^(attempts-1), capped."""
    seconds = settings.MEMORYHUB_WEBHOOK_BACKOFF_SECONDS * 2 ** (attempts - 1)
    return timedelta(seconds=min(seconds, settings.MEMORYHUB_WEBHOOK_BACKOFF_MAX_SECONDS))


def _signing_secrets(endpoint: WebhookEndpoint, now: datetime) -> list[str]:
    secrets_ = [current_secret(endpoint)]
    expires = endpoint.previous_secret_expires_at
    previous = endpoint.previous_secret_ciphertext
    if previous is not None and expires is not None and expires > now:
        cipher = workspace_cipher(endpoint.workspace_id)
        secrets_.append(
            cipher.decrypt(previous, table=WEBHOOK_TABLE, row_id=endpoint.pk, field="previous")
        )
    return secrets_


def _post(
    endpoint: WebhookEndpoint, delivery: WebhookDelivery, now: datetime
) -> tuple[int | None, str]:
    """POST the signed message; (status code, error) with no code when it never answered."""
    payload = dict(delivery.payload)
    if endpoint.include_text and delivery.event_type in events.MEMORY_EVENTS:
        payload = _with_text(payload)
    body = json.dumps(payload, separators=(",", ":"))
    # Signed at the moment it leaves (receivers refuse a stale timestamp), whatever `now` says.
    sent_at = timezone.now()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "MemoryHub-Webhooks/1",
        "webhook-id": delivery.message_id,
        "webhook-timestamp": str(int(sent_at.timestamp())),
        "webhook-signature": signing.signature_header(
            secrets_=_signing_secrets(endpoint, now),
            message_id=delivery.message_id,
            at=sent_at,
            body=body,
        ),
    }
    try:
        status_code = destinations.post(
            endpoint.url,
            body=body.encode("utf-8"),
            headers=headers,
            timeout=settings.MEMORYHUB_WEBHOOK_TIMEOUT_SECONDS,
        )
    except InvalidInputError as exc:  # The host now resolves to a non-public address.
        return None, f"refused: {exc}"
    except (http.client.HTTPException, OSError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if not 200 <= status_code < 300:
        return status_code, f"HTTP {status_code}"
    return status_code, ""


def _with_text(payload: dict[str, Any]) -> dict[str, Any]:
    """The payload with each memory's text, for an endpoint allowed it (audited per user)."""
    data = dict(payload["data"])
    user_id = data.get("user_id")
    user = User.objects.filter(pk=str(user_id)).first() if user_id else None
    if user is None:
        return payload
    ids = [item["id"] for item in data.get("memories", [])]
    rows = list(memories_of(user=user, mode=None).filter(pk__in=ids))
    cipher = cipher_for(user, create=False)
    texts = {str(row.pk): open_content(row, cipher) for row in rows}
    data["memories"] = [
        {**item, "text": texts[item["id"]]} for item in data["memories"] if item["id"] in texts
    ]
    record_access(
        actor=Actor.system("webhooks"),
        subject_user_id=user.pk,
        action=AuditAction.WEBHOOK_TEXT_SENT,
        object_ids=list(texts),
    )
    return {**payload, "data": data}
