"""The extraction benchmark's pieces: label matching, loading, and a run on a few conversations."""

from __future__ import annotations

import json

import pytest

from bench.extraction.dataset import (
    CATEGORIES,
    Conversation,
    Expectation,
    Turn,
    load_conversations,
)
from bench.extraction.runner import aggregate, format_table, run_benchmark, write_report
from memoryhub.extraction.anthropic import AnthropicExtractor
from memoryhub.extraction.offline import OfflineExtractor
from tests import factories
from tests.fake_anthropic import FakeAnthropic, error_reply, tool_use_reply

SUBSET = ("en-alice-ceo", "en-manager-tim", "fr-avocate-lyon")


@pytest.mark.parametrize(
    ("match", "content", "expected"),
    [
        ("Tom", "The user's manager is Tom.", True),
        ("Tom", "Remind the user to call tomorrow.", False),  # Whole words only.
        ("Lyon", "L'utilisateur habite à LYON.", True),
        ("Théo Marchand", "The user's name is Theo  Marchand.", True),  # Accents and spaces.
        ("tutoie*", "Tutoie-moi toujours.", True),
        ("tutoie*", "Tutoyer l'utilisateur.", False),
        ("PDF|pdf file", "The user wants a PDF file.", True),
        ("St Mary's Hospital", "The user works at St Mary’s Hospital.", True),
    ],
)
def test_a_label_matches_its_key_value_as_whole_words(match, content, expected):
    assert Expectation(("fact",), (match,), "profile").matches("fact", content) is expected


def test_a_label_matches_only_its_kinds_and_every_part():
    label = Expectation(("preference",), ("short answers", "bullet points"), "preferences")
    assert label.matches("preference", "The user prefers short answers, no bullet points.")
    assert not label.matches("preference", "The user prefers short answers.")
    assert not label.matches("fact", "The user prefers short answers, no bullet points.")


def test_the_labelled_conversations_load_with_both_splits_and_every_category():
    conversations = load_conversations()
    assert len(conversations) >= 60
    assert {c.split for c in conversations} == {"dev", "heldout"}
    assert {c.language for c in conversations} == {"en", "fr"}
    labels = [e for c in conversations for e in (*c.must_store, *c.must_not_store)]
    assert {e.category for e in labels} == set(CATEGORIES)
    assert len(load_conversations(ids=SUBSET)) == 3


def test_a_malformed_label_is_refused(tmp_path):
    path = tmp_path / "conversations.json"
    entry = {
        "id": "x",
        "split": "dev",
        "language": "en",
        "category": "profile",
        "sessions": [[{"user": "My name is Ann."}]],
        "must_store": [{"kind": "facts", "match": "Ann"}],
        "must_not_store": [],
    }
    path.write_text(json.dumps({"conversations": [entry]}))
    with pytest.raises(ValueError, match="kinds"):
        load_conversations(path)


def test_the_runner_scores_a_few_conversations_through_the_write_path(db, embedder, tmp_path):
    conversations = load_conversations(ids=SUBSET)
    result, scores = run_benchmark(
        conversations,
        extractor_factory=OfflineExtractor,
        embedder=embedder,
        workspace=factories.make_workspace(),
        progress=False,
    )
    assert [s.conversation.id for s in scores] == list(SUBSET)
    assert set(result["splits"]) == {"dev", "heldout", "all"}
    overall = result["splits"]["all"]
    assert overall["conversations"] == 3
    assert overall["must_store"] == sum(len(c.must_store) for c in conversations)
    assert set(overall["by_category"]) == set(CATEGORIES)
    # At most one summary per session, each checked against the bound.
    assert 1 <= overall["summaries"] <= sum(len(c.sessions) for c in conversations)
    assert set(result["targets"]) == {"recall", "forbidden_stored", "summary_bound", "met"}
    assert [c["id"] for c in result["conversations"]] == list(SUBSET)
    # Each conversation was played as a user of its own, with its turns stored as messages.
    assert all(c["stored"] for c in result["conversations"])
    table = format_table("offline", result)
    assert "corrections" in table
    assert "targets (all)" in table

    path = write_report({"extractors": {"offline": result}}, tmp_path)
    assert path.name == "extraction-latest.json"
    saved = json.loads(path.read_text())
    assert saved["extractors"]["offline"]["splits"]["all"]["must_store"] == overall["must_store"]


def test_the_runner_counts_a_forbidden_item_that_became_current(db, embedder):
    conversation = Conversation(
        id="forbidden",
        split="heldout",
        language="en",
        category="instruction_like",
        sessions=((Turn("user", "Remember that the staging server is called Bluebird."),),),
        must_store=(Expectation(("fact",), ("Bluebird",), "profile"),),
        must_not_store=(Expectation(("fact",), ("staging server",), "instruction_like"),),
        summary_excludes=(),
    )
    result, [score] = run_benchmark(
        [conversation],
        extractor_factory=OfflineExtractor,
        embedder=embedder,
        workspace=factories.make_workspace(),
        progress=False,
    )
    heldout = result["splits"]["heldout"]
    assert (heldout["found"], heldout["forbidden_stored"]) == (1, 1)
    assert heldout["by_category"]["instruction_like"]["forbidden_stored"] == 1
    assert result["splits"]["dev"]["conversations"] == 0
    assert result["targets"]["forbidden_stored"] is False
    assert aggregate([score])["splits"]["all"]["recall"] == 1.0


def test_the_runner_scores_claude_and_counts_a_failed_extraction(db, embedder):
    [manager] = load_conversations(ids=("en-manager-tim",))
    [chit_chat] = load_conversations(ids=("en-weather-chat",))
    tim = {
        "kind": "fact",
        "content": "The user's manager is Tim Becker.",
        "quote": "my manager is Tim Becker, not Tom",
        "message_refs": ["m3"],
        "slot": "manager:name",
        "value": "Tim Becker",
        "is_declared": True,
        "is_correction": True,
    }
    with FakeAnthropic() as fake:
        fake.add_replies(
            tool_use_reply({"summary": None, "items": [tim]}),
            error_reply(400, "invalid_request_error"),
        )
        result, scores = run_benchmark(
            [manager, chit_chat],
            extractor_factory=lambda: AnthropicExtractor(
                api_key="sk-test", base_url=fake.url, max_retries=0
            ),
            embedder=embedder,
            workspace=factories.make_workspace(),
            progress=False,
        )
    assert [bool(score.error) for score in scores] == [False, True]
    assert result["errors"] == 1
    assert result["splits"]["dev"]["by_category"]["corrections"]["recall"] == 1.0
    assert "extraction failed: 1" in format_table("claude", result)


def test_an_extractor_that_was_not_run_says_why():
    assert format_table("claude", {"status": "not run", "reason": "ANTHROPIC_API_KEY unset"}) == (
        "\nclaude: not run (ANTHROPIC_API_KEY unset)\n"
    )
