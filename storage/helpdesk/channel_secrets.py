"""A live channel's provider secrets, opened for the inbound processors that fetch what its provider holds (an MMS's
media, a messaging app's media, a chat's files: processors/helpdesk/inbound/media.py). Only the code that needs a
secret opens it (storage/common/secrets.py)."""

from __future__ import annotations

import json

from sqlalchemy import select
from sqlalchemy.engine import Connection

from storage.common.secrets import Cipher, unseal
from storage.helpdesk.channels import CHANNELS


def opened(connection: Connection, cipher: Cipher, channel_id: str) -> dict[str, str] | None:
    """The channel's secrets by name; None when the channel is deleted (or never was). Raises
    cryptography.fernet.InvalidToken when they were sealed with a key the platform no longer has."""
    sealed = connection.scalar(
        select(CHANNELS.c.secrets_sealed).where(CHANNELS.c.id == channel_id, CHANNELS.c.deleted_at.is_(None))
    )
    if sealed is None:
        return None
    secrets: dict[str, str] = json.loads(unseal(cipher, sealed))
    return secrets
