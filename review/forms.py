"""Review forms: they validate input; review/services.py and review/knowledge.py do the rest."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

from memoryhub.knowledge.documents import MAX_DOCUMENT_CHARS, MAX_TITLE_CHARS
from memoryhub.models import FailureClass, KnowledgeDocument, LearningCandidate

from .decisions import MAX_REASON_CHARS
from .queries import QueueFilter

MAX_UPLOAD_BYTES = 512 * 1024
UPLOAD_SUFFIXES = (".txt", ".md", ".markdown")


class QueueFilterForm(forms.Form):
    status = forms.ChoiceField(
        label=_("Status"),
        choices=LearningCandidate.Status.choices,
        required=False,
        initial=LearningCandidate.Status.PENDING,
    )
    failure_class = forms.ChoiceField(
        label=_("Failure class"), choices=[("", _("Any")), *FailureClass.choices], required=False
    )
    kind = forms.ChoiceField(
        label=_("Kind"), choices=[("", _("Any")), *LearningCandidate.Kind.choices], required=False
    )

    def filters(self) -> QueueFilter:
        """The valid filters, or the default queue (pending, any class, any kind)."""
        if not self.is_valid():
            return QueueFilter()
        data = self.cleaned_data
        return QueueFilter(
            status=data["status"] or LearningCandidate.Status.PENDING,
            failure_class=data["failure_class"],
            kind=data["kind"],
        )


class ApproveForm(forms.Form):
    question = forms.CharField(
        label=_("Question"),
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        max_length=MAX_DOCUMENT_CHARS,
    )
    answer = forms.CharField(
        label=_("Answer (or fact)"),
        widget=forms.Textarea(attrs={"rows": 6}),
        max_length=MAX_DOCUMENT_CHARS,
    )
    apply_to_group = forms.BooleanField(label=_("Approve the similar ones too"), required=False)


class UserAnswerForm(forms.Form):
    """The right answer to a question about the user, written for them (they confirm it)."""

    user_answer = forms.CharField(
        label=_("The right answer, for this user only"),
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=settings.MEMORYHUB_MAX_CONTENT_BYTES,
        help_text=_(
            "Write it as a statement about them, e.g. “The dentist appointment is on "
            "Tuesday at 10.” It waits in their “Is this right?” until they confirm it."
        ),
    )


class RejectForm(forms.Form):
    reason = forms.CharField(
        label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}), max_length=MAX_REASON_CHARS
    )
    apply_to_group = forms.BooleanField(label=_("Reject the similar ones too"), required=False)


class DocumentForm(forms.Form):
    """A new document: pasted text, or an uploaded text or Markdown file."""

    title = forms.CharField(label=_("Title"), max_length=MAX_TITLE_CHARS, required=False)
    body = forms.CharField(
        label=_("Text or Markdown"),
        widget=forms.Textarea(attrs={"rows": 10}),
        required=False,
        max_length=MAX_DOCUMENT_CHARS,
    )
    upload = forms.FileField(label=_("…or upload a .txt or .md file"), required=False)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        body, upload = (data.get("body") or "").strip(), data.get("upload")
        if bool(body) == bool(upload):
            raise forms.ValidationError(_("Paste some text or upload a file (one of the two)."))
        if upload is not None:
            data["body"] = self._read(upload)
            data["source"] = KnowledgeDocument.Source.UPLOADED
        else:
            data["source"] = KnowledgeDocument.Source.PASTED
        return data

    def _read(self, upload: Any) -> str:
        if PurePath(upload.name or "").suffix.lower() not in UPLOAD_SUFFIXES:
            raise forms.ValidationError(_("Upload a text (.txt) or Markdown (.md) file."))
        if upload.size > MAX_UPLOAD_BYTES:
            raise forms.ValidationError(
                _("The file is larger than {size} KB.").format(size=MAX_UPLOAD_BYTES // 1024)
            )
        try:
            text = str(upload.read().decode("utf-8-sig"))
        except UnicodeDecodeError:
            raise forms.ValidationError(_("The file is not UTF-8 text.")) from None
        if not text.strip():
            raise forms.ValidationError(_("The file is empty."))
        return text


class DocumentEditForm(forms.Form):
    title = forms.CharField(label=_("Title"), max_length=MAX_TITLE_CHARS)
    body = forms.CharField(
        label=_("Text or Markdown"),
        widget=forms.Textarea(attrs={"rows": 14}),
        max_length=MAX_DOCUMENT_CHARS,
    )


class ReviewKeyForm(forms.Form):
    name = forms.CharField(label=_("Name (for example: review bot)"), max_length=100)


class DigestForm(forms.Form):
    is_on = forms.BooleanField(required=False)
