"""Turn a search query into lexical terms for the blind index: stopwords out, word forms in.

The blind index stores keyed hashes of each memory's exact normalised tokens, so the index
cannot be stemmed after the fact. Instead each query word becomes a *term*: a small group of
the word forms it likely appears as ("paint" → paint, paints, painted, painting, …). A memory
matches a term when it holds any of its forms. Pure Python: no database, no keys.
"""

from __future__ import annotations

from memoryhub import text_patterns
from memoryhub.keyring import tokenize

# Function words carry no lexical signal but would still match most memories. Kept in the
# normalised form of the blind index (casefolded, accents stripped). English and French.
QUERY_STOPWORDS = frozenset(
    str.split(
        "a an the and or of to in on at for with from by about as is are was were be been being "
        "do does did done have has had i you he she it we they me him her them my your his its "
        "our their what when where who whom which why how that this these those there here not "
        "no yes would could should will can may might shall must just so than then too very also "
        "into over after before up down out if any some all both each few more most other such "
        "only own same s t don now "
        "je tu il elle nous vous ils elles le la les un une des du de d l et ou mais donc que qui "
        "quoi quand comment pourquoi ou est ce cette ces mon ma mes ton ta tes son sa ses au aux "
        "en dans sur pour par avec pas ne y a ai as avait etait "
        # French elisions split off by the tokenizer ("j'ai" → j, ai), interrogatives,
        # pronouns, possessives and the forms of être, avoir and faire that questions lean on.
        "j m n c s qu lui leur leurs moi toi se votre nos vos ca cela ceci "
        "quel quelle quels quelles lequel laquelle combien "
        "suis es sommes etes sont ont avez avons ete etre avoir fait faire "
        "chez vers sans sous entre comme tres plus moins aussi bien tout tous toute toutes "
        "rien encore deja "
        # The French auxiliaries that English says with its modals (will can may must would
        # could should, listed above): the present and conditional of aller, pouvoir, devoir
        # and vouloir ("je vais partir", "peuvent me trouver", "je voudrais").
        "vais vas va allons allez vont irais irait "
        "peux peut pouvons pouvez peuvent pourrais pourrait "
        "dois doit devons devez doivent devrais devrait "
        "veux veut voulons voulez veulent voudrais voudrait"
    )
)
# Suffix rules are for words of this many letters or more: "is" → "iss" helps nobody.
MIN_STEM_LENGTH = 4
_SUFFIXES = ("s", "es", "ed", "d", "ing", "er")


def word_forms(word: str) -> tuple[str, ...]:
    """The word and its likely English inflections, the word itself first."""
    forms = dict.fromkeys([word])
    if len(word) < MIN_STEM_LENGTH:
        return tuple(forms)
    for suffix in _SUFFIXES:
        forms[word + suffix] = None
    # Strip an inflection too, so "painting" also finds "paint" and "paints".
    if word.endswith("ing"):
        forms.update(dict.fromkeys([word[:-3], word[:-3] + "e", word[:-3] + "s"]))
    if word.endswith("ed"):
        forms.update(dict.fromkeys([word[:-2], word[:-1]]))
    if word.endswith("es"):
        forms[word[:-2]] = None
    if word.endswith("s"):
        forms[word[:-1]] = None
    if word.endswith("e"):
        forms[word[:-1] + "ing"] = None
    return tuple(form for form in forms if form)


def query_terms(query: str) -> tuple[tuple[str, ...], ...]:
    """One group of word forms per distinct meaningful word of the query, in query order.

    A query made only of stopwords keeps them: "who is it" must still match something.
    """
    words = list(dict.fromkeys(tokenize(query)))
    meaningful = [word for word in words if word not in QUERY_STOPWORDS]
    return tuple(word_forms(word) for word in (meaningful or words))


# A capitalised word that does not open a sentence: most likely a name ("John", "Lyon").
_NAME = text_patterns.compile(r"(?<![.?!:]\s)(?<!^)\b[A-Z][\w’'-]*", text_patterns.UNICODE)


def query_names(query: str) -> frozenset[str]:
    """The normalised words of the query written as names: a person, a place, a title.

    A memory naming them is more likely about what is asked ("Which cities has John been
    to?" is about John's turns); recall weighs these terms more.
    """
    return frozenset(
        word
        for match in _NAME.finditer(query.strip())
        for word in tokenize(match.group())
        if word not in QUERY_STOPWORDS
    )
