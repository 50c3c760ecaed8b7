"""Dashboard views, one module per area; thin adapters over memoryhub queries and services."""

from .memories import landing

__all__ = ["landing"]
