"""Django admin: configuration objects are editable; memory text and audit rows are not."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from memoryhub.errors import InvalidInputError
from memoryhub.models import (
    Agent,
    ApiKey,
    AuditEntry,
    ExtractionRun,
    Mode,
    User,
    Workspace,
    WorkspaceNodeType,
)
from memoryhub.services.graph.recording import check_node_type_slug


class WorkspaceNodeTypeForm(forms.ModelForm[WorkspaceNodeType]):
    class Meta:
        model = WorkspaceNodeType
        fields = ("slug", "name", "is_transient")

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["name"].required = False  # Defaults to the slug, as in declare_node_type.

    def clean_slug(self) -> str:
        # The same rule as the graph service's declare_node_type: a slug, not a built-in type.
        try:
            return check_node_type_slug(self.cleaned_data.get("slug", ""))
        except InvalidInputError as error:
            raise forms.ValidationError(str(error)) from None

    def clean_name(self) -> str:
        # The slug field comes first, so it is already clean here.
        return str(self.cleaned_data.get("name") or "").strip() or self.cleaned_data.get("slug", "")


class WorkspaceNodeTypeInline(admin.TabularInline[WorkspaceNodeType, Workspace]):
    """The workspace's own graph node types ("hotel", "course"): agents report items of them."""

    model = WorkspaceNodeType
    form = WorkspaceNodeTypeForm
    extra = 1


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin[Workspace]):
    list_display = ("slug", "name", "review_threshold", "created_at")
    search_fields = ("slug", "name")
    inlines = (WorkspaceNodeTypeInline,)


@admin.register(User)
class UserAdmin(admin.ModelAdmin[User]):
    list_display = ("email", "external_id", "workspace", "is_staff", "is_memory_paused")
    list_filter = ("workspace", "is_staff")
    search_fields = ("email", "external_id")
    exclude = ("password",)


@admin.register(Mode)
class ModeAdmin(admin.ModelAdmin[Mode]):
    list_display = ("slug", "user", "created_at")


@admin.register(Agent)
class AgentAdmin(admin.ModelAdmin[Agent]):
    list_display = (
        "name",
        "workspace",
        "is_active",
        "token_budget",
        "last_messages",
        "recall_top_k",
    )
    list_filter = ("workspace", "is_active")
    fieldsets = (
        (None, {"fields": ("workspace", "name", "persona", "is_active")}),
        (
            "Memory settings",
            {
                "fields": (
                    "token_budget",
                    "last_messages",
                    "recall_top_k",
                    "recall_message_range",
                    "is_working_memory_enabled",
                    "disabled_layers",
                )
            },
        ),
    )


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin[ApiKey]):
    list_display = ("prefix", "agent", "user", "mode", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin[AuditEntry]):
    """Read-only: audit rows are append-only (a database trigger refuses changes too)."""

    list_display = (
        "id",
        "created_at",
        "actor_type",
        "actor_id",
        "action",
        "channel",
        "mode",
        "subject",
    )
    list_filter = ("actor_type", "channel", "action")
    search_fields = ("actor_id", "subject", "action")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ExtractionRun)
class ExtractionRunAdmin(admin.ModelAdmin[ExtractionRun]):
    """Read-only: token usage, rejected hallucinations and offline fallbacks, for admins to watch."""

    list_display = (
        "started_at",
        "session",
        "extractor",
        "status",
        "fell_back_to_offline",
        "items_written",
        "items_rejected",
        "input_tokens",
        "output_tokens",
        "requeue_count",
    )
    list_filter = ("status", "fell_back_to_offline", "extractor")
    readonly_fields = ("error",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
