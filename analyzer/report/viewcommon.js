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
  /* What the diagram draws: one session (lanes client | server) or one run (the host's lane, then a
     lane per server, its sessions in start order). sessions: their numbers; off[n]: how long after
     the track's zero session n started (a frame is drawn at rec.t + off[rec.n]); lane[n]: its
     server's lane (1...); names: the lanes' names. `ref`: {n} or {run}; null when there is none. */
  function track(sessions, runs, ref) {
    if (ref.run === undefined) {
      const s = sessions[ref.n];
      if (!s) return null;
      return { key: "s:" + s.id, run: null, sessions: [ref.n], off: { [ref.n]: 0 }, lane: { [ref.n]: 1 },
               names: ["client", "server"], title: "Sequence diagram of session " + printable(s.id) + (s.label ? " (" + printable(s.label) + ")" : "") };
    }
    const run = (runs || []).find(r => r.run === ref.run) || (runs || []).find(r => r.handle === ref.run);
    if (!run) return null;
    const numbers = [], names = [run.host || "client"], off = {}, lane = {};
    run.sessions.forEach(function (id, k) {
      const n = sessions.findIndex(s => s.id === id);
      if (n < 0) return;
      numbers.push(n);
      off[n] = sessions[n].started_at - run.started_at;
      lane[n] = numbers.length;
      names.push(run.servers[k]);
    });
    if (!numbers.length) return null;
    return { key: "r:" + run.run, run: run.run, sessions: numbers, off, lane, names,
             title: "Timeline of run " + printable(run.handle) + " (" + printable(run.host) + ", " + numbers.length + " servers)" };
  }
  function trackSpan(tr, spanOf) {  // [first, last] of the track's sessions' spans, on its time
    let t0 = Infinity, t1 = -Infinity;
    for (const n of tr.sessions) { const [a, b] = spanOf(n); t0 = Math.min(t0, a + tr.off[n]); t1 = Math.max(t1, b + tr.off[n]); }
    return t0 <= t1 ? [Math.min(0, t0), t1] : [0, 0];
  }
  return { printable, el, svg, cut, absolute, relative, ms, key, track, trackSpan, SEV_RANK: { error: 0, warning: 1, info: 2 } };
})();
