"""Line framing (analyzer/wire/framing.py): bytes in, lines asserted, at every split position."""

import pytest

from mcptap.wire.framing import LineFramer

STREAM = b'{"a":1}\n\xff\xfe not utf-8\r\n\nplain text\n{"b":"x\\ny"}\r\ntail without newline'
LINES = [b'{"a":1}', b"\xff\xfe not utf-8\r", b"", b"plain text", b'{"b":"x\\ny"}\r']
TAIL = b"tail without newline"


def frame_all(chunks):
    framer = LineFramer()
    lines = []
    for chunk in chunks:
        lines.extend(framer.feed(chunk))
    return lines, framer.finish()


def test_a_whole_stream_in_one_chunk_gives_every_line_and_the_tail():
    assert frame_all([STREAM]) == (LINES, TAIL)


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_a_stream_split_at_any_position_gives_the_same_lines(cut):
    assert frame_all([STREAM[:cut], STREAM[cut:]]) == (LINES, TAIL)


@pytest.mark.parametrize("cuts", [(1, 2), (5, 9), (7, 8), (8, 9), (20, 21), (30, 60)])
def test_a_stream_split_in_three_gives_the_same_lines(cuts):
    a, b = cuts
    assert frame_all([STREAM[:a], STREAM[a:b], STREAM[b:]]) == (LINES, TAIL)


def test_byte_by_byte_feeding_gives_the_same_lines():
    assert frame_all([STREAM[i:i + 1] for i in range(len(STREAM))]) == (LINES, TAIL)


def test_a_stream_ending_in_a_newline_has_no_tail():
    assert frame_all([b"one\ntwo\n"]) == ([b"one", b"two"], None)


def test_empty_chunks_change_nothing():
    assert frame_all([b"", b"a", b"", b"\n", b""]) == ([b"a"], None)


def test_a_carriage_return_before_the_newline_is_kept_as_part_of_the_frame():
    assert frame_all([b"x\r", b"\n"]) == ([b"x\r"], None)


def test_a_long_line_in_many_pieces_is_joined_exactly():
    line = bytes(range(256)).replace(b"\n", b"") * 4096
    chunks = [line[i:i + 65536] for i in range(0, len(line), 65536)] + [b"\n"]
    assert frame_all(chunks) == ([line], None)
