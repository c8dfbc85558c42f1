/* mcptap viewer, shared helpers: text from the traffic shown only as text (printable writes the
   characters a browser would act on or hide as their escapes, as analyzer/wire/textsafe.py does),
   elements and SVG nodes made with textContent, and the one time format of each kind. */
const MCPTAP = (function () {
  "use strict";
  const UNPRINTABLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}]/gu;
  function hex(n, w) { return n.toString(16).padStart(w, "0"); }
  function printable(s) {
    if (s === null || s === undefined) return "";
    return String(s).replace(UNPRINTABLE, function (ch) {
      const c = ch.codePointAt(0);
      return c < 0x100 ? "\\x" + hex(c, 2) : c < 0x10000 ? "\\u" + hex(c, 4) : "\\U" + hex(c, 8);
    });
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  const SVGNS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    const e = document.createElementNS(SVGNS, tag);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function cut(s, n) { return s.length > n ? s.slice(0, n - 1) + "…" : s; }
  // times: relative (seconds since the session started) and absolute (UTC, microseconds)
  function absolute(seconds) {
    const us = Math.round(seconds * 1e6), whole = Math.floor(us / 1e6);
    return new Date(whole * 1000).toISOString().slice(0, 19) + "." + String(us - whole * 1e6).padStart(6, "0") + "Z";
  }
  function relative(t) { return "+" + t.toFixed(6); }
  function ms(seconds) { return seconds === null || seconds === undefined || isNaN(seconds) ? "" : (seconds * 1e3).toFixed(1) + " ms"; }
  /* A frame as both sources hand it to the faces: {n session number, seq, t seconds since the
     session started, d 0 c2s / 1 s2c, k kind, m method, id (JSON text or null), p paired seq (0:
     none), pt the pair's t (null: unknown), l latency s (NaN/null: none), z size, b 1 when the
     bytes are not UTF-8, f findings [n, seq, idx, code, severity, message, related], i (the
     embedded document's index, where there is one)}; its detail adds raw, x (its HTTP exchange). */
  function key(rec) { return rec.n + ":" + rec.seq; }
  return { printable, el, svg, cut, absolute, relative, ms, key, SEV_RANK: { error: 0, warning: 1, info: 2 } };
})();
