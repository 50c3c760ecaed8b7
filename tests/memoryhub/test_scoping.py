"""Memories are only reachable through a (user, mode) scope."""

from __future__ import annotations

import pytest

from memoryhub.errors import NotFoundError, UnscopedQueryError
from memoryhub.keyring import cipher_for
from memoryhub.models import Memory
from memoryhub.queries.memories import get_memory, list_memories
from memoryhub.services.memories import NewMemory, remember_many
from tests.factories import make_memory


def test_an_unscoped_memory_query_cannot_be_written(db):
    with pytest.raises(UnscopedQueryError):
        Memory.objects.all()
    with pytest.raises(UnscopedQueryError):
        Memory.objects.filter(kind="fact")
    with pytest.raises(UnscopedQueryError):
        Memory.objects.count()


def test_memories_of_one_mode_never_show_in_another(user, personal, work, embedder, system_actor):
    make_memory(user, personal, "Likes hiking on weekends", embedder=embedder)
    make_memory(user, work, "Works on the billing service", embedder=embedder)
    personal_items = list_memories(user=user, mode=personal, actor=system_actor)
    work_items = list_memories(user=user, mode=work, actor=system_actor)
    assert [i.content for i in personal_items] == ["Likes hiking on weekends"]
    assert [i.content for i in work_items] == ["Works on the billing service"]


def test_another_users_memory_is_not_found(user, other_user, personal, embedder, system_actor):
    theirs = make_memory(
        other_user, other_user.modes.get(slug="personal"), "Bob's", embedder=embedder
    )
    with pytest.raises(NotFoundError):
        get_memory(user=user, mode=personal, memory_id=theirs.id, actor=system_actor)


def test_a_memory_of_another_mode_is_not_found(user, personal, work, embedder, system_actor):
    memory = make_memory(user, work, "work only", embedder=embedder)
    with pytest.raises(NotFoundError):
        get_memory(user=user, mode=personal, memory_id=memory.id, actor=system_actor)


def test_a_malformed_id_is_not_found_rather_than_an_error(user, personal, system_actor):
    with pytest.raises(NotFoundError):
        get_memory(user=user, mode=personal, memory_id="not-a-uuid", actor=system_actor)


def test_a_write_refuses_a_cipher_of_another_user(
    user, other_user, personal, embedder, system_actor
):
    # A caller that opened the key already may pass it on; never someone else's.
    with pytest.raises(ValueError, match="another user's cipher"):
        remember_many(
            user=user,
            mode=personal,
            items=[NewMemory(kind="fact", content="Lives in Lyon.")],
            actor=system_actor,
            embedder=embedder,
            cipher=cipher_for(other_user),
        )
    assert not Memory.objects.for_owner(user=user, mode=personal).exists()
