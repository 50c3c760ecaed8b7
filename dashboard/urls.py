"""Dashboard URLs."""

from django.urls import path

from . import views

app_name = "dashboard"

urlpatterns = [
    path("", views.memory_list, name="memory_list"),
]
