"""The peer benchmark's pure parts: recall against exact, ratios, the report's shape, the
workload's questions and the Mem0 worker's offline environment. Mem0 is not installed here:
`make bench-peers` runs the real comparison."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.locomo import Conversation, Question, Turn
from bench.peers.mem0 import pick_questions, turn_key
from bench.peers.mem0_stack import worker_environment
from bench.peers.mem0_worker import REQUIRED_ENVIRONMENT, UNREACHABLE_LLM, answer
from bench.peers.report import (
    HIGHER_IS_BETTER,
    LOWER_IS_BETTER,
    evidence_recall,
    flat,
    format_report,
    mean_recall,
    ratios,
    recall_against,
    system_figures,
    throughput,
)


def test_recall_against_counts_the_exact_top_k_found():
    exact = [f"m{n}" for n in range(10)]
    assert recall_against(exact, exact) == 1.0
    assert recall_against(["m0", "m5", "other"], exact) == 0.2
    # The HNSW failure of issue 34: one result where the exact scan has ten.
    assert recall_against(["m3"], exact) == 0.1


def test_recall_against_reads_only_the_top_k_of_each():
    exact = ["a", "b", "c"]
    assert recall_against(["x", "a", "b"], exact, k=2) == 0.5  # "b" is third of what was found.


def test_recall_against_an_empty_exact_search_is_no_figure():
    assert recall_against(["a"], []) is None


def test_mean_recall_leaves_out_queries_the_exact_search_found_nothing_for():
    assert mean_recall([["a"], ["x"], ["y"]], [["a"], ["b"], []]) == 0.5
    assert mean_recall([["a"]], [[]]) is None


def test_mean_recall_refuses_lists_of_different_lengths():
    with pytest.raises(ValueError, match="zip"):
        mean_recall([["a"]], [["a"], ["b"]])


def test_evidence_recall_maps_texts_to_their_turns():
    turns_of = {"Ann: hi": ["c1/D1:1"], "Bo: yo": ["c1/D1:2", "c2/D1:2"]}
    found = [["Ann: hi", "unknown"], ["Bo: yo"], ["Ann: hi"]]
    evidence = [["c1/D1:1", "c1/D1:3"], ["c2/D1:2"], []]  # The last one has none: left out.
    assert evidence_recall(found, evidence, turns_of) == 0.75


def test_throughput_is_items_over_summed_seconds():
    assert throughput(count=100, seconds=[1.0, 1.0]) == 50.0
    assert throughput(count=0, seconds=[]) == 0.0


def _figures(*, per_second: float, p95: float, found: int, rss: float) -> dict:
    search = {
        "seconds": [p95 / 1000] * 4,
        "found": [[f"t{n}" for n in range(found)]] * 4,
        "recall_at_10": found / 10,
        "evidence_recall_at_10": 0.5,
    }
    return system_figures(
        single=[1 / per_second] * 4,
        batch_seconds=[1.0, 1.0],
        batch_count=int(2 * per_second),
        searches={"default": search, "exact": {**search, "recall_at_10": 1.0}},
        peak_rss_mb=rss,
    )


def test_system_figures_have_the_shape_the_report_and_readme_read():
    figures = _figures(per_second=50, p95=40, found=3, rss=600)
    assert set(figures) == {"add_one", "add_batch", "search", "peak_rss_mb"}
    assert figures["add_one"] == {
        "per_second": 50.0,
        "n": 4,
        "p50_ms": 20.0,
        "p95_ms": 20.0,
        "mean_ms": 20.0,
    }
    assert figures["add_batch"] == {"per_second": 50.0, "memories": 100, "calls": 2}
    assert set(figures["search"]) == {"default", "exact"}
    assert figures["search"]["default"]["results"] == 3
    assert figures["search"]["default"]["p95_ms"] == 40.0
    assert set(flat(figures)) >= {*HIGHER_IS_BETTER, *LOWER_IS_BETTER}


def test_ratios_are_memoryhub_over_mem0():
    memoryhub = _figures(per_second=200, p95=20, found=10, rss=300)
    mem0 = _figures(per_second=50, p95=40, found=1, rss=600)
    result = ratios(memoryhub, mem0)
    assert result["add_one_per_second"] == 4.0
    assert result["search_default_p95_ms"] == 0.5
    assert result["search_default_recall_at_10"] == 10.0
    assert result["peak_rss_mb"] == 0.5
    assert set(result) == {*HIGHER_IS_BETTER, *LOWER_IS_BETTER}


def test_a_ratio_over_a_missing_or_zero_figure_is_none():
    memoryhub = _figures(per_second=200, p95=20, found=10, rss=300)
    mem0 = _figures(per_second=50, p95=40, found=0, rss=600)
    mem0["search"]["default"]["recall_at_10"] = None
    result = ratios(memoryhub, mem0)
    assert result["search_default_recall_at_10"] is None
    assert result["search_default_results"] is None  # Mem0 found nothing: no ratio.


def test_the_table_names_both_systems_the_workload_and_the_load():
    memoryhub = _figures(per_second=200, p95=20, found=10, rss=300)
    mem0 = _figures(per_second=50, p95=40, found=1, rss=600)
    report = {
        "systems": {"memoryhub": memoryhub, "mem0": mem0},
        "ratios": ratios(memoryhub, mem0),
        "workload": {"memories": 100, "users": 3, "queries": 4},
        "machine": {"load_average": [1.0, 1.0, 1.0], "load_average_after": [2.0, 1.5, 1.0]},
    }
    table = format_report(report)
    assert "MemoryHub" in table
    assert "Mem0" in table
    assert "recall@10 vs exact" in table
    assert "load average [1.0, 1.0, 1.0]" in table


def _conversation(conversation_id: str, questions: int) -> Conversation:
    said = datetime(2023, 5, 8, tzinfo=UTC)
    turn = Turn(conversation_id, "D1:1", 1, "Ann", "Ann: hello", said)
    return Conversation(
        id=conversation_id,
        speakers=("Ann", "Bo"),
        turns=(turn,),
        questions=tuple(
            Question(conversation_id, f"{conversation_id} q{n}", 1 + n % 5, ("D1:1",), "")
            for n in range(questions)
        ),
    )


def test_pick_questions_takes_every_user_in_turn_and_groups_them():
    picked = pick_questions([_conversation("a", 10), _conversation("b", 2)], 8)
    # "b" has two questions to give, "a" the rest; "a q4" is of code 5 (adversarial): left out.
    assert [q.question for q in picked] == [
        *("a q0", "a q1", "a q2", "a q3", "a q5", "a q6"),
        *("b q0", "b q1"),
    ]


def test_turn_keys_tell_two_conversations_apart():
    assert turn_key("c1", "D1:1") != turn_key("c2", "D1:1")


def test_the_worker_is_started_offline_with_mem0s_telemetry_off(tmp_path: Path):
    environment = worker_environment(tmp_path)
    assert {k: environment[k] for k in REQUIRED_ENVIRONMENT} == REQUIRED_ENVIRONMENT
    assert environment["MEM0_DIR"] == str(tmp_path)
    assert environment["HOME"] == str(tmp_path)  # Mem0 writes nothing in the real home.
    assert not any(k.endswith("API_KEY") for k in environment)
    assert UNREACHABLE_LLM.startswith("http://127.0.0.1:")


def test_the_worker_answers_nothing_before_start():
    with pytest.raises(RuntimeError, match="start"):
        answer(None, {"op": "search", "user": "u", "queries": ["q"], "k": 10})
