/* analyzer._rowio: SQLite connections for `mcptap analyze`'s million rows, in and out.

   Both open an existing database (never create one: the schema is analyzer/store.py's
   business) and offer the part of sqlite3.Connection that the analysis uses, without the
   per-row work of the sqlite3 module, which is most of the cost of a million rows:
   - Writer(path, busy_timeout_ms): execute(sql, params=()), executemany(sql, rows),
     in_transaction, close(); each row bound straight from its Python values (None, int,
     float, str, bytes);
   - Reader(path, busy_timeout_ms): execute(sql, params=()) -> a cursor with fetchmany(n),
     fetchall() and iteration, giving tuples of None, int, float, str (UTF-8) and bytes;
     close().

   Used only when it links the very SQLite the sqlite3 module uses (analyzer/store.py checks
   LIBVERSION_ADDRESS): two copies of SQLite on one file in one process lose each other's locks.

   Errors are sqlite3's own exceptions (sqlite3.OperationalError, sqlite3.IntegrityError, ...)
   with `sqlite_errorcode` and `sqlite_errorname` set, so callers treat both connections alike.
   Statements are prepared once per SQL text (a small cache). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <sqlite3.h>

#define CACHED 8

typedef struct {
    PyObject_HEAD
    sqlite3 *db;
    PyObject *sql[CACHED];
    sqlite3_stmt *stmt[CACHED];
    int next;
    int busy; /* a statement runs without the GIL: another thread must not use this connection */
} Writer;

static PyObject *SQLITE3 = NULL; /* the sqlite3 module, for its exception classes */

static PyObject *error(sqlite3 *db, int rc) {
    const char *kind = "OperationalError";
    int primary = rc & 0xff;
    if (primary == SQLITE_CONSTRAINT)
        kind = "IntegrityError";
    else if (primary == SQLITE_MISUSE || primary == SQLITE_RANGE)
        kind = "ProgrammingError";
    else if (primary == SQLITE_NOMEM)
        return PyErr_NoMemory();
    else if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
        kind = "DatabaseError";
    PyObject *cls = PyObject_GetAttrString(SQLITE3, kind);
    if (cls == NULL)
        return NULL;
    PyObject *exc = PyObject_CallFunction(cls, "s", db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    Py_DECREF(cls);
    if (exc == NULL)
        return NULL;
    PyObject *code = PyLong_FromLong(rc), *name = PyUnicode_FromString(sqlite3_errstr(rc));
    if (code == NULL || name == NULL || PyObject_SetAttrString(exc, "sqlite_errorcode", code) < 0 ||
        PyObject_SetAttrString(exc, "sqlite_errorname", name) < 0) {
        Py_XDECREF(code);
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(name);
    PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
    Py_DECREF(exc);
    return NULL;
}

/* Opens `args` = (path, busy_timeout_ms) with `flags` into *db; -1 with the error set. */
static int open_db(PyObject *args, int flags, sqlite3 **db) {
    PyObject *path;
    int busy_ms;
    if (!PyArg_ParseTuple(args, "O&i", PyUnicode_FSConverter, &path, &busy_ms))
        return -1;
    int rc = sqlite3_open_v2(PyBytes_AS_STRING(path), db, flags | SQLITE_OPEN_NOMUTEX, NULL);
    Py_DECREF(path);
    if (rc != SQLITE_OK) {
        error(*db, rc);
        sqlite3_close_v2(*db);
        *db = NULL;
        return -1;
    }
    sqlite3_extended_result_codes(*db, 1); /* as the sqlite3 module reports them */
    sqlite3_busy_timeout(*db, busy_ms);
    return 0;
}

/* True, with sqlite3.ProgrammingError set, when the connection was closed. */
static int closed(sqlite3 *db) {
    if (db == NULL) {
        PyObject *cls = PyObject_GetAttrString(SQLITE3, "ProgrammingError");
        if (cls != NULL) {
            PyErr_SetString(cls, "Cannot operate on a closed database.");
            Py_DECREF(cls);
        }
        return 1;
    }
    return 0;
}

/* One statement from `sql` into *stmt (NULL for text with no statement: blank, a comment);
   -1 with the error set, as the sqlite3 module refuses a second statement. */
static int compile(sqlite3 *db, PyObject *sql, sqlite3_stmt **stmt) {
    Py_ssize_t size;
    const char *text = PyUnicode_AsUTF8AndSize(sql, &size), *tail = NULL;
    *stmt = NULL;
    if (text == NULL)
        return -1;
    int rc = sqlite3_prepare_v2(db, text, (int)size + 1, stmt, &tail);
    if (rc != SQLITE_OK) {
        *stmt = NULL;
        error(db, rc);
        return -1;
    }
    while (tail != NULL && (*tail == ' ' || *tail == '\t' || *tail == '\n' || *tail == '\r' || *tail == ';'))
        tail++;
    if (tail != NULL && *tail != '\0') {
        sqlite3_finalize(*stmt);
        *stmt = NULL;
        PyObject *cls = PyObject_GetAttrString(SQLITE3, "ProgrammingError");
        if (cls != NULL) {
            PyErr_SetString(cls, "You can only execute one statement at a time.");
            Py_DECREF(cls);
        }
        return -1;
    }
    return 0;
}

static sqlite3_stmt *prepared(Writer *self, PyObject *sql) {
    for (int i = 0; i < CACHED; i++) {
        if (self->sql[i] != NULL && (self->sql[i] == sql || PyUnicode_Compare(self->sql[i], sql) == 0)) {
            sqlite3_reset(self->stmt[i]);
            sqlite3_clear_bindings(self->stmt[i]);
            return self->stmt[i];
        }
    }
    if (PyErr_Occurred())
        return NULL;
    sqlite3_stmt *stmt;
    if (compile(self->db, sql, &stmt) < 0 || stmt == NULL)
        return NULL; /* an error, or nothing to run (not cached) */
    int slot = self->next;
    self->next = (self->next + 1) % CACHED;
    if (self->stmt[slot] != NULL)
        sqlite3_finalize(self->stmt[slot]);
    Py_XSETREF(self->sql[slot], Py_NewRef(sql));
    self->stmt[slot] = stmt;
    return stmt;
}

static int bind(sqlite3 *db, sqlite3_stmt *stmt, PyObject *row) {
    PyObject *seq = PySequence_Fast(row, "parameters are a sequence");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n != sqlite3_bind_parameter_count(stmt)) {
        PyObject *cls = PyObject_GetAttrString(SQLITE3, "ProgrammingError");
        if (cls != NULL) {
            PyErr_Format(cls, "Incorrect number of bindings supplied. The current statement uses %d, and there are %zd supplied.",
                         sqlite3_bind_parameter_count(stmt), n);
            Py_DECREF(cls);
        }
        Py_DECREF(seq);
        return -1;
    }
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = items[i];
        int rc;
        if (v == Py_None) {
            rc = sqlite3_bind_null(stmt, (int)i + 1);
        } else if (PyLong_Check(v)) {
            long long x = PyLong_AsLongLong(v);
            if (x == -1 && PyErr_Occurred()) {
                Py_DECREF(seq);
                return -1;
            }
            rc = sqlite3_bind_int64(stmt, (int)i + 1, x);
        } else if (PyFloat_Check(v)) {
            rc = sqlite3_bind_double(stmt, (int)i + 1, PyFloat_AS_DOUBLE(v));
        } else if (PyUnicode_Check(v)) {
            Py_ssize_t size;
            const char *text = PyUnicode_AsUTF8AndSize(v, &size);
            if (text == NULL) {
                Py_DECREF(seq);
                return -1;
            }
            rc = sqlite3_bind_text(stmt, (int)i + 1, text, (int)size, SQLITE_TRANSIENT);
        } else if (PyBytes_Check(v)) {
            rc = sqlite3_bind_blob(stmt, (int)i + 1, PyBytes_AS_STRING(v), (int)PyBytes_GET_SIZE(v), SQLITE_TRANSIENT);
        } else {
            PyObject *cls = PyObject_GetAttrString(SQLITE3, "ProgrammingError");
            if (cls != NULL) {
                PyErr_Format(cls, "Error binding parameter %zd: type '%s' is not supported", i + 1, Py_TYPE(v)->tp_name);
                Py_DECREF(cls);
            }
            Py_DECREF(seq);
            return -1;
        }
        if (rc != SQLITE_OK) {
            Py_DECREF(seq);
            error(db, rc);
            return -1;
        }
    }
    Py_DECREF(seq);
    return 0;
}

/* Run `stmt` to its end (rows it returns are dropped: PRAGMAs that answer); `release`: let other
   threads run meanwhile (for statements that may wait on a lock). */
static int run(Writer *self, sqlite3_stmt *stmt, int release) {
    int rc;
    if (release) {
        Py_BEGIN_ALLOW_THREADS
        do {
            rc = sqlite3_step(stmt);
        } while (rc == SQLITE_ROW);
        Py_END_ALLOW_THREADS
    } else {
        do {
            rc = sqlite3_step(stmt);
        } while (rc == SQLITE_ROW);
    }
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) {
        error(self->db, rc);
        return -1;
    }
    return 0;
}

/* True, with sqlite3.ProgrammingError set, while another thread runs a statement here (the
   connection is opened without SQLite's mutex: one thread at a time, which this enforces). */
static int in_use(Writer *self) {
    if (!self->busy)
        return 0;
    PyObject *cls = PyObject_GetAttrString(SQLITE3, "ProgrammingError");
    if (cls != NULL) {
        PyErr_SetString(cls, "the connection is in use by another thread");
        Py_DECREF(cls);
    }
    return 1;
}

static PyObject *Writer_execute(Writer *self, PyObject *args) {
    PyObject *sql, *params = NULL;
    if (!PyArg_ParseTuple(args, "U|O", &sql, &params) || in_use(self) || closed(self->db))
        return NULL;
    sqlite3_stmt *stmt = prepared(self, sql);
    if (stmt == NULL && !PyErr_Occurred())
        Py_RETURN_NONE; /* blank: nothing to run */
    if (stmt == NULL || (params != NULL && bind(self->db, stmt, params) < 0))
        return NULL;
    self->busy = 1;
    int rc = run(self, stmt, 1);
    self->busy = 0;
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Writer_executemany(Writer *self, PyObject *args) {
    PyObject *sql, *rows, *iterator, *row;
    if (!PyArg_ParseTuple(args, "UO", &sql, &rows) || in_use(self) || closed(self->db))
        return NULL;
    sqlite3_stmt *stmt = prepared(self, sql);
    if (stmt == NULL && !PyErr_Occurred())
        Py_RETURN_NONE; /* blank: nothing to run */
    if (stmt == NULL || (iterator = PyObject_GetIter(rows)) == NULL)
        return NULL;
    while ((row = PyIter_Next(iterator)) != NULL) {
        int failed = bind(self->db, stmt, row) < 0 || run(self, stmt, 0) < 0;
        Py_DECREF(row);
        if (failed) {
            Py_DECREF(iterator);
            return NULL;
        }
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static void finalize(Writer *self) {
    for (int i = 0; i < CACHED; i++) {
        if (self->stmt[i] != NULL)
            sqlite3_finalize(self->stmt[i]);
        self->stmt[i] = NULL;
        Py_CLEAR(self->sql[i]);
    }
    if (self->db != NULL)
        sqlite3_close_v2(self->db);
    self->db = NULL;
}

static PyObject *Writer_close(Writer *self, PyObject *unused) {
    if (in_use(self))
        return NULL;
    finalize(self);
    Py_RETURN_NONE;
}

static PyObject *Writer_in_transaction(Writer *self, void *unused) {
    return PyBool_FromLong(self->db != NULL && !sqlite3_get_autocommit(self->db));
}

static int Writer_init(Writer *self, PyObject *args, PyObject *kwargs) {
    if (in_use(self))
        return -1;
    finalize(self);
    return open_db(args, SQLITE_OPEN_READWRITE, &self->db);
}

static void Writer_dealloc(Writer *self) {
    finalize(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Writer_methods[] = {
    {"execute", (PyCFunction)Writer_execute, METH_VARARGS, "execute(sql, params=())"},
    {"executemany", (PyCFunction)Writer_executemany, METH_VARARGS, "executemany(sql, rows)"},
    {"close", (PyCFunction)Writer_close, METH_NOARGS, "close()"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Writer_getset[] = {
    {"in_transaction", (getter)Writer_in_transaction, NULL, "a transaction is open", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject WriterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer._rowio.Writer",
    .tp_basicsize = sizeof(Writer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Writer(path, busy_timeout_ms): a write-only connection to an existing database",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Writer_init,
    .tp_dealloc = (destructor)Writer_dealloc,
    .tp_methods = Writer_methods,
    .tp_getset = Writer_getset,
};

/* -- Reader ---------------------------------------------------------------------------- */

#define SHORT_TEXTS 8   /* columns whose last short text is kept to be given again */
#define SHORT_TEXT 16   /* bytes */

typedef struct {
    PyObject_HEAD
    sqlite3 *db;
    sqlite3_stmt *stmt; /* the query being read, NULL when none or read to its end */
    PyObject *last[SHORT_TEXTS]; /* per column, its last short text: "c2s" a million times is one str */
} Reader;

static PyObject *column(Reader *self, int i) {
    sqlite3_stmt *stmt = self->stmt;
    switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
        return PyLong_FromLongLong(sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
        return PyFloat_FromDouble(sqlite3_column_double(stmt, i));
    case SQLITE_TEXT: {
        const char *text = (const char *)sqlite3_column_text(stmt, i);
        int n = sqlite3_column_bytes(stmt, i);
        if (i >= SHORT_TEXTS || n > SHORT_TEXT)
            return PyUnicode_DecodeUTF8(text, n, NULL);
        PyObject *last = self->last[i];
        if (last != NULL && PyUnicode_IS_COMPACT_ASCII(last) && PyUnicode_GET_LENGTH(last) == n &&
            memcmp(PyUnicode_DATA(last), text, n) == 0)
            return Py_NewRef(last);
        PyObject *value = PyUnicode_DecodeUTF8(text, n, NULL);
        if (value != NULL)
            Py_XSETREF(self->last[i], Py_NewRef(value));
        return value;
    }
    case SQLITE_BLOB: {
        const void *blob = sqlite3_column_blob(stmt, i);
        return PyBytes_FromStringAndSize(blob, sqlite3_column_bytes(stmt, i));
    }
    default:
        Py_RETURN_NONE;
    }
}

static void Reader_end(Reader *self) {
    if (self->stmt != NULL)
        sqlite3_finalize(self->stmt);
    self->stmt = NULL;
    for (int i = 0; i < SHORT_TEXTS; i++)
        Py_CLEAR(self->last[i]);
}

/* The next row as a tuple; NULL with no exception at the end. */
static PyObject *Reader_next(Reader *self) {
    if (self->stmt == NULL)
        return NULL;
    int rc = sqlite3_step(self->stmt);
    if (rc == SQLITE_DONE) {
        Reader_end(self);
        return NULL;
    }
    if (rc != SQLITE_ROW) {
        error(self->db, rc);
        Reader_end(self);
        return NULL;
    }
    int n = sqlite3_column_count(self->stmt);
    PyObject *row = PyTuple_New(n);
    if (row == NULL)
        return NULL;
    for (int i = 0; i < n; i++) {
        PyObject *v = column(self, i);
        if (v == NULL) {
            Py_DECREF(row);
            return NULL;
        }
        PyTuple_SET_ITEM(row, i, v);
    }
    return row;
}

static PyObject *Reader_fetch(Reader *self, Py_ssize_t most) {
    PyObject *rows = PyList_New(0), *row;
    if (rows == NULL)
        return NULL;
    while ((most < 0 || PyList_GET_SIZE(rows) < most) && (row = Reader_next(self)) != NULL) {
        int rc = PyList_Append(rows, row);
        Py_DECREF(row);
        if (rc < 0) {
            Py_DECREF(rows);
            return NULL;
        }
    }
    if (PyErr_Occurred()) {
        Py_DECREF(rows);
        return NULL;
    }
    return rows;
}

static PyObject *Reader_fetchmany(Reader *self, PyObject *args) {
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "n", &most))
        return NULL;
    return Reader_fetch(self, most < 0 ? 0 : most);
}

static PyObject *Reader_fetchall(Reader *self, PyObject *unused) {
    return Reader_fetch(self, -1);
}

static PyObject *Reader_execute(Reader *self, PyObject *args) {
    PyObject *sql, *params = NULL;
    if (!PyArg_ParseTuple(args, "U|O", &sql, &params) || closed(self->db))
        return NULL;
    Reader_end(self);
    if (compile(self->db, sql, &self->stmt) < 0)
        return NULL;
    if (params != NULL && self->stmt != NULL && bind(self->db, self->stmt, params) < 0) {
        Reader_end(self);
        return NULL;
    }
    return Py_NewRef(self);
}

static PyObject *Reader_close(Reader *self, PyObject *unused) {
    Reader_end(self);
    if (self->db != NULL)
        sqlite3_close_v2(self->db);
    self->db = NULL;
    Py_RETURN_NONE;
}

static int Reader_init(Reader *self, PyObject *args, PyObject *kwargs) {
    Py_XDECREF(Reader_close(self, NULL));
    return open_db(args, SQLITE_OPEN_READONLY, &self->db);
}

static void Reader_dealloc(Reader *self) {
    Py_XDECREF(Reader_close(self, NULL));
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Reader_methods[] = {
    {"execute", (PyCFunction)Reader_execute, METH_VARARGS, "execute(sql, params=()) -> this reader, as a cursor"},
    {"fetchmany", (PyCFunction)Reader_fetchmany, METH_VARARGS, "fetchmany(n) -> up to n rows"},
    {"fetchall", (PyCFunction)Reader_fetchall, METH_NOARGS, "fetchall() -> the rows left"},
    {"close", (PyCFunction)Reader_close, METH_NOARGS, "close()"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "analyzer._rowio.Reader",
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Reader(path, busy_timeout_ms): a read-only connection to an existing database",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Reader_init,
    .tp_dealloc = (destructor)Reader_dealloc,
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Reader_next,
    .tp_methods = Reader_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_rowio", NULL, -1, NULL};

PyMODINIT_FUNC PyInit__rowio(void) {
    if (PyType_Ready(&WriterType) < 0 || PyType_Ready(&ReaderType) < 0)
        return NULL;
    if ((SQLITE3 = PyImport_ImportModule("sqlite3")) == NULL)
        return NULL;
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL)
        return NULL;
    if (PyModule_AddObjectRef(mod, "Writer", (PyObject *)&WriterType) < 0 ||
        PyModule_AddObjectRef(mod, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddStringConstant(mod, "sqlite_version", sqlite3_libversion()) < 0 ||
        PyModule_AddObject(mod, "LIBVERSION_ADDRESS", PyLong_FromVoidPtr((void *)sqlite3_libversion)) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
