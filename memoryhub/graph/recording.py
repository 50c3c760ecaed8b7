"""Recording in the workspace graph: answers, their items and documents, and feedback.

Security invariants enforced here:
- Node text is scrubbed of personal data (the review queue's scrubber, with the user's known
  names) and encrypted under the workspace key before the ORM sees it.
- Only interaction nodes (query, response, tool call) carry a user; shared items never do, so
  erasing a user can never take an item other users' interactions point at.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from uuid import UUID, uuid4

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub import text_patterns
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ConflictError, InvalidInputError, KeyDestroyedError, NotFoundError
from memoryhub.injection import looks_like_instructions
from memoryhub.keyring import WorkspaceCipher, cipher_for, workspace_cipher
from memoryhub.knowledge.queries import known_names_of
from memoryhub.models import (
    AnswerRecord,
    EdgeType,
    GraphEdge,
    GraphNode,
    KnowledgeDocument,
    NodeType,
    User,
    Workspace,
    WorkspaceNodeType,
)
from memoryhub.personal_data import scrub_personal_data
from memoryhub.sealed_tables import ANSWER_TABLE, NODE_TABLE

TRANSIENT_TYPES = (NodeType.QUERY, NodeType.RESPONSE, NodeType.TOOL_CALL)
# Decay never takes an edge below this; initial weights start at least here too, so the floor
# never raises a weight.
MIN_WEIGHT = 0.1
# An answer is good when confidence x feedback factor reaches this: a thumbs down (x 0.25 of
# at most 1.0) never does, a thumbs up (x 2) does from a confidence of 0.25.
GOOD_ANSWER_WEIGHT = 0.5
FEEDBACK_FACTORS: Mapping[str, float] = {"": 1.0, "up": 2.0, "down": 0.25}
LINK_WEIGHT = 1.0
ITEM_RELATIONS = frozenset(
    {EdgeType.SEARCHED_FOR, EdgeType.VIEWED, EdgeType.BOOKED, EdgeType.ASKED_ABOUT}
)
ITEM_NAME_FIELDS = ("name", "title", "label", "id", "sku")
TOOL_TYPES = frozenset({"tool", "tool_call"})
MAX_NAME_CHARS = 200
NODE_TYPE_SLUG = text_patterns.compile(r"^[a-z][a-z0-9_-]{0,63}$")


@dataclass(frozen=True)
class ItemRef:
    """An item an agent reported with its answer: which node, and how the query relates to it."""

    node_type: str
    key: str
    name: str
    relation: str


@dataclass(frozen=True)
class Interaction:
    """One answered question as the graph records it; the texts are already scrubbed."""

    answer_id: UUID
    question: str
    answer: str
    composite: float
    feedback: str
    created_at: datetime
    items: tuple[ItemRef, ...] = ()
    documents: tuple[tuple[UUID, str], ...] = ()


@dataclass(frozen=True)
class RecordedAnswer:
    query_id: UUID
    response_id: UUID


def answer_weight(composite: float, feedback: str) -> float:
    """The answered_by edge's initial weight: the answer's confidence, scaled by feedback."""
    factor = FEEDBACK_FACTORS.get(feedback, 1.0)
    return round(max(MIN_WEIGHT, min(1.0, max(0.0, composite)) * factor), 6)


def decayed_weight(initial_weight: float, *, age_days: float, half_life_days: float) -> float:
    """initial_weight * exp(-ln(2) / half_life_days * age_days), floored at MIN_WEIGHT."""
    decay = math.exp(-math.log(2) / half_life_days * max(0.0, age_days))
    return max(MIN_WEIGHT, initial_weight * decay)


def _age_days(created_at: datetime, now: datetime) -> float:
    return (now - created_at).total_seconds() / 86400


def configured_half_life() -> float:
    """The half-life of edge weights in days (MEMORYHUB_GRAPH_HALF_LIFE_DAYS)."""
    return float(settings.MEMORYHUB_GRAPH_HALF_LIFE_DAYS)


def declared_types(workspace: Workspace | int) -> dict[str, bool]:
    """The workspace's own node types, each with whether it is transient."""
    return dict(
        WorkspaceNodeType.objects.filter(workspace=workspace).values_list("slug", "is_transient")
    )


def check_node_type_slug(slug: str) -> str:
    """The slug of a new node type, stripped; InvalidInputError if malformed or built in."""
    slug = (slug or "").strip()
    if not NODE_TYPE_SLUG.match(slug):
        raise InvalidInputError(
            gettext_noop("a node type is a lowercase slug of at most 64 characters")
        )
    if slug in NodeType.values or slug in TOOL_TYPES:
        raise InvalidInputError(gettext_noop("{slug!r} is a built-in node type"), slug=slug)
    return slug


def declare_node_type(
    *, workspace: Workspace, slug: str, name: str = "", is_transient: bool = False
) -> WorkspaceNodeType:
    """Declare a node type of the workspace's own. Raises InvalidInputError, ConflictError."""
    slug = check_node_type_slug(slug)
    try:
        with transaction.atomic():
            return WorkspaceNodeType.objects.create(
                workspace=workspace, slug=slug, name=name or slug, is_transient=is_transient
            )
    except IntegrityError:
        raise ConflictError(
            gettext_noop("node type {slug!r} is already declared"), slug=slug
        ) from None


def _text_of(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int):
        return ""
    return " ".join(str(value).replace("\x00", "").split())[:MAX_NAME_CHARS]


def parse_items(items: Iterable[object], *, declared: Mapping[str, bool]) -> list[ItemRef]:
    """Read the agent's `items` leniently: an entry without a usable name is skipped.

    An item is `{"name": …}` (or title, label, id, sku), with an optional `id` (its identity),
    `type` (a declared node type, or "tool_call"; anything else is an item) and `relation`
    (searched_for, viewed, booked, asked_about; searched_for by default). An item whose name
    or id reads like instructions to a model is dropped.
    """
    refs: list[ItemRef] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        name = next((_text_of(item.get(f)) for f in ITEM_NAME_FIELDS if _text_of(item.get(f))), "")
        # Security invariant: item names are shown to every agent of the workspace (insights in
        # their context), so one agent's "ignore previous instructions" never becomes a node.
        if not name or looks_like_instructions(f"{name}\n{_text_of(item.get('id'))}"):
            continue
        kind = _text_of(item.get("type")).casefold()
        relation = _text_of(item.get("relation")).casefold()
        node_type: str
        if kind in TOOL_TYPES:
            node_type, relation = NodeType.TOOL_CALL, EdgeType.USED_TOOL
        else:
            node_type = kind if kind in declared else NodeType.ITEM
            relation = relation if relation in ITEM_RELATIONS else EdgeType.SEARCHED_FOR
        key = _text_of(item.get("id")) or name
        refs.append(ItemRef(node_type=node_type, key=key, name=name, relation=relation))
    return refs


@dataclass(frozen=True)
class _NodeSpec:
    node_type: str
    key_hash: str
    text: str
    # Interaction nodes belong to one answer and its user; the others are shared and durable.
    is_interaction: bool


def _find_nodes(
    workspace: Workspace, specs: Iterable[_NodeSpec], answer_id: UUID
) -> dict[tuple[str, str], GraphNode]:
    condition = Q()
    for spec in specs:
        condition |= Q(
            node_type=spec.node_type,
            key_hash=spec.key_hash,
            answer_id=answer_id if spec.is_interaction else None,
        )
    found = GraphNode.objects.filter(condition, workspace=workspace)
    return {(node.node_type, node.key_hash): node for node in found}


def _ensure_nodes(
    workspace: Workspace,
    cipher: WorkspaceCipher,
    specs: dict[tuple[str, str], _NodeSpec],
    *,
    user: User,
    answer_id: UUID,
    at: datetime,
) -> dict[tuple[str, str], GraphNode]:
    """Create the nodes that do not exist yet in one statement; return every spec's node."""
    nodes = _find_nodes(workspace, specs.values(), answer_id)
    missing = [spec for key, spec in specs.items() if key not in nodes]
    if not missing:
        return nodes
    rows = []
    for spec in missing:
        node_id = uuid4()
        rows.append(
            GraphNode(
                id=node_id,
                workspace=workspace,
                node_type=spec.node_type,
                key_hash=spec.key_hash,
                text_ciphertext=cipher.encrypt(
                    spec.text, table=NODE_TABLE, row_id=node_id, field="text"
                ),
                user=user if spec.is_interaction else None,
                answer_id=answer_id if spec.is_interaction else None,
                created_at=at,
            )
        )
    # A concurrent run (a redelivered task, an item named by two answers at once) may have
    # created some of them first: keep theirs and read every node back.
    GraphNode.objects.bulk_create(rows, ignore_conflicts=True)
    return _find_nodes(workspace, specs.values(), answer_id)


def record_interaction(
    *, workspace: Workspace, user: User, interaction: Interaction, now: datetime | None = None
) -> RecordedAnswer:
    """Write an answered question's nodes and edges; recording it twice writes nothing twice."""
    now = now or timezone.now()
    cipher = workspace_cipher(workspace)
    transient = {slug for slug, is_transient in declared_types(workspace).items() if is_transient}
    at = interaction.created_at

    def spec(node_type: str, key: str, text: str, *, is_interaction: bool) -> tuple[str, str]:
        found = _NodeSpec(node_type, cipher.key_hash(key), text, is_interaction)
        specs.setdefault((found.node_type, found.key_hash), found)
        return found.node_type, found.key_hash

    specs: dict[tuple[str, str], _NodeSpec] = {}
    query = spec(NodeType.QUERY, interaction.question, interaction.question, is_interaction=True)
    response = spec(NodeType.RESPONSE, interaction.answer, interaction.answer, is_interaction=True)
    links = [
        (
            query,
            response,
            EdgeType.ANSWERED_BY.value,
            answer_weight(interaction.composite, interaction.feedback),
        )
    ]
    for item in interaction.items:
        is_interaction = item.node_type == NodeType.TOOL_CALL or item.node_type in transient
        target = spec(item.node_type, item.key, item.name, is_interaction=is_interaction)
        source = response if item.relation == EdgeType.USED_TOOL else query
        links.append((source, target, item.relation, LINK_WEIGHT))
    for document_id, title in interaction.documents:
        target = spec(NodeType.DOCUMENT, str(document_id), title, is_interaction=False)
        links.append((response, target, EdgeType.CITED.value, LINK_WEIGHT))
    half_life = configured_half_life()
    with transaction.atomic():
        nodes = _ensure_nodes(
            workspace, cipher, specs, user=user, answer_id=interaction.answer_id, at=at
        )
        GraphEdge.objects.bulk_create(
            [
                GraphEdge(
                    workspace=workspace,
                    source=nodes[source],
                    target=nodes[target],
                    edge_type=edge_type,
                    initial_weight=initial,
                    weight=decayed_weight(
                        initial, age_days=_age_days(at, now), half_life_days=half_life
                    ),
                    created_at=at,
                )
                for source, target, edge_type, initial in links
            ],
            # Edges already there (a second run) keep their weights: feedback owns answered_by.
            ignore_conflicts=True,
        )
    return RecordedAnswer(query_id=nodes[query].pk, response_id=nodes[response].pk)


def _answered_by_edge(answer_id: UUID | str) -> GraphEdge | None:
    return (
        GraphEdge.objects.filter(
            edge_type=EdgeType.ANSWERED_BY,
            source__answer_id=answer_id,
            source__node_type=NodeType.QUERY,
        )
        .select_related("source")
        .first()
    )


def _set_answer_weight(edge: GraphEdge, *, composite: float, feedback: str, now: datetime) -> None:
    # Recomputed from the answer's own confidence, never from the edge's current weight: a
    # feedback applied twice (or changed from down to up) lands on the same value.
    edge.initial_weight = answer_weight(composite, feedback)
    edge.weight = decayed_weight(
        edge.initial_weight,
        age_days=_age_days(edge.created_at, now),
        half_life_days=configured_half_life(),
    )
    edge.save(update_fields=["initial_weight", "weight"])


def _answer_row(answer_id: UUID | str) -> AnswerRecord | None:
    try:
        return (
            AnswerRecord.objects.select_related("workspace", "user", "mode")
            .filter(pk=answer_id)
            .first()
        )
    except (ValueError, ValidationError):
        return None


def apply_feedback(*, answer_id: UUID | str, value: str, now: datetime | None = None) -> GraphEdge:
    """Re-weight an answer's answered_by edge: thumbs up strengthens it, down weakens it.

    Raises InvalidInputError (value) and NotFoundError (no such answer in the graph).
    """
    if value not in ("up", "down"):
        raise InvalidInputError(gettext_noop("value must be 'up' or 'down'"))
    record = _answer_row(answer_id)
    edge = _answered_by_edge(record.pk) if record is not None else None
    if record is None or edge is None:
        raise NotFoundError(gettext_noop("this answer is not in the graph"))
    _set_answer_weight(edge, composite=record.composite, feedback=value, now=now or timezone.now())
    return edge


def record_answer(*, answer_id: UUID | str, now: datetime | None = None) -> RecordedAnswer | None:
    """Record a reported answer in its workspace graph, or bring its feedback up to date.

    Returns None when there is nothing to record: the answer (or its user's key) is gone, or it
    is older than the purge horizon and would be purged at once.
    """
    now = now or timezone.now()
    record = _answer_row(answer_id)
    horizon = now - timedelta(days=settings.MEMORYHUB_GRAPH_TRANSIENT_DAYS)
    if record is None or record.created_at < horizon:
        return None
    edge = _answered_by_edge(record.pk)
    if edge is not None:
        _set_answer_weight(edge, composite=record.composite, feedback=record.feedback, now=now)
        return RecordedAnswer(query_id=edge.source_id, response_id=edge.target_id)
    try:
        interaction = _interaction_of(record)
    except KeyDestroyedError:
        return None  # The user was erased meanwhile: nothing of theirs may be recorded.
    with transaction.atomic():
        record_access(
            actor=Actor.system("knowledge graph"),
            subject_user_id=record.user_id,
            action=AuditAction.GRAPH_RECORD_ANSWER,
            object_ids=[record.pk],
            mode=record.mode.slug,
        )
        return record_interaction(
            workspace=record.workspace, user=record.user, interaction=interaction, now=now
        )


def _interaction_of(record: AnswerRecord) -> Interaction:
    """Decrypt an answer record and scrub its texts: the only plaintext the graph ever sees."""
    cipher = cipher_for(record.user, create=False)

    def read(field: str) -> str:
        blob = getattr(record, f"{field}_ciphertext")
        return cipher.decrypt(blob, table=ANSWER_TABLE, row_id=record.pk, field=field)

    items = (
        cipher.decrypt_json(
            record.items_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="items"
        )
        if record.items_ciphertext is not None
        else []
    )
    names = known_names_of(user=record.user)

    def scrub(text: str) -> str:
        return scrub_personal_data(text, known_names=names).text

    refs = [
        # The key is scrubbed too: a keyed hash of personal data is still personal data.
        ItemRef(
            node_type=ref.node_type, key=scrub(ref.key), name=scrub(ref.name), relation=ref.relation
        )
        for ref in parse_items(items, declared=declared_types(record.workspace_id))
    ]
    documents = KnowledgeDocument.objects.filter(
        workspace_id=record.workspace_id, pk__in=_uuids(record.context_ids)
    ).values_list("pk", "title")
    return Interaction(
        answer_id=record.pk,
        question=scrub(read("question")),
        answer=scrub(read("answer")),
        composite=record.composite,
        feedback=record.feedback,
        created_at=record.created_at,
        items=tuple(refs),
        documents=tuple(documents),
    )


def _uuids(values: Iterable[str]) -> list[UUID]:
    found = []
    for value in values:
        try:
            found.append(UUID(value))
        except ValueError:
            continue
    return found
