"""Django admin: configuration objects are editable; memory text and audit rows are not.

Every view, list, save and delete through the admin writes an audit row on the "admin" channel,
against the user it touches. What a user, agent, key or mode belongs to is fixed once created:
moving a user to another workspace (or a key to another agent) would hand their memory to
strangers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

from django import forms
from django.contrib import admin
from django.db import models
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse

from memoryhub.actors import Actor
from memoryhub.audit.log import record_admin_site_access
from memoryhub.errors import InvalidInputError
from memoryhub.graph.recording import check_node_type_slug
from memoryhub.http import client_ip
from memoryhub.models import (
    ActorType,
    Agent,
    ApiKey,
    AuditEntry,
    Channel,
    ExtractionRun,
    Mode,
    User,
    Workspace,
    WorkspaceNodeType,
)

AdminModel = TypeVar("AdminModel", bound=models.Model)


def _admin_actor(request: HttpRequest) -> Actor:
    return Actor(
        ActorType.ADMIN,
        str(request.user.pk),
        Channel.ADMIN,
        label=getattr(request.user, "email", "") or "",
        client_ip=client_ip(request),
    )


class AuditedAdmin(admin.ModelAdmin[AdminModel], Generic[AdminModel]):
    """Audits every add, change and delete; `fixed_fields` cannot change once the row exists."""

    fixed_fields: Sequence[str] = ()

    def subject_of(self, obj: AdminModel) -> UUID | None:
        """The user whose data the row is part of (None: workspace configuration)."""
        return None

    def get_readonly_fields(self, request: HttpRequest, obj: AdminModel | None = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if obj is None else (*readonly, *self.fixed_fields)

    def _audit(self, request: HttpRequest, obj: AdminModel, action: str, fields: Any) -> None:
        record_admin_site_access(
            actor=_admin_actor(request),
            subject_user_id=self.subject_of(obj),
            model_name=str(obj._meta.model_name),
            verb=action,
            object_ids=[obj.pk, *(f"field:{name}" for name in fields)],
        )

    def _audit_reads(self, request: HttpRequest, objs: Iterable[AdminModel], verb: str) -> None:
        # One row per user whose data was shown, on that user's chain, so their access log
        # says an admin looked; each row commits on its own (one subject per transaction).
        shown: dict[UUID | None, list[object]] = {}
        for obj in objs:
            shown.setdefault(self.subject_of(obj), []).append(obj.pk)
        for subject, ids in shown.items():
            record_admin_site_access(
                actor=_admin_actor(request),
                subject_user_id=subject,
                model_name=str(self.model._meta.model_name),
                verb=verb,
                object_ids=ids,
            )

    def changeform_view(
        self,
        request: HttpRequest,
        object_id: str | None = None,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Audits showing an existing row (a GET); saves are audited in save_model."""
        response = super().changeform_view(request, object_id, form_url, extra_context)
        shown = (getattr(response, "context_data", None) or {}).get("original")
        if request.method == "GET" and object_id is not None and shown is not None:
            self._audit_reads(request, [shown], "view")
        return response

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Audits the page of rows a list shows (a GET), against each user they belong to."""
        response = super().changelist_view(request, extra_context)
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if request.method == "GET" and changelist is not None:
            self._audit_reads(request, changelist.result_list, "list")
        return response

    def save_model(self, request: HttpRequest, obj: AdminModel, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        self._audit(request, obj, "change" if change else "add", form.changed_data)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        if formset.has_changed():  # An inline (a workspace's node types): the parent's row.
            self._audit(request, form.instance, "change", [formset.prefix])

    def delete_model(self, request: HttpRequest, obj: AdminModel) -> None:
        self._audit(request, obj, "delete", ())
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[AdminModel]) -> None:
        for obj in queryset:
            self._audit(request, obj, "delete", ())
        super().delete_queryset(request, queryset)


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
class WorkspaceAdmin(AuditedAdmin[Workspace]):
    list_display = ("slug", "name", "embedding_model", "review_threshold", "created_at")
    search_fields = ("slug", "name")
    inlines = (WorkspaceNodeTypeInline,)
    # Chosen on the admin tools page "Embedding models" (validated, and re-embedding explained).
    readonly_fields = ("embedding_model",)


@admin.register(User)
class UserAdmin(AuditedAdmin[User]):
    list_display = ("email", "external_id", "workspace", "is_staff", "is_memory_paused")
    list_filter = ("workspace", "is_staff")
    search_fields = ("email", "external_id")
    exclude = ("password",)
    # The creating agent is the one that may issue the user's link (services/user_links.py).
    fixed_fields = ("workspace", "created_by_agent")

    def subject_of(self, obj: User) -> UUID | None:
        return obj.pk


@admin.register(Mode)
class ModeAdmin(AuditedAdmin[Mode]):
    list_display = ("slug", "user", "created_at")
    fixed_fields = ("user", "slug")

    def subject_of(self, obj: Mode) -> UUID | None:
        return obj.user_id


@admin.register(Agent)
class AgentAdmin(AuditedAdmin[Agent]):
    list_display = (
        "name",
        "workspace",
        "is_active",
        "token_budget",
        "last_messages",
        "recall_top_k",
    )
    list_filter = ("workspace", "is_active")
    fixed_fields = ("workspace",)
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
class ApiKeyAdmin(AuditedAdmin[ApiKey]):
    list_display = ("prefix", "agent", "user", "mode", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "key_hash", "created_at", "last_used_at")
    fixed_fields = ("agent", "user", "mode")

    def subject_of(self, obj: ApiKey) -> UUID | None:
        return obj.user_id


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
        "items_over_quota",
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
