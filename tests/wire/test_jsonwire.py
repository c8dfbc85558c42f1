"""Parsing as the wire said it (analyzer/wire/jsonwire.py): duplicate keys seen, number forms kept,
bad bytes and bad text as results, deep nesting parsed without recursion."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcptap.wire.jsonwire import NumberText, _parse_iteratively, parse, to_json


def test_duplicate_member_names_are_reported_at_any_depth():
    parsed = parse('{"a":1,"b":{"c":1,"c":2},"a":3}')
    assert parsed.error is None
    assert sorted(parsed.duplicate_keys) == ["a", "c"]
    assert parsed.value == {"a": 3, "b": {"c": 2}}  # the last one wins, as in most parsers


def test_no_duplicates_means_an_empty_list():
    assert not parse('{"a":1,"b":[{"a":2}]}').duplicate_keys


def test_integer_fraction_and_exponent_forms_stay_distinguishable():
    value = parse('[1, 1.0, 1e0, 1.5]').value
    assert value[0] == 1 and type(value[0]) is int
    assert value[1] == NumberText("1.0") and value[2] == NumberText("1e0") and value[1] != value[2]
    assert value[1].is_integral and not value[3].is_integral
    assert to_json(value) == "[1,1.0,1e0,1.5]"


def test_big_integers_are_kept_exactly():
    assert parse("123456789012345678901234567890").value == 123456789012345678901234567890
    huge = "9" * 5000  # past CPython's int() digit limit
    value = parse(f'{{"id":{huge}}}').value["id"]
    assert type(value) is NumberText and value.text == huge and value.is_integer_literal


def test_bytes_that_are_not_utf8_are_a_result_not_an_exception():
    parsed = parse(b'{"a":"\xff"}')
    assert parsed.value is None and parsed.error.startswith("not UTF-8")


def test_text_that_is_not_json_is_a_result_not_an_exception():
    for text in ("", "hello", "{", '{"a":1}x', "[1,]", "\ufeff{}"):
        parsed = parse(text)
        assert parsed.error is not None and parsed.error.startswith("not JSON"), text


def test_nesting_far_deeper_than_the_recursion_limit_is_parsed():
    depth = 100_000
    parsed = parse("[" * depth + "]" * depth)
    assert parsed.error is None
    node, levels = parsed.value, 0
    while node:
        node, levels = node[0], levels + 1
    assert levels == depth - 1
    assert parse('{"a":' * depth + "1" + "}" * depth).error is None


def test_deep_but_broken_nesting_is_an_error_not_a_crash():
    assert parse("[" * 100_000).error is not None


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children) | st.dictionaries(st.text(), children),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([None, 1]))
def test_the_iterative_parser_gives_what_the_scanner_gives(value, indent):
    text = json.dumps(value, indent=indent)
    pairs = lambda p: dict(p)  # noqa: E731
    expected = json.loads(text, object_pairs_hook=pairs, parse_float=NumberText)
    assert _parse_iteratively(text, pairs) == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='[]{}:,"0123456789.eE-+ truefalsn\\', max_size=30))
def test_the_iterative_parser_accepts_exactly_what_the_scanner_accepts(text):
    pairs = lambda p: dict(p)  # noqa: E731
    try:
        expected = json.loads(text, object_pairs_hook=pairs, parse_float=NumberText)
    except (ValueError, RecursionError):
        expected = "rejected"
    try:
        got = _parse_iteratively(text, pairs)
    except ValueError:
        got = "rejected"
    assert got == expected


def test_nan_and_infinity_are_not_json():
    for text in ("NaN", "[Infinity]", '{"a":-Infinity}'):
        assert parse(text).error is not None, text


@pytest.mark.parametrize("text", [
    '{"a":1,"a":2}', '{"id":1e0}', '{"a": 1}', '{"s":"\\u00e9"}', '{"n":123456789012345678901234}',
    '{"x":1.50}', '{"s":"\\/"}',
])
def test_frames_the_fast_parser_would_write_differently_take_the_exact_path(text):
    parsed = parse(text)
    assert parsed.value == _exact(text)
    assert bool(parsed.duplicate_keys) == (text == '{"a":1,"a":2}')


def test_a_compact_frame_with_floats_keeps_their_text_and_form():
    from mcptap.analysis.classify import id_shape

    parsed = parse('{"id":1.5,"p":{"progress":0.25},"one":1.0}')
    assert to_json(parsed.value["id"]) == "1.5" and parsed.duplicate_keys == ()
    assert [id_shape(parse(t).value) for t in ("1.0", "1e0", "1.5", "1")] == ["integral", "integral", "fraction", "int"]


def _exact(text):
    from mcptap.wire.jsonwire import _parse_exactly

    return _parse_exactly(text).value
