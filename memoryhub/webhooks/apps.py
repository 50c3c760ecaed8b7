"""Subscribes the webhooks to the domain's change announcements once, at start-up."""

from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "memoryhub.webhooks"
    label = "webhooks"
    verbose_name = "MemoryHub webhooks"

    def ready(self) -> None:
        from memoryhub.audit.changes import subscribe

        from .services import record_deliveries

        subscribe(record_deliveries)
