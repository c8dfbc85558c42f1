"""Tests of redaction (mcptap.redaction): secrets out of recordings, at capture and by mcptap
redact."""
