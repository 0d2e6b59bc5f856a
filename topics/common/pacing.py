"""How often our batch subscribers fetch: a consumer-group member's fetch wait lengthens while its topics are quiet
and shortens as soon as records come (`QuietPacer`); a result subscription fetches only while a caller waits for a
result (`DemandPacer`). `pace` is the one place that reaches into FastStream and aiokafka to run a subscriber so.

Why: an idle subscriber costs one fetch per `fetch_max_wait_ms`, in its own process and in the broker, and at the
5-10 ms that keep a busy hop fast, the idle stack polled some 600 times a second (docs/operations.md, "Fetch waits")."""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import chain
from typing import Any, Final, Protocol

from aiokafka import AIOKafkaConsumer, ConsumerRecord
from faststream.kafka.subscriber.usecase import BatchSubscriber

IDLE_WAIT_MS: Final = 250
"""The longest a group member on a caller's path waits at the broker, once its topics have been quiet for 12.5 s
(`QUIET_SHARE`). The embedded broker returns a record that comes during a fetch at its next look, half the remaining
wait later at most: the first request after a long quiet spell waits up to 125 ms more at that hop, about 40 ms on
average. Idle, such a member fetches 4 times a second: about half a percent of a core with the broker's share, where
500 ms would take a third of a percent but double that wait."""
QUIET_SHARE: Final = 0.02
"""A quiet group member's fetch wait is this share of how long its topics have been quiet: a fiftieth, so a
request after a pause of P seconds waits at most P/100 s more at that hop (P/300 on average), and until the wait
reaches its cap the number of fetches during a quiet spell grows with the logarithm of its length."""
POLL_MS: Final = 1000
"""How long one step of a paced subscriber's loop waits for records before it looks at its pacing again. `getmany`
returns as soon as a fetch brought records, so this costs no latency: it only bounds how stale the wait is."""


class Pacer(Protocol):
    """What `pace` tells about the subscriber's loop: the consumer it runs on, and whether each step had records."""

    def bind(self, consumer: AIOKafkaConsumer) -> None: ...

    def observed(self, records: bool) -> None: ...


class QuietPacer:
    """A consumer-group member's fetch wait: `busy_ms` while records come; once its topics are quiet, a share of
    the quiet time (`QUIET_SHARE`) up to `idle_ms`; `busy_ms` again as soon as a fetch brings records, before the
    next fetch is sent."""

    def __init__(
        self, busy_ms: int, idle_ms: int = IDLE_WAIT_MS, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.busy_ms = busy_ms
        self.idle_ms = max(idle_ms, busy_ms)
        self.clock = clock
        self._last_records = clock()
        self._consumer: AIOKafkaConsumer | None = None

    def wait_ms(self) -> int:
        quiet_ms = (self.clock() - self._last_records) * 1000
        return round(min(self.idle_ms, max(self.busy_ms, quiet_ms * QUIET_SHARE)))

    def bind(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer
        set_fetch_wait(consumer, self.wait_ms())

    def observed(self, records: bool) -> None:
        if records:
            self._last_records = self.clock()
        if self._consumer is not None:
            set_fetch_wait(self._consumer, self.wait_ms())


class DemandPacer:
    """A result subscription that fetches only while `wanted()` (a caller waits for a result). Otherwise its
    partitions are paused: no fetch at all, and the position stays where it was, so a result published meanwhile is
    still read once fetching resumes. `changed()` applies a change of `wanted()` at once: a caller that comes resumes
    fetching before it publishes its request, so its result is never waited for behind a long fetch."""

    def __init__(self, wanted: Callable[[], bool]) -> None:
        self.wanted = wanted
        self._consumer: AIOKafkaConsumer | None = None

    def bind(self, consumer: AIOKafkaConsumer) -> None:
        self._consumer = consumer
        self.changed()  # also covers partitions assigned since the last change

    def observed(self, records: bool) -> None:
        pass

    def changed(self) -> None:
        consumer = self._consumer
        if consumer is None:
            return
        partitions = consumer.assignment()
        if self.wanted():
            consumer.resume(*partitions)
        else:
            consumer.pause(*partitions)


def pace(subscriber: Any, pacer: Pacer) -> None:
    """Runs a FastStream batch subscriber's consume loop by `pacer`.

    FastStream 0.7's loop (`LogicSubscriber._run_consume_loop`) calls `self.get_msg(consumer)` for each batch; a
    BatchSubscriber's own `get_msg` calls `getmany(timeout_ms=batch_timeout_ms)` and, when nothing came, sleeps as
    long again: a subscriber with nothing to do wakes every few milliseconds, and a record that comes during the
    sleep waits for its end. This sets, on this one subscriber, a `get_msg` that waits on `getmany` alone (it
    returns as soon as a fetch brought records) and tells `pacer` about each step. tests/integration/test_pacing.py
    checks that the installed FastStream and aiokafka still work the way this relies on."""
    if not isinstance(subscriber, BatchSubscriber):
        raise TypeError(f"pace() runs FastStream batch subscribers, not {type(subscriber).__name__}")
    max_records = subscriber.max_records

    async def get_msg(consumer: AIOKafkaConsumer) -> tuple[ConsumerRecord[Any, Any], ...]:
        pacer.bind(consumer)
        batches = await consumer.getmany(timeout_ms=POLL_MS, max_records=max_records)
        pacer.observed(bool(batches))
        return tuple(chain.from_iterable(batches.values()))

    subscriber.get_msg = get_msg  # type: ignore[method-assign]  # this instance only


def set_fetch_wait(consumer: AIOKafkaConsumer, wait_ms: int) -> None:
    """How long `consumer`'s next fetches wait at the broker for records. aiokafka 0.14 takes `fetch_max_wait_ms`
    only in the constructor, but its fetcher reads the value from `_fetch_max_wait_ms` each time it builds a fetch
    request (`Fetcher._get_actions_per_node`), so setting that changes the wait of the next fetch."""
    fetcher = consumer._fetcher
    if not hasattr(fetcher, "_fetch_max_wait_ms"):
        raise RuntimeError("aiokafka's Fetcher has no _fetch_max_wait_ms any more: topics/common/pacing.py must change")
    fetcher._fetch_max_wait_ms = wait_ms
