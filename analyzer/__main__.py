"""`python -m analyzer` runs the mcptap command line, for environments without the script on PATH."""

from analyzer.cli import app

app(prog_name="mcptap")
