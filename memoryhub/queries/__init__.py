"""Reads of the memory domain, always scoped by owner and mode."""
