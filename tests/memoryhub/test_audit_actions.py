"""The catalogue of audit actions (memoryhub/audit/actions.py) and the change hook it drives."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import translation

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction, Changes, action_label, action_words
from memoryhub.audit.changes import Change, subscribe, unsubscribe
from memoryhub.models import AuditEntry
from memoryhub.queries.memories import list_memories
from memoryhub.services.memories import NewMemory, edit_memory, remember_many
from tests.factories import make_memory, make_user, mode_of

REPO = Path(__file__).resolve().parents[2]
CODE = ("memoryhub", "dashboard", "review", "accounts", "admin_tools")


def _string_constants(path: Path) -> set[str]:
    return {
        node.value
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    }


def test_no_action_is_written_as_a_loose_string():
    # Every module names an action through the catalogue, so a new one gets words and a flag.
    values = {action.value for action in AuditAction}
    loose = sorted(
        f"{path.relative_to(REPO)}: {value}"
        for package in CODE
        for path in (REPO / package).rglob("*.py")
        if "migrations" not in path.parts and path.parent.name != "audit"
        for value in _string_constants(path) & values
    )
    assert loose == []


# The adapters and pages: they parse and call the domain, which records (and announces) the
# changes; an adapter may still audit a read it shows (a user record, an audit export).
ADAPTER_MODULES = (
    "memoryhub/api/",
    "memoryhub/mcp/",
    "memoryhub/tasks.py",
    "memoryhub/admin.py",
    "memoryhub/management/",
    "dashboard/",
    "admin_tools/",
    "review/views.py",
    "accounts/views.py",
)


def test_changes_are_recorded_and_announced_only_by_the_domain():
    changes = {action.name for action in AuditAction if action.is_change}
    found = []
    for package in CODE:
        for path in (REPO / package).rglob("*.py"):
            name = str(path.relative_to(REPO))
            if not name.startswith(ADAPTER_MODULES):
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "AuditAction"
                    and node.attr in changes
                ):
                    found.append(f"{name}:{node.lineno} {node.attr}")
    assert found == []


def test_every_action_has_its_own_words_and_fits_its_column():
    for action in AuditAction:
        assert action.words and action_words(action.value) == action.words
        assert action.words != action.value.replace(".", ": ").replace("_", " ")
        assert len(action.value) <= AuditEntry._meta.get_field("action").max_length


def _speaks_to_the_reader(words: str) -> bool:
    said = f" {words.lower()} ".replace("(", " ").replace(")", " ").replace(",", " ")
    return any(f" {word} " in said for word in ("you", "your", "yours", "vous", "votre", "vos"))


def test_the_admin_table_says_every_action_of_the_user_never_to_them():
    for language in ("en", "fr"):
        with translation.override(language):
            spoken_to = [a for a in AuditAction if _speaks_to_the_reader(action_label(a.value))]
        assert spoken_to == [], language
    assert action_label("role.grant_reviewer") == "granted the reviewer role"
    assert action_words("role.grant_reviewer") == "made you a reviewer"  # The access log's.
    assert action_label("memory.create") == action_words("memory.create")
    assert action_label("admin.user.change") == "changed a record (user) in the admin site"
    with translation.override("fr"):
        assert action_label("role.revoke_admin") == "retrait du rôle d’administrateur"


def test_the_stored_values_are_those_rows_already_hold():
    # No data migration: a row written before the catalogue still reads in words.
    assert AuditAction("memory.create") is AuditAction.MEMORY_CREATE
    assert action_words("transcript.sent_to_llm") == (
        "sent a conversation to the language model to learn from it"
    )
    assert action_words("admin.user.change") == "changed a record (user) in the admin site"
    assert action_words("something.unknown") == "something: unknown"


def test_memory_changes_are_flagged_and_reads_are_not():
    assert AuditAction.MEMORY_EDIT.changes_memory and AuditAction.MEMORY_EDIT.is_change
    assert AuditAction.SESSION_START.is_change and not AuditAction.SESSION_START.changes_memory
    assert not AuditAction.MEMORY_READ.is_change
    assert {a for a in AuditAction if a.changes is Changes.MEMORY} >= {
        AuditAction.MEMORY_CREATE,
        AuditAction.MEMORY_FORGET,
        AuditAction.ACCOUNT_DELETE,
    }


@pytest.fixture
def heard():
    changes: list[Change] = []
    subscribe(changes.append)
    yield changes
    unsubscribe(changes.append)


@pytest.mark.django_db(transaction=True)
def test_a_change_is_announced_after_its_commit_and_never_on_rollback(heard, embedder):
    user = make_user()
    mode = mode_of(user)
    heard.clear()  # Creating the user was a change too.
    with transaction.atomic():
        memory = make_memory(user, mode, "I live in Lisbon", embedder=embedder)
        assert heard == []  # Not before the commit: a subscriber might act on a rolled-back row.
    [change] = heard
    assert change.action is AuditAction.MEMORY_CREATE
    assert (change.user_id, change.mode, change.object_ids) == (
        str(user.pk),
        "personal",
        (str(memory.pk),),
    )

    heard.clear()

    def edit_then_fail() -> None:
        with transaction.atomic():
            edit_memory(
                user=user,
                mode=mode,
                memory_id=memory.pk,
                actor=Actor.system("test"),
                embedder=embedder,
                content="I live in Porto",
            )
            raise RuntimeError("the request failed after the edit")

    with pytest.raises(RuntimeError):
        edit_then_fail()
    assert heard == []


def test_a_change_is_announced_once_and_a_read_never(
    heard, user, personal, embedder, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        remember_many(
            user=user,
            mode=personal,
            items=[NewMemory(kind="fact", content=f"fact {n}") for n in range(3)],
            actor=Actor.system("test"),
            embedder=embedder,
        )
    assert [change.action for change in heard] == [AuditAction.MEMORY_CREATE]
    assert len(heard[0].object_ids) == 3

    heard.clear()
    with django_capture_on_commit_callbacks(execute=True):
        make_memory(user, personal, "one more", embedder=embedder)
        list_memories(user=user, mode=personal, actor=Actor.system("test"))
    assert [change.action for change in heard] == [AuditAction.MEMORY_CREATE]


def test_a_failing_subscriber_does_not_stop_the_others(
    user, personal, embedder, django_capture_on_commit_callbacks
):
    def broken(change: Change) -> None:
        raise ValueError("a subscriber's bug")

    heard: list[Change] = []
    subscribe(broken)  # First, so the one after it must still hear.
    subscribe(heard.append)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            make_memory(user, personal, "still announced", embedder=embedder)
    finally:
        unsubscribe(broken)
        unsubscribe(heard.append)
    assert [change.action for change in heard] == [AuditAction.MEMORY_CREATE]
