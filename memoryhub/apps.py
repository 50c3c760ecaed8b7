"""App config of the memory domain."""

from django.apps import AppConfig


class MemoryHubConfig(AppConfig):
    name = "memoryhub"
    verbose_name = "MemoryHub"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Before any handler loads the middleware: the Django instrumentation adds its own.
        from memoryhub import telemetry

        telemetry.configure()
