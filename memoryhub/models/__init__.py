"""MemoryHub's models, one module per concept; import them from here."""

from .audit import ActorType, AuditEntry, Channel
from .journal import JournalEntry
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
from .sessions import ExtractionRun, Message, Session
from .workspaces import (
    DEFAULT_MODES,
    Agent,
    AgentBlock,
    ApiKey,
    Mode,
    User,
    UserKey,
    Workspace,
)

__all__ = [
    "DEFAULT_MODES",
    "ActorType",
    "Agent",
    "AgentBlock",
    "ApiKey",
    "AuditEntry",
    "Channel",
    "Confidence",
    "ExtractionRun",
    "Importance",
    "JournalEntry",
    "Memory",
    "MemoryKind",
    "MemoryQuerySet",
    "MemorySource",
    "MemoryStatus",
    "MemoryVersion",
    "Message",
    "Mode",
    "Session",
    "User",
    "UserKey",
    "Workspace",
]
