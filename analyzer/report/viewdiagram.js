/* mcptap viewer, a session's time-scaled sequence diagram in SVG (arrows at their real times,
   latency brackets, findings marked, zoom and pan, an arrow selects its frame), the session's
   stderr lines in time order, and the latency chart per method (the numbers of the table). */
MCPTAP.diagramPane = function (source, select, isSelected) {
  "use strict";
  const { printable, el, svg, cut, relative, ms } = MCPTAP;
  const diagram = document.getElementById("diagram"), dspacer = document.getElementById("diagram-spacer");
  const zoomStatus = document.getElementById("zoom-status"), stderrBox = document.getElementById("stderr");
  const TOP = 40, MAX_ARROWS = 1500, MAX_HEIGHT = 15000000;
  let shown = -1, scale = 1, t0 = 0, t1 = 0, canvas = null, stderrOf = -1;
  function showSession(n, rec) {
    if (!diagram) return;
    if (n !== shown) {
      shown = n;
      [t0, t1] = source.span(n);
      const s = source.sessions[n];
      document.getElementById("diagram-title").textContent = "Sequence diagram of session " +
        printable(s.id) + (s.label ? " (" + printable(s.label) + ")" : "");
      fit();
      showStderr(n);
    }
    if (rec) { centreOn(rec.t); markStderr(rec.t); }
    draw();
  }
  function grown() {  // the session's frames may reach further now
    if (shown < 0) return;
    const span = source.span(shown);
    if (span[1] > t1) { t1 = span[1]; dspacer.style.height = height() + "px"; }
    draw();
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
    draw();
  }
  function niceStep(pxPerSecond) {
    const raw = 60 / pxPerSecond, p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function draw() {
    if (shown < 0 || !diagram) return;
    const n = shown, w = Math.max(420, diagram.clientWidth - 4), h = diagram.clientHeight, top = diagram.scrollTop;
    const xc = 130, xs = Math.min(w - 190, xc + 420);
    const from = t0 + (top - TOP) / scale, to = t0 + (top + h - TOP) / scale;
    const win = source.window(n, from - 20 / scale, to + 20 / scale, MAX_ARROWS);
    if (win === null && canvas) return;  // asked of the server: drawn when it answers
    if (canvas) canvas.remove();
    canvas = svg("svg", { width: w, height: h, viewBox: "0 " + top + " " + w + " " + h, "data-scale": scale.toPrecision(6) });
    canvas.style.top = top + "px";
    canvas.appendChild(svg("line", { x1: xc, y1: top, x2: xc, y2: top + h, stroke: "#999", "stroke-dasharray": "4 3" }));
    canvas.appendChild(svg("line", { x1: xs, y1: top, x2: xs, y2: top + h, stroke: "#999", "stroke-dasharray": "4 3" }));
    canvas.appendChild(svg("text", { x: xc, y: top + 14, "text-anchor": "middle", "font-weight": "600" }, "client"));
    canvas.appendChild(svg("text", { x: xs, y: top + 14, "text-anchor": "middle", "font-weight": "600" }, "server"));
    const step = niceStep(scale);
    for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
      const y = yOf(t);
      canvas.appendChild(svg("line", { x1: 52, y1: y, x2: 60, y2: y, stroke: "#888" }));
      canvas.appendChild(svg("text", { x: 48, y: y + 4, "text-anchor": "end", fill: "#666" },
        (step < 1e-3 ? (t * 1e3).toFixed(3) + " ms" : t.toFixed(step < 1 ? Math.ceil(-Math.log10(step)) : 0) + " s")));
    }
    diagram.appendChild(canvas);
    if (win === null) { zoomStatus.textContent = "asking for the frames in sight…"; return; }
    if (!win.total) { zoomStatus.textContent = "no frames in sight"; return; }
    let lanes = [];
    for (const r of win.rows) {
      arrow(r, xc, xs);
      if (r.p > 0 && r.k === "request" && r.pt !== null) lanes = bracket(r.t, r.pt, r.l, xs, lanes);
    }
    for (const r of win.rows) {  // the brackets of requests before the window answered inside it
      if (r.p > 0 && (r.k === "response" || r.k === "error") && r.pt !== null && r.pt < from) lanes = bracket(r.pt, r.t, r.l, xs, lanes);
    }
    zoomStatus.textContent = (win.every > 1 ? win.total.toLocaleString("en") + " frames in sight, 1 in " + win.every + " drawn: zoom in · " : "") +
      (1 / scale * 100 >= 1 ? (100 / scale).toFixed(2) + " s" : (100000 / scale).toFixed(2) + " ms") + " per 100 px";
  }
  function arrow(r, xc, xs) {
    const y = yOf(r.t), right = r.d === 0;
    const x1 = right ? xc : xs, x2 = right ? xs : xc;
    const g = svg("g", { class: "arrow" + (isSelected(r) ? " selected" : ""), "data-index": r.i !== undefined ? r.i : r.seq,
                         "data-session": source.sessions[r.n].id, "data-seq": r.seq });
    const colour = r.k === "error" ? "#b00020" : (r.k === "batch" || r.k === "invalid" || r.k === "unparseable" || !r.k) ? "#9a4f00" : right ? "#1f5fa8" : "#2e7d32";
    g.appendChild(svg("line", { x1: x1, y1: y, x2: x2 + (right ? -6 : 6), y2: y, stroke: colour, "stroke-width": 1.6 }));
    g.appendChild(svg("path", { d: "M" + x2 + " " + y + " l" + (right ? -8 : 8) + " -4 v8 z", fill: colour }));
    const label = [r.k, printable(r.m), r.id !== null && r.id !== undefined ? "id=" + printable(r.id) : ""].filter(Boolean).join(" ");
    g.appendChild(svg("text", { x: (xc + xs) / 2, y: y - 3, "text-anchor": "middle", fill: "#333" }, cut(label, 60)));
    if (r.f.length) {
      const c = svg("circle", { cx: x2 + (right ? 10 : -10), cy: y, r: 5, fill: r.f.some(f => f[4] === "error") ? "#b00020" : "#b86200" });
      c.appendChild(svg("title", {}, r.f.map(f => printable(f[3])).join(", ")));
      g.appendChild(c);
    }
    g.appendChild(svg("title", {}, "frame " + r.seq + " · " + relative(r.t) + " s · " + label));
    g.appendChild(svg("rect", { x: Math.min(x1, x2), y: y - 12, width: Math.abs(x2 - x1), height: 16, fill: "transparent" }));
    g.addEventListener("click", () => select(r.n, r.seq, { scroll: true }));
    canvas.appendChild(g);
  }
  function bracket(tq, ta, latency, xs, lanes) {
    const y1 = yOf(tq), y2 = yOf(ta);
    lanes = lanes.filter(end => end > y1);
    if (lanes.length >= 6) return lanes;
    const x = xs + 22 + lanes.length * 14;
    lanes.push(y2);
    canvas.appendChild(svg("path", { d: "M" + (x - 4) + " " + y1 + " h4 V" + y2 + " h-4", fill: "none", stroke: "#777" }));
    if (y2 - y1 > 14) canvas.appendChild(svg("text", { x: x + 4, y: (y1 + y2) / 2 + 4, fill: "#555" }, ms(latency !== null ? latency : ta - tq)));
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
    document.getElementById("zoom-fit").addEventListener("click", () => { fit(); diagram.scrollTop = 0; draw(); });
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
  return { showSession, draw, grown, latencyChart, shown: () => shown };
};
