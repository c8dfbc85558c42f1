"""Tests of the wire codecs (mcptap.wire): the exact JSON parser, line framing, SSE."""
