"""App config of the memory domain."""

from django.apps import AppConfig


class MemoryHubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "MemoryHub"
    default_auto_field = "django.db.models.BigAutoField"
