/* mcptap report viewer: the frame list (virtualised: only the rows in sight are in the page), the
   display filter box (applied as you type, kept in the address with the selected frame), deep
   links, keyboard navigation, and what ties the panes together. Its frames come from the
   document embedded in the report (viewlocal.js) or from `mcptap view`'s server (viewlive.js). */
(function () {
  "use strict";
  const { printable, el, absolute, relative, ms } = MCPTAP;
  const dataNode = document.getElementById("mcptap-data"), liveNode = document.getElementById("mcptap-live");
  let source;
  if (liveNode) {
    source = MCPTAP.liveSource(JSON.parse(liveNode.textContent), changed);
  } else {
    const D = JSON.parse(dataNode.textContent);
    dataNode.textContent = "";  // the parsed document is what stays: the page's copy of the text goes
    source = MCPTAP.localSource(D);
  }
  const SESSIONS = source.sessions;
  let sel = null, selPos = -1, wantPos = null;
  const isSelected = r => sel !== null && r.n === sel.n && r.seq === sel.seq;
  const detail = MCPTAP.detailPane(source, select);
  const diagram = MCPTAP.diagramPane(source, select, isSelected);

  function changed(what) {  // the live source has more to show
    if (what === "window") { diagram.draw(); return; }
    if (what === "grow") { layoutList(); showCount(); diagram.grown(); } else renderList();
    if (wantPos !== null) { const p = wantPos; wantPos = null; selectAt(p); }
  }

  // ---- times ------------------------------------------------------------------------------------
  let timeMode = "relative";
  function timeOf(r) {  // since the session's start (a run's page: the run's), or UTC
    return timeMode === "relative" ? relative(r.t + source.offset(r.n)) : absolute(SESSIONS[r.n].started_at + r.t);
  }

  // ---- the filter ------------------------------------------------------------------------------------
  const filterBox = document.getElementById("filter"), status = document.getElementById("filter-status");
  function showCount() {
    if (!status || (filterBox && filterBox.classList.contains("bad"))) return;
    const all = source.all(), shown = source.total();
    if (filterBox && filterBox.dataset.applied && source.counting && source.counting()) {
      status.textContent = "counting… of " + all.toLocaleString("en") + " frames";
      return;
    }
    status.textContent = filterBox && filterBox.dataset.applied ? shown.toLocaleString("en") + " of " +
      all.toLocaleString("en") + " frames" : all.toLocaleString("en") + " frames";
  }
  function applyFilter(text, keepHash, then) {
    text = text.trim();
    source.setFilter(text, function (error) {
      filterBox.dataset.applied = text;
      if (error) {
        filterBox.classList.add("bad");
        status.textContent = error.message;
        return;
      }
      filterBox.classList.remove("bad");
      showCount();
      list.scrollTop = 0;
      selPos = -1;
      layoutList();
      if (sel) source.locate(sel.n, sel.seq, p => { if (sel) { selPos = p; renderList(); } });
      diagram.draw();  // the filter's frames marked
      if (!keepHash) writeHash();
      if (then) then();
    });
  }
  let timer = null;
  if (filterBox) filterBox.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(() => applyFilter(filterBox.value), source.delay);
  });

  // ---- the address: #run=RUN&filter=...&frame=SESSION:SEQ (run: the diagram shows its timeline) -------
  let ignoreHash = false;
  function writeHash() {
    const params = new URLSearchParams();
    if (diagram.run()) params.set("run", diagram.run());
    if (filterBox && filterBox.value.trim()) params.set("filter", filterBox.value.trim());
    if (sel) params.set("frame", SESSIONS[sel.n].id + ":" + sel.seq);
    const hash = params.toString().replace(/\+/g, "%20");
    try { history.replaceState(null, "", hash ? "#" + hash : location.pathname + location.search); }
    catch (e) { ignoreHash = true; location.hash = hash; }
  }
  function readHash() {
    if (ignoreHash) { ignoreHash = false; return; }
    const params = new URLSearchParams(location.hash.slice(1));
    const text = params.get("filter") || "", ref = params.get("frame"), run = params.get("run");
    if (run && !diagram.showRun(run) && status) status.textContent = "run " + run + " is not in this " + (source.live ? "database" : "report");
    const open = function () {
      if (!ref) return;
      const at = ref.lastIndexOf(":");
      const sid = ref.slice(0, at), seq = parseInt(ref.slice(at + 1), 10);
      let n = SESSIONS.findIndex(s => s.id === sid);
      if (n < 0) n = SESSIONS.findIndex(s => s.id.startsWith(sid));
      if (n < 0 || isNaN(seq)) { status.textContent = "frame " + ref + " is not in this " + (source.live ? "database" : "report"); return; }
      source.locate(n, seq, p => select(n, seq, { pos: p, scroll: true, keepHash: true }));
    };
    if (filterBox) { filterBox.value = text; applyFilter(text, true, open); } else open();
  }

  // ---- the frame list ------------------------------------------------------------------------------
  const list = document.getElementById("list"), spacer = document.getElementById("list-spacer");
  const ROW = 22, MAX_HEIGHT = 15000000;
  const pool = [];
  const COLS = ["c-s", "c-seq", "c-t", "c-d", "c-k", "c-m", "c-id", "c-p", "c-l", "c-z", "c-f"];
  function makeRow() {
    const r = el("div", "row");
    r.setAttribute("role", "row");
    for (const c of COLS) r.appendChild(el("span", c));
    r.addEventListener("click", function () {
      if (r.dataset.seq) select(+r.dataset.n, +r.dataset.seq, { pos: +r.dataset.pos });
    });
    list.appendChild(r);
    return r;
  }
  function layoutList() {
    if (!list) return;
    spacer.style.height = Math.min(source.total() * ROW, MAX_HEIGHT) + "px";
    renderList();
  }
  function firstRow() {
    const VN = source.total(), height = Math.min(VN * ROW, MAX_HEIGHT);
    if (height < MAX_HEIGHT) return { first: Math.floor(list.scrollTop / ROW), top: k => k * ROW };
    const visible = Math.ceil(list.clientHeight / ROW);
    const frac = list.scrollTop / Math.max(1, height - list.clientHeight);
    const first = Math.round(frac * Math.max(0, VN - visible));
    return { first, top: k => list.scrollTop + (k - first) * ROW };
  }
  function renderList() {
    if (!list) return;
    const { first, top } = firstRow();
    const count = Math.max(0, Math.min(source.total() - first, Math.ceil(list.clientHeight / ROW) + 2));
    const recs = source.rows(first, count);
    while (pool.length < count) pool.push(makeRow());
    for (let k = 0; k < pool.length; k++) {
      const row = pool[k], r = recs[k];
      if (k >= count) { row.hidden = true; continue; }
      row.hidden = false;
      row.style.top = top(first + k) + "px";
      row.dataset.pos = first + k;
      const c = row.children;
      if (!r) {  // asked of the server
        delete row.dataset.seq;
        row.className = "row pending";
        for (const cell of c) cell.textContent = "";
        c[1].textContent = "…";
        continue;
      }
      const sess = SESSIONS[r.n];
      row.dataset.index = r.i !== undefined ? r.i : first + k;
      row.dataset.n = r.n;
      row.dataset.session = sess.id;
      row.dataset.seq = r.seq;
      row.className = "row" + (isSelected(r) ? " selected" : r.f.length ? " hit" : "");
      c[0].textContent = printable(sess.id).slice(0, 13);
      c[0].title = printable(sess.id);
      c[1].textContent = r.seq;
      c[2].textContent = timeOf(r);
      c[3].textContent = r.d === 0 ? "c2s →" : "s2c ←";
      c[4].textContent = r.k;
      c[4].className = "c-k k-" + r.k;
      c[5].textContent = printable(r.m);
      c[5].title = c[5].textContent;
      c[6].textContent = printable(r.id);
      c[7].textContent = r.p > 0 ? r.p : "";
      c[8].textContent = ms(r.l);
      c[9].textContent = r.z;
      const f = c[10];
      f.textContent = "";
      for (const g of r.f) f.appendChild(el("span", "badge " + g[4], printable(g[3])));
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
  function step(by) {  // the next (1) or previous (-1) frame of the list selected
    if (!source.total()) return;
    selectAt(Math.max(0, Math.min(source.total() - 1, (sel ? selPos : -1) + by)));
  }
  function selectAt(pos) {
    const r = source.rows(pos, 1)[0];
    if (r) select(r.n, r.seq, { pos: pos, scroll: true }); else wantPos = pos;
  }
  function scrollListTo(p) {
    if (p < 0 || !list) return;
    const VN = source.total(), height = Math.min(VN * ROW, MAX_HEIGHT);
    if (height < MAX_HEIGHT) {
      const y = p * ROW;
      if (y < list.scrollTop || y + ROW > list.scrollTop + list.clientHeight) list.scrollTop = Math.max(0, y - list.clientHeight / 3);
    } else {
      const visible = Math.ceil(list.clientHeight / ROW);
      list.scrollTop = (p / Math.max(1, VN - visible)) * (height - list.clientHeight);
    }
  }

  // ---- selecting a frame -------------------------------------------------------------------------
  function select(n, seq, opts) {
    opts = opts || {};
    sel = { n: n, seq: seq };
    if (opts.pos !== undefined && !isNaN(opts.pos)) {
      selPos = opts.pos;
      if (opts.scroll) scrollListTo(selPos);
    } else {
      selPos = -1;
      source.locate(n, seq, function (p) {
        if (!sel || sel.n !== n || sel.seq !== seq) return;
        selPos = p;
        if (opts.scroll) scrollListTo(p);
        renderList();
      });
    }
    renderList();
    detail.show(n, seq, r => diagram.showSession(n, r));
    if (!opts.keepHash) writeHash();
  }

  // ---- start ---------------------------------------------------------------------------------------
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
    else if (e.key === "Enter" && sel) {
      e.preventDefault();  // the selected frame's detail, in sight
      const d = document.getElementById("detail");
      if (d) d.scrollIntoView({ block: "nearest" });
    }
  });
  window.addEventListener("hashchange", readHash);
  diagram.latencyChart();
  if (list) {
    layoutList();
    showCount();
    if (!(source.openRun && diagram.showRun(source.openRun)) && SESSIONS.length) diagram.showSession(0);
    readHash();
  }
  document.body.dataset.ready = "1";
})();
