"""The staff forms: the access-audit filter, and granting a role."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, time, timedelta

from django import forms
from django.utils.translation import gettext_lazy as _
from django_stubs_ext import StrOrPromise

from accounts.role_grants import Role
from memoryhub.models import ActorType, Channel, Workspace
from memoryhub.queries.audit_log import AuditFilter


def _blank_first(choices: Sequence[tuple[str, StrOrPromise]]) -> list[tuple[str, StrOrPromise]]:
    return [("", _("Any")), *choices]


class AuditFilterForm(forms.Form):
    user = forms.CharField(
        label=_("User"),
        required=False,
        max_length=254,
        help_text=_("Email, user id, or the pseudonym of a deleted account."),
    )
    mode = forms.SlugField(
        label=_("Mode"),
        required=False,
        max_length=64,
        help_text=_("A mode's slug, with a user: the log holds only a pseudonym of each mode."),
    )
    actor_type = forms.ChoiceField(
        required=False, choices=_blank_first(ActorType.choices), label=_("Actor type")
    )
    actor_id = forms.CharField(required=False, max_length=200, label=_("Actor id or name"))
    action = forms.CharField(
        label=_("Action"),
        required=False,
        max_length=40,
        help_text=_("Prefix, e.g. memory. or memory.forget"),
    )
    channel = forms.ChoiceField(
        label=_("Channel"), required=False, choices=_blank_first(Channel.choices)
    )
    since = forms.DateField(
        label=_("Since"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    until = forms.DateField(
        label=_("Until"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text=_("Inclusive."),
    )

    def clean(self) -> dict[str, object] | None:
        cleaned = super().clean()
        since, until = (cleaned or {}).get("since"), (cleaned or {}).get("until")
        if since and until and since > until:
            self.add_error("until", _("The end of the period must not be before its start."))
        if (cleaned or {}).get("mode") and not (cleaned or {}).get("user"):
            self.add_error("mode", _("Name a user too: modes belong to one user."))
        return cleaned

    def to_filter(self) -> AuditFilter:
        """The validated form as an AuditFilter (dates are whole UTC days)."""
        data = self.cleaned_data
        since = data.get("since")
        until = data.get("until")
        return AuditFilter(
            user=data.get("user") or "",
            mode=data.get("mode") or "",
            actor_type=data.get("actor_type") or "",
            actor_id=data.get("actor_id") or "",
            action=data.get("action") or "",
            channel=data.get("channel") or "",
            since=datetime.combine(since, time.min, tzinfo=UTC) if since else None,
            until=(
                datetime.combine(until, time.min, tzinfo=UTC) + timedelta(days=1) if until else None
            ),
        )


class RoleForm(forms.Form):
    email = forms.EmailField(
        label=_("Email"), max_length=254, help_text=_("The email the person signs in with.")
    )
    role = forms.ChoiceField(label=_("Role"), choices=Role.choices)
    workspace = forms.ModelChoiceField(
        label=_("Workspace"), queryset=Workspace.objects.order_by("slug"), to_field_name="slug"
    )
    action = forms.ChoiceField(
        label=_("Action"),
        choices=[("grant", _("Grant")), ("revoke", _("Revoke"))],
        widget=forms.RadioSelect,
        initial="grant",
    )
