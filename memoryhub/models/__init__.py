"""MemoryHub's models, one module per concept; import them from here."""

from .audit import ActorType, AuditEntry, Channel
from .forget_tasks import ForgetTask
from .graph import (
    EdgeType,
    GraphEdge,
    GraphMaintenanceRun,
    GraphNode,
    NodeType,
    WorkspaceNodeType,
)
from .idempotency import IdempotentWrite
from .imports import (
    IMPORTED_END_REASON,
    IMPORTED_FOR_REVIEW_END_REASON,
    ImportedItem,
    ImportFormat,
    ImportJob,
)
from .journal import JournalEntry
from .knowledge import (
    AnswerRecord,
    FailureClass,
    Feedback,
    KnowledgeChunk,
    KnowledgeDocument,
    LearningCandidate,
    LearningCandidateQuerySet,
)
from .memories import (
    Confidence,
    Importance,
    Memory,
    MemoryKind,
    MemoryQuerySet,
    MemorySource,
    MemoryStatus,
    MemoryVersion,
)
from .ratelimit import RateLimitWindow
from .sessions import ExtractionRun, Message, Session
from .usage import MemoryUsage, RequestSlot
from .user_links import UserLink
from .webhooks import WebhookDelivery, WebhookEndpoint
from .workspace_keys import WorkspaceKey
from .workspaces import (
    DEFAULT_MODE_NAMES,
    DEFAULT_MODES,
    DEFAULT_WORKSPACE_NAME,
    DEFAULT_WORKSPACE_SLUG,
    Agent,
    AgentBlock,
    AgentGrant,
    AgentPermission,
    ApiKey,
    Mode,
    User,
    UserKey,
    Workspace,
    mode_name_in_words,
)
from .write_marks import UserWriteMark

__all__ = [
    "DEFAULT_MODES",
    "DEFAULT_MODE_NAMES",
    "DEFAULT_WORKSPACE_NAME",
    "DEFAULT_WORKSPACE_SLUG",
    "IMPORTED_END_REASON",
    "IMPORTED_FOR_REVIEW_END_REASON",
    "ActorType",
    "Agent",
    "AgentBlock",
    "AgentGrant",
    "AgentPermission",
    "AnswerRecord",
    "ApiKey",
    "AuditEntry",
    "Channel",
    "Confidence",
    "EdgeType",
    "ExtractionRun",
    "FailureClass",
    "Feedback",
    "ForgetTask",
    "GraphEdge",
    "GraphMaintenanceRun",
    "GraphNode",
    "IdempotentWrite",
    "ImportFormat",
    "ImportJob",
    "Importance",
    "ImportedItem",
    "JournalEntry",
    "KnowledgeChunk",
    "KnowledgeDocument",
    "LearningCandidate",
    "LearningCandidateQuerySet",
    "Memory",
    "MemoryKind",
    "MemoryQuerySet",
    "MemorySource",
    "MemoryStatus",
    "MemoryUsage",
    "MemoryVersion",
    "Message",
    "Mode",
    "NodeType",
    "RateLimitWindow",
    "RequestSlot",
    "Session",
    "User",
    "UserKey",
    "UserLink",
    "UserWriteMark",
    "WebhookDelivery",
    "WebhookEndpoint",
    "Workspace",
    "WorkspaceKey",
    "WorkspaceNodeType",
    "mode_name_in_words",
]
