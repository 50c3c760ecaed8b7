"""Speaker cues: which names of a query speak in the user's memories, and the query without them."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import DEFAULT_DB_ALIAS, connections

from memoryhub import text_patterns
from memoryhub.crypto import normalise_token
from memoryhub.keyring import TOKEN_PATTERN, UserCipher
from memoryhub.memory_rows import recallable_sql
from memoryhub.models import CountedMode, Mode, TermCount, User
from memoryhub.queries.query_terms import query_names

# A query names a speaker by name; their memories rarely do ("I paint sunsets"). The name is put
# in the speaker cue and this word stands for it in the query's embedding.
SPEAKER_STAND_IN = "someone"


@dataclass(frozen=True)
class QueryCues:
    """What the user's memories tell about a query before it is ranked (`read_cues`)."""

    # The text to embed: the names of the query that speak in the user's memories replaced.
    text: str
    # Speaker digests (keyring `speaker_tokens`) of those names.
    speakers: tuple[str, ...] = ()


def read_cues(
    *, user: User, mode: Mode, query: str, cipher: UserCipher, using: str = DEFAULT_DB_ALIAS
) -> QueryCues:
    """Which names of the query speak in the user's recallable memories in the mode.

    A query naming no one costs nothing; else one statement, whatever the filter.
    """
    names = sorted(query_names(query))
    if not names:
        return QueryCues(text=query)
    digests = cipher.speaker_tokens(names)
    scope_sql, scope_params = recallable_sql(user=user, mode=mode)
    # A heavy user's kept counts (services/term_counts.py) say it in one row per name; looking
    # through their 100,000 memories took 37 ms. Those count the active memories of any
    # confidence: a name heard only in low-confidence memories still counts as a speaker.
    sql = f"""
        SELECT d FROM unnest(%s::varchar[]) AS d WHERE CASE
            WHEN EXISTS (SELECT FROM {CountedMode._meta.db_table} WHERE mode_id = %s AND user_id = %s)
            THEN EXISTS (
                SELECT FROM {TermCount._meta.db_table} AS t
                WHERE t.user_id = %s AND t.mode_id = %s AND t.digest = d
            )
            ELSE EXISTS (
                SELECT 1 FROM (SELECT m.blind_tokens {scope_sql}) AS s
                WHERE s.blind_tokens @> ARRAY[d]::varchar[]
            )
        END
    """  # noqa: S608  # Only our own SQL is formatted in; every value is a parameter.
    with connections[using].cursor() as cursor:
        cursor.execute(sql, [digests, mode.pk, user.pk, user.pk, mode.pk, *scope_params])
        speaking = {row[0] for row in cursor.fetchall()}
    spoken = [(name, d) for name, d in zip(names, digests, strict=True) if d in speaking]
    return QueryCues(
        text=_stand_in(query, {name for name, _ in spoken}),
        speakers=tuple(digest for _, digest in spoken),
    )


def _stand_in(query: str, names: set[str]) -> str:
    """The query with each of these names, written as a name, replaced by the stand-in."""
    if not names:
        return query

    def replace(match: text_patterns.Match[str]) -> str:
        word = match.group()
        is_name = word[:1].isupper() and normalise_token(word) in names
        return SPEAKER_STAND_IN if is_name else word

    return TOKEN_PATTERN.sub(replace, query)
