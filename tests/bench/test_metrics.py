import json
import math

import pytest

from bench.metrics import (
    BenchmarkResult,
    DatasetSummary,
    QueryScores,
    RetrieverResult,
    format_table,
    group_result,
    score_query,
    summarise,
    summarise_by_category,
    write_results,
)

# Twelve turns over three sessions: D1:1-4, D2:1-4, D3:1-4.
SESSION_OF = {f"D{s}:{t}": s for s in (1, 2, 3) for t in (1, 2, 3, 4)}


def test_score_query_gives_full_marks_when_the_only_evidence_turn_ranks_first():
    scores = score_query(["D2:1", "D1:1", "D1:2"], ["D2:1"], SESSION_OF)

    assert scores == QueryScores(
        recall_at_5=1.0,
        recall_at_10=1.0,
        recall_any_at_5=1.0,
        recall_any_at_10=1.0,
        recall_all_at_5=1.0,
        recall_all_at_10=1.0,
        ndcg_at_10=1.0,
        mrr_at_10=1.0,
        session_recall_at_5=1.0,
        session_recall_at_5_distinct=1.0,
    )


def test_score_query_recall_is_the_share_of_evidence_turns_found():
    ranked = ["D1:1", "D1:2", "D2:1", "D1:3", "D1:4"]

    scores = score_query(ranked, ["D2:1", "D3:4"], SESSION_OF)

    assert scores.recall_at_5 == 0.5
    assert scores.recall_any_at_5 == 1.0
    assert scores.recall_all_at_5 == 0.0
    assert scores.mrr_at_10 == pytest.approx(1 / 3)
    assert scores.ndcg_at_10 == pytest.approx((1 / math.log2(4)) / (1 + 1 / math.log2(3)))


def test_score_query_counts_an_evidence_turn_at_rank_7_in_the_top_10_only():
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4", "D2:2", "D2:3", "D3:1", "D2:4"]

    scores = score_query(ranked, ["D3:1"], SESSION_OF)

    assert (scores.recall_at_5, scores.recall_at_10) == (0.0, 1.0)
    assert (scores.recall_any_at_5, scores.recall_any_at_10) == (0.0, 1.0)
    assert (scores.recall_all_at_5, scores.recall_all_at_10) == (0.0, 1.0)
    assert scores.mrr_at_10 == pytest.approx(1 / 7)


def test_score_query_gives_zeros_when_no_evidence_turn_is_ranked():
    scores = score_query(["D1:1", "D1:2"], ["D3:3"], SESSION_OF)

    assert set(vars(scores).values()) == {0.0}


def test_score_query_ignores_turns_past_the_tenth():
    ranked = [f"D1:{t}" for t in (1, 2, 3, 4)] + [f"D2:{t}" for t in (1, 2, 3, 4)]
    ranked += ["D3:1", "D3:2", "D3:3"]

    scores = score_query(ranked, ["D3:3"], SESSION_OF)

    assert scores.recall_at_10 == 0.0
    assert scores.ndcg_at_10 == 0.0
    assert scores.mrr_at_10 == 0.0


def test_score_query_does_not_credit_a_repeated_turn_twice():
    scores = score_query(["D2:1", "D2:1", "D2:2"], ["D2:1", "D2:2"], SESSION_OF)

    assert scores.recall_at_5 == 1.0
    assert scores.ndcg_at_10 == pytest.approx(1.0)


def test_session_recall_counts_any_top_5_turn_from_an_evidence_session():
    scores = score_query(["D1:1", "D2:4"], ["D2:1"], SESSION_OF)

    assert scores.recall_any_at_5 == 0.0
    assert scores.session_recall_at_5 == 1.0


def test_distinct_session_recall_looks_past_turns_of_one_session():
    # Four of the top five turns are from session 1; session 3 is the third session met.
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4", "D2:1", "D3:2"]

    scores = score_query(ranked, ["D3:4"], SESSION_OF)

    assert scores.session_recall_at_5 == 0.0
    assert scores.session_recall_at_5_distinct == 1.0


def test_score_query_refuses_a_query_without_evidence():
    with pytest.raises(ValueError, match="evidence"):
        score_query(["D1:1"], [], SESSION_OF)


def test_summarise_by_category_averages_each_category_and_the_combined_group():
    hit = score_query(["D1:1"], ["D1:1"], SESSION_OF)
    miss = score_query(["D1:1"], ["D3:3"], SESSION_OF)

    summaries = summarise_by_category(
        [(1, hit), (1, miss), (2, hit), (5, miss)], combined={"1-4": (1, 2, 3, 4)}
    )

    assert list(summaries) == ["1", "2", "5", "1-4"]
    assert (summaries["1"].n, summaries["1"].mean.recall_at_10) == (2, 0.5)
    assert (summaries["2"].n, summaries["2"].mean.recall_at_10) == (1, 1.0)
    assert (summaries["5"].n, summaries["5"].mean.recall_at_10) == (1, 0.0)
    assert summaries["1-4"].n == 3
    assert summaries["1-4"].mean.mrr_at_10 == pytest.approx(2 / 3)


def test_summarise_of_no_queries_is_zero_with_n_zero():
    summary = summarise([])

    assert summary.n == 0
    assert summary.mean.recall_at_10 == 0.0


def example_result() -> BenchmarkResult:
    hit = score_query(["D1:1"], ["D1:1"], SESSION_OF)
    return BenchmarkResult(
        k=10,
        dataset=DatasetSummary(
            name="Tiny",
            conversations=1,
            turns=12,
            questions=3,
            scored_questions=2,
            excluded_no_evidence={"3": 1},
        ),
        retrievers={
            "bm25": RetrieverResult(
                seconds=1.25,
                groups={"4": group_result("single-hop", summarise([hit, hit]))},
            )
        },
    )


def test_format_table_shows_each_group_with_its_n_and_scores():
    table = format_table(example_result())

    assert "Tiny: 1 conversations, 12 turns, 3 questions, 2 scored" in table
    assert "category 3: 1" in table
    assert "bm25 (1.2 s)" in table
    row = next(line for line in table.splitlines() if line.startswith("4 single-hop"))
    assert row.split()[2:] == ["2"] + ["1.000"] * 10


def test_write_results_writes_json_that_reads_back_equal(tmp_path):
    path = tmp_path / "results" / "out.json"

    write_results(example_result(), path)

    assert json.loads(path.read_text()) == example_result()
