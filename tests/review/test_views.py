"""Reviewer pages: reviewers only (with TOTP), scrubbed text, audited views, decisions."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memoryhub.actors import Actor
from memoryhub.audit.log import mode_pseudonym, subject_pseudonym
from memoryhub.keyring import cipher_for
from memoryhub.knowledge import answers as services
from memoryhub.knowledge.documents import publish_document
from memoryhub.memory_rows import decrypt_memory
from memoryhub.models import AuditEntry, KnowledgeDocument, LearningCandidate, Memory, MemoryKind
from review import decisions
from tests import factories

from .conftest import HIGH, LOW_RETRIEVAL, make_reviewer

QUESTION = "Can you send the Lyon store hours to alice@example.com?"


@pytest.fixture
def candidate(report):
    return report(QUESTION, "I could not find them.").candidate


def page_urls(candidate_id, document_id):
    return [
        ("get", reverse("review:queue")),
        ("get", reverse("review:candidate_detail", args=[candidate_id])),
        ("post", reverse("review:candidate_approve", args=[candidate_id])),
        ("post", reverse("review:candidate_reject", args=[candidate_id])),
        ("post", reverse("review:candidate_skip", args=[candidate_id])),
        ("post", reverse("review:candidate_answer_for_user", args=[candidate_id])),
        ("post", reverse("review:candidate_needs_user", args=[candidate_id])),
        ("get", reverse("review:knowledge_list")),
        ("post", reverse("review:knowledge_add")),
        ("get", reverse("review:document_edit", args=[document_id])),
        ("post", reverse("review:document_publication", args=[document_id])),
    ]


@pytest.fixture
def document(workspace, embedder):
    return publish_document(
        workspace=workspace,
        title="Hours",
        body="We open at nine.",
        source=KnowledgeDocument.Source.PASTED,
        embedder=embedder,
    )


def test_end_users_get_403_on_every_review_page(client, user, candidate, document):
    client.force_login(user)
    for method, url in page_urls(candidate.pk, document.pk):
        response = getattr(client, method)(url)
        assert response.status_code == 403, url
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_anonymous_visitors_are_sent_to_log_in(client, candidate, document):
    for method, url in page_urls(candidate.pk, document.pk):
        response = getattr(client, method)(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith(reverse("account_login"))


def test_reviewers_without_totp_are_sent_to_set_it_up(client, workspace):
    client.force_login(make_reviewer(workspace, has_totp=False))
    response = client.get(reverse("review:queue"))
    assert response.status_code == 302
    assert response["Location"] == reverse("mfa_activate_totp")


def test_the_queue_shows_scrubbed_text_and_audits_the_view(
    reviewer_client, candidate, user, reviewer
):
    response = reviewer_client.get(reverse("review:queue"))
    assert response.status_code == 200
    page = response.content.decode()
    assert "[email]" in page
    assert "alice@example.com" not in page
    entry = AuditEntry.objects.get(action="review.queue_view")
    assert (entry.actor_type, entry.actor_id, entry.channel) == ("reviewer", str(reviewer.pk), "ui")
    assert entry.subject == subject_pseudonym(user.pk)
    assert entry.object_ids == [str(candidate.pk)]


def test_viewing_a_candidate_is_audited(reviewer_client, candidate, user, reviewer):
    response = reviewer_client.get(reverse("review:candidate_detail", args=[candidate.pk]))
    assert response.status_code == 200
    assert "[email]" in response.content.decode()
    entry = AuditEntry.objects.get(action="review.candidate_view")
    assert (entry.actor_type, entry.channel) == ("reviewer", "ui")
    assert entry.mode == mode_pseudonym(subject_pseudonym(user.pk), "personal")
    assert entry.subject == subject_pseudonym(user.pk)
    assert entry.object_ids == [str(candidate.pk)]


def test_the_queue_page_runs_the_same_queries_for_few_or_many_candidates(reviewer_client, report):
    def count_queries():
        with CaptureQueriesContext(connection) as queries:
            assert reviewer_client.get(reverse("review:queue")).status_code == 200
        return len(queries)

    report("How do I return a parcel?", "No idea.")
    report("What is the warranty on speakers?", "No idea.")
    few = count_queries()
    for question in ["Do you deliver to Belgium?", "Is gift wrapping free?", "Can I pay later?"]:
        report(question, "No idea.")
    assert count_queries() == few


def test_another_workspaces_candidate_is_not_found(client, candidate):
    client.force_login(make_reviewer(factories.make_workspace()))
    response = client.get(reverse("review:candidate_detail", args=[candidate.pk]))
    assert response.status_code == 404
    assert not AuditEntry.objects.filter(action="review.candidate_view").exists()


def test_the_queue_puts_negative_feedback_first_and_groups_similar_questions(
    reviewer_client, report, user, personal, agent_actor, embedder
):
    report("How do I return a damaged parcel?", "No idea.")
    report("How do I send back a damaged parcel?", "No idea.")
    disliked = report("Which stores are open on Sunday?", "All of them.", HIGH)
    services.record_feedback(
        user=user,
        mode=personal,
        answer_id=disliked.answer.pk,
        value="down",
        actor=agent_actor,
        embedder=embedder,
    )
    candidates = reviewer_client.get(reverse("review:queue")).context["candidates"]
    assert [c.failure_class for c in candidates] == ["negative_feedback", "retrieval_miss"]
    assert candidates[1].similar_count == 2


def test_approving_from_the_page_publishes_the_edited_answer(reviewer_client, candidate):
    response = reviewer_client.post(
        reverse("review:candidate_approve", args=[candidate.pk]),
        {"question": "What are the Lyon store hours?", "answer": "Nine to seven, every day."},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("review:queue")
    document = KnowledgeDocument.objects.get(source_candidate=candidate)
    assert document.body == "Q: What are the Lyon store hours?\n\nA: Nine to seven, every day."


def test_approving_an_already_decided_candidate_only_says_so(reviewer_client, candidate):
    url = reverse("review:candidate_approve", args=[candidate.pk])
    reviewer_client.post(url, {"answer": "Nine to seven."})
    response = reviewer_client.post(url, {"answer": "Nine to seven."}, follow=True)
    assert "already decided" in response.content.decode()
    assert KnowledgeDocument.objects.count() == 1


def test_a_rejection_without_a_reason_is_422(reviewer_client, candidate):
    response = reviewer_client.post(reverse("review:candidate_reject", args=[candidate.pk]), {})
    assert response.status_code == 422
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_rejecting_with_a_reason(reviewer_client, candidate):
    response = reviewer_client.post(
        reverse("review:candidate_reject", args=[candidate.pk]), {"reason": "Store-specific."}
    )
    assert response.status_code == 302
    rejected = LearningCandidate.objects.get(pk=candidate.pk)
    assert (rejected.status, rejected.rejection_reason) == ("rejected", "Store-specific.")


def test_a_skipped_candidate_waits_behind_the_others(reviewer_client, report):
    first = report("How do I return a damaged parcel?", "No idea.").candidate
    second = report("Do you deliver to Belgium?", "No idea.").candidate
    reviewer_client.post(reverse("review:candidate_skip", args=[first.pk]))
    candidates = reviewer_client.get(reverse("review:queue")).context["candidates"]
    assert [c.id for c in candidates] == [second.pk, first.pk]


def test_an_htmx_filter_request_gets_only_the_queue_fragment(reviewer_client, candidate):
    response = reviewer_client.get(
        reverse("review:queue"), {"failure_class": "policy_block"}, headers={"HX-Request": "true"}
    )
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="review-queue"')
    assert "Nothing to review here." in page


def test_pasting_a_document_publishes_it(reviewer_client, reviewer):
    response = reviewer_client.post(
        reverse("review:knowledge_add"), {"title": "", "body": "# Returns\n\nFree for 30 days."}
    )
    assert response.status_code == 302
    document = KnowledgeDocument.objects.get(workspace=reviewer.workspace)
    assert (document.title, document.source, document.is_published) == ("Returns", "pasted", True)


def test_uploading_a_markdown_file_publishes_it(reviewer_client, reviewer):
    upload = SimpleUploadedFile("faq.md", b"# Delivery\n\nWe ship in 24 hours.")
    response = reviewer_client.post(reverse("review:knowledge_add"), {"upload": upload})
    assert response.status_code == 302
    document = KnowledgeDocument.objects.get(workspace=reviewer.workspace)
    assert document.source == "uploaded"
    assert document.chunks.get().text == "# Delivery\n\nWe ship in 24 hours."


@pytest.mark.parametrize(
    "data",
    [
        {},
        {"upload": SimpleUploadedFile("faq.pdf", b"%PDF-1.4")},
        {"upload": SimpleUploadedFile("faq.txt", b"\xff\xfe\x00broken")},
    ],
)
def test_a_missing_or_unreadable_document_is_422(reviewer_client, reviewer, data):
    response = reviewer_client.post(reverse("review:knowledge_add"), data)
    assert response.status_code == 422
    assert not KnowledgeDocument.objects.filter(workspace=reviewer.workspace).exists()


def test_editing_and_unpublishing_a_document(reviewer_client, document):
    url = reverse("review:document_edit", args=[document.pk])
    assert reviewer_client.get(url).status_code == 200
    response = reviewer_client.post(url, {"title": "Opening hours", "body": "We open at ten."})
    assert response.status_code == 302
    document.refresh_from_db()
    assert (document.title, document.chunks.get().text) == ("Opening hours", "We open at ten.")
    reviewer_client.post(
        reverse("review:document_publication", args=[document.pk]), {"publish": "0"}
    )
    document.refresh_from_db()
    assert not document.is_published


def test_another_workspaces_document_is_not_found(client, document):
    client.force_login(make_reviewer(factories.make_workspace()))
    assert client.get(reverse("review:document_edit", args=[document.pk])).status_code == 404


def test_the_queue_page_charts_the_threshold_once_a_window_closes(
    reviewer_client, workspace, candidate
):
    assert "<polyline" not in reviewer_client.get(reverse("review:queue")).content.decode()
    workspace.review_window = 1
    workspace.save(update_fields=["review_window"])
    reviewer_client.post(
        reverse("review:candidate_approve", args=[candidate.pk]), {"answer": "Nine to seven."}
    )
    page = reviewer_client.get(reverse("review:queue")).content.decode()
    # One window is two lone dots as a chart: its figures in words instead (issue 29).
    assert "<polyline" not in page and "One window of decisions has closed" in page
    assert "threshold 0.55" in page
    assert "approval rate 100%" in page


def test_two_windows_draw_lines():
    from django.utils import timezone

    from review.chart import build_chart
    from review.models import ThresholdChange

    now = timezone.now()
    windows = [
        ThresholdChange(threshold=0.5, approval_rate=0.8, queue_size=3, created_at=now),
        ThresholdChange(threshold=0.55, approval_rate=0.6, queue_size=1, created_at=now),
    ]
    chart = build_chart(windows)
    assert not chart.is_single and len(chart.threshold_points.split()) == 2
    assert chart.threshold_points.split()[0] != chart.threshold_points.split()[1]


def test_a_proposed_fact_and_a_decided_candidate_render_without_decision_forms(
    reviewer_client, reviewer, user, personal, agent_actor, embedder, reviewer_actor
):
    fact = services.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Stores close at 7pm on Saturdays.",
        actor=agent_actor,
        embedder=embedder,
    )
    page = reviewer_client.get(reverse("review:candidate_detail", args=[fact.pk])).content.decode()
    assert "Proposed fact" in page
    assert "Stores close at 7pm on Saturdays." in page
    assert "Approve and publish" in page
    document = decisions.approve_candidate(
        workspace=reviewer.workspace,
        candidate_id=fact.pk,
        reviewer=reviewer,
        actor=reviewer_actor,
        embedder=embedder,
    )
    page = reviewer_client.get(reverse("review:candidate_detail", args=[fact.pk])).content.decode()
    assert "Approve and publish" not in page
    assert reverse("review:document_edit", args=[document.pk]) in page


def test_the_knowledge_base_lists_documents_with_the_candidate_they_came_from(
    reviewer_client, reviewer, candidate, reviewer_actor, embedder
):
    document = decisions.approve_candidate(
        workspace=reviewer.workspace,
        candidate_id=candidate.pk,
        reviewer=reviewer,
        actor=reviewer_actor,
        embedder=embedder,
        answer="Nine to seven.",
    )
    page = reviewer_client.get(reverse("review:knowledge_list")).content.decode()
    assert document.title in page
    assert reverse("review:candidate_detail", args=[candidate.pk]) in page


def test_the_queue_can_be_filtered_by_failure_class(reviewer_client, report):
    report("How do I return a damaged parcel?", "No idea.")
    blocked = report(
        "What is my neighbour's address?",
        "I can't share that.",
        {"retrieval": 0.9, "policy": 0.0, "completeness": 0.5, "memory": 0.5},
    )
    response = reviewer_client.get(reverse("review:queue"), {"failure_class": "policy_block"})
    assert [c.id for c in response.context["candidates"]] == [blocked.candidate.pk]


def answer_url(candidate):
    return reverse("review:candidate_answer_for_user", args=[candidate.pk])


def needs_user_url(candidate):
    return reverse("review:candidate_needs_user", args=[candidate.pk])


def memories_of(user, mode, kind=None):
    rows = Memory.objects.for_owner(user=user, mode=mode)
    if kind:
        rows = rows.filter(kind=kind)
    return [decrypt_memory(row, cipher_for(user)) for row in rows]


def test_the_candidate_page_says_why_it_was_captured(reviewer_client, candidate):
    page = reviewer_client.get(
        reverse("review:candidate_detail", args=[candidate.pk])
    ).content.decode()
    assert "Why it was captured" in page
    assert "under the workspace’s capture threshold of 0.60" in page
    # LOW_RETRIEVAL: retrieval 0.10 and memory 0.30 are low, lowest first; the others are not.
    low = page[page.index("Why it was captured") :]
    assert low.index("Low retrieval") < low.index("Low memory")
    assert "what was found (memory, knowledge) did not fit the question" in low
    assert "Low policy" not in page and "Low completeness" not in page
    assert page.count('<span class="status low">low</span>') == 2


def test_the_queue_names_the_low_signals(reviewer_client, candidate):
    page = reviewer_client.get(reverse("review:queue")).content.decode()
    assert "Low: retrieval 0.10, memory 0.30" in page


def test_a_hallucination_and_negative_feedback_are_named(
    reviewer_client, report, user, personal, embedder
):
    answer = report(
        "When is my dentist appointment?",
        "Your appointment on 2020-01-03 is coming up.",
        {"retrieval": 0.9, "policy": 1.0, "completeness": 0.9, "memory": 0.9},
    )
    services.record_feedback(
        user=user,
        mode=personal,
        answer_id=answer.answer.pk,
        value="down",
        actor=Actor.for_user(user.pk),
        embedder=embedder,
    )
    page = reviewer_client.get(
        reverse("review:candidate_detail", args=[answer.candidate.pk])
    ).content.decode()
    assert "The user said the answer was wrong" in page
    assert "it called a date that has passed upcoming" in page


def test_a_reviewer_writes_the_answer_into_the_users_memory_for_them_to_confirm(
    reviewer_client, reviewer, candidate, user, personal
):
    response = reviewer_client.post(
        answer_url(candidate), {"user_answer": "The Lyon store opens at 9 and closes at 7."}
    )
    assert response.status_code == 302 and response["Location"] == reverse("review:queue")
    [memory] = memories_of(user, personal)
    assert memory.content == "The Lyon store opens at 9 and closes at 7."
    assert (memory.source, memory.confidence, memory.status) == (
        "reviewer",
        "candidate",
        "candidate",
    )
    # The user's own question, as they asked it (the reviewer only ever saw it scrubbed).
    assert memory.payload["question"] == QUESTION
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "answered"
    assert not KnowledgeDocument.objects.exists()
    assert AuditEntry.objects.filter(
        subject=subject_pseudonym(user.pk),
        action="review.answer_for_user",
        actor_id=str(reviewer.pk),
    ).exists()


def test_the_user_sees_the_reviewers_answer_as_a_question(client, reviewer_client, candidate, user):
    reviewer_client.post(answer_url(candidate), {"user_answer": "The store opens at 9."})
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    box = page[page.index("Is this right?") :]
    assert "The store opens at 9." in box and "From a reviewer" in box
    assert f"A reviewer’s answer to your question “{QUESTION}”" in box


@pytest.mark.parametrize("data", [{}, {"user_answer": "   "}])
def test_an_empty_answer_for_the_user_is_422_and_writes_nothing(
    reviewer_client, candidate, user, personal, data
):
    response = reviewer_client.post(answer_url(candidate), data)
    assert response.status_code == 422
    assert memories_of(user, personal) == []
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_a_user_who_paused_memory_gets_no_answer_written(
    reviewer_client, candidate, user, personal
):
    from memoryhub.services.preferences import set_memory_paused

    set_memory_paused(user=user, is_paused=True, actor=Actor.for_user(user.pk))
    response = reviewer_client.post(answer_url(candidate), {"user_answer": "Opens at 9."})
    assert response.status_code == 422 and "paused memory" in response.content.decode()
    assert reviewer_client.post(needs_user_url(candidate)).status_code == 422
    assert memories_of(user, personal) == []
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_a_mode_with_memory_off_gets_no_answer_written(reviewer_client, candidate, user, personal):
    from memoryhub.services.preferences import set_mode_memory_off

    set_mode_memory_off(user=user, mode=personal, is_off=True, actor=Actor.for_user(user.pk))
    response = reviewer_client.post(answer_url(candidate), {"user_answer": "Opens at 9."})
    assert response.status_code == 422 and "turned memory off" in response.content.decode()
    assert memories_of(user, personal) == []


def test_a_refused_answer_for_the_user_is_said_in_the_reviewers_language(
    reviewer_client, candidate, user, personal
):
    from memoryhub.services.preferences import set_memory_paused, set_mode_memory_off

    set_mode_memory_off(user=user, mode=personal, is_off=True, actor=Actor.for_user(user.pk))
    data = {"user_answer": "Opens at 9."}
    page = reviewer_client.post(answer_url(candidate), data, HTTP_ACCEPT_LANGUAGE="fr")
    said = "cet utilisateur a désactivé la mémoire dans le mode &#x27;personal&#x27; :"
    assert page.status_code == 422 and said in page.content.decode()
    set_memory_paused(user=user, is_paused=True, actor=Actor.for_user(user.pk))
    page = reviewer_client.post(answer_url(candidate), data, HTTP_ACCEPT_LANGUAGE="fr")
    assert "cet utilisateur a mis la mémoire en pause" in page.content.decode()
    assert memories_of(user, personal) == []


def test_an_already_decided_candidate_gets_no_answer(reviewer_client, candidate, user, personal):
    reviewer_client.post(reverse("review:candidate_reject", args=[candidate.pk]), {"reason": "ok"})
    response = reviewer_client.post(
        answer_url(candidate), {"user_answer": "Opens at 9."}, follow=True
    )
    assert "already decided" in response.content.decode()
    assert memories_of(user, personal) == []


def test_a_proposed_fact_is_not_a_question_of_the_user(
    reviewer_client, user, personal, agent_actor, embedder
):
    fact = services.propose_knowledge_candidate(
        user=user,
        mode=personal,
        statement="Stores close at 7pm.",
        actor=agent_actor,
        embedder=embedder,
    )
    response = reviewer_client.post(answer_url(fact), {"user_answer": "Opens at 9."})
    assert response.status_code == 422 and "only a captured answer" in response.content.decode()
    page = reviewer_client.get(reverse("review:candidate_detail", args=[fact.pk])).content.decode()
    assert "Needs the user" not in page and "Why it was captured" not in page


def test_another_workspaces_reviewer_cannot_answer_or_leave_it_to_the_user(
    client, candidate, user, personal
):
    client.force_login(make_reviewer(factories.make_workspace()))
    assert client.post(answer_url(candidate), {"user_answer": "Opens at 9."}).status_code == 404
    assert client.post(needs_user_url(candidate)).status_code == 404
    assert memories_of(user, personal) == []
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "pending"


def test_the_new_decisions_need_a_post(reviewer_client, candidate):
    assert reviewer_client.get(answer_url(candidate)).status_code == 405
    assert reviewer_client.get(needs_user_url(candidate)).status_code == 405


def test_needs_the_user_leaves_an_open_item_in_their_memory(
    reviewer_client, candidate, user, personal, work
):
    response = reviewer_client.post(needs_user_url(candidate))
    assert response.status_code == 302
    [item] = memories_of(user, personal, MemoryKind.OPEN_ITEM)
    assert QUESTION in item.content and item.source == "reviewer"
    assert item.payload == {"status": "open", "question": QUESTION, "from_review": True}
    assert memories_of(user, work) == []  # Only the mode the question was asked in.
    assert LearningCandidate.objects.get(pk=candidate.pk).status == "needs_user"
    assert not KnowledgeDocument.objects.exists()


def test_both_decisions_count_as_approvals_for_the_threshold(reviewer_client, report, workspace):
    from review.models import ReviewDecision

    first = report("When is my dentist appointment?", "No idea.", LOW_RETRIEVAL).candidate
    second = report("What did I plan for Sunday?", "No idea.", LOW_RETRIEVAL).candidate
    reviewer_client.post(answer_url(first), {"user_answer": "Tuesday at 10."})
    reviewer_client.post(needs_user_url(second))
    outcomes = list(
        ReviewDecision.objects.filter(workspace=workspace).values_list("outcome", flat=True)
    )
    assert outcomes == ["approved", "approved"]


def test_the_queue_can_list_what_was_answered_for_users(reviewer_client, candidate):
    reviewer_client.post(answer_url(candidate), {"user_answer": "Opens at 9."})
    page = reviewer_client.get(reverse("review:queue"), {"status": "answered"}).content.decode()
    assert f"candidate-{candidate.pk}" in page


def test_a_policy_question_cannot_be_turned_into_one_users_answer_or_to_do(
    reviewer_client, report, user, personal
):
    policy = report(
        "Can you tell me my colleague's salary?",
        "I cannot share that.",
        {"retrieval": 0.1, "policy": 0.0, "completeness": 0.8, "memory": 0.3},
    ).candidate
    assert policy.failure_class == "policy_block"
    page = reviewer_client.get(
        reverse("review:candidate_detail", args=[policy.pk])
    ).content.decode()
    assert "Needs the user" not in page and "Write it for this user" not in page
    assert "the workspace’s rule" in page
    for response in (
        reviewer_client.post(needs_user_url(policy)),
        reviewer_client.post(answer_url(policy), {"user_answer": "It is secret."}),
    ):
        assert response.status_code == 422
        assert "a policy question is the workspace" in response.content.decode()
    assert memories_of(user, personal) == []


def test_a_needs_the_user_item_does_not_read_as_a_reviewers_answer(
    client, reviewer_client, candidate, user
):
    reviewer_client.post(needs_user_url(candidate))
    client.force_login(user)
    page = client.get("/dashboard/").content.decode()
    assert f"A reviewer could not answer your question “{QUESTION}” for you" in page
    assert "A reviewer’s answer" not in page
