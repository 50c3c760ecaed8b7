"""MemoryHub: long-term memory for AI agents, per user and per mode."""

from .celery import app as celery_app

__all__ = ["celery_app"]
