"""Who is acting, through which channel: passed to every service and query for the audit log."""

from __future__ import annotations

from dataclasses import dataclass

from memoryhub.models import ActorType, Channel


@dataclass(frozen=True)
class Actor:
    actor_type: ActorType
    actor_id: str
    channel: Channel
    label: str = ""
    client_ip: str | None = None

    @classmethod
    def system(cls, label: str = "system") -> Actor:
        return cls(ActorType.SYSTEM, "system", Channel.SYSTEM, label=label)

    @classmethod
    def for_user(cls, user_id: object, *, client_ip: str | None = None) -> Actor:
        return cls(ActorType.USER, str(user_id), Channel.UI, client_ip=client_ip)
