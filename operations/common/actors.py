"""Who an operation acts for: a person signed in to an organization (with their role), one of its API keys, or the
platform itself (a processor applying what a channel received)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from operations.common.errors import Forbidden

Role = Literal["admin", "agent"]
ROLES: tuple[Role, ...] = ("admin", "agent")
ADMIN: Role = "admin"


@dataclass(frozen=True, slots=True)
class Actor:
    organization_id: str
    user_id: str | None = None
    """The person acting; None for a key or the platform, whose events carry no actor."""
    role: Role | None = None
    key_id: str | None = None

    @property
    def is_admin(self) -> bool:
        """An admin, a key (made by an admin, and limited by its scopes at its route) or the platform."""
        return self.user_id is None or self.role == ADMIN

    def require_admin(self, to: str) -> None:
        """Refuses anyone but an admin: `to` says what (`to invite people`)."""
        if not self.is_admin:
            raise Forbidden(f"Only an admin of the organization may {to}")

    def is_user(self, user_id: str | None) -> bool:
        return self.user_id is not None and self.user_id == user_id


def platform(organization_id: str) -> Actor:
    """The platform acting for an organization: what its channels received, its own timers."""
    return Actor(organization_id)
