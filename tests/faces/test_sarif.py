"""`mcptap analyze --format sarif` for code scanning (analyzer/report/sarif.py): valid SARIF 2.1.0 (the
OASIS schema, tests/data/sarif-2.1.0-rtm.5.json, from the npm package @microsoft/jest-sarif,
MIT), results from a frame-log at the file relative to --sarif-root and at the frame's line,
results from a database at the database with a logical location per frame, rules with their
full description and a helpUri into docs/rules.md; and frame-log FILE arguments to analyze."""

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest

from mcptap.report import ruledocs
from tests.conftest import mcptap, run
from tests.support.inprocess import cli
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
    result = cli("analyze", *args, "--format", "sarif", cwd=cwd)
    assert result.returncode in (0, 1), result.stderr.decode(errors="replace")
    return result.returncode, json.loads(result.stdout)


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> tuple[Path, dict, dict]:
    """A folder holding incident.jsonl and incident.db (it imported), the SARIF of the database
    and the SARIF of the file, each analysed from that folder."""
    folder = tmp_path_factory.mktemp("incident")
    write_incident(folder / "incident.jsonl")
    assert cli("import", "--db", "incident.db", "incident.jsonl", cwd=folder).returncode == 0
    return folder, sarif_of("--db", "incident.db", cwd=folder)[1], sarif_of("incident.jsonl", cwd=folder)[1]


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


def test_sarif_of_a_database_points_at_the_database_as_a_whole_with_a_logical_location_per_session_and_frame(
        incident):
    folder, sarif, _ = incident
    jsonschema.validate(sarif, SCHEMA)
    run_ = sarif["runs"][0]
    listed = run_["logicalLocations"]
    assert [entry["index"] for entry in listed] == list(range(len(listed)))
    for r in run_["results"]:
        (location,) = r["locations"]
        assert location["physicalLocation"]["artifactLocation"]["uri"] == "incident.db"
        assert location["physicalLocation"]["region"] == {"startLine": 1}
        (logical,) = location["logicalLocations"]
        frame = r["properties"]["frame"]
        assert logical["fullyQualifiedName"] == f"session/incident/frame/{frame}"
        assert listed[logical["index"]]["fullyQualifiedName"] == logical["fullyQualifiedName"]
        session = listed[listed[logical["index"]]["parentIndex"]]
        assert session == {"name": "incident", "fullyQualifiedName": "session/incident", "kind": "module",
                           "index": session["index"]}
        assert r["message"]["text"].endswith(f"(session incident, frame {frame})")


def test_rules_carry_a_full_description_help_text_and_markdown_and_a_help_uri_into_the_rule_docs(incident):
    _, _, sarif = incident
    docs = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    anchors = set(re.findall(r"^### (\S+)$", docs, re.M))
    for rule in sarif["runs"][0]["tool"]["driver"]["rules"]:
        assert rule["helpUri"] == f"{ruledocs.DOCS_URI}#{rule['id']}" and rule["id"] in anchors
        assert "Reference:" in rule["fullDescription"]["text"]
        assert rule["help"]["text"].endswith(rule["helpUri"]) and "Severity:" in rule["help"]["text"]
        assert f"]({rule['helpUri']})" in rule["help"]["markdown"] and "- reference: " in rule["help"]["markdown"]


def test_the_rule_docs_are_generated_from_the_registry():
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == ruledocs.markdown(), \
        "regenerate: python -m mcptap.report.ruledocs > docs/rules.md"


def test_with_db_the_files_go_into_that_database_and_only_their_sessions_are_analysed(tmp_path):
    write_incident(tmp_path / "first.jsonl", session="first")
    write_incident(tmp_path / "second.jsonl", session="second")
    assert cli("import", "--db", "x.db", "first.jsonl", cwd=tmp_path).returncode == 0
    result = cli("analyze", "second.jsonl", "--db", "x.db", "--format", "json", cwd=tmp_path)
    report = json.loads(result.stdout)
    assert result.returncode == 1 and [s["id"] for s in report["sessions"]] == ["second"]
    again = cli("analyze", "second.jsonl", "--db", "x.db", cwd=tmp_path)
    assert again.returncode == 2 and len(again.stderr.splitlines()) == 1  # already there, as import says


def test_mcptap_db_in_the_environment_does_not_take_the_files(tmp_path):
    write_incident(tmp_path / "incident.jsonl")
    env = dict(os.environ, MCPTAP_DB=str(tmp_path / "main.db"))
    result = cli("analyze", "incident.jsonl", "--format", "jsonl", cwd=tmp_path, env=env)
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
    result = cli("analyze", *make(tmp_path), "--format", "sarif", cwd=tmp_path)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1 and not result.stdout


# -- what GitHub code scanning takes in ---------------------------------------------------------------

GITHUB_MAX_BYTES = 10 << 20
GITHUB_MAX_RUNS = 20
GITHUB_MAX_RESULTS = 25_000
GITHUB_MAX_RULES = 25_000
GITHUB_MAX_LOCATIONS = 1_000
GITHUB_MAX_TAGS = 20


def github_ingestion_problems(sarif: dict, root: Path, size: int | None = None) -> list[str]:
    """What GitHub's code scanning upload would refuse or could not place, by its documented rules
    (docs.github.com, "SARIF support for code scanning"): a file of at most 10 MB, version 2.1.0,
    at most 20 runs, each with tool.driver.name, rules with an id and a shortDescription.text (at
    most 20 tags), results (at most 25,000) each with a ruleId of a listed rule, a message.text,
    locations (at most 1,000) each with a physicalLocation whose artifactLocation has a uri (a
    relative one, or under %SRCROOT%, naming a file that exists) and a region with a startLine of
    1 or more, and partialFingerprints of string keys and string values."""
    problems = []
    text = json.dumps(sarif)
    if (size if size is not None else len(text.encode("utf-8"))) > GITHUB_MAX_BYTES:
        problems.append("file over 10 MB")
    if sarif.get("version") != "2.1.0":
        problems.append("version is not 2.1.0")
    runs = sarif.get("runs") or []
    if not runs or len(runs) > GITHUB_MAX_RUNS:
        problems.append(f"{len(runs)} runs")
    for run_ in runs:
        driver = run_.get("tool", {}).get("driver", {})
        if not isinstance(driver.get("name"), str) or not driver["name"]:
            problems.append("tool.driver.name missing")
        rules = driver.get("rules", [])
        if len(rules) > GITHUB_MAX_RULES:
            problems.append(f"{len(rules)} rules")
        ids = set()
        for rule in rules:
            if not isinstance(rule.get("id"), str) or not rule["id"]:
                problems.append(f"rule without id: {rule}")
            ids.add(rule.get("id"))
            if not isinstance(rule.get("shortDescription", {}).get("text"), str):
                problems.append(f"rule {rule.get('id')} without shortDescription.text")
            if len(rule.get("properties", {}).get("tags", [])) > GITHUB_MAX_TAGS:
                problems.append(f"rule {rule.get('id')} with over {GITHUB_MAX_TAGS} tags")
        results = run_.get("results", [])
        if len(results) > GITHUB_MAX_RESULTS:
            problems.append(f"{len(results)} results")
        artifacts = run_.get("artifacts", [])
        for n, r in enumerate(results):
            if r.get("ruleId") not in ids:
                problems.append(f"result {n}: ruleId {r.get('ruleId')!r} is no listed rule")
            if not isinstance(r.get("message", {}).get("text"), str) or not r["message"]["text"]:
                problems.append(f"result {n}: no message.text")
            locations = r.get("locations") or []
            if not locations or len(locations) > GITHUB_MAX_LOCATIONS:
                problems.append(f"result {n}: {len(locations)} locations")
            for loc in locations:
                physical = loc.get("physicalLocation", {})
                artifact = physical.get("artifactLocation", {})
                uri = artifact.get("uri")
                if uri is None and "index" in artifact:
                    uri = artifacts[artifact["index"]]["location"].get("uri")
                if not isinstance(uri, str) or uri.startswith("file:") or "://" in uri:
                    problems.append(f"result {n}: uri {uri!r} is not a path in the repository")
                elif not (root / unquote(uri)).is_file():
                    problems.append(f"result {n}: {uri} is no file under the root")
                line = physical.get("region", {}).get("startLine")
                if not isinstance(line, int) or line < 1:
                    problems.append(f"result {n}: no region.startLine")
            marks = r.get("partialFingerprints")
            if not isinstance(marks, dict) or not marks or not all(
                    isinstance(k, str) and isinstance(v, str) and v for k, v in marks.items()):
                problems.append(f"result {n}: partialFingerprints {marks!r}")
    return problems


def test_the_github_rules_checker_finds_what_code_scanning_refuses(tmp_path):
    (tmp_path / "log.jsonl").write_text("{}\n", encoding="utf-8")
    good = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "t", "rules": [
        {"id": "r", "shortDescription": {"text": "s"}}]}}, "results": [{
            "ruleId": "r", "message": {"text": "m"}, "partialFingerprints": {"k/v1": "h"},
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": "log.jsonl"},
                                                "region": {"startLine": 1}}}]}]}]}
    assert github_ingestion_problems(good, tmp_path) == []
    result = good["runs"][0]["results"][0]
    for spoil in (lambda r: r.pop("partialFingerprints"), lambda r: r.update(ruleId="x"),
                  lambda r: r["message"].pop("text"),
                  lambda r: r["locations"][0]["physicalLocation"].pop("region"),
                  lambda r: r["locations"][0]["physicalLocation"]["artifactLocation"].update(uri="file:///x"),
                  lambda r: r["locations"][0]["physicalLocation"]["artifactLocation"].update(uri="gone.db")):
        spoiled = json.loads(json.dumps(good))
        spoil(spoiled["runs"][0]["results"][0])
        assert github_ingestion_problems(spoiled, tmp_path), spoil
    assert github_ingestion_problems(good, tmp_path, size=11 << 20) == ["file over 10 MB"]
    assert result["ruleId"] == "r"


def test_sarif_of_a_frame_log_and_of_a_database_meets_githubs_code_scanning_rules(incident):
    folder, of_db, of_file = incident
    assert github_ingestion_problems(of_db, folder) == []
    assert github_ingestion_problems(of_file, folder) == []


def fingerprints(sarif: dict) -> list[str]:
    return [r["partialFingerprints"]["mcptapFinding/v1"] for r in sarif["runs"][0]["results"]]


def test_each_finding_has_a_fingerprint_of_its_own_the_same_in_every_run_and_database(incident, tmp_path):
    folder, first, from_file = incident
    assert cli("import", "--db", str(tmp_path / "two.db"), str(folder / "incident.jsonl")).returncode == 0
    _, other = sarif_of("--db", "two.db", cwd=tmp_path)  # another database, another folder, another run
    marks = fingerprints(first)
    assert len(set(marks)) == len(marks) == 4
    assert fingerprints(other) == fingerprints(from_file) == marks
    for r in first["runs"][0]["results"]:  # nothing hashes line 1 of the binary database in its place
        assert r["partialFingerprints"]["primaryLocationLineHash"] == r["partialFingerprints"]["mcptapFinding/v1"]
    assert all("primaryLocationLineHash" not in r["partialFingerprints"] for r in from_file["runs"][0]["results"])


def test_the_run_names_its_invocation_command_line_and_times(incident):
    folder, _, sarif = incident
    (invocation,) = sarif["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["commandLine"] == "mcptap analyze incident.jsonl --format sarif"
    assert invocation["arguments"] == ["analyze", "incident.jsonl", "--format", "sarif"]
    assert invocation["workingDirectory"]["uri"] == folder.as_uri() + "/"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z", invocation["startTimeUtc"])
    assert invocation["startTimeUtc"] <= invocation["endTimeUtc"]


def test_sarif_writes_bidi_and_c1_characters_of_the_traffic_as_json_escapes(tmp_path):
    hostile = "s\u202e\u2066\u009b\x1b[2J"
    log = tmp_path / "hostile.jsonl"
    log.write_text(json.dumps({"session": hostile, "ts": 1.0, "direction": "s2c",
                               "raw": json.dumps({"jsonrpc": "2.0", "id": 7, "method": "x\u202e\u009b"},
                                                 ensure_ascii=False)}, ensure_ascii=False) + "\n", encoding="utf-8")
    result = cli("analyze", "hostile.jsonl", "--format", "sarif", cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    text = result.stdout.decode("utf-8")
    assert not [ch for ch in text if not ch.isprintable() and ch != "\n"]
    assert "\\u202e" in text and "\\u009b" in text
    sarif = json.loads(text)
    jsonschema.validate(sarif, SCHEMA)
    assert {r["properties"]["session"] for r in sarif["runs"][0]["results"]} == {hostile}


def test_past_what_code_scanning_takes_the_most_severe_results_are_written_and_the_rest_counted(tmp_path,
                                                                                                  monkeypatch):
    import io

    from mcptap.analysis.messages import Finding
    from mcptap.engine import Report
    from mcptap.report import sarif as sarif_mod

    monkeypatch.setattr(sarif_mod, "MAX_RESULTS", 50)
    findings = [Finding("s", n, None, "unknown-response-id" if n % 7 else "missing-response",
                 "error" if n % 7 == 0 else "warning", f"m{n}", None) for n in range(1, 301)]
    (tmp_path / "x.db").write_bytes(b"")
    out = io.StringIO()
    sarif_mod.write(Report(findings=findings, db_path=str(tmp_path / "x.db")), out, root=str(tmp_path), argv=["x"])
    sarif = json.loads(out.getvalue())
    jsonschema.validate(sarif, SCHEMA)
    results = sarif["runs"][0]["results"]
    errors = sum(1 for f in findings if f.severity == "error")
    assert len(results) == 50 and sum(r["level"] == "error" for r in results) == errors  # every error kept
    assert [r["properties"]["frame"] for r in results] == sorted(r["properties"]["frame"] for r in results)
    (note,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert note["message"]["text"].startswith("250 less severe findings left out")
    assert github_ingestion_problems(sarif, tmp_path) == []
