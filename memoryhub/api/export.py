"""Agent API route: everything of the user, decrypted, as the dashboard's export file."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext_noop
from ninja import Query, Router

from memoryhub.audit.actions import AuditAction
from memoryhub.audit.log import record_access
from memoryhub.errors import ExportNotAllowedError
from memoryhub.http import StreamedDownload
from memoryhub.models import AgentPermission
from memoryhub.queries.connections import is_agent_allowed
from memoryhub.queries.export import stream_user_data

from .auth import Scope, resolve_scope
from .schemas import ERRORS, ScopeIn

router = Router(tags=["export"])

EXPORT_DESCRIPTION = (
    "The export document (format `memoryhub-export/1`), the same JSON as the dashboard's "
    "download: `format`, `exported_at`, `account`, `modes` (each with its `memories` and their "
    "`previous_versions`, `sessions` with their messages, `agent_journal`, `answers`, "
    "`review_candidates`), `personal_access_keys` (metadata only) and `blocked_agents`. "
    "docs/history.md describes it."
)


def export_modes(scope: Scope) -> list[str] | None:
    """The modes the caller may export (None: all); raises ExportNotAllowedError for an agent
    the user did not allow."""
    if scope.agent is None:
        # A personal key is the user's own software; one bound to a mode exports that mode.
        return [scope.api_key.mode.slug] if scope.api_key.mode is not None else None
    # Security invariant: an agent exports only if the user turned "may export" on for it, and
    # never a mode whose memory the user turned off (blocked agents never get this far).
    if not is_agent_allowed(user=scope.user, agent=scope.agent, permission=AgentPermission.EXPORT):
        record_access(
            actor=scope.actor, subject_user_id=scope.user.pk, action=AuditAction.EXPORT_REFUSED
        )
        raise ExportNotAllowedError(
            gettext_noop(
                "the user has not allowed this agent to export their data (dashboard: Agents)"
            )
        )
    return list(scope.user.modes.filter(is_memory_off=False).values_list("slug", flat=True))


@router.get(
    "/export",
    summary="Export everything of the user (streamed JSON)",
    response={200: dict[str, Any], **ERRORS},
    openapi_extra={"responses": {200: {"description": EXPORT_DESCRIPTION}}},
)
def export(request: HttpRequest, scope_in: Query[ScopeIn]) -> StreamedDownload:
    """Everything of the user, decrypted, streamed as one JSON document (the dashboard export).

    For a personal key (a mode-bound key exports its mode), and for an agent the user allowed
    to export in the dashboard (Agents → "may export"; off by default), without the modes
    whose memory is off. `mode` is ignored: the export covers every mode the caller may read.
    """
    scope = resolve_scope(request, scope_in.user, scope_in.mode)
    parts = stream_user_data(user=scope.user, actor=scope.actor, mode_slugs=export_modes(scope))
    response = StreamedDownload(request, parts, content_type="application/json; charset=utf-8")
    filename = f"memoryhub-export-{timezone.now():%Y%m%d-%H%M%S}.json"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    # The body is the user's decrypted memory: no shared cache may keep it.
    response["Cache-Control"] = "no-store"
    return response
