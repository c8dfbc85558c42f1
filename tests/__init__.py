"""The test suite, a package so that its modules import each other by their place
(tests.support.sessions, tests.conftest): one folder per stage of mcptap, then the cross-cutting
ones (e2e, hostile, project)."""
