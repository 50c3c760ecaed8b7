"""Root URL configuration."""

from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from dashboard import views as dashboard_views

urlpatterns = [
    path("", dashboard_views.landing, name="landing"),
    path("dashboard/", include("dashboard.urls")),
    path("accounts/", include("allauth.urls")),
    path("admin/", admin.site.urls),
    *staticfiles_urlpatterns(),
]
