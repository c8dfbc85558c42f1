"""`mcptap help TOPIC`: the references shipped in the package (mcptap.help) printed as Markdown."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from mcptap.cli.common import app, one_line_errors


@app.command("help", short_help="Print a reference: filters, findings or formats.")
def help_topic(topic: Annotated[str, typer.Argument(metavar="TOPIC", help="filters, findings or formats.")]) -> None:
    """Print a reference shipped with mcptap, as Markdown: `filters` (the display filter language),
    `findings` (every finding code), `formats` (what export, import and analyze read and write).

    Example: mcptap help filters | less"""
    from mcptap import help as topics

    with one_line_errors():
        sys.stdout.write(topics.text(topic))

