import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench.baselines import BM25Retriever, MiniLMCosineRetriever, load_minilm, tokenize
from bench.locomo import (
    DEFAULT_DATA_PATH,
    Conversation,
    clean_evidence,
    load_locomo,
    main,
    run_benchmark,
)


def locomo_sample() -> dict[str, Any]:
    """One conversation shaped like a LoCoMo item, with the quirks of the real file."""
    return {
        "sample_id": "conv-1",
        "conversation": {
            "speaker_a": "Alice",
            "speaker_b": "Bob",
            # Sessions out of order, and a date with no session (as in conv-26).
            "session_10_date_time": "12:05 am on 1 January, 2024",
            "session_10": [
                {"speaker": "Bob", "dia_id": "D10:1", "text": "Happy new year, Alice!"},
            ],
            "session_2_date_time": "1:56 pm on 8 May, 2023",
            "session_2": [
                {"speaker": "Alice", "dia_id": "D2:1", "text": "I adopted a puppy named Rex."},
                {
                    "speaker": "Bob",
                    "dia_id": "D2:2",
                    "text": "Look at my garden!",
                    "blip_caption": "a photo of red tulips",
                    "img_url": ["https://example.invalid/x.jpg"],
                },
            ],
            "session_11_date_time": "3:00 pm on 2 January, 2024",
        },
        "qa": [
            {
                "question": "What is the name of Alice's puppy?",
                "answer": "Rex",
                "evidence": ["D2:1"],
                "category": 4,
            },
            {
                "question": "What flowers grow in Bob's garden?",
                "answer": "tulips",
                "evidence": ["D2:2; D2:2", "D:10:1"],
                "category": 1,
            },
            {
                "question": "In which year did Bob greet Alice?",
                "answer": 2024,
                "evidence": ["D10:1"],
                "category": 2,
            },
            {"question": "Would Bob like cats?", "answer": "Likely", "evidence": [], "category": 3},
            {
                "question": "Who has no puppy?",
                "answer": "Bob",
                "evidence": ["D7:7", "D"],
                "category": 3,
            },
            {
                "question": "What is the name of Bob's puppy?",
                "adversarial_answer": "Rex",
                "evidence": ["D2:1"],
                "category": 5,
            },
        ],
    }


@pytest.fixture
def locomo_file(tmp_path: Path) -> Path:
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([locomo_sample()]))
    return path


@pytest.fixture
def conversation(locomo_file) -> Conversation:
    [conversation] = load_locomo(locomo_file)
    return conversation


class OracleRetriever:
    """Ranks the evidence turns first: every score it earns must be perfect."""

    name = "oracle"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []
        self.conversations: dict[str, Conversation] = {}

    def index(self, conversation: Conversation) -> None:
        self.conversations[conversation.id] = conversation

    def search(self, conversation_id: str, query: str, k: int) -> list[str]:
        self.calls.append((conversation_id, query, k))
        conversation = self.conversations[conversation_id]
        question = next(q for q in conversation.questions if q.question == query)
        others = [t.dia_id for t in conversation.turns if t.dia_id not in question.evidence]
        return [*question.evidence, *others][:k]


def test_load_locomo_makes_one_memory_per_turn_with_speaker_and_photo_caption(conversation):
    assert conversation.id == "conv-1"
    assert conversation.speakers == ("Alice", "Bob")
    assert [t.text for t in conversation.turns] == [
        "Alice: I adopted a puppy named Rex.",
        "Bob: Look at my garden! [shares a photo: a photo of red tulips]",
        "Bob: Happy new year, Alice!",
    ]
    assert conversation.turns[1].speaker == "Bob"
    assert {t.conversation_id for t in conversation.turns} == {"conv-1"}


def test_load_locomo_orders_sessions_by_number_and_skips_dates_without_a_session(conversation):
    assert [(t.dia_id, t.session_no) for t in conversation.turns] == [
        ("D2:1", 2),
        ("D2:2", 2),
        ("D10:1", 10),
    ]


def test_load_locomo_dates_each_turn_with_its_session_date(conversation):
    assert [t.occurred_at for t in conversation.turns] == [
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        datetime(2024, 1, 1, 0, 5, tzinfo=UTC),
    ]


@pytest.mark.parametrize(
    ("raw", "cleaned"),
    [
        (["D1:3"], ("D1:3",)),
        (["D:11:26"], ("D11:26",)),
        (["D8:6; D9:17"], ("D8:6", "D9:17")),
        (["D9:1 D4:4 D4:6"], ("D9:1", "D4:4", "D4:6")),
        (["D30:05"], ("D30:5",)),
        (["D1:18", "D", "D1:20"], ("D1:18", "D1:20")),
        (["D2:1", "D2:1; D3:1"], ("D2:1", "D3:1")),
        ([], ()),
    ],
)
def test_clean_evidence_normalises_malformed_ids(raw, cleaned):
    assert clean_evidence(raw) == cleaned


def test_load_locomo_keeps_questions_verbatim_with_cleaned_evidence(conversation):
    by_question = {q.question: q for q in conversation.questions}

    assert by_question["What flowers grow in Bob's garden?"].evidence == ("D2:2", "D10:1")
    assert by_question["What flowers grow in Bob's garden?"].category == 1
    # D7:7 names no turn of the conversation and "D" no turn at all.
    assert by_question["Who has no puppy?"].evidence == ()
    assert by_question["Would Bob like cats?"].evidence == ()


def test_load_locomo_reads_numeric_answers_as_text_and_absent_answers_as_empty(conversation):
    by_question = {q.question: q.answer for q in conversation.questions}

    assert by_question["In which year did Bob greet Alice?"] == "2024"
    assert by_question["What is the name of Bob's puppy?"] == ""


def test_default_data_path_is_the_shared_folder_beside_the_repo():
    expected = Path(__file__).resolve().parents[3] / "shared/benchmarks/locomo/locomo10.json"

    assert expected == DEFAULT_DATA_PATH


def test_run_benchmark_asks_every_question_with_evidence_verbatim(conversation):
    oracle = OracleRetriever()

    run_benchmark([conversation], [oracle], progress=False)

    assert oracle.calls == [
        ("conv-1", "What is the name of Alice's puppy?", 10),
        ("conv-1", "What flowers grow in Bob's garden?", 10),
        ("conv-1", "In which year did Bob greet Alice?", 10),
        ("conv-1", "What is the name of Bob's puppy?", 10),
    ]


def test_run_benchmark_scores_a_perfect_retriever_at_one_and_reports_exclusions(conversation):
    result = run_benchmark([conversation], [OracleRetriever()], progress=False)

    assert result["dataset"] == {
        "name": "LoCoMo",
        "conversations": 1,
        "turns": 3,
        "questions": 6,
        "scored_questions": 4,
        "excluded_no_evidence": {"3": 2},
    }
    groups = result["retrievers"]["oracle"]["groups"]
    assert set(groups["1-4"]["metrics"].values()) == {1.0}


def test_run_benchmark_reports_adversarial_questions_apart_from_codes_1_to_4(conversation):
    result = run_benchmark([conversation], [OracleRetriever()], progress=False)

    groups = result["retrievers"]["oracle"]["groups"]
    assert list(groups) == ["1", "2", "4", "1-4", "5"]
    assert [(g["label"], g["n"]) for g in groups.values()] == [
        ("multi-hop", 1),
        ("temporal", 1),
        ("single-hop", 1),
        ("all", 3),
        ("adversarial", 1),
    ]


def test_run_benchmark_runs_several_retrievers_on_the_same_questions(conversation):
    result = run_benchmark([conversation], [BM25Retriever(), OracleRetriever()], progress=False)

    bm25, oracle = result["retrievers"]["bm25"], result["retrievers"]["oracle"]
    assert [g["n"] for g in bm25["groups"].values()] == [g["n"] for g in oracle["groups"].values()]


def test_run_benchmark_refuses_a_depth_below_the_ten_the_metrics_read(conversation):
    with pytest.raises(ValueError, match="at least 10"):
        run_benchmark([conversation], [OracleRetriever()], k=5, progress=False)


def test_tokenize_lowercases_and_splits_on_anything_but_word_characters():
    assert tokenize("Bob: Look at MY garden! [it's 2023]") == [
        "bob",
        "look",
        "at",
        "my",
        "garden",
        "it",
        "s",
        "2023",
    ]


def test_bm25_retriever_ranks_the_turn_sharing_the_query_words_first(conversation):
    retriever = BM25Retriever()
    retriever.index(conversation)

    ranked = retriever.search("conv-1", "Which flowers are in the garden?", k=10)

    assert ranked[0] == "D2:2"
    assert sorted(ranked) == ["D10:1", "D2:1", "D2:2"]


def test_bm25_retriever_returns_at_most_k_turns(conversation):
    retriever = BM25Retriever()
    retriever.index(conversation)

    assert len(retriever.search("conv-1", "puppy", k=2)) == 2


def test_minilm_retriever_ranks_the_turn_closest_in_meaning_first(conversation):
    retriever = MiniLMCosineRetriever(load_minilm())
    retriever.index(conversation)

    assert retriever.search("conv-1", "Which dog did Alice get?", k=10)[0] == "D2:1"
    assert retriever.search("conv-1", "Bob's plants", k=1) == ["D2:2"]


def test_cli_prints_the_table_and_writes_the_results(locomo_file, tmp_path, capsys):
    out = tmp_path / "results" / "locomo.json"

    code = main(
        ["--data", str(locomo_file), "--out", str(out), "--retriever", "bm25", "--no-progress"]
    )

    assert code == 0
    printed = capsys.readouterr().out
    assert "LoCoMo (locomo.json): 1 conversations, 3 turns, 6 questions, 4 scored" in printed
    assert "1-4 all" in printed
    saved = json.loads(out.read_text())
    assert list(saved["retrievers"]) == ["bm25"]
    assert saved["retrievers"]["bm25"]["groups"]["1-4"]["n"] == 3


def test_cli_stops_with_a_clear_error_when_the_data_file_is_missing(tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["--data", str(tmp_path / "absent.json"), "--retriever", "bm25"])

    assert stopped.value.code == 2
    assert "no LoCoMo file at" in capsys.readouterr().err


needs_real_locomo = pytest.mark.skipif(
    not DEFAULT_DATA_PATH.is_file(), reason="LoCoMo is not in the shared folder"
)


@needs_real_locomo
def test_real_locomo_has_10_conversations_and_1536_scorable_questions_in_codes_1_to_4():
    conversations = load_locomo()
    questions = [q for c in conversations for q in c.questions]

    assert len(conversations) == 10
    assert len(questions) == 1986
    assert sum(1 for q in questions if q.category <= 4 and q.evidence) == 1536
    assert [q.category for q in questions if not q.evidence] == [3, 3, 3, 3]
    assert sum(1 for q in questions if q.category == 5) == 446


@needs_real_locomo
def test_real_locomo_bm25_matches_the_product_owners_recall_at_10():
    result = run_benchmark(load_locomo(), [BM25Retriever()], progress=False)

    headline = result["retrievers"]["bm25"]["groups"]["1-4"]
    assert headline["n"] == 1536
    assert headline["metrics"]["recall_at_10"] == pytest.approx(0.509, abs=0.01)


def test_run_benchmark_reports_tuning_and_held_out_conversations_apart(conversation):
    # Ten conversations (the whole of LoCoMo): the first five are where recall was tuned.
    # A retriever that is perfect on them and useless on the rest shows it in the splits.
    conversations = [dataclasses.replace(conversation, id=f"conv-{n}") for n in range(1, 11)]

    class TunedOnFirstFive(OracleRetriever):
        def search(self, conversation_id: str, query: str, k: int) -> list[str]:
            ranked = super().search(conversation_id, query, k)
            return ranked if int(conversation_id.split("-")[1]) <= 5 else []

    result = run_benchmark(conversations, [TunedOnFirstFive()], progress=False)
    splits = result["retrievers"]["oracle"]["splits"]
    tuning, held_out = splits.values()
    assert list(splits) == ["conversations 1-5 (tuning)", "conversations 6-10 (held out)"]
    assert tuning["1-4"]["n"] == held_out["1-4"]["n"] == 5 * 3
    assert tuning["1-4"]["metrics"]["recall_at_10"] == 1.0
    assert held_out["1-4"]["metrics"]["recall_at_10"] == 0.0
    assert result["retrievers"]["oracle"]["groups"]["1-4"]["metrics"]["recall_at_10"] == 0.5


def test_run_benchmark_has_no_splits_for_part_of_the_dataset(conversation):
    result = run_benchmark([conversation], [OracleRetriever()], progress=False)
    assert "splits" not in result["retrievers"]["oracle"]
