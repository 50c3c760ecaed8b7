"""Dashboard URLs: the main page, one item's actions, forgetting, and the user's controls."""

from django.urls import path

from .views import account, forgetting, imports, link, memories, search

app_name = "dashboard"

item = "modes/<slug:mode_slug>/memories/<uuid:memory_id>"

urlpatterns = [
    path("", memories.memory_list, name="memory_list"),
    path("modes/", memories.mode_create, name="mode_create"),
    path("modes/<slug:mode_slug>/search/", search.search, name="search"),
    path(f"{item}/", memories.memory_detail, name="memory_detail"),
    path(f"{item}/why/", memories.memory_why, name="memory_why"),
    path(f"{item}/edit/", memories.memory_edit, name="memory_edit"),
    path(f"{item}/delete/", memories.memory_delete, name="memory_delete"),
    path(f"{item}/confirm/", memories.memory_confirm, name="memory_confirm"),
    path(f"{item}/reject/", memories.memory_reject, name="memory_reject"),
    path(f"{item}/done/", memories.memory_done, name="memory_done"),
    path(f"{item}/copy/", memories.memory_copy, name="memory_copy"),
    path(
        "modes/<slug:mode_slug>/contradictions/resolve/",
        memories.contradiction_resolve,
        name="contradiction_resolve",
    ),
    path("modes/<slug:mode_slug>/forget/", forgetting.forget_page, name="forget"),
    path("modes/<slug:mode_slug>/delete-all/", forgetting.delete_all, name="delete_all"),
    path("receipt/", forgetting.receipt, name="receipt"),
    path("export/", forgetting.export, name="export"),
    # The one dashboard page that takes a large body (memoryhub/body_limit.py IMPORT_PATHS).
    path("imports/", imports.import_page, name="imports"),
    path("imports/<uuid:import_id>/", imports.import_detail, name="import_detail"),
    path("imports/<uuid:import_id>/review/", imports.import_review, name="import_review"),
    path("settings/", account.settings_page, name="settings"),
    path("settings/pause/", account.pause, name="pause"),
    path("modes/<slug:mode_slug>/memory/", account.mode_memory, name="mode_memory"),
    path("settings/retention/", account.retention, name="retention"),
    path("agents/", account.agents, name="agents"),
    path("agents/<uuid:agent_id>/block/", account.agent_block, name="agent_block"),
    path("agents/<uuid:agent_id>/unblock/", account.agent_unblock, name="agent_unblock"),
    path("agents/<uuid:agent_id>/export/", account.agent_export, name="agent_export"),
    path("agents/<uuid:agent_id>/import/", account.agent_import, name="agent_import"),
    path("keys/", account.keys, name="keys"),
    path("keys/<int:key_id>/revoke/", account.key_revoke, name="key_revoke"),
    path("access/", account.access_log, name="access_log"),
    path("account/delete/", account.account_delete, name="account_delete"),
    path("link/<str:token>/", link.user_link, name="user_link"),
]
