"""A host's config is never lost: `mcptap wrap` and `mcptap unwrap` on every file a host could
write (comments, odd escapes, huge numbers, lone surrogates, BOM, CRLF) either do their work and
give back every byte they did not own, or refuse in one line, exit 2, and touch nothing; any
server name reaches `mcptap record` unchanged; a host's write between wraps, or during one, is
never undone; a symlinked config stays a link; temporary files never hold a 0600 config's bytes
under a wider mode. Real files, the real command as a subprocess; the race and the mode are
watched in-process (a host cannot be timed into the middle of a write from outside). Ends with a
property test over generated configs: wrap, host edit, wrap, (host edit), unwrap."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap.errors import MCPTapError
from mcptap.hostconfig import hosts, jsonc
from mcptap.hostconfig import wrap as wrap_mod
from tests.conftest import mcptap, run
from tests.support.inprocess import cli

PLAIN = '{\n  "mcpServers": {\n    "time": {"command": "uvx", "args": ["mcp-server-time"]}\n  },\n  "x": 1\n}\n'


def entries(path: Path) -> dict[str, dict]:
    return {s.name: s.node.plain() for s in hosts.servers(jsonc.parse(path.read_text(encoding="utf-8")))}


def wrap(path: Path, *more: str) -> "subprocess.CompletedProcess":  # noqa: F821
    return cli("wrap", str(path), "--db", str(path.parent / "rec.db"), *more)


def unwrap(path: Path) -> "subprocess.CompletedProcess":  # noqa: F821
    return cli("unwrap", str(path))


def one_line_refusal(done) -> bool:
    err = done.stderr.decode()
    return done.returncode == 2 and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("content", [
    b"",  # empty
    b"  \n",
    b'{"mcpServers": {"time"',  # truncated mid-member
    b'{"mcpServers": {"time": {"command": "uvx", "args": ["a"',
    b'{"mcpServers": {"time": {"command": "uv\\qx"}}}',  # an escape JSON does not have
], ids=["empty", "blank", "truncated-after-a-name", "truncated-in-args", "backslash-q"])
def test_a_file_no_host_could_read_is_refused_in_one_line_exit_2_and_untouched(tmp_path, content):
    path = tmp_path / "claude_desktop_config.json"
    path.write_bytes(content)
    for done in (wrap(path), unwrap(path)):
        assert one_line_refusal(done), done.stderr.decode()
    assert path.read_bytes() == content and sorted(os.listdir(tmp_path)) == [path.name]


ODD = {
    "raw-tab-in-a-string": '{"mcpServers": {"t\tab": {"command": "uvx", "args": ["a\tb"]}}}',
    "5000-digit-number": '{"n": ' + "7" * 5000 + ', "mcpServers": {"time": {"command": "uvx", "args": [' + "9" * 5000 + "]}}}",
    "lone-surrogate-in-a-name": '{"mcpServers": {"x\\ud800": {"command": "uvx", "args": ["a"]}}}',
    "lone-surrogate-in-an-arg": '{"mcpServers": {"time": {"command": "uvx", "args": ["\\udc00"]}}}',
    "lone-surrogate-in-the-command": '{"mcpServers": {"time": {"command": "uv\\udfffx"}}}',
    "escapes": '{"mcpServers": {"ti\\u006de": {"command": "\\/usr\\/bin\\/uvx", "args": ["\\"q\\"", "\\u00e9"]}}}',
    "bom": '\ufeff{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}',
    "crlf": PLAIN.replace("\n", "\r\n"),
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_a_file_a_host_could_write_is_wrapped_and_given_back_byte_for_byte(tmp_path, name):
    path = tmp_path / "claude_desktop_config.json"
    data = ODD[name].encode("utf-8")
    path.write_bytes(data)
    done = wrap(path)
    assert done.returncode == 0 and b"wrapped 1 server" in done.stdout, done.stderr.decode()
    [server] = entries(path).values()
    assert server["args"][0] == "record"
    again = wrap(path)
    assert again.returncode == 0 and b"already wrapped" in again.stdout
    done = unwrap(path)
    assert done.returncode == 0, done.stderr.decode()
    assert path.read_bytes() == data
    # and in place, when the host changed the file since: every byte wrap did not write is kept
    assert wrap(path).returncode == 0
    path.write_bytes(path.read_bytes() + b"\n// the host's\n")
    done = unwrap(path)
    assert done.returncode == 0 and b"unwrapped" in done.stdout, done.stderr.decode()
    assert path.read_bytes() == data + b"\n// the host's\n"


def test_a_server_the_host_added_between_two_wraps_survives_unwrap(tmp_path):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(PLAIN, encoding="utf-8")
    assert wrap(path).returncode == 0
    text = path.read_text(encoding="utf-8").replace('"mcpServers": {\n', '"mcpServers": {\n    "new": {"command": "npx"},\n')
    path.write_text(text.replace('"x": 1', '"x": 2'), encoding="utf-8")
    hosts_own = PLAIN.replace('"mcpServers": {\n', '"mcpServers": {\n    "new": {"command": "npx"},\n').replace('"x": 1', '"x": 2')
    done = wrap(path)
    assert done.returncode == 0 and b"wrapped 1 server" in done.stdout and b"mcpServers.new" in done.stdout
    assert (tmp_path / (path.name + ".mcptap-backup")).read_text(encoding="utf-8") == hosts_own
    done = unwrap(path)
    assert done.returncode == 0 and b"restored as it was" in done.stdout
    assert path.read_text(encoding="utf-8") == hosts_own


def test_a_wrap_with_nothing_new_to_wrap_still_brings_the_backup_up_to_the_hosts_change(tmp_path):
    path = tmp_path / "mcp.json"
    path.write_text(PLAIN, encoding="utf-8")
    assert wrap(path).returncode == 0
    path.write_text(path.read_text(encoding="utf-8").replace('"x": 1', '"x": 3'), encoding="utf-8")
    done = wrap(path)
    assert done.returncode == 0 and b"already wrapped" in done.stdout
    assert (tmp_path / "mcp.json.mcptap-backup").read_text(encoding="utf-8") == PLAIN.replace('"x": 1', '"x": 3')
    assert unwrap(path).returncode == 0
    assert path.read_text(encoding="utf-8") == PLAIN.replace('"x": 1', '"x": 3')


NAMES = ["--", "-beta", "--db", "-h", "--name=x", "a=b", "", " ", "é", "two\nlines", 'a "quoted" one', "\\"]


@pytest.mark.parametrize("name", NAMES, ids=repr)
def test_any_server_name_is_unwrapped_in_place_exactly_and_reaches_record_unchanged(tmp_path, name):
    path = tmp_path / "claude_desktop_config.json"
    key = json.dumps(name)
    data = ('{\n  "mcpServers": {\n    ' + key + ': {\n      "command": ' + json.dumps(sys.executable)
            + ',\n      "args": ["-c", "import sys; sys.stdin.read()"] // reads to the end\n    }\n  }\n}\n')
    path.write_text(data, encoding="utf-8")
    assert wrap(path).returncode == 0
    entry = entries(path)[name]
    started = run([entry["command"], *entry["args"]])  # as the host starts it
    assert started.returncode == 0, started.stderr.decode()
    conn = sqlite3.connect(tmp_path / "rec.db")
    assert [r[0] for r in conn.execute("SELECT label FROM sessions")] == [name]
    conn.close()
    path.write_text(path.read_text(encoding="utf-8") + "// the host's\n", encoding="utf-8")
    done = unwrap(path)
    assert done.returncode == 0, done.stderr.decode()
    assert path.read_text(encoding="utf-8") == data + "// the host's\n"


@pytest.mark.parametrize("value", ["--", "-beta", "", "a=b", "--db", "-h"], ids=repr)
def test_record_reads_name_equals_any_value_and_name_space_value_back_unchanged(tmp_path, value):
    server = [sys.executable, "-c", "import sys; sys.stdin.read()"]
    for way in ([f"--name={value}"], ["--name", value]):
        db = tmp_path / f"{len(way)}.db"
        done = cli("record", f"--db={db}", *way, "--", *server)
        assert done.returncode == 0, done.stderr.decode()
        conn = sqlite3.connect(db)
        assert [r[0] for r in conn.execute("SELECT label FROM sessions")] == [value]
        conn.close()


def test_a_symlinked_config_stays_a_link_and_its_target_is_edited(tmp_path):
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    target = dotfiles / "claude.json"
    target.write_text(PLAIN, encoding="utf-8")
    os.chmod(target, 0o600)
    link = tmp_path / ".claude.json"
    link.symlink_to(target)
    assert wrap(link).returncode == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert entries(target)["time"]["args"][0] == "record" and oct(target.stat().st_mode & 0o777) == "0o600"
    assert sorted(os.listdir(dotfiles)) == ["claude.json"]  # backup and state beside the link, not in dotfiles
    assert unwrap(link).returncode == 0
    assert link.is_symlink() and target.read_text(encoding="utf-8") == PLAIN


def test_comments_inside_args_survive_wrap_and_an_in_place_unwrap(tmp_path):
    path = tmp_path / "mcp.json"
    data = ('{\n  "servers": {\n    "time": {\n      "command": "uvx",\n      "args": [\n'
            '        // the PyPI server\n        "mcp-server-time", /* its zone: */ "--local-timezone=UTC",\n'
            '      ],\n    },\n  },\n}\n')
    path.write_text(data, encoding="utf-8")
    assert wrap(path).returncode == 0
    wrapped = path.read_text(encoding="utf-8")
    assert "// the PyPI server" in wrapped and "/* its zone: */" in wrapped
    path.write_text(wrapped.replace("\n}\n", "\n  // the host's\n}\n"), encoding="utf-8")
    assert unwrap(path).returncode == 0
    assert path.read_text(encoding="utf-8") == data.replace("\n}\n", "\n  // the host's\n}\n")


def test_a_second_wrap_of_an_entry_with_args_of_every_type_changes_nothing(tmp_path):
    path = tmp_path / "mcp.json"
    data = '{"mcpServers": {"odd": {"command": "node", "args": ["s.js", 3, true, null, 1.5, ["x"], {"k": "v"}]}}}'
    path.write_text(data, encoding="utf-8")
    assert wrap(path).returncode == 0
    once = path.read_bytes()
    again = wrap(path)
    assert again.returncode == 0 and b"already wrapped: mcpServers.odd" in again.stdout and path.read_bytes() == once
    assert unwrap(path).returncode == 0 and path.read_text(encoding="utf-8") == data


def test_a_host_writing_the_file_while_wrap_writes_keeps_its_write_and_wrap_refuses(tmp_path, monkeypatch):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(PLAIN, encoding="utf-8")
    theirs = PLAIN.replace('"x": 1', '"x": 2')
    plan = wrap_mod.plan_wrap(path, str(tmp_path / "r.db"))
    real_fsync, wrote = os.fsync, []

    def host_writes_meanwhile(fd):  # the host saves its config while mcptap's bytes go to disk
        real_fsync(fd)
        if not wrote:
            wrote.append(1)
            path.write_text(theirs, encoding="utf-8")

    monkeypatch.setattr(os, "fsync", host_writes_meanwhile)
    with pytest.raises(MCPTapError, match="changed while mcptap was rewriting it"):
        wrap_mod.apply(plan)
    assert wrote and path.read_text(encoding="utf-8") == theirs
    assert sorted(os.listdir(tmp_path)) == [path.name]  # no backup of a file the host no longer has, no temporary


def test_every_temporary_file_of_a_0600_config_is_0600_before_its_first_byte(tmp_path, monkeypatch):
    path = tmp_path / "claude_desktop_config.json"
    path.write_text(PLAIN.replace('"x": 1', '"token": "sk-secret"'), encoding="utf-8")
    os.chmod(path, 0o600)
    modes = []
    real_write, real_fsync = os.write, os.fsync

    def watched_write(fd, data):
        modes.append(os.fstat(fd).st_mode & 0o777)
        return real_write(fd, data)

    def watched_fsync(fd):  # a write through a file object: its bytes are in the file by the fsync
        modes.append(os.fstat(fd).st_mode & 0o777)
        return real_fsync(fd)

    monkeypatch.setattr(os, "write", watched_write)
    monkeypatch.setattr(os, "fsync", watched_fsync)
    old = os.umask(0o022)
    try:
        assert wrap_mod.apply(wrap_mod.plan_wrap(path, str(tmp_path / "r.db")))
    finally:
        os.umask(old)
    assert modes and set(modes) == {0o600}
    assert {oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()} == {"0o600"}


# The property: generated host configs, JSONC with comments and white space between any two
# tokens, server names of every shape, args of every JSON type (or none).

COMMENTS = st.sampled_from(["", " ", "\n  ", "\r\n\t", "/* c */", " // c\n", "\n// c , ] }\n  ", "/**/ "])
NAME = st.one_of(st.sampled_from(["--", "-beta", "--db", "-m", "record", "", "a=b", "\\", "x\ud800"]),
                 st.text(max_size=8)).filter(lambda n: n != "host-added")
SCALAR = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                   st.text(max_size=6))
ARG = st.one_of(SCALAR, st.lists(SCALAR, max_size=2), st.dictionaries(st.text(max_size=3), SCALAR, max_size=2))
COMMAND = st.one_of(st.sampled_from(["uvx", "npx", "/usr/bin/node", "C:\\Program Files\\s.exe"]),
                    st.text(min_size=1, max_size=8)).filter(lambda c: "mcptap" not in c.lower())
SERVER = st.fixed_dictionaries({"command": COMMAND}, optional={"args": st.lists(ARG, max_size=4),
                                                               "env": st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=1)})


def render(value, data, trailing: bool) -> str:
    """`value` as JSONC, a drawn gap (white space, comments) around every token."""
    gap = lambda: data.draw(COMMENTS)  # noqa: E731
    if isinstance(value, dict):
        members = [f"{gap()}{json.dumps(k)}{gap()}:{gap()}{render(v, data, trailing)}{gap()}" for k, v in value.items()]
        return "{" + ",".join(members) + ("," + gap() if trailing and members else "") + "}"
    if isinstance(value, list):
        items = [f"{gap()}{render(v, data, trailing)}{gap()}" for v in value]
        return "[" + ",".join(items) + ("," + gap() if trailing and items else "") + "]"
    return json.dumps(value)


def host_edit(text: str, kind: str) -> str:
    """The host's own change: a server added at the head of the map, a setting changed, a comment
    at the end."""
    root = jsonc.parse(text)
    if kind == "add":
        servers = root.get("mcpServers")
        new = '"host-added": {"command": "npx", "args": ["-y", "srv"]}' + ("," if servers.members else "")
        return jsonc.edit(text, [(servers.start + 1, servers.start + 1, new)])
    if kind == "setting":
        setting = root.get("globalShortcut")
        return jsonc.edit(text, [(setting.start, setting.end, '"Alt+Space"')])
    return text + "\n// the host's\n"


@settings(max_examples=150, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), servers=st.dictionaries(NAME, SERVER, max_size=4), bom=st.booleans(),
       trailing=st.booleans(), crlf=st.booleans(),
       first=st.sampled_from(["add", "setting", "comment"]), second=st.sampled_from([None, "add", "setting", "comment"]))
def test_wrap_host_edit_wrap_unwrap_keeps_the_hosts_edit_and_gives_back_every_byte_wrap_did_not_own(
        tmp_path_factory, data, servers, bom, trailing, crlf, first, second):
    text = render({"mcpServers": servers, "globalShortcut": "Ctrl+Space"}, data, trailing)
    text = ("\ufeff" if bom else "") + (text.replace("\n", "\r\n") if crlf else text)
    path = tmp_path_factory.mktemp("prop") / "claude_desktop_config.json"
    path.write_bytes(text.encode("utf-8"))
    db = str(path.parent / "rec.db")
    wrap_mod.apply(wrap_mod.plan_wrap(path, db))
    path.write_bytes(host_edit(path.read_bytes().decode("utf-8"), first).encode("utf-8"))
    expected = host_edit(text, first)
    wrap_mod.apply(wrap_mod.plan_wrap(path, db))
    stdio = [s for s in hosts.servers(jsonc.parse(path.read_text(encoding="utf-8"))) if s.kind == "stdio"]
    assert all(s.node.plain()["args"][0] == "record" for s in stdio)  # every server, the host's new one too
    if second is not None and not (second == first == "add"):
        path.write_bytes(host_edit(path.read_bytes().decode("utf-8"), second).encode("utf-8"))
        expected = host_edit(expected, second)
    wrap_mod.apply(wrap_mod.plan_unwrap(path))
    assert path.read_bytes().decode("utf-8") == expected


@pytest.mark.parametrize("launcher", [["/opt/bin/mcptap"], ["/usr/bin/python3", "-m", "mcptap"]], ids=["script", "module"])
def test_an_entry_wrapped_the_older_way_is_unwrapped_whatever_its_name(tmp_path, launcher):
    old = [*launcher[1:], "record", "--db", "/r.db", "--name", "--", "--", "uvx", "srv", 7]
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"--": {"command": launcher[0], "args": old}}}), encoding="utf-8")
    assert b"already wrapped: mcpServers.--" in wrap(path).stdout
    done = unwrap(path)
    assert done.returncode == 0, done.stderr.decode()
    assert entries(path) == {"--": {"command": "uvx", "args": ["srv", 7]}}
