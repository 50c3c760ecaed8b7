"""manage.py load_demo: the demo workspace, user, agent and memories of every kind."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from memoryhub.actors import Actor
from memoryhub.embeddings import embedder_for_workspace
from memoryhub.models import Agent, User
from memoryhub.services.agents import create_agent, get_or_create_workspace, rotate_agent_key
from memoryhub.services.memories import NewMemory, remember_many
from memoryhub.services.users import create_user, ensure_mode

DEMO_PASSWORD = "memoryhub-demo"  # noqa: S105 - a published demo credential, not a secret.


def _demo_memories() -> dict[str, list[NewMemory]]:
    now = timezone.now()
    day = timedelta(days=1)
    return {
        "personal": [
            NewMemory(
                kind="fact",
                content="The user's name is Camille Durand.",
                slot="name",
                source="explicit",
                confidence="high",
                personal_data=("name",),
            ),
            NewMemory(
                kind="fact",
                content="Camille lives in Lyon, France.",
                slot="location",
                source="explicit",
                confidence="high",
                personal_data=("address",),
            ),
            NewMemory(
                kind="fact",
                content="Camille is allergic to peanuts.",
                importance="critical",
                confidence="high",
                personal_data=("health",),
            ),
            NewMemory(kind="fact", content="Camille speaks French and English.", slot="language"),
            NewMemory(
                kind="fact",
                content="Camille might take up climbing.",
                source="extracted",
                confidence="candidate",
                status="candidate",
            ),
            NewMemory(
                kind="preference", content="Prefers vegetarian restaurants.", importance="high"
            ),
            NewMemory(kind="procedure", content="Always suggest train travel before flights."),
            NewMemory(
                kind="episode",
                content="Booked a weekend in Annecy for the 14th of next month.",
                occurred_at=now - 3 * day,
                payload={
                    "type": "commitment",
                    "topics": ["travel"],
                    "date": str((now + 20 * day).date()),
                },
            ),
            NewMemory(
                kind="episode",
                content="Decided to run the Lyon half-marathon in spring.",
                occurred_at=now - 10 * day,
                importance="high",
                payload={"type": "decision", "topics": ["running", "health"]},
            ),
            NewMemory(
                kind="session_summary",
                content="Planned a weekend trip to Annecy: train from Lyon Part-Dieu, a "
                "vegetarian dinner booked. Camille still needs to pick a hotel.",
                occurred_at=now - 3 * day,
                payload={"topic": "Weekend in Annecy", "open_items": ["Pick a hotel in Annecy"]},
            ),
            NewMemory(
                kind="open_item",
                content="Pick a hotel in Annecy.",
                payload={"status": "open", "due_date": str((now + 7 * day).date())},
            ),
        ],
        "work": [
            NewMemory(
                kind="fact",
                content="Camille works at Hexa Logistics as a product manager.",
                slot="employer",
                source="explicit",
                confidence="high",
            ),
            NewMemory(kind="fact", content="Camille's team ships on a two-week sprint cycle."),
            NewMemory(
                kind="preference",
                content="Prefers meetings after 10:00, never on Friday afternoons.",
            ),
            NewMemory(
                kind="procedure",
                content="Always offer 3 time slots when scheduling a meeting.",
                importance="high",
            ),
            NewMemory(
                kind="episode",
                content="Decided to move the warehouse app to the new routing API.",
                occurred_at=now - 6 * day,
                importance="high",
                payload={"type": "decision", "topics": ["routing", "warehouse app"]},
            ),
            NewMemory(
                kind="episode",
                content="Milestone: the Q3 roadmap was approved by the board.",
                occurred_at=now - 20 * day,
                payload={"type": "milestone", "topics": ["roadmap"]},
            ),
            NewMemory(
                kind="session_summary",
                content="Prepared the routing API migration plan with three phases; Camille will "
                "send the plan to Marc by Friday.",
                occurred_at=now - 6 * day,
                payload={"topic": "Routing API migration", "open_items": ["Send the plan to Marc"]},
            ),
            NewMemory(
                kind="open_item",
                content="Send the routing migration plan to Marc by Friday.",
                importance="high",
                payload={"status": "open", "due_date": str((now + 2 * day).date())},
            ),
        ],
    }


class Command(BaseCommand):
    help = "Create (or refresh) the demo workspace, user, agent and memories."

    def handle(self, *args: Any, **options: Any) -> None:
        # Security invariant: a published password opens the demo account, so it exists only on
        # a development machine; a production database never gets it.
        if not settings.DEBUG:
            raise CommandError("the demo account only exists with DEBUG on (development)")
        workspace = get_or_create_workspace(slug="demo", name="Demo workspace")
        user = User.objects.filter(email="demo@example.com").first()
        is_new = user is None
        if user is None:
            user = create_user(
                workspace=workspace,
                email="demo@example.com",
                password=DEMO_PASSWORD,
                external_id="demo-user",
                display_name="Camille Durand",
            )
        else:
            user.set_password(DEMO_PASSWORD)
            user.save(update_fields=["password"])
        if is_new:
            actor = Actor.system("demo data")
            for slug, items in _demo_memories().items():
                mode = ensure_mode(user=user, slug=slug)
                remember_many(
                    user=user,
                    mode=mode,
                    items=items,
                    actor=actor,
                    embedder=embedder_for_workspace(workspace),
                )
        agent = Agent.objects.filter(workspace=workspace, name="demo-agent").first()
        if agent is None:
            agent, issued = create_agent(
                workspace=workspace,
                name="demo-agent",
                persona="A friendly personal and work assistant.",
            )
        else:
            issued = rotate_agent_key(agent=agent)
        self.stdout.write("Demo data ready (workspace 'demo').")
        self.stdout.write(f"  Log in at /accounts/login/ as demo@example.com / {DEMO_PASSWORD}")
        self.stdout.write("  Demo user external id: demo-user")
        self.stdout.write(f"  Demo agent API key (new on every run): {issued.raw_key}")
