"""The webhook routes: an agent manages its workspace's endpoints, the log and replay."""

from __future__ import annotations

import pytest

from memoryhub.actors import Actor
from memoryhub.models import AuditEntry, WebhookDelivery
from memoryhub.services.agents import create_personal_key
from memoryhub.webhooks import services
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def allow_private_urls(settings):
    """These tests' receivers are on 127.0.0.1: private addresses allowed explicitly here."""
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = True


HOOK = {"url": "http://127.0.0.1:9/hook", "event_types": ["memory.created", "user.deleted"]}


def test_an_agent_manages_its_workspaces_endpoints(api, workspace):
    created = api.post("/webhooks", HOOK)
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["secret"].startswith("whsec_") and body["include_text"] is False
    listed = api.get("/webhooks").json()
    assert [e["id"] for e in listed] == [body["id"]]
    assert "secret" not in listed[0]

    rotated = api.post(f"/webhooks/{body['id']}/rotate").json()
    assert rotated["secret"] != body["secret"] and rotated["previous_secret_expires_at"]
    assert api.post(f"/webhooks/{body['id']}/disable").json()["is_enabled"] is False
    assert api.post(f"/webhooks/{body['id']}/enable").json()["is_enabled"] is True

    endpoint = services.get_endpoint(workspace=workspace, endpoint_id=body["id"])
    delivery = WebhookDelivery.objects.create(
        endpoint=endpoint,
        message_id="msg_1",
        event_type="memory.created",
        payload={},
        status=WebhookDelivery.Status.DEAD,
        attempts=8,
    )
    log = api.get(f"/webhooks/{body['id']}/deliveries", status="dead").json()
    assert [(d["message_id"], d["status"]) for d in log] == [("msg_1", "dead")]
    replayed = api.post(f"/webhooks/deliveries/{delivery.pk}/replay").json()
    assert (replayed["status"], replayed["attempts"], replayed["message_id"]) == (
        "pending",
        0,
        "msg_1",
    )
    actions = set(AuditEntry.objects.values_list("action", flat=True))
    assert {"webhook.create", "webhook.rotate", "webhook.disable", "webhook.replay"} <= actions


def test_other_workspaces_and_bad_input_get_clear_errors(api, caller):
    other_workspace = factories.make_workspace()
    theirs = services.create_endpoint(
        workspace=other_workspace,
        url="http://127.0.0.1:9/",
        event_types=["memory.created"],
        actor=Actor.system("test"),
    )
    assert api.post(f"/webhooks/{theirs.pk}/rotate").status_code == 404
    assert api.get(f"/webhooks/{theirs.pk}/deliveries").status_code == 404
    assert api.post("/webhooks/deliveries/1/replay").status_code == 404
    assert api.post("/webhooks/deliveries/99999999999999999999/replay").status_code == 422
    assert api.post("/webhooks", {**HOOK, "url": "file:///etc/passwd"}).status_code == 422
    assert api.post("/webhooks", {**HOOK, "event_types": ["memory.eaten"]}).status_code == 422
    assert api.post("/webhooks", {**HOOK, "event_types": []}).status_code == 422
    assert api.get("/webhooks/not-a-uuid/deliveries").status_code == 422
    # One user's personal key never manages the workspace's webhooks.
    personal = create_personal_key(user=factories.make_user(), name="mine").raw_key
    refused = caller(personal).get("/webhooks")
    assert (refused.status_code, refused.json()["code"]) == (403, "forbidden")


def test_routes_are_in_the_openapi_schema(client):
    paths = client.get("/api/v1/openapi.json").json()["paths"]
    assert {
        "/api/v1/webhooks",
        "/api/v1/webhooks/{webhook_id}/rotate",
        "/api/v1/webhooks/{webhook_id}/deliveries",
        "/api/v1/webhooks/deliveries/{delivery_id}/replay",
    } <= set(paths)


@pytest.mark.parametrize(
    "url",
    [
        "https://127.0.0.1/hook",
        "https://10.1.2.3/hook",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[fe80::1]/hook",
        "https://0.0.0.0/hook",
        "https://224.0.0.1/hook",
        "https://localhost:8000/hook",
    ],
)
def test_private_addresses_are_refused(api, settings, url):
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = False
    refused = api.post("/webhooks", {**HOOK, "url": url})
    assert refused.status_code == 422
    assert refused.json()["code"] == "unsafe_webhook_url"
    assert "non-public address" in refused.json()["detail"]
    assert api.get("/webhooks").json() == []


def test_https_to_a_public_address_is_accepted_and_http_needs_the_setting(api, settings):
    settings.MEMORYHUB_WEBHOOK_ALLOW_PRIVATE_URLS = False
    settings.MEMORYHUB_WEBHOOK_ALLOW_HTTP = False
    plain = api.post("/webhooks", {**HOOK, "url": "http://93.184.215.14/hook"})
    assert plain.status_code == 422 and plain.json()["detail"] == "url must use https"
    assert api.post("/webhooks", {**HOOK, "url": "https://93.184.215.14/hook"}).status_code == 201
