"""Test child: prints "ready <pid>" then, per its mode, reports or ignores signals.
Usage: signals.py report|ignore-term|hold. report: on SIGTERM/SIGHUP/SIGINT print
"got <NAME>" and exit 0. ignore-term: ignore SIGTERM. hold: keep running until stdin closes."""

import os
import signal
import sys


def report(signum, _frame):
    os.write(1, f"got {signal.Signals(signum).name}\n".encode())
    os._exit(0)


mode = sys.argv[1]
if mode == "report":
    for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(s, report)
elif mode == "ignore-term":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
os.write(1, f"ready {os.getpid()}\n".encode())
if mode == "hold":
    while os.read(0, 1024):
        pass
else:
    while True:
        signal.pause()
