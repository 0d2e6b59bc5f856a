"""The activity log's relay: every event a change committed (storage/helpdesk/events.py, the outbox) reaches the
`helpdesk.activity.recorded` topic at least once, for stream consumers; none is lost across a crash of a gateway or a
processor, because the row was written in the change's own transaction."""

from __future__ import annotations

from typing import Any

import msgspec

from processors.common.outbox import Outbox, PublishTogether, Relay
from storage.common.db import Database
from storage.helpdesk import events
from topics.helpdesk import ActivityRecorded, HelpdeskTopics, partition_key
from wire.timestamps import iso

RELAY_EVERY_S = 0.5
"""How often the relay looks for new events: a stream consumer sees an event within about this long of its commit."""


def activity_outbox(topics: HelpdeskTopics) -> Outbox:
    def message(row: Any) -> tuple[msgspec.Struct, str, bytes]:
        recorded = ActivityRecorded(
            id=row.id,
            organization_id=row.organization_id,
            aggregate_type=row.aggregate_type,
            aggregate_id=row.aggregate_id,
            event_type=row.event_type,
            event_data=row.event_data,
            actor_id=row.actor_id,
            created_at=iso(row.created_at, "milliseconds"),
        )
        return recorded, topics.activity, partition_key(row.organization_id)

    return Outbox("helpdesk-activity", events.EVENTS, events.OUTBOX_COLUMNS, message)


def activity_relay(db: Database, topics: HelpdeskTopics, publish: PublishTogether) -> Relay:
    return Relay(db, activity_outbox(topics), publish)
