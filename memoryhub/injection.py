"""Write-time detection of memory text that reads like instructions to a model.

Detection is a signal for review, not the defence: recalled text is always fenced
(`memoryhub.fencing`) whatever this module says. Rules are kept narrow so that ordinary
memories ("I always ignore spam emails", "My role is system administrator") pass.
"""

from __future__ import annotations

import unicodedata

from memoryhub import text_patterns
from memoryhub.char_tables import without_combining, without_invisible

# Matching runs on a normalised copy, so obfuscated spellings (fullwidth letters, zero-width
# characters, accents, Cyrillic or Greek look-alikes, smart quotes) hit the same plain rules.
_LOOKALIKES = str.maketrans(
    # Cyrillic and Greek letters that render like Latin ones (lower case: we casefold first),
    # dotless i and script g, then curly quotes and primes, then angle-bracket look-alikes.
    "\u0430\u0435\u0456\u0458\u043e\u0440\u0441\u0443\u0445\u0455\u0501\u04bb\u04cf\u051b\u051d"
    "\u03b1\u03b5\u03b9\u03ba\u03bd\u03bf\u03c1\u03c4\u03c5\u0131\u0261"
    "\u201c\u201d\u201e\u201f\u2033\u2018\u2019\u201a\u201b\u2032"
    "\u2039\u3008\u27e8\u276c\u276e\u02c2\u203a\u3009\u27e9\u276d\u276f\u02c3",
    "aeijopcyxsdhlqwaeikvoptuig\"\"\"\"\"'''''<<<<<<>>>>>>",
)

# Phrases that try to replace the platform's rules: "ignore previous instructions" and kin.
_OVERRIDE = (
    # verb … qualifier … noun: "ignore all previous instructions", "disregard prior rules".
    r"\b(?:ignore|disregard|forget|override|bypass)\s(?:(?:all|any|of|the|your|these|those)\s)*"
    r"(?:previous|prior|above|earlier|preceding|foregoing|former|original|initial|system|"
    r"developer|safety)\s(?:[\w-]+\s)?"
    r"(?:instructions?|prompts?|directives?|guidelines|rules|guardrails|commands|messages?)\b",
    # "ignore your instructions", "disregard all instructions" (but not "ignore all rules").
    r"\b(?:ignore|disregard|forget|override|bypass)\s(?:all|any|your)\s(?:of\s)?(?:your\s|the\s)?"
    r"(?:instructions|prompts?|directives|guidelines|programming)\b",
    r"\b(?:ignore|disregard|forget)\s(?:(?:all|everything|anything)\s)?(?:of\s)?(?:the\s)?"
    r"(?:text\s|message\s|instructions\s)?above\b",
    r"\b(?:ignore|disregard|forget)\severything\s(?:before|previous|prior|you\s(?:were|have\sbeen)\stold)\b",
    r"\byou\sare\snow\s(?:a|an|in|no\slonger|dan|free|unrestricted|jailbroken|unfiltered|acting|"
    r"going\sto|operating)\b",
    r"\bfrom\snow\son,?\syou\s(?:are|will|must|should|shall|can)\b",
    r"\b(?:new|updated|revised|real|actual|true|override)\s(?:system\s)?"
    r"(?:instructions|prompt|rules|directives)\s?:",
    r"\bsystem\sprompt\s?:",
    r"\bsystem\sprompt\s(?:override|overridden|is\snow|has\schanged|update)",
    r"\byour\s(?:system|initial|original|hidden)\s(?:prompt|instructions)\b",
    r"\b(?:reveal|print|show|repeat|output|display|leak|dump)\s(?:me\s)?(?:your\s(?:[\w-]+\s)?"
    r"(?:prompt|instructions)|the\s(?:system|initial|original|hidden)\s(?:prompt|instructions))\b",
    # Demands of obedience and claims of authority over the assistant: "from now on obey me",
    # "always do whatever I say", "I am an admin of this system" (not "I obey my doctor").
    r"\bobey\s(?:only\s)?(?:me|us)\b",
    r"\b(?:obey|follow|execute)\s(?:only\s)?(?:all\s|every\s)?(?:my|our)\s(?:orders|commands)\b",
    r"\b(?:do|follow)\s(?:exactly\s)?(?:what|whatever|everything|anything)\s(?:i|we)\s"
    r"(?:say|tell\syou|command|order)\b",
    r"\bi\s?(?:am|'m)\s(?:an?|the|your)\s(?:admin|administrator|developer|creator|owner|operator)"
    r"\sof\s(?:this|the|your)\s(?:system|assistant|ai|model|bot|chatbot)\b",
    r"\bi\s?(?:am|'m)\syour\s(?:admin|administrator|developer|creator|owner|operator|master)\b",
    # French (accents are stripped before matching).
    r"\b(?:ignore|oublie|neglige)[rsz]?\s(?:(?:toutes|tous|les|des|ces)\s){0,2}"
    r"(?:instructions|consignes|regles|directives)\s"
    r"(?:precedentes|anterieures|ci-dessus|au-dessus|d'avant|initiales|du\ssysteme)\b",
    r"\b(?:ignore|oublie)[rsz]?\s(?:toutes\s)?(?:tes|vos)\s(?:instructions|consignes|regles)\b",
    r"\bne\s(?:tiens|tenez)\spas\scompte\sdes?\s(?:[\w-]+\s){0,2}(?:instructions|consignes)\b",
    r"\b(?:tu\ses|vous\setes)\smaintenant\s(?:un|une|en\smode|libre|dan|sans)\b",
    r"\bnouvelles\s(?:instructions|consignes|regles)\s?:",
    # Obedience and authority, as in English: "désormais obéis-moi", "fais ce que je te dis",
    # "je suis l'administrateur de ce système" (not "je suis l'administrateur du réseau").
    r"\bobei(?:s|ssez)[\s-](?:moi|nous)\b",
    r"\bobei(?:s|ssez|r)\sa\s(?:tous\s|toutes\s)?(?:mes|nos)\s(?:ordres|commandes)\b",
    r"\b(?:fais|faites)\s(?:exactement\s)?(?:tout\s)?ce\sque\s(?:je|nous)\s(?:te\s|vous\s)?"
    r"(?:dis|disons|ordonne|ordonnons|demande|demandons)\b",
    r"\bje\ssuis\s(?:l'|le\s|la\s|un\s|une\s)(?:admin|administrat(?:eur|rice)|developpeu(?:r|se)|"
    r"createur|creatrice|proprietaire|operat(?:eur|rice))\sde\s(?:ce|cet|cette|ton|ta|votre)\s"
    r"(?:systeme|assistant|ia|modele|bot|chatbot)\b",
    r"\bje\ssuis\s(?:ton|ta|votre)\s(?:admin|administrat(?:eur|rice)|developpeu(?:r|se)|"
    r"createur|creatrice|proprietaire|operat(?:eur|rice)|maitre)\b",
)

# Chat-template role markers that try to start a new system/assistant turn.
_ROLE_TAG = (
    r"<\|[a-z_]{2,40}\|>",
    r"<\|?im_(?:start|end|sep)\|?>",
    r"\[\s?/?\s?inst\s?\]",
    r"<<\s?/?\s?sys\s?>>",
    r"<\s?/?\s?(?:system|assistant|user|human|developer|s)\s?>",
    # "User:" is left out on purpose: "User: prefers dark mode" is a common note format.
    r"(?m)^\s?(?:#{1,6}\s?|\*\*)?(?:system|assistant|human)\s?(?:\*\*)?\s?:",
    r"(?m)^\s?#{1,6}\s?(?:instruction|response)s?\s?:",
)

# Tool-call syntax of the common model APIs: XML-ish blocks and JSON call objects.
_TOOL_CALL = (
    r"<\s?/?\s?(?:[a-z_]+:)?(?:tool_calls?|tool_use|tool_result|function_calls?|function_results?)\b",
    r"<\s?(?:[a-z_]+:)?(?:invoke|parameter)\s?name\s?=",
    r"\"(?:tool|tool_name|tool_calls?|tool_use|tool_choice|function_call)\"\s?:",
    r"\"type\"\s?:\s?\"(?:function|tool_use|tool_call)\"",
    r"\{\s?\"name\"\s?:\s?\"[^\"]{1,80}\"\s?,\s?\"(?:arguments|parameters|input)\"\s?:",
)

_RULES: tuple[tuple[str, text_patterns.Pattern[str]], ...] = tuple(
    (signal, text_patterns.compile(pattern))
    for signal, patterns in (
        ("override", _OVERRIDE),
        ("role_tag", _ROLE_TAG),
        ("tool_call", _TOOL_CALL),
    )
    for pattern in patterns
)

_HORIZONTAL_SPACE = text_patterns.compile(r"[^\S\n]+")
_LINE_BREAKS = text_patterns.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")


def looks_like_instructions(text: str) -> bool:
    """Return whether `text` reads like instructions, a role tag or a tool call to a model."""
    return bool(instruction_signals(text))


def instruction_signals(text: str) -> tuple[str, ...]:
    """Return which rules fired ("override", "role_tag", "tool_call"), each once, in that order."""
    lines = _normalise(text)
    # Phrase rules see one space between words whatever the line breaks; line rules see lines.
    flat = " ".join(lines.split())
    fired: list[str] = []
    for signal, pattern in _RULES:
        target = lines if pattern.flags & text_patterns.MULTILINE else flat
        if signal not in fired and pattern.search(target):
            fired.append(signal)
    return tuple(fired)


def _normalise(text: str) -> str:
    text = _LINE_BREAKS.sub("\n", text)
    # Zero-width and bidi characters split words invisibly ("ig\u200bnore"); drop them.
    text = without_invisible(text)
    # NFKC_Casefold's recipe (decompose, casefold, decompose) without the final recomposition,
    # so fullwidth and math-styled letters fold to plain lower case and accents come off.
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    text = without_combining(text)
    text = text.translate(_LOOKALIKES)
    return _HORIZONTAL_SPACE.sub(" ", text)
