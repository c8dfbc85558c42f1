"""mcptap's library: the calls every face makes (the command line, the pandas API, the demo): open
a database, import logs into it, analyse it and write the findings in a format of the registry,
write the HTML report, export (a file, a Parquet dataset, a collector), read the sessions, the paired view, the baseline and the cost. A face parses, makes one call, and prints; errors a user can fix are
MCPTapError (one line). Each call imports what it uses when it runs, so importing this module costs
almost nothing.

    from mcptap import api

    db = api.open_db("incident.db", fresh=True)
    for path, imported, how in api.import_files(db, ["incident.jsonl"]):
        print(path, [s.id for s in imported])
    with api.analyze(db) as done:
        print(api.reaches(done, "error"))
"""

from mcptap.api.databases import import_files, open_db, operations, session_list, session_of_log, sessions
from mcptap.api.exporting import export_dataset, export_log, is_database, send_otlp
from mcptap.api.servers import baseline, cost, read_baseline
from mcptap.api.judging import ENGINES, Analysis, analyze, analyze_missing, check_revision, reaches, write_analysis, write_rules
from mcptap.api.pages import report_html
from mcptap.api.meters import Meter
from mcptap.errors import AnalysisError, MCPTapError

__all__ = [
    "Analysis", "AnalysisError", "ENGINES", "MCPTapError", "Meter", "analyze", "analyze_missing", "baseline",
    "check_revision", "cost", "export_dataset", "export_log", "import_files", "is_database", "open_db", "operations",
    "reaches", "read_baseline", "report_html", "send_otlp", "session_list", "session_of_log", "sessions",
    "write_analysis", "write_rules",
]
