/* mcptap viewer, the sequence diagram's time axis: seconds since the session started to pixels
   down the page, linear at the zoom's scale except across the session's long idle gaps (the
   longest stretches without a frame, each a thousandth of the session or longer), each drawn
   IDLE_Y pixels tall once it would take more than IDLE_PX; `fit` finds the scale at which the
   whole session fills a height. */
MCPTAP.timeAxis = function (TOP) {
  "use strict";
  const IDLE_PX = 120, IDLE_Y = 26;
  let t0 = 0, t1 = 0, scale = 1, gaps = [], idle = [];  // gaps: [from, to] in time order; idle: those drawn short
  function set(start, end, longest) {
    t0 = start; t1 = end;
    const least = (t1 - t0) / 1000;  // shorter gaps are the traffic's rhythm, not idleness
    gaps = (longest || []).filter(g => g[1] - g[0] > least && g[0] >= t0 && g[1] <= t1).sort((a, b) => a[0] - b[0]);
    setScale(scale);
  }
  function extend(end) { t1 = end; setScale(scale); }
  function setScale(s) {  // each idle gap with the pixel where it starts
    scale = s;
    idle = [];
    let cut = 0;
    for (const [a, b] of gaps) {
      if ((b - a) * s <= IDLE_PX) continue;
      idle.push({ a: a, b: b, y: TOP + (a - t0) * s - cut });
      cut += (b - a) * s - IDLE_Y;
    }
  }
  function before(t) {  // the number of idle gaps that start before t
    let lo = 0, hi = idle.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (idle[mid].a < t) lo = mid + 1; else hi = mid; }
    return lo;
  }
  function yOf(t) {
    const k = before(t) - 1;
    if (k < 0) return TOP + (t - t0) * scale;
    const g = idle[k];
    if (t <= g.b) return g.y + (t - g.a) / (g.b - g.a) * IDLE_Y;
    return g.y + IDLE_Y + (t - g.b) * scale;
  }
  function tOf(y) {
    let lo = 0, hi = idle.length;
    while (lo < hi) { const mid = (lo + hi) >> 1; if (idle[mid].y < y) lo = mid + 1; else hi = mid; }
    const k = lo - 1;
    if (k < 0) return t0 + (y - TOP) / scale;
    const g = idle[k];
    if (y <= g.y + IDLE_Y) return g.a + (y - g.y) / IDLE_Y * (g.b - g.a);
    return g.b + (y - g.y - IDLE_Y) / scale;
  }
  function height() { return Math.max(60, yOf(t1) - TOP) + TOP * 2; }
  function fit(avail) {  // the largest scale (up to 100 times the linear one) at which the session fits
    const span = t1 - t0;
    if (!(span > 0)) { setScale(1000); return scale; }
    const linear = Math.max(1e-6, avail / span);
    let lo = Math.log(linear), hi = Math.log(linear * 100);
    setScale(Math.exp(hi));
    if (yOf(t1) - TOP > avail) {
      for (let k = 0; k < 40; k++) {
        const mid = (lo + hi) / 2;
        setScale(Math.exp(mid));
        if (yOf(t1) - TOP <= avail) lo = mid; else hi = mid;
      }
      setScale(Math.exp(lo));
    }
    return scale;
  }
  return { set, extend, setScale, yOf, tOf, height, fit, IDLE_Y,
           scale: () => scale, idle: () => idle, span: () => [t0, t1] };
};
