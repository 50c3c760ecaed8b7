"""Webhooks against a real receiver on loopback that verifies every Standard Webhooks signature."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.utils import timezone
from standardwebhooks import WebhookVerificationError

from memoryhub.actors import Actor
from memoryhub.models import WebhookDelivery
from memoryhub.services.forget import delete_account
from memoryhub.webhooks import events, services, signing
from tests.factories import make_memory, make_user, mode_of

Status = WebhookDelivery.Status
SECRET_TEXT = "my passport number is 123-canary"


@pytest.fixture(autouse=True)
def allow_private_urls(settings):
    """These tests' receivers are on 127.0.0.1: private addresses allowed explicitly here."""
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True


class Receiver:
    """A webhook receiver on 127.0.0.1: verifies signatures; can be down (answers 503).

    With `redirect_to` set it answers 302 there; `requests` counts every request that came.
    """

    def __init__(self) -> None:
        self.secret = ""
        self.up = True
        self.received: list[dict[str, Any]] = []  # Verified messages: id and payload.
        self.bad_signatures = 0
        self.redirect_to = ""
        self.requests = 0
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # http.server's name.
                receiver.requests += 1
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if receiver.redirect_to and self.path == "/hook":
                    self.send_response(302)
                    self.send_header("Location", receiver.redirect_to)
                    self.end_headers()
                    return
                if not receiver.up:
                    self.send_response(503)
                    self.end_headers()
                    return
                headers = {key.lower(): value for key, value in self.headers.items()}
                try:
                    payload = signing.verify(secret=receiver.secret, body=body, headers=headers)
                except WebhookVerificationError:
                    receiver.bad_signatures += 1
                    self.send_response(400)
                    self.end_headers()
                    return
                receiver.received.append({"id": headers["webhook-id"], "payload": payload})
                self.send_response(204)
                self.end_headers()

            def do_GET(self) -> None:  # What a followed 302 would send.
                receiver.requests += 1
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.stop()


def send_due(now=None) -> int:
    """What the beat task does: attempt every due delivery."""
    ids = services.due_delivery_ids(now=now)
    for delivery_id in ids:
        services.send_delivery(delivery_id, now=now)
    return len(ids)


def endpoint_for(receiver: Receiver, workspace, **fields):
    endpoint = services.create_endpoint(
        workspace=workspace,
        url=receiver.url,
        event_types=list(events.EVENT_TYPES),
        actor=Actor.system("test"),
        **fields,
    )
    receiver.secret = services.current_secret(endpoint)
    return endpoint


@pytest.mark.django_db(transaction=True)
def test_changes_arrive_signed_with_ids_and_kinds_and_no_text(receiver, embedder, settings):
    user = make_user()
    endpoint = endpoint_for(receiver, user.workspace)
    assert services.current_secret(endpoint).startswith("whsec_")
    memory = make_memory(user, mode_of(user), SECRET_TEXT, embedder=embedder)
    assert send_due() == 1
    [message] = receiver.received
    assert message["payload"]["type"] == events.MEMORY_CREATED
    data = message["payload"]["data"]
    assert data["ids"] == [str(memory.pk)]
    assert data["memories"] == [
        {"id": str(memory.pk), "kind": "fact", "updated_at": memory.updated_at.isoformat()}
    ]
    raw = json.dumps(message)
    assert "canary" not in raw and "passport" not in raw
    # Stored payloads hold no text either.
    assert "canary" not in json.dumps(list(WebhookDelivery.objects.values_list("payload")))
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
        Status.DELIVERED,
        1,
        204,
    )
    # Delivered means never sent again.
    assert send_due() == 0 and services.send_delivery(delivery.pk) is None
    assert len(receiver.received) == 1

    # Deleting the account reaches the workspace's endpoints though the user is gone.
    user_id = str(user.pk)
    delete_account(user=user, actor=Actor.system("test"))
    send_due()
    assert receiver.received[-1]["payload"]["type"] == events.USER_DELETED
    assert receiver.received[-1]["payload"]["data"]["user_id"] == user_id
    assert receiver.bad_signatures == 0


@pytest.mark.django_db(transaction=True)
def test_text_goes_only_to_an_endpoint_allowed_it(receiver, embedder):
    user = make_user()
    endpoint_for(receiver, user.workspace, include_text=True)
    make_memory(user, mode_of(user), SECRET_TEXT, embedder=embedder)
    send_due()
    [message] = receiver.received
    assert message["payload"]["data"]["memories"][0]["text"] == SECRET_TEXT
    assert "canary" not in json.dumps(list(WebhookDelivery.objects.values_list("payload")))


@pytest.mark.django_db(transaction=True)
def test_a_receiver_down_for_a_while_loses_nothing_and_gets_nothing_twice(
    receiver, embedder, settings
):
    settings.MEMORYHUB_WEBHOOK_CIRCUIT_FAILURES = 3
    settings.MEMORYHUB_WEBHOOK_CIRCUIT_COOLDOWN_SECONDS = 600
    settings.MEMORYHUB_WEBHOOK_MAX_ATTEMPTS = 20
    user = make_user()
    endpoint = endpoint_for(receiver, user.workspace)
    mode = mode_of(user)
    receiver.up = False
    memories = [make_memory(user, mode, f"fact number {n}", embedder=embedder) for n in range(5)]
    now = timezone.now()
    send_due(now)
    # Three failures opened the circuit: the other two waited without spending an attempt.
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 3 and endpoint.circuit_opened_at is not None
    attempts = sorted(WebhookDelivery.objects.values_list("attempts", flat=True))
    assert attempts == [0, 0, 1, 1, 1]
    # Backoff: a failed delivery is not retried before its time.
    assert send_due(now + timedelta(seconds=10)) == 0

    receiver.up = True
    # The half-open probe after the cool-down closes the circuit; then everything arrives.
    later = now + timedelta(seconds=601)
    for step in range(6):
        send_due(later + timedelta(hours=step))
    assert set(WebhookDelivery.objects.values_list("status", flat=True)) == {Status.DELIVERED}
    ids = [m["id"] for m in receiver.received]
    assert len(ids) == len(set(ids)) == 5
    arrived = {m["payload"]["data"]["ids"][0] for m in receiver.received}
    assert arrived == {str(m.pk) for m in memories}
    endpoint.refresh_from_db()
    assert endpoint.consecutive_failures == 0 and endpoint.circuit_opened_at is None


@pytest.mark.django_db(transaction=True)
def test_dead_after_the_maximum_and_replay_sends_the_same_message_id(receiver, embedder, settings):
    settings.MEMORYHUB_WEBHOOK_MAX_ATTEMPTS = 2
    settings.MEMORYHUB_WEBHOOK_CIRCUIT_FAILURES = 100
    user = make_user()
    endpoint_for(receiver, user.workspace)
    make_memory(user, mode_of(user), "a fact", embedder=embedder)
    receiver.up = False
    now = timezone.now()
    send_due(now)
    send_due(now + timedelta(days=1))
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (Status.DEAD, 2, 503)
    assert send_due(now + timedelta(days=2)) == 0  # Dead: no more attempts by itself.

    receiver.up = True
    services.replay_delivery(
        workspace=user.workspace, delivery_id=delivery.pk, actor=Actor.system("test")
    )
    send_due()
    [message] = receiver.received
    assert message["id"] == delivery.message_id


@pytest.mark.django_db(transaction=True)
def test_a_rotated_secret_signs_with_both_during_the_grace(receiver, embedder):
    user = make_user()
    endpoint = endpoint_for(receiver, user.workspace)
    old = services.current_secret(endpoint)
    rotated = services.rotate_secret(
        workspace=user.workspace, endpoint_id=endpoint.pk, actor=Actor.system("test")
    )
    new = services.current_secret(rotated)
    assert new != old and new.startswith("whsec_")
    assert old.encode() not in bytes(rotated.secret_ciphertext)  # Sealed at rest.
    receiver.secret = old  # A receiver not yet updated still verifies.
    make_memory(user, mode_of(user), "one", embedder=embedder)
    send_due()
    receiver.secret = new
    make_memory(user, mode_of(user), "two", embedder=embedder)
    send_due()
    assert len(receiver.received) == 2 and receiver.bad_signatures == 0


@pytest.mark.django_db
def test_bad_endpoints_are_refused(workspace):
    from memoryhub.errors import InvalidInputError

    for url, types in (("ftp://x/", ["memory.created"]), ("http://x/", ["nope"])):
        with pytest.raises(InvalidInputError):
            services.create_endpoint(
                workspace=workspace, url=url, event_types=types, actor=Actor.system("t")
            )


@pytest.mark.django_db(transaction=True)
def test_forgetting_and_proposals_are_announced_and_a_rollback_sends_nothing(receiver, embedder):
    from django.db import transaction

    from memoryhub.knowledge.answers import propose_knowledge_candidate
    from memoryhub.services.memories import delete_memories

    user = make_user()
    mode = mode_of(user)
    endpoint_for(receiver, user.workspace)
    memory = make_memory(user, mode, "a fact", embedder=embedder)
    delete_memories(user=user, mode=mode, memory_ids=[memory.pk], actor=Actor.system("test"))
    candidate = propose_knowledge_candidate(
        user=user,
        mode=mode,
        statement="Refunds take five days.",
        actor=Actor.system("test"),
        embedder=embedder,
    )

    def remember_then_fail() -> None:
        with transaction.atomic():
            make_memory(user, mode, "never committed", embedder=embedder)
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        remember_then_fail()
    send_due()
    types = [m["payload"]["type"] for m in receiver.received]
    assert types == [events.MEMORY_CREATED, events.MEMORY_FORGOTTEN, events.CANDIDATE_WAITING]
    assert receiver.received[1]["payload"]["data"]["ids"] == [str(memory.pk)]
    assert receiver.received[2]["payload"]["data"]["candidate_ids"] == [str(candidate.pk)]


def test_every_event_type_is_fed_by_some_change():
    fed = {event for mapped in events.EVENTS_OF.values() for event in mapped}
    assert fed == set(events.EVENT_TYPES)


@pytest.mark.django_db(transaction=True)
def test_a_host_that_now_resolves_to_a_private_address_is_not_sent_to(receiver, embedder, settings):
    # Created while private addresses were allowed; by send time they are not (as if its DNS
    # record had changed to point inside): the delivery fails without any request going out.
    user = make_user()
    endpoint = endpoint_for(receiver, user.workspace)
    endpoint.url = receiver.url.replace("127.0.0.1", "localhost")
    endpoint.save(update_fields=["url"])
    make_memory(user, mode_of(user), "a fact", embedder=embedder)
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = False
    send_due()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.attempts, delivery.last_status_code) == (
        Status.FAILED,
        1,
        None,
    )
    assert delivery.last_error.startswith("refused: url host 'localhost' resolves to a non-public")
    assert receiver.requests == 0 and receiver.received == []

    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True  # Allowed again: it arrives.
    send_due(timezone.now() + timedelta(days=1))
    assert len(receiver.received) == 1


@pytest.mark.django_db(transaction=True)
def test_a_redirect_is_not_followed(receiver, embedder):
    user = make_user()
    endpoint_for(receiver, user.workspace)
    receiver.redirect_to = receiver.url.replace("/hook", "/elsewhere")
    make_memory(user, mode_of(user), "a fact", embedder=embedder)
    send_due()
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.last_status_code) == (Status.FAILED, 302)
    assert delivery.last_error == "HTTP 302" and receiver.requests == 1
