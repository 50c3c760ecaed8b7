"""The workspace knowledge graph (issue 9), one capability package: its state changes here.

recording.py writes answers, items, documents and feedback; maintenance.py decays, purges and
erases; queries.py reads (insights for agents and context, the admin overview). The state
changes are imported from the package itself. `forget_user_data` is the hook
memoryhub/services/forget.py calls on every forget.
"""

from .maintenance import decay_edges, erase_user, forget_user_data, purge_transient_nodes
from .recording import (
    GOOD_ANSWER_WEIGHT,
    MIN_WEIGHT,
    TRANSIENT_TYPES,
    Interaction,
    ItemRef,
    RecordedAnswer,
    answer_weight,
    apply_feedback,
    configured_half_life,
    decayed_weight,
    declare_node_type,
    declared_types,
    parse_items,
    record_answer,
    record_interaction,
)

__all__ = [
    "GOOD_ANSWER_WEIGHT",
    "MIN_WEIGHT",
    "TRANSIENT_TYPES",
    "Interaction",
    "ItemRef",
    "RecordedAnswer",
    "answer_weight",
    "apply_feedback",
    "configured_half_life",
    "decay_edges",
    "decayed_weight",
    "declare_node_type",
    "declared_types",
    "erase_user",
    "forget_user_data",
    "parse_items",
    "purge_transient_nodes",
    "record_answer",
    "record_interaction",
]
