/* analyzer._wirescan: the envelope of a JSON-RPC frame, read straight from its bytes.

   scan(raw: bytes) -> tuple | None

   One strict pass over the whole frame checks what analyzer/wire/jsonwire.py checks (RFC 8259
   grammar, UTF-8 as Python's strict decoder accepts it, no duplicate member names at any depth)
   and then builds Python objects only for the envelope the session core reads: the signature
   key of analyzer/analysis/classify.py, the method, the id and its wire text, `params._meta`, `params`
   for a few methods, and `result.resultType`. Everything else in the frame is validated and
   skipped, never built.

   None means "not here": the frame is not JSON, not UTF-8, not an object, has a duplicate name,
   a member name with an escape, nesting deeper than MAX_DEPTH, an envelope of another shape
   than the common ones, or a value in the built parts that only the exact parser can give (an
   integer of more than 18 digits, a lone surrogate); a fraction or an exponent there is built as
   NumberText. The
   caller then takes the exact path (analyzer/wire/jsonwire.py); this module never decides a finding.

   The tuple: (key, method, id, id_text, meta, params, result_type, id_key, member) where
   - key is classify's signature key: ("ok", method "absent"|"str", id "absent"|"str"|"int",
     params "absent"|"object"|"array", has result, error "absent"|"ok");
   - method is a str or None; id an int, a str or the MISSING object; id_text its wire text
     (None without an id);
   - meta: when params and params._meta are objects, a dict of the members of _meta the session
     core reads (progressToken and the META_NAMES, those present, in that order; the rest of
     _meta is validated, never built), else None;
   - params is the params object when the method is in PARAMS_FOR, else None;
   - result_type is result.resultType when result is an object that has it, else MISSING;
   - id_key is the id's key for pairing, as analyzer/analysis/messages.py `id_key` makes it
     (("n", id) or ("s", id)), None without an id;
   - member is the bytes as written of what a schema check judges, and so its verdict's key: of
     a request or notification (a frame with a method) its params value, of a response its result
     value; empty where that is absent (no JSON value is empty).
   configure(missing, params_for, number_text) sets MISSING, PARAMS_FOR and the NumberText type.
   contains(raw, needles) says whether any of the byte strings occurs in raw, contains_folded(raw,
   needles) the same of raw with its ASCII letters in lower case (the literal searches the security
   reading makes before it parses a frame). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define MAX_DEPTH 128 /* with MAX_KEYS, at most about 64 KB of C stack */
#define MAX_KEYS 32   /* a larger object goes to the exact path, whose duplicate check has no limit */
#define MAX_INT_DIGITS 18

typedef const unsigned char *P;

typedef struct {
    P start;
    P end;
} Span;

/* Members to note while validating: their names, where each value goes in the found array,
   and what to note inside each (when it is an object). */
typedef struct Want {
    int n;
    const char *names[6];
    size_t sizes[6];
    int slots[6];
    const struct Want *subs[6];
} Want;

enum { JSONRPC, METHOD, ID, PARAMS, RESULT, ERROR, META, RESULT_TYPE, CODE, MESSAGE, TOKEN, META_VERSION,
       META_CAPABILITIES, META_LOG_LEVEL, PROGRESS_TOKEN, PROGRESS, NSPANS };
/* analyzer/analysis/mcp.py's META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES and META_LOG_LEVEL (META_NAMES,
   checked against them on import) */
#define PROTOCOL_VERSION "io.modelcontextprotocol/protocolVersion"
#define CLIENT_CAPABILITIES "io.modelcontextprotocol/clientCapabilities"
#define LOG_LEVEL "io.modelcontextprotocol/logLevel"
static const Want WANT_META_MEMBERS = {
    4, {"progressToken", PROTOCOL_VERSION, CLIENT_CAPABILITIES, LOG_LEVEL},
    {13, sizeof(PROTOCOL_VERSION) - 1, sizeof(CLIENT_CAPABILITIES) - 1, sizeof(LOG_LEVEL) - 1},
    {TOKEN, META_VERSION, META_CAPABILITIES, META_LOG_LEVEL}, {NULL, NULL, NULL, NULL}};
static const Want WANT_PARAMS = {3, {"_meta", "progressToken", "progress"}, {5, 13, 8},
                                 {META, PROGRESS_TOKEN, PROGRESS}, {&WANT_META_MEMBERS, NULL, NULL}};
static const Want WANT_RESULT_TYPE = {1, {"resultType"}, {10}, {RESULT_TYPE}, {NULL}};
static const Want WANT_ERROR = {2, {"code", "message"}, {4, 7}, {CODE, MESSAGE}, {NULL, NULL}};
static const Want WANT_ENVELOPE = {
    6, {"jsonrpc", "method", "id", "params", "result", "error"}, {7, 6, 2, 6, 6, 5},
    {JSONRPC, METHOD, ID, PARAMS, RESULT, ERROR}, {NULL, NULL, NULL, &WANT_PARAMS, &WANT_RESULT_TYPE, &WANT_ERROR}};

/* Bytes that stand for themselves in a JSON string: printable ASCII but the quote and backslash. */
static unsigned char PLAIN[256];

static PyObject *MISSING = NULL;
static PyObject *PARAMS_FOR = NULL;
static PyObject *NUMBER_TEXT = NULL;
static PyObject *S_OK, *S_ABSENT, *S_STR, *S_INT, *S_OBJECT, *S_ARRAY, *S_N, *S_S;

/* -- validation ------------------------------------------------------------------------- */

static inline P ws(P p, P e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

static inline int hex(unsigned char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* p at the opening quote; returns just past the closing quote, or NULL. *escaped is set when
   the string holds a backslash escape. */
/* Whether any of 8 bytes may need a look: a quote, a backslash, a control character or a
   byte of a multi-byte character (a false alarm is possible, a miss is not). */
static inline int special8(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
    return (((x - ones * 0x20) | ((x ^ (ones * '"')) - ones) | ((x ^ (ones * '\\')) - ones) | x) & high) != 0;
}

/* Past the bytes that stand for themselves, from p: to the first quote, backslash, control
   character or byte of a multi-byte character (16 bytes at a time with SSE2, else 8). */
static inline P plain_run(P p, P e) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
    while (p + 16 <= e) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* signed: bytes 0x80-0xFF are negative, so "less than a space" also finds them */
        __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                       _mm_cmplt_epi8(v, space));
        int mask = _mm_movemask_epi8(special);
        if (mask != 0)
            return p + __builtin_ctz((unsigned)mask);
        p += 16;
    }
#endif
    uint64_t eight;
    while (p + 8 <= e) {
        memcpy(&eight, p, 8);
        if (special8(eight))
            break;
        p += 8;
    }
    while (p < e && PLAIN[*p])
        p++;
    return p;
}

static P string(P p, P e, int *escaped) {
    p++;
    while (p < e) {
        p = plain_run(p, e);
        if (p >= e)
            return NULL;
        unsigned char c = *p;
        if (c == '"')
            return p + 1;
        if (c == '\\') {
            if (p + 1 >= e)
                return NULL;
            *escaped = 1;
            c = p[1];
            if (c == 'u') {
                if (p + 6 > e || !hex(p[2]) || !hex(p[3]) || !hex(p[4]) || !hex(p[5]))
                    return NULL;
                p += 6;
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
                p += 2;
            } else {
                return NULL;
            }
            continue;
        }
        if (c < 0x20)
            return NULL;
        if (c < 0x80) {
            p++;
            continue;
        }
        /* UTF-8 as Python's strict decoder takes it: no overlongs, no surrogates, <= U+10FFFF */
        if (c >= 0xC2 && c <= 0xDF) {
            if (p + 2 > e || (p[1] & 0xC0) != 0x80)
                return NULL;
            p += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            unsigned char lo = 0x80, hi = 0xBF;
            if (c == 0xE0)
                lo = 0xA0;
            else if (c == 0xED)
                hi = 0x9F;
            if (p + 3 > e || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80)
                return NULL;
            p += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            unsigned char lo = 0x80, hi = 0xBF;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F;
            if (p + 4 > e || p[1] < lo || p[1] > hi || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80)
                return NULL;
            p += 4;
        } else {
            return NULL;
        }
    }
    return NULL;
}

static P number(P p, P e) {
    if (p < e && *p == '-')
        p++;
    if (p >= e)
        return NULL;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    } else {
        return NULL;
    }
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9')
            return NULL;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-'))
            p++;
        if (p >= e || *p < '0' || *p > '9')
            return NULL;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
    }
    return p;
}

static P literal(P p, P e, const char *word, size_t n) {
    if ((size_t)(e - p) < n || memcmp(p, word, n) != 0)
        return NULL;
    return p + n;
}

static P value(P p, P e, int depth, const Want *want, Span *found);

/* p at '{'. Member names are checked against each other (no escapes allowed: two names can then
   be equal only byte for byte). With `want`, where the values of those members are is noted. */
static P object(P p, P e, int depth, const Want *want, Span *found) {
    Span keys[MAX_KEYS];
    int nkeys = 0;
    if (depth > MAX_DEPTH)
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == '}')
        return p + 1;
    for (;;) {
        int escaped = 0;
        P key, keyend;
        if (p >= e || *p != '"')
            return NULL;
        key = p + 1;
        p = string(p, e, &escaped);
        if (p == NULL || escaped || nkeys == MAX_KEYS)
            return NULL;
        keyend = p - 1;
        for (int i = 0; i < nkeys; i++) {
            if (keys[i].end - keys[i].start == keyend - key && memcmp(keys[i].start, key, keyend - key) == 0)
                return NULL; /* a duplicate name: the exact parser reports it */
        }
        keys[nkeys].start = key;
        keys[nkeys].end = keyend;
        nkeys++;
        p = ws(p, e);
        if (p >= e || *p != ':')
            return NULL;
        p = ws(p + 1, e);
        P start = p;
        int slot = -1;
        const Want *sub = NULL;
        if (want != NULL) {
            size_t n = keyend - key;
            for (int i = 0; i < want->n; i++) {
                if (want->sizes[i] == n && memcmp(key, want->names[i], n) == 0) {
                    slot = want->slots[i];
                    sub = want->subs[i];
                    break;
                }
            }
        }
        p = value(p, e, depth + 1, sub, found);
        if (p == NULL)
            return NULL;
        if (slot >= 0) {
            found[slot].start = start;
            found[slot].end = p;
        }
        p = ws(p, e);
        if (p < e && *p == ',') {
            p = ws(p + 1, e);
            continue;
        }
        if (p < e && *p == '}')
            return p + 1;
        return NULL;
    }
}

static P array(P p, P e, int depth) {
    if (depth > MAX_DEPTH)
        return NULL;
    p = ws(p + 1, e);
    if (p < e && *p == ']')
        return p + 1;
    for (;;) {
        p = value(p, e, depth + 1, NULL, NULL);
        if (p == NULL)
            return NULL;
        p = ws(p, e);
        if (p < e && *p == ',') {
            p = ws(p + 1, e);
            continue;
        }
        if (p < e && *p == ']')
            return p + 1;
        return NULL;
    }
}

static P value(P p, P e, int depth, const Want *want, Span *found) {
    int escaped = 0;
    if (p >= e)
        return NULL;
    switch (*p) {
    case '{':
        return object(p, e, depth, want, found);
    case '[':
        return array(p, e, depth);
    case '"':
        return string(p, e, &escaped);
    case 't':
        return literal(p, e, "true", 4);
    case 'f':
        return literal(p, e, "false", 5);
    case 'n':
        return literal(p, e, "null", 4);
    default:
        return number(p, e);
    }
}

/* -- building, for the few members the session core reads (the text is valid here) -------- */

/* Past one value of text already validated. */
static P skip(P p, P e) {
    int escaped = 0;
    if (*p == '"')
        return string(p, e, &escaped);
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (p < e) {
            unsigned char c = *p;
            if (c == '"') {
                p = string(p, e, &escaped);
                continue;
            }
            if (c == '{' || c == '[')
                depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0)
                    return p + 1;
            }
            p++;
        }
        return NULL;
    }
    while (p < e && *p != ',' && *p != '}' && *p != ']' && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
        p++;
    return p;
}

static int is_int(Span s) {
    P p = s.start;
    int digits;
    if (*p == '-')
        p++;
    digits = (int)(s.end - p);
    if (digits < 1 || digits > MAX_INT_DIGITS)
        return 0;
    for (P q = p; q < s.end; q++) {
        if (*q < '0' || *q > '9')
            return 0;
    }
    return 1;
}

static PyObject *build_int(Span s) {
    long long v = 0;
    P p = s.start;
    int neg = *p == '-';
    if (neg)
        p++;
    for (; p < s.end; p++)
        v = v * 10 + (*p - '0');
    return PyLong_FromLongLong(neg ? -v : v);
}

static int unhex4(P p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned char c = p[i];
        v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    return v;
}

/* A string value (span includes the quotes). NULL without an exception: not here (a lone
   surrogate, which only the exact parser keeps). */
static PyObject *build_str(Span s) {
    P p = s.start + 1, e = s.end - 1;
    if (memchr(p, '\\', e - p) == NULL)
        return PyUnicode_DecodeUTF8((const char *)p, e - p, "strict");
    unsigned char *buf = PyMem_Malloc(e - p + 1);
    unsigned char *o = buf;
    if (buf == NULL)
        return PyErr_NoMemory();
    while (p < e) {
        if (*p != '\\') {
            *o++ = *p++;
            continue;
        }
        unsigned char c = p[1];
        if (c != 'u') {
            switch (c) {
            case 'b': *o++ = '\b'; break;
            case 'f': *o++ = '\f'; break;
            case 'n': *o++ = '\n'; break;
            case 'r': *o++ = '\r'; break;
            case 't': *o++ = '\t'; break;
            default: *o++ = c; break; /* " \ / */
            }
            p += 2;
            continue;
        }
        int cp = unhex4(p + 2);
        p += 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo;
            if (p + 6 > e || p[0] != '\\' || p[1] != 'u' || (lo = unhex4(p + 2)) < 0xDC00 || lo > 0xDFFF) {
                PyMem_Free(buf);
                return NULL;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            PyMem_Free(buf);
            return NULL;
        }
        if (cp < 0x80) {
            *o++ = (unsigned char)cp;
        } else if (cp < 0x800) {
            *o++ = 0xC0 | (cp >> 6);
            *o++ = 0x80 | (cp & 0x3F);
        } else if (cp < 0x10000) {
            *o++ = 0xE0 | (cp >> 12);
            *o++ = 0x80 | ((cp >> 6) & 0x3F);
            *o++ = 0x80 | (cp & 0x3F);
        } else {
            *o++ = 0xF0 | (cp >> 18);
            *o++ = 0x80 | ((cp >> 12) & 0x3F);
            *o++ = 0x80 | ((cp >> 6) & 0x3F);
            *o++ = 0x80 | (cp & 0x3F);
        }
    }
    PyObject *result = PyUnicode_DecodeUTF8((const char *)buf, o - buf, "strict");
    PyMem_Free(buf);
    return result;
}

/* Any value as Python objects, as the exact parser would give it; NULL without an exception
   for what only the exact parser keeps (fractions, exponents, long integers, lone surrogates). */
static PyObject *build(P p, P e) {
    Span s;
    switch (*p) {
    case '"':
        s.start = p;
        s.end = skip(p, e);
        return build_str(s);
    case 't':
        Py_RETURN_TRUE;
    case 'f':
        Py_RETURN_FALSE;
    case 'n':
        Py_RETURN_NONE;
    case '{': {
        PyObject *dict = PyDict_New();
        if (dict == NULL)
            return NULL;
        p = ws(p + 1, e);
        if (*p == '}')
            return dict;
        for (;;) {
            Span k = {p, NULL};
            k.end = skip(p, e);
            p = ws(k.end, e);
            p = ws(p + 1, e);
            PyObject *key = build_str(k);
            PyObject *item = key == NULL ? NULL : build(p, e);
            if (item == NULL || PyDict_SetItem(dict, key, item) < 0) {
                Py_XDECREF(key);
                Py_XDECREF(item);
                Py_DECREF(dict);
                return NULL;
            }
            Py_DECREF(key);
            Py_DECREF(item);
            p = ws(skip(p, e), e);
            if (*p == '}')
                return dict;
            p = ws(p + 1, e);
        }
    }
    case '[': {
        PyObject *list = PyList_New(0);
        if (list == NULL)
            return NULL;
        p = ws(p + 1, e);
        if (*p == ']')
            return list;
        for (;;) {
            PyObject *item = build(p, e);
            if (item == NULL || PyList_Append(list, item) < 0) {
                Py_XDECREF(item);
                Py_DECREF(list);
                return NULL;
            }
            Py_DECREF(item);
            p = ws(skip(p, e), e);
            if (*p == ']')
                return list;
            p = ws(p + 1, e);
        }
    }
    default:
        s.start = p;
        s.end = skip(p, e);
        if (is_int(s))
            return build_int(s);
        if (memchr(p, '.', s.end - p) == NULL && memchr(p, 'e', s.end - p) == NULL && memchr(p, 'E', s.end - p) == NULL)
            return NULL; /* a long integer */
        /* a fraction or an exponent: the exact parser's NumberText (or a float, when the frame is
           written as orjson writes it; both key and compare the same for what is read here) */
        PyObject *text = PyUnicode_DecodeASCII((const char *)p, s.end - p, "strict");
        if (text == NULL)
            return NULL;
        PyObject *number = PyObject_CallOneArg(NUMBER_TEXT, text);
        Py_DECREF(text);
        return number;
    }
}

/* -- the envelope ------------------------------------------------------------------------ */

static int plain_string(Span s) {
    return s.start != NULL && *s.start == '"' && memchr(s.start + 1, '\\', s.end - s.start - 2) == NULL;
}

static int same(Span s, const char *text) {
    size_t n = strlen(text);
    return s.start != NULL && (size_t)(s.end - s.start) == n && memcmp(s.start, text, n) == 0;
}

/* A frame with one of the common envelopes: its spans, and the shapes of classify's key. */
typedef struct {
    Span m[NSPANS];
    PyObject *method_shape, *id_shape, *params_shape, *error_shape; /* borrowed interned strings */
} Envelope;

/* 1 when `raw` is valid, strict JSON (as analyzer/wire/jsonwire.py accepts it, without duplicate
   names) and an object with a common envelope; 0 otherwise. */
static int envelope(PyObject *raw, Envelope *env) {
    char *data;
    Py_ssize_t size;
    Span *m = env->m;
    memset(m, 0, sizeof(env->m));
    if (!PyBytes_CheckExact(raw))
        return 0;
    data = PyBytes_AS_STRING(raw);
    size = PyBytes_GET_SIZE(raw);
    P e = (P)data + size;
    P p = ws((P)data, e);
    if (p >= e || *p != '{')
        return 0;
    p = object(p, e, 0, &WANT_ENVELOPE, m);
    if (p == NULL || ws(p, e) != e)
        return 0;
    if (!same(m[JSONRPC], "\"2.0\""))
        return 0;
    if (m[METHOD].start == NULL)
        env->method_shape = S_ABSENT;
    else if (plain_string(m[METHOD]))
        env->method_shape = S_STR;
    else
        return 0;
    if (m[ID].start == NULL)
        env->id_shape = S_ABSENT;
    else if (plain_string(m[ID]))
        env->id_shape = S_STR;
    else if (is_int(m[ID]))
        env->id_shape = S_INT;
    else
        return 0;
    if (m[PARAMS].start == NULL)
        env->params_shape = S_ABSENT;
    else if (*m[PARAMS].start == '{')
        env->params_shape = S_OBJECT;
    else if (*m[PARAMS].start == '[')
        env->params_shape = S_ARRAY;
    else
        return 0;
    if (m[ERROR].start == NULL) {
        env->error_shape = S_ABSENT;
    } else {
        if (*m[ERROR].start != '{' || m[CODE].start == NULL || !is_int(m[CODE]) || m[MESSAGE].start == NULL ||
            *m[MESSAGE].start != '"')
            return 0;
        env->error_shape = S_OK;
    }
    return 1;
}

/* classify's key of the envelope's shape: one tuple per shape (3 * 3 * 3 * 2 * 2 of them), made
   the first time and given out again after (the same immutable tuple for the same bytes: the
   session core's dictionary lookup of it then compares by identity). A new reference. */
static PyObject *SHAPE_KEYS[3][3][3][2][2];

static int shape_index(PyObject *shape) {
    return shape == S_ABSENT ? 0 : (shape == S_STR || shape == S_OBJECT || shape == S_OK) ? 1 : 2;
}

static PyObject *shape_key(Envelope *env) {
    int result = env->m[RESULT].start != NULL;
    PyObject **cached = &SHAPE_KEYS[shape_index(env->method_shape)][shape_index(env->id_shape)]
                                   [shape_index(env->params_shape)][result][shape_index(env->error_shape)];
    if (*cached == NULL) {
        *cached = PyTuple_Pack(6, S_OK, env->method_shape, env->id_shape, env->params_shape,
                               result ? Py_True : Py_False, env->error_shape);
        if (*cached == NULL)
            return NULL;
    }
    return Py_NewRef(*cached);
}

static PyObject *span_text(Span s, int inner) {
    return PyUnicode_DecodeUTF8((const char *)s.start + inner, s.end - s.start - 2 * inner, "strict");
}

/* The id (an int or a str) and its wire text, as the exact path writes it; both new references. */
static int build_id(Envelope *env, PyObject **ident, PyObject **id_text) {
    Span s = env->m[ID];
    if (env->id_shape == S_STR) {
        *ident = span_text(s, 1);
        *id_text = *ident == NULL ? NULL : span_text(s, 0);
    } else {
        *ident = build_int(s);
        *id_text = *ident == NULL ? NULL : PyObject_Str(*ident);
    }
    if (*id_text == NULL) {
        Py_CLEAR(*ident);
        return -1;
    }
    return 0;
}

/* The members of params._meta the session core reads (META_MEMBERS: progressToken and the three
   META_NAMES), those present, in that order, each value as the exact parser gives it; NULL
   without an exception when a value is not here (as `build`). The rest of _meta is validated,
   never built. */
static PyObject *META_KEYS[4];
static const int META_SLOTS[4] = {TOKEN, META_VERSION, META_CAPABILITIES, META_LOG_LEVEL};

static PyObject *build_meta(Span *m) {
    PyObject *meta = PyDict_New();
    if (meta == NULL)
        return NULL;
    for (int i = 0; i < 4; i++) {
        Span s = m[META_SLOTS[i]];
        if (s.start == NULL)
            continue;
        PyObject *item = build(s.start, s.end);
        if (item == NULL || PyDict_SetItem(meta, META_KEYS[i], item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(meta);
            return NULL;
        }
        Py_DECREF(item);
    }
    return meta;
}

/* -- scan ------------------------------------------------------------------------------- */

static PyObject *scan(PyObject *self, PyObject *raw) {
    Envelope env;
    Span *m = env.m;
    PyObject *method = NULL, *ident = NULL, *id_text = NULL, *meta = NULL, *params = NULL, *rtype = NULL;
    PyObject *key = NULL, *id_key = NULL, *member = NULL;
    if (MISSING == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_wirescan.configure() was not called");
        return NULL;
    }
    if (!envelope(raw, &env))
        Py_RETURN_NONE;
    if (env.method_shape == S_STR && (method = span_text(m[METHOD], 1)) == NULL)
        goto fail;
    if (env.id_shape == S_ABSENT) {
        ident = Py_NewRef(MISSING);
        id_text = Py_NewRef(Py_None);
    } else if (build_id(&env, &ident, &id_text) < 0) {
        goto fail;
    }
    if (env.params_shape == S_OBJECT) {
        if (m[META].start != NULL && *m[META].start == '{') {
            meta = build_meta(m);
            if (meta == NULL)
                goto built;
        }
        if (method != NULL) {
            int wanted = PySet_Contains(PARAMS_FOR, method);
            if (wanted < 0)
                goto fail;
            if (wanted) {
                params = build(m[PARAMS].start, m[PARAMS].end);
                if (params == NULL)
                    goto built;
            }
        }
    }
    if (m[RESULT].start != NULL && *m[RESULT].start == '{' && m[RESULT_TYPE].start != NULL) {
        rtype = build(m[RESULT_TYPE].start, m[RESULT_TYPE].end);
        if (rtype == NULL)
            goto built;
    }
    if (rtype == NULL)
        rtype = Py_NewRef(MISSING);
    const Span *judged = m[METHOD].start != NULL ? &m[PARAMS] : &m[RESULT];
    member = judged->start == NULL ? PyBytes_FromStringAndSize(NULL, 0)
                                   : PyBytes_FromStringAndSize((const char *)judged->start, judged->end - judged->start);
    if (member == NULL)
        goto fail;
    key = shape_key(&env);
    if (key == NULL) {
        Py_DECREF(member);
        goto fail;
    }
    if (env.id_shape != S_ABSENT) {
        id_key = PyTuple_Pack(2, env.id_shape == S_INT ? S_N : S_S, ident);
        if (id_key == NULL) {
            Py_DECREF(key);
            Py_DECREF(member);
            goto fail;
        }
    }
    PyObject *out = PyTuple_Pack(9, key, method != NULL ? method : Py_None, ident, id_text,
                                 meta != NULL ? meta : Py_None, params != NULL ? params : Py_None, rtype,
                                 id_key != NULL ? id_key : Py_None, member);
    Py_DECREF(key);
    Py_XDECREF(id_key);
    Py_DECREF(member);
    Py_XDECREF(method);
    Py_DECREF(ident);
    Py_DECREF(id_text);
    Py_XDECREF(meta);
    Py_XDECREF(params);
    Py_DECREF(rtype);
    return out;
built: /* a builder gave up: an exception (memory) propagates, anything else is not here */
    if (PyErr_Occurred())
        goto fail;
    Py_XDECREF(method);
    Py_XDECREF(ident);
    Py_XDECREF(id_text);
    Py_XDECREF(meta);
    Py_XDECREF(params);
    Py_XDECREF(rtype);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(method);
    Py_XDECREF(ident);
    Py_XDECREF(id_text);
    Py_XDECREF(meta);
    Py_XDECREF(params);
    Py_XDECREF(rtype);
    return NULL;
}

static PyObject *configure(PyObject *self, PyObject *args) {
    PyObject *missing, *params_for, *number_text;
    if (!PyArg_ParseTuple(args, "OO!O", &missing, &PyFrozenSet_Type, &params_for, &number_text))
        return NULL;
    Py_XSETREF(MISSING, Py_NewRef(missing));
    Py_XSETREF(PARAMS_FOR, Py_NewRef(params_for));
    Py_XSETREF(NUMBER_TEXT, Py_NewRef(number_text));
    Py_RETURN_NONE;
}

/* contains(raw: bytes, needles: tuple[bytes, ...]) -> bool: whether any needle occurs in raw
   (`any(n in raw for n in needles)`, each found by memmem: a few times faster than `in`). */
static PyObject *contains(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "contains(raw: bytes, needles: tuple[bytes, ...])");
        return NULL;
    }
    const char *raw = PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]), count = PyTuple_GET_SIZE(args[1]);
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *needle = PyTuple_GET_ITEM(args[1], i);
        if (!PyBytes_Check(needle)) {
            PyErr_SetString(PyExc_TypeError, "contains: each needle is bytes");
            return NULL;
        }
        if (memmem(raw, (size_t)size, PyBytes_AS_STRING(needle), (size_t)PyBytes_GET_SIZE(needle)) != NULL)
            Py_RETURN_TRUE;
    }
    Py_RETURN_FALSE;
}

/* contains_folded(raw: bytes, needles: tuple[bytes, ...]) -> bool: whether any needle (lower
   case) occurs in raw with ASCII letters folded to lower case (`any(n in raw.lower() for n in
   needles)`), in one pass and without the folded copy. */
static PyObject *contains_folded(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "contains_folded(raw: bytes, needles: tuple[bytes, ...])");
        return NULL;
    }
    const unsigned char *raw = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t size = PyBytes_GET_SIZE(args[0]), count = PyTuple_GET_SIZE(args[1]);
    unsigned char first[256] = {0};
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *needle = PyTuple_GET_ITEM(args[1], k);
        if (!PyBytes_Check(needle)) {
            PyErr_SetString(PyExc_TypeError, "contains_folded: each needle is bytes");
            return NULL;
        }
        if (PyBytes_GET_SIZE(needle) == 0)
            Py_RETURN_TRUE;
        first[(unsigned char)PyBytes_AS_STRING(needle)[0]] = 1;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        unsigned char c = raw[i];
        if (c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        if (!first[c])
            continue;
        for (Py_ssize_t k = 0; k < count; k++) {
            PyObject *needle = PyTuple_GET_ITEM(args[1], k);
            const unsigned char *n = (const unsigned char *)PyBytes_AS_STRING(needle);
            Py_ssize_t len = PyBytes_GET_SIZE(needle), j = 1;
            if (n[0] != c || len > size - i)
                continue;
            for (; j < len; j++) {
                unsigned char d = raw[i + j];
                if (d >= 'A' && d <= 'Z')
                    d += 'a' - 'A';
                if (d != n[j])
                    break;
            }
            if (j == len)
                Py_RETURN_TRUE;
        }
    }
    Py_RETURN_FALSE;
}

static PyMethodDef methods[] = {
    {"contains", (PyCFunction)(void (*)(void))contains, METH_FASTCALL,
     "contains(raw: bytes, needles: tuple[bytes, ...]) -> whether any needle occurs in raw"},
    {"contains_folded", (PyCFunction)(void (*)(void))contains_folded, METH_FASTCALL,
     "contains_folded(raw: bytes, needles: tuple[bytes, ...]) -> whether any needle occurs in raw.lower()"},
    {"scan", scan, METH_O, "scan(raw: bytes) -> the frame's envelope tuple, or None for the exact path"},
    {"configure", configure, METH_VARARGS, "configure(missing, params_for: frozenset, number_text: type)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_wirescan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wirescan(void) {
    for (int c = 0x20; c < 0x80; c++)
        PLAIN[c] = c != '"' && c != '\\';
    S_OK = PyUnicode_InternFromString("ok");
    S_ABSENT = PyUnicode_InternFromString("absent");
    S_STR = PyUnicode_InternFromString("str");
    S_INT = PyUnicode_InternFromString("int");
    S_OBJECT = PyUnicode_InternFromString("object");
    S_ARRAY = PyUnicode_InternFromString("array");
    S_N = PyUnicode_InternFromString("n");
    S_S = PyUnicode_InternFromString("s");
    if (!S_OK || !S_ABSENT || !S_STR || !S_INT || !S_OBJECT || !S_ARRAY || !S_N || !S_S)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL)
        return NULL;
    META_KEYS[0] = PyUnicode_InternFromString("progressToken");
    META_KEYS[1] = PyUnicode_InternFromString(PROTOCOL_VERSION);
    META_KEYS[2] = PyUnicode_InternFromString(CLIENT_CAPABILITIES);
    META_KEYS[3] = PyUnicode_InternFromString(LOG_LEVEL);
    if (!META_KEYS[0] || !META_KEYS[1] || !META_KEYS[2] || !META_KEYS[3])
        return NULL;
    PyObject *names = Py_BuildValue("(sss)", PROTOCOL_VERSION, CLIENT_CAPABILITIES, LOG_LEVEL);
    if (names == NULL || PyModule_AddObjectRef(mod, "META_NAMES", names) < 0) {
        Py_XDECREF(names);
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(names);
    /* the items of the envelope tuple scan() gives: a build from other sources gives another count,
       and the session core then takes the exact path (analyzer/analysis/session.py) */
    if (PyModule_AddIntConstant(mod, "ENVELOPE_ITEMS", 9) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
