/* mcptap viewer, the detail pane: a frame's fields, its findings with their spec reference, its
   exact bytes, its JSON pretty-printed and collapsible (numbers as written), its pair and its HTTP
   exchange. Everything from the traffic goes in through textContent, after printable. */
MCPTAP.detailPane = function (source, select) {
  "use strict";
  const { printable, el, absolute, relative, ms } = MCPTAP;
  const detail = document.getElementById("detail");
  let asked = null;
  function jump(n, seq, text) {
    const a = el("a", "jump", text);
    a.tabIndex = 0;
    a.addEventListener("click", () => select(n, seq, { scroll: true }));
    return a;
  }
  function item(dl, name, value) {
    dl.appendChild(el("dt", null, name));
    const dd = el("dd");
    if (value instanceof Node) dd.appendChild(value); else dd.textContent = value;
    dl.appendChild(dd);
  }
  function show(n, seq, then) {  // then(frame): once it is drawn
    asked = n + ":" + seq;
    source.detail(n, seq, function (r) {
      if (asked !== n + ":" + seq) return;  // another frame was asked for since
      if (!detail) { if (r) then(r); return; }
      if (r === null) { detail.textContent = ""; detail.appendChild(el("p", "muted", "frame " + seq + " is not there")); return; }
      draw(r);
      if (then) then(r);
    });
  }
  function draw(r) {
    const sess = source.sessions[r.n];
    detail.textContent = "";
    detail.appendChild(el("h3", null, "Frame " + r.seq + " of session " + printable(sess.id)));
    const dl = el("dl");
    item(dl, "session", printable(sess.id) + (sess.label ? " (" + printable(sess.label) + ")" : ""));
    item(dl, "time", relative(r.t) + " s · " + absolute(sess.started_at + r.t));
    item(dl, "direction", r.d === 0 ? "c2s: client → server" : "s2c: server → client");
    item(dl, "kind", r.k || "(not analysed)");
    if (r.m) item(dl, "method", printable(r.m));
    if (r.id !== null && r.id !== undefined) item(dl, "id", printable(r.id));
    item(dl, "size", r.z.toLocaleString("en") + " bytes" + (r.b ? " (not UTF-8: shown with \\x escapes)" : ""));
    if (r.p > 0) item(dl, "pair", jump(r.n, r.p, "frame " + r.p + (r.pk ? " (" + r.pk + ")" : "")));
    if (r.l !== null && !isNaN(r.l)) item(dl, "latency", ms(r.l));
    detail.appendChild(dl);

    if (r.f.length) {
      detail.appendChild(el("h3", null, "Findings (" + r.f.length + ")"));
      for (const f of r.f) {
        const box = el("div", "finding");
        box.appendChild(el("span", "badge " + f[4], f[4]));
        box.appendChild(el("strong", null, printable(f[3])));
        if (f[2] >= 0) box.appendChild(el("span", "muted", " element " + f[2]));
        box.appendChild(el("div", null, printable(f[5])));
        const rule = source.codes[f[3]];
        if (rule) {
          box.appendChild(el("div", "muted", rule.summary));
          const ref = el("div", "muted", "spec: " + rule.ref + " · ");
          const a = el("a", null, "docs/rules.md#" + f[3]);
          a.href = rule.help;  // a constant of the rule registry, not text from the traffic
          a.rel = "noreferrer noopener";
          ref.appendChild(a);
          box.appendChild(ref);
        }
        if (f[6]) { const d = el("div", null, "related: "); d.appendChild(jump(r.n, f[6], "frame " + f[6])); box.appendChild(d); }
        detail.appendChild(box);
      }
    }

    detail.appendChild(el("h3", null, "Bytes"));
    if (r.raw === null || r.raw === undefined) {
      const [say, command] = source.missingBytes(sess, r.seq);
      detail.appendChild(el("p", "muted", say));
      if (command) detail.appendChild(el("pre", "bytes", printable(command)));
    } else {
      detail.appendChild(el("pre", "bytes", printable(r.raw)));
      if (r.cut) detail.appendChild(el("p", "muted", "The first " + r.raw.length.toLocaleString("en") + " of " +
        r.z.toLocaleString("en") + " bytes (the database holds the frame whole)."));
      if (!r.cut && !r.b) {
        const tree = jsonTree(r.raw);
        if (tree) { detail.appendChild(el("h3", null, "JSON")); detail.appendChild(tree); }
      }
    }
    if (r.x) showExchange(r.x);
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
      table.appendChild(el("caption", "muted", title));
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
  function Num(text) { this.source = text; }
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
  return { show };
};
