"""The recorder processes' priority (addons/shipping/background.py): a recorder that makes itself
idle after the recording ended (it was still starting when the first `hurry` came) is hurried
again while it is waited for, so that a busy machine cannot keep it waiting for the CPU."""

from __future__ import annotations

import subprocess
import sys

from mcptap.addons.shipping.background import wait_hurried

LATE_IDLE = r"""
import os, sys, time
sys.stdin.read()  # the parent says when: after its first hurry
os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
deadline = time.monotonic() + 30
while os.sched_getscheduler(0) != os.SCHED_OTHER:
    if time.monotonic() > deadline:
        sys.exit(3)
    time.sleep(0.01)
"""


def test_a_recorder_that_goes_idle_after_the_first_hurry_is_hurried_again_while_waited_for():
    proc = subprocess.Popen([sys.executable, "-c", LATE_IDLE], stdin=subprocess.PIPE)
    try:
        from mcptap.addons.shipping.background import hurry

        hurry(proc.pid)  # the recording ends while the recorder still starts
        proc.stdin.close()  # and only now does it make itself idle
        assert wait_hurried(proc, every=0.1) == 0  # hurried again: it saw SCHED_OTHER (3: it stayed idle)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_waiting_for_a_recorder_that_ends_returns_its_status():
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(5)"])
    assert wait_hurried(proc, every=0.1) == 5
