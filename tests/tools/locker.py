"""Test helper: holds an exclusive write lock on an mcptap database until its stdin closes.
Prints "locked" once it holds the lock."""

import sys

from mcptap import store

conn = store.connect(sys.argv[1])
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
conn.execute("COMMIT")
