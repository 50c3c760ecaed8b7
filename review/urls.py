"""URLs of the reviewer pages, mounted at /review/."""

from django.urls import path

from . import views

app_name = "review"

urlpatterns = [
    path("", views.queue, name="queue"),
    path("candidates/<uuid:candidate_id>/", views.candidate_detail, name="candidate_detail"),
    path(
        "candidates/<uuid:candidate_id>/approve/",
        views.candidate_approve,
        name="candidate_approve",
    ),
    path("candidates/<uuid:candidate_id>/reject/", views.candidate_reject, name="candidate_reject"),
    path("candidates/<uuid:candidate_id>/skip/", views.candidate_skip, name="candidate_skip"),
    path(
        "candidates/<uuid:candidate_id>/answer-for-user/",
        views.candidate_answer_for_user,
        name="candidate_answer_for_user",
    ),
    path(
        "candidates/<uuid:candidate_id>/needs-user/",
        views.candidate_needs_user,
        name="candidate_needs_user",
    ),
    path("settings/", views.reviewer_settings, name="settings"),
    path("settings/keys/<int:key_id>/revoke/", views.reviewer_key_revoke, name="key_revoke"),
    path("settings/digest/", views.reviewer_digest, name="digest"),
    path("knowledge/", views.knowledge_list, name="knowledge_list"),
    path("knowledge/add/", views.knowledge_add, name="knowledge_add"),
    path("knowledge/<uuid:document_id>/edit/", views.document_edit, name="document_edit"),
    path(
        "knowledge/<uuid:document_id>/publication/",
        views.document_publication,
        name="document_publication",
    ),
]
