"""What photo's operations are given: the service's parts, and the account they act for (a key's, or a dashboard
session's), in one environment."""

from __future__ import annotations

from dataclasses import dataclass

from operations.common.changes import PublishEvent
from storage.common.db import Database
from topics.common.environment import Environment
from wire.signed_urls import SignedUrls


@dataclass(frozen=True, slots=True)
class Photo:
    db: Database
    urls: SignedUrls
    publish_event: PublishEvent
    public_url: str
    """Where people reach the photo gateway (the self-inspection links)."""


@dataclass(frozen=True, slots=True)
class Account:
    """Whom an operation acts for: a customer account, in the environment of the key or the session that asks."""

    customer_id: str
    environment: Environment
