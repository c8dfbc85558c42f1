"""The writer's backlog (analyzer/writer.py): what counts as in flight, and pacing."""

import threading

from analyzer.writer import Backlog


def test_bytes_count_as_in_flight_from_the_pump_until_stored():
    backlog = Backlog(high=100, low=50)
    backlog.produced("s2c", 80)
    assert backlog.pending() == 80
    backlog.drained(80, 80)  # cut into frames, handed to the writer
    assert backlog.pending() == 80
    backlog.stored(80)
    assert backlog.pending() == 0


def test_a_line_still_being_received_does_not_count_so_long_lines_never_stall():
    backlog = Backlog(high=100, low=50)
    backlog.produced("s2c", 1000)
    backlog.drained(1000, 0)  # all of it is the unfinished tail of one line
    assert backlog.pending() == 0
    assert backlog.wait_for_room(0) is True


def test_pumps_wait_above_the_high_water_mark_until_the_store_drains_below_the_low_one():
    backlog = Backlog(high=100, low=50)
    backlog.produced("s2c", 150)
    backlog.drained(150, 150)
    assert backlog.wait_for_room(0.01) is False  # nothing drains: the caller spools
    waiter = threading.Thread(target=lambda: results.append(backlog.wait_for_room(30)))
    results = []
    waiter.start()
    backlog.stored(60)  # 90 in flight: still above the low mark
    waiter.join(0.05)
    assert waiter.is_alive()
    backlog.stored(60)  # 30 in flight
    waiter.join(30)
    assert results == [True]
