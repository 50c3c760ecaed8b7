"""POST /imports and friends: upload, receipt, review, and every refusal as JSON with a code."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import AgentBlock, AgentGrant, AgentPermission, AuditEntry, ImportJob, Memory
from memoryhub.services.agents import create_personal_key
from tests import factories
from tests.imports.files import as_bytes, committed, mem0_memories

API = "/api/v1"


def _upload(client, key, data: bytes, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    with committed():
        return client.post(
            f"{API}/imports?{query}",
            {"file": SimpleUploadedFile("memories.json", data, "application/json")},
            headers={"Authorization": f"Bearer {key}"},
        )


@pytest.fixture(autouse=True)
def _the_user_lets_the_agent_import(request):
    """The user turned "may import" on for the test's agent (dashboard, Agents)."""
    if "agent_and_key" in request.fixturenames:
        agent, _ = request.getfixturevalue("agent_and_key")
        user = request.getfixturevalue("user")
        AgentGrant.objects.create(user=user, agent=agent, permission=AgentPermission.IMPORT)


def test_an_agent_the_user_did_not_allow_cannot_import(client, user, eager):
    _, key = factories.make_agent(user.workspace, "not allowed")
    response = _upload(client, key, as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 403 and response.json()["code"] == "import_not_allowed"
    assert not ImportJob.objects.filter(user=user).exists()
    assert not Memory.all_owners.filter(user=user).exists()
    actions = AuditEntry.objects.filter(subject=subject_pseudonym(user.pk)).values_list(
        "action", flat=True
    )
    assert "import.refused" in set(actions)


def test_an_agent_imports_mem0_memories_for_review(client, user, agent_and_key, eager):
    _, key = agent_and_key
    response = _upload(client, key, as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 202, response.json()
    started = response.json()
    assert (started["format"], started["total"], started["is_trusted"]) == ("mem0", 3, False)
    receipt = client.get(
        f"{API}/imports/{started['id']}",
        {"user": user.external_id},
        headers={"Authorization": f"Bearer {key}"},
    ).json()
    assert receipt["status"] == "done" and receipt["percent"] == 100
    assert receipt["counts"] == {"preference": 1, "fact": 1}
    assert receipt["skipped_count"] == 1 and receipt["skipped"][0]["reason"] == "empty memory"
    assert set(Memory.all_owners.filter(user=user).values_list("status", flat=True)) == {
        "candidate"
    }
    actions = set(
        AuditEntry.objects.filter(subject=subject_pseudonym(user.pk)).values_list(
            "action", flat=True
        )
    )
    assert {"import.start", "memory.import", "import.finish"} <= actions


def test_the_user_keeps_some_and_discards_the_rest_over_the_api(client, user, eager):
    key = create_personal_key(user=user, name="cli").raw_key
    job_id = _upload(client, key, as_bytes(mem0_memories())).json()["id"]
    headers = {"Authorization": f"Bearer {key}"}
    waiting = list(
        Memory.all_owners.filter(user=user).order_by("created_at").values_list("pk", flat=True)
    )
    kept = client.post(
        f"{API}/imports/{job_id}/keep",
        {"memory_ids": [str(waiting[0])]},
        content_type="application/json",
        headers=headers,
    )
    assert kept.json() == {"count": 1, "waiting": 1}
    discarded = client.post(
        f"{API}/imports/{job_id}/discard", {}, content_type="application/json", headers=headers
    )
    assert discarded.json() == {"count": 1, "waiting": 0}
    assert list(Memory.all_owners.filter(user=user).values_list("confidence", flat=True)) == [
        "high"
    ]


def test_a_personal_key_may_trust_its_import_and_an_agent_may_not(
    client, user, agent_and_key, eager
):
    key = create_personal_key(user=user, name="cli").raw_key
    trusted = _upload(client, key, as_bytes(mem0_memories()), trust="true")
    assert trusted.status_code == 202 and trusted.json()["is_trusted"] is True
    refused = _upload(client, agent_and_key[1], b"[]", user=user.external_id, trust="true")
    assert refused.status_code == 403 and refused.json()["code"] == "forbidden"


def test_a_malformed_file_is_a_422_naming_the_line(client, user, agent_and_key, eager):
    data = b'[\n{"memory": "a"},\n{"memory": @}\n]'
    response = _upload(client, agent_and_key[1], data, user=user.external_id)
    assert response.status_code == 422
    assert response.json()["code"] == "import_malformed"
    assert "line 3" in response.json()["detail"]
    assert not ImportJob.objects.exists()


def test_a_foreign_file_is_a_422_with_its_own_code(client, user, agent_and_key, eager):
    response = _upload(client, agent_and_key[1], b'{"a": 1}', user=user.external_id)
    assert response.status_code == 422 and response.json()["code"] == "import_unrecognised"


def test_a_file_over_the_import_limit_is_a_413(client, user, agent_and_key, settings):
    settings.MEMORYHUB_MAX_IMPORT_BYTES = 100
    response = _upload(client, agent_and_key[1], as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 413 and response.json()["code"] == "content_too_large"


def test_an_import_file_may_exceed_the_normal_body_limit(
    client, user, agent_and_key, settings, eager
):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    document = {"results": [{"id": str(i), "memory": f"Fact {i} " + "x" * 50} for i in range(60)]}
    data = as_bytes(document)
    assert len(data) > 3000
    response = _upload(client, agent_and_key[1], data, user=user.external_id)
    assert response.status_code == 202, response.json()


def test_a_paused_user_gets_a_409_and_nothing_is_kept(client, user, agent_and_key, eager):
    user.is_memory_paused = True
    user.save(update_fields=["is_memory_paused"])
    response = _upload(client, agent_and_key[1], as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 409 and response.json()["code"] == "memory_paused"
    assert not ImportJob.objects.exists()


def test_memory_off_in_the_mode_is_a_409(client, user, agent_and_key, eager):
    mode = factories.mode_of(user)
    mode.is_memory_off = True
    mode.save(update_fields=["is_memory_off"])
    response = _upload(client, agent_and_key[1], as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 409 and response.json()["code"] == "memory_off"


def test_a_blocked_agent_cannot_import(client, user, agent_and_key, eager):
    agent, key = agent_and_key
    AgentBlock.objects.create(user=user, agent=agent)
    response = _upload(client, key, as_bytes(mem0_memories()), user=user.external_id)
    assert response.status_code == 403 and response.json()["code"] == "agent_blocked"


def test_another_users_import_does_not_exist(client, user, other_user, agent_and_key, eager):
    key = create_personal_key(user=user, name="cli").raw_key
    job_id = _upload(client, key, as_bytes(mem0_memories())).json()["id"]
    stranger = create_personal_key(user=other_user, name="cli").raw_key
    headers = {"Authorization": f"Bearer {stranger}"}
    assert client.get(f"{API}/imports/{job_id}", headers=headers).status_code == 404
    _, other_key = factories.make_agent(user.workspace, "other")
    response = client.get(
        f"{API}/imports/{job_id}",
        {"user": user.external_id},
        headers={"Authorization": f"Bearer {other_key}"},
    )
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    discard = client.post(
        f"{API}/imports/{job_id}/discard", {}, content_type="application/json", headers=headers
    )
    assert discard.status_code == 404


def test_importing_needs_a_key(client):
    response = client.post(f"{API}/imports", {"file": SimpleUploadedFile("a.json", b"[]")})
    assert response.status_code == 401 and response.json()["code"] == "not_authenticated"


def test_the_dashboard_turns_may_import_on_and_off(client, user, eager):
    agent, key = factories.make_agent(user.workspace, "assistant")
    client.force_login(user)
    page = client.get("/dashboard/agents/").content.decode()
    assert "Let assistant import" in page and "may import files for you" not in page
    client.post(f"/dashboard/agents/{agent.pk}/import/", {"allow": "on"})
    assert "may import files for you" in client.get("/dashboard/agents/").content.decode()
    assert _upload(client, key, as_bytes(mem0_memories()), user=user.external_id).status_code == 202
    # Exporting is another permission: still refused.
    exported = client.get(
        f"{API}/export", {"user": user.external_id}, headers={"Authorization": f"Bearer {key}"}
    )
    assert exported.status_code == 403
    client.post(f"/dashboard/agents/{agent.pk}/import/", {"allow": "off"})
    assert "Let assistant import" in client.get("/dashboard/agents/").content.decode()
    refused = _upload(client, key, as_bytes(mem0_memories()), user=user.external_id)
    assert refused.status_code == 403 and refused.json()["code"] == "import_not_allowed"
    actions = list(AuditEntry.objects.values_list("action", flat=True))
    assert actions.count("agent.allow") == 1 and actions.count("agent.disallow") == 1
