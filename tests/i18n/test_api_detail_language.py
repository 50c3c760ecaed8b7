"""The API's error `code` stays stable English; its human-readable `detail` may follow
Accept-Language (issue 28)."""

from __future__ import annotations

from uuid import uuid4

from django.core.files.uploadedfile import SimpleUploadedFile

from memoryhub.models import AgentGrant, AgentPermission
from tests import factories
from tests.api.conftest import API
from tests.imports.files import committed

MALFORMED = b'[\n{"memory": "a"},\n{"memory": @}\n]'


def _upload(client, key, user, **headers):
    with committed():
        return client.post(
            f"{API}/imports?user={user.external_id}",
            {"file": SimpleUploadedFile("memories.json", MALFORMED, "application/json")},
            headers={"Authorization": f"Bearer {key}", **headers},
        )


def test_the_detail_follows_accept_language_and_the_code_stays_english(client, workspace, user):
    agent, key = factories.make_agent(workspace, "assistant")
    AgentGrant.objects.create(user=user, agent=agent, permission=AgentPermission.IMPORT)
    french = _upload(client, key, user, **{"Accept-Language": "fr"})
    assert french.status_code == 422
    assert french.json() == {
        "detail": "le fichier n’est pas du JSON valide : l’erreur est vers la ligne 3",
        "code": "import_malformed",
    }
    english = _upload(client, key, user)
    assert english.json() == {
        "detail": "the file is not valid JSON: the error is near line 3",
        "code": "import_malformed",
    }


def test_the_agent_apis_own_messages_follow_accept_language_too(client, workspace, user):
    _, key = factories.make_agent(workspace, "assistant")
    missing = f"{API}/memories/{uuid4()}?user={user.external_id}"
    french = client.get(
        missing, headers={"Authorization": f"Bearer {key}", "Accept-Language": "fr"}
    )
    assert french.status_code == 404
    assert french.json() == {"detail": "souvenir introuvable", "code": "not_found"}
    english = client.get(missing, headers={"Authorization": f"Bearer {key}"})
    assert english.json() == {"detail": "memory not found", "code": "not_found"}
    keyless = client.get(f"{API}/memories?user=alice", headers={"Accept-Language": "fr"})
    assert keyless.json() == {
        "detail": "clé d’API absente : envoyez Authorization: Bearer <key>",
        "code": "not_authenticated",
    }
