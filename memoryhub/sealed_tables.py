"""The table and field names each ciphertext is bound to (the keyring's FieldBinding).

One home below services and queries: both encrypt and decrypt the same rows, and a name that
differed between the two would leave a ciphertext that no longer opens. Never rename one: the
stored ciphertexts are bound to the name they were written with.
"""

from __future__ import annotations

MEMORY_TABLE = "memory"
VERSION_TABLE = "memory_version"
MESSAGE_TABLE = "message"
SESSION_TABLE = "session"
WORKING_MEMORY_FIELD = "working_memory"
JOURNAL_TABLE = "journal_entry"
ANSWER_TABLE = "answer_record"
CANDIDATE_TABLE = "learning_candidate"
NODE_TABLE = "graph_node"
FORGET_TASK_TABLE = "forget_task"
WEBHOOK_TABLE = "webhook_endpoint"
