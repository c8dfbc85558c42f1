"""Tests of the store (mcptap.store): schema and migrations, the batched writer, the spool,
recorders writing one file at once."""
