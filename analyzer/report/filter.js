// The display filter language of docs/filters.md, parsed as analyzer/store/filterlang.py parses
// it (the same tree, the same errors and columns: tests/data/filter_corpus.json runs through both).
// The report inlines this file before viewer.js, which compiles the tree over its frames.
const MCPTAP_FILTER = (function () {
  "use strict";
  const NUMBER_FIELDS = { seq: null, time: "duration", latency: "duration", size: "size", status: null };
  const TEXT_FIELDS = ["session", "run", "server", "dir", "kind", "method", "id", "finding", "finding.group", "severity", "text"];
  const FIELDS = Object.keys(NUMBER_FIELDS).concat(TEXT_FIELDS);
  const CHOICES = { dir: ["c2s", "s2c"],
    kind: ["request", "notification", "response", "error", "invalid", "batch", "not-json", "unparseable"],
    severity: ["error", "warning", "info"] };
  const UNITS = { duration: { us: 1e-6, "µs": 1e-6, ms: 1e-3, s: 1, min: 60, h: 3600 },
    size: { b: 1, kb: 1e3, mb: 1e6, gb: 1e9, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3 } };
  const ORDER_OPS = ["<", "<=", ">", ">="], TEXT_OPS = ["contains", "~"];
  const SYMBOLS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "~", "(", ")", "{", "}", ",", "!"];
  const NUMBER_RE = /^(-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)([A-Za-zµ]*)$/;
  const PATH_RE = /^(jsonrpc|params|result|error)((?:\.[A-Za-z_$][\w$-]*|\[\d+\])*)$/;
  const WORD_END = /[\s()"{},!=<>~&|]/;

  function FilterError(message, column) {
    this.message = "bad filter at column " + column + ": " + message; this.column = column;
  }
  function quote(s) { return "'" + s + "'"; }

  function tokenize(text) {
    const out = [];
    let i = 0;
    const n = text.length;
    while (i < n) {
      const c = text[i];
      if (/\s/.test(c)) { i++; continue; }
      if (c === '"') {
        let j = i + 1, value = "";
        while (j < n && text[j] !== '"') {
          if (text[j] === "\\" && j + 1 < n) {
            const e = text[j + 1];
            value += e === "n" ? "\n" : e === "t" ? "\t" : e;
            j += 2;
          } else value += text[j++];
        }
        if (j >= n) throw new FilterError("a string is not closed", i + 1);
        out.push({ t: "str", v: value, c: i + 1 });
        i = j + 1;
        continue;
      }
      const symbol = SYMBOLS.find(s => text.startsWith(s, i));
      if (symbol) { out.push({ t: "op", v: symbol, c: i + 1 }); i += symbol.length; continue; }
      if ("=&|".includes(c)) throw new FilterError("unexpected " + quote(c) + " (== compares, && and || join)", i + 1);
      let j = i;
      while (j < n && !WORD_END.test(text[j])) j++;
      out.push({ t: "word", v: text.slice(i, j), c: i + 1 });
      i = j;
    }
    return out;
  }

  function parseFilter(text) {  // the tree, as filterlang.parse gives it
    const toks = tokenize(text);
    let pos = 0;
    const peek = () => toks[pos], endColumn = text.length + 1;
    const take = (...words) => {
      const tok = peek();
      if (tok && tok.t !== "str" && words.includes(tok.v)) { pos++; return true; }
      return false;
    };
    function either() { let left = both(); while (take("or", "||")) left = ["or", left, both()]; return left; }
    function both() { let left = negation(); while (take("and", "&&")) left = ["and", left, negation()]; return left; }
    function negation() { return take("not", "!") ? ["not", negation()] : primary(); }
    function primary() {
      const tok = peek();
      if (!tok) throw new FilterError("the filter ends where a test was expected", endColumn);
      if (tok.t === "op" && tok.v === "(") {
        pos++;
        const inner = either(), close = peek();
        if (!close || close.t !== "op" || close.v !== ")") throw new FilterError("a parenthesis is not closed", tok.c);
        pos++;
        return inner;
      }
      if (tok.t !== "word") throw new FilterError("expected a field, not " + quote(tok.v), tok.c);
      pos++;
      const field = fieldOf(tok.v, tok.c), op = peek();
      if (!op || !((op.t === "op" && ["==", "!=", "<", "<=", ">", ">=", "~"].includes(op.v)) ||
                   (op.t === "word" && ["contains", "matches", "in"].includes(op.v)))) return ["has", field];
      pos++;
      const name = op.v === "matches" ? "~" : op.v;
      if (name === "in") return ["in", field, choices(field, op.c)];
      return ["cmp", field, name, value(field, name, op.c)];
    }
    function choices(field, col) {
      const brace = peek();
      if (!brace || brace.t !== "op" || brace.v !== "{") throw new FilterError("in takes a set: in {a, b}", brace ? brace.c : endColumn);
      pos++;
      const values = [value(field, "==", col)];
      while (take(",")) values.push(value(field, "==", col));
      const close = peek();
      if (!close || close.t !== "op" || close.v !== "}") throw new FilterError("a set is not closed with }", close ? close.c : endColumn);
      pos++;
      return values;
    }
    function value(field, op, opCol) {
      const tok = peek();
      if (!tok || tok.t === "op") throw new FilterError(op + " needs a value", tok ? tok.c : endColumn);
      pos++;
      return typed(field, op, tok, opCol);
    }
    if (!toks.length) throw new FilterError("the filter is empty", 1);
    const tree = either();
    if (pos < toks.length) throw new FilterError("unexpected " + quote(toks[pos].v) + " (join tests with and, or)", toks[pos].c);
    return tree;
  }

  function fieldOf(word, col) {
    if (FIELDS.includes(word)) return word;
    const m = PATH_RE.exec(word);
    if (m) {
      const steps = [m[1]];
      for (const s of m[2].matchAll(/\.([A-Za-z_$][\w$-]*)|\[(\d+)\]/g)) steps.push(s[1] !== undefined ? s[1] : +s[2]);
      return steps;
    }
    throw new FilterError("unknown field " + quote(word) + " (fields: " + FIELDS.join(", ") +
                          ", or a JSON member such as params.name)", col);
  }

  function typed(field, op, tok, opCol) {
    const number = tok.t === "word" ? NUMBER_RE.exec(tok.v) : null;
    if (field in NUMBER_FIELDS && typeof field === "string") {
      if (TEXT_OPS.includes(op)) throw new FilterError(field + " is a number: use == != < <= > >= in", opCol);
      if (!number) throw new FilterError(field + " needs a number, not " + quote(tok.v), tok.c);
      const unit = number[2].toLowerCase();
      let scale = 1;
      if (unit) {
        const table = UNITS[NUMBER_FIELDS[field]] || {};
        if (!(unit in table)) {
          const units = Object.keys(table).length ? Object.keys(table).join(", ") : "none";
          throw new FilterError(field + " takes no unit " + quote(number[2]) + " (units: " + units + ")", tok.c);
        }
        scale = table[unit];
      }
      return ["num", parseFloat(number[1]) * scale];
    }
    if (Array.isArray(field)) {
      let v;
      if (tok.t === "word" && (tok.v === "true" || tok.v === "false")) v = ["bool", tok.v === "true"];
      else if (tok.t === "word" && tok.v === "null") v = ["null", null];
      else if (number && !number[2]) v = ["num", parseFloat(number[1])];
      else v = ["str", tok.v];
      if (ORDER_OPS.includes(op) && v[0] !== "num") throw new FilterError(op + " compares numbers, not " + quote(tok.v), tok.c);
      if (TEXT_OPS.includes(op) && v[0] !== "str") throw new FilterError(op + " takes a string", tok.c);
      return checkedRegex(v, op, tok.c);
    }
    if (ORDER_OPS.includes(op)) throw new FilterError(field + " is text: use == != contains ~ in", opCol);
    if (field === "id" && op === "==" && number && !number[2] && tok.t === "word") return ["num", parseFloat(number[1])];
    let text = tok.v;
    if (CHOICES[field] && (op === "==" || op === "!=") && !CHOICES[field].includes(text))
      throw new FilterError(field + " is one of " + CHOICES[field].join(", ") + ", not " + quote(text), tok.c);
    if (field === "kind" && text === "not-json") text = "unparseable";
    return checkedRegex(["str", text], op, tok.c);
  }

  function checkedRegex(v, op, col) {
    if (op === "~") {
      try { v.push(new RegExp(v[1])); } catch (e) { throw new FilterError("not a regular expression: " + e.message, col); }
    }
    return v;
  }

  function idText(v) {  // a value compared with id as the id's JSON text
    return v[0] === "num" ? (Number.isInteger(v[1]) ? String(v[1]) : String(v[1])) : JSON.stringify(v[1]);
  }

  return { parseFilter, FilterError, idText, NUMBER_FIELDS, FIELDS };
})();
