"""The staff forms: the access-audit filter, and granting a role."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from django import forms

from accounts.role_grants import Role
from memoryhub.models import ActorType, Channel, Workspace
from memoryhub.queries.audit_log import AuditFilter


def _blank_first(choices: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [("", "Any"), *choices]


class AuditFilterForm(forms.Form):
    user = forms.CharField(
        required=False,
        max_length=254,
        help_text="Email, user id, or the pseudonym of a deleted account.",
    )
    mode = forms.SlugField(
        required=False,
        max_length=64,
        help_text="A mode's slug, with a user: the log holds only a pseudonym of each mode.",
    )
    actor_type = forms.ChoiceField(
        required=False, choices=_blank_first(ActorType.choices), label="Actor type"
    )
    actor_id = forms.CharField(required=False, max_length=200, label="Actor id or name")
    action = forms.CharField(
        required=False, max_length=40, help_text="Prefix, e.g. memory. or memory.forget"
    )
    channel = forms.ChoiceField(required=False, choices=_blank_first(Channel.choices))
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
        help_text="Inclusive.",
    )

    def clean(self) -> dict[str, object] | None:
        cleaned = super().clean()
        since, until = (cleaned or {}).get("since"), (cleaned or {}).get("until")
        if since and until and since > until:
            self.add_error("until", "The end of the period must not be before its start.")
        if (cleaned or {}).get("mode") and not (cleaned or {}).get("user"):
            self.add_error("mode", "Name a user too: modes belong to one user.")
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
    email = forms.EmailField(max_length=254, help_text="The email the person signs in with.")
    role = forms.ChoiceField(choices=Role.choices)
    workspace = forms.ModelChoiceField(
        queryset=Workspace.objects.order_by("slug"), to_field_name="slug"
    )
    action = forms.ChoiceField(
        choices=[("grant", "Grant"), ("revoke", "Revoke")],
        widget=forms.RadioSelect,
        initial="grant",
    )
