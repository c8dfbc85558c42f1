"""The structural diff `mcptap replay` prints: paths, ignore patterns, values as written."""

import pytest

from mcptap.replay import jsondiff
from mcptap.wire.jsonwire import parse


def changes(a: str, b: str, *ignore: str) -> list[tuple[str, str]]:
    return [(c.op, c.where) for c in jsondiff.diff(parse(a).value, parse(b).value, jsondiff.Ignore(ignore))]


def test_equal_values_have_no_changes():
    assert changes('{"a":[1,{"b":"x"}]}', '{"a": [1, {"b": "x"}]}') == []


def test_members_added_removed_and_changed_are_named_by_path():
    assert changes('{"a":1,"b":{"c":[1,2]},"gone":0}', '{"a":2,"b":{"c":[1]},"new":true}') == [
        ("changed", "$.a"), ("removed", "$.b.c[1]"), ("removed", "$.gone"), ("added", "$.new")]


def test_numbers_are_compared_as_written():
    assert changes('{"n":1}', '{"n":1.0}') == [("changed", "$.n")]
    assert changes('{"n":1.0}', '{"n":1.0}') == []
    assert changes('{"n":true}', '{"n":1}') == [("changed", "$.n")]


def test_a_member_name_that_is_not_an_identifier_is_quoted():
    assert changes('{"a b":1}', '{"a b":2}') == [("changed", '$["a b"]')]


def test_a_type_change_is_one_change_at_that_path():
    assert changes('{"a":{"b":1}}', '{"a":[1]}') == [("changed", "$.a")]


@pytest.mark.parametrize("pattern", [
    "$.result.content[*].text", "result.content[0].text", "$..text", "$.result.content", "$.result.*[*].text",
])
def test_ignore_patterns_leave_out_the_members_they_match(pattern):
    a = '{"result":{"content":[{"type":"text","text":"12:00"}],"ok":true}}'
    b = '{"result":{"content":[{"type":"text","text":"12:01"}],"ok":true}}'
    assert changes(a, b) == [("changed", "$.result.content[0].text")]
    assert changes(a, b, pattern) == []


def test_an_ignore_pattern_does_not_hide_its_neighbours():
    a = '{"result":{"time":"12:00","value":1}}'
    b = '{"result":{"time":"12:01","value":2}}'
    assert changes(a, b, "$.result.time") == [("changed", "$.result.value")]
    assert changes(a, b, "$..time") == [("changed", "$.result.value")]


def test_an_ignored_member_that_appears_or_disappears_is_not_reported():
    assert changes('{"a":1,"stamp":2}', '{"a":1}', "$.stamp") == []
    assert changes('{"a":1}', '{"a":1,"stamp":2}', "$..stamp") == []


@pytest.mark.parametrize("bad", ["$.a[", "$.a[x]", "$", "a..", ""])
def test_a_pattern_that_cannot_be_read_is_a_value_error_naming_it(bad):
    with pytest.raises(ValueError, match="JSON path"):
        jsondiff.Ignore([bad])


def test_a_long_changed_string_is_shown_around_its_first_difference():
    a, b = "x" * 200 + "OLD" + "y" * 200, "x" * 200 + "NEW" + "y" * 200
    (change,) = jsondiff.diff({"s": a}, {"s": b})
    text = str(change)
    assert "OLD" in text and "NEW" in text and len(text) < 220
