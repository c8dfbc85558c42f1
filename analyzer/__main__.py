"""`python -m analyzer` runs the mcptap command line, for environments without the script on PATH."""

from analyzer.cli import app

if __name__ == "__main__":  # not when a worker process (multiprocessing spawn) imports it
    app(prog_name="mcptap")
