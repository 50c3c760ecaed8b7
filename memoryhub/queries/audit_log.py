"""The access audit for admins: filter by user, actor, action, channel and period; export CSV."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from django.db.models import Q, QuerySet

from memoryhub import text_patterns
from memoryhub.actors import Actor
from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import mode_pseudonym, record_access, subject_pseudonym
from memoryhub.models import AuditEntry, User

PSEUDONYM_PATTERN = text_patterns.compile(r"^[0-9a-f]{32}$")
CSV_COLUMNS = (
    "id",
    "created_at",
    "actor_type",
    "actor_id",
    "actor_label",
    "subject",
    "action",
    "object_ids",
    "mode",
    "channel",
    "client_ip",
    "chain",
    "prev_hash",
    "row_hash",
)
# A spreadsheet runs a cell starting with these as a formula (CSV injection).
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class AuditFilter:
    """Criteria combined with AND; `user` is an email, a user id or a subject pseudonym.

    `mode` is a mode's slug and needs a user: rows hold a pseudonym of (user, mode).
    """

    user: str = ""
    mode: str = ""
    actor_type: str = ""
    actor_id: str = ""
    action: str = ""
    channel: str = ""
    since: datetime | None = None
    until: datetime | None = None


def _resolve_subject(user_ref: str) -> tuple[UUID | None, str | None]:
    """(user id, audit pseudonym) a user reference stands for; (None, None) for nobody.

    A bare pseudonym is accepted, so the entries of deleted accounts stay searchable.
    """
    ref = user_ref.strip()
    if PSEUDONYM_PATTERN.match(ref):
        return None, ref
    try:
        user_id: UUID | None = UUID(ref)
    except ValueError:
        user_id = User.objects.filter(email__iexact=ref).values_list("pk", flat=True).first()
    return (user_id, subject_pseudonym(user_id)) if user_id else (None, None)


def audit_entries(
    audit_filter: AuditFilter, *, actor: Actor, action: AuditAction = AuditAction.AUDIT_VIEW
) -> QuerySet[AuditEntry]:
    """Audit rows matching the filter, newest first; the admin's look is itself audited."""
    rows = AuditEntry.objects.order_by("-id")
    subject_user_id: UUID | None = None
    subject: str | None = None
    if audit_filter.user.strip():
        subject_user_id, subject = _resolve_subject(audit_filter.user)
        rows = rows.filter(subject=subject) if subject else rows.none()
    if audit_filter.mode.strip():
        slug = audit_filter.mode.strip()
        # Older rows hold the slug itself; newer ones its pseudonym, which needs the subject.
        rows = rows.filter(mode__in=[slug, mode_pseudonym(subject, slug)] if subject else [slug])
    if audit_filter.actor_type:
        rows = rows.filter(actor_type=audit_filter.actor_type)
    if audit_filter.actor_id.strip():
        who = audit_filter.actor_id.strip()
        rows = rows.filter(Q(actor_id=who) | Q(actor_label__iexact=who))
    if audit_filter.action.strip():
        rows = rows.filter(action__startswith=audit_filter.action.strip())
    if audit_filter.channel:
        rows = rows.filter(channel=audit_filter.channel)
    if audit_filter.since:
        rows = rows.filter(created_at__gte=audit_filter.since)
    if audit_filter.until:
        rows = rows.filter(created_at__lt=audit_filter.until)
    record_access(actor=actor, subject_user_id=subject_user_id, action=action)
    return rows


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return f"'{text}" if text.startswith(FORMULA_PREFIXES) else text


class _Echo:
    """A file-like object whose write returns the line, for streaming csv output."""

    def write(self, value: str) -> str:
        return value


def audit_csv_lines(rows: Iterable[AuditEntry]) -> Iterator[str]:
    """The rows as CSV lines (header first), safe to open in a spreadsheet."""
    writer = csv.writer(_Echo())
    yield writer.writerow(CSV_COLUMNS)
    for entry in rows:
        yield writer.writerow(
            [
                _cell(entry.id),
                _cell(entry.created_at.isoformat()),
                _cell(entry.actor_type),
                _cell(entry.actor_id),
                _cell(entry.actor_label),
                _cell(entry.subject),
                _cell(entry.action),
                _cell(" ".join(entry.object_ids)),
                _cell(entry.mode),
                _cell(entry.channel),
                _cell(entry.client_ip),
                _cell(entry.chain),
                _cell(entry.prev_hash),
                _cell(entry.row_hash),
            ]
        )
