"""The `mcptap` command (`python -m mcptap`, and the installed script). `mcptap record` goes to its
own light parser before anything else is imported (analyzer/record.py: a host spawns every server
through it); every other command is the typer app (analyzer/cli/)."""

import sys


def main() -> None:
    if sys.argv[1:2] == ["record"]:
        from mcptap.record import main as record

        sys.exit(record(sys.argv[2:]))
    from mcptap.quick import main as quick

    status = quick(sys.argv[1:])
    if status is not None:
        sys.exit(status)
    from mcptap.cli import app

    app(prog_name="mcptap")


if __name__ == "__main__":  # not when a worker process (multiprocessing spawn) imports it
    main()
