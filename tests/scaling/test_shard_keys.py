"""Ready for Citus on paper: which tables carry the shard key, and which hot queries lack it.

docs/scaling.md distributes the per-user tables by `user_id` (colocated), the workspace graph
and knowledge base by `workspace_id`, the audit log by `chain`, and keeps workspaces, agents,
keys and the like as reference tables. Citus is not installed here; these tests keep the schema
and the hot paths from drifting away from that plan:

- every model that belongs to one user carries `user_id`, except the ones listed (with what
  they need) in MISSING_USER_ID;
- on the agent's hot paths (remember, a session and its messages, search, context, listing,
  ending a session) every statement on a distributed table filters by its distribution column,
  except the ones listed in NEEDS_SHARD_KEY: on Citus each of those would go to every shard.
"""

from __future__ import annotations

import json
import re

import pytest
from django.apps import apps
from django.db import connection
from django.db.models import ForeignKey, Model, OneToOneField
from django.test.utils import CaptureQueriesContext

from memoryhub.models import User
from tests import factories

# Distributed by user_id, all colocated with memoryhub_user (distributed by id).
BY_USER = {
    "memoryhub_memory",
    "memoryhub_memoryversion",
    "memoryhub_mode",
    "memoryhub_userkey",
    "memoryhub_session",
    "memoryhub_message",
    "memoryhub_extractionrun",
    "memoryhub_journalentry",
    "memoryhub_idempotentwrite",
    "memoryhub_forgettask",
    "memoryhub_agentblock",
    "memoryhub_agentgrant",
    "memoryhub_importjob",
    "memoryhub_importeditem",
    "memoryhub_userlink",
    "memoryhub_memoryusage",
    "memoryhub_userwritemark",
    "memoryhub_countedmode",
    "memoryhub_termcount",
    "review_answerrecord",
    "review_learningcandidate",
}
# Distributed by workspace_id, colocated with each other: the workspace graph, the knowledge base.
BY_WORKSPACE = {
    "memoryhub_graphnode",
    "memoryhub_graphedge",
    "review_knowledgedocument",
    "review_knowledgechunk",
    "review_reviewdecision",
}
# Distributed by chain (the subject's pseudonym): one user's audit chain lives on one shard.
BY_CHAIN = {"memoryhub_auditentry"}

# Per-user models without a user_id column yet: what each needs before distribution.
MISSING_USER_ID = {
    "Message": "a user_id column (copied from its session) and (user_id, session_id) filters",
    "ExtractionRun": "a user_id column (copied from its session)",
    "MemoryVersion": "a user_id column (copied from its memory)",
    "AuditEntry": "nothing: distributed by chain, the pseudonym of its user",
}

# Statements on the hot paths that do not filter by their table's distribution column, by
# "<verb> <table> <filter columns>"; on Citus each would fan out to every shard.
NEEDS_SHARD_KEY = {
    "SELECT memoryhub_session id": "session lookups by id alone (the API names a session by id)",
    "UPDATE memoryhub_session id": "session updates by id alone",
    "SELECT memoryhub_message session_id": "messages have no user_id yet",
    "INSERT memoryhub_message": "messages have no user_id yet",
    "SELECT memoryhub_apikey JOIN memoryhub_mode": "a key's mode joined by id alone",
    "SELECT memoryhub_session JOIN memoryhub_mode": "a session's mode joined by id, not user_id",
    "SELECT review_knowledgechunk JOIN review_knowledgedocument": (
        "chunks joined to documents by document_id, not also workspace_id"
    ),
}

TABLE = re.compile(r'(?:FROM|JOIN|INTO|UPDATE)\s+"?((?:memoryhub|review)_\w+)"?', re.IGNORECASE)
WHERE_COLUMN = re.compile(r'"?(\w+)"?\s*(?:=|IN\b|= ANY)', re.IGNORECASE)


def _distribution_column(table: str) -> str | None:
    if table in BY_USER:
        return "user_id"
    if table in BY_WORKSPACE:
        return "workspace_id"
    if table in BY_CHAIN:
        return "chain"
    return None


def _signature(sql: str, table: str) -> str:
    verb = sql.split(None, 1)[0].upper()
    if verb == "WITH":
        verb = "SELECT"
    if verb == "INSERT":
        return f"INSERT {table}"
    tables = TABLE.findall(sql)
    if tables and tables[0] != table:
        return f"{verb} {tables[0]} JOIN {table}"
    where = sql.split(" WHERE ", 1)[1] if " WHERE " in sql else ""
    qualified = re.findall(rf'"{table}"\."(\w+)"\s*(?:=|IN\b)', where)
    columns = qualified or [c for c in WHERE_COLUMN.findall(where) if c.islower()]
    return f"{verb} {table} {' '.join(sorted(set(columns)))}".strip()


def _filters_by(sql: str, table: str, column: str) -> bool:
    if sql.upper().startswith("INSERT"):
        head = sql.split(")", 1)[0]
        return f'"{column}"' in head or f" {column}," in head or f"({column}," in head
    # Django names a table of a subquery by an alias: EXISTS(… FROM "memoryhub_agentblock" U0
    # WHERE U0."user_id" = …).
    # Hand-written SQL names them too: FROM memoryhub_memory m WHERE m."user_id" = ….
    aliases = re.findall(rf'(?<![\w.])"?{table}"?\s+(?:AS\s+)?(\w+)\b', sql, re.IGNORECASE)
    return bool(
        re.search(rf'"{table}"\."{column}"\s*(?:=|IN\b)', sql)
        or re.search(rf'(?<![\w."]){column}"?\s*(?:=|IN\b)', sql)
        or re.search(rf'(?<![\w.])"{column}"\s*(?:=|IN\b)', sql)
        or any(
            re.search(rf'\b{re.escape(alias)}\."?{column}"?\s*(?:=|IN\b)', sql) for alias in aliases
        )
    )


def statements_without_shard_key(sqls: list[str]) -> dict[str, str]:
    """The signature of every statement on a distributed table that misses its column."""
    found = {}
    for sql in sqls:
        if sql.startswith(("SAVEPOINT", "RELEASE", "ROLLBACK")):
            continue
        for table in set(TABLE.findall(sql)):
            column = _distribution_column(table)
            if column is not None and not _filters_by(sql, table, column):
                found[_signature(sql, table)] = sql[:300]
    return found


def _belongs_to_one_user(model: type[Model]) -> bool:
    for field in model._meta.concrete_fields:
        if isinstance(field, ForeignKey | OneToOneField) and field.related_model is User:
            return True
    return False


def test_every_per_user_model_carries_user_id_or_is_listed():
    gaps = []
    for model in apps.get_models():
        if model._meta.app_label not in ("memoryhub", "review"):
            continue
        table = model._meta.db_table
        has_user_id = any(f.column == "user_id" for f in model._meta.concrete_fields)
        if table in BY_USER and not has_user_id and model.__name__ not in MISSING_USER_ID:
            gaps.append(f"{model.__name__} ({table}) is distributed by user_id but has none")
        is_placed = table in BY_USER | BY_WORKSPACE | BY_CHAIN
        # ApiKey is a reference table: a key is looked up before its user is known.
        if _belongs_to_one_user(model) and not is_placed and model.__name__ != "ApiKey":
            gaps.append(f"{model.__name__} ({table}) points at a user: place it in the plan")
    assert gaps == [], "\n".join(gaps)
    # The list of exceptions stays true: each named model still lacks the column.
    for name in MISSING_USER_ID:
        model = apps.get_model("memoryhub", name)
        assert not any(f.column == "user_id" for f in model._meta.concrete_fields), name


@pytest.mark.django_db
def test_hot_path_statements_filter_by_their_shard_key_except_the_listed_ones(client, embedder):
    workspace = factories.make_workspace()
    factories.make_user(workspace=workspace, external_id="erin")
    _, key = factories.make_agent(workspace)
    auth = {"Authorization": f"Bearer {key}"}

    def post(path: str, body: dict[str, object]) -> dict[str, object]:
        response = client.post(
            "/api/v1" + path, json.dumps(body), content_type="application/json", headers=auth
        )
        assert response.status_code in (200, 201), response.content
        return response.json()

    post("/memories", {"user": "erin", "kind": "fact", "content": "Lives in Porto"})
    with CaptureQueriesContext(connection) as captured:
        post("/memories", {"user": "erin", "kind": "fact", "content": "Plays the cello"})
        session = post("/sessions", {"user": "erin"})
        post(f"/sessions/{session['id']}/messages", {"role": "user", "content": "I like jazz"})
        post("/search", {"user": "erin", "query": "music"})
        post("/context", {"user": "erin", "message": "what music do I like?"})
        assert client.get("/api/v1/memories", {"user": "erin"}, headers=auth).status_code == 200
        post(f"/sessions/{session['id']}/end", {})
    sqls = [" ".join(query["sql"].split()) for query in captured.captured_queries]
    found = statements_without_shard_key(sqls)
    unexpected = {
        signature: sql for signature, sql in found.items() if signature not in NEEDS_SHARD_KEY
    }
    assert unexpected == {}, "hot-path statements that would fan out to every shard:\n" + "\n".join(
        f"{signature}: {sql}" for signature, sql in unexpected.items()
    )
    # The memory table, the heart of every hot path, is always reached by its shard key.
    assert not any(signature.split()[1] == "memoryhub_memory" for signature in found)


def test_the_checker_flags_a_statement_without_the_shard_key():
    assert statements_without_shard_key(
        ['SELECT "memoryhub_memory"."id" FROM "memoryhub_memory" WHERE "memoryhub_memory"."id" = 1']
    ) == {
        "SELECT memoryhub_memory id": 'SELECT "memoryhub_memory"."id" FROM "memoryhub_memory" WHERE "memoryhub_memory"."id" = 1'
    }
    assert not statements_without_shard_key(
        [
            'SELECT "memoryhub_memory"."id" FROM "memoryhub_memory" WHERE '
            '("memoryhub_memory"."user_id" = 1 AND "memoryhub_memory"."id" = 2)'
        ]
    )
