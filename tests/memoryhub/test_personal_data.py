from __future__ import annotations

import dataclasses
import importlib
import re
import string
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memoryhub.personal_data import (
    _KEYWORDS,
    PersonalDataCategory,
    ScrubResult,
    scrub_personal_data,
    tag_personal_data,
)

NAME = PersonalDataCategory.NAME
CONTACT = PersonalDataCategory.CONTACT
ADDRESS = PersonalDataCategory.ADDRESS
FINANCIAL = PersonalDataCategory.FINANCIAL
HEALTH = PersonalDataCategory.HEALTH
OTHER = PersonalDataCategory.OTHER

# (text, category it must be tagged with), English and French for every category.
TAGGED = [
    ("My name is Alice Martin", NAME),
    ("my wife's name is Claire", NAME),
    ("I'm called Bob", NAME),
    ("Je m'appelle Alice", NAME),
    ("je m’appelle Hélène Dupont", NAME),
    ("Mon prénom est Théo", NAME),
    ("Ma fille s'appelle Léa", NAME),
    ("Reach me at alice.martin@example.com", CONTACT),
    ("Call 06 12 34 56 78 after lunch", CONTACT),
    ("Mon numéro : 06.12.34.56.78", CONTACT),
    ("Portable 0612345678", CONTACT),
    ("Son numéro est le +33 6 12 34 56 78", CONTACT),
    ("+33 (0)1 23 45 67 89", CONTACT),
    ("Office line (555) 123-4567", CONTACT),
    ("Cell 555-123-4567", CONTACT),
    ("London office +44 20 7946 0958", CONTACT),
    ("my email is on the profile page", CONTACT),
    ("Mon numéro de téléphone a changé", CONTACT),
    ("Ship to 12 rue de la Paix", ADDRESS),
    ("Livraison au 5 bis avenue des Champs-Élysées", ADDRESS),
    ("Rendez-vous 3 cours Mirabeau", ADDRESS),
    ("Lives at 221B Baker Street", ADDRESS),
    ("I live at 5 oak street", ADDRESS),
    ("Moved to 75002 Paris last year", ADDRESS),
    ("J'habite à Lyon", ADDRESS),
    ("My home address changed", ADDRESS),
    ("Office in Springfield, IL 62704", ADDRESS),
    ("Based in London NW1 6XE", ADDRESS),
    ("IBAN FR76 3000 6000 0112 3456 7890 189", FINANCIAL),
    ("Wire to GB82WEST12345698765432", FINANCIAL),
    ("Card 4111 1111 1111 1111", FINANCIAL),
    ("Card 4111-1111-1111-1111", FINANCIAL),
    ("Amex 378282246310005", FINANCIAL),
    ("my salary is 52k", FINANCIAL),
    ("Opened a bank account at BNP", FINANCIAL),
    ("Worried about mortgage payments", FINANCIAL),
    ("Mon salaire a augmenté", FINANCIAL),
    ("Cherche un prêt immobilier", FINANCIAL),
    ("I'm allergic to peanuts", HEALTH),
    ("Was diagnosed with ADHD", HEALTH),
    ("Takes 20 mg of sertraline daily", HEALTH),
    ("She is pregnant", HEALTH),
    ("Sees a therapist on Tuesdays", HEALTH),
    ("Has high blood pressure", HEALTH),
    ("Diabète de type 2", HEALTH),
    ("Allergie aux arachides", HEALTH),
    ("Je suis enceinte", HEALTH),
    ("Sous antidépresseurs depuis mars", HEALTH),
    ("I'm Muslim", OTHER),
    ("Goes to church on Sundays", OTHER),
    ("Keeps political views private", OTHER),
    ("I'm gay", OTHER),
    ("Her birthday is on 3 May", OTHER),
    ("Date of birth: 1990-05-03", OTHER),
    ("Birthdate 1990-05-03", OTHER),
    ("SSN 123-45-6789", OTHER),
    ("Passport number 12AB34567", OTHER),
    ("NI number AB 12 34 56 C", OTHER),
    ("Je suis catholique", OTHER),
    ("Né le 3 mai 1990", OTHER),
    ("Numéro de sécurité sociale à fournir", OTHER),
    ("NIR 1 85 05 78 006 084 91", OTHER),
    ("Vote de gauche depuis toujours", OTHER),
]

# (text, category it must not be tagged with): near misses for every category.
NOT_TAGGED = [
    ("The app is called Notion", NAME),
    ("Le projet s'appelle Apollo", NAME),
    ("The project name is Apollo", NAME),
    ("Call me tomorrow", NAME),
    ("I'll email the team", CONTACT),
    ("My phone is an iPhone 15", CONTACT),
    ("Timezone is Europe/Paris (UTC+1)", CONTACT),
    ("Meeting on 2024-05-01", CONTACT),
    ("Le 01.02.2024 10:30", CONTACT),
    ("Order 12345678 shipped", CONTACT),
    ("Version 1.2.3.4", CONTACT),
    ("2 cours de yoga par semaine", ADDRESS),
    ("Réserver 1 place de parking", ADDRESS),
    ("Walked 3 blocks down the street", ADDRESS),
    ("Je vis en couple", ADDRESS),
    ("Mon adresse e-mail a changé", ADDRESS),
    ("J'ai acheté 3 BD de Tintin", ADDRESS),
    ("9 Supreme Court justices ruled", ADDRESS),
    ("Bought a 2 TB Hard Drive", ADDRESS),
    ("Ordered 3 slots for €120", FINANCIAL),
    ("Order 4111 1111 1111 1112 shipped", FINANCIAL),
    ("Technical debt is high", FINANCIAL),
    ("Réduire la dette technique", FINANCIAL),
    ("Ordered prime rib", FINANCIAL),
    ("Loans books to colleagues", FINANCIAL),
    ("ISBN 978-3-16-148410-0", FINANCIAL),
    ("Between 2019 2020 and 2021", FINANCIAL),
    ("Reviewed the side effects of the refactor", HEALTH),
    ("Bought an enceinte bluetooth", HEALTH),
    ("Tension in the team", HEALTH),
    ("Studies medicine in Lyon", HEALTH),
    ("Christian from accounting joined", OTHER),
    ("We voted for the blue logo", OTHER),
    ("La porte de droite", OTHER),
    ("Joined the European Union project", OTHER),
    ("A newborn feature", OTHER),
]

# Ordinary text: no tag at all, and scrubbing leaves it exactly as it was.
ORDINARY = [
    "prefers three time slots",
    "Meeting on 2024-05-01 at 14:30",
    "Ordered 3 slots for €120",
    "Budget 2024: 1 200 € per month",
    "Prend le train de 8h12 le 01/05/2024",
    "Le rendez-vous est à 14h30",
    "Uses Python 3.11 and Django 5.2",
    "Version 10.4.2 shipped on 2024-05-01",
    "2 cours de yoga par semaine",
    "Réserver 1 place de parking",
    "Wants dark mode and a weekly summary",
    "Room 12, building B, floor 3",
    "Between 9:00 and 17:00 on weekdays",
    "Scored 98 out of 100 in 2023",
    "Le projet s'appelle Apollo",
    "Prefers the 6:30 train, seat 42",
    "Sprint 14 ends on 31/12/2024 at 18:00",
    "Booked flight AF1234 on 2024-06-12",
    "Vol AF 1234 le 12/06/2024",
    "Commande n° 123456 livrée vendredi",
    "Le budget du projet est de 20 000 €",
    "The server IP is 192.168.1.10",
    "Paid 1 299,99 € for the laptop",
    "Called 3 times between 08:00 and 09:30",
    "Rendez-vous le 03/04/2025 à 10:00",
    "Le train de 17h42 pour Lyon Part-Dieu",
    "Car is a 2018 Toyota Corolla",
]

# (text, known names, scrubbed text)
SCRUBBED = [
    ("Email me at alice@example.com", (), "Email me at [email]"),
    ("Appelle-moi au 06 12 34 56 78 demain", (), "Appelle-moi au [phone] demain"),
    ("Call (555) 123-4567 or +33 6 12 34 56 78.", (), "Call [phone] or [phone]."),
    ("Card 4111 1111 1111 1111 expires 12/27", (), "Card [card] expires 12/27"),
    ("Pay to FR76 3000 6000 0112 3456 7890 189 today", (), "Pay to [iban] today"),
    ("SSN 123-45-6789 on file", (), "SSN [id-number] on file"),
    ("Ship to 12 rue de la Paix, 75002 Paris", (), "Ship to [address], [address]"),
    ("I live at 221B Baker Street.", (), "I live at [address]."),
    ("Mon adresse : 3 allée des Tilleuls, 69003 Lyon", (), "Mon adresse : [address]"),
    ("Numéro de passeport : 12AB34567", (), "Numéro de passeport : [id-number]"),
    ("NIR 1 85 05 78 006 084 91 à jour", (), "NIR [id-number] à jour"),
    (
        "Je m'appelle Hélène, mon IBAN est FR76 3000 6000 0112 3456 7890 189",
        (),
        "Je m'appelle [name], mon IBAN est [iban]",
    ),
    ("My name is Alice Martin and I like tea", (), "My name is [name] and I like tea"),
    ("Alice Martin met Bob", ("Alice Martin",), "[name] met Bob"),
    ("martin called; ALICE's cat", ("Alice Martin",), "[name] called; [name]'s cat"),
    ("Hélène said hi", ("Helene Dupont",), "[name] said hi"),
    ("Helene said hi", ("Hélène",), "[name] said hi"),
    ("He\u0301le\u0300ne said hi", ("Hélène",), "[name] said hi"),
    ("Malice and Martine", ("Alice Martin",), "Malice and Martine"),
    ("Marie des Neiges likes des fruits", ("Marie des Neiges",), "[name] likes des fruits"),
    ("Pierre said so", ("Jean-Pierre Dupont",), "[name] said so"),
    ("Al's note", ("Al",), "[name]'s note"),
    ("Sent to O’Brien", ("Sean O'Brien",), "Sent to [name]"),
    ("Call +100 000 001 0000 000", (), "Call [phone] 000"),
    ("Card 4111 1111 1111 1111 12 slots", (), "Card [card] 12 slots"),
    ("Slots 12 4111111111111111", (), "Slots 12 [card]"),
]

CONTACT_TEXT = "alice@example.com, bob@example.org and 06 12 34 56 78"


@pytest.mark.parametrize(("text", "category"), TAGGED)
def test_tag_personal_data_finds_the_category(text, category):
    assert category in tag_personal_data(text)


@pytest.mark.parametrize(("text", "category"), NOT_TAGGED)
def test_tag_personal_data_ignores_near_misses(text, category):
    assert category not in tag_personal_data(text)


@pytest.mark.parametrize("text", ORDINARY)
def test_tag_personal_data_finds_nothing_in_ordinary_text(text):
    assert tag_personal_data(text) == frozenset()


@pytest.mark.parametrize(
    ("slot", "expected"),
    [("name", {NAME}), ("location", {ADDRESS}), ("Date-Of-Birth", {OTHER}), ("time_slot", set())],
)
def test_tag_personal_data_uses_the_slot(slot, expected):
    assert tag_personal_data("mornings", slot=slot) == expected


def test_tag_personal_data_combines_slot_and_text():
    tags = tag_personal_data("Lyon, allergic to pollen", slot="location")

    assert tags == {ADDRESS, HEALTH}


@pytest.mark.parametrize(("text", "known_names", "expected"), SCRUBBED)
def test_scrub_personal_data_replaces_findings_with_placeholders(text, known_names, expected):
    assert scrub_personal_data(text, known_names=known_names).text == expected


@pytest.mark.parametrize("text", ORDINARY)
def test_scrub_personal_data_keeps_ordinary_text_intact(text):
    result = scrub_personal_data(text, known_names=["Alice Martin"])

    assert result == ScrubResult(text=text, replacements={})


def test_scrub_personal_data_counts_replacements_by_category():
    result = scrub_personal_data(
        f"{CONTACT_TEXT}; Alice paid with 4111 1111 1111 1111", known_names=["Alice"]
    )

    assert result.replacements == {CONTACT: 3, NAME: 1, FINANCIAL: 1}


def test_scrub_personal_data_rescans_what_a_replacement_uncovered():
    # "+33alice@example.com" only becomes an email once the "m" of the first one is gone.
    result = scrub_personal_data("alice@example.com+33alice@example.com")

    assert result == ScrubResult(text="[email][email]", replacements={CONTACT: 2})


def test_scrub_personal_data_never_rewrites_a_placeholder():
    result = scrub_personal_data("[name] wrote to [email]", known_names=["name", "email"])

    assert result == ScrubResult(text="[name] wrote to [email]", replacements={})


def test_scrub_result_cannot_be_changed():
    result = scrub_personal_data(CONTACT_TEXT)

    with pytest.raises(dataclasses.FrozenInstanceError):
        result.text = CONTACT_TEXT  # type: ignore[misc]  # the assignment is what is tested
    with pytest.raises(TypeError):
        result.replacements[CONTACT] = 0  # type: ignore[index]  # so is this one


@pytest.mark.parametrize(
    "text",
    [text for text, _, _ in SCRUBBED] + [text for text, _ in TAGGED] + [CONTACT_TEXT],
)
def test_scrub_personal_data_is_idempotent_on_examples(text):
    once = scrub_personal_data(text, known_names=["Alice Martin", "Hélène"])
    twice = scrub_personal_data(once.text, known_names=["Alice Martin", "Hélène"])

    assert twice == ScrubResult(text=once.text, replacements={})


def luhn_check_digit(body: str) -> str:
    total = 0
    for position, digit in enumerate(reversed(body)):
        value = int(digit) * (1 if position % 2 else 2)
        total += value - 9 if value > 9 else value
    return str(-total % 10)


def digits(count: int) -> st.SearchStrategy[str]:
    return st.text(string.digits, min_size=count, max_size=count)


@st.composite
def cards(draw: st.DrawFn) -> str:
    length = draw(st.integers(min_value=13, max_value=19))
    body = draw(st.sampled_from("3456")) + draw(digits(length - 2))
    number = body + luhn_check_digit(body)
    separator = draw(st.sampled_from(["", " ", "-"]))
    return separator.join(number[start : start + 4] for start in range(0, len(number), 4))


@st.composite
def phones(draw: st.DrawFn) -> str:
    pairs = draw(st.lists(digits(2), min_size=4, max_size=4))
    separator = draw(st.sampled_from(["", " ", ".", "-"]))
    area, exchange, line = draw(digits(3)), draw(digits(3)), draw(digits(4))
    country = draw(st.integers(min_value=1, max_value=999))
    subscriber = draw(st.integers(min_value=1, max_value=9))
    return draw(
        st.sampled_from(
            [
                f"0{subscriber}{separator}{separator.join(pairs)}",
                f"+33 {subscriber} {' '.join(pairs)}",
                f"+33{subscriber}{''.join(pairs)}",
                f"+33 (0){subscriber} {' '.join(pairs)}",
                f"({area}) {exchange}-{line}",
                f"{area}-{exchange}-{line}",
                f"+1 {area} {exchange} {line}",
                f"+{country} {area} {exchange} {line}",
            ]
        )
    )


def assert_scrubbed_from_any_text(prefix: str, value: str, suffix: str) -> None:
    result = scrub_personal_data(f"{prefix} {value} {suffix}")

    assert value not in result.text
    assert result.replacements


@settings(max_examples=150, deadline=None)
@given(prefix=st.text(max_size=30), email=st.emails(), suffix=st.text(max_size=30))
def test_scrub_personal_data_removes_an_email_from_any_text(prefix, email, suffix):
    assert_scrubbed_from_any_text(prefix, email, suffix)


@settings(max_examples=150, deadline=None)
@given(prefix=st.text(max_size=30), card=cards(), suffix=st.text(max_size=30))
def test_scrub_personal_data_removes_a_luhn_valid_card_from_any_text(prefix, card, suffix):
    assert_scrubbed_from_any_text(prefix, card, suffix)


@settings(max_examples=150, deadline=None)
@given(prefix=st.text(max_size=30), phone=phones(), suffix=st.text(max_size=30))
def test_scrub_personal_data_removes_a_phone_from_any_text(prefix, phone, suffix):
    assert_scrubbed_from_any_text(prefix, phone, suffix)


@settings(max_examples=300, deadline=None)
@given(
    text=st.lists(
        st.one_of(
            st.text(string.digits + " -+.()@[]", max_size=8),
            st.text(max_size=8),
            st.sampled_from(
                ["alice@example.com", "06 12 34 56 78", "4111 1111 1111 1111", "Alice"]
            ),
            st.sampled_from(["12 rue de la Paix", "[name]", "[card]", "My name is ", "I live at "]),
        ),
        max_size=12,
    ).map("".join)
)
def test_scrub_personal_data_is_idempotent_on_any_text(text):
    once = scrub_personal_data(text, known_names=["Alice Martin"])
    twice = scrub_personal_data(once.text, known_names=["Alice Martin"])

    assert twice == ScrubResult(text=once.text, replacements={})


# The regex parser's own tree (private modules, so typed Any): the only way to read a pattern.
_SRE: Any = importlib.import_module("re._constants")
_PARSER: Any = importlib.import_module("re._parser")


def _first_items(items: list[tuple[Any, Any]]) -> tuple[list[tuple[Any, Any]], bool]:
    """The items a sequence of a parsed pattern can start with, and whether it can be empty."""
    firsts: list[tuple[Any, Any]] = []
    for op, value in items:
        if op is _SRE.SUBPATTERN:
            found, can_be_empty = _first_items(value[3])
        elif op is _SRE.BRANCH:
            found, can_be_empty = [], False
            for branch in value[1]:
                more, empty = _first_items(branch)
                found, can_be_empty = found + more, can_be_empty or empty
        elif op in (_SRE.MAX_REPEAT, _SRE.MIN_REPEAT, _SRE.POSSESSIVE_REPEAT):
            found, can_be_empty = _first_items(value[2])
            can_be_empty = can_be_empty or value[0] == 0
        elif op in (_SRE.ASSERT, _SRE.ASSERT_NOT, _SRE.AT):
            found, can_be_empty = [], True
        else:
            found, can_be_empty = [(op, value)], False
        firsts += found
        if not can_be_empty:
            return firsts, False
    return firsts, True


def _is_word_start(op: Any, value: Any) -> bool:
    if op is _SRE.LITERAL:
        return re.fullmatch(r"\w", chr(value)) is not None
    return op is _SRE.IN and all(
        (item is _SRE.CATEGORY and argument is _SRE.CATEGORY_DIGIT)
        or (item is _SRE.LITERAL and re.fullmatch(r"\w", chr(argument)) is not None)
        for item, argument in value
    )


def test_every_keyword_phrase_starts_with_a_word_character() -> None:
    # The keyword patterns look ahead for a word character before trying their phrases (a fast
    # path on text without words): that changes no match only while every phrase starts with one.
    for category, pattern in _KEYWORDS.items():
        parsed = list(_PARSER.parse(pattern.pattern, pattern.flags))
        assert [op for op, _ in parsed[:2]] == [_SRE.ASSERT_NOT, _SRE.ASSERT]  # (?<!\w)(?=\w)
        firsts, can_be_empty = _first_items(parsed[2:3])  # The alternatives, (?:…|…).
        assert firsts, category
        assert not can_be_empty, category
        for op, value in firsts:
            assert _is_word_start(op, value), (category, op, value)
