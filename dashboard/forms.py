"""Dashboard forms: they validate input; services do the rest."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.utils.formats import date_format
from django.utils.translation import gettext, pgettext_lazy
from django.utils.translation import gettext_lazy as _

from memoryhub.models import Importance, ImportFormat, Mode, User
from memoryhub.services.forget import ForgetSelector

EPISODE_TYPES = [
    ("", _("Any type")),
    ("decision", _("Decisions")),
    ("milestone", _("Milestones")),
    ("commitment", _("Commitments")),
    ("event", _("Events")),
]
RETENTION_CHOICES = [
    ("", _("Keep until I delete them")),
    ("30", _("1 month")),
    ("90", _("3 months")),
    ("180", _("6 months")),
    ("365", _("1 year")),
    ("730", _("2 years")),
]
IMPORTANCE_CHOICES = [
    (Importance.LOW, _("Low")),
    (Importance.NORMAL, _("Normal")),
    (Importance.HIGH, _("High")),
    (Importance.CRITICAL, _("Critical")),
]
EVERYTHING = "everything"
EVERYTHING_PHRASE = "delete everything"


def _start_of(day: date) -> datetime:
    return datetime.combine(day, time.min, tzinfo=UTC)


def _day(day: date) -> str:
    """ "05 Dec 2026", its month in the language of the request."""
    return date_format(day, "d M Y")


class MemoryEditForm(forms.Form):
    content = forms.CharField(
        label=_("What MemoryHub remembers"),
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=settings.MEMORYHUB_MAX_CONTENT_BYTES,
        strip=True,
    )
    importance = forms.ChoiceField(choices=IMPORTANCE_CHOICES)


class ModeChoiceField(forms.ModelChoiceField):  # type: ignore[type-arg]  # Stubs-only generic.
    """A choice of the user's modes, each by the name the pages show (Mode.display_name)."""

    def label_from_instance(self, obj: Mode) -> str:
        return obj.display_name


class CopyForm(forms.Form):
    target = ModeChoiceField(queryset=Mode.objects.none(), label=_("Copy to mode"))

    def __init__(self, *args: Any, user: User, mode: Mode, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Only the user's own modes are choices: another user's mode id fails validation.
        target = self.fields["target"]
        assert isinstance(target, forms.ModelChoiceField)  # noqa: S101 - narrows the type.
        target.queryset = Mode.objects.filter(user=user).exclude(pk=mode.pk)


class ResolveForm(forms.Form):
    keep = forms.UUIDField()
    drop = forms.UUIDField()


class ModeForm(forms.Form):
    name = forms.CharField(label=_("New mode"), max_length=100, strip=True)


class SearchForm(forms.Form):
    q = forms.CharField(label=_("Search this mode"), max_length=500, strip=True, required=False)


class AgentFilterForm(forms.Form):
    """Only the items one agent remembered (the choices are the agents of this mode)."""

    agent = forms.UUIDField(required=False)


class EpisodeFilterForm(forms.Form):
    type = forms.ChoiceField(label=_("Type"), choices=EPISODE_TYPES, required=False)
    topic = forms.CharField(label=_("Topic"), max_length=100, required=False, strip=True)
    since = forms.DateField(
        label=pgettext_lazy("first day of a period", "From"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    until = forms.DateField(
        label=pgettext_lazy("last day of a period", "To"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    def period(self) -> tuple[datetime | None, datetime | None]:
        """The chosen days as [start of `since`, end of `until`) in UTC."""
        since: date | None = self.cleaned_data.get("since")
        until: date | None = self.cleaned_data.get("until")
        return (
            _start_of(since) if since else None,
            _start_of(until + timedelta(days=1)) if until else None,
        )


class ForgetForm(forms.Form):
    """Forget the last hour, a period (whole days, UTC) or a topic."""

    LAST_HOUR = "last-hour"
    PERIOD = "period"
    TOPIC = "topic"

    what = forms.ChoiceField(
        choices=[(LAST_HOUR, _("The last hour")), (PERIOD, _("A period")), (TOPIC, _("A topic"))],
        widget=forms.HiddenInput,
    )
    since = forms.DateField(
        label=pgettext_lazy("first day of a period", "From"),
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )
    until = forms.DateField(
        label=_("To (included)"), required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    topic = forms.CharField(label=_("Topic"), max_length=100, required=False, strip=True)

    @classmethod
    def is_asked(cls, data: Any) -> bool:
        """Whether the request names a selection to preview or forget (not just a card)."""
        what = data.get("what")
        return what == cls.LAST_HOUR or (
            what is not None and any(name in data for name in ("since", "until", "topic"))
        )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        what = data.get("what")
        if what == self.PERIOD:
            if not data.get("since") and not data.get("until"):
                raise forms.ValidationError(gettext("Choose the first day, the last day, or both."))
            if data.get("since") and data.get("until") and data["since"] > data["until"]:
                raise forms.ValidationError(gettext("The first day must come before the last day."))
        if what == self.TOPIC and not data.get("topic"):
            self.add_error("topic", gettext("Say which topic to forget."))
        return data

    def selector(self, *, now: datetime) -> ForgetSelector:
        """The forget selector this form asks for (call after is_valid)."""
        what = self.cleaned_data["what"]
        if what == self.LAST_HOUR:
            return ForgetSelector(since=now - timedelta(hours=1))
        if what == self.TOPIC:
            return ForgetSelector(topic=self.cleaned_data["topic"])
        since, until = self.cleaned_data.get("since"), self.cleaned_data.get("until")
        return ForgetSelector(
            since=_start_of(since) if since else None,
            until=_start_of(until + timedelta(days=1)) if until else None,
        )

    def describe(self) -> str:
        """What was forgotten, in words (and the language of the request), for the receipt."""
        what = self.cleaned_data["what"]
        if what == self.LAST_HOUR:
            return gettext("everything from the last hour")
        if what == self.TOPIC:
            return gettext("everything about “{topic}”").format(topic=self.cleaned_data["topic"])
        since: date | None = self.cleaned_data.get("since")
        until: date | None = self.cleaned_data.get("until")
        if since and until:
            return gettext("everything from {since} to {until}").format(
                since=_day(since), until=_day(until)
            )
        if since:
            return gettext("everything since {since}").format(since=_day(since))
        assert until is not None  # noqa: S101 - clean() asks for the first day, the last or both.
        return gettext("everything until {until}").format(until=_day(until))


def _typed(phrase: str) -> str:
    """A confirmation phrase as compared: case and runs of spaces do not count."""
    return " ".join(phrase.lower().split())


class DeleteAllForm(forms.Form):
    """Delete all of one mode, or of every mode, after typing a confirmation phrase."""

    scope = forms.ChoiceField(label=_("What to delete"), widget=forms.RadioSelect)
    confirmation = forms.CharField(label=_("Type the confirmation phrase"), max_length=200)

    def __init__(self, *args: Any, mode: Mode, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode = mode
        self.fields["scope"].choices = [  # type: ignore[attr-defined]  # A ChoiceField.
            (mode.slug, gettext("Everything in the “{name}” mode").format(name=mode.display_name)),
            (EVERYTHING, gettext("Everything in every mode")),
        ]

    def expected_phrase(self, scope: str) -> str:
        """The phrase to type, in the language of the page (delete_all.html shows the same).

        A mode's phrase names it as the page does (« supprimer personnel », "delete side
        projects"), never by its slug, which the person never sees.
        """
        if scope == EVERYTHING:
            return gettext("delete everything")
        return gettext("delete %(mode)s") % {"mode": self.mode.display_name.lower()}

    def _accepted_phrases(self, scope: str) -> set[str]:
        # English is always accepted too, and for a mode its slug's phrase: they are the ones
        # the docs and the API know. Each still names the mode deleted, and only this one.
        if scope == EVERYTHING:
            return {_typed(self.expected_phrase(scope)), EVERYTHING_PHRASE}
        return {
            _typed(self.expected_phrase(scope)),
            _typed(f"delete {self.mode.name}"),
            f"delete {self.mode.slug}",
        }

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        scope = data.get("scope")
        if scope and _typed(data.get("confirmation") or "") not in self._accepted_phrases(scope):
            self.add_error(
                "confirmation",
                gettext("Type “{phrase}” exactly to confirm.").format(
                    phrase=self.expected_phrase(scope)
                ),
            )
        return data

    @property
    def is_everything(self) -> bool:
        return bool(self.cleaned_data.get("scope") == EVERYTHING)


class PauseForm(forms.Form):
    is_paused = forms.BooleanField(required=False)


class MemoryOffForm(forms.Form):
    is_off = forms.BooleanField(required=False)


class RetentionForm(forms.Form):
    retention_days = forms.TypedChoiceField(
        label=_("Delete memories older than"),
        choices=RETENTION_CHOICES,
        coerce=int,
        empty_value=None,
        required=False,
    )


class PersonalKeyForm(forms.Form):
    name = forms.CharField(label=_("Name (for example: my desktop assistant)"), max_length=100)
    mode = ModeChoiceField(
        queryset=Mode.objects.none(),
        required=False,
        empty_label=_("Any of my modes"),
        label=_("Only this mode"),
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mode = self.fields["mode"]
        assert isinstance(mode, forms.ModelChoiceField)  # noqa: S101 - narrows the type.
        mode.queryset = Mode.objects.filter(user=user)


class AccessFilterForm(forms.Form):
    # Unchecked by default: what a person wants to know is who else looked.
    mine = forms.BooleanField(label=_("Also show what I did myself"), required=False)


class ImportForm(forms.Form):
    file = forms.FileField(label=_("File (JSON)"))
    mode = ModeChoiceField(
        queryset=Mode.objects.none(),
        empty_label=None,
        label=_("Into this mode (a MemoryHub export keeps its own modes)"),
    )
    format = forms.ChoiceField(
        label=_("Format"),
        required=False,
        choices=[
            ("", _("Tell from the file")),
            *ImportFormat.choices,
        ],
    )
    trust = forms.BooleanField(
        label=_("Trust this file: keep its memories at once, without reviewing them"),
        required=False,
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        mode = self.fields["mode"]
        assert isinstance(mode, forms.ModelChoiceField)  # noqa: S101 - narrows the type.
        mode.queryset = Mode.objects.filter(user=user).order_by("pk")

    def clean_file(self) -> Any:
        upload = self.cleaned_data["file"]
        limit = settings.MEMORYHUB_MAX_IMPORT_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                gettext("The file is over {size} MiB.").format(size=limit // (1024 * 1024))
            )
        return upload


class ImportReviewForm(forms.Form):
    action = forms.ChoiceField(
        choices=[
            ("keep_all", _("Keep all")),
            ("keep_selected", _("Keep selected")),
            ("discard", _("Discard")),
        ]
    )
    memory_ids = forms.TypedMultipleChoiceField(choices=[], required=False, coerce=str)

    def __init__(self, *args: Any, waiting: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["memory_ids"]
        assert isinstance(field, forms.TypedMultipleChoiceField)  # noqa: S101 - narrows the type.
        field.choices = [(memory_id, memory_id) for memory_id in waiting]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("action") == "keep_selected" and not data.get("memory_ids"):
            raise forms.ValidationError(gettext("Choose the memories to keep."))
        return data
