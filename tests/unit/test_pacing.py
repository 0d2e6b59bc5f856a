"""How long a consumer-group member's fetches wait, as docs/operations.md ("Fetch waits") promises: its busy wait
while records come, a fiftieth of the quiet time once its topic is quiet, never more than its idle wait, and the busy
wait again as soon as records come. (tests/integration/test_pacing.py checks that the broker gets these waits.)"""

from __future__ import annotations

from topics.common.pacing import IDLE_WAIT_MS, QuietPacer


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_group_members_wait_grows_with_the_quiet_time_up_to_its_cap_and_drops_at_the_first_record() -> None:
    clock = Clock()
    pacer = QuietPacer(5, clock=clock)
    assert pacer.wait_ms() == 5

    clock.now = 0.2  # a request every 200 ms or so: still the busy wait
    assert pacer.wait_ms() == 5
    clock.now = 5
    assert pacer.wait_ms() == 100
    clock.now = 3600
    assert pacer.wait_ms() == IDLE_WAIT_MS == 250

    pacer.observed(records=False)
    assert pacer.wait_ms() == 250
    pacer.observed(records=True)
    assert pacer.wait_ms() == 5


def test_a_member_that_waits_long_even_when_busy_keeps_its_own_wait_and_cap() -> None:
    clock = Clock()
    fanout = QuietPacer(100, 2000, clock=clock)
    clock.now = 1
    assert fanout.wait_ms() == 100
    clock.now = 60
    assert fanout.wait_ms() == 1200
    clock.now = 3600
    assert fanout.wait_ms() == 2000
    assert QuietPacer(500, 250).wait_ms() == 500  # a cap below the busy wait never shortens it
