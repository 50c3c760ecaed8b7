"""Request and response schemas of the agent API (`<Thing>In` / `<Thing>Out`), shared with MCP."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field, field_validator

from memoryhub.memory_rows import MemoryItem
from memoryhub.models import ForgetTask


def _clean_text(value: str) -> str:
    # PostgreSQL text refuses NUL and lone surrogates; reject them as input errors (422).
    if "\x00" in value:
        raise ValueError("must not contain NUL characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("is not valid UTF-8 text") from None
    return value


def _aware_datetime(value: datetime) -> datetime:
    # Naive times are UTC; times Python cannot shift to UTC (year 1 at +05:00) are input errors.
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError("is out of range") from None


# Every free-text field of the API: a string PostgreSQL can store.
Text = Annotated[str, AfterValidator(_clean_text)]
# Text with at least one visible character.
NonBlankText = Annotated[Text, Field(min_length=1, pattern=r"\S")]
When = Annotated[datetime, AfterValidator(_aware_datetime)]
UserRef = Annotated[
    str,
    AfterValidator(_clean_text),
    Field(
        min_length=1,
        max_length=200,
        description=(
            "The user's UUID or external_id. A personal key may leave it out or write `me`: "
            "it acts for its own user. An agent key must name the user."
        ),
    ),
]
ModeSlug = Annotated[
    str,
    AfterValidator(_clean_text),
    Field(min_length=1, max_length=64, description="A mode slug: personal, work, …"),
]
KindName = Literal[
    "fact", "preference", "procedure", "episode", "session_summary", "open_item", "theme"
]
ImportanceName = Literal["low", "normal", "high", "critical"]
StatusName = Literal["active", "candidate", "superseded", "forgotten"]
ConfidenceName = Literal["candidate", "medium", "high"]
JournalType = Literal["alert", "recommendation", "action"]
# An agent may say an item came from itself or was stated by the user; extracted, reviewer and
# system sources belong to the write path, the review queue and maintenance jobs.
SourceName = Literal["agent", "explicit", "user"]


class ErrorOut(Schema):
    detail: str
    code: str
    errors: list[dict[str, Any]] | None = None


# The error statuses the API answers with, documented on every operation:
# `response={201: ThingOut, **ERRORS}` (ninja's codes_4xx lacks 413 and 422).
ERROR_STATUSES = frozenset({400, 401, 403, 404, 405, 409, 413, 422, 429})
ERRORS: dict[frozenset[int], type[ErrorOut]] = {ERROR_STATUSES: ErrorOut}


class ScopeIn(Schema):
    user: UserRef | None = None
    mode: ModeSlug = "personal"


class UserIn(Schema):
    external_id: Annotated[NonBlankText, Field(max_length=200)]
    # Kept in the schema only to refuse it with a clear message (api/users.py): ignoring it
    # would let an agent believe it set the user's email.
    email: Text | None = Field(
        default=None,
        description=(
            "Refused with 422: agents do not set login identities. Hand the person a link "
            "from POST /users/{external_id}/link instead."
        ),
        json_schema_extra={"deprecated": True},
    )
    display_name: Annotated[Text, Field(max_length=200)] = ""


class UserOut(Schema):
    id: UUID
    external_id: str | None
    email: str | None = Field(
        description="The person's login email, to their own personal keys only; null to agents."
    )
    display_name: str
    is_memory_paused: bool
    has_login: bool = Field(
        description="Whether a person signs in as this user (e.g. after following a link)."
    )
    modes: list[str]


class UserLinkIn(Schema):
    email: Annotated[NonBlankText, Field(max_length=254)] = Field(
        description=(
            "The person's email address, as your service knows it. Only an account that "
            "confirmed this address can use the link; it never becomes the login unproven."
        )
    )


class UserLinkOut(Schema):
    url: str = Field(description="Hand this to the person; it works once, while signed in.")
    expires_at: datetime


# A field the API does not know is refused (422), never dropped: an agent that sends
# `confidence: "candidate"` must learn it had no effect.
STRICT = ConfigDict(extra="forbid")


class MemoryFields(Schema):
    model_config = STRICT

    kind: KindName
    content: NonBlankText
    importance: ImportanceName = "normal"
    source: SourceName = "agent"
    payload: dict[str, Any] | None = None
    occurred_at: When | None = None


IdempotencyKeyText = Annotated[
    Text,
    Field(
        min_length=1,
        max_length=128,
        description="Send the same key with a retry: it returns the first write (200).",
    ),
]


class MemoryIn(ScopeIn, MemoryFields):
    idempotency_key: IdempotencyKeyText | None = None


class MemoryBatchIn(ScopeIn):
    model_config = STRICT

    items: Annotated[list[MemoryFields], Field(min_length=1, max_length=100)]
    idempotency_key: IdempotencyKeyText | None = None

    @field_validator("items", mode="before")
    @classmethod
    def _keys_belong_to_the_batch(cls, items: Any) -> Any:
        # One key for the whole batch (all or nothing); a key per item would be ignored.
        if isinstance(items, list) and any(
            isinstance(item, dict) and "idempotency_key" in item for item in items
        ):
            raise ValueError("idempotency_key belongs to the batch, not to its items")
        return items


AsOf = Annotated[
    When,
    Field(
        description=(
            "An ISO 8601 moment in the past (with a time zone; naive is UTC): answer with what "
            "was known then, each memory with its text and confidence of that time. Superseded "
            "values come back as they were; forgotten or deleted ones never do. A future moment "
            "is 422 `invalid_as_of`. What it cannot reconstruct: docs/history.md."
        )
    ),
]


class MemoryListQuery(ScopeIn):
    kind: KindName | None = None
    # Forgotten memories are gone from every read path, so they cannot be listed either.
    status: Literal["active", "candidate", "superseded"] | None = Field(
        None,
        description="Default active. With as_of: the status a memory had then (never superseded).",
    )
    cursor: Annotated[Text, Field(max_length=200)] | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 50
    as_of: AsOf | None = None


class ProfileQuery(ScopeIn):
    as_of: AsOf | None = None


class MemoryPatchIn(Schema):
    model_config = STRICT

    content: NonBlankText | None = None
    importance: ImportanceName | None = None
    payload: dict[str, Any] | None = None


class MemoryOut(Schema):
    id: UUID
    kind: str
    content: str
    confidence: str
    status: str
    source: str
    importance: str
    payload: dict[str, Any]
    is_flagged: bool
    personal_data: list[str]
    evidence_count: int
    created_at: datetime
    updated_at: datetime
    occurred_at: datetime | None

    @classmethod
    def of(cls, item: MemoryItem) -> MemoryOut:
        return cls.model_construct(**cls.fields_of(item))

    @staticmethod
    def fields_of(item: MemoryItem) -> dict[str, Any]:
        """The schema's fields from a decrypted memory.

        Built with `model_construct`: every value already has its type (MemoryItem is typed
        and checked), and validating again through ninja's attribute getter cost more CPU than
        the whole query on a page of 50 memories.
        """
        return {
            "id": item.id,
            "kind": item.kind,
            "content": item.content,
            "confidence": item.confidence,
            "status": item.status,
            "source": item.source,
            "importance": item.importance,
            "payload": item.payload,
            "is_flagged": item.is_flagged,
            "personal_data": list(item.personal_data),
            "evidence_count": item.evidence_count,
            "created_at": item.created_at,
            "updated_at": item.updated_at,
            "occurred_at": item.occurred_at,
        }


class MemoryBatchOut(Schema):
    items: list[MemoryOut]


class MemoryPageOut(Schema):
    items: list[MemoryOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next (older) page.")


class DeletedOut(Schema):
    deleted: int


class ForgetIn(ScopeIn):
    query: Annotated[Text, Field(max_length=1000)] | None = None
    memory_ids: list[UUID] = Field(default_factory=list, max_length=500)
    since: When | None = None
    until: When | None = None
    topic: Annotated[Text, Field(max_length=200)] | None = None


class ForgetOut(Schema):
    forgotten: int = Field(description="How many memories were forgotten.")
    counts: dict[str, int] = Field(description="Everything removed, by kind (fact, message, …).")
    memory_ids: list[UUID]
    deleted_at: datetime


class ForgetTaskOut(Schema):
    """A forget by query too large for one request: queued, and its receipt once it ran."""

    task_id: UUID
    status: str = Field(description='"queued", then "done" with the receipt below.')
    forgotten: int = Field(description="How many memories were forgotten (0 while queued).")
    counts: dict[str, int] = Field(description="Everything removed, by kind (empty while queued).")
    memory_ids: list[UUID]
    created_at: datetime
    finished_at: datetime | None

    @classmethod
    def of(cls, task: ForgetTask) -> ForgetTaskOut:
        return cls(
            task_id=task.id,
            status=task.status,
            forgotten=len(task.memory_ids),
            counts=task.counts,
            memory_ids=[UUID(pk) for pk in task.memory_ids],
            created_at=task.created_at,
            finished_at=task.finished_at,
        )


class ProfileOut(Schema):
    facts: list[MemoryOut]
    preferences: list[MemoryOut]
    procedures: list[MemoryOut]


class OpenItemsOut(Schema):
    items: list[MemoryOut]


class JournalIn(ScopeIn):
    summary: NonBlankText
    type: JournalType
    key: Annotated[Text, Field(max_length=200)] = ""


class JournalOut(Schema):
    id: UUID
    type: str
    summary: str
    key: str
    created_at: datetime
    resolved_at: datetime | None
    is_flagged: bool


class JournalListQuery(ScopeIn):
    since: When | None = None
    unresolved: bool = False
    limit: Annotated[int, Field(ge=1, le=200)] = 100


class JournalListOut(Schema):
    items: list[JournalOut]
