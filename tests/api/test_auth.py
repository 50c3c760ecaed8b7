"""Bearer keys, scope rules (workspace, personal keys, blocks, modes) and the error shape."""

from __future__ import annotations

import uuid

import time_machine
from django.db.models import Exists, Model
from django.utils import timezone

from memoryhub.api.auth import _find_agent_scope, scope_for_key
from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.models import Agent, AgentBlock, ApiKey, AuditEntry, Mode, User
from memoryhub.queries.access_log import REFUSED_ACTION
from memoryhub.services.agents import (
    create_personal_key,
    find_active_key,
    hash_key,
    revoke_key,
    rotate_agent_key,
)
from tests import factories


def test_a_request_without_a_key_is_401_with_the_error_shape(caller, user):
    response = caller(None).get("/profile", user="alice")
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert "detail" in response.json()


def test_an_unknown_key_is_401(caller, user):
    response = caller("mh_not-a-real-key").get("/profile", user="alice")
    assert response.status_code == 401


def test_a_malformed_authorization_header_is_401(client, agent_and_key, user):
    response = client.get(
        "/api/v1/profile", {"user": "alice"}, headers={"Authorization": agent_and_key[1]}
    )
    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"


def test_a_revoked_key_is_401(caller, agent_and_key, user):
    agent, key = agent_and_key
    assert caller(key).get("/profile", user="alice").status_code == 200
    new_key = rotate_agent_key(agent=agent).raw_key
    assert caller(key).get("/profile", user="alice").status_code == 401
    assert caller(new_key).get("/profile", user="alice").status_code == 200


def test_a_disabled_agent_is_401(api, agent, user):
    agent.is_active = False
    agent.save(update_fields=["is_active"])
    assert api.get("/profile", user="alice").status_code == 401


def test_the_user_can_be_named_by_uuid_or_external_id(api, user):
    by_uuid = api.get("/users/" + str(user.pk))
    by_external_id = api.get("/users/alice")
    assert by_uuid.status_code == by_external_id.status_code == 200
    assert by_uuid.json()["id"] == by_external_id.json()["id"] == str(user.pk)


def test_a_user_of_another_workspace_is_404(api, user):
    stranger = factories.make_user(workspace=factories.make_workspace(), external_id="carol")
    assert api.get("/profile", user="carol").status_code == 404
    response = api.get("/profile", user=str(stranger.pk))
    assert response.status_code == 404
    assert response.json() == {"detail": "user not found", "code": "not_found"}


def test_a_blocked_agent_gets_403_for_that_user_only(api, agent, user, other_user):
    AgentBlock.objects.create(user=user, agent=agent)
    response = api.get("/profile", user="alice")
    assert response.status_code == 403
    assert response.json()["code"] == "agent_blocked"
    assert api.get("/profile", user="bob").status_code == 200


def test_an_agent_key_finds_the_user_the_mode_and_any_block_in_one_or_two_statements(
    agent_and_key, user, personal, django_assert_num_queries
):
    api_key = find_active_key(agent_and_key[1])
    # Every agent request resolves its scope (issue 34). An external id is looked up first, so
    # that the mode and the block are then read by their shard key (docs/scaling.md).
    with django_assert_num_queries(2):
        scope = scope_for_key(api_key, "alice", "personal")
    assert (scope.user, scope.mode, scope.agent) == (user, personal, agent_and_key[0])
    with django_assert_num_queries(1):
        scope = scope_for_key(api_key, str(user.pk), "personal")
    assert (scope.user, scope.mode, scope.agent) == (user, personal, agent_and_key[0])


def _fields(instance: Model | None) -> dict[str, object] | None:
    if instance is None:
        return None
    return {f.attname: getattr(instance, f.attname) for f in instance._meta.concrete_fields}


def _orm_active_key(raw_key: str) -> ApiKey | None:
    # The ORM query `find_active_key` replaced with hand-written SQL (issue 34): the oracle.
    return (
        ApiKey.objects.select_related("agent", "mode")
        .filter(key_hash=hash_key(raw_key), revoked_at__isnull=True)
        .first()
    )


def test_the_active_key_read_by_hand_written_sql_is_the_one_the_orm_reads(
    agent_and_key, workspace, user, work
):
    agent, agent_key = agent_and_key
    agent.disabled_layers = ["graph"]  # A JSON column, parsed as the ORM parses it.
    agent.save(update_fields=["disabled_layers"])
    bound = create_personal_key(user=user, name="work only", mode=work).raw_key
    unbound = create_personal_key(user=user, name="cli").raw_key
    revoked = create_personal_key(user=user, name="old")
    revoke_key(api_key=revoked.api_key)
    disabled_agent, disabled_key = factories.make_agent(workspace, "off")
    Agent.objects.filter(pk=disabled_agent.pk).update(is_active=False)
    for raw_key in (agent_key, bound, unbound, disabled_key):
        found, expected = find_active_key(raw_key), _orm_active_key(raw_key)
        assert expected is not None
        assert found is not None
        assert _fields(found) == _fields(expected)
        assert _fields(found.agent) == _fields(expected.agent)
        assert _fields(found.mode) == _fields(expected.mode)
    assert find_active_key(agent_key).agent.disabled_layers == ["graph"]
    assert not find_active_key(disabled_key).agent.is_active
    for raw_key in (revoked.raw_key, "mh_unknown"):
        assert find_active_key(raw_key) is None
        assert _orm_active_key(raw_key) is None


def _orm_agent_scope(agent: Agent, user_ref: str, mode_slug: str) -> tuple[User, Mode, bool] | None:
    # The ORM queries `_find_agent_scope` replaced with hand-written SQL (issue 34): the oracle.
    try:
        user_id = uuid.UUID(user_ref)
    except ValueError:
        found = (
            User.objects.filter(workspace_id=agent.workspace_id, external_id=user_ref)
            .values_list("id", flat=True)
            .first()
        )
        if found is None:
            return None
        user_id = found
    modes = Mode.objects.select_related("user__workspace").filter(
        user_id=user_id, user__workspace_id=agent.workspace_id, slug=mode_slug
    )
    blocked = AgentBlock.objects.filter(user_id=user_id, agent=agent)
    mode = modes.annotate(agent_blocked=Exists(blocked)).first()
    if mode is None:
        return None
    return mode.user, mode, bool(mode.agent_blocked)


def test_an_agent_scope_read_by_hand_written_sql_is_the_one_the_orm_reads(
    agent, workspace, user, other_user, personal, work
):
    workspace.signal_weights = {"search": 0.5}  # A JSON column, parsed as the ORM parses it.
    workspace.save(update_fields=["signal_weights"])
    User.objects.filter(pk=user.pk).update(is_memory_paused=True)
    Mode.objects.filter(pk=work.pk).update(is_memory_off=True)
    AgentBlock.objects.create(user=other_user, agent=agent)
    factories.mode_of(other_user, "personal")
    stranger = factories.make_user(workspace=factories.make_workspace(), external_id="carol")
    factories.mode_of(stranger, "personal")
    references = ("alice", str(user.pk), "bob", str(other_user.pk), "carol", str(stranger.pk))
    for user_ref in (*references, "nobody", str(uuid.uuid4())):
        for mode_slug in ("personal", "work", "hobbies"):
            found = _find_agent_scope(agent, user_ref, mode_slug)
            expected = _orm_agent_scope(agent, user_ref, mode_slug)
            assert (found is None) == (expected is None), (user_ref, mode_slug)
            if found is None or expected is None:
                continue
            (user_found, mode_found, blocked), (user_expected, mode_expected, is_blocked) = (
                found,
                expected,
            )
            assert _fields(mode_found) == _fields(mode_expected)
            assert _fields(user_found) == _fields(user_expected)
            assert _fields(user_found.workspace) == _fields(user_expected.workspace)
            assert mode_found.user is user_found
            assert blocked == is_blocked
    alice, work_mode, blocked = _find_agent_scope(agent, "alice", "work")
    assert (alice.is_memory_paused, work_mode.is_memory_off, blocked) == (True, True, False)
    assert alice.workspace.signal_weights == {"search": 0.5}
    assert _find_agent_scope(agent, "bob", "personal")[2] is True
    assert _find_agent_scope(agent, "carol", "personal") is None  # Another workspace's user.
    assert _find_agent_scope(agent, str(stranger.pk), "personal") is None


def test_a_pause_a_block_or_a_disabled_agent_counts_on_the_very_next_request(
    api, agent, user, personal
):
    remember = {"user": "alice", "kind": "fact", "content": "Plays the cello"}
    assert api.post("/memories", remember).status_code == 201
    User.objects.filter(pk=user.pk).update(is_memory_paused=True)
    assert api.post("/memories", remember).status_code == 409
    User.objects.filter(pk=user.pk).update(is_memory_paused=False)
    assert api.get("/profile", user="alice").status_code == 200
    AgentBlock.objects.create(user=user, agent=agent)
    assert api.get("/profile", user="alice").status_code == 403
    AgentBlock.objects.filter(user=user, agent=agent).delete()
    Agent.objects.filter(pk=agent.pk).update(is_active=False)
    assert api.get("/profile", user="alice").status_code == 401


def test_a_uuid_names_that_user_first_and_an_external_id_shaped_like_a_uuid_still_works(
    agent_and_key, workspace, user
):
    api_key = find_active_key(agent_and_key[1])
    nobodys_uuid = str(uuid.uuid4())
    dave = factories.make_user(workspace=workspace, external_id=nobodys_uuid)
    impostor = factories.make_user(workspace=workspace, external_id=str(user.pk))
    for person in (user, dave, impostor):
        factories.mode_of(person, "personal")
    assert scope_for_key(api_key, str(user.pk)).user == user  # never the impostor
    assert scope_for_key(api_key, nobodys_uuid).user == dave


def test_a_blocked_agent_is_refused_and_audited_whether_or_not_the_mode_exists_yet(
    api, agent, user, personal
):
    AgentBlock.objects.create(user=user, agent=agent)
    Mode.objects.filter(user=user, slug="work").delete()
    assert api.get("/profile", user="alice", mode="personal").status_code == 403
    assert api.get("/profile", user="alice", mode="work").status_code == 403
    refused = AuditEntry.objects.filter(action=REFUSED_ACTION).order_by("id")
    subject = subject_pseudonym(user.pk)
    assert [entry.mode for entry in refused] == [mode_pseudonym(subject, "personal"), ""]
    assert not Mode.objects.filter(user=user, slug="work").exists()  # A refusal makes nothing.


def test_a_personal_key_acts_for_its_user_only(caller, user, other_user):
    key = create_personal_key(user=user, name="cli").raw_key
    assert caller(key).get("/profile", user="alice").status_code == 200
    assert caller(key).get("/profile", user="bob").status_code == 404
    assert caller(key).get("/profile", user=str(other_user.pk)).status_code == 404


def test_a_revoked_personal_key_is_401(caller, user):
    issued = create_personal_key(user=user, name="cli")
    revoke_key(api_key=issued.api_key)
    assert caller(issued.raw_key).get("/profile", user="alice").status_code == 401


def test_a_mode_bound_personal_key_cannot_reach_another_mode(caller, user, work):
    key = create_personal_key(user=user, name="work only", mode=work).raw_key
    assert caller(key).get("/profile", user="alice", mode="work").status_code == 200
    assert caller(key).get("/profile", user="alice", mode="personal").status_code == 404
    # Without a mode the default "personal" is meant, which this key cannot reach either.
    assert caller(key).get("/profile", user="alice").status_code == 404


def test_an_unknown_mode_is_404_but_default_modes_are_created_on_demand(api, user):
    Mode.objects.filter(user=user, slug="work").delete()
    assert api.get("/profile", user="alice", mode="hobbies").status_code == 404
    assert api.get("/profile", user="alice", mode="work").status_code == 200
    assert Mode.objects.filter(user=user, slug="work").exists()
    assert not Mode.objects.filter(user=user, slug="hobbies").exists()


def test_every_access_is_audited_with_the_agent_the_api_channel_and_the_ip(api, agent, user):
    api.get("/profile", user="alice", mode="work")
    entry = AuditEntry.objects.order_by("-id").first()
    assert entry.action == "profile.read"
    assert entry.actor_type == "agent"
    assert entry.actor_id == str(agent.pk)
    assert entry.channel == "api"
    assert entry.client_ip == "127.0.0.1"
    assert entry.subject == subject_pseudonym(user.pk)
    assert entry.mode == mode_pseudonym(subject_pseudonym(user.pk), "work")


def test_past_the_rate_limit_a_key_gets_429_with_retry_after(api, user, settings):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 3
    with time_machine.travel(timezone.now().replace(second=15), tick=False):
        statuses = [api.get("/profile", user="alice").status_code for _ in range(4)]
        response = api.get("/profile", user="alice")
    assert statuses == [200, 200, 200, 429]
    assert response.status_code == 429
    assert response.json()["code"] == "rate_limited"
    assert response["Retry-After"] == "45"


def test_the_rate_limit_counts_each_key_separately_and_resets_next_minute(
    api, caller, workspace, user, settings
):
    settings.MEMORYHUB_RATE_LIMIT_PER_MINUTE = 1
    _, other_key = factories.make_agent(workspace, "other agent")
    start = timezone.now().replace(second=30)
    with time_machine.travel(start, tick=False):
        assert api.get("/profile", user="alice").status_code == 200
        assert api.get("/profile", user="alice").status_code == 429
        assert caller(other_key).get("/profile", user="alice").status_code == 200
    with time_machine.travel(start.replace(second=0) + timezone.timedelta(minutes=1), tick=False):
        assert api.get("/profile", user="alice").status_code == 200
