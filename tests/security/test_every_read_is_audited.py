"""Every read of personal data is audited: the transcript sent to an LLM, admin changes.

(Graph insight reads: tests/security/test_insights_never_leak.py.) The admin cannot move a
user to another workspace, nor an agent, key or mode to another owner.
"""

from __future__ import annotations

import pytest

from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.extraction import ExtractionError
from memoryhub.models import Agent, ApiKey, AuditEntry, Mode, User
from memoryhub.services.agents import create_personal_key
from memoryhub.services.ingest import run_extraction
from tests import factories
from tests.admin_forms import change_form_data
from tests.fake_anthropic import FakeAnthropic, error_reply, tool_use_reply

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def claude(settings):
    """Extraction with Claude, against a fake Messages API on loopback."""
    with FakeAnthropic() as fake:
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = fake.url
        settings.MEMORYHUB_LLM_MAX_RETRIES = 0
        yield fake


def _ended_session(http, lines: list[str]) -> tuple[str, list[str]]:
    session = http.post("/sessions", {"user": "alice"}).json()["id"]
    ids = []
    for line in lines:
        added = http.post(f"/sessions/{session}/messages", {"role": "user", "content": line})
        assert added.status_code == 201, added.text
        ids.append(added.json()["id"])
    assert http.post(f"/sessions/{session}/end").status_code == 200
    return session, ids


def _sent_rows(user):
    return AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk), action="transcript.sent_to_llm"
    )


def test_the_transcript_sent_to_the_llm_is_audited_with_its_messages(world, embedder, claude):
    session, message_ids = _ended_session(
        world.agent_http, ["I work at Initech.", "I have a dentist visit on Friday."]
    )
    claude.add_replies(tool_use_reply({"summary": None, "items": []}))
    run_extraction(session_id=session, embedder=embedder)  # What the queued task does.
    assert len(claude.requests) == 1  # The transcript did go out.
    [row] = _sent_rows(world.alice)
    assert sorted(row.object_ids) == sorted(message_ids)
    assert row.mode == mode_pseudonym(row.subject, "personal")
    assert row.channel == "system"


def test_the_row_is_written_before_the_text_leaves_even_when_the_call_fails(
    world, embedder, claude
):
    session, message_ids = _ended_session(world.agent_http, ["My PIN is 4321."])
    claude.add_replies(error_reply(400, "invalid_request_error"))
    with pytest.raises(ExtractionError):
        run_extraction(session_id=session, embedder=embedder)
    assert len(claude.requests) == 1
    assert [row.object_ids for row in _sent_rows(world.alice)] == [message_ids]


def test_the_offline_extractor_sends_nothing_and_writes_no_such_row(world, embedder, settings):
    settings.ANTHROPIC_API_KEY = ""
    session, _ = _ended_session(world.agent_http, ["I live in Lyon."])
    run_extraction(session_id=session, embedder=embedder)
    assert not _sent_rows(world.alice).exists()


# --- The admin ------------------------------------------------------------------------------


def _form_data(page) -> dict[str, str]:
    """The change form as it stands: an empty date-time part posts as "", an empty list not."""
    data = change_form_data(page)
    return {name: value or "" for name, value in data.items() if value != "[]"}


def _admin_rows(action: str):
    return AuditEntry.objects.filter(action=action, channel="admin", actor_type="admin")


def test_the_admin_cannot_move_a_user_to_another_workspace(world, superuser_client):
    elsewhere = factories.make_workspace()
    url = f"/admin/memoryhub/user/{world.alice.pk}/change/"
    page = superuser_client.get(url)
    assert "workspace" not in page.context["adminform"].form.fields  # Shown read-only.
    data = {**_form_data(page), "workspace": str(elsewhere.pk), "display_name": "Alice"}
    response = superuser_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    alice = User.objects.get(pk=world.alice.pk)
    assert (alice.workspace_id, alice.display_name) == (world.workspace.pk, "Alice")
    [row] = _admin_rows("admin.user.change")
    assert row.subject == subject_pseudonym(world.alice.pk)
    assert row.object_ids[0] == str(world.alice.pk)
    assert "field:display_name" in row.object_ids and "field:workspace" not in row.object_ids


def test_the_admin_cannot_move_an_agent_a_key_or_a_mode(world, superuser_client):
    elsewhere = factories.make_workspace()
    other_agent, _ = factories.make_agent(elsewhere, "foreign")
    key = ApiKey.objects.filter(user=world.alice).get()
    mode = Mode.objects.get(user=world.alice, slug="work")
    cases = [
        (f"/admin/memoryhub/agent/{world.agent.pk}/change/", {"workspace": str(elsewhere.pk)}),
        (f"/admin/memoryhub/apikey/{key.pk}/change/", {"user": str(world.bob.pk)}),
        (f"/admin/memoryhub/apikey/{key.pk}/change/", {"agent": str(other_agent.pk)}),
        (f"/admin/memoryhub/mode/{mode.pk}/change/", {"user": str(world.bob.pk)}),
    ]
    for url, move in cases:
        page = superuser_client.get(url)
        assert not set(move) & set(page.context["adminform"].form.fields), url
        response = superuser_client.post(url, {**_form_data(page), **move})
        assert response.status_code == 302, url
    assert Agent.objects.get(pk=world.agent.pk).workspace_id == world.workspace.pk
    key = ApiKey.objects.get(pk=key.pk)
    assert (key.user_id, key.agent_id) == (world.alice.pk, None)
    assert Mode.objects.get(pk=mode.pk).user_id == world.alice.pk
    # Each save is audited on the admin channel, against the user it touched (if any).
    assert _admin_rows("admin.agent.change").get().subject == ""
    assert {row.subject for row in _admin_rows("admin.apikey.change")} == {
        subject_pseudonym(world.alice.pk)
    }
    assert _admin_rows("admin.mode.change").get().subject == subject_pseudonym(world.alice.pk)


def test_admin_additions_and_deletions_are_audited(world, superuser_client):
    issued = create_personal_key(user=world.bob, name="old laptop")
    url = f"/admin/memoryhub/apikey/{issued.api_key.pk}/delete/"
    assert superuser_client.post(url, {"post": "yes"}).status_code == 302
    [row] = _admin_rows("admin.apikey.delete")
    assert row.subject == subject_pseudonym(world.bob.pk)
    assert row.object_ids == [str(issued.api_key.pk)]
    page = superuser_client.get("/admin/memoryhub/workspace/add/")
    data = {**_form_data(page), "slug": "new-team", "name": "New team"}
    data.update({"graph_node_types-TOTAL_FORMS": "0", "graph_node_types-INITIAL_FORMS": "0"})
    assert superuser_client.post("/admin/memoryhub/workspace/add/", data).status_code == 302
    assert _admin_rows("admin.workspace.add").count() == 1
