"""Test child: writes a file's bytes to stdout (or stderr) in chunks of given sizes, flushing
each. Usage: emit.py FILE [--stderr] [--chunks N,M,...] (sizes repeat cyclically)."""

import os
import sys


def main() -> None:
    path = sys.argv[1]
    fd = 2 if "--stderr" in sys.argv else 1
    sizes = [1 << 16]
    if "--chunks" in sys.argv:
        sizes = [int(x) for x in sys.argv[sys.argv.index("--chunks") + 1].split(",")]
    with open(path, "rb") as fh:
        data = fh.read()
    pos, i = 0, 0
    while pos < len(data):
        n = sizes[i % len(sizes)]
        view = memoryview(data)[pos:pos + n]
        while view:
            view = view[os.write(fd, view):]
        pos += n
        i += 1


if __name__ == "__main__":
    main()
