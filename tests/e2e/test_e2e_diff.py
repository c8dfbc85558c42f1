"""`mcptap diff` on real recordings: the real `mcp` SDK client drives the real SDK test server
through `mcptap record` twice, the second time with one tool's description changed; the diff of
the two sessions names that member and nothing else."""

import json

import pytest

from tests.conftest import run, tee, tool
from tests.support.inprocess import cli


def record(sdk_python, db, name: str, mode: str, *server_args: str) -> None:
    chain = tee(db, sdk_python, tool("sdk_server.py"), *server_args, name=name)
    done = run([sdk_python, tool("sdk_client.py"), mode, "sdk", "--", *chain], timeout=120)
    assert done.returncode == 0, done.stderr.decode()[-2000:]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_the_diff_of_two_recordings_of_a_real_server_with_one_tool_changed_names_that_member(
        tmp_path, db, sdk_python, mode):
    record(sdk_python, db, "before", mode)
    record(sdk_python, db, "after", mode, "--echo-description", "Return the text, unchanged.")
    done = cli("diff", "--db", str(db), "before", "after", "--format", "json")
    assert done.returncode == 1, done.stdout.decode()
    report = json.loads(done.stdout)
    changed = [(m["method"], c["path"], c["a"], c["b"]) for m in report["messages"]
               for c in m["changes"] + m["answer_changes"]]
    (method, path, was, now), = changed
    assert method == "tools/list" and path.startswith("$.result.tools[") and path.endswith("].description")
    assert (was, now) == ("Return the text.", "Return the text, unchanged.")
    text = cli("diff", "--db", str(db), "before", "after").stdout.decode()
    assert f'  answer changed  {path}: "Return the text." -> "Return the text, unchanged."' in text.splitlines()


def test_two_recordings_of_the_same_real_server_are_equal(tmp_path, db, sdk_python):
    record(sdk_python, db, "monday", "legacy")
    record(sdk_python, db, "tuesday", "legacy")
    done = cli("diff", "--db", str(db), "monday", "tuesday")
    assert done.returncode == 0, done.stdout.decode()
