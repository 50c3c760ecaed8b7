"""The knowledge domain's part of a data export: the user's answer records and candidates."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from functools import partial
from typing import Any

from memoryhub.keyring import UserCipher
from memoryhub.models import AnswerRecord, LearningCandidate, User
from memoryhub.sealed_tables import ANSWER_TABLE, CANDIDATE_TABLE


def _when(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _open(
    cipher: UserCipher, blob: bytes | memoryview | None, *, table: str, row_id: object, field: str
) -> str | None:
    return None if blob is None else cipher.decrypt(blob, table=table, row_id=row_id, field=field)


def export_answers(user: User, cipher: UserCipher, using: str) -> dict[int, list[dict[str, Any]]]:
    """The answers agents reported to the user, by mode id, oldest first."""
    by_mode: dict[int, list[dict[str, Any]]] = defaultdict(list)
    records = (
        AnswerRecord.objects.using(using)
        .filter(user=user)
        .select_related("agent")
        .order_by("created_at", "id")
    )
    for record in records.iterator(chunk_size=500):
        text = partial(_open, cipher, table=ANSWER_TABLE, row_id=record.pk)
        by_mode[record.mode_id].append(
            {
                "id": str(record.pk),
                "agent": record.agent.name if record.agent else None,
                "session_id": str(record.session_id) if record.session_id else None,
                "question": text(record.question_ciphertext, field="question"),
                "answer": text(record.answer_ciphertext, field="answer"),
                "items": cipher.decrypt_json(
                    record.items_ciphertext, table=ANSWER_TABLE, row_id=record.pk, field="items"
                )
                or [],
                "context_ids": list(record.context_ids),
                "signals": record.signals,
                "confidence": record.confidence,
                "feedback": record.feedback or None,
                "feedback_comment": text(
                    record.feedback_comment_ciphertext, field="feedback_comment"
                ),
                "created_at": _when(record.created_at),
            }
        )
    return by_mode


def export_candidates(
    user: User, cipher: UserCipher, using: str
) -> dict[int, list[dict[str, Any]]]:
    """The review candidates made from the user's answers and proposed facts, by mode id.

    Their text is the scrubbed copy reviewers saw, which is what the candidate holds.
    """
    by_mode: dict[int, list[dict[str, Any]]] = defaultdict(list)
    candidates = (
        LearningCandidate.objects.using(using).filter(user=user).order_by("created_at", "id")
    )
    for candidate in candidates.iterator(chunk_size=500):
        text = partial(_open, cipher, table=CANDIDATE_TABLE, row_id=candidate.pk)
        by_mode[candidate.mode_id].append(
            {
                "id": str(candidate.pk),
                "kind": candidate.kind,
                "status": candidate.status,
                "answer_id": str(candidate.answer_id) if candidate.answer_id else None,
                "failure_class": candidate.failure_class or None,
                "question": text(candidate.question_ciphertext, field="question"),
                "answer": text(candidate.answer_ciphertext, field="answer"),
                "comment": text(candidate.comment_ciphertext, field="comment"),
                "created_at": _when(candidate.created_at),
                "decided_at": _when(candidate.decided_at),
            }
        )
    return by_mode
