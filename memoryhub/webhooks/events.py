"""Which announced changes become which webhook events, and what a payload holds.

The one mapping from audit actions (memoryhub/audit/actions.py) to event types. A payload
holds ids, kinds and timestamps only: memory text is added at send time, and only for an
endpoint allowed to receive it (services.send_delivery).
"""

from __future__ import annotations

from memoryhub.audit.actions import AuditAction

MEMORY_CREATED = "memory.created"
MEMORY_UPDATED = "memory.updated"
MEMORY_FORGOTTEN = "memory.forgotten"
SESSION_EXTRACTED = "session.extracted"
CANDIDATE_WAITING = "candidate.waiting"
REVIEW_DECIDED = "review.decided"
USER_DELETED = "user.deleted"

EVENT_TYPES = (
    MEMORY_CREATED,
    MEMORY_UPDATED,
    MEMORY_FORGOTTEN,
    SESSION_EXTRACTED,
    CANDIDATE_WAITING,
    REVIEW_DECIDED,
    USER_DELETED,
)
# Events whose object ids are memories (a memory's text may go to an endpoint allowed it).
MEMORY_EVENTS = (MEMORY_CREATED, MEMORY_UPDATED)

EVENTS_OF: dict[AuditAction, tuple[str, ...]] = {
    AuditAction.MEMORY_CREATE: (MEMORY_CREATED,),
    AuditAction.MEMORY_COPY: (MEMORY_CREATED,),
    AuditAction.MEMORY_IMPORT: (MEMORY_CREATED,),
    AuditAction.MEMORY_EXTRACT: (SESSION_EXTRACTED,),
    AuditAction.MEMORY_EDIT: (MEMORY_UPDATED,),
    AuditAction.MEMORY_CONFIRM: (MEMORY_UPDATED,),
    AuditAction.MEMORY_REJECT: (MEMORY_UPDATED,),
    AuditAction.MEMORY_RESOLVE: (MEMORY_UPDATED,),
    AuditAction.MEMORY_CONSOLIDATE: (MEMORY_UPDATED,),
    AuditAction.SESSION_COMPACT: (MEMORY_UPDATED,),
    AuditAction.MEMORY_DELETE: (MEMORY_FORGOTTEN,),
    AuditAction.MEMORY_FORGET: (MEMORY_FORGOTTEN,),
    AuditAction.IMPORT_UNDO: (MEMORY_FORGOTTEN,),
    AuditAction.KNOWLEDGE_PROPOSE: (CANDIDATE_WAITING,),
    # An answer report makes a candidate only when the answer scored low (see services).
    AuditAction.ANSWER_REPORT: (CANDIDATE_WAITING,),
    AuditAction.REVIEW_CANDIDATE_APPROVE: (REVIEW_DECIDED,),
    AuditAction.REVIEW_CANDIDATE_REJECT: (REVIEW_DECIDED,),
    AuditAction.REVIEW_NEEDS_USER: (REVIEW_DECIDED,),
    AuditAction.REVIEW_ANSWER_FOR_USER: (REVIEW_DECIDED,),
    AuditAction.ACCOUNT_DELETE: (USER_DELETED,),
}
