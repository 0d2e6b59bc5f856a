"""Creating topics on a cluster before anyone publishes to or subscribes them."""

from __future__ import annotations

import contextlib

from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.errors import TopicAlreadyExistsError


async def ensure_topics(bootstrap: str, names: list[str], partitions: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        existing = set(await admin.list_topics())
        missing = [NewTopic(name, partitions, 1) for name in names if name not in existing]
        if missing:
            with contextlib.suppress(TopicAlreadyExistsError):  # another process created them first
                await admin.create_topics(missing)
    finally:
        await admin.close()
