/* mcptap viewer, the frames of the self-contained report: the JSON document in #mcptap-data
   (analyzer/report/viewdata.py) held as typed columns, and the display filter (filter.js parses
   it) compiled to a predicate over them with filtersql.py's semantics (a missing field is false). */
MCPTAP.localSource = function (D) {
  "use strict";
  const F = D.frames;
  const N = F.seq.length;
  const S = Int32Array.from(F.s), SEQ = Int32Array.from(F.seq), T = Float64Array.from(F.t);
  const DIR = Int8Array.from(F.d), K = Int8Array.from(F.k), M = Int32Array.from(F.m);
  const P = Int32Array.from(F.p), Z = Float64Array.from(F.z), X = Int32Array.from(F.x);
  const L = new Float64Array(N);
  for (let i = 0; i < N; i++) L[i] = F.l[i] === null ? NaN : F.l[i];
  const IDS = F.id, RAW = F.raw, BIN = F.b;
  F.s = F.seq = F.t = F.d = F.k = F.m = F.p = F.z = F.x = F.l = null;  // the typed copies are what stays
  const SESSIONS = D.sessions, METHODS = D.methods, KINDS = D.kinds;
  const { parseFilter, FilterError, idText } = MCPTAP_FILTER;

  // frames of a session are contiguous, in seq order
  const FIRST = new Int32Array(SESSIONS.length).fill(-1), END = new Int32Array(SESSIONS.length);
  for (let i = 0; i < N; i++) { if (FIRST[S[i]] < 0) FIRST[S[i]] = i; END[S[i]] = i + 1; }
  function indexOf(session, seq) {
    let lo = FIRST[session], hi = END[session];
    if (lo < 0) return -1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (SEQ[mid] < seq) lo = mid + 1; else hi = mid; }
    return lo < END[session] && SEQ[lo] === seq ? lo : -1;
  }
  const FINDINGS = new Map();  // frame index -> [finding rows]
  for (const f of D.findings) {
    const i = f[1] ? indexOf(f[0], f[1]) : -1;
    if (i < 0) continue;
    if (!FINDINGS.has(i)) FINDINGS.set(i, []);
    FINDINGS.get(i).push(f);
  }
  function methodOf(i) { return M[i] >= 0 ? METHODS[M[i]] : ""; }
  function kindOf(i) { return K[i] >= 0 ? KINDS[K[i]] : ""; }
  function rec(i) {
    const q = P[i] > 0 ? indexOf(S[i], P[i]) : -1;
    return { i: i, n: S[i], seq: SEQ[i], t: T[i], d: DIR[i], k: kindOf(i), m: methodOf(i), id: IDS[i], p: P[i],
             pt: q >= 0 ? T[q] : null, pk: q >= 0 ? kindOf(q) : "", l: L[i], z: Z[i], b: BIN[i],
             f: FINDINGS.get(i) || [] };
  }

  // ---- the display filter as a predicate over frame indices ------------------------------------
  const JSONS = new Map();  // frame index -> its parsed JSON (undefined: not JSON), made as filters need them
  function jsonOf(i) {
    if (JSONS.has(i)) return JSONS.get(i);
    let v;
    if (RAW[i] !== null && !BIN[i]) { try { v = JSON.parse(RAW[i]); } catch (e) { v = undefined; } }
    JSONS.set(i, v);
    return v;
  }
  function member(i, steps) {  // [found, value]
    let v = jsonOf(i);
    for (const s of steps) {
      if (v === null || typeof v !== "object" || Array.isArray(v) !== (typeof s === "number") ||
          !Object.prototype.hasOwnProperty.call(v, s)) return [false, undefined];
      v = v[s];
    }
    return [v !== undefined, v];
  }
  function textTest(op, v) {
    if (op === "==") return s => s === v[1];
    if (op === "contains") return s => s.includes(v[1]);
    if (op === "~") return s => v[2].test(s);
    const cmp = { "<": (a, b) => a < b, "<=": (a, b) => a <= b, ">": (a, b) => a > b, ">=": (a, b) => a >= b }[op];
    return a => cmp(a, v[1]);
  }
  function byTable(table, test, codeOf) {  // a test on a small table (methods, kinds...), once per entry
    const ok = table.map(v => test(String(v)));
    return i => { const c = codeOf(i); return c >= 0 && ok[c]; };
  }
  function statusOf(i) { const x = X[i]; return x >= 0 && D.exchanges[x].status !== null ? D.exchanges[x].status : NaN; }
  const NUMBER_COLUMNS = { seq: i => SEQ[i], time: i => T[i], latency: i => L[i], size: i => Z[i], status: statusOf };
  function compile(tree) {
    const op = tree[0];
    if (op === "or") { const a = compile(tree[1]), b = compile(tree[2]); return i => a(i) || b(i); }
    if (op === "and") { const a = compile(tree[1]), b = compile(tree[2]); return i => a(i) && b(i); }
    if (op === "not") { const a = compile(tree[1]); return i => !a(i); }
    if (op === "in") { const parts = tree[2].map(v => compile(["cmp", tree[1], "==", v])); return i => parts.some(p => p(i)); }
    if (op === "has") return has(tree[1]);
    const [, field, cmp, v] = tree;
    if (cmp === "!=") { const eq = compile(["cmp", field, "==", v]); return i => !eq(i); }
    return test(field, cmp, v);
  }
  function has(field) {
    if (Array.isArray(field)) return i => member(i, field)[0];
    return {
      session: () => true, run: i => !!SESSIONS[S[i]].run, server: i => SESSIONS[S[i]].label != null, seq: () => true, time: () => true, dir: () => true, size: () => true, text: () => true,
      kind: i => K[i] >= 0, method: i => M[i] >= 0, id: i => IDS[i] !== null, latency: i => !isNaN(L[i]),
      finding: i => FINDINGS.has(i), "finding.group": i => FINDINGS.has(i), severity: i => FINDINGS.has(i),
      status: i => !isNaN(statusOf(i)),
    }[field];
  }
  function test(field, cmp, v) {
    if (Array.isArray(field)) {
      return i => {
        const [found, x] = member(i, field);
        if (!found) return false;
        if (v[0] === "bool") return x === v[1];
        if (v[0] === "null") return x === null;
        if (v[0] === "num") return typeof x === "number" && textTest(cmp, v)(x);
        return typeof x === "string" && textTest(cmp, v)(x);
      };
    }
    if (field in NUMBER_COLUMNS) {
      const col = NUMBER_COLUMNS[field], t = cmp === "==" ? (a => a === v[1]) : textTest(cmp, v);
      return i => { const a = col(i); return !isNaN(a) && t(a); };
    }
    if (field === "session" && cmp === "==") return byTable(SESSIONS.map(s => s.id), s => s.startsWith(v[1]), i => S[i]);
    if (field === "session") return byTable(SESSIONS.map(s => s.id), textTest(cmp, v), i => S[i]);
    if (field === "run" || field === "server") {  // of the frame's session: its run (== also a start or end of it), its label
      const t = field === "run" && cmp === "==" ? (r => r.startsWith(v[1]) || r.endsWith(v[1])) : textTest(cmp, v);
      const ok = SESSIONS.map(s => { const x = field === "run" ? s.run : s.label; return x != null && t(x); });
      return i => ok[S[i]];
    }
    if (field === "method") return byTable(METHODS, textTest(cmp, v), i => M[i]);
    if (field === "kind") return byTable(KINDS, textTest(cmp, v), i => K[i]);
    if (field === "dir") return byTable(D.directions, textTest(cmp, v), i => DIR[i]);
    if (field === "id") {
      const t = cmp === "==" ? (s => s === idText(v)) : textTest(cmp, v);
      return i => IDS[i] !== null && t(IDS[i]);
    }
    if (field === "finding.group") {  // a finding's code's group, from the codes' table
      const t = textTest(cmp, v);
      return i => (FINDINGS.get(i) || []).some(f => { const c = D.codes[f[3]]; return !!c && t(c.group); });
    }
    if (field === "finding" || field === "severity") {
      const col = field === "finding" ? 3 : 4, t = textTest(cmp, v);
      return i => (FINDINGS.get(i) || []).some(f => t(f[col]));
    }
    if (field === "text") { const t = textTest(cmp, v); return i => RAW[i] !== null && t(RAW[i]); }
    throw new FilterError("unknown field " + "'" + String(field) + "'", 1);
  }
  function parse(text) { return compile(parseFilter(text)); }

  // for tests and users' scripts: the frames a filter selects ("LABEL-or-SESSION:SEQ"), or its error
  window.mcptapFilter = function (text) {
    try {
      const pred = parse(text), out = [];
      for (let i = 0; i < N; i++) if (pred(i)) out.push((SESSIONS[S[i]].label || SESSIONS[S[i]].id) + ":" + SEQ[i]);
      return { frames: out };
    } catch (e) {
      if (e instanceof FilterError) return { error: e.message, column: e.column };
      throw e;
    }
  };

  // ---- the view: the frames the filter keeps ---------------------------------------------------
  // a run's page (`report --run`): the list in time order across the run's sessions (ORDER: the
  // frames' indices in that order, RANK: each one's place), times from the run's start
  const RUN = D.open_run ? (D.runs || []).find(r => r.run === D.open_run) : null;
  const BASE = new Float64Array(SESSIONS.length);
  let ORDER = null, RANK = null;
  if (RUN) {
    SESSIONS.forEach((s, n) => { BASE[n] = s.started_at - RUN.started_at; });
    ORDER = new Int32Array(N);
    for (let i = 0; i < N; i++) ORDER[i] = i;
    ORDER.sort((a, b) => (T[a] + BASE[S[a]]) - (T[b] + BASE[S[b]]) || a - b);
    RANK = new Int32Array(N);
    for (let k = 0; k < N; k++) RANK[ORDER[k]] = k;
  }
  const place = i => RANK === null ? i : RANK[i];
  let VIEW = null, VN = N;  // null: every frame; else the filter's frames' indices in list order
  const at = k => VIEW === null ? (ORDER === null ? k : ORDER[k]) : VIEW[k];
  function positionOf(i) {
    if (i < 0) return -1;
    if (VIEW === null) return place(i);
    const p = place(i);
    let lo = 0, hi = VN;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (place(VIEW[mid]) < p) lo = mid + 1; else hi = mid; }
    return lo < VN && VIEW[lo] === i ? lo : -1;
  }
  function spanOf(n) {
    const t0 = FIRST[n] >= 0 ? Math.min(0, T[FIRST[n]]) : 0;
    let t1 = t0;
    for (let j = FIRST[n]; j >= 0 && j < END[n]; j++) if (T[j] > t1) t1 = T[j];
    return [t0, t1];
  }
  function lowerBound(lo, hi, t) {
    while (lo < hi) { const mid = (lo + hi) >> 1; if (T[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  return {
    live: false, sessions: SESSIONS, runs: D.runs || [], openRun: D.open_run || null, codes: D.codes, latency: D.latency, db: D.db,
    total: () => VN, all: () => N, offset: n => BASE[n], delay: N > 200000 ? 250 : 60,
    rows(first, count) { const out = []; for (let k = first; k < first + count && k < VN; k++) out.push(rec(at(k))); return out; },
    setFilter(text, done) {
      if (!text) { VIEW = null; VN = N; done(null); return; }
      let pred;
      try { pred = parse(text); } catch (e) { if (e instanceof FilterError) { done(e); return; } throw e; }
      const out = new Int32Array(N);
      let n = 0;
      for (let k = 0; k < N; k++) { const i = ORDER === null ? k : ORDER[k]; if (pred(i)) out[n++] = i; }
      VIEW = out.subarray(0, n); VN = n;
      done(null);
    },
    locate(n, seq, cb) { cb(positionOf(indexOf(n, seq))); },
    detail(n, seq, cb) {
      const i = indexOf(n, seq);
      if (i < 0) { cb(null); return; }
      const r = rec(i);
      r.raw = RAW[i];
      r.cut = RAW[i] !== null && RAW[i].length >= D.limits.shown_chars && Z[i] > RAW[i].length;
      r.x = X[i] >= 0 ? D.exchanges[X[i]] : null;
      cb(r);
    },
    missingBytes(sess, seq) {
      return ["Not embedded (past the report's budget of " + D.limits.raw_budget.toLocaleString("en") +
              " characters); it is printed by", "mcptap show --db " + D.db + " " + sess.id +
              " --format jsonl | jq -c 'select(.seq == " + seq + ")'"];
    },
    span(tr) { return MCPTAP.trackSpan(tr, spanOf); },
    window(tr, from, to, max) {  // the track's frames in a time window, or past `max` of them how many in each slice
      const parts = [];
      let total = 0;
      for (const n of tr.sessions) {
        if (FIRST[n] < 0) continue;
        const off = tr.off[n], a = lowerBound(FIRST[n], END[n], from - off), b = lowerBound(FIRST[n], END[n], to - off);
        parts.push([a, b, off]);
        total += b - a;
      }
      if (total <= max) {
        const rows = [];
        for (const [a, b] of parts) for (let j = a; j < b; j++) { const r = rec(j); if (VIEW !== null) r.v = positionOf(j) >= 0 ? 1 : 0; rows.push(r); }
        return { rows, every: 1, total };
      }
      const B = 4096, width = (to - from) / B, counts = new Int32Array(B), hits = VIEW === null ? null : new Int32Array(B);
      for (const [a, b, off] of parts) {
        const slice = j => Math.max(0, Math.min(B - 1, Math.floor((T[j] + off - from) / width)));
        for (let j = a; j < b; j++) counts[slice(j)]++;
        if (hits && ORDER !== null) { for (let j = a; j < b; j++) if (positionOf(j) >= 0) hits[slice(j)]++; }
        else if (hits) {
          let lo = 0, hi = VN;
          while (lo < hi) { const mid = (lo + hi) >> 1; if (VIEW[mid] < a) lo = mid + 1; else hi = mid; }
          for (let k = lo; k < VN && VIEW[k] < b; k++) hits[slice(VIEW[k])]++;
        }
      }
      return { rows: [], every: 1, total, density: { from, to, counts, hits } };
    },
    gaps(tr, cb) {  // the track's 64 longest stretches without a frame, [from, to]
      const out = [], [t0, t1] = this.span(tr), least = (t1 - t0) / 5000;
      let times;
      if (tr.sessions.length === 1) times = T.subarray(Math.max(0, FIRST[tr.sessions[0]]), FIRST[tr.sessions[0]] >= 0 ? END[tr.sessions[0]] : 0);
      else {  // the run's frames from all its sessions, in time order
        const all = [];
        for (const n of tr.sessions) for (let j = FIRST[n]; j >= 0 && j < END[n]; j++) all.push(T[j] + tr.off[n]);
        times = Float64Array.from(all).sort();
      }
      if (times.length) {
        const at = [];
        if (times[0] - t0 > least) out.push([t0, times[0]]);
        for (let j = 1; j < times.length; j++) if (times[j] - times[j - 1] > least) at.push(j);
        at.sort((x, y) => (times[y] - times[y - 1]) - (times[x] - times[x - 1]));
        for (const j of at.slice(0, 64)) out.push([times[j - 1], times[j]]);
      }
      cb(out);
    },
    stderr(n, cb) { cb(D.stderr[n] || []); },
  };
};
