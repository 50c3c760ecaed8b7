"""Import files in the real shapes of each format (made-up content), and commit callbacks run."""

from __future__ import annotations

import json

from django.test import TestCase


def committed():
    """Run the block's commit callbacks when it ends (those they add too), as a commit would."""
    return TestCase.captureOnCommitCallbacks(execute=True)


def chatgpt_conversations() -> list[dict]:
    """Two conversations as ChatGPT's conversations.json has them: a tree of nodes per id."""

    def node(node_id, parent, children, role, text, when):
        message = None
        if role is not None:
            message = {
                "id": node_id,
                "author": {"role": role, "name": None, "metadata": {}},
                "create_time": when,
                "update_time": None,
                "content": {"content_type": "text", "parts": [text]},
                "status": "finished_successfully",
                "end_turn": role == "assistant",
                "weight": 1.0,
                "metadata": {},
                "recipient": "all",
            }
        return {"id": node_id, "message": message, "parent": parent, "children": children}

    first = {
        "title": "Trip planning",
        "create_time": 1_700_000_000.0,
        "update_time": 1_700_000_300.0,
        "mapping": {
            "root": node("root", None, ["sys"], None, "", None),
            "sys": node("sys", "root", ["u1"], "system", "You are helpful.", None),
            "u1": node(
                "u1",
                "sys",
                ["a1"],
                "user",
                "I live in Lyon and I work as a nurse.",
                1_700_000_010.0,
            ),
            "a1": node(
                "a1", "u1", ["u2", "u2b"], "assistant", "Noted, how can I help?", 1_700_000_020.0
            ),
            "u2": node(
                "u2", "a1", [], "user", "Remember that I am allergic to peanuts.", 1_700_000_100.0
            ),
            # An edited branch that is not the one shown: left out.
            "u2b": node("u2b", "a1", [], "user", "Something I took back.", 1_700_000_090.0),
        },
        "moderation_results": [],
        "current_node": "u2",
        "plugin_ids": None,
        "conversation_id": "c0ffee00-0000-4000-8000-000000000001",
        "conversation_template_id": None,
        "gizmo_id": None,
        "is_archived": False,
        "safe_urls": [],
        "default_model_slug": "gpt-4o",
        "id": "c0ffee00-0000-4000-8000-000000000001",
    }
    second = {
        "title": "Images only",
        "create_time": 1_700_100_000.0,
        "update_time": 1_700_100_100.0,
        "mapping": {
            "root": node("root", None, [], None, "", None),
        },
        "current_node": "root",
        "conversation_id": "c0ffee00-0000-4000-8000-000000000002",
        "id": "c0ffee00-0000-4000-8000-000000000002",
    }
    return [first, second]


def claude_conversations() -> list[dict]:
    """One conversation as Claude's data export has it: chat_messages with sender and text."""
    return [
        {
            "uuid": "5e11a000-0000-4000-8000-000000000001",
            "name": "Garden",
            "created_at": "2024-03-02T09:00:00.000000Z",
            "updated_at": "2024-03-02T09:05:00.000000Z",
            "account": {"uuid": "acc00000-0000-4000-8000-000000000001"},
            "chat_messages": [
                {
                    "uuid": "m1",
                    "text": "My name is Camille and I grow tomatoes.",
                    "content": [
                        {"type": "text", "text": "My name is Camille and I grow tomatoes."}
                    ],
                    "sender": "human",
                    "created_at": "2024-03-02T09:00:10.000000Z",
                    "updated_at": "2024-03-02T09:00:10.000000Z",
                    "attachments": [],
                    "files": [],
                },
                {
                    "uuid": "m2",
                    "text": "",
                    "content": [{"type": "text", "text": "Lovely! Which varieties?"}],
                    "sender": "assistant",
                    "created_at": "2024-03-02T09:00:20.000000Z",
                    "updated_at": "2024-03-02T09:00:20.000000Z",
                    "attachments": [],
                    "files": [],
                },
            ],
        }
    ]


def mem0_memories() -> dict:
    """Mem0's get_all (v1.1 output format): {"results": [...]}."""
    return {
        "results": [
            {
                "id": "6f1b0c5e-0000-4000-8000-000000000001",
                "memory": "Prefers window seats on flights",
                "hash": "d41d8cd98f00b204e9800998ecf8427e",
                "metadata": {"source": "chat"},
                "categories": ["travel", "user_preferences"],
                "created_at": "2024-07-20T01:02:03.123456-07:00",
                "updated_at": "2024-07-21T01:02:03.123456-07:00",
                "user_id": "alex",
            },
            {
                "id": "6f1b0c5e-0000-4000-8000-000000000002",
                "memory": "Works at a bakery in Nantes",
                "hash": "0cc175b9c0f1b6a831c399e269772661",
                "metadata": None,
                "categories": ["professional_details"],
                "created_at": "2024-07-22T10:00:00Z",
                "updated_at": None,
                "user_id": "alex",
            },
            {
                "id": "6f1b0c5e-0000-4000-8000-000000000003",
                "memory": "   ",
                "created_at": "2024-07-22T10:00:00Z",
                "user_id": "alex",
            },
        ],
        "relations": [],
    }


def as_bytes(document) -> bytes:
    return json.dumps(document, indent=2).encode()


def openmemory_backup() -> dict:
    """The memories.json of OpenMemory's backup zip (mem0's openmemory/api/app/routers/backup.py)."""
    user_id = "3e0c7a52-0000-4000-8000-0000000000aa"
    app_id = "3e0c7a52-0000-4000-8000-0000000000bb"
    preferences, work = (
        "c1000000-0000-4000-8000-000000000001",
        "c1000000-0000-4000-8000-000000000002",
    )

    def memory(number, content, state, category_ids):
        return {
            "id": f"a0000000-0000-4000-8000-00000000000{number}",
            "user_id": user_id,
            "app_id": app_id,
            "content": content,
            "metadata": {"source_app": "cursor"} if number == 1 else {},
            "state": state,
            "created_at": f"2025-03-0{number}T09:30:00+00:00",
            "updated_at": f"2025-03-0{number}T10:00:00+00:00",
            "archived_at": "2025-04-01T00:00:00+00:00" if state == "archived" else None,
            "deleted_at": "2025-04-02T00:00:00+00:00" if state == "deleted" else None,
            "category_ids": category_ids,
        }

    return {
        "user": {
            "id": user_id,
            "user_id": "sam",
            "name": "Sam",
            "email": None,
            "metadata": {},
            "created_at": "2025-03-01T00:00:00+00:00",
            "updated_at": None,
        },
        "apps": [
            {
                "id": app_id,
                "owner_id": user_id,
                "name": "cursor",
                "description": None,
                "metadata": {},
                "is_active": True,
                "created_at": "2025-03-01T00:00:00+00:00",
                "updated_at": None,
            }
        ],
        "categories": [
            {"id": preferences, "name": "user_preferences", "description": None},
            {"id": work, "name": "work", "description": None},
        ],
        "memories": [
            memory(1, "Prefers tabs over spaces", "active", [preferences]),
            memory(2, "Leads the billing team", "paused", [work]),
            memory(3, "Was learning Rust", "archived", [work]),
            memory(4, "Lived in Leeds", "deleted", []),
        ],
        "memory_categories": [],
        "status_history": [],
        "access_controls": [],
        "export_meta": {"app_id_filter": None, "version": "1", "generated_at": "2025-05-01"},
    }
