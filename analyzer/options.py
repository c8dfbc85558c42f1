"""The words of options that several commands share (their help, their defaults), in one place
for both parsers: typer's (analyzer/cli/) and the small one of `mcptap record`
(analyzer/record.py), which a host's every server spawn goes through and which starts light.
Imports nothing."""

DEFAULT_DB = "mcptap.db"
DB_ENV = "MCPTAP_DB"
DB_HELP = "SQLite file to use (else $MCPTAP_DB, else ./mcptap.db)."
NO_REDACT_HELP = ("Store everything as it was (default: credentials in HTTP headers and in frame members "
                  "such as password, api_key, access_token are replaced by a keyed hash).")
REDACT_KEY_HELP = "Also redact frame members with this name (a glob, any case; repeatable)."
REDACT_PATH_HELP = "Also redact the frame member at this JSON path, e.g. $.params.arguments.token (repeatable)."
MAX_FRAME_HELP = ("The largest frame stored whole (decoded), in bytes or with K, M or G: a larger one is "
                  "stored cut at this size and marked with its full size (finding frame-truncated); the wire "
                  "passes untouched.")
MAX_FRAME_DEFAULT = "128M"  # analyzer/wire/bounded.py DEFAULT_MAX_FRAME, not imported here

OTLP_ENDPOINT_HELP = ("Send spans and metrics of the traffic, by OpenTelemetry's MCP semantic conventions, to this "
                      "OTLP/HTTP endpoint as frames cross (a base URL: /v1/traces and /v1/metrics are added; else "
                      "$OTEL_EXPORTER_OTLP_ENDPOINT and the other OTEL_EXPORTER_OTLP_* variables). Never slows the "
                      "wire: what cannot be sent is dropped and counted in the session.")
OTLP_ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                      "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
"""Variables that ask a capture for live telemetry (analyzer/report/otlp_env.py reads them all)."""

RECORD_HELP = """Run an MCP server behind a recording stdio tee: bytes pass through unchanged, every line
is recorded, and the exit status is the server's. Put it in a host's server config in place
of the server's own command."""
RECORD_EXAMPLE = "Example:  mcptap record --db ~/mcp.db --name time -- uvx mcp-server-time"
