"""Root URL configuration."""

from django.conf import settings
from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from accounts import languages
from dashboard import views as dashboard_views
from memoryhub.api.api import api
from memoryhub.mcp import oauth

# A database outage behind a middleware (session, auth) still answers 503, not 500.
handler500 = "memoryhub.unavailable.server_error"

urlpatterns = [
    path("", dashboard_views.landing, name="landing"),
    path("dashboard/", include("dashboard.urls")),
    path("review/", include("review.urls")),
    path("accounts/", include("allauth.urls")),
    # The English / Français switch in the header and in account settings.
    path("i18n/setlang/", languages.choose_language, name="set_language"),
    path("admin/", admin.site.urls),
    path("admin-tools/", include("admin_tools.urls")),
    path("api/v1/", api.urls),
    *staticfiles_urlpatterns(),
]

if settings.MEMORYHUB_MCP_OAUTH:
    # OAuth 2.1 for the MCP endpoint: this resource's metadata (RFC 9728), then the
    # authorization server (/.well-known/openid-configuration, /identity/o/authorize, …).
    urlpatterns += [
        path(
            ".well-known/oauth-protected-resource/mcp",
            oauth.protected_resource_metadata,
            name="oauth_protected_resource",
        ),
        path(".well-known/oauth-protected-resource", oauth.protected_resource_metadata),
        path("", include("allauth.idp.urls")),
    ]
