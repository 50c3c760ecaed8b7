"""Who accessed my memory: the items read by name, others first, personal keys, refused agents."""

from __future__ import annotations

from pathlib import Path

from django.test import Client

from dashboard.templatetags.memory_words import action_words
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access, subject_pseudonym
from memoryhub.models import ActorType, AuditEntry, Channel
from memoryhub.services.agents import create_personal_key
from memoryhub.services.forget import ForgetSelector, forget
from memoryhub.services.preferences import block_agent
from tests import factories
from tests.api.conftest import Caller

AGENT = Actor(ActorType.AGENT, "a1", Channel.API, label="travel bot")


def test_own_views_are_hidden_until_asked_for(signed_in, user, remember):
    remember("Lives in Lyon.")
    signed_in.get("/dashboard/")  # A "viewed memories in the dashboard" row by alice.
    record_access(actor=AGENT, subject_user_id=user.pk, action=AuditAction.MEMORY_LIST)
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "viewed memories in the dashboard" not in page and "travel bot" in page
    assert 'name="mine"' in page and "checked" not in page
    page = signed_in.get("/dashboard/access/?mine=on").content.decode()
    assert "viewed memories in the dashboard" in page and "checked" in page


def test_entries_name_the_items_read_and_count_the_rest(signed_in, user, personal, remember):
    lyon, peanuts = remember("Lives in Lyon."), remember("Allergic to peanuts.")
    gone = remember("Was at the dentist on Monday.")
    record_access(
        actor=AGENT,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_SEARCH,
        object_ids=[lyon.pk, peanuts.pk, gone.pk],
        mode="personal",
    )
    forget(
        user=user,
        mode=personal,
        selector=ForgetSelector(memory_ids=(gone.pk,)),
        actor=Actor.for_user(user.pk),
    )
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "<li>“Lives in Lyon.”</li>" in page and "<li>“Allergic to peanuts.”</li>" in page
    assert "and 1 more" in page and "dentist" not in page


def test_naming_items_is_itself_audited_as_the_users_own_view(signed_in, user, remember):
    lyon = remember("Lives in Lyon.")
    record_access(
        actor=AGENT, subject_user_id=user.pk, action=AuditAction.MEMORY_READ, object_ids=[lyon.pk]
    )
    signed_in.get("/dashboard/access/")
    row = AuditEntry.objects.filter(subject=subject_pseudonym(user.pk)).order_by("-id").first()
    assert (row.action, row.actor_type, row.object_ids) == (
        "access_log.view",
        ActorType.USER,
        [str(lyon.pk)],
    )


def test_another_users_memory_is_never_named(signed_in, user, other_user):
    theirs = factories.make_memory(other_user, factories.mode_of(other_user), "Bob's secret.")
    # A forged row about alice that names Bob's memory: alice's page must not decrypt it.
    record_access(
        actor=AGENT, subject_user_id=user.pk, action=AuditAction.MEMORY_READ, object_ids=[theirs.pk]
    )
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "secret" not in page and "(no longer kept, or not memories)" in page


def test_a_personal_key_is_named(client, signed_in, user, remember):
    remember("Lives in Lyon.")
    issued = create_personal_key(user=user, name="desktop assistant")
    Caller(Client(), issued.raw_key).post("/search", {"user": "alice", "query": "Lyon"})
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "Your key “desktop assistant”" in page and "searched memories" in page
    assert "<li>“Lives in Lyon.”</li>" in page


def test_a_blocked_agent_is_listed_as_refused(signed_in, user, workspace):
    agent, key = factories.make_agent(workspace, "nosy bot")
    block_agent(user=user, agent=agent, actor=Actor.for_user(user.pk))
    api = Caller(Client(), key)
    assert api.post("/search", {"user": "alice", "query": "anything"}).status_code == 403
    assert api.get("/profile", user="alice", mode="work").status_code == 403
    page = signed_in.get("/dashboard/access/").content.decode()
    assert page.count('class="actor-agent refused"') == 2
    assert "Agent “nosy bot”" in page and "you blocked this agent" in page
    assert '<td data-label="Mode">Work</td>' in page


def test_a_refusal_for_another_user_does_not_show_in_this_log(
    signed_in, user, other_user, workspace
):
    agent, key = factories.make_agent(workspace, "nosy bot")
    block_agent(user=other_user, agent=agent, actor=Actor.for_user(other_user.pk))
    Caller(Client(), key).post("/search", {"user": "bob", "query": "anything"})
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "nosy bot" not in page


def test_the_access_log_query_count_does_not_grow_with_entries(
    signed_in, user, remember, django_assert_max_num_queries
):
    memories = [remember(f"Item number {n}.") for n in range(3)]
    key = create_personal_key(user=user, name="cli").api_key
    key_actor = Actor(ActorType.AGENT, f"personal-key:{key.pk}", Channel.API, label="k")
    for n in range(40):
        actor = key_actor if n % 2 else AGENT
        record_access(
            actor=actor,
            subject_user_id=user.pk,
            action=AuditAction.MEMORY_READ,
            object_ids=[memories[n % 3].pk],
        )
    with django_assert_max_num_queries(16):
        response = signed_in.get("/dashboard/access/")
    assert response.content.decode().count("Your key “cli”") == 20


REPO = Path(__file__).resolve().parents[2]


# Recorded with no subject user: they never show in anyone's access log.
def test_an_admin_sites_change_is_in_words():
    assert action_words("admin.user.change") == "changed a record (user) in the admin site"
    assert action_words("admin.apikey.delete") == "deleted a record (apikey) in the admin site"
    assert action_words("admin.user.frobnicate") == "admin: user: frobnicate"


def test_a_transcript_sent_to_the_llm_shows_in_words(signed_in, user):
    record_access(
        actor=Actor.system("extraction"),
        subject_user_id=user.pk,
        action=AuditAction.TRANSCRIPT_SENT_TO_LLM,
    )
    page = signed_in.get("/dashboard/access/").content.decode()
    assert "sent a conversation to the language model to learn from it" in page
    assert "transcript: sent to llm" not in page
