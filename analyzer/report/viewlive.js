/* mcptap viewer, the frames of `mcptap view` (analyzer/report/live.py): asked of the server page
   by page as the list, the detail pane and the diagram (a session's or a run's) need them; the display filter evaluated by
   the server (the same language, compiled to SQL). A poll every POLL_MS tells when the database
   grew (a session being recorded), and the list grows with it. */
MCPTAP.liveSource = function (C, onChange) {
  "use strict";
  const PAGE = 100, PAGES_KEPT = 200, POLL_MS = 1000, COUNT_MS = 200;
  const sessions = C.summary.sessions.slice(), runs = (C.summary.runs || []).slice();
  let VN = C.summary.total, filterText = "", gen = 0, version = C.summary.changes, counting = false;
  let pages = new Map(), pending = new Set(), shownWindow = null, wantedWindow = null, windowBusy = false;

  function get(path, params, done, fail) {
    const query = new URLSearchParams(params).toString();
    fetch("/api/" + path + (query ? "?" + query : ""), {
      headers: C.token ? { "X-Mcptap-Token": C.token } : {}, credentials: "omit", cache: "no-store",
    }).then(r => r.json().then(body => [r.ok, body]))
      .then(([ok, body]) => { if (ok) done(body); else if (fail) fail(body); })
      .catch(e => { if (fail) fail({ error: String(e) }); });
  }
  function page(p) {
    if (pending.has(p)) return;
    pending.add(p);
    const g = gen;
    get("rows", { filter: filterText, offset: p * PAGE, limit: PAGE }, function (body) {
      if (g !== gen) return;
      pending.delete(p);
      if (pages.size >= PAGES_KEPT) pages.delete(pages.keys().next().value);
      pages.set(p, body.rows);
      const grew = body.total !== VN || !!body.counting !== counting;
      VN = body.total;
      if (body.counting && !counting) setTimeout(() => count(g), COUNT_MS);
      counting = !!body.counting;
      onChange(grew ? "grow" : "rows");
    }, function () { if (g === gen) pending.delete(p); });
  }
  function count(g) {  // the first page came before the filter's frames were all found: ask until they are
    get("rows", { filter: filterText, offset: 0, limit: 0 }, function (body) {
      if (g !== gen) return;
      if (body.counting) { setTimeout(() => count(g), COUNT_MS); return; }
      counting = false;
      shownWindow = null;  // the diagram's marks of the filter's frames, now that they are all found
      VN = body.total;
      onChange("grow");
    }, function () { if (g === gen) setTimeout(() => count(g), COUNT_MS * 4); });
  }
  let wgen = 0;  // the diagram's windows are the same whatever the filter: forgotten when the database grows
  function forget(grown) { gen++; counting = false; pages = new Map(); pending = new Set(); if (grown) { wgen++; shownWindow = null; } }

  function poll() {
    get("poll", {}, function (body) {
      if (body.version !== version) {
        get("summary", {}, function (summary) {
          sessions.length = 0;
          for (const s of summary.sessions) sessions.push(s);
          runs.length = 0;
          for (const r of summary.runs || []) runs.push(r);
          if (!filterText) VN = summary.total;
          forget(true);
          onChange("grow");
        });
      }
      version = body.version;
      setTimeout(poll, POLL_MS);
    }, () => setTimeout(poll, POLL_MS * 5));
  }
  setTimeout(poll, POLL_MS);

  return {
    live: true, sessions: sessions, runs: runs, openRun: null, codes: C.codes, latency: C.latency, db: C.db,
    total: () => VN, offset: () => 0, counting: () => counting, all: () => sessions.reduce((a, s) => a + s.frames, 0), delay: 250,
    rows(first, count) {
      const out = [];
      for (let k = first; k < first + count && k < VN; k++) {
        const p = Math.floor(k / PAGE), rows = pages.get(p);
        if (rows === undefined) { page(p); out.push(null); } else out.push(rows[k - p * PAGE] || null);
      }
      return out;
    },
    setFilter(text, done) {
      forget();
      filterText = text;
      const g = gen;
      pending.add(0);
      get("rows", { filter: text, offset: 0, limit: PAGE }, function (body) {
        if (g !== gen) return;
        pending.delete(0);
        VN = body.total;
        counting = !!body.counting;
        pages.set(0, body.rows);
        done(null);
        if (counting) setTimeout(() => count(g), COUNT_MS);
      }, function (err) {
        if (g !== gen) return;
        pending.delete(0);
        done({ message: err.error || "the server did not answer", column: err.column });
      });
    },
    locate(n, seq, cb) {
      get("locate", { filter: filterText, session: sessions[n].id, seq: seq }, b => cb(b.position), () => cb(-1));
    },
    detail(n, seq, cb) { get("frame", { session: sessions[n].id, seq: seq }, cb, () => cb(null)); },
    missingBytes() { return ["The database holds no bytes for this frame.", ""]; },
    span(tr) { return MCPTAP.trackSpan(tr, n => [sessions[n].t0, sessions[n].t1]); },
    window(tr, from, to, max) {
      const w = shownWindow;
      if (w && w.key === tr.key && w.filter === filterText && w.from <= from && w.to >= to &&
          (!w.density || (w.to - w.from) <= 3 * (to - from))) return w;
      wantedWindow = { tr: tr, from: from, to: to, max: max };
      if (!windowBusy) fetchWindow();
      return w && w.key === tr.key ? Object.assign({ stale: true }, w) : null;  // drawn until the answer comes
    },
    gaps(tr, cb) { get("gaps", which(tr), cb, () => cb([])); },
    stderr(n, cb) { get("stderr", { session: sessions[n].id }, cb, () => cb([])); },
  };
  function which(tr) { return tr.run !== null ? { run: tr.run } : { session: sessions[tr.sessions[0]].id }; }
  function fetchWindow() {
    const want = wantedWindow, g = wgen, filter = filterText;
    if (!want) return;
    wantedWindow = null;
    windowBusy = true;
    const pad = (want.to - want.from) / 2;  // a margin either side: a little scrolling needs no request
    get("window", Object.assign(which(want.tr), { from: want.from - pad, to: want.to + pad, max: 2 * want.max, filter: filter }),
      function (body) {
        windowBusy = false;
        if (g === wgen) shownWindow = { key: want.tr.key, from: want.from - pad, to: want.to + pad, rows: body.rows, every: body.every,
                                        total: body.total, density: body.density || null, filter: filter };
        if (wantedWindow) fetchWindow(); else onChange("window");
      }, function () { windowBusy = false; });
  }
};
