"""App config of review: mounts its agent API routes on the one NinjaAPI at start-up."""

from django.apps import AppConfig


class ReviewConfig(AppConfig):
    name = "review"
    verbose_name = "MemoryHub review"

    def ready(self) -> None:
        # memoryhub/api sits below the apps and cannot import this router; the app adds it to
        # the API itself, before the URLconf (and the OpenAPI schema) is built.
        from memoryhub.api.api import api

        from .api import router

        api.add_router("/", router)
