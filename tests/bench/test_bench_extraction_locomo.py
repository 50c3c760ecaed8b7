"""bench_extraction --locomo: observations as labels, and the Claude path against the fake API."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from bench.extraction.locomo import about_the_user, load_speaker_sessions, observation_kind
from tests.fake_anthropic import FakeAnthropic, tool_use_reply

# Our own text, in LoCoMo's shape: one session, two speakers, one observation each.
SAMPLE = {
    "sample_id": "conv-test",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a dog named Rex last week!"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice! I work as a nurse in Leeds."},
        ],
    },
    "observation": {
        "session_1_observation": {
            "Ann": [["Ann adopted a dog named Rex last week.", "D1:1"]],
            "Bob": [["Bob works as a nurse in Leeds.", "D1:2"]],
        }
    },
}


@pytest.fixture
def locomo_file(tmp_path):
    path = tmp_path / "locomo.json"
    # Five copies: the tuning part is conversations 1-5.
    path.write_text(json.dumps([SAMPLE] * 5))
    return path


def test_each_session_is_played_once_per_speaker(locomo_file):
    sessions = load_speaker_sessions((1,), locomo_file)
    assert [(s.speaker, [m.role for m in s.transcript.messages]) for s in sessions] == [
        ("Ann", ["user", "assistant"]),
        ("Bob", ["assistant", "user"]),
    ]
    assert sessions[0].observations[0].as_user == "The user adopted a dog named Rex last week."
    assert sessions[0].observations[0].evidence == ("D1:1",)
    with pytest.raises(ValueError, match="conversations 1-5"):
        load_speaker_sessions((6,), locomo_file)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Ann plans to visit Rome next month.", "open_item"),
        ("Ann loves hiking.", "preference"),
        ("Ann attended a concert.", "episode"),
        ("Ann is a nurse.", "fact"),
    ],
)
def test_an_observation_kind_is_read_from_its_wording(text, kind):
    assert observation_kind(text) == kind


def test_an_observation_is_worded_about_the_user():
    assert about_the_user("Ann's dog likes Annie.", "Ann Lee") == "The user's dog likes Annie."


def test_the_anthropic_extractor_without_a_key_says_so_and_exits(settings, locomo_file):
    settings.ANTHROPIC_API_KEY = None
    with pytest.raises(CommandError, match="ANTHROPIC_API_KEY is not set"):
        call_command(
            "bench_extraction", "--locomo", "--extractor", "anthropic", "--locomo-data", locomo_file
        )


def test_the_locomo_bench_runs_claude_through_the_messages_api(settings, locomo_file, tmp_path):
    rex = {
        "kind": "episode",
        "content": "The user adopted a dog named Rex last week.",
        "quote": "I adopted a dog named Rex last week",
        "message_refs": ["m1"],
        "event_type": "event",
    }
    out = StringIO()
    with FakeAnthropic() as fake:
        # Ann's session finds her observation; Bob's finds nothing.
        fake.add_replies(
            tool_use_reply({"summary": None, "items": [rex]}),
            tool_use_reply({"summary": None, "items": []}),
        )
        settings.ANTHROPIC_API_KEY = "sk-test"
        settings.ANTHROPIC_BASE_URL = fake.url
        settings.MEMORYHUB_LLM_MAX_RETRIES = 0
        call_command(
            "bench_extraction",
            "--locomo",
            "--extractor",
            "anthropic",
            "--conversations",
            "tuning",
            "--limit",
            "2",
            "--locomo-data",
            locomo_file,
            "--out",
            tmp_path,
            "--no-progress",
            stdout=out,
        )
        assert len(fake.requests) == 2
    assert "LoCoMo extraction, anthropic" in out.getvalue()
    report = json.loads((tmp_path / "extraction-locomo-anthropic.json").read_text())
    tuning = report["splits"]["tuning"]
    assert (tuning["observations"], tuning["found"], tuning["items"]) == (2, 1, 1)
    assert (tuning["recall"], tuning["precision"]) == (0.5, 1.0)
    assert tuning["by_kind"]["episode"]["recall"] == 1.0
    assert "held_out" not in report["splits"]
