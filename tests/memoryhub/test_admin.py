"""The Django admin: an agent's memory settings are edited there; every read of it is audited."""

from __future__ import annotations

from dashboard.templatetags.memory_words import action_words
from memoryhub.audit.log import subject_pseudonym
from memoryhub.models import Agent, AuditEntry
from memoryhub.services.users import create_user
from tests import factories
from tests.admin_forms import change_form_data


def test_an_admin_edits_an_agents_memory_settings(superuser_client, workspace):
    agent, _ = factories.make_agent(workspace, "concierge")
    url = f"/admin/memoryhub/agent/{agent.pk}/change/"
    data = change_form_data(superuser_client.get(url))
    data.update(
        token_budget="900",
        last_messages="4",
        recall_top_k="5",
        recall_message_range="2",
        disabled_layers="[8, 9]",
    )
    data.pop("is_working_memory_enabled", None)  # An unticked box is simply not posted.
    response = superuser_client.post(url, data)
    assert response.status_code == 302, response.context["adminform"].form.errors
    agent = Agent.objects.get(pk=agent.pk)
    assert (agent.token_budget, agent.last_messages, agent.recall_top_k) == (900, 4, 5)
    assert agent.recall_message_range == 2
    assert agent.is_working_memory_enabled is False
    assert agent.disabled_layers == [8, 9]


def test_the_admin_refuses_a_negative_memory_setting(superuser_client, workspace):
    agent, _ = factories.make_agent(workspace, "concierge")
    url = f"/admin/memoryhub/agent/{agent.pk}/change/"
    data = {**change_form_data(superuser_client.get(url)), "recall_top_k": "-1"}
    response = superuser_client.post(url, data)
    assert response.status_code == 200
    assert "recall_top_k" in response.context["adminform"].form.errors
    assert Agent.objects.get(pk=agent.pk).recall_top_k == 3


def test_the_admin_cannot_change_which_agent_created_a_user(superuser_client, workspace):
    # That agent alone may issue the user's link (memoryhub/services/user_links.py).
    agent, _ = factories.make_agent(workspace, "concierge")
    user = create_user(workspace=workspace, external_id="u-1", created_by_agent=agent)
    page = superuser_client.get(f"/admin/memoryhub/user/{user.pk}/change/")
    assert page.status_code == 200
    assert "created_by_agent" not in page.context["adminform"].form.fields  # Read-only.
    assert "concierge" in page.content.decode()


def test_viewing_a_user_in_the_admin_is_audited_against_that_user(superuser_client, user):
    response = superuser_client.get(f"/admin/memoryhub/user/{user.pk}/change/")
    assert response.status_code == 200
    entry = AuditEntry.objects.get(action="admin.user.view")
    assert entry.subject == subject_pseudonym(user.pk)
    assert entry.object_ids == [str(user.pk)]
    assert (entry.actor_type, entry.channel) == ("admin", "admin")
    assert action_words(entry.action) == "viewed a record (user) in the admin site"


def test_listing_modes_in_the_admin_audits_each_user_whose_modes_are_shown(
    superuser_client, user, other_user
):
    response = superuser_client.get("/admin/memoryhub/mode/")
    assert response.status_code == 200
    shown = {
        entry.subject: set(entry.object_ids)
        for entry in AuditEntry.objects.filter(action="admin.mode.list")
    }
    for person in (user, other_user):
        assert shown[subject_pseudonym(person.pk)] == {str(mode.pk) for mode in person.modes.all()}


def test_a_saved_change_is_audited_as_a_change_not_as_a_view(superuser_client, user):
    url = f"/admin/memoryhub/user/{user.pk}/change/"
    # As the form stands: an empty date-time part posts as "", an empty list not.
    form = change_form_data(superuser_client.get(url))
    data = {name: value or "" for name, value in form.items() if value != "[]"}
    data["external_id"] = "alice-2"
    assert superuser_client.post(url, data).status_code == 302
    actions = list(
        AuditEntry.objects.filter(subject=subject_pseudonym(user.pk))
        .filter(action__startswith="admin.")
        .order_by("id")
        .values_list("action", flat=True)
    )
    assert actions == ["admin.user.view", "admin.user.change"]
