"""A property of the one redaction of an HTTP exchange (analyzer/redaction/exchanges.py): for
generated token answers, token-request forms, `form_post` pages and cookies (byte order marks,
base64 padding, duplicate names, cookies named as attributes, bodies up to several MB), no secret
byte is left in what capture stores (`exchange_row`, the proxy's own code path) nor in what
`mcptap redact` makes of a recording kept whole, and what capture stored is left as it is by a
second redaction (the bundle's check finds nothing). A few examples go through the CLI: a
database holding the exchange kept whole, `mcptap redact`, then the file, its write-ahead log and
`mcptap show --format json` hold none of the secrets."""

from __future__ import annotations

import codecs
import json
import sqlite3
import string
from urllib.parse import quote, quote_plus, urlencode

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcptap import store
from mcptap.addons.http.streams import exchange_row
from mcptap.redaction import Redactor
from mcptap.redaction.scrub import changed_exchange
from tests.conftest import mcptap
from tests.support.inprocess import cli
from tests.support.oauth import stored_bytes

TOKEN_NAMES = ["access_token", "refresh_token", "id_token", "registration_access_token", "client_secret",
               "accessToken", "refreshToken"]
FORM_NAMES = ["code", "code_verifier", "client_secret", "refresh_token", "client_assertion", "id_token_hint",
              "device_code", "password"]
COOKIE_NAMES = ["sid", "path", "domain", "expires", "max-age", "samesite", "secure", "__Host-s"]
SIZES = [0, 100, 70_000, 1 << 20, 3 << 20]  # padding beside the secrets, bytes

secrets = st.builds(lambda core, pad: "ZQX" + core + pad,
                    st.text(string.ascii_letters + string.digits + "-_.~+/", min_size=8, max_size=24),
                    st.sampled_from(["", "=", "=="]))


@st.composite
def exchanges(draw) -> tuple[dict, list[str]]:
    """A raw exchange snapshot (as addons/http/book.py queues it) and the secrets in it."""
    found: list[str] = []

    def secret() -> str:
        s = draw(secrets)
        found.append(s)
        return s

    members = [(name, secret()) for name in draw(st.lists(st.sampled_from(TOKEN_NAMES), min_size=1, max_size=4))]
    if draw(st.booleans()):
        members.insert(0, (members[0][0], secret()))  # a duplicate name, the first its own secret
    padding = "p" * draw(st.sampled_from(SIZES))
    tail = draw(st.booleans())  # the padding before or after the secrets
    spaced = draw(st.booleans())
    sep = ", " if spaced else ","
    colon = ": " if spaced else ":"
    parts = [f"{json.dumps(k)}{colon}{json.dumps(v)}" for k, v in members] + [f'"token_type"{colon}"Bearer"']
    parts = parts + [f'"padding"{colon}"{padding}"'] if tail else [f'"padding"{colon}"{padding}"'] + parts
    answer = ("{" + sep.join(parts) + "}").encode()
    if draw(st.booleans()):
        answer = codecs.BOM_UTF8 + answer
    fields = [(name, secret()) for name in draw(st.lists(st.sampled_from(FORM_NAMES), min_size=1, max_size=4))]
    form = urlencode([("grant_type", "authorization_code"), *fields] if draw(st.booleans()) else
                     [*fields, ("grant_type", "authorization_code")]).encode()
    if draw(st.booleans()):
        form = codecs.BOM_UTF8 + form
    cookies = [(name, secret()) for name in draw(st.lists(st.sampled_from(COOKIE_NAMES), min_size=1, max_size=4))]
    request = [(b"Host", b"127.0.0.1"), (b"Content-Type", b"application/x-www-form-urlencoded"),
               (b"Cookie", "; ".join(f"{n}={v}" for n, v in cookies).encode())]
    response = [(b"Content-Type", b"application/json"), *((b"Set-Cookie", f"{n}={v}; Path=/; Secure; HttpOnly".encode())
                                                          for n, v in cookies)]
    raw = {"id": "x1", "session_id": "s1", "method": "POST", "url": "http://127.0.0.1:9/token",
           "request_fields": request, "response_fields": response, "status": 200, "endpoint": None,
           "started_at": 1.0, "request_end": 1.1, "response_at": 1.2, "ended_at": 1.3, "outcome": "complete",
           "role": "auth-token", "request_body": form, "response_body": answer, "rewritten": None}
    return raw, found


def written(secret: str) -> list[bytes]:
    """The ways a secret may be written in what is stored: as it is, percent-encoded, in JSON."""
    return list({secret.encode(), quote_plus(secret).encode(), quote(secret, safe="").encode(),
                 json.dumps(secret).encode()})


def leaks(data: bytes, found: list[str]) -> list[str]:
    return [s for s in found if any(w in data for w in written(s))]


def row_bytes(row: dict) -> bytes:
    return json.dumps(row, ensure_ascii=False, default=str).encode("utf-8", "surrogateescape")


REDACTOR = Redactor(b"property-key")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(exchanges())
def test_no_generated_secret_is_stored_by_capture_or_left_by_redact(example):
    raw, found = example
    captured = exchange_row(raw, REDACTOR)
    assert leaks(row_bytes(captured), found) == []
    assert changed_exchange(REDACTOR, captured) is None  # a second redaction finds nothing: the bundle's check passes
    kept = exchange_row(raw, Redactor(keep=True))  # recorded with --no-redact ...
    assert leaks(row_bytes(kept), found)  # ... the secrets are there (those within the stored part)
    update = changed_exchange(REDACTOR, kept)  # ... and `mcptap redact` takes them out
    assert leaks(row_bytes({**kept, **(update or {})}), found) == []


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                                HealthCheck.function_scoped_fixture])
@given(exchanges())
def test_mcptap_redact_of_a_recording_kept_whole_leaves_no_generated_secret_in_the_files_or_on_the_terminal(
        tmp_path_factory, example):
    raw, found = example
    db = tmp_path_factory.mktemp("property") / "kept.db"
    conn = store.connect(db)
    try:
        store.insert_session(conn, {"id": "s1", "started_at": 1.0, "transport": "http", "label": "property"})
        store.upsert_exchange(conn, exchange_row(raw, Redactor(keep=True)))
    finally:
        conn.close()
    assert leaks(stored_bytes(db), found)
    done = cli("redact", "--db", str(db))
    assert done.returncode == 0, done.stderr
    shown = cli("show", "--db", str(db), "s1", "--format", "json")
    assert shown.returncode == 0, shown.stderr
    assert leaks(stored_bytes(db) + done.stdout + done.stderr + shown.stdout + shown.stderr, found) == []
    with sqlite3.connect(db) as check:
        assert check.execute("SELECT count(*) FROM exchanges WHERE redacted IS NOT NULL").fetchone() == (1,)
