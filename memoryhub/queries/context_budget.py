"""Fit assembled context to a token budget, item by item, and fence what stored text it holds.

The value types of an assembled context live here too (`ContextBundle` and its blocks), so the
layer code in queries/context.py only decides *what* goes in, and this module *how much*.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from uuid import UUID

from memoryhub.fencing import fence_untrusted, neutralise
from memoryhub.queries.context_layers import Entry
from memoryhub.tokens import Block, count_tokens, fit_to_budget

MESSAGE_LAYER = 10


@dataclass(frozen=True)
class ContextBlock:
    """One block of context, in order. Only trusted blocks may speak as the system."""

    key: str
    layer: int
    role: str
    trusted: bool
    text: str
    tokens: int
    memory_ids: tuple[UUID, ...] = ()


@dataclass(frozen=True)
class DroppedEntry:
    """Something left out to fit the budget: a whole block, or one item of a fenced list."""

    key: str
    layer: int
    tokens: int
    memory_ids: tuple[UUID, ...] = ()


@dataclass(frozen=True)
class ContextBundle:
    """The assembled context: blocks in order, what the budget dropped, and the token count."""

    blocks: tuple[ContextBlock, ...]
    dropped: tuple[DroppedEntry, ...]
    total_tokens: int
    budget_tokens: int
    is_over_budget: bool


@dataclass(frozen=True)
class TrustedBlock:
    """Text of our own (rules, date, persona) that goes to the model as the system."""

    key: str
    layer: int
    text: str
    priority: int
    is_droppable: bool = True


@dataclass(frozen=True)
class ListLayer:
    """Stored items that go to the model as one fenced user-role block, best item first."""

    key: str
    layer: int
    label: str
    entries: tuple[Entry, ...]
    # Item i is worth `priority - i`: a layer's best item is the last of it to be dropped.
    priority: int
    # Shown in the opposite order to their value: the thread reads oldest first.
    is_reversed_on_page: bool = False


def _item_line(text: str) -> str:
    # Exactly the line fence_untrusted writes for the item, so the budget counts what is sent.
    return "- " + " ".join(neutralise(text).split())


def _units(
    trusted: Sequence[TrustedBlock], lists: Sequence[ListLayer], message: str
) -> list[Block]:
    units = [Block(t.key, t.text, t.priority, t.is_droppable) for t in trusted]
    for layer in lists:
        for index, entry in enumerate(layer.entries):
            # The best item carries the fence around it, so the fence's own tokens go exactly
            # when the layer's last item does.
            text = (
                fence_untrusted(layer.label, [entry.text]) if index == 0 else _item_line(entry.text)
            )
            units.append(Block(entry.key, text, layer.priority - index, True))
    units.append(Block("message", message, 0, False))
    return units


def _dropped(
    keys: Sequence[str],
    tokens: Mapping[str, int],
    trusted: Sequence[TrustedBlock],
    lists: Sequence[ListLayer],
) -> list[DroppedEntry]:
    layer_of = {block.key: block.layer for block in trusted}
    entry_of = {entry.key: (layer, entry) for layer in lists for entry in layer.entries}
    dropped = []
    for key in keys:
        if key in layer_of:
            dropped.append(DroppedEntry(key=key, layer=layer_of[key], tokens=tokens[key]))
            continue
        layer, entry = entry_of[key]
        ids = (entry.memory_id,) if entry.memory_id else ()
        dropped.append(DroppedEntry(key=key, layer=layer.layer, tokens=tokens[key], memory_ids=ids))
    return dropped


def fit_context(
    *, trusted: Sequence[TrustedBlock], lists: Sequence[ListLayer], message: str, budget: int
) -> ContextBundle:
    """Drop the least valuable blocks and items until the context fits, then render it in order.

    The platform rules (not droppable) and the message are always kept; `is_over_budget` says
    when they alone exceed the budget.
    """
    # Each unit is counted once, here: a trusted block and the message are sent as counted,
    # and a dropped item reports its count. Only the fenced lists kept are counted again.
    units = _units(trusted, lists, message)
    result = fit_to_budget(units, budget)
    gone = set(result.dropped)
    blocks = [
        ContextBlock(
            key=block.key,
            layer=block.layer,
            role="system",
            trusted=True,
            text=block.text,
            tokens=result.tokens[block.key],
        )
        for block in trusted
        if block.key not in gone
    ]
    for layer in lists:
        kept = [entry for entry in layer.entries if entry.key not in gone]
        if not kept:
            continue
        if layer.is_reversed_on_page:
            kept.reverse()
        # Security invariant: stored text only ever reaches the model as fenced user-role data.
        text = fence_untrusted(layer.label, [entry.text for entry in kept])
        blocks.append(
            ContextBlock(
                key=layer.key,
                layer=layer.layer,
                role="user",
                trusted=False,
                text=text,
                tokens=count_tokens(text),
                memory_ids=tuple(e.memory_id for e in kept if e.memory_id is not None),
            )
        )
    # The user's own message speaks with authority, as the user.
    blocks.append(
        ContextBlock(
            key="message",
            layer=MESSAGE_LAYER,
            role="user",
            trusted=True,
            text=message,
            tokens=result.tokens["message"],
        )
    )
    blocks.sort(key=lambda block: block.layer)  # Stable: blocks of one layer keep their order.
    total = sum(block.tokens for block in blocks)
    return ContextBundle(
        blocks=tuple(blocks),
        dropped=tuple(_dropped(result.dropped, result.tokens, trusted, lists)),
        total_tokens=total,
        budget_tokens=budget,
        is_over_budget=total > budget,
    )
