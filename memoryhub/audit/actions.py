"""The catalogue of audit actions: each stored string, its words for the user, what it changes.

Every `record_access` names one of these. The stored strings are the ones rows already hold,
so no row is rewritten; add a member here (with its words) for a new kind of access or change.
The stored strings stay English codes; only the words are translated, when shown.
"""

from __future__ import annotations

from enum import Enum, StrEnum

from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrPromise


class Changes(Enum):
    """What an audited action changes; the change hook announces all but NOTHING."""

    NOTHING = "nothing"  # A read, a disclosure or a refusal.
    STATE = "state"  # Something other than memory rows: sessions, settings, links, roles…
    MEMORY = "memory"  # Memory rows: created, rewritten, confirmed, deleted.


class AuditAction(StrEnum):
    """An audit action: its stored value, its words ("… read a memory"), what it changes."""

    words: StrPromise
    changes: Changes

    def __new__(cls, value: str, words: StrPromise, changes: Changes) -> AuditAction:
        member = str.__new__(cls, value)
        member._value_ = value
        member.words = words
        member.changes = changes
        return member

    @property
    def is_change(self) -> bool:
        return self.changes is not Changes.NOTHING

    @property
    def changes_memory(self) -> bool:
        return self.changes is Changes.MEMORY

    # Memory rows.
    MEMORY_CREATE = "memory.create", _("remembered something"), Changes.MEMORY
    MEMORY_EDIT = "memory.edit", _("edited a memory"), Changes.MEMORY
    MEMORY_REINFORCE = (
        "memory.reinforce",
        _("said again something already remembered"),
        Changes.MEMORY,
    )
    MEMORY_DELETE = "memory.delete", _("deleted memories"), Changes.MEMORY
    MEMORY_FORGET = "memory.forget", _("forgot memories"), Changes.MEMORY
    MEMORY_CONFIRM = "memory.confirm", _("confirmed a memory"), Changes.MEMORY
    MEMORY_REJECT = "memory.reject", _("rejected a memory"), Changes.MEMORY
    # Written by earlier versions (a contradiction resolved); kept for their rows' words.
    MEMORY_RESOLVE = "memory.resolve", _("resolved a contradiction"), Changes.MEMORY
    MEMORY_COPY = "memory.copy", _("copied a memory to another mode"), Changes.MEMORY
    MEMORY_CONSOLIDATE = "memory.consolidate", _("folded episodes into a theme"), Changes.MEMORY
    MEMORY_EXTRACT = "memory.extract", _("remembered things from a conversation"), Changes.MEMORY
    SESSION_COMPACT = "session.compact", _("summarised a long conversation"), Changes.MEMORY
    ACCOUNT_DELETE = "account.delete", _("deleted the account"), Changes.MEMORY
    MEMORY_IMPORT = "memory.import", _("imported memories from a file"), Changes.MEMORY
    IMPORT_UNDO = "import.undo", _("undid a failed import"), Changes.MEMORY
    # Imports (memoryhub/imports/): the file's arrival, its past conversations, its end.
    IMPORT_START = "import.start", _("uploaded a file to import"), Changes.STATE
    IMPORT_SESSIONS = "import.sessions", _("imported past conversations"), Changes.STATE
    IMPORT_FINISH = "import.finish", _("finished an import"), Changes.STATE
    # Reads of memory.
    DASHBOARD_LIST = "dashboard.list", _("viewed memories in the dashboard"), Changes.NOTHING
    MEMORY_LIST = "memory.list", _("listed memories"), Changes.NOTHING
    MEMORY_READ = "memory.read", _("read a memory"), Changes.NOTHING
    MEMORY_HISTORY = "memory.history", _("read a memory's history"), Changes.NOTHING
    MEMORY_PROVENANCE = "memory.provenance", _("asked why a memory is kept"), Changes.NOTHING
    MEMORY_SEARCH = "memory.search", _("searched memories"), Changes.NOTHING
    PROFILE_READ = "profile.read", _("read the profile"), Changes.NOTHING
    OPEN_ITEMS_LIST = "open_items.list", _("listed open items"), Changes.NOTHING
    CONTEXT_ASSEMBLE = "context.assemble", _("assembled context for a reply"), Changes.NOTHING
    ACCOUNT_EXPORT = "account.export", _("exported all data"), Changes.NOTHING
    FORGET_PREVIEW = "forget.preview", _("previewed what a forget would delete"), Changes.NOTHING
    TRANSCRIPT_SENT_TO_LLM = (
        "transcript.sent_to_llm",
        _("sent a conversation to the language model to learn from it"),
        Changes.NOTHING,
    )
    # The user's settings and agents.
    MEMORY_PAUSE = "memory.pause", _("paused memory"), Changes.STATE
    MEMORY_RESUME = "memory.resume", _("resumed memory"), Changes.STATE
    MODE_MEMORY_OFF = "mode.memory_off", _("turned memory off in a mode"), Changes.STATE
    MODE_MEMORY_ON = "mode.memory_on", _("turned memory on in a mode"), Changes.STATE
    SETTINGS_RETENTION = "settings.retention", _("changed retention"), Changes.STATE
    SETTINGS_REVIEW_DIGEST = (
        "settings.review_digest",
        _("turned the daily review digest on or off"),
        Changes.STATE,
    )
    AGENT_BLOCK = "agent.block", _("blocked an agent"), Changes.STATE
    AGENT_UNBLOCK = "agent.unblock", _("unblocked an agent"), Changes.STATE
    AGENT_ALLOW = "agent.allow", _("let an agent export all your data"), Changes.STATE
    AGENT_DISALLOW = "agent.disallow", _("stopped an agent exporting your data"), Changes.STATE
    API_KEY_REVOKE_ALL = (
        "api_key.revoke_all",
        _("revoked your personal keys (your password changed)"),
        Changes.STATE,
    )
    ACCESS_REFUSED = (
        "access.refused",
        _("tried to reach your memory (you blocked this agent)"),
        Changes.NOTHING,
    )
    ACCESS_LOG_VIEW = "access_log.view", _("read this access log"), Changes.NOTHING
    EXPORT_REFUSED = (
        "export.refused",
        _("asked to export all your data (you did not allow it)"),
        Changes.NOTHING,
    )
    IMPORT_REFUSED = (
        "import.refused",
        _("tried to import a file into your memory (you did not allow it)"),
        Changes.NOTHING,
    )
    # Roles, users and the logins linked to them.
    ROLE_GRANT_REVIEWER = "role.grant_reviewer", _("made you a reviewer"), Changes.STATE
    ROLE_GRANT_ADMIN = "role.grant_admin", _("made you an admin"), Changes.STATE
    ROLE_REVOKE_REVIEWER = "role.revoke_reviewer", _("took away your reviewer role"), Changes.STATE
    ROLE_REVOKE_ADMIN = "role.revoke_admin", _("took away your admin role"), Changes.STATE
    USER_CREATE = "user.create", _("created your user record"), Changes.STATE
    USER_READ = "user.read", _("read your user record"), Changes.NOTHING
    USER_LINK_ISSUE = (
        "user.link_issue",
        _("made a link to connect your login to this user"),
        Changes.STATE,
    )
    USER_LINK = "user.link", _("connected your login to this user"), Changes.STATE
    USER_LINK_UNDO = (
        "user.link_undo",
        _("undid the link of a login to this user: the login left it"),
        Changes.STATE,
    )
    # Conversations.
    SESSION_START = "session.start", _("started a conversation"), Changes.STATE
    SESSION_END = "session.end", _("ended a conversation"), Changes.STATE
    SESSION_LIST = "session.list", _("listed its recent conversations"), Changes.NOTHING
    WORKING_MEMORY_READ = (
        "working_memory.read",
        _("read its working notes of a conversation"),
        Changes.NOTHING,
    )
    WORKING_MEMORY_WRITE = (
        "working_memory.write",
        _("wrote its working notes of a conversation"),
        Changes.STATE,
    )
    JOURNAL_CREATE = "journal.create", _("noted what it told you"), Changes.STATE
    JOURNAL_READ = "journal.read", _("read its notes of what it told you"), Changes.NOTHING
    JOURNAL_LIST = "journal.list", _("listed its notes of what it told you"), Changes.NOTHING
    JOURNAL_RESOLVE = "journal.resolve", _("closed one of its notes"), Changes.STATE
    # Answers, the knowledge base and its review.
    ANSWER_REPORT = "answer.report", _("reported an answer it gave"), Changes.STATE
    ANSWER_FEEDBACK = "answer.feedback", _("recorded your feedback on an answer"), Changes.STATE
    KNOWLEDGE_PROPOSE = "knowledge.propose", _("proposed workspace knowledge"), Changes.STATE
    GRAPH_RECORD_ANSWER = (
        "graph.record_answer",
        _("added an answer you were given to the workspace's knowledge graph"),
        Changes.STATE,
    )
    REVIEW_CANDIDATE_VIEW = (
        "review.candidate_view",
        _("read a scrubbed question for review"),
        Changes.NOTHING,
    )
    REVIEW_QUEUE_VIEW = (
        "review.queue_view",
        _("saw a scrubbed question in the review queue"),
        Changes.NOTHING,
    )
    REVIEW_CANDIDATE_APPROVE = (
        "review.candidate_approve",
        _("published a scrubbed question to the knowledge base"),
        Changes.STATE,
    )
    REVIEW_CANDIDATE_REJECT = (
        "review.candidate_reject",
        _("rejected a scrubbed question in review"),
        Changes.STATE,
    )
    REVIEW_CANDIDATE_SKIP = (
        "review.candidate_skip",
        _("skipped a scrubbed question in review"),
        Changes.STATE,
    )
    REVIEW_NAMES_READ = (
        "review.names_read",
        _("read your name to scrub it from a question for review"),
        Changes.NOTHING,
    )
    REVIEW_ANSWER_FOR_USER = (
        "review.answer_for_user",
        _("answered a question of yours, for you to confirm"),
        Changes.STATE,
    )
    REVIEW_NEEDS_USER = (
        "review.needs_user",
        _("left you a question only you can answer"),
        Changes.STATE,
    )
    REVIEW_KEY_CREATE = "review.key_create", _("made a reviewer key"), Changes.STATE
    REVIEW_KEY_REVOKE = "review.key_revoke", _("revoked a reviewer key"), Changes.STATE
    # Webhooks of a workspace (memoryhub/webhooks/; never about one user).
    WEBHOOK_CREATE = "webhook.create", _("added a webhook endpoint"), Changes.STATE
    WEBHOOK_ROTATE = "webhook.rotate", _("rotated a webhook endpoint's secret"), Changes.STATE
    WEBHOOK_ENABLE = "webhook.enable", _("enabled a webhook endpoint"), Changes.STATE
    WEBHOOK_DISABLE = "webhook.disable", _("disabled a webhook endpoint"), Changes.STATE
    WEBHOOK_REPLAY = "webhook.replay", _("sent a webhook delivery again"), Changes.STATE
    WEBHOOK_LIST = "webhook.list", _("listed webhook endpoints or deliveries"), Changes.NOTHING
    WEBHOOK_TEXT_SENT = (
        "webhook.text_sent",
        _("sent a memory's text to a webhook endpoint allowed to receive it"),
        Changes.NOTHING,
    )
    # A workspace's settings (never about one user).
    WORKSPACE_EMBEDDING_MODEL = (
        "workspace.embedding_model",
        _("chose the model that embeds a workspace's texts"),
        Changes.STATE,
    )
    # The audit log itself, and admins' pages (the last three are never about one user).
    AUDIT_VIEW = "audit.view", _("read the audit log about you"), Changes.NOTHING
    AUDIT_EXPORT = "audit.export", _("exported the audit log about you"), Changes.NOTHING
    ADMIN_USER_LINKS = (
        "admin.user_links",
        _("listed the logins linked to agents' users"),
        Changes.NOTHING,
    )
    ADMIN_HEALTH = "admin.health", _("looked at the service's health"), Changes.NOTHING
    GRAPH_INSIGHTS = "graph.insights", _("read the knowledge graph's insights"), Changes.NOTHING
    GRAPH_OVERVIEW = "graph.overview", _("looked at the knowledge graph"), Changes.NOTHING


# The admin audit table's words where the user's words speak to them ("made you a
# reviewer"): the same action said of the user, in the third person. Every other action's
# words say it so already ("remembered something", the actor being the table's Actor).
ADMIN_LABELS: dict[AuditAction, StrPromise] = {
    AuditAction.AGENT_ALLOW: _("let an agent export all the user's data"),
    AuditAction.AGENT_DISALLOW: _("stopped an agent exporting the user's data"),
    AuditAction.API_KEY_REVOKE_ALL: _("revoked the user's personal keys (their password changed)"),
    AuditAction.ACCESS_REFUSED: _("tried to reach the user's memory (the user blocked this agent)"),
    AuditAction.ACCESS_LOG_VIEW: _("read the user's access log"),
    AuditAction.EXPORT_REFUSED: _("asked to export all the user's data (not allowed by the user)"),
    AuditAction.IMPORT_REFUSED: _(
        "tried to import a file into the user's memory (not allowed by the user)"
    ),
    AuditAction.ROLE_GRANT_REVIEWER: _("granted the reviewer role"),
    AuditAction.ROLE_GRANT_ADMIN: _("granted the admin role"),
    AuditAction.ROLE_REVOKE_REVIEWER: _("revoked the reviewer role"),
    AuditAction.ROLE_REVOKE_ADMIN: _("revoked the admin role"),
    AuditAction.USER_CREATE: _("created the user record"),
    AuditAction.USER_READ: _("read the user record"),
    AuditAction.USER_LINK_ISSUE: _("made a link to connect a login to the user"),
    AuditAction.USER_LINK: _("connected a login to the user"),
    AuditAction.USER_LINK_UNDO: _("undid the link of a login to the user: the login left it"),
    AuditAction.JOURNAL_CREATE: _("noted what it told the user"),
    AuditAction.JOURNAL_READ: _("read its notes of what it told the user"),
    AuditAction.JOURNAL_LIST: _("listed its notes of what it told the user"),
    AuditAction.ANSWER_FEEDBACK: _("recorded the user's feedback on an answer"),
    AuditAction.GRAPH_RECORD_ANSWER: _(
        "added an answer the user was given to the workspace's knowledge graph"
    ),
    AuditAction.REVIEW_NAMES_READ: _("read the user's name to scrub it from a question for review"),
    AuditAction.REVIEW_ANSWER_FOR_USER: _("answered a question of the user's, for them to confirm"),
    AuditAction.REVIEW_NEEDS_USER: _("left the user a question only they can answer"),
    AuditAction.AUDIT_VIEW: _("read the audit log about the user"),
    AuditAction.AUDIT_EXPORT: _("exported the audit log about the user"),
}

# What an admin did to a row in the admin site: stored as "admin.<model>.<verb>"
# (memoryhub/admin.py), a family of actions rather than members of the catalogue.
ADMIN_SITE_PREFIX = "admin."
ADMIN_VERBS: dict[str, StrPromise] = {
    "add": _("added a record ({model}) in the admin site"),
    "change": _("changed a record ({model}) in the admin site"),
    "delete": _("deleted a record ({model}) in the admin site"),
    "view": _("viewed a record ({model}) in the admin site"),
    "list": _("listed a record ({model}) in the admin site"),
}


_BY_VALUE: dict[str, AuditAction] = {action.value: action for action in AuditAction}


def admin_site_action(model_name: str, verb: str) -> str:
    """The stored action of an admin site's `verb` on a row of `model_name` (40 characters at most)."""
    return f"{ADMIN_SITE_PREFIX}{model_name}.{verb}"[:40]


def action_words(stored: str) -> str:
    """A stored action in the user's words; an unknown one spelled out from its parts."""
    action = _BY_VALUE.get(stored)
    if action is not None:
        return str(action.words)
    parts = stored.split(".")
    if len(parts) == 3 and f"{parts[0]}." == ADMIN_SITE_PREFIX and parts[2] in ADMIN_VERBS:
        return str(ADMIN_VERBS[parts[2]]).format(model=parts[1])
    return stored.replace(".", ": ").replace("_", " ")


def action_label(stored: str) -> str:
    """A stored action in the admin audit table's words: of the user, never to them."""
    action = _BY_VALUE.get(stored)
    if action is not None and action in ADMIN_LABELS:
        return str(ADMIN_LABELS[action])
    return action_words(stored)
