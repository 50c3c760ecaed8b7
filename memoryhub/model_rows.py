"""Model instances read by hand-written SQL: a model's columns to select, and the instance built.

Every API request looks up its key, then its user, mode and workspace (api/auth.py); the ORM's
compile of those few fixed-shape lookups cost more Python than the rest of authentication
(issue 34). A hand-written statement selects `RowShape(Model, alias).sql` for each model it
joins and builds the instances from the row, as the ORM would: every concrete column, each
through its field's conversion from the database (a JSON field's text is parsed).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Generic, TypeVar

from django.db import connections
from django.db.models import Model

_M = TypeVar("_M", bound=Model)


class RowShape(Generic[_M]):
    """All of `model`'s concrete columns under the table alias `alias`, in the model's order."""

    def __init__(self, model: type[_M], alias: str) -> None:
        fields = model._meta.concrete_fields
        self.model = model
        self.width = len(fields)
        # Only our own model's column names and the caller's alias are written into SQL.
        self.sql = ", ".join(f'{alias}."{field.column}"' for field in fields)
        self._attnames = [field.attname for field in fields]
        self._pk_index = next(i for i, field in enumerate(fields) if field.primary_key)
        self._converted = [
            (i, field) for i, field in enumerate(fields) if hasattr(field, "from_db_value")
        ]

    def build(self, row: Sequence[Any], *, start: int, using: str) -> _M | None:
        """The instance held in `row[start:start + width]`, or None when its key is NULL (a
        LEFT JOIN that found nothing)."""
        values = list(row[start : start + self.width])
        if values[self._pk_index] is None:
            return None
        connection = connections[using]
        for i, field in self._converted:
            values[i] = field.from_db_value(values[i], None, connection)
        # All concrete fields in their order: `from_db` takes its fast path, `Model(*values)`.
        return self.model.from_db(using, self._attnames, values)
