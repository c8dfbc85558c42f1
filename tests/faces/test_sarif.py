"""`mcptap analyze --format sarif` for code scanning (analyzer/report/sarif.py): valid SARIF 2.1.0 (the
OASIS schema, tests/data/sarif-2.1.0-rtm.5.json, from the npm package @microsoft/jest-sarif,
MIT), results from a frame-log at the file relative to --sarif-root and at the frame's line,
results from a database at the database with a logical location per frame, rules with their
full description and a helpUri into docs/rules.md; and frame-log FILE arguments to analyze."""

import json
import os
import re
from pathlib import Path

import jsonschema
import pytest

from mcptap.report import ruledocs
from tests.conftest import mcptap, run
from tests.support.sessions import handshake, note, ok

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((Path(__file__).parents[1] / "data" / "sarif-2.1.0-rtm.5.json").read_text(encoding="utf-8"))

# (record, what the test expects of it): frames in file order, some with a seq, others without
FRAMES = handshake() + [
    ("s2c", "booting..."),                                               # parse-error, stdout-noise (stdio)
    ("s2c", ok(99)),                                                     # unknown-response-id
    ("c2s", note("notifications/cancelled", {"requestId": 42})),       # cancel-unknown-request
]


def write_incident(path: Path, session="incident") -> dict[int, int]:
    """A frame-log with a session record, a blank line and frames without seq: {seq: line}."""
    lines, where = [json.dumps({"record": "session", "session": session, "transport": "stdio",
                                "started_at": 999.0})], {}
    for i, (direction, raw) in enumerate(FRAMES):
        if i == 2:
            lines.append("")
        lines.append(json.dumps({"session": session, "ts": 1000 + i / 100, "direction": direction, "raw": raw}))
        where[i + 1] = len(lines)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return where


def sarif_of(*args, cwd) -> tuple[int, dict]:
    result = run(mcptap("analyze", *args, "--format", "sarif"), cwd=cwd)
    assert result.returncode in (0, 1), result.stderr.decode(errors="replace")
    return result.returncode, json.loads(result.stdout)


def test_sarif_of_a_frame_log_points_at_the_file_relative_to_the_root_and_at_each_frames_line(tmp_path):
    where = write_incident(tmp_path / "logs" / "incident.jsonl")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    status, sarif = sarif_of(str(tmp_path / "logs" / "incident.jsonl"), "--sarif-root", str(tmp_path), cwd=elsewhere)
    assert status == 1
    jsonschema.validate(sarif, SCHEMA)
    run_ = sarif["runs"][0]
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    results = run_["results"]
    assert {r["ruleId"] for r in results} == {"parse-error", "stdout-noise", "unknown-response-id", "cancel-unknown-request"}
    for r in results:
        physical = r["locations"][0]["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == "logs/incident.jsonl"
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert physical["region"]["startLine"] == where[r["properties"]["frame"]]
    assert run_["artifacts"][0]["location"] == {"uri": "logs/incident.jsonl", "uriBaseId": "%SRCROOT%"}
    assert not list(elsewhere.iterdir()), "a temporary database is left behind"


def test_the_root_defaults_to_the_current_folder(tmp_path):
    write_incident(tmp_path / "incident.jsonl")
    _, sarif = sarif_of("incident.jsonl", cwd=tmp_path)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]}
    assert uris == {"incident.jsonl"}


def test_sarif_of_a_database_points_at_the_database_with_a_logical_location_per_frame(tmp_path):
    write_incident(tmp_path / "incident.jsonl")
    assert run(mcptap("import", "--db", "incident.db", "incident.jsonl"), cwd=tmp_path).returncode == 0
    _, sarif = sarif_of("--db", "incident.db", cwd=tmp_path)
    jsonschema.validate(sarif, SCHEMA)
    for r in sarif["runs"][0]["results"]:
        (location,) = r["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "incident.db"
        assert "region" not in location["physicalLocation"]
        assert location["logicalLocations"][0]["fullyQualifiedName"] == f"incident/frames/{r['properties']['frame']}"


def test_rules_carry_a_full_description_and_a_help_uri_into_the_rule_docs(tmp_path):
    write_incident(tmp_path / "incident.jsonl")
    _, sarif = sarif_of("incident.jsonl", cwd=tmp_path)
    docs = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"^### (\S+)$", docs, re.M))
    for rule in sarif["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["helpUri"] == f"{ruledocs.DOCS_URI}#{rule['id']}" and rule["id"] in anchors
        assert "Reference:" in rule["fullDescription"]["text"]


def test_the_rule_docs_are_generated_from_the_registry():
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == ruledocs.markdown(), \
        "regenerate: python -m mcptap.report.ruledocs > docs/rules.md"


def test_with_db_the_files_go_into_that_database_and_only_their_sessions_are_analysed(tmp_path):
    write_incident(tmp_path / "first.jsonl", session="first")
    write_incident(tmp_path / "second.jsonl", session="second")
    assert run(mcptap("import", "--db", "x.db", "first.jsonl"), cwd=tmp_path).returncode == 0
    result = run(mcptap("analyze", "second.jsonl", "--db", "x.db", "--format", "json"), cwd=tmp_path)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and [s["id"] for s in report["sessions"]] == ["second"]
    again = run(mcptap("analyze", "second.jsonl", "--db", "x.db"), cwd=tmp_path)
    assert again.returncode == 2 and len(again.stderr.splitlines()) == 1  # already there, as import says


def test_mcptap_db_in_the_environment_does_not_take_the_files(tmp_path):
    write_incident(tmp_path / "incident.jsonl")
    env = dict(os.environ, MCPTAP_DB=str(tmp_path / "main.db"))
    result = run(mcptap("analyze", "incident.jsonl", "--format", "jsonl"), cwd=tmp_path, env=env)
    assert result.returncode == 1 and len(result.stdout.splitlines()) == 4
    assert not (tmp_path / "main.db").exists()


@pytest.mark.parametrize("make", [
    lambda d: ["missing.jsonl"],
    lambda d: [(d / "bad.jsonl").write_text("not json\n", encoding="utf-8") and "bad.jsonl"],
    lambda d: ["incident.jsonl", "--session", "incident"],
    lambda d: ["incident.jsonl", "--sarif-root", "no-such-folder"],
])
def test_bad_file_arguments_are_one_line_and_exit_2(tmp_path, make):
    write_incident(tmp_path / "incident.jsonl")
    result = run(mcptap("analyze", *make(tmp_path), "--format", "sarif"), cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and not result.stdout
