"""Personal data in memory text: tag the categories it holds, and scrub it before review.

Detection is pattern-based (English and French) and tuned for precision: a false positive on
ordinary text (a year, a price, a time, an order quantity) is a bug, just as a miss is.
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from itertools import accumulate
from types import MappingProxyType

from memoryhub import text_patterns

Span = tuple[int, int]
Finder = Callable[[str], Iterator[Span]]


class PersonalDataCategory(StrEnum):
    """A kind of personal data; decides who may see a memory and what a deletion request hits."""

    NAME = "name"
    CONTACT = "contact"
    ADDRESS = "address"
    FINANCIAL = "financial"
    HEALTH = "health"
    OTHER = "other"


@dataclass(frozen=True)
class ScrubResult:
    """Scrubbed text, and how many findings of each category were replaced."""

    text: str
    replacements: Mapping[PersonalDataCategory, int]


# Each placeholder names what was removed; its category is what the review queue counts.
_PLACEHOLDER_CATEGORIES = {
    "email": PersonalDataCategory.CONTACT,
    "phone": PersonalDataCategory.CONTACT,
    "name": PersonalDataCategory.NAME,
    "address": PersonalDataCategory.ADDRESS,
    "card": PersonalDataCategory.FINANCIAL,
    "iban": PersonalDataCategory.FINANCIAL,
    "id-number": PersonalDataCategory.OTHER,
}
_PLACEHOLDER = text_patterns.compile(r"\[(?:" + "|".join(_PLACEHOLDER_CATEGORIES) + r")\]")


@dataclass(frozen=True)
class _Detector:
    placeholder: str
    find: Finder

    @property
    def category(self) -> PersonalDataCategory:
        return _PLACEHOLDER_CATEGORIES[self.placeholder]


def _is_anything(_: str) -> bool:
    return True


def _detector(
    placeholder: str,
    pattern: str,
    *,
    group: int = 0,
    is_valid: Callable[[str], bool] = _is_anything,
) -> _Detector:
    regex = text_patterns.compile(pattern)

    def find(text: str) -> Iterator[Span]:
        for match in regex.finditer(text):
            if match.group(group) is not None and is_valid(match.group(group)):
                yield match.span(group)

    return _Detector(placeholder, find)


def _digits(text: str) -> str:
    return "".join(char for char in text if char.isdecimal())


def _passes_luhn(digits: str) -> bool:
    total = 0
    for position, digit in enumerate(reversed(digits)):
        value = int(digit) * (2 if position % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def _is_iban(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def _has_valid_nir_key(candidate: str) -> bool:
    compact = candidate.replace(" ", "")
    # Corsican departments 2A/2B count as 19/18 in the control key.
    body = compact[:13].replace("2A", "19").replace("2B", "18")
    return 97 - int(body) % 97 == int(compact[13:])


def _has_digit(candidate: str) -> bool:
    return any(char.isdigit() for char in candidate)


# Straight or typographic; written as an escape so the source shows which one it is.
_APOSTROPHE = r"['\u2019]"
_CAPITALISED_WORD = r"[A-ZÀ-ÖØ-Þ][\w'\u2019-]*"

_EMAIL = (
    r"(?<![\w.!#$%&'*+/=?^`{|}~-])[\w.!#$%&'*+/=?^`{|}~-]+"
    r"@(?:[A-Za-z0-9-]+\.)+[A-Za-z][A-Za-z0-9-]*[A-Za-z0-9]"
)
_IBAN = r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b"
_US_SOCIAL_SECURITY_NUMBER = r"(?<![\d-])(?!000|666|9)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])"
_FRENCH_SOCIAL_SECURITY_NUMBER = (
    r"(?<!\d)[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?!\d)"
)
_UK_NATIONAL_INSURANCE_NUMBER = (
    r"\b(?!BG|GB|KN|NK|NT|TN|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"
)
_PASSPORT_NUMBER = (
    r"(?i:passport|passeport)(?:\s+(?i:number|no\.?|n°|num[ée]ro))?\s*"
    r"(?:(?i:is|est)\s+|[:#]\s*)?([A-Z0-9]{6,9})\b"
)
_PHONE = text_patterns.compile(
    r"(?<![\w+])(?:"
    # International: +33 6 12 34 56 78, +33 (0)6 12 34 56 78, +1 (415) 555-2671.
    r"\+\d{1,3}(?:[ .-]?\(0\))?(?:[ .-]?(?:\(\d{1,4}\)|\d{1,4})){2,6}"
    # North American: (555) 123-4567, 555-123-4567, 1 800 555 0199.
    r"|(?:1[ .-]?)?(?:\(\d{3}\) ?|\d{3}[ .-])\d{3}[ .-]\d{4}"
    # French: 06 12 34 56 78, 06.12.34.56.78, 0612345678; one separator throughout, so a
    # date followed by a time (01.02.2024 10:30) is not read as a phone.
    r"|0[1-9]([ .-]?)\d{2}(?:\1\d{2}){3}"
    r")(?!\w)"
)
# Digits from the first of their run: from each digit of a long run it rescanned the rest.
_TRAILING_PHONE_GROUP = text_patterns.compile(r"[ .-]?\(?(?<!\d)\d+\)?$")
_DIGIT_RUN = text_patterns.compile(r"\d+")
_CARD_CANDIDATE = text_patterns.compile(r"(?<![\w.,])\d+(?:[ -]\d+)*(?!\w)")

_FRENCH_PARTICLE = (
    rf"(?:(?i:de\s+la|de\s+l{_APOSTROPHE}|du|des|de|d{_APOSTROPHE}|la|le|les|l{_APOSTROPHE})"
    r"\s*)?"
)
_STREET_NUMBER = r"(?<![\w,.])\d{1,4}(?:\s?(?i:bis|ter)|[A-Za-z])?,?\s+"
# "rue 12" is never ordinary French, but "2 cours de yoga" and "1 place de parking" are, so
# the ambiguous street types need a capitalised name ("2 cours Mirabeau").
_FRENCH_STREET = (
    rf"{_STREET_NUMBER}(?:"
    # "bd" only in lower case: "3 BD de Tintin" are comic books.
    r"(?:(?i:rue|avenue|av\.|boulevard|impasse|allée|quai|chaussée|faubourg)|bd\.?)\s+"
    rf"{_FRENCH_PARTICLE}[\w'\u2019-]+"
    r"|(?i:place|cours|route|chemin|passage|square|esplanade)\s+"
    rf"{_FRENCH_PARTICLE}{_CAPITALISED_WORD}"
    rf")(?:\s+{_CAPITALISED_WORD})*"
)
_ENGLISH_STREET = (
    # Not "9 Supreme Court justices" or "a 2 TB Hard Drive".
    rf"{_STREET_NUMBER}(?!(?:\w+\s+)?(?:Supreme|High|Hard|Flash|Disk|Test)\s)"
    rf"(?:{_CAPITALISED_WORD}\s+){{1,3}}"
    r"(?:Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Place|Pl|"
    r"Square|Sq|Terrace|Way|Close|Crescent|Highway|Hwy|Parkway)\b\.?"
)
_FRENCH_POSTCODE_AND_CITY = (
    rf"(?<![\w,.])(?:0[1-9]|[1-8]\d|9[0-8])\d{{3}}\s+{_CAPITALISED_WORD}"
    rf"(?:\s+{_CAPITALISED_WORD})*(?:\s+(?i:cedex)(?:\s+\d{{1,2}})?)?"
)
_US_STATES = (
    "AL|AK|AZ|AR|CA|CO|CT|DE|DC|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|"
    "NJ|NM|NY|NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY"
)


def _from_first_capital(pattern: str) -> str:
    """`pattern` (opening with a capitalised word) tried once per word, from its first capital.

    Its match is group 1. A match from a later capital of the same word would end where the
    word ends too, so it is never the leftmost; trying it cost the rest of the word (quadratic
    on 32 kB of letters). One difference: a match glued to the end of the one before it, inside
    the same word ("…IL 62704Paris, TX 75460"), is no longer found, as it starts no word.
    """
    return rf"(?<![\w'\u2019-])(?:(?![A-ZÀ-ÖØ-Þ])[\w'\u2019-])*+({pattern})"


_US_CITY_AND_ZIP = (
    rf"{_CAPITALISED_WORD}(?:\s+{_CAPITALISED_WORD})?,\s*"
    rf"(?:{_US_STATES})\s+\d{{5}}(?:-\d{{4}})?(?!\d)"
)
_UK_CITY_AND_POSTCODE = rf"{_CAPITALISED_WORD},?\s+[A-Z]{{1,2}}\d[A-Z\d]?\s\d[A-Z]{{2}}\b"
# What follows "I live at" up to the end of the clause; it must hold a number to be an address
# ("I live at home" is not one). A placeholder ends the clause, so nothing is scrubbed twice.
_STATED_ADDRESS = (
    rf"(?i:\bI\s+live\s+at|\bmy\s+(?:home\s+|postal\s+|mailing\s+)?address\s+is"
    rf"|\bmon\s+adresse\s+(?:postale\s+)?(?:est|:)|\bj{_APOSTROPHE}habite\s+au)"
    r"\s*:?\s*([^.;!?\n\[\]]{3,80}?)(?=\s*(?:[.;!?\n\[]|$))"
)

_RELATIONS = (
    "wife|husband|partner|son|daughter|brother|sister|mother|mom|mum|father|dad|boyfriend|"
    "girlfriend|friend|colleague|boss|manager|child|kid|baby|cousin|uncle|aunt|niece|nephew|"
    "grandmother|grandfather|grandma|grandpa|fiancée?"
)
_FRENCH_RELATIONS = (
    "femme|mari|partenaire|compagnon|compagne|conjointe?|fils|fille|frère|sœur|soeur|mère|maman|"
    "père|papa|copain|copine|amie?|collègue|patron|patronne|cheffe?|enfant|bébé|cousine?|oncle|"
    "tante|nièce|neveu|grand-mère|grand-père|fiancée?"
)
_NAME_INTRODUCTION = (
    r"(?i:\b(?:my|his|her|their|your|our)\s+"
    rf"(?:(?:{_RELATIONS}){_APOSTROPHE}s\s+)?"
    r"(?:(?:first|last|full|middle|maiden|given|family)\s+|nick|sur)?"
    rf"name\s*(?:is|{_APOSTROPHE}s|:)"
    rf"|\b(?:I\s+am|I{_APOSTROPHE}m|(?:my|his|her|our|their)\s+(?:{_RELATIONS})\s+is)\s+called"
    rf"|\bje\s+m{_APOSTROPHE}appelle|\b(?:il|elle)\s+s{_APOSTROPHE}appelle"
    rf"|\b(?:mon|ma|notre|son|sa|votre|ton|ta)\s+(?:{_FRENCH_RELATIONS})\s+s{_APOSTROPHE}appelle"
    r"|\b(?:mon|son|ton|votre|notre)\s+(?:nom(?:\s+de\s+famille|\s+de\s+jeune\s+fille)?|prénom)"
    rf"\s*(?:est|c{_APOSTROPHE}est|:))"
    # The name itself: up to three capitalised words, particles allowed between them.
    rf"\s*({_CAPITALISED_WORD}"
    rf"(?:\s+(?:(?:de|du|des|van|von|der|di|da|le|la)\s+)?{_CAPITALISED_WORD}){{0,2}})"
)


def _find_phones(text: str) -> Iterator[Span]:
    """Yield phone numbers: 8 to 15 digits (E.164), fewer is a quantity or a code."""
    for match in _PHONE.finditer(text):
        phone = match.group()
        # An international number may run on into the next number ("+44 20 7946 0958 12"):
        # give back trailing groups until it fits.
        while len(_digits(phone)) > 15 and (trailing := _TRAILING_PHONE_GROUP.search(phone)):
            phone = phone[: trailing.start()]
        if 8 <= len(_digits(phone)) <= 15:
            yield match.start(), match.start() + len(phone)


def _find_cards(text: str) -> Iterator[Span]:
    """Yield card-like numbers: 13-19 digits, in one run or in groups, passing Luhn."""
    for candidate in _CARD_CANDIDATE.finditer(text):
        groups = [
            (candidate.start() + group.start(), candidate.start() + group.end())
            for group in _DIGIT_RUN.finditer(candidate.group())
        ]
        # A card may sit next to other numbers ("12 x 4111 1111 1111 1111"), so try every
        # window of whole groups, longest first, and move past each card found. Only the last
        # group may be shorter than 3 digits: that keeps lists of small numbers and dates out.
        # Each group is all digits, so a window's digit count is a difference of running
        # totals, and its digits are read only when the count and grouping fit (32 kB of
        # "1 " took 1.5 s when every window read its digits).
        totals = list(accumulate((end - start for start, end in groups), initial=0))
        next_short = _next_short_groups(groups)
        first = 0
        while first < len(groups):
            for last in range(min(len(groups), first + 19), first, -1):
                size = totals[last] - totals[first]
                is_grouped = next_short[first] >= last - 1
                if 13 <= size <= 19 and is_grouped:
                    digits = _digits(text[groups[first][0] : groups[last - 1][1]])
                    if _passes_luhn(digits):
                        yield groups[first][0], groups[last - 1][1]
                        first = last
                        break
            else:
                first += 1


def _next_short_groups(groups: list[Span]) -> list[int]:
    """For each group, the index of the first group from it on with fewer than 3 digits."""
    next_short = [len(groups)] * (len(groups) + 1)
    for index in range(len(groups) - 1, -1, -1):
        start, end = groups[index]
        next_short[index] = index if end - start < 3 else next_short[index + 1]
    return next_short


# Order matters: each detector runs on the text the previous ones left, so the most specific
# shapes (an email's digits, an IBAN's groups) are replaced before looser ones could split them.
_DETECTORS = (
    _detector("email", _EMAIL),
    _detector("iban", _IBAN, is_valid=_is_iban),
    _detector("id-number", _US_SOCIAL_SECURITY_NUMBER),
    _detector("id-number", _FRENCH_SOCIAL_SECURITY_NUMBER, is_valid=_has_valid_nir_key),
    _detector("id-number", _UK_NATIONAL_INSURANCE_NUMBER),
    _detector("id-number", _PASSPORT_NUMBER, group=1, is_valid=_has_digit),
    _Detector("phone", _find_phones),
    _Detector("card", _find_cards),
    _detector("address", _STATED_ADDRESS, group=1, is_valid=_has_digit),
    _detector("address", _FRENCH_STREET),
    _detector("address", _ENGLISH_STREET),
    _detector("address", _FRENCH_POSTCODE_AND_CITY),
    _detector("address", _from_first_capital(_US_CITY_AND_ZIP), group=1),
    _detector("address", _from_first_capital(_UK_CITY_AND_POSTCODE), group=1),
    _detector("name", _NAME_INTRODUCTION, group=1),
)


def _keywords(*phrases: str) -> text_patterns.Pattern[str]:
    # Phrases are written with plain spaces and straight apostrophes; text may use any
    # whitespace and typographic apostrophes.
    alternatives = "|".join(
        phrase.replace(" ", r"\s+").replace("'", _APOSTROPHE) for phrase in phrases
    )
    # Every phrase starts with a word character, so `(?=\w)` changes no match; it only spares
    # the ~100 alternatives at each position that starts no word: on 32 kB of spaces or
    # punctuation the five lists took ~0.2 s, now ~0.02 s (the test below checks every phrase).
    return text_patterns.compile(
        rf"(?<!\w)(?=\w)(?:{alternatives})(?!\w)", text_patterns.IGNORECASE
    )


_KEYWORDS = {
    PersonalDataCategory.CONTACT: _keywords(
        # "my email is" is about an address, "my phone is" is about a device.
        r"(?:my|his|her|their|your) e-?mail is",
        r"(?:my|his|her|their|your) (?:e-?mail address|(?:phone|mobile|cell|telephone) number)",
        r"my number is",
        r"(?:mon|ton|son|votre) adresse (?:e-?mail|mail|électronique)",
        r"mon (?:e-?mail|mail|courriel) (?:est|c'est)",
        r"numéro de (?:téléphone|portable|mobile|tél)",
        r"mon numéro (?:est|c'est)",
    ),
    PersonalDataCategory.ADDRESS: _keywords(
        r"I live (?:at|in|on)",
        r"I'm living (?:at|in)",
        r"(?:my|his|her|their|your) (?:home |postal |mailing |street )?address",
        r"home address",
        r"(?:postal|zip) code|postcode",
        r"j'habite",
        r"(?:je vis|nous vivons|on vit) (?:à|au|aux|dans)",
        r"(?:mon|ma|son|notre|votre) adresse(?! (?:e-?mail|mail|électronique|courriel|ip|web))",
        r"code postal",
    ),
    PersonalDataCategory.FINANCIAL: _keywords(
        r"salary|salaries|paycheck|I earn|(?:my|annual|monthly) income|net worth",
        r"bank (?:account|details)|account number|routing number|sort code|IBAN|(?-i:RIB)",
        r"mortgage|(?:student|car|home|personal|bank) loans?|(?:credit|debit) card|credit score",
        r"tax return",
        r"salaires?|je gagne|mes revenus|fiche de paie|bulletin de salaire",
        r"compte (?:bancaire|en banque|courant|épargne)|numéro de compte",
        r"(?:prêt|crédit) immobilier|emprunt|carte (?:bancaire|bleue|de crédit)",
    ),
    PersonalDataCategory.HEALTH: _keywords(
        r"diagnos(?:ed|is|es)|medications?|prescri(?:bed|ption)|allerg(?:y|ies|ic)",
        r"pregnan(?:t|cy)|(?:physio)?therap(?:y|ist)|psychiatrist|psychologist",
        r"blood (?:pressure|sugar|test)|hypertension|diabet(?:es|ic)|asthma|cancer",
        r"chemo(?:therapy)?|depression|anxiety disorder|panic attacks?|ADHD|autis(?:m|tic)",
        r"HIV|epilep(?:sy|tic)|migraines?|surgery|insulin|antidepressants?|inhaler",
        r"chronic (?:pain|illness|fatigue)|disabilit(?:y|ies)|mental health|illness",
        r"my doctor|(?:doctor's|doctor|GP|medical|dental) appointment|\d+\s?mg|sick leave",
        r"hospitali[sz]ed|cholesterol|(?:lactose|gluten) intoleran(?:t|ce)",
        r"diagnostiquée?|médicaments?|ordonnance|traitement médical|allergi(?:e|es|que|ques)",
        r"(?:suis|es|est|être|tombée) enceinte|grossesse|thérapie|thérapeute|psychiatre",
        r"psychologue|tension artérielle|diabète|diabétique|asthme|chimio(?:thérapie)?",
        r"dépression|TDAH|autisme|autiste|VIH|épilep(?:sie|tique)|chirurgie|insuline",
        r"antidépresseurs?|maladie|malade|handicap(?:ée?)?|santé mentale|mon médecin",
        r"chez le médecin|arrêt maladie|hospitalisée?|cholestérol|intolérance (?:au|à|aux)",
    ),
    PersonalDataCategory.OTHER: _keywords(
        # Religion and beliefs.
        r"religions?|religious|religieu(?:x|se)|(?:my|his|her) faith|atheist|athée",
        r"agnosti(?:c|que)|muslim|musulmane?|islam|islamic|jewish|juif|juive|judaism|judaïsme",
        r"catholi(?:c|que)|protestante?|buddhis(?:t|m)|bouddhiste|hindu(?:ism)?|hindoue?",
        r"sikh|mormon|christianity|a (?:devout |practi[sc]ing )?christian|chrétien(?:ne)?",
        r"ramadan|kosher|casher|kasher|halal",
        r"(?:go|goes|going|went) to (?:church|mosque|synagogue|temple)",
        r"(?:va|vais|aller|allons) à (?:la messe|la mosquée|la synagogue|l'église)",
        # Political opinions and union membership.
        r"political (?:views?|opinions?|party|affiliation)|opinions? politiques?",
        r"parti politique|left-wing|right-wing",
        r"(?:suis|est|sont|vote|votes|voter) de (?:gauche|droite)",
        r"(?:I'm|I am|as) an? (?:Democrat|Republican|socialist|communist|conservative|liberal)",
        r"vot(?:e|es|ed|ing) (?:for )?(?:the )?"
        r"(?:Democrats?|Republicans?|Labour|Tory|Tories|Greens?)",
        r"trade unions?|union member|syndiquée?|syndicat",
        # Sexual orientation and gender identity.
        r"gay|lesbian|lesbienne|bisexu(?:al|el|elle)|homosexu(?:al|el|elle)|heterosexual",
        r"hétérosexu(?:el|elle)|queer|transgender|transgenre|non-?binary|non-binaire",
        r"sexual orientation|orientation sexuelle|asexual|pansexual",
        # Birth date, ethnic origin, national identifiers.
        r"birthday|birthdate|birth date|date of birth|DOB|place of birth",
        r"(?:was|were) born|born (?:on|in)",
        r"anniversaire|date de naissance|lieu de naissance|née? (?:le \d|le premier|en \d{4})",
        r"ethnicity|ethnic origin|origine ethnique",
        r"social security number|SSN|passport number|national insurance number|national ID",
        r"ID card number|driv(?:er's|ing) licen[cs]e number|tax ID",
        r"numéro de (?:sécurité sociale|sécu|passeport)|carte vitale|numéro fiscal",
        r"carte d'identité",
    ),
}

_SLOT_CATEGORIES = {
    "name": PersonalDataCategory.NAME,
    "first_name": PersonalDataCategory.NAME,
    "last_name": PersonalDataCategory.NAME,
    "full_name": PersonalDataCategory.NAME,
    "email": PersonalDataCategory.CONTACT,
    "phone": PersonalDataCategory.CONTACT,
    "location": PersonalDataCategory.ADDRESS,
    "address": PersonalDataCategory.ADDRESS,
    "birthday": PersonalDataCategory.OTHER,
    "date_of_birth": PersonalDataCategory.OTHER,
}

# Name particles are words of their own in ordinary text ("des", "van"), never scrubbed alone.
_NAME_PART_BREAK = text_patterns.compile(r"[\s-]+")
_NAME_PARTICLES = frozenset(
    {"de", "des", "del", "della", "der", "den", "van", "von", "la", "le", "les", "di", "da", "dos"}
    | {"das", "du", "bin", "ben", "ibn", "al", "el", "mac", "saint", "sainte"}
)


def tag_personal_data(text: str, *, slot: str | None = None) -> frozenset[PersonalDataCategory]:
    """Return the personal-data categories a memory's text (and its slot, if any) holds."""
    categories = {
        detector.category for detector in _DETECTORS if next(detector.find(text), None) is not None
    }
    categories.update(category for category, regex in _KEYWORDS.items() if regex.search(text))
    if slot is not None:
        slot_category = _SLOT_CATEGORIES.get(slot.strip().lower().replace("-", "_"))
        if slot_category is not None:
            categories.add(slot_category)
    return frozenset(categories)


def scrub_personal_data(text: str, *, known_names: Collection[str] = ()) -> ScrubResult:
    """Replace emails, phones, known names, addresses, card and ID numbers with placeholders."""
    detectors = [*_DETECTORS]
    names_finder = _known_names_finder(known_names)
    if names_finder is not None:
        detectors.append(_Detector("name", names_finder))
    counts: Counter[PersonalDataCategory] = Counter()
    # A replacement changes its neighbours' context (a placeholder next to digits no longer
    # glues them into one number), so run until nothing changes: that makes scrubbing idempotent.
    # It ends because every replacement turns unprotected characters into a protected placeholder.
    is_changed = True
    while is_changed:
        is_changed = False
        for detector in detectors:
            text, replaced = _replace(text, detector)
            counts[detector.category] += replaced
            is_changed = is_changed or replaced > 0
    return ScrubResult(text=text, replacements=MappingProxyType(+counts))


def _replace(text: str, detector: _Detector) -> tuple[str, int]:
    # Placeholders (ours, or already in the text) are never rewritten, even if a known name
    # is "name" or "email".
    protected = [match.span() for match in _PLACEHOLDER.finditer(text)]
    pieces: list[str] = []
    position = 0
    replaced = 0
    for start, end in sorted(detector.find(text)):
        is_overlapping = start < position or any(
            start < placeholder_end and placeholder_start < end
            for placeholder_start, placeholder_end in protected
        )
        if is_overlapping or start == end:
            continue
        pieces += [text[position:start], f"[{detector.placeholder}]"]
        position = end
        replaced += 1
    pieces.append(text[position:])
    return "".join(pieces), replaced


def _fold(text: str) -> tuple[str, list[int]]:
    """Return `text` lower-cased without accents, and the source index of each folded char."""
    folded: list[str] = []
    origins: list[int] = []
    for index, char in enumerate(text):
        for piece in unicodedata.normalize("NFKD", char):
            if unicodedata.combining(piece):
                continue
            for lowered in piece.casefold():
                folded.append(lowered)
                origins.append(index)
    return "".join(folded), origins


def _known_names_finder(known_names: Collection[str]) -> Finder | None:
    """Build a finder for the profile's names and the 3+ letter parts of multi-part names."""
    terms: set[str] = set()
    for name in known_names:
        folded = " ".join(_fold(name)[0].split())
        if len(folded) < 2:
            continue
        terms.add(folded)
        for part in folded.split() + _NAME_PART_BREAK.split(folded):
            if sum(char.isalpha() for char in part) >= 3 and part not in _NAME_PARTICLES:
                terms.add(part)
    if not terms:
        return None
    # Longest first, so "alice martin" wins over "alice" at the same position.
    regex = text_patterns.any_phrase(sorted(terms, key=len, reverse=True), apostrophes="'\u2019")

    def find(text: str) -> Iterator[Span]:
        folded, origins = _fold(text)
        for match in regex.finditer(folded):
            start, end = origins[match.start()], origins[match.end() - 1] + 1
            # Keep a decomposed accent (e + U+0301) with the letter it belongs to.
            while end < len(text) and unicodedata.combining(text[end]):
                end += 1
            yield start, end

    return find
