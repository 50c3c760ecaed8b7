"""Query terms for the blind index (queries/query_terms.py): stopwords out, word forms in."""

from __future__ import annotations

from memoryhub.queries.query_terms import query_terms, word_forms


def test_a_word_brings_its_inflections_itself_first():
    forms = word_forms("paint")
    assert forms[0] == "paint"
    assert {"paints", "painted", "painting", "painter"} <= set(forms)


def test_an_inflected_word_also_finds_its_stem():
    assert {"paint", "paints"} <= set(word_forms("painting"))
    assert "visit" in word_forms("visited")
    assert {"bake", "baking"} <= set(word_forms("baked")) | set(word_forms("bake"))
    assert "tomato" in word_forms("tomatoes")
    assert "book" in word_forms("books")


def test_short_words_are_left_alone():
    assert word_forms("cat") == ("cat",)
    assert word_forms("go") == ("go",)


def test_stopwords_leave_the_query_and_repeats_count_once():
    terms = query_terms("What did Caroline paint, and when did Caroline paint it?")
    assert [forms[0] for forms in terms] == ["caroline", "paint"]


def test_terms_are_normalised_like_the_blind_index():
    assert query_terms("ÉVA Müller")[0][0] == "eva"
    assert query_terms("ÉVA Müller")[1][0] == "muller"


def test_french_function_words_are_stopwords_too():
    terms = query_terms("Où est le restaurant de Camille ?")
    assert [forms[0] for forms in terms] == ["restaurant", "camille"]
    # Elisions, interrogatives and "est-ce que" leave only the words that carry the question.
    terms = query_terms("Quelle langue étrangère est-ce que j'étudie ?")
    assert [forms[0] for forms in terms] == ["langue", "etrangere", "etudie"]
    # Only function words: kept, as in English ("who is it").
    terms = query_terms("Qu'est-ce que vous avez fait chez moi ?")
    assert [forms[0] for forms in terms][-3:] == ["fait", "chez", "moi"]


def test_french_auxiliaries_are_stopwords_like_english_modals():
    english = query_terms("Where could my colleagues find me?")
    french = query_terms("Où est-ce que mes collègues peuvent me trouver ?")
    assert [forms[0] for forms in english] == ["colleagues", "find"]
    assert [forms[0] for forms in french] == ["collegues", "trouver"]
    assert [forms[0] for forms in query_terms("Je vais voyager, je voudrais partir")] == [
        "voyager",
        "partir",
    ]


def test_a_query_of_stopwords_only_keeps_them():
    assert [forms[0] for forms in query_terms("who is it")] == ["who", "is", "it"]


def test_a_query_without_words_has_no_terms():
    assert query_terms("?! …") == ()
