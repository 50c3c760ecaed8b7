"""The English and French statement patterns the offline extractor trusts, with their templates.

Each rule matches an explicit first-person statement. A pattern's trigger is case-insensitive
but names, places and employers must be capitalised, which keeps "call me back" or "I work at
home" out. What a rule cannot see (questions, hedges, negations) is filtered in `offline.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memoryhub import text_patterns

from .base import EventType, Importance, ItemKind
from .dates import CALENDAR_DATE
from .vocabulary import (
    EN_JOB_TITLES,
    EN_PETS,
    EN_RELATIONS,
    FR_JOB_TITLES,
    FR_PETS,
    FR_RELATIONS,
    alternatives,
)

Language = Literal["en", "fr"]
DateUse = Literal["none", "optional", "required"]

APOS = "['’]"
_CAP = "[A-ZÀ-ÖØ-Þ]"
_CAP_WORD = rf"{_CAP}[\w'’-]*"
# Up to three capitalised words; a lone "I" starts the next clause ("My name is Alice I live…").
NAME = rf"(?P<value>{_CAP_WORD}(?:[ ](?!I\b){_CAP_WORD}){{0,2}})"
PLACE = rf"(?P<value>{_CAP_WORD}(?:[ ](?!I\b){_CAP_WORD}){{0,3}})"
ORG = r"(?P<value>[A-Z0-9À-ÖØ-Þ][\w&'’.-]*(?:[ ](?:&[ ])?(?!I\b)[A-Z0-9À-ÖØ-Þ][\w&'’.-]*){0,3})"

# "I work as hard as I can", "je travaille comme un fou": not jobs.
_EN_NOT_ROLE = (
    r"(?!(?i:to|not|very|quite|really|pretty|so|too|hard|much|long|well|fast|little|usual|part"
    r"|team|always|expected|needed|many)\b)"
)
_FR_NOT_ROLE = r"(?!(?i:une?|d['’]|les?|la|tout|avant|prévu|toujours|fou|folle|dingue)\b)"
_EN_ROLE_END = r"(?=\s*(?:[,.;!?]|$)|\s+(?:at|for|in|with|since|and|but|because|from|on)\b)"
_FR_ROLE_END = r"(?=\s*(?:[,.;!?]|$)|\s+(?:chez|pour|à|au|aux|dans|depuis|et|mais|car|sur|avec)\b)"
EN_ROLE = rf"{_EN_NOT_ROLE}(?P<value>\w[\w'’-]*(?:[ ]\w[\w'’-]*){{0,4}}?){_EN_ROLE_END}"
FR_ROLE = rf"{_FR_NOT_ROLE}(?P<value>\w[\w'’-]*(?:[ ]\w[\w'’-]*){{0,4}}?){_FR_ROLE_END}"
# After "I'm a" / "je suis" any word could follow, so the role must end in a known job title:
# "I'm a chemistry teacher", "je suis cheffe de projet", not "I'm a big fan".
# "I'm a former teacher" is no role; "I'm the only engineer who …" describes, not names one.
_EN_PAST_ROLE = r"(?!(?i:former|ex|retired|aspiring|future|wannabe|would-be|only)\b)"
_EN_TITLE = (
    rf"(?i:(?:{_EN_PAST_ROLE}[\w-]+[ ]){{0,3}}?"
    rf"(?:(?:head|chief|vp|director)[ ]of[ ][\w-]+|(?:{alternatives(EN_JOB_TITLES)})s?))"
    r"(?=\s*(?:[,.;!?]|$)|\s+(?i:at|for|in|with|since|and|but|because|from|on|who)\b)"
)
_FR_ROLE_STOP = r"(?:chez|à|au|aux|pour|dans|depuis|et|mais|car|sur|avec|de|du|des|d['’]|en)"
_FR_TITLE = (
    rf"(?i:(?:{alternatives(FR_JOB_TITLES)})(?:[ ](?:de|d['’]|en)[ ]?[\w-]+"
    rf"|[ ](?!{_FR_ROLE_STOP}\b)[\w-]+){{0,2}})"
    rf"(?=\s*(?:[,.;!?]|$)|\s+(?i:{_FR_ROLE_STOP})|\s*d['’])"
)
EN_TITLE = rf"(?P<value>{_EN_TITLE})"
FR_TITLE = rf"(?P<value>{_FR_TITLE})"
_EN_I_AM_A = r"\bi(?:'m|’m| am) (?:an?|the) "
_FR_JE_SUIS = rf"\bje suis (?:une?\s+|l[ea]\s+|l{APOS})?"
# Relations ("my manager", "ma fille"): the name of one is a fact about the user.
EN_RELATION = rf"(?P<relation>{alternatives(frozenset(EN_RELATIONS))})"
FR_RELATION = rf"(?P<det>mon|ma) (?P<relation>{alternatives(frozenset(FR_RELATIONS))})"
EN_PET = rf"(?P<pet>(?:[\w-]+ ){{0,2}}?(?:{alternatives(EN_PETS)}))"
FR_PET = rf"(?P<det>un|une) (?P<pet>(?:{alternatives(FR_PETS)})(?: [\w-]+)?)"
# A relation's name ends its clause or is followed by a verb: "my wife Sara and I", "my son Leo starts".
_NAME_END = r"(?=\s*(?:[,.;!?]|$)|\s+[a-zà-ÿ])"

TIMEZONE = (
    r"(?P<value>[A-Z][A-Za-z_]+/[A-Za-z_]+(?:/[A-Za-z_]+)?"
    r"|(?:UTC|GMT)(?:[ ]?[+−-][ ]?\d{1,2}(?::?\d{2})?)?"
    r"|[A-Z][a-z]+(?:[ ]Standard)?[ ]Time|[A-Z]{2,5})(?![\w/])"
)
_EN_LANGUAGE = (
    "English|French|Spanish|German|Italian|Portuguese|Dutch|Arabic|Chinese|Mandarin|Cantonese|"
    "Japanese|Korean|Russian|Polish|Hindi|Turkish|Swedish|Norwegian|Danish|Finnish|Greek|Hebrew|"
    "Ukrainian|Czech|Romanian|Hungarian|Vietnamese|Thai|Indonesian|Catalan|Basque|Breton|Bengali|"
    "Urdu|Persian|Swahili"
)
_FR_LANGUAGE = (
    "anglais|français|francais|espagnol|allemand|italien|portugais|néerlandais|arabe|chinois|"
    "mandarin|cantonais|japonais|coréen|russe|polonais|hindi|turc|suédois|norvégien|danois|"
    "finnois|grec|hébreu|ukrainien|tchèque|roumain|hongrois|vietnamien|thaï|indonésien|catalan|"
    "basque|breton|bengali|ourdou|persan|swahili"
)
EN_LANGUAGES = (
    rf"(?P<value>(?:{_EN_LANGUAGE})(?:(?:,[ ]|,?[ ]and[ ])(?:fluent[ ])?(?:{_EN_LANGUAGE}))*)(?!\w)"
)
FR_LANGUAGES = (
    rf"(?P<value>(?i:(?:{_FR_LANGUAGE})(?:(?:,[ ]|[ ]et[ ])(?:couramment[ ])?(?:{_FR_LANGUAGE}))*))"
    r"(?!\w)"
)
BIRTH_DATE = rf"(?P<value>{CALENDAR_DATE})"
# A free-text value runs to the end of the clause; `offline.py` trims "and I…" tails.
REST = r"(?P<value>[^.!?;…]+)"
# Up to the spaces before the clause's end. Atomic and bounded: the shortest value followed by
# that end is the longest run of value characters without its trailing spaces (no shorter one
# can be), and a value over 160 characters is refused anyway (offline.MAX_VALUE_CHARS).
# Lazy and unbounded, it rescanned the spaces after each character: 1.9 s on 16,000 spaces.
ALLERGEN = r"(?P<value>(?>\w(?:[\w'’ -]{0,158}[\w'’-])?))(?=\s*(?:[,.;!?]|$))"

# "I love it", "I like your idea", "j'aime bien ça": reactions to the conversation, not tastes.
_EN_NOT_TASTE = (
    r"(?!(?i:it|that|this|these|those|you|your|how|what|when|where|them|him|her|both|either"
    r"|neither|the (?:[\w-]+ )?(?:one|ones|option|options|version|idea|suggestion|plan|draft"
    r"|way|sound|look|name|first|second|third|last)|to (?:think|hear|say|admit|ask|bother"
    r"|interrupt|disturb|break|tell|be))\b)"
)
_FR_NOT_TASTE = (
    rf"(?!(?i:(?:bien|beaucoup|vraiment)\s+)?(?i:ça|ca|cela|ce|cette|ton|ta|tes|votre|vos|quand"
    rf"|comment|l{APOS}idée|les deux|pas|plus|jamais|rien)\b)"
)
_CLAUSE_START = r"(?:^|[,:]\s+)"
_NOT_PRONOUN_EN = r"(?!(?i:i|we|you|he|she|it|they|my|our|the|this|that|there|a|an)\b)"
_NOT_PRONOUN_FR = (
    r"(?!(?i:je|j|tu|il|elle|on|nous|vous|ils|elles|ça|ce|c|cela|le|la|les|l|un|une|mon|ma|mes"
    r"|ton|ta|tes|son|sa|ses|y|et|mais|pas|presque|quasi|pratiquement|moi)\b)"
)
# "Never mind", "always happy to help": words after always/never that make no instruction.
_EN_NOT_INSTRUCTION = (
    r"(?!(?i:mind|again|ever|before|been|was|is|are|the|a|an|so|too|same|sure|fun|late|early"
    r"|happy|glad|good|great|nice|true|right|wrong|there|here|more|less|like)\b)"
)
# A French instruction uses an infinitive ("toujours proposer") or "jamais de …".
_FR_INSTRUCTION = (
    r"(?!(?i:autre|notre|votre|entre|contre|hier|premier|dernier|cher|super|mer|pire)\b)"
    r"(?:\w+(?:er|ir|re|oir)\b|de\b|d['’])"
)
_FR_NOT_AFTER_ADVERB = r"(?!\s+(?i:aussi|autant|pas|rien|plus|pareil|là)\b)"
EN_ALWAYS = rf"(?P<value>(?i:always|never)\s+{_EN_NOT_INSTRUCTION}\w+[^.!?;…]*)"
EN_INSTRUCTION = rf"(?P<value>{_NOT_PRONOUN_EN}\w+[^.!?;…]*)"
FR_ALWAYS = (
    rf"(?P<value>(?i:toujours|jamais|ne jamais)\s+(?!(?i:de la vie)\b){_FR_INSTRUCTION}[^.!?;…]*)"
)
FR_IMPERATIVE_ALWAYS = (
    rf"(?P<value>(?i:ne\s+|n{APOS})?(?i:m{APOS}|me\s+|nous\s+|lui\s+|leur\s+)?"
    rf"{_NOT_PRONOUN_FR}\w+(?i:-(?:moi|nous|lui|leur|le|la|les))?"
    rf"\s+(?i:toujours|jamais)\b{_FR_NOT_AFTER_ADVERB}[^.!?;…]*)"
)
FR_INSTRUCTION = rf"(?P<value>{_NOT_PRONOUN_FR}\w+[^.!?;…]*)"

# After "I will" / "je vais": a task, not "I'll think about it" or "je vais bien".
_EN_TASK = (
    r"(?!(?i:think|see|be|try|sleep|wait|let you know|consider|look into|say|admit|confess"
    r"|tell you)\b)"
)
_FR_TASK = (
    r"(?!(?i:réfléchir|voir|être|essayer|penser|dormir|tenter)\b)"
    r"(?=(?:(?i:le|la|les|l['’]|lui|leur|te|vous|t['’]|y|en|me|m['’]|s['’]|se)\s*)*"
    r"\w+(?:er|ir|re|oir)\b)"
)
# A task's date belongs to its first clause: "I have to say, Friday was great" is no task.
_TASK_REST = r"(?P<value>[^.!?;…,]+)"
EN_TASK = _EN_TASK + _TASK_REST
FR_TASK = _FR_TASK + _TASK_REST


@dataclass(frozen=True)
class Rule:
    kind: ItemKind
    language: Language
    pattern: text_patterns.Pattern[str]
    # Formatted with the match's named groups; the value is cleaned first.
    template: str
    slot: str | None = None
    importance: Importance = "normal"
    event_type: EventType | None = None
    date_use: DateUse = "none"
    # First-person wording in the value ("my report") is rewritten for a third-person memory.
    is_rewritten: bool = False
    # Procedures are made of "never"/"jamais", so a negation before them is part of the rule.
    checks_negation: bool = True
    # The value is someone's name: "Friday" or "French" after "I'm" is not one.
    is_name: bool = False
    # The slot of a relation's name by the relation said ("boss" -> "manager"); None: several.
    relation_slots: dict[str, str | None] | None = None


def _rule(
    kind: ItemKind,
    language: Language,
    trigger: str,
    value: str,
    template: str,
    *,
    slot: str | None = None,
    importance: Importance = "normal",
    event_type: EventType | None = None,
    date_use: DateUse = "none",
    is_rewritten: bool = False,
    checks_negation: bool = True,
    is_name: bool = False,
    relation_slots: dict[str, str | None] | None = None,
) -> Rule:
    # Only the trigger ignores case: a value's capital letters are part of what it must match.
    pattern = text_patterns.compile(rf"(?i:{trigger}){value}")
    return Rule(
        kind=kind,
        language=language,
        pattern=pattern,
        template=template,
        slot=slot,
        importance=importance,
        event_type=event_type,
        date_use=date_use,
        is_rewritten=is_rewritten,
        checks_negation=checks_negation,
        is_name=is_name or slot == "name" or relation_slots is not None,
        relation_slots=relation_slots,
    )


# fmt: off
# What lies between two parts of a trigger ("i work at … as") is bounded, {1,160}?: unbounded,
# each "i work at" of a long clause rescanned the rest of it (quadratic on repeated triggers).
# The spaces around a favourite's thing are possessive: giving them back tried every split of
# a long run (8 kB of spaces after "my favourite": 69 s). Only a one-letter thing after two
# spaces ("my favourite  x is …") is no longer read.
RULES: tuple[Rule, ...] = (
    # Facts about the user, English.
    _rule("fact", "en", r"\b(?:my name is|my name's|call me|i go by|people call me)\s+", NAME, "The user's name is {value}", slot="name"),
    _rule("fact", "en", r"\b(?:hi|hello|hey)[,!]?\s+i(?:'m|’m| am)\s+", NAME, "The user's name is {value}", slot="name"),
    _rule("fact", "en", r"\b(?:i work as|i(?:'m|’m| am) employed as|my (?:role|job title|position) is)\s+(?:an?\s+|the\s+)?", EN_ROLE, "The user works as {value}", slot="role"),
    _rule("fact", "en", r"\bi work (?:at|for) [^,.;!?]{1,160}? as\s+(?:an?\s+|the\s+)?", EN_ROLE, "The user works as {value}", slot="role"),
    _rule("fact", "en", r"\b(?:i work (?:at|for)|i(?:'m|’m| am) employed (?:at|by))\s+", ORG, "The user works at {value}", slot="employer"),
    _rule("fact", "en", r"\bi work as [^,.;!?]{1,160}? (?:at|for)\s+", ORG, "The user works at {value}", slot="employer"),
    _rule("fact", "en", r"\b(?:i live in|i(?:'m|’m| am) (?:based|living) in|i(?:'ve|’ve| have)? (?:just )?moved to)\s+", PLACE, "The user lives in {value}", slot="location"),
    _rule("fact", "en", r"\bmy time ?zone is\s+(?:the\s+)?", TIMEZONE, "The user's timezone is {value}", slot="timezone"),
    _rule("fact", "en", r"\bi speak\s+(?:fluent\s+)?", EN_LANGUAGES, "The user speaks {value}", slot="language"),
    _rule("fact", "en", r"\bmy (?:native language|mother tongue|first language) is\s+", EN_LANGUAGES, "The user speaks {value}", slot="language"),
    _rule("fact", "en", r"\b(?:my birthday is|i was born on)\s+(?:on\s+)?(?:the\s+)?", BIRTH_DATE, "The user's birthday is {value}", slot="birthday"),
    _rule("fact", "en", r"\bi(?:'m|’m| am) allergic to\s+", ALLERGEN, "The user is allergic to {value}", importance="high"),
    _rule("fact", "en", r"(?:^|[,:;]\s*)(?:(?:oh|and|also|sorry)[,!]?\s+)?i(?:'m|’m| am)\s+", NAME + r"(?=\s*(?:[,.!;]|$)|\s+(?i:by the way|btw|here|from)\b)", "The user's name is {value}", slot="name"),
    _rule("fact", "en", _EN_I_AM_A, EN_TITLE, "The user works as {value}", slot="role"),
    _rule("fact", "en", _EN_I_AM_A + _EN_TITLE + r"\s+(?:at|for|with)\s+", ORG, "The user works at {value}", slot="employer"),
    _rule("fact", "en", _EN_I_AM_A + _EN_TITLE + r"(?:\s+(?:at|for|with)\s+(?:(?!\b(?:and|but|so|because|i|we|in)\b)[^,.;!?]){1,160}?)?\s+in\s+", PLACE, "The user works in {value}", slot="location"),
    _rule("fact", "en", rf"\bmy {EN_RELATION}{APOS}s name is\s+", NAME, "The user's {relation} is {value}", relation_slots=EN_RELATIONS),
    _rule("fact", "en", rf"\bmy {EN_RELATION}(?: is|{APOS}s) (?:called |named )?", NAME, "The user's {relation} is {value}", relation_slots=EN_RELATIONS),
    _rule("fact", "en", rf"\bmy {EN_RELATION},? (?=[A-ZÀ-ÖØ-Þ])", NAME + _NAME_END, "The user's {relation} is {value}", relation_slots=EN_RELATIONS),
    _rule("fact", "en", rf"\bi have an? {EN_PET} (?:called|named)\s+", NAME, "The user has a {pet} called {value}", is_name=True),
    # Facts about the user, French.
    _rule("fact", "fr", rf"\b(?:je m{APOS}appelle|mon (?:pré)?nom est|mon (?:pré)?nom c{APOS}est|appelle-moi|appelez-moi|on m{APOS}appelle)\s+", NAME, "L'utilisateur s'appelle {value}", slot="name"),
    _rule("fact", "fr", rf"\b(?:bonjour|salut|coucou)[,!]?\s+(?:je suis|moi c{APOS}est|c{APOS}est)\s+", NAME, "L'utilisateur s'appelle {value}", slot="name"),
    _rule("fact", "fr", r"\bje (?:travaille|bosse) (?:comme|en tant que)\s+", FR_ROLE, "L'utilisateur travaille comme {value}", slot="role"),
    _rule("fact", "fr", r"\bje (?:travaille|bosse) (?:chez|pour) [^,.;!?]{1,160}? (?:comme|en tant que)\s+", FR_ROLE, "L'utilisateur travaille comme {value}", slot="role"),
    _rule("fact", "fr", r"\b(?:je (?:travaille|bosse)|je suis employée?)\s+(?:chez|pour)\s+", ORG, "L'utilisateur travaille chez {value}", slot="employer"),
    _rule("fact", "fr", r"\bje (?:travaille|bosse) (?:comme|en tant que) [^,.;!?]{1,160}? chez\s+", ORG, "L'utilisateur travaille chez {value}", slot="employer"),
    _rule("fact", "fr", rf"\b(?:j{APOS}habite|je vis|je suis basée?|j{APOS}ai déménagé)\s+(?P<prep>à|en|au|aux)\s+", PLACE, "L'utilisateur habite {prep} {value}", slot="location"),
    _rule("fact", "fr", rf"\bj{APOS}habite\s+(?=[A-ZÀ-ÖØ-Þ])", PLACE, "L'utilisateur habite à {value}", slot="location"),
    _rule("fact", "fr", rf"\bmon fuseau(?: horaire)? (?:est|c{APOS}est)\s+(?:le\s+|l{APOS})?", TIMEZONE, "Le fuseau horaire de l'utilisateur est {value}", slot="timezone"),
    _rule("fact", "fr", r"\bje parle\s+(?:couramment\s+)?", FR_LANGUAGES, "L'utilisateur parle {value}", slot="language"),
    _rule("fact", "fr", rf"\bma langue maternelle est\s+(?:le\s+|l{APOS})?", FR_LANGUAGES, "L'utilisateur parle {value}", slot="language"),
    _rule("fact", "fr", rf"\b(?:mon anniversaire (?:est|c{APOS}est|tombe)|je suis née?)\s+(?:le\s+)?", BIRTH_DATE, "L'anniversaire de l'utilisateur est le {value}", slot="birthday"),
    _rule("fact", "fr", r"\bje suis allergique\s+(?P<prep>à|aux|au)\s+", ALLERGEN, "L'utilisateur est allergique {prep} {value}", importance="high"),
    _rule("fact", "fr", _FR_JE_SUIS, FR_TITLE, "L'utilisateur travaille comme {value}", slot="role"),
    _rule("fact", "fr", _FR_JE_SUIS + _FR_TITLE + r"\s+chez\s+", ORG, "L'utilisateur travaille chez {value}", slot="employer"),
    _rule("fact", "fr", _FR_JE_SUIS + _FR_TITLE + r"(?:\s+chez\s+" + ORG.replace("(?P<value>", "(?:") + r")?\s+(?P<prep>à|au|aux)\s+", PLACE, "L'utilisateur travaille {prep} {value}", slot="location"),
    _rule("fact", "fr", rf"\b{FR_RELATION} (?:s{APOS}appelle|se nomme|est)\s+", NAME, "{subject} de l'utilisateur s'appelle {value}", relation_slots=FR_RELATIONS),
    _rule("fact", "fr", rf"\b{FR_RELATION},? c{APOS}est\s+", NAME, "{subject} de l'utilisateur s'appelle {value}", relation_slots=FR_RELATIONS),
    _rule("fact", "fr", rf"\bj{APOS}ai {FR_PET} (?:qui s{APOS}appelle|appelée?|nommée?)\s+", NAME, "L'utilisateur a {det} {pet} qui s'appelle {value}", is_name=True),
    # Preferences.
    _rule("preference", "en", r"\bi (?:really |much |strongly |generally |usually |always )?prefer\s+", REST, "The user prefers {value}", is_rewritten=True),
    _rule("preference", "en", r"\bi(?:'d|’d| would) (?:really |much )?prefer\s+", REST, "The user prefers {value}", is_rewritten=True),
    _rule("preference", "en", r"\bi(?:'d|’d| would) rather\s+", REST, "The user would rather {value}", is_rewritten=True),
    _rule("preference", "en", r"\bmy favou?rite\s++(?P<thing>[\w' -]{2,30}?)\s++(?:is|are)\s+", REST, "The user's favourite {thing} is {value}", is_rewritten=True),
    _rule("preference", "en", rf"\bi (?:really |genuinely |absolutely |just |do |also |honestly )?(?P<verb>like|love|enjoy|adore|hate|dislike|detest|loathe)\s+{_EN_NOT_TASTE}", REST, "The user {verb}s {value}", is_rewritten=True),
    _rule("preference", "en", rf"\bi (?:don{APOS}t|do not) (?:really )?(?P<verb>like|enjoy)\s+{_EN_NOT_TASTE}", REST, "The user doesn't {verb} {value}", is_rewritten=True),
    _rule("preference", "en", rf"\bi can(?:{APOS}t|not| not) stand\s+{_EN_NOT_TASTE}", REST, "The user can't stand {value}", is_rewritten=True),
    _rule("preference", "en", r"\bi(?:'m|’m| am) (?:a )?(?:big |huge )?fan of\s+", REST, "The user is a fan of {value}", is_rewritten=True),
    _rule("preference", "fr", r"\bje (?:préfère|préférerais|préfèrerais)\s+", REST, "L'utilisateur préfère {value}", is_rewritten=True),
    _rule("preference", "fr", rf"\bj{APOS}(?P<verb>aime|adore)\s+{_FR_NOT_TASTE}", REST, "L'utilisateur {verb} {value}", is_rewritten=True),
    _rule("preference", "fr", r"\bje (?:déteste|hais)\s+", REST, "L'utilisateur déteste {value}", is_rewritten=True),
    _rule("preference", "fr", rf"\bje n{APOS}aime pas\s+{_FR_NOT_TASTE}", REST, "L'utilisateur n'aime pas {value}", is_rewritten=True),
    _rule("preference", "fr", r"\bje ne supporte pas\s+", REST, "L'utilisateur ne supporte pas {value}", is_rewritten=True),
    _rule("preference", "fr", rf"\b(?:mon|ma|mes)\s++(?P<thing>[\w' -]{{2,30}}?\s++préférée?s?)\s++(?:est|sont|c{APOS}est)\s+", REST, "{thing} de l'utilisateur : {value}", is_rewritten=True),
    # Procedures: instructions to the assistant, kept in the user's words.
    _rule("procedure", "en", rf"{_CLAUSE_START}(?:please\s+|and\s+|so\s+|also\s+)?(?:you (?:should|must)\s+)?", EN_ALWAYS, "{value}", checks_negation=False),
    _rule("procedure", "en", rf"{_CLAUSE_START}(?:from now on|going forward|in (?:the )?future)\s*,?\s+", EN_INSTRUCTION, "{value}", checks_negation=False),
    _rule("procedure", "fr", rf"{_CLAUSE_START}(?:et\s+|alors\s+|aussi\s+)?(?:(?:tu dois|vous devez|il faut)\s+)?", FR_ALWAYS, "{value}", checks_negation=False),
    _rule("procedure", "fr", rf"{_CLAUSE_START}(?:et\s+)?", FR_IMPERATIVE_ALWAYS, "{value}", checks_negation=False),
    _rule("procedure", "fr", rf"{_CLAUSE_START}(?:désormais|dorénavant|à partir de maintenant|a partir de maintenant)\s*,?\s+", FR_INSTRUCTION, "{value}", checks_negation=False),
    # Decisions taken in the session.
    _rule("episode", "en", r"\bwe(?:'ve|’ve| have)?\s+(?P<verb>decided|agreed)\s+", REST, "We {verb} {value}", importance="high", event_type="decision", is_rewritten=True),
    _rule("episode", "en", r"\bi(?:'ve|’ve| have)?\s+decided\s+", REST, "The user decided {value}", importance="high", event_type="decision", is_rewritten=True),
    _rule("episode", "fr", r"\b(?:nous avons|on a)\s+(?P<verb>décidé|convenu|tranché)\s+", REST, "Nous avons {verb} {value}", importance="high", event_type="decision", is_rewritten=True),
    _rule("episode", "fr", rf"\bj{APOS}ai\s+décidé\s+", REST, "L'utilisateur a décidé {value}", importance="high", event_type="decision", is_rewritten=True),
    # Reminders and commitments: open items, with a due date when one is given.
    _rule("open_item", "en", r"\bremind me\s+to\s+", REST, "Remind the user to {value}", date_use="optional", is_rewritten=True),
    _rule("open_item", "fr", rf"\b(?:rappelle-moi|rappelez-moi|rappelle moi|me rappeler)\s+(?:de\s+|d{APOS})", REST, "Rappel pour l'utilisateur : {value}", date_use="optional", is_rewritten=True),
    _rule("open_item", "en", r"\bi(?:'ll|’ll| will| am going to|'m going to|’m going to| promise to| commit to)\s+", EN_TASK, "The user will {value}", event_type="commitment", date_use="required", is_rewritten=True),
    _rule("open_item", "en", r"\bi (?:have to|need to|must|have got to|'ve got to|’ve got to)\s+", EN_TASK, "The user needs to {value}", event_type="commitment", date_use="required", is_rewritten=True),
    _rule("open_item", "fr", r"\bje vais\s+", FR_TASK, "L'utilisateur va {value}", event_type="commitment", date_use="required", is_rewritten=True),
    _rule("open_item", "fr", r"\bje dois\s+", FR_TASK, "L'utilisateur doit {value}", event_type="commitment", date_use="required", is_rewritten=True),
    _rule("open_item", "fr", rf"\bje m{APOS}engage à\s+", REST, "L'utilisateur s'engage à {value}", event_type="commitment", date_use="required", is_rewritten=True),
    _rule("open_item", "fr", r"\bje (?:te |vous )?promets\s+(?=de\b|d['’])", REST, "L'utilisateur promet {value}", event_type="commitment", date_use="required", is_rewritten=True),
)
# fmt: on

_EN_PRONOUNS = {
    "i'm": "they're",
    "i've": "they've",
    "i'll": "they'll",
    "i'd": "they'd",
    "i": "they",
    "me": "them",
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
}
_FR_PRONOUNS = {"mon": "son", "ma": "sa", "mes": "ses", "me": "se", "m'": "s'", "moi": "lui"}
_EN_PRONOUN = text_patterns.compile(
    r"\b(?:i['’](?:m|ve|ll|d)|myself|mine|my|me|i)\b", text_patterns.IGNORECASE
)
_FR_PRONOUN = text_patterns.compile(
    r"\b(?:m['’]|mon\b|ma\b|mes\b|me\b|moi\b)", text_patterns.IGNORECASE
)


def french_relation_subject(determiner: str, relation: str) -> str:
    """ "ma fille" -> "La fille", "mon épouse" -> "L'épouse": the relation as a sentence subject."""
    if relation[:1].casefold() in "aâàeéèêiîoôuhy":
        return f"L'{relation}"
    return f"{'La' if determiner.casefold() == 'ma' else 'Le'} {relation}"


def to_third_person(text: str, language: Language) -> str:
    """Rewrite the speaker's own pronouns ("my report", "mon rapport") for a stored memory."""
    if language == "en":
        pronouns, pattern = _EN_PRONOUNS, _EN_PRONOUN
    else:
        pronouns, pattern = _FR_PRONOUNS, _FR_PRONOUN
    return pattern.sub(lambda match: pronouns[match.group().lower().replace("’", "'")], text)
