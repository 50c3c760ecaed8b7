"""Reported answers, learning candidates and the workspace knowledge base (documents, chunks).

Domain data: the API records answers, the context assembly searches the knowledge base, and a
forget deletes a user's answers and candidates. The review app's own models (decisions and
the threshold history) sit on top of these in review/models.py.

The tables keep the names they had when these models lived in the review app (`db_table`):
moving the models moved no data (docs/architecture.md).

Text storage, decided once for the whole app:
- An answer record keeps the question, answer, feedback comment and items exactly as the agent
  sent them, encrypted under the user's data key (like memories): they are the user's data.
- A learning candidate keeps only the *scrubbed* question and answer (personal data replaced by
  placeholders), and still encrypts them under the user's data key rather than a workspace key.
  The scrubber is pattern-based and cannot catch everything (health details, say), so the text
  stays out of database dumps, and crypto-shredding the user (account deletion) makes every
  candidate derived from them unreadable even before its row is purged.
- A knowledge document is plaintext: a reviewer has read, edited and published it as workspace
  knowledge about the domain, not about a user, and it is searched and injected as such.
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from pgvector.django import VectorField

from .memories import EMBEDDING_DIMENSIONS
from .sessions import Session
from .workspaces import Agent, Mode, User, Workspace


class FailureClass(models.TextChoices):
    """Why an answer was captured for review."""

    NEGATIVE_FEEDBACK = "negative_feedback", _("Negative feedback")
    HALLUCINATION = "hallucination", _("Hallucination signal")
    RETRIEVAL_MISS = "retrieval_miss", _("Retrieval miss")
    INCOMPLETE = "incomplete", _("Incomplete answer")
    POLICY_BLOCK = "policy_block", _("Policy block")


class Feedback(models.TextChoices):
    UP = "up"
    DOWN = "down"


class AnswerRecord(models.Model):
    """One answer an agent gave a user, with its confidence signals; text is ciphertext."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    # Forgetting a session's history forgets the answers given in it.
    session = models.ForeignKey(
        Session, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    question_ciphertext = models.BinaryField()
    answer_ciphertext = models.BinaryField()
    items_ciphertext = models.BinaryField(null=True, blank=True)
    signals = models.JSONField(default=dict)
    # Ids of the context blocks' memories (and knowledge documents) the answer was built from.
    context_ids = ArrayField(models.CharField(max_length=64), default=list, blank=True)
    composite = models.FloatField(help_text="Weighted signals, as reported.")
    confidence = models.FloatField(help_text="The composite, adjusted by the user's feedback.")
    feedback = models.CharField(max_length=4, choices=Feedback.choices, blank=True)
    feedback_comment_ciphertext = models.BinaryField(null=True, blank=True)
    feedback_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        db_table = "review_answerrecord"
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["user", "mode"], name="answer_record_scope_idx"),
            # The daily answer quota counts one user's answers since midnight.
            models.Index(fields=["user", "created_at"], name="answer_record_daily_idx"),
        ]

    def __str__(self) -> str:
        return f"answer {self.id} ({self.confidence:.2f})"


class LearningCandidateQuerySet(models.QuerySet["LearningCandidate"]):
    def pending(self) -> LearningCandidateQuerySet:
        return self.filter(status=LearningCandidate.Status.PENDING)


class LearningCandidate(models.Model):
    """A captured answer or a proposed fact waiting for a reviewer; text is scrubbed ciphertext."""

    class Kind(models.TextChoices):
        ANSWER = "answer", _("Answer")
        FACT = "fact", _("Proposed fact")

    class Status(models.TextChoices):
        PENDING = "pending", _("Pending")
        APPROVED = "approved", _("Approved")
        REJECTED = "rejected", _("Rejected")
        # A question about the user that no knowledge document can answer (issue 17): the
        # reviewer wrote the answer into the user's memory, for them to confirm, or left it to
        # the user (an open item in their memory). Nothing goes to the knowledge base.
        ANSWERED = "answered", _("Answered for the user")
        NEEDS_USER = "needs_user", _("Needs the user")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="+")
    mode = models.ForeignKey(Mode, on_delete=models.CASCADE, related_name="+")
    answer = models.OneToOneField(
        AnswerRecord,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="candidate",
    )
    kind = models.CharField(max_length=8, choices=Kind.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    failure_class = models.CharField(max_length=20, choices=FailureClass.choices, blank=True)
    # Short codes of what the hallucination checks found ("past_date_as_upcoming", …).
    findings = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    # Scrubbed text, encrypted under the user's data key (see the module docstring).
    question_ciphertext = models.BinaryField(null=True, blank=True)
    answer_ciphertext = models.BinaryField()
    comment_ciphertext = models.BinaryField(null=True, blank=True)
    # How many findings of each personal-data category the scrubber replaced.
    scrub_counts = models.JSONField(default=dict, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    # Of the scrubbed question (or statement): groups similar candidates.
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    # Which model made `embedding` (memoryhub/embeddings.py MODELS): searches compare only
    # vectors of one model, and `manage.py reembed` moves rows from one model to another.
    embedding_model = models.CharField(max_length=64, blank=True, default="")
    group_id = models.UUIDField(db_index=True)
    created_at = models.DateTimeField(default=timezone.now)
    skipped_at = models.DateTimeField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    rejection_reason = models.TextField(blank=True)

    objects = LearningCandidateQuerySet.as_manager()

    class Meta:
        db_table = "review_learningcandidate"
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["workspace", "status"], name="candidate_queue_idx"),
            # The daily candidate quota counts one workspace's candidates since midnight.
            models.Index(fields=["workspace", "created_at"], name="candidate_daily_idx"),
        ]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            # A vector without its model could be compared with another model's: never stored.
            models.CheckConstraint(
                condition=~models.Q(embedding_model=""), name="candidate_embedding_has_model"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} candidate {self.id} ({self.status})"


class KnowledgeDocument(models.Model):
    """A published piece of workspace knowledge: a reviewed Q/A, a fact, or a pasted document."""

    class Source(models.TextChoices):
        ANSWER = "answer", _("Reviewed answer")
        FACT = "fact", _("Reviewed fact")
        PASTED = "pasted", _("Pasted text")
        UPLOADED = "uploaded", _("Uploaded file")

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    workspace = models.ForeignKey(
        Workspace, on_delete=models.CASCADE, related_name="knowledge_documents"
    )
    title = models.CharField(max_length=200)
    body = models.TextField()
    source = models.CharField(max_length=10, choices=Source.choices)
    # The document outlives its candidate: it was scrubbed and reviewed into workspace knowledge.
    source_candidate = models.OneToOneField(
        LearningCandidate,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="document",
    )
    is_published = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "review_knowledgedocument"
        ordering: ClassVar[list[str]] = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class KnowledgeChunk(models.Model):
    """A passage of a knowledge document with its embedding: the unit of knowledge search."""

    id = models.BigAutoField(primary_key=True)
    document = models.ForeignKey(KnowledgeDocument, on_delete=models.CASCADE, related_name="chunks")
    # Copied from the document so a search filters on one table's column.
    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()
    text = models.TextField()
    embedding = VectorField(dimensions=EMBEDDING_DIMENSIONS)
    # Which model made `embedding` (memoryhub/embeddings.py MODELS): searches compare only
    # vectors of one model, and `manage.py reembed` moves rows from one model to another.
    embedding_model = models.CharField(max_length=64, blank=True, default="")

    class Meta:
        db_table = "review_knowledgechunk"
        ordering: ClassVar[list[str]] = ["document", "position"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["document", "position"], name="knowledge_chunk_position_unique"
            ),
            models.CheckConstraint(
                condition=~models.Q(embedding_model=""), name="chunk_embedding_has_model"
            ),
        ]

    def __str__(self) -> str:
        return f"chunk {self.position} of {self.document_id}"
