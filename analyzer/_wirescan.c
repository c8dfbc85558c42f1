/* analyzer._wirescan: the envelope of a JSON-RPC frame, read straight from its bytes.

   scan(raw: bytes) -> tuple | None

   One strict pass over the whole frame checks what analyzer/jsonwire.py checks (RFC 8259
   grammar, UTF-8 as Python's strict decoder accepts it, no duplicate member names at any depth)
   and then builds Python objects only for the envelope the session core reads: the signature
   key of analyzer/classify.py, the method, the id and its wire text, `params._meta`, `params`
   for a few methods, and `result.resultType`. Everything else in the frame is validated and
   skipped, never built.

   None means "not here": the frame is not JSON, not UTF-8, not an object, has a duplicate name,
   a member name with an escape, nesting deeper than MAX_DEPTH, an envelope of another shape
   than the common ones, or a value in the built parts that only the exact parser can give (an
   integer of more than 18 digits, a lone surrogate); a fraction or an exponent there is built as
   NumberText. The
   caller then takes the exact path (analyzer/jsonwire.py); this module never decides a finding.

   The tuple: (key, method, id, id_text, meta, params, result_type) where
   - key is classify's signature key: ("ok", method "absent"|"str", id "absent"|"str"|"int",
     params "absent"|"object"|"array", has result, error "absent"|"ok");
   - method is a str or None; id an int, a str or the MISSING object; id_text its wire text
     (None without an id);
   - meta is params._meta as a dict when both are objects, else None;
   - params is the params object when the method is in PARAMS_FOR, else None;
   - result_type is result.resultType when result is an object that has it, else MISSING.
   configure(missing, params_for, number_text) sets MISSING, PARAMS_FOR and the NumberText type. */

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
/* analyzer/mcp.py's META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES and META_LOG_LEVEL (META_NAMES,
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
static PyObject *S_OK, *S_ABSENT, *S_STR, *S_INT, *S_OBJECT, *S_ARRAY;

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

/* 1 when `raw` is valid, strict JSON (as analyzer/jsonwire.py accepts it, without duplicate
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

static PyObject *shape_key(Envelope *env) {
    return PyTuple_Pack(6, S_OK, env->method_shape, env->id_shape, env->params_shape,
                        env->m[RESULT].start != NULL ? Py_True : Py_False, env->error_shape);
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

/* -- scan ------------------------------------------------------------------------------- */

static PyObject *scan(PyObject *self, PyObject *raw) {
    Envelope env;
    Span *m = env.m;
    PyObject *method = NULL, *ident = NULL, *id_text = NULL, *meta = NULL, *params = NULL, *rtype = NULL;
    PyObject *key = NULL;
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
            meta = build(m[META].start, m[META].end);
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
    key = shape_key(&env);
    if (key == NULL)
        goto fail;
    PyObject *out = PyTuple_Pack(7, key, method != NULL ? method : Py_None, ident, id_text,
                                 meta != NULL ? meta : Py_None, params != NULL ? params : Py_None, rtype);
    Py_DECREF(key);
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

/* -- feed: the session core's fast path, natively ----------------------------------------- */

/* What feed() reads and changes of one SessionAnalysis (analyzer/session.py), fetched once per
   call. The exact path changes only init_request of what is cached here (re-read after it). */
typedef struct {
    PyObject *analysis;
    PyObject *outstanding, *answered, *tokens, *done_tokens, *kinds, *stats, *last_sent, *quiet, *rows, *sid, *clean;
    PyObject *frame, *answer, *stats_of, *init_request;
    int handshake, stateless, progress_quiet;
} Core;

static PyObject *K_REQUEST, *K_NOTIFICATION, *K_RESPONSE, *K_ERROR, *C2S, *S2C, *WIREMSG;
static PyObject *SKETCH = NULL; /* analyzer.latency.LatencySketch */
static double LOG_GAMMA = 0, MIN_SECONDS = 0;
static PyObject *S_ADD, *S_SEQ, *S_TS, *S_METHOD, *S_ROW, *S_LATENCIES, *S_ERRORS, *S_BUCKETS, *S_COUNT, *S_MAX;
static PyObject *EMPTY, *S_NEW, *ONE, *S_N, *S_S, *S_CALLS, *S_CLIENT_REQUESTS, *S_TOKEN, *S_LOG_LEVEL, *S_BATCH, *S_CANCELLED, *S_FRAMES;

static void core_clear(Core *c) {
    Py_CLEAR(c->outstanding);
    Py_CLEAR(c->answered);
    Py_CLEAR(c->tokens);
    Py_CLEAR(c->done_tokens);
    Py_CLEAR(c->kinds);
    Py_CLEAR(c->stats);
    Py_CLEAR(c->last_sent);
    Py_CLEAR(c->quiet);
    Py_CLEAR(c->rows);
    Py_CLEAR(c->sid);
    Py_CLEAR(c->clean);
    Py_CLEAR(c->frame);
    Py_CLEAR(c->answer);
    Py_CLEAR(c->stats_of);
    Py_CLEAR(c->init_request);
}

static int core_flag(PyObject *analysis, const char *name) {
    PyObject *v = PyObject_GetAttrString(analysis, name);
    int truth;
    if (v == NULL)
        return -1;
    truth = PyObject_IsTrue(v);
    Py_DECREF(v);
    return truth;
}

static int core_init(Core *c, PyObject *analysis) {
    PyObject *dispatch;
    memset(c, 0, sizeof(*c));
    c->analysis = analysis;
#define GET(field, name) if ((c->field = PyObject_GetAttrString(analysis, name)) == NULL) return -1
    GET(outstanding, "outstanding");
    GET(answered, "answered");
    GET(tokens, "tokens");
    GET(done_tokens, "done_tokens");
    GET(kinds, "kinds");
    GET(stats, "method_stats");
    GET(last_sent, "last_sent");
    GET(quiet, "_quiet");
    GET(rows, "_rows");
    GET(sid, "session_id");
    GET(frame, "frame");
    GET(answer, "_answer");
    GET(stats_of, "_stats");
    GET(init_request, "init_request");
#undef GET
    if ((dispatch = PyObject_GetAttrString(analysis, "_dispatch")) == NULL)
        return -1;
    c->clean = PyObject_GetAttrString(dispatch, "clean");
    Py_DECREF(dispatch);
    if (c->clean == NULL || (c->handshake = core_flag(analysis, "handshake")) < 0 ||
        (c->stateless = core_flag(analysis, "stateless")) < 0 ||
        (c->progress_quiet = core_flag(analysis, "_progress_quiet")) < 0)
        return -1;
    if (!PyDict_CheckExact(c->outstanding) || !PyDict_CheckExact(c->answered) || !PyDict_CheckExact(c->tokens) || !PyDict_CheckExact(c->done_tokens) ||
        !PyDict_CheckExact(c->kinds) || !PyDict_CheckExact(c->stats) || !PyDict_CheckExact(c->last_sent) ||
        !PyDict_CheckExact(c->quiet) || !PyList_CheckExact(c->rows) || !PyDict_CheckExact(c->clean)) {
        PyErr_SetString(PyExc_TypeError, "feed(): not a SessionAnalysis");
        return -1;
    }
    return 0;
}

static int add_one(PyObject *dict, PyObject *key) {
    PyObject *n = PyDict_GetItemWithError(dict, key), *m;
    int rc;
    if (n == NULL && PyErr_Occurred())
        return -1;
    m = n == NULL ? Py_NewRef(ONE) : PyNumber_Add(n, ONE);
    if (m == NULL)
        return -1;
    rc = PyDict_SetItem(dict, key, m);
    Py_DECREF(m);
    return rc;
}

static int attr_add_one(PyObject *obj, PyObject *name) {
    PyObject *n = PyObject_GetAttr(obj, name), *m;
    int rc;
    if (n == NULL)
        return -1;
    m = PyNumber_Add(n, ONE);
    Py_DECREF(n);
    if (m == NULL)
        return -1;
    rc = PyObject_SetAttr(obj, name, m);
    Py_DECREF(m);
    return rc;
}

/* Whether no rule looks at `method` sent `direction` (analysis._quiet); unknown counts as no. */
static int quiet(Core *c, PyObject *method, PyObject *direction, PyObject *is_request) {
    PyObject *key = PyTuple_Pack(3, method, direction, is_request), *q;
    if (key == NULL)
        return -1;
    q = PyDict_GetItemWithError(c->quiet, key);
    Py_DECREF(key);
    if (q == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return q == Py_True;
}

/* (direction, ("n"|"s", id)): session.id_key for an int or a str. */
static PyObject *pair_key(PyObject *direction, PyObject *ident) {
    PyObject *inner = PyTuple_Pack(2, PyLong_CheckExact(ident) ? S_N : S_S, ident), *key;
    if (inner == NULL)
        return NULL;
    key = PyTuple_Pack(2, direction, inner);
    Py_DECREF(inner);
    return key;
}

static PyObject *message_row(Core *c, PyObject *seq, PyObject *direction, PyObject *kind, PyObject *id_text,
                             PyObject *method) {
    PyObject *row = PyList_New(9);
    if (row == NULL)
        return NULL;
    PyObject *items[9] = {c->sid, seq, Py_None, direction, kind, id_text, method, Py_None, Py_None};
    for (int i = 0; i < 9; i++)
        PyList_SET_ITEM(row, i, Py_NewRef(items[i]));
    return row;
}

/* A WireMsg for a request, as WireMsg.__init__ makes it (object.__new__, then its attributes
   set here: the Python __init__ is the one cost of a request that this avoids). */
#define WIREMSG_FIELDS 11
static const char *const WIREMSG_NAMES[WIREMSG_FIELDS] = {"seq", "ts", "direction", "raw", "sig", "kind",
                                                          "method", "id", "id_json", "row", "pairing"};
static PyObject *WIREMSG_ATTRS[WIREMSG_FIELDS];

static PyObject *wiremsg(PyObject *const *values) {
    PyTypeObject *type = (PyTypeObject *)WIREMSG;
    PyObject *msg = type->tp_new(type, EMPTY, NULL);
    if (msg == NULL)
        return NULL;
    for (int i = 0; i < WIREMSG_FIELDS; i++) {
        if (PyObject_SetAttr(msg, WIREMSG_ATTRS[i], values[i]) < 0) {
            Py_DECREF(msg);
            return NULL;
        }
    }
    return msg;
}

/* A progress token as the Python side keys it natively: a str or an int. NULL: not here (the
   Python side keys other tokens), or an error when one is set. */
static PyObject *token_of(Span s) {
    unsigned char first = *s.start;
    if (first == '"')
        return build_str(s);
    if ((first == '-' || (first >= '0' && first <= '9')) && is_int(s))
        return build_int(s);
    return NULL;
}

/* A request: 1 taken, 0 for the Python side, -1 error. The same changes as SessionAnalysis._fast. */
static int take_request(Core *c, Envelope *env, PyObject *seq, PyObject *ts, PyObject *direction, PyObject *raw,
                        PyObject *sig, PyObject *method, PyObject *ident, PyObject *id_text) {
    Span *m = env->m;
    int is_c2s = PyUnicode_CompareWithASCIIString(direction, "c2s") == 0;
    int rc = 0, q;
    PyObject *key = NULL, *token = NULL, *row = NULL, *msg = NULL, *stats = NULL, *tkey = NULL;
    if (same(m[METHOD], "\"initialize\""))
        return 0;
    if ((key = pair_key(direction, ident)) == NULL)
        return -1;
    if ((rc = PyDict_Contains(c->outstanding, key)) != 0 || (rc = PyDict_Contains(c->answered, key)) != 0) {
        Py_DECREF(key);
        return rc < 0 ? -1 : 0;
    }
    if (c->handshake && is_c2s && c->init_request == Py_None && m[META_VERSION].start != NULL)
        goto python; /* a dual-era client's probe */
    if ((q = quiet(c, method, direction, Py_True)) <= 0) {
        rc = q;
        goto done;
    }
    if (c->stateless && is_c2s && (m[META_VERSION].start == NULL || m[META_CAPABILITIES].start == NULL))
        goto python;
    if (m[TOKEN].start != NULL) {
        unsigned char first = *m[TOKEN].start;
        if (first == '"' || first == '-' || (first >= '0' && first <= '9')) {
            if ((token = token_of(m[TOKEN])) == NULL)
                goto built; /* a fraction, a long integer, a lone surrogate: the Python side keys it */
        } /* true, false, null, an object or an array: no token */
    }
    if ((row = message_row(c, seq, direction, K_REQUEST, id_text, method)) == NULL)
        goto fail;
    {
        PyObject *values[WIREMSG_FIELDS] = {seq, ts, direction, raw, sig, K_REQUEST, method, ident, id_text, row,
                                            S_NEW};
        if ((msg = wiremsg(values)) == NULL)
            goto fail;
    }
    if (PyDict_SetItem(c->outstanding, key, msg) < 0)
        goto fail;
    stats = PyDict_GetItemWithError(c->stats, method);
    if (stats != NULL)
        Py_INCREF(stats);
    else if (PyErr_Occurred() || (stats = PyObject_CallOneArg(c->stats_of, method)) == NULL)
        goto fail;
    if (add_one(stats, S_CALLS) < 0)
        goto fail;
    if (token != NULL) {
        if ((tkey = pair_key(direction, token)) == NULL || PyObject_SetAttr(msg, S_TOKEN, tkey) < 0)
            goto fail;
        PyObject *entry = PyList_New(2);
        if (entry == NULL)
            goto fail;
        PyList_SET_ITEM(entry, 0, Py_NewRef(msg));
        PyList_SET_ITEM(entry, 1, Py_NewRef(Py_None));
        rc = PyDict_SetItem(c->tokens, tkey, entry);
        Py_DECREF(entry);
        if (rc < 0)
            goto fail;
    }
    if (m[META_LOG_LEVEL].start != NULL && PyObject_SetAttr(msg, S_LOG_LEVEL, Py_True) < 0)
        goto fail;
    if (is_c2s && attr_add_one(c->analysis, S_CLIENT_REQUESTS) < 0)
        goto fail;
    if (PyDict_SetItem(c->last_sent, direction, msg) < 0)
        goto fail;
    rc = 1;
    goto done;
built:
    if (PyErr_Occurred())
        goto fail;
python:
    rc = 0;
    goto done;
fail:
    rc = -1;
done:
    Py_XDECREF(key);
    Py_XDECREF(token);
    Py_XDECREF(row);
    Py_XDECREF(msg);
    Py_XDECREF(stats);
    Py_XDECREF(tkey);
    return rc;
}

/* LatencySketch.add(seconds) for a finite latency (analyzer/latency.py, to the bit). */
static int sketch_add(PyObject *sketch, double seconds) {
    PyObject *buckets, *key, *max;
    int rc;
    if (Py_TYPE(sketch) != (PyTypeObject *)SKETCH) {
        PyObject *value = PyFloat_FromDouble(seconds), *result;
        if (value == NULL)
            return -1;
        result = PyObject_CallMethodOneArg(sketch, S_ADD, value);
        Py_DECREF(value);
        Py_XDECREF(result);
        return result == NULL ? -1 : 0;
    }
    double value = seconds > MIN_SECONDS ? seconds : MIN_SECONDS;
    if ((buckets = PyObject_GetAttr(sketch, S_BUCKETS)) == NULL)
        return -1;
    key = PyLong_FromDouble(ceil(log(value) / LOG_GAMMA));
    rc = key == NULL ? -1 : add_one(buckets, key);
    Py_XDECREF(key);
    Py_DECREF(buckets);
    if (rc < 0 || attr_add_one(sketch, S_COUNT) < 0 || (max = PyObject_GetAttr(sketch, S_MAX)) == NULL)
        return -1;
    rc = 0;
    if (max == Py_None || (PyFloat_Check(max) && seconds > PyFloat_AS_DOUBLE(max))) {
        PyObject *now = PyFloat_FromDouble(seconds);
        rc = now == NULL ? -1 : PyObject_SetAttr(sketch, S_MAX, now);
        Py_XDECREF(now);
    } else if (!PyFloat_Check(max)) {
        PyObject *now = PyFloat_FromDouble(seconds);
        int greater = now == NULL ? -1 : PyObject_RichCompareBool(now, max, Py_GT);
        rc = greater < 0 ? -1 : (greater ? PyObject_SetAttr(sketch, S_MAX, now) : 0);
        Py_XDECREF(now);
    }
    Py_DECREF(max);
    return rc;
}

/* SessionAnalysis._answer, natively for a request the fast path recorded (a WireMsg, its method
   text as the scanner gave it) and float times; the Python method otherwise. */
static int answer(Core *c, PyObject *row, PyObject *kind, PyObject *seq, PyObject *ts, PyObject *key, PyObject *req) {
    PyObject *req_seq = NULL, *req_ts = NULL, *method = NULL, *pair = NULL, *latency = NULL, *stats = NULL;
    PyObject *sketch = NULL, *req_row = NULL, *token = NULL;
    int rc = -1;
    if (Py_TYPE(req) != (PyTypeObject *)WIREMSG || !PyFloat_CheckExact(ts) ||
        (req_ts = PyObject_GetAttr(req, S_TS)) == NULL || !PyFloat_CheckExact(req_ts)) {
        Py_XDECREF(req_ts);
        if (PyErr_Occurred())
            return -1;
        PyObject *args[6] = {row, kind, seq, ts, key, req};
        PyObject *result = PyObject_Vectorcall(c->answer, args, 6, NULL);
        Py_XDECREF(result);
        return result == NULL ? -1 : 0;
    }
    if ((req_seq = PyObject_GetAttr(req, S_SEQ)) == NULL || (method = PyObject_GetAttr(req, S_METHOD)) == NULL ||
        (pair = PyTuple_Pack(2, req_seq, seq)) == NULL || PyDict_SetItem(c->answered, key, pair) < 0)
        goto done;
    double seconds = PyFloat_AS_DOUBLE(ts) - PyFloat_AS_DOUBLE(req_ts);
    int finite = isfinite(seconds);
    latency = finite ? PyFloat_FromDouble(seconds) : Py_NewRef(Py_None);
    if (latency == NULL || PyList_SetItem(row, 6, Py_NewRef(method)) < 0 || PyList_SetItem(row, 7, Py_NewRef(req_seq)) < 0 ||
        PyList_SetItem(row, 8, Py_NewRef(latency)) < 0)
        goto done;
    stats = PyDict_GetItemWithError(c->stats, method);
    if (stats != NULL)
        Py_INCREF(stats);
    else if (PyErr_Occurred() || (stats = PyObject_CallOneArg(c->stats_of, method)) == NULL)
        goto done;
    if (finite) {
        if ((sketch = PyDict_GetItemWithError(stats, S_LATENCIES)) == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_KeyError, "latencies");
            goto done;
        }
        if (sketch_add(sketch, seconds) < 0)
            goto done;
        sketch = NULL; /* borrowed */
    }
    if (kind == K_ERROR && add_one(stats, S_ERRORS) < 0)
        goto done;
    if ((req_row = PyObject_GetAttr(req, S_ROW)) == NULL)
        goto done;
    if (req_row != Py_None) {
        if (PyList_SetItem(req_row, 7, Py_NewRef(seq)) < 0 || PyList_SetItem(req_row, 8, Py_NewRef(latency)) < 0 ||
            PyList_Append(c->rows, req_row) < 0 || PyObject_SetAttr(req, S_ROW, Py_None) < 0)
            goto done;
    }
    if ((token = PyObject_GetAttr(req, S_TOKEN)) == NULL)
        goto done;
    if (token != Py_None) {
        int known = PyDict_Contains(c->tokens, token);
        if (known < 0 || (known && PyDict_DelItem(c->tokens, token) < 0) || PyDict_SetItem(c->done_tokens, token, seq) < 0)
            goto done;
    }
    rc = 0;
done:
    Py_XDECREF(req_seq);
    Py_XDECREF(req_ts);
    Py_XDECREF(method);
    Py_XDECREF(pair);
    Py_XDECREF(latency);
    Py_XDECREF(stats);
    Py_XDECREF(req_row);
    Py_XDECREF(token);
    return rc;
}

/* A response or an error that answers a request no rule needs to see this answer of. */
static int take_response(Core *c, Envelope *env, PyObject *seq, PyObject *ts, PyObject *direction, PyObject *raw,
                         PyObject *sig, PyObject *kind, PyObject *ident, PyObject *id_text) {
    Span *m = env->m;
    PyObject *other = PyUnicode_CompareWithASCIIString(direction, "c2s") == 0 ? S2C : C2S;
    PyObject *key = NULL, *req, *attr = NULL, *row = NULL, *result = NULL, *sent = NULL;
    int rc = 0;
    if (c->stateless && kind == K_RESPONSE && m[RESULT].start != NULL && *m[RESULT].start == '{' &&
        m[RESULT_TYPE].start != NULL && !same(m[RESULT_TYPE], "\"complete\"") &&
        !same(m[RESULT_TYPE], "\"input_required\""))
        return 0;
    if ((key = pair_key(other, ident)) == NULL)
        return -1;
    req = PyDict_GetItemWithError(c->outstanding, key); /* borrowed */
    if (req == NULL) {
        rc = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(req);
    if (req == c->init_request)
        goto python;
    if ((attr = PyObject_GetAttr(req, S_BATCH)) == NULL)
        goto fail;
    if (attr != Py_None)
        goto python;
    Py_DECREF(attr);
    if ((attr = PyObject_GetAttr(req, S_CANCELLED)) == NULL)
        goto fail;
    if (attr != Py_None) {
        int earlier = PyObject_RichCompareBool(attr, seq, Py_LT);
        if (earlier < 0)
            goto fail;
        if (earlier)
            goto python;
    }
    if ((row = message_row(c, seq, direction, kind, id_text, Py_None)) == NULL || PyList_Append(c->rows, row) < 0 ||
        PyDict_DelItem(c->outstanding, key) < 0)
        goto fail;
    {
        if (answer(c, row, kind, seq, ts, key, req) < 0)
            goto fail;
    }
    if ((sent = PyTuple_Pack(9, seq, ts, direction, raw, sig, kind, Py_None, ident, id_text)) == NULL ||
        PyDict_SetItem(c->last_sent, direction, sent) < 0)
        goto fail;
    rc = 1;
    goto done_req;
python:
    rc = 0;
    goto done_req;
fail:
    rc = -1;
done_req:
    Py_DECREF(req);
done:
    Py_XDECREF(key);
    Py_XDECREF(attr);
    Py_XDECREF(row);
    Py_XDECREF(result);
    Py_XDECREF(sent);
    return rc;
}

/* notifications/progress for a request in progress, its value increasing (SessionAnalysis._progress):
   1 followed here, 0 for the Python side (a rule looks at it), -1 error. */
static int progressed(Core *c, Envelope *env, PyObject *direction) {
    Span *m = env->m;
    PyObject *other = PyUnicode_CompareWithASCIIString(direction, "c2s") == 0 ? S2C : C2S;
    PyObject *token, *key, *entry, *batch, *value = NULL;
    int rc = 0;
    if (!c->progress_quiet || m[PROGRESS_TOKEN].start == NULL)
        return 0;
    if ((token = token_of(m[PROGRESS_TOKEN])) == NULL)
        return PyErr_Occurred() ? -1 : 0;
    key = pair_key(other, token);
    Py_DECREF(token);
    if (key == NULL)
        return -1;
    entry = PyDict_GetItemWithError(c->tokens, key); /* [request, last value] */
    Py_DECREF(key);
    if (entry == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyList_CheckExact(entry) || PyList_GET_SIZE(entry) != 2)
        return 0;
    Py_INCREF(entry); /* held across the attribute lookup */
    if ((batch = PyObject_GetAttr(PyList_GET_ITEM(entry, 0), S_BATCH)) == NULL) {
        rc = -1;
        goto done;
    }
    Py_DECREF(batch);
    if (batch != Py_None)
        goto done; /* rc 0 */
    Span v = m[PROGRESS];
    rc = 1; /* no numeric progress: nothing to compare */
    if (v.start != NULL && (*v.start == '-' || (*v.start >= '0' && *v.start <= '9'))) {
        char text[64];
        size_t n = v.end - v.start;
        rc = 0;
        if (n >= sizeof(text) || (is_int(v) == 0 && memchr(v.start, '.', n) == NULL &&
                                  memchr(v.start, 'e', n) == NULL && memchr(v.start, 'E', n) == NULL))
            goto done; /* a long number: the Python side reads it */
        memcpy(text, v.start, n);
        text[n] = 0;
        double d = PyOS_string_to_double(text, NULL, NULL);
        PyObject *last = PyList_GET_ITEM(entry, 1);
        if (d == -1.0 && PyErr_Occurred())
            rc = -1;
        else if (last != Py_None && (!PyFloat_CheckExact(last) || d <= PyFloat_AS_DOUBLE(last)))
            rc = 0; /* not increasing: progress-not-increasing looks at it */
        else if ((value = PyFloat_FromDouble(d)) == NULL)
            rc = -1;
        else
            rc = PyList_SetItem(entry, 1, value) < 0 ? -1 : 1; /* steals value */
    }
done:
    Py_DECREF(entry);
    return rc;
}

/* A notification no rule looks at, other than the ones the session core follows. */
static int take_notification(Core *c, Envelope *env, PyObject *seq, PyObject *ts, PyObject *direction,
                             PyObject *raw, PyObject *sig, PyObject *method) {
    Span *m = env->m;
    PyObject *row = NULL, *sent = NULL;
    int rc, q;
    if (same(m[METHOD], "\"notifications/cancelled\"") || same(m[METHOD], "\"notifications/initialized\"") ||
        (c->stateless && same(m[METHOD], "\"notifications/message\"")))
        return 0;
    if ((q = quiet(c, method, direction, Py_False)) <= 0)
        return q;
    if (same(m[METHOD], "\"notifications/progress\"") && (q = progressed(c, env, direction)) <= 0)
        return q;
    rc = -1;
    if ((row = message_row(c, seq, direction, K_NOTIFICATION, Py_None, method)) != NULL &&
        PyList_Append(c->rows, row) == 0 &&
        (sent = PyTuple_Pack(9, seq, ts, direction, raw, sig, K_NOTIFICATION, method, MISSING, Py_None)) != NULL &&
        PyDict_SetItem(c->last_sent, direction, sent) == 0)
        rc = 1;
    Py_XDECREF(row);
    Py_XDECREF(sent);
    return rc;
}

/* One (seq, ts, direction, raw) row: 1 taken here, 0 for the Python side, -1 error. */
static int take(Core *c, PyObject *row) {
    Envelope env;
    PyObject *seq, *ts, *direction, *raw, *key, *shape, *sig, *kind;
    PyObject *method = NULL, *ident = NULL, *id_text = NULL;
    int rc = 0;
    if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 4)
        return 0;
    seq = PyTuple_GET_ITEM(row, 0);
    ts = PyTuple_GET_ITEM(row, 1);
    direction = PyTuple_GET_ITEM(row, 2);
    raw = PyTuple_GET_ITEM(row, 3);
    if (!PyUnicode_CheckExact(direction) || !envelope(raw, &env))
        return 0;
    if ((key = shape_key(&env)) == NULL)
        return -1;
    shape = PyDict_GetItemWithError(c->clean, key); /* (sig, kind), False, or unknown yet */
    Py_DECREF(key);
    if (shape == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(shape))
        return 0;
    Py_INCREF(shape); /* held while Python code runs (it could replace the dict's entry) */
    sig = PyTuple_GET_ITEM(shape, 0);
    kind = PyTuple_GET_ITEM(shape, 1);
    if ((env.method_shape == S_STR && (method = span_text(env.m[METHOD], 1)) == NULL) ||
        (env.id_shape != S_ABSENT && build_id(&env, &ident, &id_text) < 0)) {
        Py_XDECREF(method);
        Py_DECREF(shape);
        return -1;
    }
    if (kind == K_REQUEST)
        rc = take_request(c, &env, seq, ts, direction, raw, sig, method, ident, id_text);
    else if (kind == K_RESPONSE || kind == K_ERROR)
        rc = take_response(c, &env, seq, ts, direction, raw, sig, kind, ident, id_text);
    else if (kind == K_NOTIFICATION)
        rc = take_notification(c, &env, seq, ts, direction, raw, sig, method);
    if (rc == 1 && add_one(c->kinds, kind) < 0)
        rc = -1;
    Py_XDECREF(method);
    Py_XDECREF(ident);
    Py_XDECREF(id_text);
    Py_DECREF(shape);
    return rc;
}

static PyObject *feed(PyObject *self, PyObject *args) {
    PyObject *analysis, *rows;
    Core c;
    Py_ssize_t taken = 0;
    if (!PyArg_ParseTuple(args, "OO!", &analysis, &PyList_Type, &rows))
        return NULL;
    if (WIREMSG == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_wirescan.configure_core() was not called");
        return NULL;
    }
    if (core_init(&c, analysis) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = Py_NewRef(PyList_GET_ITEM(rows, i));
        int rc = take(&c, row);
        if (rc != 0) {
            Py_DECREF(row);
            if (rc < 0)
                goto fail;
            taken++;
            continue;
        }
        PyObject *result = PyTuple_CheckExact(row) ? PyObject_Call(c.frame, row, NULL) : NULL;
        Py_DECREF(row);
        if (result == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "feed(): rows are (seq, ts, direction, raw) tuples");
            goto fail;
        }
        Py_DECREF(result);
        Py_XSETREF(c.init_request, PyObject_GetAttrString(analysis, "init_request"));
        if (c.init_request == NULL)
            goto fail;
    }
    if (taken) { /* SessionAnalysis.frame counts the frames it takes; these are counted here */
        PyObject *n = PyObject_GetAttr(analysis, S_FRAMES), *sum;
        if (n == NULL)
            goto fail;
        PyObject *more = PyLong_FromSsize_t(taken);
        sum = more == NULL ? NULL : PyNumber_Add(n, more);
        Py_DECREF(n);
        Py_XDECREF(more);
        if (sum == NULL || PyObject_SetAttr(analysis, S_FRAMES, sum) < 0) {
            Py_XDECREF(sum);
            goto fail;
        }
        Py_DECREF(sum);
    }
    core_clear(&c);
    return PyLong_FromSsize_t(taken);
fail:
    core_clear(&c);
    return NULL;
}

static PyObject *configure_core(PyObject *self, PyObject *args) {
    PyObject *request, *notification, *response, *error, *c2s, *s2c, *wiremsg, *sketch;
    if (!PyArg_ParseTuple(args, "UUUUUUOOdd", &request, &notification, &response, &error, &c2s, &s2c, &wiremsg,
                          &sketch, &LOG_GAMMA, &MIN_SECONDS))
        return NULL;
    Py_XSETREF(SKETCH, Py_NewRef(sketch));
    Py_XSETREF(K_REQUEST, Py_NewRef(request));
    Py_XSETREF(K_NOTIFICATION, Py_NewRef(notification));
    Py_XSETREF(K_RESPONSE, Py_NewRef(response));
    Py_XSETREF(K_ERROR, Py_NewRef(error));
    Py_XSETREF(C2S, Py_NewRef(c2s));
    Py_XSETREF(S2C, Py_NewRef(s2c));
    Py_XSETREF(WIREMSG, Py_NewRef(wiremsg));
    Py_RETURN_NONE;
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

static PyMethodDef methods[] = {
    {"scan", scan, METH_O, "scan(raw: bytes) -> the frame's envelope tuple, or None for the exact path"},
    {"configure", configure, METH_VARARGS, "configure(missing, params_for: frozenset, number_text: type)"},
    {"feed", feed, METH_VARARGS, "feed(analysis, rows) -> frames taken natively; the others go to analysis.frame"},
    {"configure_core", configure_core, METH_VARARGS,
     "configure_core(request, notification, response, error, c2s, s2c, WireMsg, LatencySketch, log_gamma, "
     "min_seconds)"},
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
    ONE = PyLong_FromLong(1);
    EMPTY = PyTuple_New(0);
    S_NEW = PyUnicode_InternFromString("new");
    for (int i = 0; i < WIREMSG_FIELDS; i++) {
        if ((WIREMSG_ATTRS[i] = PyUnicode_InternFromString(WIREMSG_NAMES[i])) == NULL)
            return NULL;
    }
    S_ADD = PyUnicode_InternFromString("add");
    S_SEQ = PyUnicode_InternFromString("seq");
    S_TS = PyUnicode_InternFromString("ts");
    S_METHOD = PyUnicode_InternFromString("method");
    S_ROW = PyUnicode_InternFromString("row");
    S_LATENCIES = PyUnicode_InternFromString("latencies");
    S_ERRORS = PyUnicode_InternFromString("errors");
    S_BUCKETS = PyUnicode_InternFromString("buckets");
    S_COUNT = PyUnicode_InternFromString("count");
    S_MAX = PyUnicode_InternFromString("max");
    S_N = PyUnicode_InternFromString("n");
    S_S = PyUnicode_InternFromString("s");
    S_CALLS = PyUnicode_InternFromString("calls");
    S_CLIENT_REQUESTS = PyUnicode_InternFromString("client_requests");
    S_TOKEN = PyUnicode_InternFromString("token");
    S_LOG_LEVEL = PyUnicode_InternFromString("log_level");
    S_BATCH = PyUnicode_InternFromString("batch");
    S_CANCELLED = PyUnicode_InternFromString("cancelled");
    S_FRAMES = PyUnicode_InternFromString("frames");
    if (!S_ADD || !S_SEQ || !S_TS || !S_METHOD || !S_ROW || !S_LATENCIES || !S_ERRORS || !S_BUCKETS || !S_COUNT || !S_MAX)
        return NULL;
    if (!EMPTY || !S_NEW || !ONE || !S_OK || !S_ABSENT || !S_STR || !S_INT || !S_OBJECT || !S_ARRAY || !S_N || !S_S || !S_CALLS ||
        !S_CLIENT_REQUESTS || !S_TOKEN || !S_LOG_LEVEL || !S_BATCH || !S_CANCELLED || !S_FRAMES)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL)
        return NULL;
    PyObject *names = Py_BuildValue("(sss)", PROTOCOL_VERSION, CLIENT_CAPABILITIES, LOG_LEVEL);
    if (names == NULL || PyModule_AddObjectRef(mod, "META_NAMES", names) < 0) {
        Py_XDECREF(names);
        Py_DECREF(mod);
        return NULL;
    }
    Py_DECREF(names);
    return mod;
}
