"""The writer's backlog (analyzer/store/writer.py): frames handed over and not yet stored bound the
recorder, never the wire."""

import threading

from mcptap.store.writer import Backlog


def test_bytes_count_as_waiting_from_when_they_are_added_until_stored():
    backlog = Backlog(high=100, low=50)
    backlog.added(80)
    assert backlog.pending() == 80
    backlog.stored(80)
    assert backlog.pending() == 0
    assert backlog.wait_for_room(0) is True


def test_the_recorder_waits_above_the_high_water_mark_until_the_store_drains_below_the_low_one():
    backlog = Backlog(high=100, low=50)
    backlog.added(150)
    assert backlog.wait_for_room(0.01) is False  # nothing is stored: the caller spools
    results = []
    waiter = threading.Thread(target=lambda: results.append(backlog.wait_for_room(30)))
    waiter.start()
    backlog.stored(60)  # 90 waiting: still above the low mark
    waiter.join(0.05)
    assert waiter.is_alive()
    backlog.stored(60)  # 30 waiting
    waiter.join(30)
    assert results == [True]
