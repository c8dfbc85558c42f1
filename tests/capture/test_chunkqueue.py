"""The tee's queue between the wire and the recorder (addons/shipping/chunkqueue.py): first in, first
out, bounded in memory, overflowing to disk rather than making the wire wait."""

import os
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.addons.shipping.chunkqueue import ChunkQueue

STREAMS = ("c2s", "s2c", "stderr")


@pytest.fixture
def make_queue():
    made = []

    def make(folder, memory_limit):
        made.append(ChunkQueue([str(folder)], memory_limit=memory_limit))
        return made[-1]

    yield make
    for queue in made:
        queue.close()


def drain(queue: ChunkQueue, max_bytes: int = 1 << 20) -> list:
    out = []
    while chunk := queue.take(max_bytes):
        out.extend(chunk)
    return out


def test_chunks_below_the_memory_limit_never_touch_the_disk(tmp_path, make_queue):
    queue = make_queue(tmp_path, 100)
    queue.put("c2s", 1.0, b"a" * 40)
    queue.put("s2c", 2.0, b"b" * 40)
    assert drain(queue) == [("c2s", 1.0, b"a" * 40), ("s2c", 2.0, b"b" * 40)]
    assert queue.overflowed == 0


def test_past_the_memory_limit_chunks_overflow_to_disk_and_come_back_in_order(tmp_path, make_queue):
    queue = make_queue(tmp_path, 100)
    put = [(STREAMS[i % 3], float(i), bytes([65 + i]) * 30) for i in range(10)]
    for item in put:
        queue.put(*item)  # never waits: nobody is taking
    assert queue.overflowed == 30 * 7  # three chunks fit in memory
    assert os.listdir(tmp_path) == []  # the overflow file has no name: it goes with the process
    assert drain(queue, max_bytes=50) == put


def test_once_the_consumer_catches_up_memory_is_used_again(tmp_path, make_queue):
    queue = make_queue(tmp_path, 10)
    queue.put("s2c", 1.0, b"x" * 20)
    queue.put("s2c", 2.0, b"y" * 20)
    assert queue.overflowed == 20
    assert drain(queue) == [("s2c", 1.0, b"x" * 20), ("s2c", 2.0, b"y" * 20)]
    queue.put("s2c", 3.0, b"z" * 5)
    assert queue.overflowed == 20
    assert drain(queue) == [("s2c", 3.0, b"z" * 5)]


def test_without_an_overflow_file_a_producer_waits_for_room_and_order_holds(tmp_path, make_queue):
    nowhere = tmp_path / "missing-folder"
    queue = make_queue(nowhere, 10)
    queue.put("s2c", 1.0, b"a" * 8)
    second = threading.Thread(target=queue.put, args=("s2c", 2.0, b"b" * 8))
    second.start()
    second.join(0.05)
    assert second.is_alive()  # memory is full and there is no disk to spill to
    assert queue.take(1) == [("s2c", 1.0, b"a" * 8)]
    second.join(30)
    assert not second.is_alive()
    assert drain(queue) == [("s2c", 2.0, b"b" * 8)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.sampled_from(STREAMS), st.binary(max_size=40)),
                          st.integers(min_value=1, max_value=80)), max_size=60))
def test_any_interleaving_of_puts_and_takes_is_first_in_first_out(tmp_path_factory, script):
    queue = ChunkQueue([str(tmp_path_factory.mktemp("overflow"))], memory_limit=50)
    put, taken = [], []
    for i, step in enumerate(script):
        if isinstance(step, int):
            taken.extend(queue.take(step))
        else:
            put.append((step[0], float(i), step[1]))
            queue.put(*put[-1])
    taken.extend(drain(queue))
    assert taken == put
    queue.close()
