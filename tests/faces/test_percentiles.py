"""One percentile definition (nearest rank, analyzer/analysis/latency.py) for every face: on one
database, `mcptap analyze`'s table, its JSON `methods` list, mcptap.data.latency and the HTML
report's embedded statistics give the same p50, p95 and max per method (the viewer draws its
chart from the report's, tests/faces/test_viewer.py)."""

import json
import re
from pathlib import Path

from mcptap import data
from mcptap.report import html
from tests.conftest import mcptap
from tests.support.inprocess import cli

CORPUS = Path(__file__).resolve().parents[1] / "golden" / "corpus" / "demo.jsonl"


def test_the_table_the_json_the_data_api_and_the_report_give_the_same_percentiles(tmp_path):
    db = str(tmp_path / "p.db")
    assert cli("import", "--db", db, str(CORPUS)).returncode == 0
    table_text = cli("analyze", "--db", db, "--fail-on", "never").stdout.decode()
    section = table_text.split("service response time per method", 1)[1].strip().split("\n\n")[0].splitlines()[1:]
    table = {line.split()[0]: [float(v) for v in line.split()[-3:]] for line in section}  # p50, p95, max
    document = json.loads(cli("analyze", "--db", db, "--format", "json", "--fail-on", "never").stdout)
    from_json = {r["method"]: [round(r[k] * 1e3, 1) for k in ("p50_s", "p95_s", "max_s")] for r in document["methods"]}
    frame = data.latency(data.messages(db))
    from_data = {str(m): [round(r.p50_s * 1e3, 1), round(r.p95_s * 1e3, 1), round(r.max_s * 1e3, 1)]
                 for m, r in frame.iterrows()}
    page = html.render(db)
    embedded = json.loads(re.search(r'id="mcptap-data">(.*?)</script>', page, re.S).group(1))
    from_report = {r["method"]: [round(r[k], 1) for k in ("p50_ms", "p95_ms", "max_ms")] for r in embedded["latency"]}
    assert len(table) >= 3 and any(v[0] != v[1] for v in table.values())
    assert table == from_json == from_data == from_report
