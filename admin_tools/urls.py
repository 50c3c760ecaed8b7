"""Staff-only URLs under /admin-tools/."""

from django.urls import path

from . import embedding_models, graph, links, roles, views, webhooks

app_name = "admin_tools"

urlpatterns = [
    path("", views.health, name="health"),
    path("audit/", views.audit_log, name="audit_log"),
    path("audit/export.csv", views.audit_export, name="audit_export"),
    path("roles/", roles.roles, name="roles"),
    path("graph/", graph.graph_list, name="graph_list"),
    path("graph/<slug:slug>/", graph.graph_detail, name="graph_detail"),
    path("embedding-models/", embedding_models.embedding_models, name="embedding_models"),
    path(
        "embedding-models/<slug:slug>/",
        embedding_models.embedding_model_set,
        name="embedding_model_set",
    ),
    path("links/", links.link_list, name="link_list"),
    path("links/<int:link_id>/undo/", links.link_undo, name="link_undo"),
    path("webhooks/", webhooks.webhook_list, name="webhook_list"),
    path("webhooks/new/", webhooks.webhook_create, name="webhook_create"),
    path("webhooks/<uuid:endpoint_id>/rotate/", webhooks.webhook_rotate, name="webhook_rotate"),
    path("webhooks/<uuid:endpoint_id>/toggle/", webhooks.webhook_toggle, name="webhook_toggle"),
    path(
        "webhooks/deliveries/<int:delivery_id>/replay/",
        webhooks.delivery_replay,
        name="delivery_replay",
    ),
]
