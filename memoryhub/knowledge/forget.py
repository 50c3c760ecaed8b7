"""What a forget takes of the knowledge domain: a user's answer records and candidates.

memoryhub/services/forget.py calls `forget_user_data` inside every forget's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from uuid import UUID

from django.db.models import Q

from memoryhub.embeddings import Embedder
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.models import AnswerRecord, LearningCandidate, Mode, User
from memoryhub.sealed_tables import ANSWER_TABLE, CANDIDATE_TABLE
from memoryhub.services.forget_selection import ForgetSelector, in_window, select_texts


def _texts(
    cipher: UserCipher, table: str, row_id: UUID, blobs: dict[str, bytes | memoryview | None]
) -> list[str]:
    return [
        cipher.decrypt(blob, table=table, row_id=row_id, field=field)
        for field, blob in blobs.items()
        if blob is not None
    ]


def _answer_text(record: AnswerRecord, cipher: UserCipher) -> str:
    """Everything an answer record says, as one text for a forget's topic or query."""
    parts = _texts(
        cipher,
        ANSWER_TABLE,
        record.pk,
        {
            "question": record.question_ciphertext,
            "answer": record.answer_ciphertext,
            "feedback_comment": record.feedback_comment_ciphertext,
        },
    )
    if record.items_ciphertext is not None:
        items = cipher.decrypt_json(
            record.items_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="items"
        )
        parts.append(json.dumps(items, ensure_ascii=False))
    return "\n".join(parts)


def _candidate_text(candidate: LearningCandidate, cipher: UserCipher) -> str:
    blobs = {
        "question": candidate.question_ciphertext,
        "answer": candidate.answer_ciphertext,
        "comment": candidate.comment_ciphertext,
    }
    return "\n".join(_texts(cipher, CANDIDATE_TABLE, candidate.pk, blobs))


def _selected_answers(
    *, user: User, mode: Mode, selector: ForgetSelector, embedder: Embedder | None
) -> tuple[set[UUID], set[UUID]]:
    """(answer ids, proposed-fact candidate ids) of the mode that a forget's selector picks.

    Every answer of the scope, with or without a session or context ids: what the user said
    to forget, an answer quoting it must not keep.
    """
    cipher = cipher_for(user)
    answers = AnswerRecord.objects.filter(user=user, mode=mode).filter(
        in_window("created_at", selector)
    )
    facts = LearningCandidate.objects.filter(
        user=user, mode=mode, kind=LearningCandidate.Kind.FACT
    ).filter(in_window("created_at", selector))
    if not (selector.topic or selector.query):
        return set(answers.values_list("pk", flat=True)), set(facts.values_list("pk", flat=True))
    answer_texts = {record.pk: _answer_text(record, cipher) for record in answers}
    fact_texts = {candidate.pk: _candidate_text(candidate, cipher) for candidate in facts}
    return (
        select_texts(selector, answer_texts, embedder),
        select_texts(selector, fact_texts, embedder),
    )


def forget_user_data(
    *,
    user: User,
    mode: Mode | None = None,
    memory_ids: Collection[UUID | str] = (),
    message_ids: Collection[UUID | str] = (),
    selector: ForgetSelector | None = None,
    embedder: Embedder | None = None,
) -> dict[str, int]:
    """Delete a user's answer records and candidates that a forget takes (services/forget.py).

    Mode None (account deletion): all of them. In one mode: the answers built on forgotten
    memories or given in a session with forgotten messages, and, with a selector (a period,
    topic or query), every answer and proposed fact of the mode it picks. Knowledge documents
    stay: they are reviewed, scrubbed workspace knowledge.
    """
    answers = AnswerRecord.objects.filter(user=user)
    candidates = LearningCandidate.objects.filter(user=user)
    if mode is not None:
        overlap = Q(context_ids__overlap=[str(i) for i in memory_ids]) if memory_ids else Q()
        if message_ids:
            overlap |= Q(session__messages__in=list(message_ids))
        answer_ids: set[UUID] = set()
        fact_ids: set[UUID] = set()
        if overlap:
            answer_ids = set(
                answers.filter(Q(mode=mode) & overlap).distinct().values_list("pk", flat=True)
            )
        if selector is not None:
            picked, fact_ids = _selected_answers(
                user=user, mode=mode, selector=selector, embedder=embedder
            )
            answer_ids |= picked
        answers = answers.filter(pk__in=answer_ids)
        candidates = candidates.filter(Q(answer__in=answer_ids) | Q(pk__in=fact_ids))
    candidate_count = candidates.count()
    answer_ids_list = list(answers.values_list("pk", flat=True))
    # Proposed facts have no answer record: an account deletion or a selector takes them.
    candidates.delete()
    AnswerRecord.objects.filter(pk__in=answer_ids_list).delete()
    return {"answer_record": len(answer_ids_list), "learning_candidate": candidate_count}
