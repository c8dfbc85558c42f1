"""An import's exchange records (frame-log JSONL, analyzer/wire/exchangelog.py) made into rows of
the `exchanges` table, and the frames that name them pointed at the id each is stored under."""

from __future__ import annotations

import json

from mcptap import store
from mcptap.ids import new_session_id


class ExchangeRows:
    """The exchange records of one import made into `exchanges` rows: credentials redacted as at
    capture (unless kept), and an id the database holds already (or any, with --new-id) replaced
    by a new one, which the frames that crossed that exchange then name."""

    def __init__(self, conn, new_id: bool, keep_credentials: bool):
        self._conn, self._new_id, self._keep = conn, new_id, keep_credentials
        self._redactor = None
        self._renamed: dict[tuple[str, str], str] = {}  # (session as written, exchange id) -> the new id
        self._taken: set[str] = set()  # ids this import stored

    def row(self, rec, session_id: str) -> dict:
        from mcptap.redaction.http import Redactor

        if self._redactor is None:
            self._redactor = Redactor(keep=self._keep)
        fields = self._bodies(self._redactor.exchange(rec.fields))
        xid = fields["id"]
        if self._new_id or xid in self._taken or store.exchange_exists(self._conn, xid):
            fields["id"] = self._renamed[(rec.session, xid)] = new_session_id()
        self._taken.add(fields["id"])
        row = {k: store.json_cell(v) if k in JSON_CELLS else store.text_cell(v) for k, v in fields.items()}
        if "redacted" in fields:
            row["redacted"] = json.dumps(fields["redacted"])
        row["session_id"] = session_id
        return row

    def _bodies(self, fields: dict) -> dict:
        """The exchange's bodies with their credentials redacted as at capture (unless kept)."""
        from mcptap.redaction.bodies import redact_body

        if self._keep:
            return fields
        said = []
        for body, kind, prefix in (("request_body", "request_type", ""),
                                   ("response_body", "response_type", "response:")):
            if fields.get(body) is not None:
                text, redacted = redact_body(self._redactor, fields.get(kind),
                                             fields[body].encode("utf-8", "surrogateescape"))
                fields[body] = text
                said += [prefix + name for name in redacted]
        added = [name for name in dict.fromkeys(said) if name not in (fields.get("redacted") or [])]
        if added:
            fields["redacted"] = (fields.get("redacted") or []) + added
        return fields

    def id_of(self, session: str, exchange: str | None) -> str | None:
        """The id a frame's exchange is stored under."""
        return self._renamed.get((session, exchange), exchange) if exchange is not None else None


JSON_CELLS = ("request_headers", "response_headers")
