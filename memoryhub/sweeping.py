"""Delete old rows in batches through an index, oldest first: the periodic sweeps' one recipe."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet


def delete_oldest_in_batches(rows: QuerySet[Any], *, order_by: str, batch_size: int) -> int:
    """Delete `rows` `batch_size` at a time in `order_by` order; return how many went.

    Each batch is one short statement, so a sweep never holds a long lock on a busy table.
    """
    deleted = 0
    while True:
        batch = rows.model.objects.filter(pk__in=rows.order_by(order_by).values("pk")[:batch_size])
        count: int = batch.delete()[0]
        deleted += count
        if count < batch_size:
            return deleted
