"""Admin tools, webhooks: a staff member adds an endpoint, sees its secret once, rotates, replays."""

from __future__ import annotations

import pytest
from allauth.mfa.models import Authenticator
from django.test import Client

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, User, WebhookDelivery, WebhookEndpoint
from memoryhub.webhooks import services
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def allow_private_urls(settings):
    """These tests' receivers are on 127.0.0.1: private addresses allowed explicitly here."""
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True


def _staff(workspace):
    staff = factories.make_user(workspace=workspace, email="root@example.com")
    User.objects.filter(pk=staff.pk).update(is_staff=True)
    Authenticator.objects.create(user=staff, type=Authenticator.Type.TOTP, data={"secret": "x"})
    client = Client()
    client.force_login(staff)
    return client


def test_staff_add_rotate_disable_and_replay(workspace):
    admin = _staff(workspace)
    added = admin.post(
        "/admin-tools/webhooks/new/",
        {"url": "https://hooks.example.com/in", "event_types": ["memory.created"]},
    )
    endpoint = WebhookEndpoint.objects.get()
    assert added.status_code == 200 and services.current_secret(endpoint) in added.content.decode()
    assert endpoint.workspace == workspace and endpoint.include_text is False
    # The secret shows only right after creation or rotation.
    page = admin.get("/admin-tools/webhooks/").content.decode()
    assert services.current_secret(endpoint) not in page

    rotated = admin.post(f"/admin-tools/webhooks/{endpoint.pk}/rotate/")
    endpoint.refresh_from_db()
    assert services.current_secret(endpoint) in rotated.content.decode()
    assert endpoint.previous_secret_ciphertext

    admin.post(f"/admin-tools/webhooks/{endpoint.pk}/toggle/", {"enabled": "0"})
    endpoint.refresh_from_db()
    assert endpoint.is_enabled is False

    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        message_id="msg_x",
        event_type="memory.created",
        payload={},
        status=WebhookDelivery.Status.DEAD,
        attempts=8,
    )
    assert "msg_x" in admin.get("/admin-tools/webhooks/").content.decode()
    admin.post(f"/admin-tools/webhooks/deliveries/{delivery.pk}/replay/")
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (WebhookDelivery.Status.PENDING, 0)
    actions = set(AuditEntry.objects.filter(channel="admin").values_list("action", flat=True))
    assert {"webhook.create", "webhook.rotate", "webhook.disable", "webhook.replay"} <= actions


def test_bad_input_and_other_workspaces(workspace):
    admin = _staff(workspace)
    refused = admin.post("/admin-tools/webhooks/new/", {"url": "not a url", "event_types": []})
    assert refused.status_code == 422 and not WebhookEndpoint.objects.exists()
    theirs = services.create_endpoint(
        workspace=factories.make_workspace(),
        url="https://x.example/",
        event_types=["user.deleted"],
        actor=Actor.system("test"),
    )
    assert admin.post(f"/admin-tools/webhooks/{theirs.pk}/rotate/").status_code == 404
    # A person who is not staff never reaches the page.
    person = Client()
    person.force_login(factories.make_user(workspace=workspace))
    assert person.get("/admin-tools/webhooks/").status_code in (302, 403, 404)


def test_a_private_address_is_a_form_error(workspace, settings):
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = False
    admin = _staff(workspace)
    refused = admin.post(
        "/admin-tools/webhooks/new/",
        {"url": "https://169.254.169.254/latest/", "event_types": ["memory.created"]},
    )
    assert refused.status_code == 422 and not WebhookEndpoint.objects.exists()
    assert "resolves to a non-public address (169.254.169.254)" in refused.content.decode()
    french = admin.post(
        "/admin-tools/webhooks/new/",
        {"url": "https://169.254.169.254/latest/", "event_types": ["memory.created"]},
        HTTP_ACCEPT_LANGUAGE="fr",
    )
    assert "se résout en une adresse non publique (169.254.169.254)" in french.content.decode()


def test_the_events_are_in_words_beside_their_codes_in_the_admins_language(workspace):
    admin = _staff(workspace)
    french = admin.get("/admin-tools/webhooks/", HTTP_ACCEPT_LANGUAGE="fr").content.decode()
    assert "memory.created (un souvenir a été créé)" in french
    english = admin.get("/admin-tools/webhooks/", HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert "memory.created (a memory was created)" in english
