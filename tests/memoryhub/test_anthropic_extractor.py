"""AnthropicExtractor against a fake Messages API on loopback, through the real anthropic SDK."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest

from memoryhub.extraction.anthropic import DEFAULT_MODEL, SYSTEM_PROMPT, AnthropicExtractor
from memoryhub.extraction.base import (
    ExtractedItem,
    ExtractionError,
    ExtractionResult,
    SessionSummary,
    TokenUsage,
    Transcript,
    TranscriptMessage,
    is_grounded,
    split_grounded,
)
from tests.fake_anthropic import FakeAnthropic, error_reply, text_reply, tool_use_reply

SENT_AT = datetime(2025, 3, 12, 9, 30, tzinfo=UTC)
ALICE_ID = "7b0f3a52-0000-4000-8000-000000000001"
REPLY_ID = "7b0f3a52-0000-4000-8000-000000000002"
FRIDAY_ID = "7b0f3a52-0000-4000-8000-000000000003"

TRANSCRIPT = Transcript(
    session_id="session-1",
    messages=(
        TranscriptMessage(ALICE_ID, "user", "Hi! My name is Alice and I live in Lyon.", SENT_AT),
        TranscriptMessage(REPLY_ID, "assistant", "Nice to meet you, Alice.", SENT_AT),
        TranscriptMessage(FRIDAY_ID, "user", "I’ll send the  report by Friday.", SENT_AT),
    ),
)

NAME_ITEM = {
    "kind": "fact",
    "content": "The user's name is Alice.",
    "quote": "My name is Alice",
    "message_refs": ["m1"],
    "slot": "name",
    "value": "Alice",
    "importance": "normal",
    "event_type": None,
    "event_date": None,
    "due_date": None,
    "topics": ["identity"],
    "is_explicit": False,
    "is_correction": False,
}
REPORT_ITEM = {
    "kind": "open_item",
    "content": "The user will send the report by Friday.",
    "quote": "I'll send the report by Friday",
    "message_refs": ["m3"],
    "event_type": "commitment",
    "due_date": "2025-03-14",
}
SUMMARY = {"text": "Alice introduced herself.", "topic": "introductions", "message_refs": ["m1"]}


@pytest.fixture
def fake():
    with FakeAnthropic() as server:
        yield server


def _message_lines(request) -> list[dict[str, Any]]:
    """The JSON objects of a request's prompt, one per line."""
    text = request.body["messages"][0]["content"]
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def make_extractor(fake, **options) -> AnthropicExtractor:
    options = {"timeout": 5.0, "max_retries": 2, **options}
    return AnthropicExtractor(api_key="test-key", base_url=fake.url, **options)


def test_anthropic_extractor_forces_the_tool_and_caches_the_system_prompt(fake):
    fake.add_replies(tool_use_reply({"summary": SUMMARY, "items": [NAME_ITEM]}))

    make_extractor(fake, model="claude-test-model").extract(TRANSCRIPT)

    [request] = fake.requests
    assert request.path == "/v1/messages"
    # SDK 2.x sends the key as a bearer token; older ones as x-api-key.
    sent_key = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent_key.removeprefix("Bearer ") == "test-key"
    assert "anthropic-version" in request.headers
    body = request.body
    assert body["model"] == "claude-test-model"
    assert body["max_tokens"] > 0
    [tool] = body["tools"]
    assert tool["name"] == "record_memories"
    assert tool["input_schema"]["type"] == "object"
    assert set(tool["input_schema"]["required"]) == {"summary", "items"}
    assert body["tool_choice"] == {"type": "tool", "name": "record_memories"}
    [system] = body["system"]
    assert system == {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}


def test_anthropic_extractor_sends_the_transcript_as_json_lines_with_refs(fake):
    fake.add_replies(tool_use_reply({"summary": SUMMARY, "items": []}))

    make_extractor(fake).extract(TRANSCRIPT)

    [message] = fake.requests[0].body["messages"]
    assert message["role"] == "user"
    assert _message_lines(fake.requests[0]) == [
        {"ref": "m1", "role": "user", "date": "2025-03-12", "text": TRANSCRIPT.messages[0].content},
        {
            "ref": "m2",
            "role": "assistant",
            "date": "2025-03-12",
            "text": "Nice to meet you, Alice.",
        },
        {"ref": "m3", "role": "user", "date": "2025-03-12", "text": TRANSCRIPT.messages[2].content},
    ]


def test_anthropic_extractor_defaults_to_a_fast_model(fake):
    fake.add_replies(tool_use_reply({"summary": None, "items": []}))

    result = make_extractor(fake).extract(TRANSCRIPT)

    assert fake.requests[0].body["model"] == DEFAULT_MODEL == "claude-haiku-4-5"
    assert result.model == "claude-haiku-4-5"


def test_anthropic_extractor_parses_items_summary_and_token_usage(fake):
    fake.add_replies(
        tool_use_reply(
            {"summary": SUMMARY, "items": [NAME_ITEM, REPORT_ITEM]},
            input_tokens=1500,
            output_tokens=320,
            cache_read_tokens=1100,
            cache_creation_tokens=40,
        )
    )

    result = make_extractor(fake).extract(TRANSCRIPT)

    assert result.extractor == "anthropic"
    assert result.usage == TokenUsage(
        input_tokens=1500, output_tokens=320, cache_read_tokens=1100, cache_creation_tokens=40
    )
    assert result.summary is not None
    assert result.summary.text == "Alice introduced herself."
    assert result.summary.topic == "introductions"
    assert result.summary.quote_message_ids == (ALICE_ID,)
    name, report = result.items
    assert name == ExtractedItem(
        kind="fact",
        content="The user's name is Alice.",
        quote="My name is Alice",
        message_ids=(ALICE_ID,),
        slot="name",
        value="Alice",
        topics=("identity",),
    )
    assert report.kind == "open_item"
    assert report.event_type == "commitment"
    assert report.due_date == date(2025, 3, 14)
    assert report.message_ids == (FRIDAY_ID,)
    assert report.importance == "normal"


def test_anthropic_extractor_reads_whether_the_user_declared_an_item(fake):
    declared = {**NAME_ITEM, "is_declared": True}
    inferred = {**NAME_ITEM, "content": "The user is called Alice.", "is_declared": False}
    fake.add_replies(tool_use_reply({"summary": None, "items": [declared, inferred]}))

    first, second = make_extractor(fake).extract(TRANSCRIPT).items

    assert (first.is_declared, second.is_declared) == (True, False)


def test_anthropic_extractor_asks_for_a_bounded_summary_and_holds_it_to_the_bound(fake):
    # The user wrote 72 characters: a summary may have 28 (40%) and 5 sentences.
    wordy = {
        "text": "Alice introduced herself. She lives in Lyon and sends a report by Friday.",
        "topic": "introductions",
        "message_refs": ["m1", "m3"],
    }
    fake.add_replies(tool_use_reply({"summary": wordy, "items": []}))

    result = make_extractor(fake).extract(TRANSCRIPT)

    prompt = fake.requests[0].body["messages"][0]["content"]
    assert "Summary limit for this session: 28 characters and 5 sentences." in prompt
    assert "abstractive" in SYSTEM_PROMPT
    assert result.summary is not None
    assert result.summary.text == "Alice introduced herself."
    assert result.summary.quote_message_ids == (ALICE_ID, FRIDAY_ID)


def test_anthropic_extractor_keeps_generic_slots_and_scopes_invented_ones(fake):
    sister = {**NAME_ITEM, "slot": "Sister:Name", "content": "The user's sister is Julie."}
    colour = {**NAME_ITEM, "slot": "favourite_colour", "content": "Blue is the favourite."}
    fake.add_replies(tool_use_reply({"summary": None, "items": [sister, colour]}))

    result = make_extractor(fake).extract(TRANSCRIPT)

    assert [item.slot for item in result.items] == ["sister:name", "user:favourite_colour"]


@pytest.mark.parametrize(("status", "error_type"), [(529, "overloaded_error"), (500, "api_error")])
def test_anthropic_extractor_retries_overloaded_and_server_errors(fake, status, error_type):
    fake.add_replies(
        error_reply(status, error_type),
        tool_use_reply({"summary": SUMMARY, "items": [NAME_ITEM]}),
    )

    result = make_extractor(fake, max_retries=2).extract(TRANSCRIPT)

    assert len(fake.requests) == 2
    assert fake.requests[1].headers["x-stainless-retry-count"] == "1"
    assert [item.value for item in result.items] == ["Alice"]


def test_anthropic_extractor_retries_rate_limits(fake):
    fake.add_replies(
        error_reply(429, "rate_limit_error"),
        tool_use_reply({"summary": SUMMARY, "items": []}),
    )

    make_extractor(fake, max_retries=1).extract(TRANSCRIPT)

    assert len(fake.requests) == 2


def test_anthropic_extractor_fails_cleanly_when_retries_run_out(fake):
    fake.add_replies(*[error_reply(529, "overloaded_error")] * 3)

    with pytest.raises(ExtractionError, match="529"):
        make_extractor(fake, max_retries=2).extract(TRANSCRIPT)

    assert len(fake.requests) == 3


def test_anthropic_extractor_does_not_retry_a_bad_request(fake):
    fake.add_replies(error_reply(400, "invalid_request_error"))

    with pytest.raises(ExtractionError, match="400"):
        make_extractor(fake, max_retries=2).extract(TRANSCRIPT)

    assert len(fake.requests) == 1


def test_anthropic_extractor_times_out_and_retries_before_failing(fake):
    slow = tool_use_reply({"summary": SUMMARY, "items": []})
    fake.add_replies(*[dataclasses.replace(slow, delay=5.0)] * 2)

    with pytest.raises(ExtractionError, match="APITimeoutError"):
        make_extractor(fake, timeout=0.3, max_retries=1).extract(TRANSCRIPT)

    assert len(fake.requests) == 2


def _without(item: dict[str, Any], key: str) -> dict[str, Any]:
    return {name: value for name, value in item.items() if name != key}


@pytest.mark.parametrize(
    "tool_input",
    [
        pytest.param({"summary": SUMMARY}, id="items missing"),
        pytest.param({"items": [NAME_ITEM]}, id="summary missing"),
        pytest.param({"summary": SUMMARY, "items": "Alice"}, id="items not a list"),
        pytest.param({"summary": SUMMARY, "items": [_without(NAME_ITEM, "quote")]}, id="no quote"),
        pytest.param({"summary": SUMMARY, "items": [{**NAME_ITEM, "kind": "gossip"}]}, id="kind"),
        pytest.param({"summary": SUMMARY, "items": [{**NAME_ITEM, "quote": 42}]}, id="quote type"),
        pytest.param({"summary": SUMMARY, "items": [{**NAME_ITEM, "content": " "}]}, id="empty"),
        pytest.param(
            {"summary": SUMMARY, "items": [{**NAME_ITEM, "message_refs": "m1"}]}, id="refs"
        ),
        pytest.param(
            {"summary": SUMMARY, "items": [{**NAME_ITEM, "importance": "huge"}]}, id="imp"
        ),
        pytest.param(
            {"summary": SUMMARY, "items": [{**REPORT_ITEM, "due_date": "Friday"}]}, id="date"
        ),
        pytest.param(
            {"summary": SUMMARY, "items": [{**NAME_ITEM, "is_explicit": "yes"}]}, id="bool"
        ),
        pytest.param({"summary": SUMMARY, "items": [{**NAME_ITEM, "value": 3}]}, id="value type"),
        pytest.param({"summary": {"text": "Hi."}, "items": []}, id="summary fields"),
        pytest.param({"summary": SUMMARY, "items": ["Alice"]}, id="item not an object"),
    ],
)
def test_anthropic_extractor_rejects_malformed_tool_output(fake, tool_input):
    fake.add_replies(tool_use_reply(tool_input))

    with pytest.raises(ExtractionError):
        make_extractor(fake).extract(TRANSCRIPT)

    assert len(fake.requests) == 1


def test_anthropic_extractor_rejects_a_reply_without_the_tool_call(fake):
    fake.add_replies(text_reply("Here are the memories: the user is Alice."))

    with pytest.raises(ExtractionError, match="no record_memories tool call"):
        make_extractor(fake).extract(TRANSCRIPT)


def test_anthropic_extractor_rejects_output_cut_off_at_max_tokens(fake):
    fake.add_replies(tool_use_reply({"summary": SUMMARY, "items": []}, stop_reason="max_tokens"))

    with pytest.raises(ExtractionError, match="max_tokens"):
        make_extractor(fake).extract(TRANSCRIPT)


def _long_transcript() -> Transcript:
    topics = ["the garden", "the budget", "the trip to Porto", "the new laptop"]
    messages = tuple(
        TranscriptMessage(
            f"msg-{index}",
            "user" if index % 2 == 0 else "assistant",
            f"Message {index} is about {topics[index % 4]}. " + "Some more detail here. " * 8,
            SENT_AT,
        )
        for index in range(8)
    )
    return Transcript(session_id="long", messages=messages)


def test_anthropic_extractor_chunks_a_long_transcript_and_merges_the_results(fake):
    transcript = _long_transcript()
    first = {
        "summary": {"text": "Garden and budget.", "topic": "home", "message_refs": ["m1"]},
        "items": [{**NAME_ITEM, "quote": "Message 0 is about the garden", "message_refs": ["m1"]}],
    }
    later = {
        "summary": {"text": "Garden, budget, trip.", "topic": "plans", "message_refs": ["m5"]},
        "items": [
            {
                **REPORT_ITEM,
                "content": "The user plans a trip to Porto.",
                "quote": "Message 6 is about the trip to Porto",
                "message_refs": ["m7"],
            }
        ],
    }
    fake.add_replies(
        tool_use_reply(first, input_tokens=900, output_tokens=100, cache_creation_tokens=50),
        *[tool_use_reply(later, input_tokens=800, output_tokens=90, cache_read_tokens=50)] * 5,
    )

    result = make_extractor(fake, max_chars_per_chunk=700).extract(transcript)

    calls = len(fake.requests)
    assert calls >= 2
    sent = [request.body["messages"][0]["content"] for request in fake.requests]
    for message in transcript.messages:
        assert sum(message.content in text for text in sent) == 1, "each message sent once"
    assert "Garden and budget." in sent[1], "the next chunk sees the summary so far"
    assert result.usage == TokenUsage(
        input_tokens=900 + 800 * (calls - 1),
        output_tokens=100 + 90 * (calls - 1),
        cache_read_tokens=50 * (calls - 1),
        cache_creation_tokens=50,
    )
    # The later chunks return the same item: it is kept once.
    assert [item.message_ids for item in result.items] == [("msg-0",), ("msg-6",)]
    assert result.summary is not None
    assert result.summary.text == "Garden, budget, trip."
    assert result.summary.quote_message_ids == ("msg-0", "msg-4")


def test_anthropic_extractor_splits_a_message_longer_than_a_chunk(fake):
    long_text = " ".join(f"word{index}" for index in range(400))
    transcript = Transcript(
        session_id="huge", messages=(TranscriptMessage("big", "user", long_text, SENT_AT),)
    )
    fake.add_replies(*[tool_use_reply({"summary": SUMMARY, "items": []})] * 8)

    make_extractor(fake, max_chars_per_chunk=1000).extract(transcript)

    assert len(fake.requests) >= 3
    pieces = [
        line["text"]
        for request in fake.requests
        for line in _message_lines(request)
        if "ref" in line
    ]
    assert "".join(pieces) == long_text
    assert all(piece in long_text for piece in pieces)


def test_anthropic_extractor_sends_nothing_for_an_empty_transcript(fake):
    result = make_extractor(fake).extract(Transcript(session_id="empty", messages=()))

    assert fake.requests == []
    assert result == ExtractionResult(
        summary=None, items=(), extractor="anthropic", usage=TokenUsage(), model=DEFAULT_MODEL
    )


def test_anthropic_extractor_refuses_a_chunk_size_smaller_than_one_message_line():
    with pytest.raises(ValueError, match="max_chars_per_chunk"):
        AnthropicExtractor(api_key="test-key", max_chars_per_chunk=50)


def test_split_grounded_rejects_invented_quotes_and_unknown_refs(fake):
    invented = {**NAME_ITEM, "quote": "My name is Alicia", "value": "Alicia"}
    unknown_ref = {**REPORT_ITEM, "message_refs": ["m99"]}
    wrong_message = {**NAME_ITEM, "message_refs": ["m3"]}
    fake.add_replies(
        tool_use_reply(
            {"summary": SUMMARY, "items": [NAME_ITEM, invented, unknown_ref, wrong_message]}
        )
    )
    result = make_extractor(fake).extract(TRANSCRIPT)

    grounded, rejected = split_grounded(result, TRANSCRIPT)

    assert [item.value for item in grounded.items] == ["Alice"]
    assert [item.quote for item in rejected] == [
        "My name is Alicia",
        "I'll send the report by Friday",
        "My name is Alice",
    ]
    assert grounded.usage == result.usage
    assert grounded.summary == result.summary


def _item(quote: str, message_ids: tuple[str, ...] = (), kind: str = "fact") -> ExtractedItem:
    return ExtractedItem(kind=kind, content="x", quote=quote, message_ids=message_ids)  # type: ignore[arg-type]


def test_is_grounded_ignores_case_spacing_and_curly_quotes():
    assert is_grounded(_item("i'll SEND the report", (FRIDAY_ID,)), TRANSCRIPT)
    assert is_grounded(_item("“I’ll send the report"[1:]), TRANSCRIPT)


def test_is_grounded_applies_unicode_compatibility_forms():
    transcript = Transcript(
        "s", (TranscriptMessage("m", "user", "Je suis à Paris\u00a0: ﬁnally home", SENT_AT),)
    )

    assert is_grounded(_item("je suis à paris : finally"), transcript)


def test_is_grounded_searches_only_the_cited_messages():
    assert not is_grounded(_item("My name is Alice", (FRIDAY_ID,)), TRANSCRIPT)
    assert is_grounded(_item("My name is Alice"), TRANSCRIPT)


def test_is_grounded_does_not_take_the_assistants_word_for_a_fact_about_the_user():
    assert not is_grounded(_item("Nice to meet you, Alice", (REPLY_ID,)), TRANSCRIPT)
    assert is_grounded(_item("Nice to meet you, Alice", (REPLY_ID,), kind="episode"), TRANSCRIPT)


def test_is_grounded_rejects_quotes_too_short_to_prove_anything():
    assert not is_grounded(_item("Alice", (ALICE_ID,)), TRANSCRIPT)
    assert not is_grounded(_item("", (ALICE_ID,)), TRANSCRIPT)


def test_split_grounded_drops_unknown_message_ids_from_the_summary():
    result = ExtractionResult(
        summary=SessionSummary("Alice said hello.", "greetings", (ALICE_ID, "ghost-id")),
        items=(_item("My name is Alice", (ALICE_ID,)),),
        extractor="test",
    )

    grounded, rejected = split_grounded(result, TRANSCRIPT)

    assert grounded.summary == SessionSummary("Alice said hello.", "greetings", (ALICE_ID,))
    assert grounded.items == result.items
    assert rejected == []
