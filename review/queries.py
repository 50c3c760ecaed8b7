"""Reads of the review app: the queue, one candidate, the threshold history.

The knowledge base and its search are domain reads: memoryhub/knowledge/queries.py.

Candidate text is scrubbed ciphertext under the user's data key; every read that decrypts it
for a reviewer writes an audit row against that user here, in one place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID

from django.core.exceptions import ValidationError
from django.db.models import Case, Count, F, IntegerField, OuterRef, Subquery, Value, When
from django.db.models.functions import Coalesce
from django.utils.translation import gettext as _
from django.utils.translation import gettext_noop

from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import KeyDestroyedError, NotFoundError
from memoryhub.keyring import UserCipher, cipher_for
from memoryhub.knowledge.scoring import LOW_SIGNAL, SIGNAL_NAMES
from memoryhub.models import (
    AnswerRecord,
    FailureClass,
    LearningCandidate,
    LearningCandidateQuerySet,
    Workspace,
)
from memoryhub.sealed_tables import CANDIDATE_TABLE

from .models import ThresholdChange

# Most urgent first: the user said it was wrong, then a likely invented answer, then what the
# knowledge base can fix (a miss), then answers that fell short, then refusals (often right).
CLASS_PRIORITY: Mapping[str, int] = {
    FailureClass.NEGATIVE_FEEDBACK: 0,
    FailureClass.HALLUCINATION: 1,
    FailureClass.RETRIEVAL_MISS: 2,
    FailureClass.INCOMPLETE: 3,
    FailureClass.POLICY_BLOCK: 4,
}
FACT_PRIORITY = 5
ERASED_TEXT = "(erased: the user's data key no longer exists)"


@dataclass(frozen=True)
class CandidateView:
    """A candidate as a reviewer sees it: scrubbed text, signals, context ids; never memories."""

    id: UUID
    kind: str
    status: str
    failure_class: str
    findings: tuple[str, ...]
    question: str
    answer: str
    comment: str
    scrub_counts: dict[str, int]
    confidence: float | None
    signals: dict[str, float]
    context_ids: tuple[str, ...]
    feedback: str
    mode: str
    created_at: datetime
    skipped_at: datetime | None
    decided_at: datetime | None
    rejection_reason: str
    group_id: UUID
    similar_count: int = 1
    document_id: UUID | None = None

    @property
    def kind_label(self) -> str:
        return str(LearningCandidate.Kind(self.kind).label)

    @property
    def failure_label(self) -> str:
        if not self.failure_class:
            return str(_("Proposed fact"))
        return str(FailureClass(self.failure_class).label)

    @property
    def low_signals(self) -> tuple[tuple[str, float], ...]:
        """The agent's own signals under the "low" mark, lowest first: why it looked weak."""
        low = [(name, value) for name, value in self.signals.items() if value < LOW_SIGNAL]
        return tuple(sorted(low, key=lambda pair: pair[1]))

    @property
    def status_label(self) -> str:
        return str(LearningCandidate.Status(self.status).label)


@dataclass(frozen=True)
class CandidateDetail:
    candidate: CandidateView
    similar: tuple[CandidateView, ...] = field(default=())


@dataclass(frozen=True)
class QueueFilter:
    """What the queue shows; empty strings mean "any"."""

    status: str = LearningCandidate.Status.PENDING
    failure_class: str = ""
    kind: str = ""


class _Ciphers:
    """One cipher per user for a batch of candidates from many users."""

    def __init__(self) -> None:
        self._by_user: dict[UUID, UserCipher | None] = {}

    def of(self, user_id: UUID) -> UserCipher | None:
        if user_id not in self._by_user:
            try:
                self._by_user[user_id] = cipher_for(user_id, create=False)
            except KeyDestroyedError:
                self._by_user[user_id] = None
        return self._by_user[user_id]


def _decrypt(
    cipher: UserCipher | None, blob: bytes | memoryview | None, row_id: UUID, name: str
) -> str:
    if blob is None:
        return ""
    if cipher is None:
        return ERASED_TEXT
    return cipher.decrypt(blob, table=CANDIDATE_TABLE, row_id=row_id, field=name)


def _view(
    candidate: LearningCandidate, ciphers: _Ciphers, *, similar_count: int = 1
) -> CandidateView:
    cipher = ciphers.of(candidate.user_id)
    answer: AnswerRecord | None = candidate.answer
    document = getattr(candidate, "document", None)
    return CandidateView(
        id=candidate.id,
        kind=candidate.kind,
        status=candidate.status,
        failure_class=candidate.failure_class,
        findings=tuple(candidate.findings),
        question=_decrypt(cipher, candidate.question_ciphertext, candidate.id, "question"),
        answer=_decrypt(cipher, candidate.answer_ciphertext, candidate.id, "answer"),
        comment=_decrypt(cipher, candidate.comment_ciphertext, candidate.id, "comment"),
        scrub_counts=dict(candidate.scrub_counts),
        confidence=candidate.confidence,
        # In the order the scoring names them (jsonb does not keep key order).
        signals={n: answer.signals[n] for n in SIGNAL_NAMES if n in answer.signals}
        if answer
        else {},
        context_ids=tuple(answer.context_ids) if answer else (),
        feedback=answer.feedback if answer else "",
        mode=candidate.mode.slug,
        created_at=candidate.created_at,
        skipped_at=candidate.skipped_at,
        decided_at=candidate.decided_at,
        rejection_reason=candidate.rejection_reason,
        group_id=candidate.group_id,
        similar_count=similar_count,
        document_id=document.pk if document is not None else None,
    )


def audit_candidate_access(
    actor: Actor, candidates: Iterable[LearningCandidate], action: AuditAction
) -> None:
    """Write one audit row per user whose candidates the actor read or decided."""
    by_user: dict[UUID, list[LearningCandidate]] = defaultdict(list)
    for candidate in candidates:
        by_user[candidate.user_id].append(candidate)
    for user_id, rows in by_user.items():
        modes = {row.mode.slug for row in rows}
        record_access(
            actor=actor,
            subject_user_id=user_id,
            action=action,
            object_ids=[row.pk for row in rows],
            mode=modes.pop() if len(modes) == 1 else "",
        )


def _candidates(workspace: Workspace) -> LearningCandidateQuerySet:
    # Security invariant: a reviewer only ever reaches candidates of their own workspace.
    return LearningCandidate.objects.filter(workspace=workspace).select_related(
        "answer", "mode", "document"
    )


def _ranked_ids(workspace: Workspace, filters: QueueFilter) -> list[tuple[UUID, UUID, int]]:
    """(id, group id, group size) of matching candidates, most urgent first."""
    group_size = (
        LearningCandidate.objects.filter(
            group_id=OuterRef("group_id"), workspace=workspace, status=filters.status
        )
        .order_by()
        .values("group_id")
        .annotate(size=Count("id"))
        .values("size")
    )
    class_rank = Case(
        *[When(failure_class=name, then=Value(rank)) for name, rank in CLASS_PRIORITY.items()],
        default=Value(FACT_PRIORITY),
        output_field=IntegerField(),
    )
    queryset = LearningCandidate.objects.filter(workspace=workspace, status=filters.status)
    if filters.failure_class:
        queryset = queryset.filter(failure_class=filters.failure_class)
    if filters.kind:
        queryset = queryset.filter(kind=filters.kind)
    rows = (
        queryset.annotate(class_rank=class_rank, group_size=Coalesce(Subquery(group_size), 1))
        # Skipped candidates wait behind the others, longest-skipped first.
        .order_by(
            F("skipped_at").asc(nulls_first=True), "class_rank", "-group_size", "created_at", "id"
        )
        .values_list("id", "group_id", "group_size")
    )
    return list(rows)


def list_queue(
    *, workspace: Workspace, actor: Actor, filters: QueueFilter, page: int = 1, per_page: int = 25
) -> tuple[list[CandidateView], int]:
    """One page of the queue, a candidate per group of similar ones, and the number of groups.

    Order: failure class, then how many similar questions wait, then age (oldest first).
    """
    ranked = _ranked_ids(workspace, filters)
    is_grouped = filters.status == LearningCandidate.Status.PENDING
    leaders: list[tuple[UUID, int]] = []
    seen_groups: set[UUID] = set()
    for candidate_id, group_id, size in ranked:
        if is_grouped and group_id in seen_groups:
            continue
        seen_groups.add(group_id)
        leaders.append((candidate_id, size if is_grouped else 1))
    start = (max(page, 1) - 1) * per_page
    page_leaders = leaders[start : start + per_page]
    rows = {
        row.pk: row for row in _candidates(workspace).filter(pk__in=[i for i, _ in page_leaders])
    }
    ciphers = _Ciphers()
    views = [_view(rows[i], ciphers, similar_count=size) for i, size in page_leaders if i in rows]
    audit_candidate_access(actor, [rows[view.id] for view in views], AuditAction.REVIEW_QUEUE_VIEW)
    return views, len(leaders)


def queue_size(*, workspace: Workspace) -> int:
    """How many candidates wait for a decision."""
    return LearningCandidate.objects.filter(workspace=workspace).pending().count()


def get_candidate_row(*, workspace: Workspace, candidate_id: UUID | str) -> LearningCandidate:
    """A candidate of this workspace; another workspace's id is NotFound."""
    try:
        return _candidates(workspace).get(pk=candidate_id)
    except (LearningCandidate.DoesNotExist, ValueError, ValidationError):
        raise NotFoundError(gettext_noop("candidate not found")) from None


def get_candidate(
    *, workspace: Workspace, candidate_id: UUID | str, actor: Actor
) -> CandidateDetail:
    """One candidate and its similar pending ones, decrypted for a reviewer (audited)."""
    candidate = get_candidate_row(workspace=workspace, candidate_id=candidate_id)
    similar = list(
        _candidates(workspace)
        .pending()
        .filter(group_id=candidate.group_id)
        .exclude(pk=candidate.pk)
        .order_by("created_at")[:20]
    )
    ciphers = _Ciphers()
    audit_candidate_access(actor, [candidate], AuditAction.REVIEW_CANDIDATE_VIEW)
    if similar:
        audit_candidate_access(actor, similar, AuditAction.REVIEW_CANDIDATE_VIEW)
    return CandidateDetail(
        candidate=_view(candidate, ciphers, similar_count=len(similar) + 1),
        similar=tuple(_view(row, ciphers) for row in similar),
    )


def scrubbed_texts(candidate: LearningCandidate) -> tuple[str, str]:
    """The candidate's scrubbed question and answer, for publishing it (no reviewer sees them)."""
    ciphers = _Ciphers()
    cipher = ciphers.of(candidate.user_id)
    if cipher is None:
        raise KeyDestroyedError(gettext_noop("this candidate's user was erased"))
    return (
        _decrypt(cipher, candidate.question_ciphertext, candidate.id, "question"),
        _decrypt(cipher, candidate.answer_ciphertext, candidate.id, "answer"),
    )


def threshold_history(*, workspace: Workspace, limit: int = 60) -> list[ThresholdChange]:
    """The most recent closed review windows, oldest first."""
    rows = ThresholdChange.objects.filter(workspace=workspace).order_by("-created_at", "-id")
    return list(reversed(rows[:limit]))
