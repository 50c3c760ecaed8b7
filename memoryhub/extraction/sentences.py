"""Split message text into sentences and content words, for English and French."""

from __future__ import annotations

from memoryhub import text_patterns

# A sentence ends at . ! ? … (plus closing quotes) followed by a space, or at a line break;
# "3.5" or "v2.1" do not end one.
# From the first mark of a run only, taking the run and its closers whole: from every mark of
# "....x" it rescanned the rest of the run (quadratic).
_SENTENCE_END = text_patterns.compile(r"(?<![.!?…])[.!?…]++[\"'’”»)\]]*+(?=\s|$)|\n+")
_WORD = text_patterns.compile(r"[^\W\d_][\w'’-]*")
_APOSTROPHE = text_patterns.compile(r"['’]")

# fmt: off
STOPWORDS = frozenset((
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "aren't", "as", "at", "be", "because", "been", "before", "being", "below", "between",
    "both", "but", "by", "can", "can't", "cannot", "could", "couldn't", "did", "didn't", "do",
    "does", "doesn't", "doing", "don't", "down", "during", "each", "few", "for", "from", "further",
    "get", "got", "had", "hadn't", "has", "hasn't", "have", "haven't", "having", "he", "her",
    "here", "hers", "herself", "him", "himself", "his", "how", "i", "i'd", "i'll", "i'm", "i've",
    "if", "in", "into", "is", "isn't", "it", "it's", "its", "itself", "just", "let's", "like", "me",
    "more", "most", "much", "my", "myself", "no", "nor", "not", "now", "of", "off", "on", "once",
    "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "own", "really",
    "same", "she", "should", "shouldn't", "so", "some", "such", "than", "thank", "thanks", "that",
    "that's", "the", "their", "theirs", "them", "themselves", "then", "there", "there's", "these",
    "they", "they're", "this", "those", "through", "to", "too", "under", "until", "up", "very",
    "was", "wasn't", "we", "we're", "we've", "were", "weren't", "what", "what's", "when", "where",
    "which", "while", "who", "whom", "why", "will", "with", "won't", "would", "wouldn't", "yes",
    "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "okay", "sure",
    "great", "good", "please", "well", "yeah", "hello", "hi", "hey", "need", "want", "know",
    "think", "going", "make", "sounds", "something", "thing", "things", "maybe", "still", "alors",
    "au", "aux", "avec", "avoir", "bien", "bon", "bonjour", "ce", "cela", "ces", "cet", "cette",
    "ceci", "chez", "comme", "comment", "dans", "de", "des", "du", "elle", "elles", "en", "encore",
    "est", "et", "été", "être", "eu", "fait", "faire", "il", "ils", "je", "la", "le", "les", "leur",
    "leurs", "lui", "ma", "mais", "merci", "même", "mes", "moi", "mon", "ne", "nos", "notre",
    "nous", "ont", "ou", "où", "par", "pas", "peu", "peut", "plus", "pour", "pourquoi", "quand",
    "que", "quel", "quelle", "quels", "qui", "sa", "sans", "se", "ses", "si", "son", "sont", "suis",
    "sur", "ta", "te", "tes", "toi", "ton", "tous", "tout", "toute", "toutes", "très", "tu", "un",
    "une", "vos", "votre", "vous", "ça", "c'est", "j'ai", "d'accord", "oui", "non", "voilà",
    "aussi", "name", "call", "help", "appelle", "nom", "avant", "après", "donc", "avez", "sommes",
    "êtes", "était", "faut", "veux", "voudrais", "pouvez", "peux"
))
# fmt: on


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Return the (start, end) spans of the sentences of `text`, trimmed of whitespace."""
    spans: list[tuple[int, int]] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        end = match.start() if match.group().isspace() else match.end()
        _add_trimmed(text, start, end, spans)
        start = match.end()
    _add_trimmed(text, start, len(text), spans)
    return spans


def content_words(text: str) -> list[str]:
    """Return the lowercased words of `text` that carry meaning (no stopwords, 4+ letters)."""
    words = []
    for word in _WORD.findall(text.casefold()):
        # French elision: "l'anniversaire" is about "anniversaire".
        word = _APOSTROPHE.split(word)[-1].strip("-")
        if len(word) >= 4 and word not in STOPWORDS:
            words.append(word)
    return words


def _add_trimmed(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))
