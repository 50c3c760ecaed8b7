"""Root URL configuration."""

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from dashboard import views as dashboard_views
from memoryhub.api.api import api

# A database outage behind a middleware (session, auth) still answers 503, not 500.
handler500 = "memoryhub.unavailable.server_error"

urlpatterns = [
    path("", dashboard_views.landing, name="landing"),
    path("dashboard/", include("dashboard.urls")),
    path("review/", include("review.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    path("admin-tools/", include("admin_tools.urls")),
    path("api/v1/", api.urls),
    *staticfiles_urlpatterns(),
]
