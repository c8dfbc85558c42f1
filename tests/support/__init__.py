"""Helpers the tests share (fixtures stay in tests/conftest.py): sessions built in a line or two,
HTTP servers and relays, the npm servers, clients driven by a plan."""
