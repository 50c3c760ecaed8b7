import os
import subprocess
import sys
from pathlib import Path

import pytest

from memoryhub import tokens
from memoryhub.tokens import Block, count_tokens, count_tokens_many, fit_to_budget


def words(count: int) -> str:
    # "word" is one WordPiece token, so n words are n tokens.
    return " ".join(["word"] * count)


def block(key: str, tokens: int, priority: int, *, is_droppable: bool = True) -> Block:
    return Block(key=key, text=words(tokens), priority=priority, is_droppable=is_droppable)


def test_count_tokens_counts_known_words_as_one_token_each():
    assert count_tokens("hello world") == 2


def test_count_tokens_splits_an_unseen_word_into_several_pieces():
    assert count_tokens("antidisestablishmentarianism") > 3
    assert count_tokens("zxqvbnmw") > 1


def test_count_tokens_adds_no_special_tokens():
    assert count_tokens("") == 0
    assert count_tokens("hello") == 1


def test_count_tokens_does_not_truncate_at_the_models_128_token_limit():
    assert count_tokens(words(500)) == 500


def test_tokenizer_loads_with_the_hub_offline_and_no_network():
    # A fresh process, so the tokenizer really loads here, with sockets made unusable.
    script = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise OSError('network access attempted')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "socket.getaddrinfo = refuse\n"
        "from memoryhub.tokens import count_tokens\n"
        "print(count_tokens('hello world'))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    completed = subprocess.run(  # noqa: S603 - fixed interpreter and script, no user input
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
        timeout=120,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "2"


def test_fit_to_budget_keeps_everything_that_fits():
    blocks = [block("rules", 5, 100, is_droppable=False), block("a", 3, 1), block("b", 2, 2)]

    result = fit_to_budget(blocks, 10)

    assert result.kept == tuple(blocks)
    assert result.dropped == ()
    assert result.total_tokens == 10
    assert not result.is_over_budget


def test_fit_to_budget_drops_lowest_priority_first_and_keeps_original_order():
    blocks = [
        block("rules", 4, 100, is_droppable=False),
        block("high", 3, 9),
        block("low", 3, 1),
        block("middle", 3, 5),
        block("message", 2, 100, is_droppable=False),
    ]

    result = fit_to_budget(blocks, 10)

    assert result.dropped == ("low", "middle")
    assert [kept.key for kept in result.kept] == ["rules", "high", "message"]
    assert result.total_tokens == 9
    assert not result.is_over_budget


def test_fit_to_budget_stops_dropping_as_soon_as_the_total_fits():
    blocks = [block("a", 5, 1), block("b", 5, 2), block("c", 5, 3)]

    result = fit_to_budget(blocks, 10)

    assert result.dropped == ("a",)
    assert result.total_tokens == 10


def test_fit_to_budget_drops_the_later_block_first_among_equal_priorities():
    blocks = [block("first", 3, 1), block("second", 3, 1), block("third", 3, 1)]

    result = fit_to_budget(blocks, 6)

    assert result.dropped == ("third",)
    assert [kept.key for kept in result.kept] == ["first", "second"]


def test_fit_to_budget_never_drops_a_block_that_is_not_droppable():
    blocks = [
        block("rules", 8, 0, is_droppable=False),
        block("recall", 1, 50),
        block("message", 6, 0, is_droppable=False),
    ]

    result = fit_to_budget(blocks, 5)

    assert [kept.key for kept in result.kept] == ["rules", "message"]
    assert result.dropped == ("recall",)
    assert result.total_tokens == 14
    assert result.is_over_budget


def test_fit_to_budget_does_not_readd_a_lower_priority_block_after_a_bigger_one_goes():
    blocks = [block("small_low", 2, 1), block("big_high", 20, 2)]

    result = fit_to_budget(blocks, 5)

    assert result.dropped == ("small_low", "big_high")
    assert result.kept == ()
    assert result.total_tokens == 0


def test_fit_to_budget_counts_real_tokens_not_characters():
    blocks = [Block(key="a", text="hello world", priority=1, is_droppable=True)]

    assert fit_to_budget(blocks, 2).kept == tuple(blocks)
    assert fit_to_budget(blocks, 1).dropped == ("a",)


def test_fit_to_budget_rejects_a_negative_budget():
    with pytest.raises(ValueError, match="negative"):
        fit_to_budget([block("a", 1, 1)], -1)


def test_fit_to_budget_rejects_duplicate_keys():
    with pytest.raises(ValueError, match="unique"):
        fit_to_budget([block("a", 1, 1), block("a", 1, 2)], 10)


def test_a_long_text_counts_the_same_when_its_count_is_remembered():
    words, brackets = "hello world " * 200, "[" * 2400  # Each over CACHED_MIN_CHARS.
    assert count_tokens_many([words, brackets, "short"]) == [400, 2400, 1]
    assert count_tokens_many([brackets, words + "hello"]) == [2400, 401]
    assert count_tokens_many([brackets, words]) == [2400, 400]


def test_remembered_counts_are_bounded_and_hold_no_text(monkeypatch):
    monkeypatch.setattr(tokens, "CACHED_COUNTS", 3)
    texts = [f"memory {n} " + "word " * 300 for n in range(5)]
    assert count_tokens_many(texts) == [302] * 5  # "memory", the number, 300 words.
    assert len(tokens._COUNTS) == 3
    assert all(isinstance(key, bytes) and len(key) == 16 for key in tokens._COUNTS)
