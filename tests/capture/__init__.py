"""Tests of capture (mcptap.addons, mcptap proxy): the stdio tee and its recorder process, the HTTP
tap, shipping, capture under faults."""
