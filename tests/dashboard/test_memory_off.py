"""Memory off per mode in the dashboard, and temporary (incognito) conversations made visible."""

from __future__ import annotations

from memoryhub.actors import Actor
from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.models import AuditEntry, Mode
from memoryhub.services.sessions import end_session, start_session
from tests import factories


def test_memory_can_be_turned_off_in_one_mode(signed_in, user, work, personal):
    response = signed_in.post("/dashboard/modes/work/memory/", {"is_off": "on"}, follow=True)
    page = response.content.decode()
    assert "Memory is off in the “Work” mode" in page and "Turn memory on in Work" in page
    assert "Turn memory off in Personal" in page
    work.refresh_from_db()
    personal.refresh_from_db()
    assert work.is_memory_off and not personal.is_memory_off
    subject = subject_pseudonym(user.pk)
    assert AuditEntry.objects.filter(
        subject=subject, action="mode.memory_off", mode=mode_pseudonym(subject, "work")
    ).exists()


def test_memory_can_be_turned_on_again_from_the_list_banner(signed_in, user, work, remember):
    remember("Leads the billing team.", mode=work)
    signed_in.post("/dashboard/modes/work/memory/", {"is_off": "on"})
    page = signed_in.get("/dashboard/?mode=work").content.decode()
    # The user still sees everything: memory off stops agents, not the owner.
    assert "Memory is off in the Work mode." in page and "Leads the billing team." in page
    response = signed_in.post("/dashboard/modes/work/memory/", {"next": "list"})
    assert response["Location"] == "/dashboard/?mode=work"
    work.refresh_from_db()
    assert not work.is_memory_off


def test_the_owner_still_searches_a_mode_with_memory_off(signed_in, work, remember):
    remember("Leads the billing team.", mode=work)
    signed_in.post("/dashboard/modes/work/memory/", {"is_off": "on"})
    page = signed_in.get("/dashboard/modes/work/search/?q=billing").content.decode()
    assert "Leads the billing team." in page


def test_another_users_mode_cannot_be_switched(signed_in, other_user):
    bob_mode = Mode.objects.create(user=other_user, slug="side", name="Side")
    response = signed_in.post("/dashboard/modes/side/memory/", {"is_off": "on"})
    assert response.status_code == 404
    bob_mode.refresh_from_db()
    assert not bob_mode.is_memory_off


def test_the_switch_needs_a_post(signed_in, work):
    assert signed_in.get("/dashboard/modes/work/memory/").status_code == 405


def test_temporary_conversations_are_listed_in_their_mode(
    signed_in, user, personal, work, workspace
):
    agent, _ = factories.make_agent(workspace, "travel bot")
    actor = Actor.system("tests")
    going_on = start_session(user=user, mode=personal, actor=actor, agent=agent, is_incognito=True)
    ended = start_session(user=user, mode=personal, actor=actor, agent=agent, is_incognito=True)
    end_session(session=ended, actor=actor)
    start_session(user=user, mode=personal, actor=actor, agent=agent)  # A normal one: not listed.
    page = signed_in.get("/dashboard/?mode=personal").content.decode()
    assert "Temporary conversations" in page
    assert page.count("Agent “travel bot” · started") == 2
    assert "going on" in page and "ended: nothing of it was kept" in page
    assert going_on.is_incognito
    assert "Temporary conversations" not in signed_in.get("/dashboard/?mode=work").content.decode()


def test_another_users_temporary_conversations_are_not_listed(signed_in, other_user):
    start_session(
        user=other_user,
        mode=factories.mode_of(other_user),
        actor=Actor.system("tests"),
        is_incognito=True,
    )
    assert "Temporary conversations" not in signed_in.get("/dashboard/").content.decode()


def test_settings_explain_temporary_conversations(signed_in):
    page = signed_in.get("/dashboard/settings/").content.decode()
    assert "Temporary conversations" in page and "nothing of it is saved" in page
