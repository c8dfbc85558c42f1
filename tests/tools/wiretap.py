"""Test instrument: a pass-through that logs the exact bytes each way, to check the recorder
against. Usage: wiretap.py LOGDIR -- CMD [ARGS...]; writes LOGDIR/c2s.bin and LOGDIR/s2c.bin."""

import os
import subprocess
import sys
import threading


def pump(src: int, dst: int, log_path: str, on_eof=None) -> None:
    with open(log_path, "wb") as log:
        while True:
            chunk = os.read(src, 1 << 16)
            if not chunk:
                break
            log.write(chunk)
            log.flush()
            try:
                os.write(dst, chunk)
            except OSError:
                pass
    if on_eof:
        on_eof()


def main() -> int:
    logdir, sep, *argv = sys.argv[1:]
    assert sep == "--"
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    threading.Thread(target=pump, args=(0, proc.stdin.fileno(), os.path.join(logdir, "c2s.bin"), proc.stdin.close),
                     daemon=True).start()
    out = threading.Thread(target=pump, args=(proc.stdout.fileno(), 1, os.path.join(logdir, "s2c.bin")))
    out.start()
    status = proc.wait()
    out.join()
    return status


if __name__ == "__main__":
    sys.exit(main())
