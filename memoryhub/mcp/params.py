"""The MCP tools' parameters, each with the description an agent reads in the input schema."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import Field

from memoryhub.api.schemas import (
    IdempotencyKeyText,
    ImportanceName,
    KindName,
    ModeSlug,
    Text,
    UserRef,
    When,
)

User = UserRef
Mode = ModeSlug
Kind = Annotated[
    KindName,
    Field(
        description=(
            "fact, preference, procedure (how the user wants things done), episode (something "
            "that happened), session_summary, open_item (a to-do or follow-up), theme"
        )
    ),
]
KindFilter = Annotated[KindName | None, Field(description="Only this kind; all when left out.")]
Kinds = Annotated[list[KindName] | None, Field(description="Only these kinds; all when empty.")]
Content = Annotated[Text, Field(min_length=1, description="The item, as one plain sentence.")]
Importance = Annotated[ImportanceName, Field(description="low, normal, high or critical.")]
Payload = Annotated[
    dict[str, Any] | None, Field(description="Optional structured data kept with the item.")
]
IdempotencyKey = Annotated[
    IdempotencyKeyText | None,
    Field(description="Any unique string; a retry with the same key returns the first write."),
]
MemoryIds = Annotated[list[str] | None, Field(description="Memory ids (UUIDs) to forget.")]
Query = Annotated[Text, Field(min_length=1, description="What to look for, in plain words.")]
Topic = Annotated[Text | None, Field(description="Forget what is about this topic.")]
ForgetQuery = Annotated[Text | None, Field(description="Forget what answers this query.")]
Since = Annotated[When | None, Field(description="Only from this time on (ISO 8601).")]
Until = Annotated[When | None, Field(description="Only up to this time (ISO 8601).")]
Cursor = Annotated[Text | None, Field(description="The next_cursor of the previous page.")]
AsOf = Annotated[
    When | None,
    Field(
        description=(
            "What was known at this past moment (ISO 8601): each memory as it was then; "
            "forgotten ones never. Leave out for now."
        )
    ),
]
MemoryId = Annotated[UUID, Field(description="The memory's id (a UUID).")]
Limit = Annotated[int, Field(description="Page size, 1 to 200.")]
TopK = Annotated[int, Field(description="How many results at most, best first.")]
Topics = Annotated[list[Text] | None, Field(description="Only memories about these topics.")]
Message = Annotated[Text, Field(min_length=1, description="The user's message the context is for.")]
SessionRef = Annotated[
    str | None, Field(description="The session (thread) the message belongs to, if any.")
]
BudgetTokens = Annotated[
    int | None, Field(description="Token budget; defaults to the agent's configured budget.")
]
ExternalId = Annotated[
    Text,
    Field(
        min_length=1,
        max_length=200,
        description="Your own stable id for the person (e.g. your app's user id).",
    ),
]
DisplayName = Annotated[
    Text, Field(max_length=200, description="How to call the person; may be empty.")
]
Incognito = Annotated[
    bool, Field(description="Read memory but never write any: no messages kept, no extraction.")
]
SessionId = Annotated[UUID, Field(description="The id start_session returned.")]
Role = Annotated[Literal["user", "assistant"], Field(description="Who said it: user or assistant.")]
MessageContent = Annotated[Text, Field(min_length=1, description="What was said, verbatim.")]
Question = Annotated[Text, Field(min_length=1, description="The user's question.")]
AnswerText = Annotated[Text, Field(min_length=1, description="The answer you gave.")]


RetrievalSignal = Annotated[
    float, Field(ge=0, le=1, description="0 to 1: how well recalled memory covered the question.")
]
PolicySignal = Annotated[
    float, Field(ge=0, le=1, description="0 to 1: how sure the answer follows your rules.")
]
CompletenessSignal = Annotated[
    float, Field(ge=0, le=1, description="0 to 1: how completely the answer addresses it.")
]
MemorySignal = Annotated[
    float, Field(ge=0, le=1, description="0 to 1: how well the user's memory supports it.")
]
ContextIds = Annotated[
    list[str] | None, Field(description="Ids of the memories or context blocks you used.")
]
AnswerId = Annotated[UUID, Field(description="The id report_answer returned.")]
FeedbackValue = Annotated[
    Literal["up", "down"], Field(description="The user's thumbs: up or down.")
]
Comment = Annotated[Text | None, Field(description="What the user said about the answer.")]
Statement = Annotated[
    Text, Field(min_length=1, description="A fact about the workspace's domain, not the user.")
]
