"""The commands that record: demo (the first run), record (the stdio tee), proxy (the HTTP
reverse proxy), addon-path (the mitmproxy addon for mitmdump -s), wrap and unwrap (a host's
config put behind mcptap record, and back)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from mcptap import extras, options
from mcptap.cli.common import (AllowOriginOption, DbOption, DEFAULT_DB, MaxFrameOption, MAX_FRAME_DEFAULT,
                               NoRedactOption, RedactKeyOption, RedactPathOption, app, fail, max_frame_of,
                               one_line_errors, redaction_of)


DEMO_FOLDER = "mcptap-demo"


@app.command(short_help='Record the bundled servers, then show and analyze what they said.')
def demo(ctx: typer.Context, db: DbOption = DEFAULT_DB) -> None:
    """Record a live session with the bundled MCP server through `mcptap record` and one with the
    bundled HTTP server through `mcptap proxy`, driven by the bundled client, then print the
    session list, the transcripts and the analysis, and write the HTML report. Without --db (or
    $MCPTAP_DB) it all goes into the folder mcptap-demo/ here.

    Example:  mcptap demo --db /tmp/demo.db
    """
    if getattr(ctx.get_parameter_source("db"), "name", None) == "DEFAULT":
        db = os.path.join(DEMO_FOLDER, "demo.db")
        os.makedirs(DEMO_FOLDER, exist_ok=True)
        typer.echo(f"Writing into {DEMO_FOLDER}{os.sep}\n")
    with one_line_errors():
        extras.need("proxy", "mcptap demo (its HTTP session goes through mcptap proxy)")
        extras.need("notebook", "mcptap demo (it writes the HTML report)")
        from mcptap.demo.run import run_demo

        raise typer.Exit(run_demo(db))


@app.command(short_help="Record a stdio MCP server through a tee.", context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             add_help_option=False, help=options.RECORD_HELP + "\n\n" + options.RECORD_EXAMPLE)
def record(ctx: typer.Context) -> None:
    """`mcptap record` has one parser, its own (analyzer/record.py): the script and `python -m mcptap`
    go there without typer; a caller of this app comes here and is forwarded."""
    from mcptap.record import main as record_main

    raise typer.Exit(record_main(list(ctx.args)))


@app.command(short_help='Record an HTTP MCP server through a reverse proxy.')
def proxy(
    upstream: Annotated[str, typer.Option("--upstream", metavar="URL",
                                          help="The MCP server's URL (http:// or https://).")],
    db: DbOption = DEFAULT_DB,
    listen: Annotated[Optional[str], typer.Option("--listen", metavar="[HOST:]PORT",
                                                  help="Where to listen (default 127.0.0.1:8808; port 0: any free port).")] = None,
    name: Annotated[Optional[str], typer.Option("--name", metavar="LABEL",
                                                help="A label for the sessions recorded.")] = None,
    keep_credentials: Annotated[bool, typer.Option(
        "--keep-credentials", help="The same as --no-redact.")] = False,
    no_redact: NoRedactOption = False,
    redact_key: RedactKeyOption = None,
    redact_path: RedactPathOption = None,
    insecure: Annotated[bool, typer.Option(
        "--insecure", help="An https upstream: do not verify its certificate (a self-signed test server).")] = False,
    max_frame: MaxFrameOption = MAX_FRAME_DEFAULT,
    allow_origin: AllowOriginOption = None,
    public_url: Annotated[Optional[str], typer.Option(
        "--public-url", metavar="URL",
        help="The origin clients reach the proxy under, when it is not the one they send as Host (behind a TLS "
             "front or another name): what OAuth metadata and challenges are rewritten to name.")] = None,
    metrics_listen: Annotated[Optional[str], typer.Option(
        "--metrics-listen", metavar="[HOST:]PORT",
        help="Also serve Prometheus /metrics of what is recorded here, on a loopback address only (port 0: any "
             "free port); the names `mcptap view` serves.")] = None,
    otlp_endpoint: Annotated[Optional[str], typer.Option(
        "--otlp-endpoint", metavar="URL", help=options.OTLP_ENDPOINT_HELP)] = None,
) -> None:
    """Run a recording reverse proxy (mitmproxy) in front of an HTTP MCP server: Streamable HTTP,
    legacy HTTP+SSE and stateless 2026-07-28 traffic pass through unchanged, SSE events as they
    come, and every frame is recorded with its HTTP exchange. Point the host at the proxy's URL
    (the same path as the server's). Ctrl-C stops it.

    Example:  mcptap proxy --db ~/mcp.db --upstream http://127.0.0.1:8000/mcp --listen 8808

    Example:  mcptap proxy --upstream http://127.0.0.1:8000/mcp --metrics-listen 9464
    """
    from mcptap import proxy as proxy_mod

    limit = max_frame_of(max_frame)
    with one_line_errors():
        extras.need("proxy", "mcptap proxy")
        if metrics_listen is not None:
            extras.need("metrics", "mcptap proxy --metrics-listen")
        status = proxy_mod.run(upstream, db, listen=listen, label=name, max_frame=limit,
                               redaction=redaction_of(no_redact or keep_credentials, redact_key, redact_path),
                               insecure=insecure, allow_origins=allow_origin or (), public_url=public_url,
                               on_ready=proxy_mod.say_listening(upstream, db), metrics_listen=metrics_listen,
                               on_metrics=proxy_mod.say_metrics, otlp_endpoint=otlp_endpoint)
    raise typer.Exit(status)


@app.command("addon-path", short_help='Print the path of the mitmproxy addon script.')
def addon_path() -> None:
    """Print the absolute path of the mitmproxy addon script, for the mitmdump (or mitmproxy,
    mitmweb) of this environment, in any of its modes.

    Example:  mitmdump -s "$(mcptap addon-path)" --set mcptap_db=$HOME/mcp.db
    """
    import importlib.util

    spec = importlib.util.find_spec("mcptap.addons.http.mitmdump_script")  # imports `mcptap.addons` alone, not mitmproxy
    typer.echo(os.path.abspath(spec.origin))


HostOption = Annotated[Optional[str], typer.Option(
    "--host", metavar="NAME", help="Take this host's own config file on this machine when CONFIG is left out: "
                                   "claude-desktop, claude-code (~/.claude.json), cursor, vscode.")]
DryRunOption = Annotated[bool, typer.Option("--dry-run", help="Print the change as a diff; write nothing.")]


def _config_path(config: str | None, host: str | None) -> str:
    from mcptap.hostconfig import hosts

    if (config is None) == (host is None):
        raise fail("name the CONFIG file, or --host NAME for that host's own (one of them)")
    if config is not None:
        return config
    try:
        return str(hosts.default_config(host))
    except ValueError as exc:
        raise fail(str(exc)) from None


@app.command(short_help="Put a host's stdio servers behind mcptap record.")
def wrap(
    config: Annotated[Optional[str], typer.Argument(metavar="CONFIG", show_default=False, help="The host's MCP config file (JSON, or VS Code's JSON "
                                                         "with comments).")] = None,
    db: DbOption = DEFAULT_DB,
    server: Annotated[Optional[list[str]], typer.Option("--server", metavar="NAME",
                                                        help="Only this server (repeatable); default every stdio "
                                                             "server.")] = None,
    host: HostOption = None,
    dry_run: DryRunOption = False,
) -> None:
    """Put every stdio server of a host's config (Claude Desktop, Claude Code, Cursor, VS Code)
    behind `mcptap record --db=DB --host-app=HOST --name=NAME --`, so that the host's own sessions are
    recorded, with the host's name (from --host or the file's name; its runs show it):
    only `command` changes and mcptap's words go at the head of `args`, the host's file is kept
    beside it (CONFIG.mcptap-backup), and wrapping twice changes nothing. HTTP servers are listed with the `mcptap proxy` command that records
    them. Restart the host (or reload its servers) afterwards; `mcptap unwrap` undoes it.

    Example:  mcptap wrap --host claude-desktop --db ~/mcp.db

    Example:  mcptap wrap .vscode/mcp.json --db ~/mcp.db --server time --dry-run
    """
    from mcptap.hostconfig import wrap as wrap_mod
    from mcptap.wire.textsafe import printable

    with one_line_errors():
        plan = wrap_mod.plan_wrap(_config_path(config, host), db, server or None, host)
        if dry_run:
            sys.stdout.write(plan.diff())
        elif wrap_mod.apply(plan) and plan.changed:
            typer.echo(printable(f"wrapped {len(plan.changed)} server{'s' if len(plan.changed) != 1 else ''} in "
                                 f"{plan.path}: {', '.join(plan.changed)} (recording into {os.path.abspath(db)})"))
        for where in plan.already:
            typer.echo(printable(f"already wrapped: {where}"))
        if not plan.changed and not plan.already:
            typer.echo(printable(f"no stdio server to wrap in {plan.path}"))
        for where, url in plan.http:
            typer.echo(printable(f"an HTTP server, left alone: {where} ({url}); to record it run "
                                 f"`{wrap_mod.proxy_hint(db, url)}` and point the host at the proxy"))


@app.command(short_help='Undo mcptap wrap.')
def unwrap(
    config: Annotated[Optional[str], typer.Argument(metavar="CONFIG", show_default=False, help="The host's MCP config file that `mcptap wrap` "
                                                         "changed.")] = None,
    host: HostOption = None,
    dry_run: DryRunOption = False,
) -> None:
    """Undo `mcptap wrap`: the file as it was, byte for byte, when nothing else changed it since;
    else every wrapped server's own command and args back in place, the rest as it is now.

    Example:  mcptap unwrap --host claude-desktop
    """
    from mcptap.hostconfig import wrap as wrap_mod
    from mcptap.wire.textsafe import printable

    with one_line_errors():
        plan = wrap_mod.plan_unwrap(_config_path(config, host))
        if dry_run:
            sys.stdout.write(plan.diff())
        elif wrap_mod.apply(plan):
            how = "restored as it was before wrap" if plan.restore else f"unwrapped {', '.join(plan.changed)}"
            typer.echo(printable(f"{plan.path}: {how}"))
        else:
            typer.echo(printable(f"nothing wrapped in {plan.path}"))
