/* mcptap viewer, a session's time-scaled sequence diagram in SVG, or a run's timeline (the host's
   lane and a lane per server, every session's frames on one time axis: MCPTAP.track) (arrows at their real times on
   viewaxis.js's axis, long idle gaps drawn short; labels that never overlap, those left out counted
   "+N"; latency brackets, findings and the display filter's frames marked; past a few hundred
   frames in sight a density band that a click zooms into; zoom and pan, an arrow selects its frame), the session's
   stderr lines in time order, and the latency chart per method (the numbers of the table). */
MCPTAP.diagramPane = function (source, select, isSelected) {
  "use strict";
  const { printable, el, svg, cut, relative, ms } = MCPTAP;
  const diagram = document.getElementById("diagram"), dspacer = document.getElementById("diagram-spacer");
  const zoomStatus = document.getElementById("zoom-status"), stderrBox = document.getElementById("stderr");
  const TOP = 40, MAX_HEIGHT = 15000000, LABEL_H = 14, CHAR_W = 7, AXIS_X = 74, XC = 160;
  const axis = MCPTAP.timeAxis(TOP);
  let shown = null, canvas = null, stderrOf = -1, gapsOf = null, boxes = [], fitted = true, gapsKnown = false;
  const at = r => r.t + shown.off[r.n];  // a frame's time on the track's axis
  function showSession(n, rec) {  // the session's diagram, or the run's timeline when the run shown holds it
    if (!diagram) return;
    if (shown && shown.run !== null && shown.off[n] !== undefined) show(shown, rec, n);
    else show(MCPTAP.track(source.sessions, source.runs, { n: n }), rec, n);
  }
  function showRun(run, rec) {  // whether there is such a run
    const tr = diagram && MCPTAP.track(source.sessions, source.runs, { run: run });
    if (!tr) return false;
    show(tr, rec, tr.sessions[0]);
    return true;
  }
  function show(tr, rec, n) {
    if (!tr) return;
    if (!shown || tr.key !== shown.key) {
      shown = tr;
      const [t0, t1] = source.span(tr);
      axis.set(t0, t1, []);
      gapsKnown = false;
      document.getElementById("diagram-title").textContent = tr.title;
      fit();
      gapsOf = tr.key;
      source.gaps(tr, function (gaps) {  // the idle gaps drawn short: fitted again once known
        if (gapsOf !== tr.key || shown.key !== tr.key) return;
        const [a, b] = source.span(tr), t = axis.tOf(diagram.scrollTop);
        axis.set(a, b, gaps);
        gapsKnown = true;
        if (fitted) { fit(); if (rec) centreOn(at(rec)); } else {  // zoomed meanwhile: the scale kept
          dspacer.style.height = axis.height() + "px";
          diagram.scrollTop = Math.max(0, axis.yOf(t));
        }
        draw();
      });
    }
    if (n !== stderrOf) showStderr(n);
    if (rec) { centreOn(at(rec)); markStderr(rec.t); }
    draw();
  }
  function grown() {  // the track's frames may reach further now (its sessions found again by key)
    if (!shown) return;
    const ref = shown.run !== null ? { run: shown.run } : { n: source.sessions.findIndex(s => "s:" + s.id === shown.key) };
    const tr = MCPTAP.track(source.sessions, source.runs, ref);
    if (tr) shown = tr;
    const span = source.span(shown), now = axis.span();
    if (span[1] > now[1]) { axis.extend(span[1]); dspacer.style.height = axis.height() + "px"; }
    draw();
  }
  function fit() {
    fitted = true;
    axis.fit(Math.max(60, diagram.clientHeight - TOP * 2 - 10));
    dspacer.style.height = axis.height() + "px";
    diagram.scrollTop = 0;
  }
  function centreOn(t) {
    const y = axis.yOf(t);
    if (y < diagram.scrollTop + TOP || y > diagram.scrollTop + diagram.clientHeight - TOP) diagram.scrollTop = Math.max(0, y - diagram.clientHeight / 2);
  }
  function zoom(factor, anchorY) {
    if (!shown) return;
    const ay = anchorY === undefined ? diagram.clientHeight / 2 : anchorY;
    const t = axis.tOf(diagram.scrollTop + ay), before = axis.scale();
    axis.setScale(before * factor);
    fitted = false;
    if (axis.height() > MAX_HEIGHT) { axis.setScale(before); zoomStatus.textContent = "the closest zoom"; return; }
    dspacer.style.height = axis.height() + "px";
    diagram.scrollTop = Math.max(0, axis.yOf(t) - ay);
    draw();
  }
  function niceStep(pxPerSecond) {
    const raw = 60 / pxPerSecond, p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function seconds(t, step) { return step < 1e-3 ? (t * 1e3).toFixed(Math.max(0, Math.ceil(-Math.log10(step * 1e3)))) + " ms" : t.toFixed(step < 1 ? Math.ceil(-Math.log10(step)) : 0) + " s"; }
  function span(d) { return d >= 1 ? d.toFixed(d >= 100 ? 0 : 1) + " s" : (d * 1e3).toFixed(d >= 0.1 ? 0 : 1) + " ms"; }
  /* Labels never overlap: a text is drawn only where its box (the width its characters may take)
     meets no box drawn before it. */
  function label(attrs, text) {
    const w = text.length * CHAR_W, x = attrs["text-anchor"] === "middle" ? attrs.x - w / 2 : attrs["text-anchor"] === "end" ? attrs.x - w : attrs.x;
    const box = [x, attrs.y - 10.5, x + w, attrs.y + 3.5];
    for (const b of boxes) if (box[0] < b[2] && b[0] < box[2] && box[1] < b[3] && b[1] < box[3]) return null;
    boxes.push(box);
    const node = svg("text", Object.assign({ class: "label" }, attrs), text);
    canvas.appendChild(node);
    return node;
  }
  /* The lanes' x: the client's at xc, the servers' after it, a session's server lane where it
     has always been (xc + 420 at most), a run's servers sharing the width. */
  function laneXs(w, count) {
    const gap = Math.min(420, (w - 170 - XC) / count), xs = [XC];
    for (let k = 1; k <= count; k++) xs.push(XC + k * gap);
    return xs;
  }
  function draw() {
    if (!shown || !diagram) return;
    const tr = shown, w = Math.max(420, diagram.clientWidth - 4), h = diagram.clientHeight, top = diagram.scrollTop;
    const X = laneXs(w, tr.names.length - 1), xc = X[0], xs = X[X.length - 1], scale = axis.scale();
    const xOf = r => X[tr.lane[r.n]];
    const from = axis.tOf(top - 20), to = axis.tOf(top + h + 20), most = Math.max(40, Math.floor(h / 3));
    const win = source.window(tr, from, to, most);
    if (win === null && canvas) return;  // asked of the server: drawn when it answers
    if (canvas) canvas.remove();
    canvas = svg("svg", { width: w, height: h, viewBox: "0 " + top + " " + w + " " + h, "data-scale": scale.toPrecision(6),
                          "data-gaps": gapsKnown ? 1 : 0, "data-lanes": X.length, "data-track": tr.key });
    canvas.style.top = top + "px";
    diagram.appendChild(canvas);
    boxes = [];
    for (const g of axis.idle()) {  // an idle gap: a band, the lifelines broken, its length on the axis
      if (g.y + axis.IDLE_Y < top || g.y > top + h) continue;
      const band = svg("g", { class: "idle" });
      band.appendChild(svg("rect", { x: 0, y: g.y + 3, width: w, height: axis.IDLE_Y - 6, fill: "#f0f0f0" }));
      for (const x of X) band.appendChild(svg("path", { d: "M" + (x - 6) + " " + (g.y + 8) + " l12 -4 M" + (x - 6) + " " + (g.y + axis.IDLE_Y - 4) + " l12 -4", stroke: "#888", fill: "none" }));
      band.appendChild(svg("title", {}, span(g.b - g.a) + " without a frame, drawn short"));
      canvas.appendChild(band);
    }
    const idle = axis.idle(), breaks = [];
    for (const g of idle) breaks.push([g.y, g.y + axis.IDLE_Y]);
    const gapped = y => breaks.some(b => y > b[0] - 2 && y < b[1] + 2);
    const nameChars = Math.max(4, Math.floor(((X.length > 2 ? X[2] - X[1] : 2 * (xs - xc)) - 8) / CHAR_W));
    X.forEach(function (x, k) {  // the lifelines and their names
      canvas.appendChild(svg("line", { class: "lifeline", "data-lane": k, x1: x, y1: top, x2: x, y2: top + h, stroke: "#999", "stroke-dasharray": "4 3" }));
      const whole = printable(tr.names[k]), shownName = cut(whole, nameChars);
      const name = label({ x: x, y: top + 14, "text-anchor": "middle", "font-weight": "600", class: "label lane-name" }, shownName);
      if (name && shownName !== whole) name.appendChild(svg("title", {}, whole));
    });
    const step = niceStep(scale);
    const cuts = [axis.span()[0]].concat(...idle.map(g => [g.a, g.b]), [axis.span()[1]]);
    for (let k = 0; k < cuts.length; k += 2) {  // the ticks of each stretch between idle gaps
      const a = Math.max(cuts[k], from), b = Math.min(cuts[k + 1], to);
      for (let t = Math.ceil(a / step) * step; t <= b; t += step) {
        const y = axis.yOf(t);
        if (gapped(y)) continue;
        canvas.appendChild(svg("line", { x1: AXIS_X - 10, y1: y, x2: AXIS_X - 2, y2: y, stroke: "#888" }));
        label({ x: AXIS_X - 14, y: y + 4, "text-anchor": "end", fill: "#666" }, seconds(t, step));
      }
    }
    if (win === null) { zoomStatus.textContent = "asking for the frames in sight…"; return; }
    if (!win.total) { zoomStatus.textContent = "no frames in sight"; return; }
    const asking = win.stale ? " · asking for the frames in sight…" : "";
    const per100 = (100 / scale >= 1e-2 ? (100 / scale).toFixed(2) + " s" : (100000 / scale).toFixed(2) + " ms") + " per 100 px";
    if (win.density) {
      densityBand(win.density, xc, xs, top, h);
      zoomStatus.textContent = win.total.toLocaleString("en") + " frames in sight, drawn as their density: zoom in (or click the band) for arrows · " + per100 + asking;
      return;
    }
    const brackets = {};  // per server lane, the ends of the latency brackets drawn beside it
    const rows = win.rows.filter(r => tr.lane[r.n] !== undefined).sort((p, q) => at(p) - at(q) || p.n - q.n || p.seq - q.seq);
    let last = null;  // the label drawn last, and how many labels after it are left out (its "+N")
    rows.forEach(function (r, k) {  // a label above its arrow, or below it when the next arrow is far enough
      const xr = xOf(r), g = arrow(r, xc, xr), y = axis.yOf(at(r)), next = k + 1 < rows.length ? axis.yOf(at(rows[k + 1])) : Infinity;
      if (y - 3 - 11 < top + 20) return;  // under the lifelines' names
      const text = cut([r.k, printable(r.m), r.id !== null && r.id !== undefined ? "id=" + printable(r.id) : ""].filter(Boolean).join(" "),
                       Math.max(8, Math.floor((xr - xc - 60) / CHAR_W)));
      let node = null, base = y - 3;
      for (const b of [y - 3, y + 13]) {
        if ((last && b - last.y < LABEL_H) || (b > y && next - y < 2 * LABEL_H + 4)) continue;
        node = label({ x: (xc + xr) / 2, y: b, "text-anchor": "middle", fill: "#333" }, text);
        if (node) { base = b; break; }
      }
      if (node) { node.classList.add("arrow-label"); g.appendChild(node); last = { y: base, node: node, more: 0, at: y }; return; }
      if (!last) return;
      last.more++;
      let more = last.node.querySelector("tspan");
      if (!more) {
        more = svg("tspan", { class: "more", fill: "#0b57d0", dx: 6 }, "");
        last.node.appendChild(more);
        const owner = last;  // a click zooms in until the labels it stands for have room
        more.addEventListener("click", function (e) { e.stopPropagation(); zoom(Math.min(64, Math.max(2, LABEL_H * (owner.more + 1) / Math.max(1, owner.span))), owner.at - diagram.scrollTop); });
      }
      last.span = y - last.at;
      more.textContent = "+" + last.more;
    });
    const off = r => tr.off[r.n], lane = r => tr.lane[r.n];
    for (const r of rows) if (r.p > 0 && r.k === "request" && r.pt !== null) brackets[lane(r)] = bracket(at(r), r.pt + off(r), r.l, xOf(r), brackets[lane(r)] || []);
    for (const r of rows) {  // the brackets of requests before the window answered inside it
      if (r.p > 0 && (r.k === "response" || r.k === "error") && r.pt !== null && r.pt + off(r) < from) {
        brackets[lane(r)] = bracket(r.pt + off(r), at(r), r.l, xOf(r), brackets[lane(r)] || []);
      }
    }
    zoomStatus.textContent = (win.every > 1 ? win.total.toLocaleString("en") + " frames in sight, 1 in " + win.every + " drawn: zoom in · " : "") +
      per100 + (idle.length ? " · " + idle.length + " idle gaps drawn short" : "") + asking;
  }
  function densityBand(d, xc, xs, top, h) {  // how many frames cross in each 2 px, as bars between the lifelines
    const ROW = 2, rows = Math.ceil(h / ROW) + 1, counts = new Float64Array(rows), hits = d.hits ? new Float64Array(rows) : null;
    const width = (d.to - d.from) / d.counts.length;
    for (let k = 0; k < d.counts.length; k++) {
      if (!d.counts[k]) continue;
      const r = Math.floor((axis.yOf(d.from + (k + 0.5) * width) - top) / ROW);
      if (r < 0 || r >= rows) continue;
      counts[r] += d.counts[k];
      if (hits) hits[r] += d.hits[k];
    }
    let most = 0;
    for (const c of counts) most = Math.max(most, c);
    const g = svg("g", { class: "density" }), mid = (xc + xs) / 2, full = xs - xc - 16;
    for (let r = 0; r < rows; r++) {
      if (!counts[r]) continue;
      const bw = Math.max(2, full * Math.sqrt(counts[r] / most));
      g.appendChild(svg("rect", { x: mid - bw / 2, y: top + r * ROW, width: bw, height: ROW, fill: "#7f9cc8" }));
      if (hits && hits[r]) {
        const hw = Math.max(3, full * Math.sqrt(hits[r] / most));
        g.appendChild(svg("rect", { class: "hit", x: mid - hw / 2, y: top + r * ROW, width: hw, height: ROW, fill: "#e8a000" }));
      }
    }
    g.appendChild(svg("title", {}, "frames per 2 px (widest: " + most.toLocaleString("en") + "); click to zoom in"));
    g.addEventListener("click", e => zoom(4, e.clientY - diagram.getBoundingClientRect().top));
    canvas.appendChild(g);
  }
  function arrow(r, xc, xs) {  // from the client's lane to the frame's server's (xs), or back
    const y = axis.yOf(at(r)), right = r.d === 0;
    const x1 = right ? xc : xs, x2 = right ? xs : xc;
    const cls = "arrow" + (isSelected(r) ? " selected" : "") + (r.v === 1 ? " hit" : r.v === 0 ? " dim" : "");
    const g = svg("g", { class: cls, "data-index": r.i !== undefined ? r.i : r.seq, "data-session": source.sessions[r.n].id, "data-seq": r.seq,
                         "data-lane": shown.lane[r.n] });
    const colour = r.k === "error" ? "#b00020" : (r.k === "batch" || r.k === "invalid" || r.k === "unparseable" || !r.k) ? "#9a4f00" : right ? "#1f5fa8" : "#2e7d32";
    if (r.v === 1) g.appendChild(svg("rect", { class: "mark", x: xc - 14, y: y - 4, width: 8, height: 8, fill: "#e8a000" }));
    g.appendChild(svg("line", { x1: x1, y1: y, x2: x2 + (right ? -6 : 6), y2: y, stroke: colour, "stroke-width": 1.6 }));
    g.appendChild(svg("path", { d: "M" + x2 + " " + y + " l" + (right ? -8 : 8) + " -4 v8 z", fill: colour }));
    if (r.f.length) {
      const c = svg("circle", { cx: x2 + (right ? 10 : -10), cy: y, r: 5, fill: r.f.some(f => f[4] === "error") ? "#b00020" : "#b86200" });
      c.appendChild(svg("title", {}, r.f.map(f => printable(f[3])).join(", ")));
      g.appendChild(c);
    }
    const text = [r.k, printable(r.m), r.id !== null && r.id !== undefined ? "id=" + printable(r.id) : ""].filter(Boolean).join(" ");
    g.appendChild(svg("title", {}, "frame " + r.seq + " · " + relative(r.t) + " s · " + text));
    g.appendChild(svg("rect", { x: Math.min(x1, x2), y: y - 4, width: Math.abs(x2 - x1), height: 8, fill: "transparent" }));
    g.addEventListener("click", () => select(r.n, r.seq, { scroll: true }));
    canvas.appendChild(g);
    return g;
  }
  function bracket(tq, ta, latency, xs, lanes) {
    const y1 = axis.yOf(tq), y2 = axis.yOf(ta);
    lanes = lanes.filter(end => end > y1);
    if (lanes.length >= 6) return lanes;
    const x = xs + 22 + lanes.length * 14;
    lanes.push(y2);
    canvas.appendChild(svg("path", { d: "M" + (x - 4) + " " + y1 + " h4 V" + y2 + " h-4", fill: "none", stroke: "#777" }));
    if (y2 - y1 > 14) label({ x: x + 4, y: (y1 + y2) / 2 + 4, fill: "#555" }, ms(latency !== null ? latency : ta - tq));
    return lanes;
  }
  if (diagram) {
    diagram.addEventListener("scroll", draw, { passive: true });
    diagram.addEventListener("wheel", function (e) {
      if (!e.ctrlKey) return;
      e.preventDefault();
      zoom(e.deltaY < 0 ? 1.25 : 0.8, e.clientY - diagram.getBoundingClientRect().top);
    }, { passive: false });
    document.getElementById("zoom-in").addEventListener("click", () => zoom(2));
    document.getElementById("zoom-out").addEventListener("click", () => zoom(0.5));
    document.getElementById("zoom-fit").addEventListener("click", () => { fit(); draw(); });
  }

  function showStderr(n) {
    if (!stderrBox) return;
    stderrOf = n;
    source.stderr(n, function (lines) {
      if (stderrOf !== n) return;
      stderrBox.textContent = "";
      if (!lines.length) { stderrBox.appendChild(el("p", "muted", "No stderr lines in this session.")); return; }
      for (const [t, text] of lines) {
        const d = el("div", null, relative(t) + "  " + printable(text));
        d.dataset.t = t;
        stderrBox.appendChild(d);
      }
    });
  }
  function markStderr(t) {  // the lines of the second before the frame, the last one in sight
    if (!stderrBox) return;
    let last = null;
    for (const d of stderrBox.children) {
      const lt = parseFloat(d.dataset.t);
      d.classList.toggle("near", lt <= t && lt > t - 1);
      if (lt <= t) last = d;
    }
    if (last) stderrBox.scrollTop = Math.max(0, last.offsetTop - stderrBox.offsetTop - stderrBox.clientHeight / 2);
  }

  function latencyChart() {
    const box = document.getElementById("latency-chart");
    if (!box || !source.latency.length) return;
    const rows = source.latency.filter(r => r.max_ms !== null).slice(0, 30);
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
  return { showSession, showRun, draw, grown, latencyChart, run: () => shown && shown.run };
};
