"""The incremental SSE parser (analyzer/wire/sse.py): what a stream's chunks give, wherever they split."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.wire.sse import SSEParser

STREAM = (b"\xef\xbb\xbfid: 1\r\ndata:\r\n\r\n"  # a priming event: id and empty data
          b": keep-alive comment\n\n"
          b"event: message\r\ndata: {\"a\":1}\r\ndata: second line\r\r"  # multi-line data, CR line ends
          b"id: 7\n\n"  # an id alone dispatches nothing but sets the last id
          b"retry: 1500\ndata: x\n\n")


def events_of(chunks):
    parser = SSEParser()
    out = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out, parser


def test_events_are_parsed_with_their_data_ids_types_and_retry():
    events, parser = events_of([STREAM])
    assert [(e.type, e.data, e.id, e.has_id, e.retry) for e in events] == [
        ("message", b"", "1", True, None),
        ("message", b'{"a":1}\nsecond line', "1", False, None),
        ("message", None, "7", True, None),
        ("message", b"x", "7", False, 1500),
    ]
    assert parser.last_id == "7" and parser.incomplete == b""


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_any_split_of_the_stream_gives_the_same_events(cuts):
    cuts = sorted(set(cuts))
    chunks = [STREAM[a:b] for a, b in zip([0] + cuts, cuts + [len(STREAM)])]
    assert events_of(chunks)[0] == events_of([STREAM])[0]


def test_a_crlf_split_between_two_chunks_ends_one_line_not_two():
    events, _ = events_of([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"])
    assert [e.data for e in events] == [b"a\nb"]


def test_an_event_split_in_many_pieces_is_one_event():
    big = b'{"x":"' + b"y" * 300_000 + b'"}'
    stream = b"event: message\ndata: " + big + b"\n\n"
    events, _ = events_of([stream[i:i + 50_000] for i in range(0, len(stream), 50_000)])
    assert [e.data for e in events] == [big]


def test_a_stream_cut_short_leaves_its_unfinished_event_as_incomplete():
    events, parser = events_of([b"data: done\n\ndata: {\"half\":", b"1}\ndata: more"])
    assert [e.data for e in events] == [b"done"]
    assert parser.incomplete == b'{"half":1}\nmore'


def test_event_type_other_than_message_is_reported():
    events, _ = events_of([b"event: endpoint\ndata: /messages/?session_id=abc\n\n"])
    assert (events[0].type, events[0].data) == ("endpoint", b"/messages/?session_id=abc")


def test_bytes_that_are_not_utf8_are_kept_as_they_came():
    events, _ = events_of([b"data: \xff\xfe\n\n"])
    assert events[0].data == b"\xff\xfe"


_SSE_BYTES = st.lists(st.sampled_from([b"data:", b"data: x", b"id: 3", b"id:\x00", b"event: e", b"retry: 9", b"retry: x",
                                       b": c", b"\r", b"\n", b"\r\n", b"\xef\xbb\xbf", b"\xff", b":", b" ", b"d"]),
                      max_size=40).map(b"".join) | st.binary(max_size=200)


@settings(max_examples=500, deadline=None)
@given(_SSE_BYTES, st.lists(st.integers(min_value=0, max_value=200), max_size=8))
def test_any_bytes_in_any_split_parse_without_error_and_as_when_whole(stream, cuts):
    cuts = sorted({c for c in cuts if c <= len(stream)})
    chunks = [stream[a:b] for a, b in zip([0] + cuts, cuts + [len(stream)])]
    (split, a), (whole, b) = events_of(chunks), events_of([stream])
    assert split == whole and (a.last_id, a.incomplete) == (b.last_id, b.incomplete)
