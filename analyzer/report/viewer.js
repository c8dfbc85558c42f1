/* mcptap report viewer: the frame list with its display filter, the detail pane, the time-scaled
   sequence diagram, the stderr lines and the latency chart, drawn from the JSON document in
   #mcptap-data (analyzer/report/viewdata.py). Everything that comes from the traffic is shown
   through textContent or SVG text nodes, never as markup, and with the characters a browser would
   act on or hide written as their escapes (printable, as analyzer/wire/textsafe.py does). */
(function () {
  "use strict";

  // ---- the data ------------------------------------------------------------------------------
  const dataNode = document.getElementById("mcptap-data");
  const D = JSON.parse(dataNode.textContent);
  dataNode.textContent = "";  // the parsed document is what stays: the page's copy of the text goes
  const F = D.frames;
  const N = F.seq.length;
  const S = Int32Array.from(F.s), SEQ = Int32Array.from(F.seq), T = Float64Array.from(F.t);
  const DIR = Int8Array.from(F.d), K = Int8Array.from(F.k), M = Int32Array.from(F.m);
  const P = Int32Array.from(F.p), Z = Float64Array.from(F.z), X = Int32Array.from(F.x);
  const L = new Float64Array(N);
  for (let i = 0; i < N; i++) L[i] = F.l[i] === null ? NaN : F.l[i];
  const IDS = F.id, RAW = F.raw, BIN = F.b;
  F.s = F.seq = F.t = F.d = F.k = F.m = F.p = F.z = F.x = F.l = null;  // the typed copies are what stays
  const SESSIONS = D.sessions, METHODS = D.methods, KINDS = D.kinds, SEVERITIES = D.severities, CODES = D.codes;
  const SEV_RANK = { error: 0, warning: 1, info: 2 };

  // frames of a session are contiguous, in seq order
  const FIRST = new Int32Array(SESSIONS.length).fill(-1), END = new Int32Array(SESSIONS.length);
  for (let i = 0; i < N; i++) { if (FIRST[S[i]] < 0) FIRST[S[i]] = i; END[S[i]] = i + 1; }

  function indexOf(session, seq) {
    let lo = FIRST[session], hi = END[session];
    if (lo < 0) return -1;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (SEQ[mid] < seq) lo = mid + 1; else hi = mid; }
    return lo < END[session] && SEQ[lo] === seq ? lo : -1;
  }

  // findings by frame
  const FINDINGS = new Map();  // frame index -> [finding rows]
  const WORST = new Int8Array(N).fill(-1);
  for (const f of D.findings) {
    const i = f[1] ? indexOf(f[0], f[1]) : -1;
    if (i < 0) continue;
    if (!FINDINGS.has(i)) FINDINGS.set(i, []);
    FINDINGS.get(i).push(f);
    const r = SEV_RANK[f[4]] ?? 2;
    if (WORST[i] < 0 || r < WORST[i]) WORST[i] = r;
  }

  // ---- text from the traffic ----------------------------------------------------------------
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

  // ---- times: one format each, relative (seconds since the session started) and absolute (UTC)
  function absolute(seconds) {
    const us = Math.round(seconds * 1e6), whole = Math.floor(us / 1e6);
    return new Date(whole * 1000).toISOString().slice(0, 19) + "." + String(us - whole * 1e6).padStart(6, "0") + "Z";
  }
  function relative(t) { return "+" + t.toFixed(6); }
  function ms(seconds) { return isNaN(seconds) ? "" : (seconds * 1e3).toFixed(1) + " ms"; }
  let timeMode = "relative";
  function timeOf(i) { return timeMode === "relative" ? relative(T[i]) : absolute(SESSIONS[S[i]].started_at + T[i]); }

  function methodOf(i) { return M[i] >= 0 ? METHODS[M[i]] : ""; }
  function kindOf(i) { return K[i] >= 0 ? KINDS[K[i]] : ""; }
  function dirOf(i) { return D.directions[DIR[i]] || ""; }

  // ---- the display filter (filter.js parses it; here the tree becomes a predicate) ----------------
  const { parseFilter, FilterError, idText, NUMBER_FIELDS } = MCPTAP_FILTER;

  // the tree as a predicate over frame indices (filtersql.py's semantics: a missing field is false)
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
      session: () => true, seq: () => true, time: () => true, dir: () => true, size: () => true, text: () => true,
      kind: i => K[i] >= 0, method: i => M[i] >= 0, id: i => IDS[i] !== null, latency: i => !isNaN(L[i]),
      finding: i => FINDINGS.has(i), severity: i => FINDINGS.has(i), status: i => !isNaN(statusOf(i)),
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
    if (field === "method") return byTable(METHODS, textTest(cmp, v), i => M[i]);
    if (field === "kind") return byTable(KINDS, textTest(cmp, v), i => K[i]);
    if (field === "dir") return byTable(D.directions, textTest(cmp, v), i => DIR[i]);
    if (field === "id") {
      const t = cmp === "==" ? (s => s === idText(v)) : textTest(cmp, v);
      return i => IDS[i] !== null && t(IDS[i]);
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

  // ---- the view: the frames the filter keeps ----------------------------------------------------
  let VIEW = null, VN = N;  // null: every frame
  const at = k => VIEW === null ? k : VIEW[k];
  function positionOf(i) {  // i's place in the view, or -1
    if (VIEW === null) return i;
    let lo = 0, hi = VN;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (VIEW[mid] < i) lo = mid + 1; else hi = mid; }
    return lo < VN && VIEW[lo] === i ? lo : -1;
  }

  const filterBox = document.getElementById("filter"), status = document.getElementById("filter-status");
  function applyFilter(text, keepHash) {
    text = text.trim();
    if (!text) { VIEW = null; VN = N; }
    else {
      let pred;
      try { pred = parse(text); } catch (e) {
        filterBox.classList.add("bad");
        status.textContent = e.message;
        filterBox.dataset.applied = text;
        return;
      }
      const out = new Int32Array(N);
      let n = 0;
      for (let i = 0; i < N; i++) if (pred(i)) out[n++] = i;
      VIEW = out.subarray(0, n); VN = n;
    }
    filterBox.classList.remove("bad");
    status.textContent = (VIEW === null ? N.toLocaleString("en") + " frames" :
      VN.toLocaleString("en") + " of " + N.toLocaleString("en") + " frames");
    list.scrollTop = 0;
    layoutList();
    filterBox.dataset.applied = text;
    if (!keepHash) writeHash();
  }
  let timer = null;
  if (filterBox) filterBox.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(() => applyFilter(filterBox.value), N > 200000 ? 250 : 60);
  });

  // ---- the address: #filter=...&frame=SESSION:SEQ --------------------------------------------
  let selected = -1;
  function writeHash() {
    const params = new URLSearchParams();
    if (filterBox && filterBox.value.trim()) params.set("filter", filterBox.value.trim());
    if (selected >= 0) params.set("frame", SESSIONS[S[selected]].id + ":" + SEQ[selected]);
    const hash = params.toString().replace(/\+/g, "%20");
    try { history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search); }
    catch (e) { ignoreHash = true; location.hash = hash; }
  }
  let ignoreHash = false;
  function readHash() {
    if (ignoreHash) { ignoreHash = false; return; }
    const params = new URLSearchParams(location.hash.slice(1));
    const text = params.get("filter") || "";
    if (filterBox) { filterBox.value = text; applyFilter(text, true); }
    const ref = params.get("frame");
    if (ref) {
      const cut = ref.lastIndexOf(":");
      const sid = ref.slice(0, cut), seq = parseInt(ref.slice(cut + 1), 10);
      let n = SESSIONS.findIndex(s => s.id === sid);
      if (n < 0) n = SESSIONS.findIndex(s => s.id.startsWith(sid));
      const i = n >= 0 ? indexOf(n, seq) : -1;
      if (i >= 0) select(i, { scroll: true, keepHash: true });
      else status.textContent = "frame " + ref + " is not in this report";
    }
  }

  // ---- the frame list (only the rows in sight are in the page) -------------------------------------
  const list = document.getElementById("list"), spacer = document.getElementById("list-spacer");
  const ROW = 22, MAX_HEIGHT = 15000000;
  const pool = [];
  const COLS = ["c-s", "c-seq", "c-t", "c-d", "c-k", "c-m", "c-id", "c-p", "c-l", "c-z", "c-f"];
  function makeRow() {
    const r = el("div", "row");
    r.setAttribute("role", "row");
    for (const c of COLS) r.appendChild(el("span", c));
    r.addEventListener("click", () => select(+r.dataset.index, { scroll: false }));
    list.appendChild(r);
    return r;
  }
  function layoutList() {
    if (!list) return;
    spacer.style.height = Math.min(VN * ROW, MAX_HEIGHT) + "px";
    renderList();
  }
  function firstRow() {
    const height = Math.min(VN * ROW, MAX_HEIGHT);
    if (height < MAX_HEIGHT) return { first: Math.floor(list.scrollTop / ROW), top: k => k * ROW };
    const visible = Math.ceil(list.clientHeight / ROW);
    const frac = list.scrollTop / Math.max(1, height - list.clientHeight);
    const first = Math.round(frac * Math.max(0, VN - visible));
    return { first, top: k => list.scrollTop + (k - first) * ROW };
  }
  function renderList() {
    const { first, top } = firstRow();
    const count = Math.min(VN - first, Math.ceil(list.clientHeight / ROW) + 2);
    while (pool.length < count) pool.push(makeRow());
    for (let k = 0; k < pool.length; k++) {
      const r = pool[k];
      if (k >= count) { r.hidden = true; continue; }
      const i = at(first + k);
      r.hidden = false;
      r.dataset.index = i;
      r.style.top = top(first + k) + "px";
      r.className = "row" + (i === selected ? " selected" : WORST[i] >= 0 ? " hit" : "");
      const c = r.children, sess = SESSIONS[S[i]];
      c[0].textContent = printable(sess.id).slice(0, 13);
      c[0].title = printable(sess.id);
      c[1].textContent = SEQ[i];
      c[2].textContent = timeOf(i);
      c[3].textContent = DIR[i] === 0 ? "c2s →" : "s2c ←";
      c[4].textContent = kindOf(i);
      c[4].className = "c-k k-" + kindOf(i);
      c[5].textContent = printable(methodOf(i));
      c[5].title = c[5].textContent;
      c[6].textContent = printable(IDS[i]);
      c[7].textContent = P[i] > 0 ? P[i] : "";
      c[8].textContent = ms(L[i]);
      c[9].textContent = Z[i];
      const f = c[10];
      f.textContent = "";
      for (const g of FINDINGS.get(i) || []) f.appendChild(el("span", "badge " + g[4], printable(g[3])));
    }
  }
  if (list) {
    list.addEventListener("scroll", renderList, { passive: true });
    list.addEventListener("keydown", function (e) {
      if (e.key !== "ArrowDown" && e.key !== "ArrowUp") return;
      e.preventDefault();
      step(e.key === "ArrowDown" ? 1 : -1);
    });
  }
  function step(by) {  // the next (1) or previous (-1) frame of the view selected
    const p = selected >= 0 ? positionOf(selected) : -1;
    const q = Math.max(0, Math.min(VN - 1, p + by));
    if (VN) select(at(q), { scroll: true });
  }
  function scrollListTo(i) {
    const p = positionOf(i);
    if (p < 0) return;
    const height = Math.min(VN * ROW, MAX_HEIGHT);
    if (height < MAX_HEIGHT) {
      const y = p * ROW;
      if (y < list.scrollTop || y + ROW > list.scrollTop + list.clientHeight) list.scrollTop = Math.max(0, y - list.clientHeight / 3);
    } else {
      const visible = Math.ceil(list.clientHeight / ROW);
      list.scrollTop = (p / Math.max(1, VN - visible)) * (height - list.clientHeight);
    }
    renderList();
  }

  // ---- selecting a frame ---------------------------------------------------------------------
  function select(i, opts) {
    opts = opts || {};
    selected = i;
    if (opts.scroll) scrollListTo(i); else renderList();
    showDetail(i);
    showSession(S[i], i);
    if (!opts.keepHash) writeHash();
  }

  // ---- the detail pane -------------------------------------------------------------------------
  const detail = document.getElementById("detail");
  function jump(i, text) {
    const a = el("a", "jump", text);
    a.tabIndex = 0;
    a.addEventListener("click", () => select(i, { scroll: true }));
    return a;
  }
  function item(dl, name, value) {
    dl.appendChild(el("dt", null, name));
    const dd = el("dd");
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
    dl.appendChild(dd);
  }
  function showDetail(i) {
    const n = S[i], sess = SESSIONS[n];
    detail.textContent = "";
    detail.appendChild(el("h3", null, "Frame " + SEQ[i] + " of session " + printable(sess.id)));
    const dl = el("dl");
    item(dl, "session", printable(sess.id) + (sess.label ? " (" + printable(sess.label) + ")" : ""));
    item(dl, "time", relative(T[i]) + " s · " + absolute(sess.started_at + T[i]));
    item(dl, "direction", DIR[i] === 0 ? "c2s: client → server" : "s2c: server → client");
    item(dl, "kind", kindOf(i) || "(not analysed)");
    if (M[i] >= 0) item(dl, "method", printable(methodOf(i)));
    if (IDS[i] !== null) item(dl, "id", printable(IDS[i]));
    item(dl, "size", Z[i].toLocaleString("en") + " bytes" + (BIN[i] ? " (not UTF-8: shown with \\x escapes)" : ""));
    if (P[i] > 0) {
      const j = indexOf(n, P[i]);
      const text = "frame " + P[i] + (j >= 0 ? " (" + kindOf(j) + ")" : "");
      item(dl, "pair", j >= 0 ? jump(j, text) : text);
    }
    if (!isNaN(L[i])) item(dl, "latency", ms(L[i]));
    detail.appendChild(dl);

    const found = FINDINGS.get(i) || [];
    if (found.length) {
      detail.appendChild(el("h3", null, "Findings (" + found.length + ")"));
      for (const f of found) {
        const box = el("div", "finding");
        box.appendChild(el("span", "badge " + f[4], f[4]));
        box.appendChild(el("strong", null, printable(f[3])));
        if (f[2] >= 0) box.appendChild(el("span", "muted", " element " + f[2]));
        box.appendChild(el("div", null, printable(f[5])));
        const rule = CODES[f[3]];
        if (rule) {
          box.appendChild(el("div", "muted", rule.summary));
          const ref = el("div", "muted", "spec: " + rule.ref + " · ");
          const a = el("a", null, "docs/rules.md#" + f[3]);
          a.href = rule.help;  // a constant of the rule registry, not text from the traffic
          a.rel = "noreferrer noopener";
          ref.appendChild(a);
          box.appendChild(ref);
        }
        if (f[6]) {
          const j = indexOf(n, f[6]);
          if (j >= 0) { const r = el("div", null, "related: "); r.appendChild(jump(j, "frame " + f[6])); box.appendChild(r); }
        }
        detail.appendChild(box);
      }
    }

    const raw = RAW[i];
    detail.appendChild(el("h3", null, "Bytes"));
    if (raw === null) {
      detail.appendChild(el("p", "muted", "Not embedded (past the report's budget of " +
        D.limits.raw_budget.toLocaleString("en") + " characters); it is printed by"));
      detail.appendChild(el("pre", "bytes", "mcptap show --db " + printable(D.db) + " " + printable(sess.id) +
        " --format jsonl | jq -c 'select(.seq == " + SEQ[i] + ")'"));
    } else {
      detail.appendChild(el("pre", "bytes", printable(raw)));
      const whole = raw.length >= D.limits.shown_chars && Z[i] > raw.length ? false : true;
      if (!whole) detail.appendChild(el("p", "muted", "The first " + raw.length.toLocaleString("en") + " of " +
        Z[i].toLocaleString("en") + " bytes (the database holds the frame whole)."));
      if (whole && !BIN[i]) {
        const tree = jsonTree(raw);
        if (tree) { detail.appendChild(el("h3", null, "JSON")); detail.appendChild(tree); }
      }
    }
    if (X[i] >= 0) showExchange(D.exchanges[X[i]]);
  }

  function showExchange(ex) {
    detail.appendChild(el("h3", null, "HTTP exchange"));
    const dl = el("dl");
    item(dl, "request", printable(ex.method) + " " + printable(ex.url));
    item(dl, "status", ex.status === null ? "(no answer)" : String(ex.status));
    for (const [name, key] of [["Mcp-Session-Id", "mcp_session_id"], ["MCP-Protocol-Version", "protocol_version"],
                               ["SSE events", "events"], ["outcome", "outcome"], ["redacted", "redacted"]]) {
      if (ex[key] !== null && ex[key] !== undefined && ex[key] !== 0) item(dl, name, printable(ex[key]));
    }
    detail.appendChild(dl);
    for (const [title, key] of [["request headers", "request_headers"], ["response headers", "response_headers"]]) {
      let headers = [];
      try { headers = JSON.parse(ex[key] || "[]"); } catch (e) { headers = [["(unreadable)", String(ex[key])]]; }
      if (!headers.length) continue;
      const table = el("table", "headers");
      const cap = el("caption", "muted", title);
      table.appendChild(cap);
      for (const h of headers) {
        const tr = el("tr");
        tr.appendChild(el("td", "mono", printable(h[0])));
        tr.appendChild(el("td", "mono", printable(h[1])));
        table.appendChild(tr);
      }
      detail.appendChild(table);
    }
  }

  // JSON, pretty and collapsible; numbers as written (the reviver's source text, where the browser gives it)
  function Num(source) { this.source = source; }
  function jsonTree(text) {
    let value;
    try {
      value = JSON.parse(text, function (key, v, context) {
        return typeof v === "number" && context && context.source !== undefined ? new Num(context.source) : v;
      });
    } catch (e) { return null; }
    const root = el("div", "json mono");
    root.appendChild(node(null, value, 0));
    return root;
  }
  const MAX_CHILDREN = 500;
  function leafText(v) {
    if (v instanceof Num) return ["num", v.source];
    if (typeof v === "number") return ["num", String(v)];
    if (typeof v === "string") return ["str", printable(JSON.stringify(v))];
    return ["lit", String(v)];
  }
  function keyLabel(key) { return key === null ? "" : typeof key === "number" ? key + ": " : printable(JSON.stringify(key)) + ": "; }
  function node(key, v, depth) {
    if (v !== null && typeof v === "object" && !(v instanceof Num)) {
      const isArray = Array.isArray(v);
      const keys = isArray ? v.map((_, k) => k) : Object.keys(v);
      const d = el("details");
      const sum = el("summary");
      if (key !== null) sum.appendChild(el("span", "key", keyLabel(key)));
      sum.appendChild(document.createTextNode(isArray ? "[" + keys.length + " items]" : "{" + keys.length + " members}"));
      d.appendChild(sum);
      let built = false;
      const build = () => {
        if (built) return;
        built = true;
        for (const k of keys.slice(0, MAX_CHILDREN)) d.appendChild(node(k, v[k], depth + 1));
        if (keys.length > MAX_CHILDREN) d.appendChild(el("div", "leaf muted", "… " + (keys.length - MAX_CHILDREN) + " more"));
      };
      if (depth < 4) { d.open = true; build(); }
      d.addEventListener("toggle", build);
      return d;
    }
    const div = el("div", "leaf");
    if (key !== null) div.appendChild(el("span", "key", keyLabel(key)));
    const [cls, text] = leafText(v);
    div.appendChild(el("span", cls, text));
    return div;
  }

  // ---- the session's sequence diagram, time-scaled, and its stderr ---------------------------------
  const diagram = document.getElementById("diagram"), dspacer = document.getElementById("diagram-spacer");
  const zoomStatus = document.getElementById("zoom-status");
  const TOP = 40, MAX_ARROWS = 1500;
  let shown = -1, scale = 1, t0 = 0, t1 = 0, canvas = null;
  function showSession(n, i) {
    if (!diagram) return;
    if (n !== shown) {
      shown = n;
      t0 = FIRST[n] >= 0 ? Math.min(0, T[FIRST[n]]) : 0;
      t1 = t0;
      for (let j = FIRST[n]; j >= 0 && j < END[n]; j++) if (T[j] > t1) t1 = T[j];
      document.getElementById("diagram-title").textContent = "Sequence diagram of session " +
        printable(SESSIONS[n].id) + (SESSIONS[n].label ? " (" + printable(SESSIONS[n].label) + ")" : "");
      fit();
      showStderr(n);
    }
    if (i !== undefined && i >= 0) { centreOn(T[i]); markStderr(T[i]); }
    drawDiagram();
  }
  function height() { return Math.max(60, (t1 - t0) * scale) + TOP * 2; }
  function fit() {
    const span = t1 - t0;
    scale = span > 0 ? Math.max(1e-3, (diagram.clientHeight - TOP * 2 - 10) / span) : 1000;
    dspacer.style.height = height() + "px";
  }
  function yOf(t) { return TOP + (t - t0) * scale; }
  function centreOn(t) {
    const y = yOf(t);
    if (y < diagram.scrollTop + TOP || y > diagram.scrollTop + diagram.clientHeight - TOP) diagram.scrollTop = Math.max(0, y - diagram.clientHeight / 2);
  }
  function zoom(factor, anchorY) {
    if (shown < 0) return;
    const ay = anchorY === undefined ? diagram.clientHeight / 2 : anchorY;
    const t = t0 + (diagram.scrollTop + ay - TOP) / scale;
    const next = scale * factor;
    if ((t1 - t0) * next > MAX_HEIGHT) { zoomStatus.textContent = "the closest zoom"; return; }
    scale = next;
    dspacer.style.height = height() + "px";
    diagram.scrollTop = Math.max(0, yOf(t) - ay);
    drawDiagram();
  }
  function niceStep(pxPerSecond) {
    const raw = 60 / pxPerSecond, p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function drawDiagram() {
    if (shown < 0) return;
    const n = shown, w = Math.max(420, diagram.clientWidth - 4), h = diagram.clientHeight, top = diagram.scrollTop;
    const xc = 130, xs = Math.min(w - 190, xc + 420);
    if (canvas) canvas.remove();
    canvas = svg("svg", { width: w, height: h, viewBox: "0 " + top + " " + w + " " + h, "data-scale": scale.toPrecision(6) });
    canvas.style.top = top + "px";
    // lifelines and their names
    canvas.appendChild(svg("line", { x1: xc, y1: top, x2: xc, y2: top + h, stroke: "#999", "stroke-dasharray": "4 3" }));
    canvas.appendChild(svg("line", { x1: xs, y1: top, x2: xs, y2: top + h, stroke: "#999", "stroke-dasharray": "4 3" }));
    canvas.appendChild(svg("text", { x: xc, y: top + 14, "text-anchor": "middle", "font-weight": "600" }, "client"));
    canvas.appendChild(svg("text", { x: xs, y: top + 14, "text-anchor": "middle", "font-weight": "600" }, "server"));
    // the time axis
    const step = niceStep(scale), from = t0 + (top - TOP) / scale, to = t0 + (top + h - TOP) / scale;
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
      const y = yOf(t);
      canvas.appendChild(svg("line", { x1: 52, y1: y, x2: 60, y2: y, stroke: "#888" }));
      canvas.appendChild(svg("text", { x: 48, y: y + 4, "text-anchor": "end", fill: "#666" },
        (step < 1e-3 ? (t * 1e3).toFixed(3) + " ms" : t.toFixed(step < 1 ? Math.ceil(-Math.log10(step)) : 0) + " s")));
    }
    // the frames in sight
    let lo = FIRST[n], hi = END[n];
    if (lo < 0) { zoomStatus.textContent = "no frames"; diagram.appendChild(canvas); return; }
    const a = lowerBound(lo, hi, from - 1 / scale * 20), b = lowerBound(lo, hi, to + 1 / scale * 20);
    const total = b - a, every = Math.max(1, Math.ceil(total / MAX_ARROWS));
    let lanes = [];
    for (let j = a; j < b; j += every) {
      drawArrow(j, xc, xs);
      if (P[j] > 0 && K[j] === 0) lanes = bracket(j, indexOf(n, P[j]), xs, lanes);
    }
    // the brackets of requests before the window answered inside it
    for (let j = a; j < b; j += every) {
      if (P[j] > 0 && (K[j] === 2 || K[j] === 3)) {
        const q = indexOf(n, P[j]);
        if (q >= 0 && q < a) lanes = bracket(q, j, xs, lanes);
      }
    }
    zoomStatus.textContent = (every > 1 ? total.toLocaleString("en") + " frames in sight, 1 in " + every + " drawn: zoom in · " : "") +
      (1 / scale * 100 >= 1 ? (100 / scale).toFixed(2) + " s" : (100000 / scale).toFixed(2) + " ms") + " per 100 px";
    diagram.appendChild(canvas);
  }
  function lowerBound(lo, hi, t) {
    while (lo < hi) { const mid = (lo + hi) >> 1; if (T[mid] < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function drawArrow(j, xc, xs) {
    const y = yOf(T[j]), right = DIR[j] === 0;
    const x1 = right ? xc : xs, x2 = right ? xs : xc;
    const g = svg("g", { class: "arrow" + (j === selected ? " selected" : ""), "data-index": j });
    const colour = K[j] === 3 ? "#b00020" : K[j] >= 4 || K[j] < 0 ? "#9a4f00" : right ? "#1f5fa8" : "#2e7d32";
    g.appendChild(svg("line", { x1: x1, y1: y, x2: x2 + (right ? -6 : 6), y2: y, stroke: colour, "stroke-width": 1.6 }));
    g.appendChild(svg("path", { d: "M" + x2 + " " + y + " l" + (right ? -8 : 8) + " -4 v8 z", fill: colour }));
    const label = [kindOf(j), printable(methodOf(j)), IDS[j] !== null ? "id=" + printable(IDS[j]) : ""].filter(Boolean).join(" ");
    g.appendChild(svg("text", { x: (xc + xs) / 2, y: y - 3, "text-anchor": "middle", fill: "#333" }, cut(label, 60)));
    const found = FINDINGS.get(j);
    if (found) {
      const c = svg("circle", { cx: x2 + (right ? 10 : -10), cy: y, r: 5, fill: found.some(f => f[4] === "error") ? "#b00020" : "#b86200" });
      c.appendChild(svg("title", {}, found.map(f => printable(f[3])).join(", ")));
      g.appendChild(c);
    }
    g.appendChild(svg("title", {}, "frame " + SEQ[j] + " · " + relative(T[j]) + " s · " + label));
    g.appendChild(svg("rect", { x: Math.min(x1, x2), y: y - 12, width: Math.abs(x2 - x1), height: 16, fill: "transparent" }));
    g.addEventListener("click", () => select(j, { scroll: true }));
    canvas.appendChild(g);
  }
  function bracket(req, resp, xs, lanes) {
    if (resp < 0) return lanes;
    const y1 = yOf(T[req]), y2 = yOf(T[resp]);
    lanes = lanes.filter(end => end > y1);
    if (lanes.length >= 6) return lanes;
    const x = xs + 22 + lanes.length * 14;
    lanes.push(y2);
    canvas.appendChild(svg("path", { d: "M" + (x - 4) + " " + y1 + " h4 V" + y2 + " h-4", fill: "none", stroke: "#777" }));
    if (y2 - y1 > 14) canvas.appendChild(svg("text", { x: x + 4, y: (y1 + y2) / 2 + 4, fill: "#555" }, ms(L[req] || L[resp])));
    return lanes;
  }
  if (diagram) {
    diagram.addEventListener("scroll", drawDiagram, { passive: true });
    diagram.addEventListener("wheel", function (e) {
      if (!e.ctrlKey) return;
      e.preventDefault();
      zoom(e.deltaY < 0 ? 1.25 : 0.8, e.clientY - diagram.getBoundingClientRect().top);
    }, { passive: false });
    document.getElementById("zoom-in").addEventListener("click", () => zoom(2));
    document.getElementById("zoom-out").addEventListener("click", () => zoom(0.5));
    document.getElementById("zoom-fit").addEventListener("click", () => { fit(); diagram.scrollTop = 0; drawDiagram(); });
  }

  const stderrBox = document.getElementById("stderr");
  function showStderr(n) {
    if (!stderrBox) return;
    stderrBox.textContent = "";
    const lines = D.stderr[n] || [];
    if (!lines.length) { stderrBox.appendChild(el("p", "muted", "No stderr lines in this session.")); return; }
    for (const [t, text] of lines) {
      const d = el("div", null, relative(t) + "  " + printable(text));
      d.dataset.t = t;
      stderrBox.appendChild(d);
    }
  }
  function markStderr(t) {  // the lines of the second before the frame, the last one in sight
    if (!stderrBox) return;
    let last = null;
    for (const d of stderrBox.children) {
      const lt = parseFloat(d.dataset.t);
      const near = lt <= t && lt > t - 1;
      d.classList.toggle("near", near);
      if (lt <= t) last = d;
    }
    if (last) stderrBox.scrollTop = Math.max(0, last.offsetTop - stderrBox.offsetTop - stderrBox.clientHeight / 2);
  }

  // ---- the latency chart (the numbers of the table above it) ---------------------------------------
  function latencyChart() {
    const box = document.getElementById("latency-chart");
    if (!box || !D.latency.length) return;
    const rows = D.latency.filter(r => r.max_ms !== null).slice(0, 30);
    if (!rows.length) return;
    const lo = Math.max(1e-3, Math.min(...rows.map(r => r.p50_ms || r.max_ms))) / 1.5;
    const hi = Math.max(...rows.map(r => r.max_ms)) * 1.5;
    const w = 520, left = 150, right = 20, rowH = 22, h = rows.length * rowH + 40;
    const x = v => left + (Math.log(Math.max(v, lo)) - Math.log(lo)) / (Math.log(hi) - Math.log(lo)) * (w - left - right);
    const s = svg("svg", { width: w, height: h, viewBox: "0 0 " + w + " " + h, id: "latency-svg" });
    const decades = Math.log10(hi / lo), marks = decades < 2.5 ? [1, 2, 5] : [1];
    const ticks = [];
    for (let p = Math.pow(10, Math.floor(Math.log10(lo))); p <= hi; p *= 10) for (const m of marks) ticks.push(p * m);
    for (const p of ticks) {
      if (p < lo || p > hi) continue;
      s.appendChild(svg("line", { x1: x(p), y1: 10, x2: x(p), y2: h - 22, stroke: "#eee" }));
      s.appendChild(svg("text", { x: x(p), y: h - 8, "text-anchor": "middle", fill: "#666" }, p >= 1000 ? +(p / 1000).toPrecision(3) + " s" : +p.toPrecision(3) + " ms"));
    }
    rows.forEach(function (r, k) {
      const y = 20 + k * rowH;
      const g = svg("g", { class: "method" });
      g.appendChild(svg("text", { x: left - 8, y: y + 4, "text-anchor": "end" }, cut(printable(r.method), 24)));
      g.appendChild(svg("line", { x1: x(r.p50_ms), y1: y, x2: x(r.max_ms), y2: y, stroke: "#bbb", "stroke-width": 2 }));
      g.appendChild(svg("rect", { x: x(r.p50_ms), y: y - 5, width: Math.max(2, x(r.p95_ms) - x(r.p50_ms)), height: 10, fill: "#7aa7e0" }));
      g.appendChild(svg("circle", { cx: x(r.p50_ms), cy: y, r: 3.5, fill: "#1f5fa8" }));
      g.appendChild(svg("line", { x1: x(r.max_ms), y1: y - 6, x2: x(r.max_ms), y2: y + 6, stroke: "#b00020", "stroke-width": 2 }));
      g.appendChild(svg("title", {}, printable(r.method) + ": p50 " + r.p50_ms.toFixed(1) + " ms, p95 " + r.p95_ms.toFixed(1) +
        " ms, max " + r.max_ms.toFixed(1) + " ms, " + r.calls + " calls"));
      s.appendChild(g);
    });
    s.appendChild(svg("text", { x: left, y: 10, fill: "#666" }, "dot p50 · bar to p95 · red tick max (log scale)"));
    box.appendChild(s);
  }

  // ---- start ---------------------------------------------------------------------------------
  const timeButton = document.getElementById("time-mode");
  if (timeButton) timeButton.addEventListener("click", function () {
    timeMode = timeMode === "relative" ? "absolute" : "relative";
    timeButton.textContent = "time: " + timeMode;
    document.getElementById("viewer").classList.toggle("absolute", timeMode === "absolute");
    renderList();
  });
  const helpButton = document.getElementById("help-toggle");
  if (helpButton) helpButton.addEventListener("click", () => { const h = document.getElementById("help"); h.hidden = !h.hidden; });
  document.addEventListener("keydown", function (e) {
    const typing = e.target && (e.target.tagName === "INPUT" || e.target.tagName === "TEXTAREA");
    if (e.key === "Escape" && e.target === filterBox) { filterBox.blur(); if (list) list.focus(); return; }
    if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === "/" && filterBox) { e.preventDefault(); filterBox.focus(); }
    else if (e.key === "j" || e.key === "k") { e.preventDefault(); step(e.key === "j" ? 1 : -1); }
    else if (e.key === "Enter" && selected >= 0) {
      e.preventDefault();  // the selected frame's detail, in sight
      const d = document.getElementById("detail");
      if (d) d.scrollIntoView({ block: "nearest" });
    }
  });
  window.addEventListener("hashchange", readHash);
  latencyChart();
  if (list) {
    layoutList();
    if (SESSIONS.length) showSession(0);
    readHash();
  }
  document.body.dataset.ready = "1";
})();
