"""Hybrid recall: rank a user's memories in a mode by meaning, words, freshness and importance.

The score of a memory m for a query q (docs/retrieval.md explains and justifies each part):

    score = cosine(q, m) + 0.25 · lexical(q, m) − 0.10 · (1 − freshness(m)) + importance_bonus(m)

- cosine: of the 384-d MiniLM embeddings, computed exactly in PostgreSQL (pgvector `<=>`) over
  the user's own candidate rows; no approximate index can drop a row that passes the filter.
  A heavy user (queries/nearest.py) has only their nearest candidates and those holding a query
  word read, through their own indexes, and ranked the same way.
- lexical: the inverse document frequencies of the query terms the memory holds, read from its
  keyed blind index (no plaintext in the database), divided by ln(1 + N) so it stays in [0, 1]
  whatever the number N of candidates; IDF is over the user's own candidates.
- freshness: 0.5 ** (days since last learnt or used / half-life of the kind); critical: 1.

That is a memory's own score; to it are added 0.2 when its time falls in a period the query
names ("in October 2023", query_dates.py), and names in the query weigh twice in `lexical`.
Then memories told together (a session, else the same moment) lift each other: each goes
0.3 of the way toward its better neighbour's own score and 0.3 toward its group's best;
a guess ("Would Alice enjoy hiking?", query_form.py) lifts no neighbour. Last, a memory spoken
by someone the query names ("Caroline: I paint sunsets" for "What does Caroline paint?") gets
0.15, and that name is replaced by "someone" in the text the query is embedded from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal
from uuid import UUID

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections, transaction
from django.db.models import BooleanField
from django.db.models.expressions import RawSQL
from django.utils import timezone
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit import log as audit_log
from memoryhub.audit.actions import AuditAction
from memoryhub.embeddings import Embedder
from memoryhub.errors import InvalidInputError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.memory_rows import MemoryItem, decrypt_memory, memories_of, recallable_sql
from memoryhub.models import (
    CountedMode,
    Importance,
    Memory,
    MemoryKind,
    MemoryStatus,
    Mode,
    TermCount,
    User,
)
from memoryhub.queries.as_of import check_as_of, items_as_of
from memoryhub.queries.memories import is_memory_in_use
from memoryhub.queries.nearest import nearest_candidates, nearest_rows, scan_settings
from memoryhub.queries.query_dates import query_period
from memoryhub.queries.query_form import is_speculative
from memoryhub.queries.query_terms import query_names, query_terms
from memoryhub.queries.recall_filter import NO_FILTER, RecallFilter, candidates, check_filter
from memoryhub.queries.speaker_cues import QueryCues, read_cues
from memoryhub.replicas import read_for_user
from memoryhub.services.access import record_memory_access
from memoryhub.telemetry import traced
from memoryhub.vector_search import cosine_distance, cosine_distance_sql

# Tuned on LoCoMo (bench_retrieval): Recall@10 is flat for weights 0.3 to 0.5.
LEXICAL_WEIGHT = 0.25
# A memory told just before or after a better match is lifted this share of the way toward
# that neighbour's score, and this share toward the best match among the memories told with it
# (its session): the answer is often the turn beside the one that matches the question's words.
NEIGHBOUR_LIFT = 0.3
GROUP_LIFT = 0.3
# A query term written as a name ("John", "Lyon") weighs this many times its IDF: a memory
# naming who or what is asked about is more likely the answer.
NAME_WEIGHT = 2.0
# Added to a memory whose time falls in the period the query names ("in October 2023").
PERIOD_BONUS = 0.2
# Added, after the lifts, to a memory spoken by someone the query names ("What does Caroline
# paint?" and "Caroline: I paint sunsets"). Not lifted on to the turns around it.
SPEAKER_BONUS = 0.15
# At most this much is taken off a memory nobody has learnt or used for many half-lives.
STALENESS_PENALTY = 0.10
IMPORTANCE_BONUS: dict[str, float] = {
    Importance.LOW: -0.05,
    Importance.NORMAL: 0.0,
    Importance.HIGH: 0.05,
    Importance.CRITICAL: 0.10,
}
# Days after which a memory of the kind counts half as fresh; critical memories never fade.
HALF_LIFE_DAYS: dict[str, int] = {
    MemoryKind.FACT: 180,
    MemoryKind.PREFERENCE: 180,
    MemoryKind.PROCEDURE: 365,
    MemoryKind.EPISODE: 30,
    MemoryKind.SESSION_SUMMARY: 14,
    MemoryKind.OPEN_ITEM: 60,
    MemoryKind.THEME: 90,
}
MAX_K = 100
# Read by the ranking SQL, never by the Python that decrypts: not worth fetching (a vector is
# 1.5 kB to parse).
UNREAD_COLUMNS = ("embedding", "blind_tokens")
_LOADED = [f for f in Memory._meta.concrete_fields if f.attname not in UNREAD_COLUMNS]
# The loaded columns, as `Memory.from_db` takes them and as SQL over `m` (the memory table) reads
# them: for the hand-written statements that build rows (here and queries/context_layers.py).
LOADED_FIELDS = [f.attname for f in _LOADED]
LOADED_SQL = ", ".join(f'm."{f.column}"' for f in _LOADED)
MAX_QUERY_CHARS = 4000
# The blind-index column as the heavy path's SQL fragments name it.
_TOKENS = f'"{Memory._meta.db_table}"."blind_tokens"'
# The relevance floor of a search a person or an agent asks for (the dashboard and the API; the
# benchmarks rank without one). A little under context assembly's 0.3: a search says what it
# looks for. Below it, "no close match" is a better answer than the least bad memory.
DEFAULT_MIN_SCORE = 0.25


@dataclass(frozen=True)
class RankedMemory:
    """One memory's place in a ranking: its row (still encrypted), its score and its parts."""

    row: Memory
    score: float
    cosine: float
    lexical: float
    freshness: float

    @property
    def id(self) -> UUID:
        return self.row.id


def _case(column: str, values: dict[str, float], default: float) -> tuple[str, list[object]]:
    # The weights are ours, but they still travel as parameters: no number is pasted into SQL.
    whens = " ".join("WHEN %s THEN %s" for _ in values)
    params: list[object] = [part for pair in values.items() for part in pair]
    return f"CASE {column} {whens} ELSE %s END", [*params, default]


# What the ranking reads of each candidate, besides its distance to the query.
_CANDIDATE_COLUMNS = (
    "id",
    "blind_tokens",
    "kind",
    "importance",
    "created_at",
    "last_accessed_at",
    "session_id",
    "occurred_at",
)


def _candidate_query(
    *,
    user: User,
    mode: Mode,
    cipher: UserCipher,
    recall_filter: RecallFilter,
    query_vector: Sequence[float],
    vector_model: str,
) -> tuple[str, list[Any]]:
    """The candidates' SQL: their distance to the query and the columns the ranking reads.

    The distance is computed as each candidate is read, so only a number is kept per row.
    Without narrowing but excluded ids (every search and context request), hand-written SQL:
    the ORM's compile of it cost more Python than the rest of the ranking (issue 34).
    """
    if recall_filter == RecallFilter(exclude_ids=recall_filter.exclude_ids):
        distance_sql, distance_params = cosine_distance_sql(
            query_vector, model=vector_model, column="m.embedding"
        )
        scope_sql, scope_params = recallable_sql(user=user, mode=mode)
        columns = ", ".join(f"m.{column}" for column in _CANDIDATE_COLUMNS)
        sql = f"SELECT {columns}, {distance_sql} AS distance {scope_sql}"
        params = [*distance_params, *scope_params]
        if recall_filter.exclude_ids:
            sql += " AND NOT (m.id = ANY(%s::uuid[]))"
            params.append(list(recall_filter.exclude_ids))
        return sql, params
    scoped = candidates(user=user, mode=mode, cipher=cipher, recall_filter=recall_filter)
    sql, orm_params = (
        scoped.annotate(distance=cosine_distance(query_vector, model=vector_model))
        .values("distance", *_CANDIDATE_COLUMNS)
        .query.sql_with_params()
    )
    return sql, list(orm_params)


def ranking_query(
    *,
    user: User,
    mode: Mode,
    query: str,
    query_vector: Sequence[float],
    vector_model: str,
    cipher: UserCipher,
    k: int,
    cues: QueryCues | None = None,
    recall_filter: RecallFilter = NO_FILTER,
    now: datetime | None = None,
    nearest: int | None = None,
    kept_counts: bool = True,
) -> tuple[str, list[Any]]:
    """The SQL and parameters that rank the candidates (run by `rank_memories`).

    `query_vector` embeds `cues.text` (the query itself without cues), made by `vector_model`.
    With `nearest`, only that many candidates nearest to it are ranked (queries/nearest.py),
    with the user's kept counts if they have them (`kept_counts=False`: counted here, as the
    benchmark's side-by-side does).
    """
    cues = cues or QueryCues(text=query)
    term_numbers: list[int] = []
    digests: list[str] = []
    names = query_names(query)
    boosts: list[float] = []
    for number, forms in enumerate(query_terms(query)):
        boosts.append(NAME_WEIGHT if forms[0] in names else 1.0)
        for digest in cipher.blind_tokens(" ".join(forms)):
            term_numbers.append(number)
            digests.append(digest)
    # The number of candidates the IDF is counted over: all of them, even when fewer are read.
    size_sql, size_params = "SELECT count(*)::float8 AS n FROM candidates", ()
    # How many candidates hold each term: counted among those read, unless heavy (below).
    counts_cte, counts_params = "", ()
    counts_sql = "SELECT term, count(*) AS n FROM matches GROUP BY term"
    if nearest is None:
        candidate_sql, candidate_params = _candidate_query(
            user=user,
            mode=mode,
            cipher=cipher,
            recall_filter=recall_filter,
            query_vector=query_vector,
            vector_model=vector_model,
        )
    else:
        scoped = candidates(user=user, mode=mode, cipher=cipher, recall_filter=recall_filter)
        # The distance is computed as each candidate is read, so only a number is kept per row.
        read = scoped.annotate(distance=cosine_distance(query_vector, model=vector_model)).values(
            "distance", *_CANDIDATE_COLUMNS
        )
        # A heavy user's (queries/nearest.py): the nearest candidates, and those that hold a
        # rare query word (held by at most MEMORYHUB_NEAREST_WORD_CAP memories; 0: any word): a frequent
        # word weighs little, and its memories still get its weight when among the nearest.
        # The IDF is over all of the user's active rows: each term's memories and the total,
        # kept as they write, else counted in the blind-index GIN and the scope index.
        # A confidence is only in the row: the few active rows of low confidence count too,
        # which moves an IDF by a hair, not a ranking.
        active = memories_of(user=user, mode=mode).filter(status=MemoryStatus.ACTIVE)
        counted, counted_params = active.values("id").order_by().query.sql_with_params()
        # Only our own column and CTE names are written into these fragments; the cap is a
        # parameter. `forms` and `held` are CTEs of the ranking SQL below.
        holding, holding_params = (
            active.filter(RawSQL(f"{_TOKENS} && forms.digests", (), BooleanField()))  # noqa: S611
            .values("id")
            .order_by()
            .query.sql_with_params()
        )
        live_size = f"(SELECT count(*)::float8 FROM ({counted}) AS s)"  # noqa: S608
        live_held = f"(SELECT count(*) FROM ({holding}) AS h)"  # noqa: S608
        if kept_counts:
            # A heavy user's counts are kept as they write (services/term_counts.py): one row
            # per mode and per query word form, instead of counting 100,000 rows. A term's
            # count is the sum of its forms' (a memory holding "paint" and "painting" counts
            # twice: a hair more common than it is). A mode not counted yet is counted here.
            size_sql = f"SELECT coalesce((SELECT memory_count::float8 FROM kept), {live_size}) AS n"  # noqa: S608
            size_params = tuple(counted_params)
            counts_cte = f"""
        kept AS MATERIALIZED (
            SELECT memory_count FROM {CountedMode._meta.db_table} WHERE mode_id = %s AND user_id = %s
        ),
        forms AS (SELECT term, array_agg(digest) AS digests FROM terms GROUP BY term),
        held AS MATERIALIZED (
            SELECT forms.term, forms.digests, CASE WHEN EXISTS (SELECT FROM kept) THEN (
                SELECT coalesce(sum(tc.memory_count), 0) FROM {TermCount._meta.db_table} AS tc
                WHERE tc.user_id = %s AND tc.mode_id = %s AND tc.digest = ANY(forms.digests)
            ) ELSE {live_held} END AS n
            FROM forms
        ),"""  # noqa: S608
            counts_params = (mode.pk, user.pk, user.pk, mode.pk, *holding_params)
        else:
            size_sql, size_params = f"SELECT {live_size} AS n", tuple(counted_params)
            counts_cte = f"""
        forms AS (SELECT term, array_agg(digest) AS digests FROM terms GROUP BY term),
        held AS MATERIALIZED (SELECT forms.term, forms.digests, {live_held} AS n FROM forms),"""  # noqa: S608
            counts_params = tuple(holding_params)
        counts_sql = "SELECT term, n FROM held WHERE n > 0"
        nearest_read = nearest_rows(read, vector=query_vector, model=vector_model, limit=nearest)
        cap = settings.MEMORYHUB_NEAREST_WORD_CAP
        if cap:
            rare = (
                f"{_TOKENS} && (SELECT coalesce(array_agg(d), '{{}}') "  # noqa: S608
                "FROM held, unnest(held.digests) AS d WHERE held.n <= %s)"
            )
            rare_read = read.filter(RawSQL(rare, (cap,), BooleanField()))  # noqa: S611
            # Those of a frequent word or a named speaker: the nearest of them, through the
            # same index (a name in 5% of the memories still weighs 0.25 with the speaker's).
            worded_read = read.filter(blind_tokens__overlap=[*digests, *cues.speakers])
            nearest_worded = nearest_rows(
                worded_read, vector=query_vector, model=vector_model, limit=nearest
            )
            worded = rare_read.union(nearest_worded)
        else:
            worded = read.filter(blind_tokens__overlap=[*digests, *cues.speakers])
        union_sql, union_params = nearest_read.union(worded).query.sql_with_params()
        candidate_sql, candidate_params = union_sql, list(union_params)
    half_life_sql, half_life_params = _case(
        "c.kind", {kind: float(days) for kind, days in HALF_LIFE_DAYS.items()}, 90.0
    )
    bonus_sql, bonus_params = _case("c.importance", IMPORTANCE_BONUS, 0.0)
    # One round trip, which also returns the winners' rows (their ids come from the scoped
    # candidates). Exact cosine over the candidates (a per-user scan through the btree scope
    # index), the IDF of each query term over the same candidates, freshness from the last use.
    # The candidates' tokens are flattened in one pass and probed against the query's digests
    # (`= ANY` of a constant array is a hash lookup); only the few hits are joined to their
    # terms. A subquery per candidate (let alone a join or DISTINCT in it, which builds hash
    # tables for every row) cost more than the cosine itself (docs/retrieval.md).
    sql = f"""
        WITH terms(term, digest) AS (SELECT * FROM unnest(%s::int[], %s::varchar[])),
        boosts(term, boost) AS (SELECT * FROM unnest(%s::int[], %s::float8[])),{counts_cte}
        candidates AS MATERIALIZED (
            SELECT c.* FROM ({candidate_sql}) AS c
        ),
        hits AS MATERIALIZED (
            SELECT t.id, t.digest FROM (
                SELECT c.id, unnest(c.blind_tokens) AS digest FROM candidates c
            ) AS t WHERE t.digest = ANY(%s::varchar[])
        ),
        speaking AS MATERIALIZED (
            SELECT DISTINCT hits.id FROM hits WHERE hits.digest = ANY(%s::varchar[])
        ),
        matches AS MATERIALIZED (
            SELECT DISTINCT hits.id, terms.term FROM hits JOIN terms ON terms.digest = hits.digest
        ),
        size AS ({size_sql}),
        weights AS MATERIALIZED (
            SELECT df.term,
                boosts.boost * ln(1 + (size.n - df.n + 0.5) / (df.n + 0.5)) / ln(1 + size.n)
                AS weight
            FROM ({counts_sql}) AS df CROSS JOIN size
            JOIN boosts ON boosts.term = df.term
        ),
        lexical AS MATERIALIZED (
            SELECT matches.id, sum(weights.weight) AS lexical
            FROM matches JOIN weights ON weights.term = matches.term
            GROUP BY matches.id
        ),
        scored AS (
            SELECT
                c.id,
                c.created_at,
                -- The memories told together: a session's, else those dated the same moment
                -- (one remember_many of a conversation); a memory with neither stands alone.
                coalesce(c.session_id::text, c.occurred_at::text, c.id::text) AS grp,
                coalesce(1 - c.distance, 0) AS cosine,
                CASE WHEN sp.id IS NULL THEN 0.0::float8 ELSE 1.0::float8 END AS speaks,
                coalesce(l.lexical, 0) AS lexical,
                -- float8 throughout: numeric power() would cost more than the whole ranking.
                CASE WHEN c.importance = %s THEN 1.0::float8 ELSE power(
                    0.5::float8,
                    greatest(0, extract(epoch FROM %s::timestamptz
                        - greatest(c.created_at, c.last_accessed_at))::float8 / 86400)
                    / ({half_life_sql})::float8
                ) END AS freshness,
                ({bonus_sql})::float8 AS bonus,
                -- The period the query names, if any (query_dates.py); NULLs match nothing.
                CASE WHEN coalesce(c.occurred_at, c.created_at) >= %s::timestamptz
                    AND coalesce(c.occurred_at, c.created_at) < %s::timestamptz
                    THEN 1.0::float8 ELSE 0.0::float8 END AS in_period
            FROM candidates c LEFT JOIN lexical l ON l.id = c.id
                LEFT JOIN speaking sp ON sp.id = c.id
        ),
        own AS (
            SELECT id, created_at, grp, cosine, lexical, freshness, speaks,
                cosine + %s * lexical - %s * (1 - freshness) + bonus + %s * in_period AS own
            FROM scored
        ),
        told AS (
            SELECT id, cosine, lexical, freshness, speaks, own,
                greatest(lag(own) OVER turns, lead(own) OVER turns) AS neighbour,
                max(own) OVER (PARTITION BY grp) AS group_best
            FROM own
            WINDOW turns AS (PARTITION BY grp ORDER BY created_at, id)
        ),
        top AS (
            SELECT id, own
                + %s * greatest(0, coalesce(neighbour, own) - own)
                + %s * (group_best - own)
                + %s * speaks AS score,
                cosine, lexical, freshness
            FROM told
            ORDER BY score DESC, id
            LIMIT %s
        )
        SELECT top.score, top.cosine, top.lexical, top.freshness, {LOADED_SQL}
        FROM top JOIN {Memory._meta.db_table} AS m ON m.id = top.id
        ORDER BY top.score DESC, top.id
    """  # noqa: S608  # Only our own SQL fragments are formatted in; every value is a parameter.
    now = now or timezone.now()
    period = query_period(query, now=now)
    params = [
        term_numbers,
        digests,
        list(range(len(boosts))),
        boosts,
        *counts_params,
        *candidate_params,
        [*digests, *cues.speakers],
        list(cues.speakers),
        *size_params,
        Importance.CRITICAL.value,
        now,
        *half_life_params,
        *bonus_params,
        period.start if period else None,
        period.end if period else None,
        LEXICAL_WEIGHT,
        STALENESS_PENALTY,
        PERIOD_BONUS,
        # A guess is answered by what the person said of themselves, often in several
        # sessions: the turns around a match (mostly the other speaker's) do not help there.
        0.0 if is_speculative(query) else NEIGHBOUR_LIFT,
        GROUP_LIFT,
        SPEAKER_BONUS,
        k,
    ]
    return sql, params


def rank_memories(
    *,
    user: User,
    mode: Mode,
    query: str,
    cipher: UserCipher,
    k: int,
    embedder: Embedder | None = None,
    query_vector: Sequence[float] | None = None,
    vector_model: str | None = None,
    cues: QueryCues | None = None,
    recall_filter: RecallFilter = NO_FILTER,
    now: datetime | None = None,
    using: str = DEFAULT_DB_ALIAS,
    nearest: int | Literal["auto"] | None = "auto",
    kept_counts: bool = True,
) -> list[RankedMemory]:
    """Rank the user's recallable memories in the mode for a query; best first, at most k.

    A caller that has read the cues (`read_cues`) passes them with the embedding of their text
    and its model (`vector_model`); else they are read here and the text is embedded with
    `embedder`. Nothing is decrypted and
    nothing is audited here. `using` names the database to read (memoryhub/replicas.py chooses it).
    `nearest`: rank only that many candidates nearest the query, None: every candidate, "auto":
    the nearest for a heavy user (queries/nearest.py), every candidate for the others.
    `kept_counts=False`: a heavy ranking counts its IDF at search time, even for a user whose
    counts are kept (the benchmark's side-by-side).
    """
    if cues is None or query_vector is None or vector_model is None:
        if embedder is None:
            raise ValueError("rank_memories needs an embedder, or the cues and their vector")
        cues = cues or read_cues(user=user, mode=mode, query=query, cipher=cipher, using=using)
        query_vector = embedder.embed_query(cues.text)
        vector_model = embedder.name
    if nearest == "auto":
        nearest = nearest_candidates(user=user, mode=mode, recall_filter=recall_filter, using=using)
    sql, params = ranking_query(
        user=user,
        mode=mode,
        query=query,
        query_vector=query_vector,
        vector_model=vector_model,
        cipher=cipher,
        k=k,
        cues=cues,
        recall_filter=recall_filter,
        now=now,
        nearest=nearest,
        kept_counts=kept_counts,
    )
    with connections[using].cursor() as cursor:
        if nearest is None:
            cursor.execute(sql, params)
            rows = cursor.fetchall()
        else:
            # The scan's settings last for this transaction only.
            with transaction.atomic(using=using):
                cursor.execute(*scan_settings(nearest))
                cursor.execute(sql, params)
                rows = cursor.fetchall()
    return [
        RankedMemory(
            row=Memory.from_db(using, LOADED_FIELDS, row[4:]),
            score=float(row[0]),
            cosine=float(row[1]),
            lexical=float(row[2]),
            freshness=float(row[3]),
        )
        for row in rows
    ]


def decrypt_ranked(ranked: Sequence[RankedMemory], cipher: UserCipher) -> list[MemoryItem]:
    """Decrypt ranked memories in ranking order, each with its score and the parts of it."""
    items = []
    for entry in ranked:
        item = decrypt_memory(entry.row, cipher, score=round(entry.score, 6))
        item.extra.update(
            cosine=round(entry.cosine, 6),
            lexical=round(entry.lexical, 6),
            freshness=round(entry.freshness, 6),
        )
        items.append(item)
    return items


def check_query(query: str) -> str:
    """Validate a search query: text with at least one word, within the size cap."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidInputError(gettext_noop("query must not be empty"))
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInputError(
            gettext_noop("query is longer than {limit} characters"),
            limit=MAX_QUERY_CHARS,
        )
    if "\x00" in query:
        raise InvalidInputError(gettext_noop("query must not contain NUL characters"))
    return query.strip()


@traced("search_memory")
def search_memories(
    *,
    user: User,
    mode: Mode,
    query: str,
    actor: Actor,
    embedder: Embedder,
    k: int = 10,
    kinds: Sequence[str] = (),
    since: datetime | None = None,
    until: datetime | None = None,
    topics: Sequence[str] = (),
    record_access: bool = True,
    min_score: float | None = None,
    includes_candidates: bool = False,
    as_of: datetime | None = None,
) -> list[MemoryItem]:
    """Return the k memories that best answer the query, best first, each with its score.

    With `as_of`, what was known then, as it was then (as_of.py, docs/history.md): ranked on
    today's index and embeddings, with freshness counted from `as_of`.

    With `min_score`, memories scoring under it are left out (an empty list: no close match).
    `includes_candidates` is for the owner's own search: agents never get candidates.
    An agent gets nothing of a mode whose memory the user turned off.
    Raises InvalidInputError on an empty or oversized query, k outside 1..100 or a bad filter.
    """
    query = check_query(query)
    if not 1 <= k <= MAX_K:
        raise InvalidInputError(gettext_noop("k must be between 1 and {limit}"), limit=MAX_K)
    recall_filter = RecallFilter(
        kinds=tuple(kinds),
        since=since,
        until=until,
        topics=tuple(topics),
        includes_candidates=includes_candidates,
        as_of=check_as_of(as_of),
    )
    check_filter(recall_filter)
    cipher = cipher_for(user)

    def read(using: str) -> list[MemoryItem]:
        ranked = rank_memories(
            user=user,
            mode=mode,
            query=query,
            embedder=embedder,
            cipher=cipher,
            k=k,
            recall_filter=recall_filter,
            now=recall_filter.as_of,
            using=using,
        )
        if min_score is not None:
            ranked = [entry for entry in ranked if entry.score >= min_score]
        if not is_memory_in_use(mode=mode, actor=actor):
            ranked = []
        items = decrypt_ranked(ranked, cipher)
        if recall_filter.as_of is None:
            return items
        return items_as_of(
            items,
            cipher=cipher,
            as_of=recall_filter.as_of,
            includes_candidates=includes_candidates,
            using=using,
        )

    items = read_for_user(user.pk, read)
    ids = [item.id for item in items]
    audit_log.record_access(
        actor=actor,
        subject_user_id=user.pk,
        action=AuditAction.MEMORY_SEARCH,
        object_ids=ids,
        mode=mode.slug,
    )
    # A look into the past is no use of a memory today: it keeps its decay and counts.
    if record_access and recall_filter.as_of is None:
        record_memory_access(ids)
    return items
