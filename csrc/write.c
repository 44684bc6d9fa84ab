#include "native.h"

/* Writing: a producer's rows as record-batch v2 record bytes (write_records). */

/* A growing output buffer. */
typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Out;

static int
reserve(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap * 2 > o->len + more ? o->cap * 2 : o->len + more;
    char *data = PyMem_Realloc(o->data, (size_t)cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->data = data;
    o->cap = cap;
    return 0;
}

static inline uint64_t
zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int
varint_size(int64_t v)
{
    uint64_t u = zigzag(v);
    int n = 1;
    while (u > 0x7F) {
        u >>= 7;
        n++;
    }
    return n;
}

static inline char *
put_varint(char *p, int64_t v)
{
    uint64_t u = zigzag(v);
    while (u > 0x7F) {
        *p++ = (char)((u & 0x7F) | 0x80);
        u >>= 7;
    }
    *p++ = (char)u;
    return p;
}

/* The bytes of key, value or header value ``obj`` (None: data NULL, length -1). */
typedef struct {
    Py_buffer view;
    const char *data;
    Py_ssize_t len;
    int held;
} Field;

static int
field_get(PyObject *obj, Field *f, const char *what)
{
    f->held = 0;
    if (obj == Py_None) {
        f->data = NULL;
        f->len = -1;
        return 0;
    }
    if (PyBytes_CheckExact(obj)) {
        f->data = PyBytes_AS_STRING(obj);
        f->len = PyBytes_GET_SIZE(obj);
        return 0;
    }
    if (PyObject_GetBuffer(obj, &f->view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes or None, not %.100s", what,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    f->held = 1;
    f->data = f->view.buf;
    f->len = f->view.len;
    return 0;
}

static void
field_release(Field *f)
{
    if (f->held)
        PyBuffer_Release(&f->view);
    f->held = 0;
}

/* Size of a field with its length varint. */
static inline Py_ssize_t
field_size(const Field *f)
{
    return f->len < 0 ? 1 : varint_size(f->len) + f->len;
}

static inline char *
put_field(char *p, const Field *f)
{
    if (f->len < 0)
        return put_varint(p, -1);
    p = put_varint(p, f->len);
    memcpy(p, f->data, (size_t)f->len);
    return p + f->len;
}

/* Append the header count and headers of ``headers`` (a sequence of (str, bytes or None)) to
 * ``o``; returns the bytes written or -1. */
static Py_ssize_t
write_headers(Out *o, PyObject *headers)
{
    PyObject *seq = PySequence_Fast(headers, "headers must be a sequence of (str, bytes) pairs");
    if (seq == NULL)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq), start = o->len;
    if (reserve(o, 10) < 0)
        goto fail;
    o->len = put_varint(o->data + o->len, n) - o->data;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(pair) || PyTuple_GET_SIZE(pair) != 2) {
            PyErr_SetString(PyExc_TypeError, "each header must be a (str, bytes or None) pair");
            goto fail;
        }
        Py_ssize_t name_len;
        const char *name = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(pair, 0), &name_len);
        if (name == NULL)
            goto fail;
        Field value;
        if (field_get(PyTuple_GET_ITEM(pair, 1), &value, "a header value") < 0)
            goto fail;
        if (reserve(o, 10 + name_len + field_size(&value)) < 0) {
            field_release(&value);
            goto fail;
        }
        char *p = put_varint(o->data + o->len, name_len);
        memcpy(p, name, (size_t)name_len);
        p = put_field(p + name_len, &value);
        field_release(&value);
        o->len = p - o->data;
    }
    Py_DECREF(seq);
    return o->len - start;
fail:
    Py_DECREF(seq);
    return -1;
}

static int
as_int64(PyObject *obj, int64_t *v, const char *what)
{
    /* Not PyLong_AsLongLong: for ints past 2**30 (every timestamp) it goes through
     * _PyLong_AsByteArray, which cost as much as the rest of writing a record. */
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(obj, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        if (overflow || PyErr_ExceptionMatches(PyExc_TypeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_ValueError, "%s must be an int64", what);
        }
        return -1;
    }
    *v = (int64_t)x;
    return 0;
}

/* A producer's row as write_plain measures it: bytes or None key and value, no headers. */
typedef struct {
    const char *key, *value;
    Py_ssize_t key_len, value_len, size;  /* lengths -1 for None; size: the record's body */
    int64_t ts_delta;
} Plain;

/* Rows past this many bytes of records are written with the GIL released. */
#define PLAIN_UNLOCKED 65536

/* write_records for rows that are all (bytes or None, bytes or None, None, int) at offset
 * deltas 0, 1, 2, ... (the producer's): measured with the GIL held, then written straight into
 * the result, for long batches with the GIL released, so the application thread can run
 * meanwhile. The rows are copied first (a list another thread changes cannot free the bytes
 * being read). 1 with *result set, 0 when a row is not plain, -1 on error. */
static int
write_plain(PyObject *row_seq, int64_t base_ts, PyObject **result)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(row_seq);
    PyObject *held = PyList_Check(row_seq) ? PyList_GetSlice(row_seq, 0, n) : Py_NewRef(row_seq);
    if (held == NULL)
        return -1;
    int rc = -1;
    PyObject *bytes = NULL;
    Plain *plain = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(Plain));
    if (plain == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    int64_t max_ts = base_ts, last_ts = 0;
    PyObject *last_ts_obj = NULL;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PySequence_Fast_GET_ITEM(held, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 4 || PyTuple_GET_ITEM(row, 2) != Py_None)
            goto not_plain;
        PyObject *key = PyTuple_GET_ITEM(row, 0), *value = PyTuple_GET_ITEM(row, 1);
        if ((key != Py_None && !PyBytes_CheckExact(key))
            || (value != Py_None && !PyBytes_CheckExact(value)))
            goto not_plain;
        int64_t ts = last_ts;
        /* Borrowed: ``held`` keeps every row, and so every timestamp, alive. */
        if (PyTuple_GET_ITEM(row, 3) != last_ts_obj) {
            if (as_int64(PyTuple_GET_ITEM(row, 3), &ts, "a timestamp") < 0)
                goto out;
            last_ts_obj = PyTuple_GET_ITEM(row, 3);
            last_ts = ts;
        }
        if (ts > max_ts)
            max_ts = ts;
        Plain *r = &plain[i];
        r->ts_delta = (int64_t)((uint64_t)ts - (uint64_t)base_ts);
        r->key = key == Py_None ? NULL : PyBytes_AS_STRING(key);
        r->key_len = key == Py_None ? -1 : PyBytes_GET_SIZE(key);
        r->value = value == Py_None ? NULL : PyBytes_AS_STRING(value);
        r->value_len = value == Py_None ? -1 : PyBytes_GET_SIZE(value);
        r->size = 1 + varint_size(r->ts_delta) + varint_size(i)
                  + (r->key_len < 0 ? 1 : varint_size(r->key_len) + r->key_len)
                  + (r->value_len < 0 ? 1 : varint_size(r->value_len) + r->value_len) + 1;
        total += varint_size(r->size) + r->size;
    }
    bytes = PyBytes_FromStringAndSize(NULL, total);
    if (bytes == NULL)
        goto out;
    char *start = PyBytes_AS_STRING(bytes), *p = start;
    PyThreadState *saved = total > PLAIN_UNLOCKED ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        const Plain *r = &plain[i];
        p = put_varint(p, r->size);
        *p++ = 0; /* attributes */
        p = put_varint(p, r->ts_delta);
        p = put_varint(p, i);
        p = put_varint(p, r->key_len);
        if (r->key_len > 0) {
            memcpy(p, r->key, (size_t)r->key_len);
            p += r->key_len;
        }
        p = put_varint(p, r->value_len);
        if (r->value_len > 0) {
            memcpy(p, r->value, (size_t)r->value_len);
            p += r->value_len;
        }
        *p++ = 0; /* no headers */
    }
    if (saved != NULL)
        PyEval_RestoreThread(saved);
    if (p - start != total) {
        PyErr_SetString(PyExc_SystemError, "write_records measured the records wrongly");
        goto out;
    }
    *result = Py_BuildValue("(OL)", bytes, (long long)max_ts);
    rc = *result == NULL ? -1 : 1;
    goto out;
not_plain:
    rc = 0;
out:
    Py_XDECREF(bytes);
    PyMem_Free(plain);
    Py_DECREF(held);
    return rc;
}

PyDoc_STRVAR(write_records_doc,
"write_records(rows, deltas, base_ts) -> (bytes, max_ts)\n\n"
"The uncompressed v2 records of ``rows`` ((key, value, headers or None, timestamp) tuples) at\n"
"offset deltas ``deltas`` (a sequence, or None for 0, 1, 2, ...), timestamps relative to\n"
"``base_ts``, and the largest timestamp (at least ``base_ts``).");

static PyObject *
write_records(PyObject *module, PyObject *args)
{
    PyObject *rows, *deltas, *base_ts_obj;
    int64_t base_ts;
    /* The base timestamp is checked as the rows' are, so both raise the same ValueError. */
    if (!PyArg_ParseTuple(args, "OOO:write_records", &rows, &deltas, &base_ts_obj)
        || as_int64(base_ts_obj, &base_ts, "a timestamp") < 0)
        return NULL;
    int64_t max_ts = base_ts, last_ts = 0;
    PyObject *last_ts_obj = NULL;
    PyObject *row_seq = PySequence_Fast(rows, "rows must be a sequence"), *delta_seq = NULL;
    PyObject *result = NULL;
    Out o = {NULL, 0, 0};
    if (row_seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(row_seq);
    if (deltas == Py_None) {
        int plain = write_plain(row_seq, base_ts, &result);
        if (plain != 0)
            goto done;
    }
    if (deltas != Py_None) {
        delta_seq = PySequence_Fast(deltas, "deltas must be a sequence");
        if (delta_seq == NULL)
            goto done;
        if (PySequence_Fast_GET_SIZE(delta_seq) != n) {
            PyErr_SetString(PyExc_ValueError, "deltas and rows differ in length");
            goto done;
        }
    }
    if (reserve(&o, n * 16 + 64) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PySequence_Fast_GET_ITEM(row_seq, i);
        if (!PyTuple_Check(row) || PyTuple_GET_SIZE(row) != 4) {
            PyErr_SetString(PyExc_TypeError,
                            "each row must be a (key, value, headers, timestamp) tuple");
            goto done;
        }
        int64_t ts = last_ts, delta = i;
        /* A producer's records share timestamp ints (the accumulator makes one a millisecond). */
        if (PyTuple_GET_ITEM(row, 3) != last_ts_obj) {
            if (as_int64(PyTuple_GET_ITEM(row, 3), &ts, "a timestamp") < 0)
                goto done;
            Py_XSETREF(last_ts_obj, Py_NewRef(PyTuple_GET_ITEM(row, 3)));
            last_ts = ts;
        }
        if (delta_seq != NULL
            && as_int64(PySequence_Fast_GET_ITEM(delta_seq, i), &delta, "an offset delta") < 0)
            goto done;
        if (ts > max_ts)
            max_ts = ts;
        int64_t ts_delta = (int64_t)((uint64_t)ts - (uint64_t)base_ts);
        Field key, value;
        if (field_get(PyTuple_GET_ITEM(row, 0), &key, "key") < 0)
            goto done;
        if (field_get(PyTuple_GET_ITEM(row, 1), &value, "value") < 0) {
            field_release(&key);
            goto done;
        }
        PyObject *headers = PyTuple_GET_ITEM(row, 2);
        int has_headers = headers != Py_None && PyObject_IsTrue(headers);
        Py_ssize_t body = 1 + varint_size(ts_delta) + varint_size(delta) + field_size(&key)
                          + field_size(&value);
        /* The length varint goes first. Without headers the size is known now; with them,
         * write them after a gap of the widest length varint and close it up once their size
         * is known. */
        if (has_headers < 0 || reserve(&o, 10 + body + 1) < 0) {
            field_release(&key);
            field_release(&value);
            goto done;
        }
        Py_ssize_t at = o.len;
        char *p = o.data + at + 10;
        if (!has_headers)
            p = put_varint(o.data + at, body + 1);
        *p++ = 0; /* attributes */
        p = put_varint(p, ts_delta);
        p = put_varint(p, delta);
        p = put_field(p, &key);
        p = put_field(p, &value);
        field_release(&key);
        field_release(&value);
        if (!has_headers) {
            *p++ = 0; /* no headers */
            o.len = p - o.data;
            continue;
        }
        o.len = p - o.data;
        Py_ssize_t header_bytes = write_headers(&o, headers);
        if (header_bytes < 0)
            goto done;
        Py_ssize_t size = body + header_bytes;
        int width = varint_size(size);
        char *start = o.data + at;
        put_varint(start, size);
        memmove(start + width, start + 10, (size_t)size);
        o.len = at + width + size;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(o.data, o.len);
    if (bytes != NULL) {
        result = Py_BuildValue("(NL)", bytes, (long long)max_ts);
    }
done:
    PyMem_Free(o.data);
    Py_XDECREF(last_ts_obj);
    Py_DECREF(row_seq);
    Py_XDECREF(delta_seq);
    return result;
}

static PyMethodDef write_methods[] = {
    {"write_records", write_records, METH_VARARGS, write_records_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_write_init(PyObject *module)
{
    return PyModule_AddFunctions(module, write_methods);
}
