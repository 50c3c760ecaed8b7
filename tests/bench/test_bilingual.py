"""The bilingual benchmark's data: 160 questions in two halves, public distractors credited."""

from __future__ import annotations

import csv

from bench.bilingual import DISTRACTORS_FILE, SPLITS, load_distractors, load_facts


def test_every_fact_is_told_and_asked_in_both_languages_in_two_equal_halves():
    facts = load_facts()
    assert len(facts) * 2 >= 150
    for fact in facts:
        assert all(fact.text[lang] and fact.question[lang] for lang in ("en", "fr"))
        assert fact.text["en"] != fact.text["fr"]
    halves = [sum(fact.split == split for fact in facts) for split in SPLITS]
    assert halves[0] == halves[1]


def test_the_distractors_are_parallel_and_each_credits_its_tatoeba_sentences():
    distractors = load_distractors()
    assert len(distractors["en"]) == len(distractors["fr"]) == 150
    with DISTRACTORS_FILE.open(encoding="utf-8", newline="") as handle:
        for row in csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            assert row[2].startswith("CC-BY 2.0 (France) Attribution: tatoeba.org #")
