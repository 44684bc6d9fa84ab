/* The record-batch v2 record loops in C: reading (varints, keys, values, headers and record
 * objects) and writing (a producer's rows as record bytes), and their CRC-32C; and the
 * producer's accumulator (send()'s common case, at the end of this file).
 *
 * groupkit.protocol.records calls read_records() once per batch, after it has checked the
 * batch header, its CRC and decompressed it; this file only turns the records' bytes into
 * Record objects (or the consumer's slotted subclass), which is where a pure-Python reader
 * spends nearly all its time. The pure-Python reader stays the reference: both are tested
 * against each other, and records.py uses this one only when it imports.
 *
 * Records are attrs slotted classes. Their fields are member descriptors (T_OBJECT_EX slots
 * at fixed offsets in the instance); this reader finds those offsets once per class and fills
 * a fresh instance from tp_alloc directly, as object.__new__ plus the descriptors' __set__
 * would, without running __init__ (the Python reader does the same).
 *
 * The records and their header lists are left untracked by the cyclic garbage collector, as
 * CPython leaves tuples and dicts of atoms: a record holds only ints, bytes, str, None and its
 * header list of (str, bytes) tuples, so it can be part of a reference cycle only if someone
 * puts it into its own header list (a frozen record is not meant to be changed). Reference
 * counting frees them as usual; untracking only spares the collector from walking the hundreds
 * of thousands of records a consumer holds, which otherwise costs more than decoding them.
 * (Such a cycle would leak, not crash: an untracked object is never freed by the collector.)
 *
 * Varints follow the Java client (ByteUtils.readVarlong): at most 10 bytes, bits past 64
 * dropped, zigzag decoded to int64.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* Record's fields in the order read_records sets them; the sourced subclass adds two. */
static const char *const FIELD_NAMES[] = {
    "offset", "timestamp", "key", "value", "headers", "timestamp_type", "topic", "partition",
};
#define PLAIN_FIELDS 6
#define ALL_FIELDS 8

typedef struct {
    Py_ssize_t at[ALL_FIELDS];
    int sourced;
} Layout;

/* type -> bytes holding its Layout; filled on first use of a record class. */
static PyObject *layouts = NULL;

static int
find_layout(PyTypeObject *cls, int sourced, Layout *out)
{
    PyObject *key = (PyObject *)cls;
    PyObject *known = PyDict_GetItemWithError(layouts, key);
    if (known != NULL) {
        memcpy(out, PyBytes_AS_STRING(known), sizeof(Layout));
        if (out->sourced == sourced)
            return 0;
        PyErr_SetString(PyExc_TypeError, "record class used with and without topic/partition");
        return -1;
    }
    if (PyErr_Occurred())
        return -1;
    memset(out, 0, sizeof(Layout));
    out->sourced = sourced;
    int fields = sourced ? ALL_FIELDS : PLAIN_FIELDS;
    for (int i = 0; i < fields; i++) {
        PyObject *descr = PyObject_GetAttrString(key, FIELD_NAMES[i]);
        if (descr == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", cls->tp_name, FIELD_NAMES[i]);
            return -1;
        }
        if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
            Py_DECREF(descr);
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", cls->tp_name, FIELD_NAMES[i]);
            return -1;
        }
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        PyTypeObject *owner = ((PyDescrObject *)descr)->d_type;
        int ok = member->type == T_OBJECT_EX && !(member->flags & READONLY)
                 && PyType_IsSubtype(cls, owner);
        out->at[i] = member->offset;
        Py_DECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot",
                         cls->tp_name, FIELD_NAMES[i]);
            return -1;
        }
    }
    PyObject *packed = PyBytes_FromStringAndSize((const char *)out, sizeof(Layout));
    if (packed == NULL)
        return -1;
    int rc = PyDict_SetItem(layouts, key, packed);
    Py_DECREF(packed);
    return rc;
}

/* Set the slot at ``at`` of the fresh object ``r`` to ``v`` (a new reference, stolen). */
#define SLOT(r, at) (*(PyObject **)((char *)(r) + (at)))

static PyObject *
malformed(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    PyObject *msg = PyUnicode_FromFormatV(format, args);
    va_end(args);
    if (msg != NULL) {
        PyErr_SetObject(PyExc_ValueError, msg);
        Py_DECREF(msg);
    }
    return NULL;
}

/* Read one zigzag varint from p (bounded by end) into *v; returns the next position or NULL
 * with ValueError set. */
static inline const unsigned char *
varint(const unsigned char *p, const unsigned char *end, int64_t *v)
{
    if (p < end && *p < 0x80) {
        uint64_t u = *p;
        *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
        return p + 1;
    }
    uint64_t u = 0;
    int shift = 0;
    for (;;) {
        if (p >= end) {
            malformed("varint runs past the end of the records");
            return NULL;
        }
        unsigned char b = *p++;
        if (shift < 64)
            u |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80)
            break;
        shift += 7;
        if (shift > 63) {
            malformed("varint longer than 10 bytes");
            return NULL;
        }
    }
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return p;
}

#define VARINT(p, v)                        \
    do {                                    \
        (p) = varint((p), end, &(v));       \
        if ((p) == NULL)                    \
            goto fail;                      \
    } while (0)

/* The int base + delta, exact even where int64 would overflow. */
static PyObject *
add_int(int64_t base, int64_t delta)
{
    int64_t sum;
    if (!__builtin_add_overflow(base, delta, &sum))
        return PyLong_FromLongLong(sum);
    PyObject *a = PyLong_FromLongLong(base), *b = PyLong_FromLongLong(delta), *s = NULL;
    if (a != NULL && b != NULL)
        s = PyNumber_Add(a, b);
    Py_XDECREF(a);
    Py_XDECREF(b);
    return s;
}

/* The int base_ts + delta; consecutive equal timestamps share the int kept in *cache. */
static PyObject *
timestamp_int(int64_t base_ts, int64_t delta, PyObject **cache, int64_t *cached)
{
    int64_t ts;
    if (__builtin_add_overflow(base_ts, delta, &ts))
        return add_int(base_ts, delta);
    if (*cache == NULL || ts != *cached) {
        PyObject *made = PyLong_FromLongLong(ts);
        if (made == NULL)
            return NULL;
        Py_XSETREF(*cache, made);
        *cached = ts;
    }
    return Py_NewRef(*cache);
}

static PyObject *
read_headers(const unsigned char **pp, const unsigned char *end, const unsigned char *rec_end)
{
    const unsigned char *p = *pp;
    int64_t count, n;
    PyObject *headers = NULL;
    VARINT(p, count);
    if (count < 0 || count > rec_end - p)
        return malformed("header count %lld", (long long)count);
    /* Grown header by header, not sized by the count: a lying count must not allocate. */
    headers = PyList_New(0);
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        VARINT(p, n);
        if (n < 0) {
            malformed("header key length %lld", (long long)n);
            goto fail;
        }
        if (n > end - p) {
            malformed("header key runs past the end of the records");
            goto fail;
        }
        PyObject *name = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, NULL);
        if (name == NULL)
            goto fail;
        p += n;
        PyObject *value;
        const unsigned char *q = varint(p, end, &n);
        if (q == NULL) {
            Py_DECREF(name);
            goto fail;
        }
        p = q;
        if (n < 0) {
            if (n != -1) {
                Py_DECREF(name);
                malformed("header value length %lld", (long long)n);
                goto fail;
            }
            value = Py_NewRef(Py_None);
        }
        else if (n > end - p) {
            Py_DECREF(name);
            malformed("header value runs past the end of the records");
            goto fail;
        }
        else {
            value = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
            p += n;
            if (value == NULL) {
                Py_DECREF(name);
                goto fail;
            }
        }
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL) {
            Py_DECREF(name);
            Py_DECREF(value);
            goto fail;
        }
        PyTuple_SET_ITEM(pair, 0, name);
        PyTuple_SET_ITEM(pair, 1, value);
        int appended = PyList_Append(headers, pair);
        Py_DECREF(pair);
        if (appended < 0)
            goto fail;
    }
    *pp = p;
    return headers;
fail:
    Py_XDECREF(headers);
    return NULL;
}

PyDoc_STRVAR(read_records_doc,
"read_records(buf, pos, end, count, base_offset, base_ts, ts_type, max_ts, out, cls,\n"
"             topic, partition, sourced) -> int\n\n"
"Decode ``count`` v2 records from ``buf[pos:end]`` into ``out`` as instances of ``cls``\n"
"(their timestamp is ``max_ts`` when ``ts_type`` is 1, log-append time); returns the end\n"
"position. Raises ValueError on malformed records.");

static PyObject *
read_records(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, stop, count;
    long long base_offset, base_ts, max_ts;
    int ts_type, sourced;
    PyObject *out, *cls, *topic, *partition;
    if (!PyArg_ParseTuple(args, "y*nnnLLiLO!OOOp:read_records", &view, &pos, &stop, &count,
                          &base_offset, &base_ts, &ts_type, &max_ts, &PyList_Type, &out, &cls,
                          &topic, &partition, &sourced))
        return NULL;
    PyObject *result = NULL, *ts_obj = NULL, *ts_type_obj = NULL;
    int64_t last_ts = 0;
    Layout layout;
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a type");
        goto done;
    }
    PyTypeObject *type = (PyTypeObject *)cls;
    if (find_layout(type, sourced, &layout) < 0)
        goto done;
    if (pos < 0 || stop < pos || stop > view.len || count < 0) {
        PyErr_SetString(PyExc_ValueError, "record range outside the buffer");
        goto done;
    }
    const unsigned char *base = (const unsigned char *)view.buf;
    const unsigned char *p = base + pos, *end = base + stop;
    ts_type_obj = PyLong_FromLong(ts_type);
    if (ts_type_obj == NULL)
        goto done;
    if (ts_type == 1) {
        /* The broker stamped the batch; its max timestamp is every record's timestamp.
         * Otherwise ts_obj caches the last record's timestamp int. */
        ts_obj = PyLong_FromLongLong(max_ts);
        if (ts_obj == NULL)
            goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t length, ts_delta, offset_delta, n;
        VARINT(p, length);
        if (length < 0) {
            malformed("record length %lld", (long long)length);
            goto fail;
        }
        if (length > end - p) {
            malformed("record length %lld runs past the end of the records",
                      (long long)length);
            goto fail;
        }
        const unsigned char *rec_end = p + length;
        if (p >= end) {
            malformed("record ends before its attributes");
            goto fail;
        }
        p++; /* attributes: unused */
        VARINT(p, ts_delta);
        VARINT(p, offset_delta);
        PyObject *key, *value, *headers;
        VARINT(p, n);
        if (n < 0) {
            if (n != -1) {
                malformed("key length %lld", (long long)n);
                goto fail;
            }
            key = Py_NewRef(Py_None);
        }
        else if (n > end - p) {
            malformed("key runs past the end of the records");
            goto fail;
        }
        else {
            key = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
            if (key == NULL)
                goto fail;
            p += n;
        }
        const unsigned char *q = varint(p, end, &n);
        if (q == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        p = q;
        if (n < 0) {
            if (n != -1) {
                Py_DECREF(key);
                malformed("value length %lld", (long long)n);
                goto fail;
            }
            value = Py_NewRef(Py_None);
        }
        else if (n > end - p) {
            Py_DECREF(key);
            malformed("value runs past the end of the records");
            goto fail;
        }
        else {
            value = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
            if (value == NULL) {
                Py_DECREF(key);
                goto fail;
            }
            p += n;
        }
        if (p < end && *p == 0) {
            headers = PyList_New(0);
            p++;
        }
        else {
            headers = read_headers(&p, end, rec_end);
        }
        if (headers == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        if (p != rec_end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            malformed("record length says it ends at byte %zd, fields end at %zd",
                      (Py_ssize_t)(rec_end - base), (Py_ssize_t)(p - base));
            goto fail;
        }
        PyObject *offset = add_int(base_offset, offset_delta);
        PyObject *ts = ts_type == 1 ? Py_NewRef(ts_obj)
                                    : timestamp_int(base_ts, ts_delta, &ts_obj, &last_ts);
        PyObject *r = offset == NULL || ts == NULL ? NULL : type->tp_alloc(type, 0);
        if (r == NULL) {
            Py_XDECREF(offset);
            Py_XDECREF(ts);
            Py_DECREF(key);
            Py_DECREF(value);
            Py_DECREF(headers);
            goto fail;
        }
        if (PyType_IS_GC(type))
            PyObject_GC_UnTrack(r);
        PyObject_GC_UnTrack(headers);
        SLOT(r, layout.at[0]) = offset;
        SLOT(r, layout.at[1]) = ts;
        SLOT(r, layout.at[2]) = key;
        SLOT(r, layout.at[3]) = value;
        SLOT(r, layout.at[4]) = headers;
        SLOT(r, layout.at[5]) = Py_NewRef(ts_type_obj);
        if (sourced) {
            SLOT(r, layout.at[6]) = Py_NewRef(topic);
            SLOT(r, layout.at[7]) = Py_NewRef(partition);
        }
        int appended = PyList_Append(out, r);
        Py_DECREF(r);
        if (appended < 0)
            goto fail;
    }
    result = PyLong_FromSsize_t(p - base);
    goto done;
fail:
done:
    Py_XDECREF(ts_obj);
    Py_XDECREF(ts_type_obj);
    PyBuffer_Release(&view);
    return result;
}


/* ------------------------------------------------------------------ writing */

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
    PyObject *rows, *deltas;
    long long base_ts_arg;
    if (!PyArg_ParseTuple(args, "OOL:write_records", &rows, &deltas, &base_ts_arg))
        return NULL;
    int64_t base_ts = base_ts_arg, max_ts = base_ts, last_ts = 0;
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

/* ------------------------------------------------------------------ CRC-32C */

/* CRC-32C (Castagnoli), as record batches carry it. With SSE4.2 the CPU's crc32 instruction
 * does it (three streams at once on long inputs); elsewhere a slicing-by-8 table. Here rather than from the crc32c package so a
 * process reading records does not import that package, whose import alone (it reads its
 * own distribution metadata) costs about 5 MB of resident memory. */
static uint32_t crc_table[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xFF];
}

static uint32_t
crc_soft(uint32_t c, const unsigned char *p, size_t n)
{
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16
                           | (uint32_t)p[3] << 24);
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF]
            ^ crc_table[5][(lo >> 16) & 0xFF] ^ crc_table[4][lo >> 24]
            ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
        p += 8;
        n -= 8;
    }
    while (n--)
        c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xFF];
    return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HAVE_CRC_HW 1

/* The crc32 instruction takes three cycles and can start one a cycle, so one stream of it
 * runs at a third of the CPU's speed. Long inputs go as three interleaved streams over
 * consecutive blocks of SPAN bytes, joined with the operator "append SPAN zero bytes" (a
 * 32x32 matrix over GF(2), applied by table): crc(A || B) = shift(crc(A), |B|) ^ crc0(B). */
#define SPAN 4096
static uint32_t span_shift[4][256];

/* The image of the vector ``v`` under the GF(2) matrix ``m`` (column i is m[i]). */
static uint32_t
gf2_times(const uint32_t *m, uint32_t v)
{
    uint32_t out = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            out ^= m[i];
    return out;
}

static void
gf2_square(uint32_t *out, const uint32_t *m)
{
    for (int i = 0; i < 32; i++)
        out[i] = gf2_times(m, m[i]);
}

/* span_shift: the operator that appends SPAN zero bytes to a CRC-32C register, as tables of
 * its action on each byte of the register. */
static void
span_init(void)
{
    uint32_t op[32], sq[32], acc[32], tmp[32];
    /* One zero bit: shift right, xor the polynomial in when a one falls out. */
    op[0] = 0x82F63B78u;
    for (int i = 1; i < 32; i++)
        op[i] = 1u << (i - 1);
    gf2_square(sq, op);  /* 2 bits */
    gf2_square(op, sq);  /* 4 bits */
    gf2_square(sq, op);  /* 8 bits: one zero byte */
    /* acc = sq ^ SPAN, by squaring: SPAN is a power of two. */
    memcpy(acc, sq, sizeof acc);
    for (int n = 1; n < SPAN; n <<= 1) {
        gf2_square(tmp, acc);
        memcpy(acc, tmp, sizeof acc);
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            span_shift[k][b] = gf2_times(acc, b << (8 * k));
}

static inline uint32_t
span_apply(uint32_t c)
{
    return span_shift[0][c & 0xFF] ^ span_shift[1][(c >> 8) & 0xFF]
           ^ span_shift[2][(c >> 16) & 0xFF] ^ span_shift[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t n)
{
    uint64_t c0 = c;
    while (n >= 3 * SPAN) {
        uint64_t c1 = 0, c2 = 0;
        for (size_t i = 0; i < SPAN; i += 8) {
            uint64_t v0, v1, v2;
            memcpy(&v0, p + i, 8);
            memcpy(&v1, p + SPAN + i, 8);
            memcpy(&v2, p + 2 * SPAN + i, 8);
            c0 = __builtin_ia32_crc32di(c0, v0);
            c1 = __builtin_ia32_crc32di(c1, v1);
            c2 = __builtin_ia32_crc32di(c2, v2);
        }
        c0 = span_apply((uint32_t)c0) ^ (uint32_t)c1;
        c0 = span_apply((uint32_t)c0) ^ (uint32_t)c2;
        p += 3 * SPAN;
        n -= 3 * SPAN;
    }
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c0 = __builtin_ia32_crc32di(c0, v);
        p += 8;
        n -= 8;
    }
    c = (uint32_t)c0;
    while (n--)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

static uint32_t (*crc_update)(uint32_t, const unsigned char *, size_t) = crc_soft;

PyDoc_STRVAR(crc32c_doc,
"crc32c(data) -> int\n\nThe CRC-32C of ``data`` (any bytes-like object).");

static PyObject *
crc32c(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c;
    if (view.len > 65536) {
        Py_BEGIN_ALLOW_THREADS
        c = crc_update(0xFFFFFFFFu, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    }
    else {
        c = crc_update(0xFFFFFFFFu, view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c ^ 0xFFFFFFFFu);
}

PyDoc_STRVAR(crc32c_table_doc,
"crc32c_table(data) -> int\n\ncrc32c() by the table, whatever the CPU has (for tests).");

static PyObject *
crc32c_table(PyObject *module, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c = crc_soft(0xFFFFFFFFu, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c ^ 0xFFFFFFFFu);
}

/* ------------------------------------------------------------------ producer lock */

/* The producer's lock: threading.Lock's behaviour (acquire with blocking and timeout, release,
 * locked, the context manager, interruptible waits), so threading.Condition works on it as on
 * a threading.Lock. It exists so the accumulator can take it without a method call: taking a
 * threading.Lock from C goes through acquire()'s argument parsing, which costs more than the
 * rest of appending a record. */

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    char locked;
} Lock;

static PyTypeObject LockType;

static PyObject *
lock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs != NULL && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    Lock *self = (Lock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void
lock_dealloc(Lock *self)
{
    if (self->lock != NULL) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Microseconds of a monotonic clock, for what is left of a timeout after an interruption. */
static long long
monotonic_us(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
#endif
    timespec_get(&ts, TIME_UTC);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Take the lock, waiting up to ``us`` microseconds (-1: for ever) with the GIL released and
 * running signal handlers when a signal interrupts the wait. 1 taken, 0 timed out, -1 error. */
static int
lock_take(Lock *self, long long us)
{
    if (PyThread_acquire_lock_timed(self->lock, 0, 0) == PY_LOCK_ACQUIRED) {
        self->locked = 1;
        return 1;
    }
    if (us == 0)
        return 0;
    long long deadline = us > 0 ? monotonic_us() + us : 0;
    for (;;) {
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, us, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) {
            self->locked = 1;
            return 1;
        }
        if (r == PY_LOCK_FAILURE)
            return 0;
        /* Interrupted: run the signal handlers (they may raise), then wait what is left. */
        if (Py_MakePendingCalls() < 0)
            return -1;
        if (us > 0) {
            us = deadline - monotonic_us();
            if (us <= 0)
                return 0;
        }
    }
}

PyDoc_STRVAR(lock_acquire_doc,
"acquire($self, /, blocking=True, timeout=-1)\n--\n\n"
"As threading.Lock.acquire: True once taken, False if not within the timeout.");

static PyObject *
lock_acquire(Lock *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *blocking_obj = NULL, *timeout_obj = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "acquire() takes at most 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (nargs > 0)
        blocking_obj = args[0];
    if (nargs > 1)
        timeout_obj = args[1];
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        PyObject **slot = PyUnicode_CompareWithASCIIString(name, "blocking") == 0 ? &blocking_obj
                          : PyUnicode_CompareWithASCIIString(name, "timeout") == 0 ? &timeout_obj
                          : NULL;
        if (slot == NULL) {
            PyErr_Format(PyExc_TypeError, "acquire() got an unexpected keyword argument '%U'",
                         name);
            return NULL;
        }
        if (*slot != NULL) {
            PyErr_Format(PyExc_TypeError, "acquire() got multiple values for argument '%U'",
                         name);
            return NULL;
        }
        *slot = args[nargs + j];
    }
    int blocking = 1;
    if (blocking_obj != NULL) {
        blocking = PyObject_IsTrue(blocking_obj);
        if (blocking < 0)
            return NULL;
    }
    double timeout = -1;
    if (timeout_obj != NULL) {
        timeout = PyFloat_AsDouble(timeout_obj);
        if (timeout == -1 && PyErr_Occurred())
            return NULL;
        if (timeout != timeout) {
            PyErr_SetString(PyExc_ValueError, "Invalid value NaN (not a number)");
            return NULL;
        }
    }
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    long long us = -1;
    if (!blocking)
        us = 0;
    else if (timeout >= 0) {
        if (timeout * 1e6 >= (double)PY_TIMEOUT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
            return NULL;
        }
        us = (long long)(timeout * 1e6);
    }
    int taken = lock_take(self, us);
    if (taken < 0)
        return NULL;
    return PyBool_FromLong(taken);
}

static PyObject *
lock_enter(Lock *self, PyObject *unused)
{
    if (lock_take(self, -1) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
lock_release(Lock *self, PyObject *unused)
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    self->locked = 0;
    PyThread_release_lock(self->lock);
    Py_RETURN_NONE;
}

static PyObject *
lock_exit(Lock *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lock_release(self, NULL);
}

static PyObject *
lock_locked(Lock *self, PyObject *unused)
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
lock_repr(Lock *self)
{
    return PyUnicode_FromFormat("<%s groupkit Lock object at %p>",
                                self->locked ? "locked" : "unlocked", self);
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_FASTCALL | METH_KEYWORDS,
     lock_acquire_doc},
    {"release", (PyCFunction)lock_release, METH_NOARGS,
     "release($self, /)\n--\n\nAs threading.Lock.release."},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS,
     "locked($self, /)\n--\n\nWhether the lock is held."},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "groupkit.protocol._native.Lock",
    .tp_basicsize = sizeof(Lock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lock()\n--\n\nA lock that behaves as threading.Lock; the producer's lock, which "
              "its C accumulator takes directly.",
    .tp_new = lock_new,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_repr = (reprfunc)lock_repr,
    .tp_methods = lock_methods,
};

/* ------------------------------------------------------------------ producer accumulator */

/* Producer.send()'s common case in one call: the record's topic is known, its partition's
 * batch is open with room to spare and buffer_memory has room. Accumulator.append does then
 * what Producer._send_slow does (groupkit/runtime/accumulator.py has the same in Python, the
 * reference both are tested against), holding the producer's lock as that does, and answers
 * None for every other record, which the Python path then takes from the start. It never
 * raises for a bad argument: the Python path names the error.
 *
 * It holds the producer's lock (the Lock above, taken directly; any other lock through its
 * acquire and release methods) rather than relying on the GIL: allocating may run the cyclic collector and so finalizers
 * that let other threads run, and the sender thread changes the same dicts and batches under
 * that lock. Everything read or written below between acquire and release is changed by other
 * threads only under the lock, except ``partitions`` (written by Producer._learn_topic without
 * it), whose partition count is read before the lock and kept as a C integer. */

#define RECORD_OVERHEAD 16

/* Murmur2 as the Java client computes it (Utils.murmur2), as an unsigned 32-bit value. */
static uint32_t
murmur2_hash(const unsigned char *data, Py_ssize_t length)
{
    const uint32_t m = 0x5BD1E995u;
    uint32_t h = 0x9747B28Cu ^ (uint32_t)length;
    Py_ssize_t whole = length & ~(Py_ssize_t)3;
    for (Py_ssize_t i = 0; i < whole; i += 4) {
        uint32_t k = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8
                     | (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
        k *= m;
        k ^= k >> 24;
        k *= m;
        h = (h * m) ^ k;
    }
    switch (length & 3) {
    case 3:
        h ^= (uint32_t)data[whole + 2] << 16;
        /* fall through */
    case 2:
        h ^= (uint32_t)data[whole + 1] << 8;
        /* fall through */
    case 1:
        h ^= data[whole];
        h *= m;
    }
    h ^= h >> 13;
    h *= m;
    h ^= h >> 15;
    return h;
}

PyDoc_STRVAR(murmur2_doc,
"murmur2(data) -> int\n\nKafka's murmur2 of ``data`` (bytes), as a signed 32-bit int.");

static PyObject *
murmur2(PyObject *module, PyObject *arg)
{
    if (!PyBytes_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "murmur2 takes bytes, not %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    uint32_t h = murmur2_hash((const unsigned char *)PyBytes_AS_STRING(arg),
                              PyBytes_GET_SIZE(arg));
    return PyLong_FromLong((long)(int32_t)h);
}

typedef struct {
    PyObject_HEAD
    PyObject *acquire, *release;       /* the producer lock's bound methods */
    Lock *own_lock;                    /* the producer lock when it is a Lock, else NULL */
    PyObject *partitions;              /* topic -> (partition count, available partitions) */
    PyObject *sticky;                  /* topic -> its sticky partition (null keys) */
    PyObject *open;                    /* (topic, partition) -> its open Batch; changed only
                                          by the methods below, which drop tp_batch */
    PyObject *fallback;                /* send()'s Python path, for the records append declines */
    PyObject *tp_key;                  /* the last (topic, partition) looked up in open */
    Py_ssize_t tp_partition;           /* its partition */
    PyObject *tp_batch;                /* its open batch, or NULL: look it up */
    PyObject *now;                     /* the int of the last timestamp made, now_ms */
    int64_t now_ms;
    PyTypeObject *batch_type, *future_type;
    Py_ssize_t records_at, size_at;    /* slots of Batch.records and Batch.size */
    Py_ssize_t batch_at, index_at;     /* slots of RecordFuture._record_batch, _record_index */
    Py_ssize_t batch_size, buffer_memory, buffered;
    char closing;
} Accumulator;

/* The offset of the writable object slot ``name`` of ``cls`` or -1 with TypeError set. */
static Py_ssize_t
slot_offset(PyTypeObject *cls, const char *name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)cls, name);
    if (descr == NULL) {
        if (PyErr_ExceptionMatches(PyExc_AttributeError)) {
            PyErr_Clear();
            PyErr_Format(PyExc_TypeError, "%s has no slot %s", cls->tp_name, name);
        }
        return -1;
    }
    Py_ssize_t at = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        PyTypeObject *owner = ((PyDescrObject *)descr)->d_type;
        if (member->type == T_OBJECT_EX && !(member->flags & READONLY)
            && PyType_IsSubtype(cls, owner))
            at = member->offset;
    }
    Py_DECREF(descr);
    if (at < 0)
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", cls->tp_name, name);
    return at;
}

static int
acc_traverse(Accumulator *self, visitproc visit, void *arg)
{
    Py_VISIT(self->acquire);
    Py_VISIT(self->own_lock);
    Py_VISIT(self->release);
    Py_VISIT(self->partitions);
    Py_VISIT(self->sticky);
    Py_VISIT(self->open);
    Py_VISIT(self->tp_key);
    Py_VISIT(self->tp_batch);
    Py_VISIT(self->fallback);
    Py_VISIT(self->batch_type);
    Py_VISIT(self->future_type);
    return 0;
}

static int
acc_clear(Accumulator *self)
{
    Py_CLEAR(self->acquire);
    Py_CLEAR(self->own_lock);
    Py_CLEAR(self->release);
    Py_CLEAR(self->partitions);
    Py_CLEAR(self->sticky);
    Py_CLEAR(self->open);
    Py_CLEAR(self->tp_key);
    Py_CLEAR(self->tp_batch);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->now);
    Py_CLEAR(self->batch_type);
    Py_CLEAR(self->future_type);
    return 0;
}

static void
acc_dealloc(Accumulator *self)
{
    PyObject_GC_UnTrack(self);
    acc_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
acc_init(Accumulator *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"lock", "partitions", "sticky", "batch_type", "future_type",
                             "batch_size", "buffer_memory", "fallback", NULL};
    PyObject *lock, *partitions, *sticky, *batch_type, *future_type, *fallback = NULL;
    Py_ssize_t batch_size, buffer_memory;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!O!O!nn|O:Accumulator", kwlist,
                                     &lock, &PyDict_Type, &partitions, &PyDict_Type, &sticky,
                                     &PyType_Type, &batch_type,
                                     &PyType_Type, &future_type, &batch_size, &buffer_memory,
                                     &fallback))
        return -1;
    if (fallback == Py_None)
        fallback = NULL;
    if (fallback != NULL && !PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return -1;
    }
    PyTypeObject *batch_cls = (PyTypeObject *)batch_type, *future_cls = (PyTypeObject *)future_type;
    /* Futures are made as object.__new__ makes them, without __init__ (see RecordFuture). */
    if (future_cls->tp_new != PyBaseObject_Type.tp_new) {
        PyErr_Format(PyExc_TypeError, "%s defines __new__", future_cls->tp_name);
        return -1;
    }
    Py_ssize_t records_at = slot_offset(batch_cls, "records");
    Py_ssize_t size_at = records_at < 0 ? -1 : slot_offset(batch_cls, "size");
    Py_ssize_t batch_at = size_at < 0 ? -1 : slot_offset(future_cls, "_record_batch");
    Py_ssize_t index_at = batch_at < 0 ? -1 : slot_offset(future_cls, "_record_index");
    if (index_at < 0)
        return -1;
    PyObject *acquire = PyObject_GetAttrString(lock, "acquire");
    PyObject *release = acquire == NULL ? NULL : PyObject_GetAttrString(lock, "release");
    PyObject *open = release == NULL ? NULL : PyDict_New();
    if (open == NULL) {
        Py_XDECREF(acquire);
        Py_XDECREF(release);
        return -1;
    }
    acc_clear(self);
    self->acquire = acquire;
    self->release = release;
    self->partitions = Py_NewRef(partitions);
    self->sticky = Py_NewRef(sticky);
    self->open = open;
    self->batch_type = (PyTypeObject *)Py_NewRef(batch_type);
    self->future_type = (PyTypeObject *)Py_NewRef(future_type);
    self->fallback = Py_XNewRef(fallback);
    self->own_lock = Py_IS_TYPE(lock, &LockType) ? (Lock *)Py_NewRef(lock) : NULL;
    self->records_at = records_at;
    self->size_at = size_at;
    self->batch_at = batch_at;
    self->index_at = index_at;
    self->batch_size = batch_size;
    self->buffer_memory = buffer_memory;
    self->buffered = 0;
    self->closing = 0;
    return 0;
}

/* The bytes ``headers`` (a list of (str, bytes or None)) add to a record's size, as
 * Producer's _headers_size counts them; -1 for anything else (the Python path checks it). */
static Py_ssize_t
headers_size(PyObject *headers)
{
    Py_ssize_t size = 0, n = PyList_GET_SIZE(headers);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyList_GET_ITEM(headers, i);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2)
            return -1;
        PyObject *name = PyTuple_GET_ITEM(pair, 0), *value = PyTuple_GET_ITEM(pair, 1);
        if (!PyUnicode_CheckExact(name))
            return -1;
        size += PyUnicode_GET_LENGTH(name) + 4;
        if (PyBytes_CheckExact(value))
            size += PyBytes_GET_SIZE(value);
        else if (value != Py_None)
            return -1;
    }
    return size;
}

/* Milliseconds since the epoch, as time.time_ns() // 1_000_000. */
static int64_t
now_ms(void)
{
    struct timespec ts;
    if (timespec_get(&ts, TIME_UTC) != TIME_UTC)
        return -1;
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Append the record to its open batch with the lock held; 1 done, 0 declined, -1 error. */
static int
acc_append_locked(Accumulator *self, PyObject *topic, Py_ssize_t partition, PyObject *key,
                  Py_ssize_t count, Py_ssize_t size, PyObject *row, PyObject *future)
{
    if (partition < 0 && key != Py_None) {
        uint32_t h = murmur2_hash((const unsigned char *)PyBytes_AS_STRING(key),
                                  PyBytes_GET_SIZE(key));
        partition = (Py_ssize_t)((h & 0x7FFFFFFFu) % (uint32_t)count);
    }
    else if (partition < 0) {
        PyObject *sticky = PyDict_GetItemWithError(self->sticky, topic);
        if (sticky == NULL)
            return PyErr_Occurred() ? -1 : 0;
        if (!PyLong_CheckExact(sticky))
            return 0;
        partition = PyLong_AsSsize_t(sticky);
        if (partition < 0) {
            PyErr_Clear();
            return 0;
        }
    }
    /* The (topic, partition) key of the open batch; the last one is kept, as a producer
     * mostly sends to one topic and, without keys, one partition per batch. */
    PyObject *tp = self->tp_key;
    if (tp == NULL || PyTuple_GET_ITEM(tp, 0) != topic || self->tp_partition != partition) {
        PyObject *number = PyLong_FromSsize_t(partition);
        if (number == NULL)
            return -1;
        tp = PyTuple_Pack(2, topic, number);
        Py_DECREF(number);
        if (tp == NULL)
            return -1;
        PyObject_GC_UnTrack(tp);
        Py_XSETREF(self->tp_key, tp);
        self->tp_partition = partition;
        Py_CLEAR(self->tp_batch);
    }
    /* Its open batch, as the last record found it unless the open batches changed since. */
    PyObject *batch = self->tp_batch;
    if (batch == NULL) {
        batch = PyDict_GetItemWithError(self->open, tp);
        if (batch == NULL)
            return PyErr_Occurred() ? -1 : 0;
        self->tp_batch = Py_NewRef(batch);
    }
    if (!Py_IS_TYPE(batch, self->batch_type))
        return 0;
    PyObject *records = SLOT(batch, self->records_at), *held = SLOT(batch, self->size_at);
    if (records == NULL || !PyList_CheckExact(records) || held == NULL
        || !PyLong_CheckExact(held))
        return 0;
    Py_ssize_t batch_bytes = PyLong_AsSsize_t(held);
    if (batch_bytes == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    /* A record that fills the batch is left to the Python path, which seals the batch. */
    if (batch_bytes < 0 || batch_bytes + size >= self->batch_size
        || self->buffered + size > self->buffer_memory)
        return 0;
    PyObject *index = PyLong_FromSsize_t(PyList_GET_SIZE(records));
    PyObject *grown = index == NULL ? NULL : PyLong_FromSsize_t(batch_bytes + size);
    if (grown == NULL || PyList_Append(records, row) < 0) {
        Py_XDECREF(index);
        Py_XDECREF(grown);
        return -1;
    }
    /* From here on nothing can fail: the record is in. */
    Py_XSETREF(SLOT(batch, self->size_at), grown);
    self->buffered += size;
    SLOT(future, self->batch_at) = Py_NewRef(batch);
    SLOT(future, self->index_at) = index;
    return 1;
}

/* append() of the six arguments: the future, None (a new reference) or NULL. */
static PyObject *
acc_try(Accumulator *self, PyObject *const *args)
{
    PyObject *topic = args[0], *value = args[1], *key = args[2], *partition_obj = args[3];
    PyObject *headers = args[4], *timestamp = args[5];
    if (self->closing || !PyUnicode_CheckExact(topic) || self->acquire == NULL)
        Py_RETURN_NONE;
    Py_ssize_t size = RECORD_OVERHEAD;
    if (value != Py_None) {
        if (!PyBytes_CheckExact(value))
            Py_RETURN_NONE;
        size += PyBytes_GET_SIZE(value);
    }
    if (key != Py_None) {
        if (!PyBytes_CheckExact(key))
            Py_RETURN_NONE;
        size += PyBytes_GET_SIZE(key);
    }
    if (headers != Py_None) {
        if (!PyList_CheckExact(headers))
            Py_RETURN_NONE;
        Py_ssize_t extra = headers_size(headers);
        if (extra < 0)
            Py_RETURN_NONE;
        size += extra;
    }
    int64_t ts = 0;
    if (timestamp != Py_None) {
        if (!PyLong_CheckExact(timestamp))
            Py_RETURN_NONE;
        int overflow;
        long long v = PyLong_AsLongLongAndOverflow(timestamp, &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        ts = v;
    }
    /* The partition count, read before anything can let another thread run. */
    PyObject *known = PyDict_GetItemWithError(self->partitions, topic);
    if (known == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 2
        || !PyLong_CheckExact(PyTuple_GET_ITEM(known, 0)))
        Py_RETURN_NONE;
    Py_ssize_t count = PyLong_AsSsize_t(PyTuple_GET_ITEM(known, 0)), partition = -1;
    if (count <= 0 || count > 0x7FFFFFFF) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (partition_obj != Py_None) {
        if (!PyLong_CheckExact(partition_obj))
            Py_RETURN_NONE;
        partition = PyLong_AsSsize_t(partition_obj);
        if (partition == -1 && PyErr_Occurred()) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (partition < 0 || partition >= count)
            Py_RETURN_NONE;
    }
    if (self->buffered + size > self->buffer_memory)
        Py_RETURN_NONE;
    PyObject *ts_obj = timestamp == Py_None ? NULL : Py_NewRef(timestamp);
    if (ts_obj == NULL) {
        /* One int a millisecond, shared by the records sent in it. */
        ts = now_ms();
        if (ts < 0)
            Py_RETURN_NONE;
        if (self->now == NULL || self->now_ms != ts) {
            PyObject *made = PyLong_FromLongLong(ts);
            if (made == NULL)
                return NULL;
            Py_XSETREF(self->now, made);
            self->now_ms = ts;
        }
        ts_obj = Py_NewRef(self->now);
    }
    PyObject *row = PyTuple_Pack(4, key, value, headers, ts_obj);
    Py_DECREF(ts_obj);
    if (row == NULL)
        return NULL;
    /* Without headers a row holds only bytes, None and an int: it cannot be part of a
     * reference cycle, so the collector need not walk it (it would untrack it later). */
    if (headers == Py_None)
        PyObject_GC_UnTrack(row);
    /* As object.__new__, without __init__ (see RecordFuture); and without even making its
     * instance dict, as PyType_GenericNew leaves it: it is made on first use. */
    PyObject *future = PyType_GenericNew(self->future_type, NULL, NULL);
    if (future == NULL) {
        Py_DECREF(row);
        return NULL;
    }
    int done;
    if (self->own_lock != NULL) {
        /* Our Lock: taken at once or not at all. When another thread holds it, the record
         * goes to the Python path, which waits for the lock with the GIL released. */
        if (PyThread_acquire_lock_timed(self->own_lock->lock, 0, 0) != PY_LOCK_ACQUIRED) {
            Py_DECREF(row);
            Py_DECREF(future);
            Py_RETURN_NONE;
        }
        self->own_lock->locked = 1;
        done = acc_append_locked(self, topic, partition, key, count, size, row, future);
        self->own_lock->locked = 0;
        PyThread_release_lock(self->own_lock->lock);
        Py_DECREF(row);
        if (done <= 0) {
            Py_DECREF(future);
            if (done < 0)
                return NULL;
            Py_RETURN_NONE;
        }
        return future;
    }
    PyObject *got = PyObject_CallNoArgs(self->acquire);
    if (got == NULL) {
        Py_DECREF(row);
        Py_DECREF(future);
        return NULL;
    }
    Py_DECREF(got);
    done = acc_append_locked(self, topic, partition, key, count, size, row, future);
    PyObject *type = NULL, *exc = NULL, *tb = NULL;
    if (done < 0)
        PyErr_Fetch(&type, &exc, &tb);
    PyObject *released = PyObject_CallNoArgs(self->release);
    Py_DECREF(row);
    if (released == NULL) {
        Py_XDECREF(type);
        Py_XDECREF(exc);
        Py_XDECREF(tb);
        Py_DECREF(future);
        return NULL;
    }
    Py_DECREF(released);
    if (done <= 0) {
        Py_DECREF(future);
        if (done < 0) {
            PyErr_Restore(type, exc, tb);
            return NULL;
        }
        Py_RETURN_NONE;
    }
    return future;
}

PyDoc_STRVAR(acc_append_doc,
"append(topic, value, key, partition, headers, timestamp_ms) -> RecordFuture | None\n\n"
"Append the record to its partition's open batch and return its future, or None when the\n"
"record needs Producer's Python path (see groupkit.runtime.accumulator).");

static PyObject *
acc_append(Accumulator *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_Format(PyExc_TypeError, "append takes 6 arguments, not %zd", nargs);
        return NULL;
    }
    return acc_try(self, args);
}

/* send()'s parameter names, interned at import. */
static const char *const SEND_NAMES[6] = {"topic", "value", "key", "partition", "headers",
                                          "timestamp_ms"};
static PyObject *send_names[6];

PyDoc_STRVAR(acc_send_doc,
"send($self, /, topic, value, key=None, partition=None, headers=None, timestamp_ms=None)\n"
"--\n\n"
"Producer.send (see its documentation): queue one record and return its future. The common\n"
"record is appended here, as append() does; the rest go to the producer's Python path.");

static PyObject *
acc_send(Accumulator *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *a[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 6) {
        PyErr_Format(PyExc_TypeError, "send() takes at most 6 arguments (%zd given)", nargs);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        int i = 0;
        while (i < 6 && name != send_names[i]
               && PyUnicode_CompareWithASCIIString(name, SEND_NAMES[i]) != 0)
            i++;
        if (i == 6) {
            PyErr_Format(PyExc_TypeError, "send() got an unexpected keyword argument '%U'",
                         name);
            return NULL;
        }
        if (a[i] != NULL) {
            PyErr_Format(PyExc_TypeError, "send() got multiple values for argument '%s'",
                         SEND_NAMES[i]);
            return NULL;
        }
        a[i] = args[nargs + j];
    }
    for (int i = 0; i < 6; i++) {
        if (a[i] != NULL)
            continue;
        if (i < 2) {
            PyErr_Format(PyExc_TypeError, "send() missing required argument '%s'",
                         SEND_NAMES[i]);
            return NULL;
        }
        a[i] = Py_None;
    }
    PyObject *future = acc_try(self, a);
    if (future != Py_None)
        return future;
    Py_DECREF(future);
    if (self->fallback == NULL) {
        PyErr_SetString(PyExc_TypeError, "this Accumulator has no fallback for send()");
        return NULL;
    }
    return PyObject_Vectorcall(self->fallback, a, 6, NULL);
}

/* The open batches: the producer changes them only through these (with its lock held), so
 * that the batch append() remembers is dropped whenever they change. */

static PyObject *
acc_get_open(Accumulator *self, PyObject *tp)
{
    if (self->open == NULL)
        Py_RETURN_NONE;
    PyObject *batch = PyDict_GetItemWithError(self->open, tp);
    if (batch == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    return Py_NewRef(batch);
}

static PyObject *
acc_set_open(Accumulator *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_open takes (topic, partition) and a batch");
        return NULL;
    }
    if (self->open == NULL) {
        PyErr_SetString(PyExc_TypeError, "Accumulator.__init__ was not called");
        return NULL;
    }
    Py_CLEAR(self->tp_batch);
    if (PyDict_SetItem(self->open, args[0], args[1]) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
acc_seal_open(Accumulator *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "seal_open takes (topic, partition) and a batch");
        return NULL;
    }
    if (self->open == NULL)
        Py_RETURN_FALSE;
    PyObject *batch = PyDict_GetItemWithError(self->open, args[0]);
    if (batch == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_FALSE;
    }
    if (batch != args[1])
        Py_RETURN_FALSE;
    Py_CLEAR(self->tp_batch);
    if (PyDict_DelItem(self->open, args[0]) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
acc_open_batches(Accumulator *self, PyObject *unused)
{
    if (self->open == NULL)
        return PyList_New(0);
    return PyMapping_Items(self->open);
}

static PyObject *
acc_clear_open(Accumulator *self, PyObject *unused)
{
    Py_CLEAR(self->tp_batch);
    if (self->open != NULL)
        PyDict_Clear(self->open);
    Py_RETURN_NONE;
}

static PyMethodDef acc_methods[] = {
    {"append", (PyCFunction)(void (*)(void))acc_append, METH_FASTCALL, acc_append_doc},
    {"get_open", (PyCFunction)acc_get_open, METH_O,
     "get_open($self, tp, /)\n--\n\nThe open batch of (topic, partition), or None."},
    {"set_open", (PyCFunction)(void (*)(void))acc_set_open, METH_FASTCALL,
     "set_open($self, tp, batch, /)\n--\n\nMake ``batch`` the open batch of (topic, partition)."},
    {"seal_open", (PyCFunction)(void (*)(void))acc_seal_open, METH_FASTCALL,
     "seal_open($self, tp, batch, /)\n--\n\nStop appending to ``batch`` if it is the open "
     "batch of (topic, partition); whether it was."},
    {"open_batches", (PyCFunction)acc_open_batches, METH_NOARGS,
     "open_batches($self, /)\n--\n\nThe ((topic, partition), batch) pairs open now."},
    {"clear_open", (PyCFunction)acc_clear_open, METH_NOARGS,
     "clear_open($self, /)\n--\n\nForget every open batch (close())."},
    {"send", (PyCFunction)(void (*)(void))acc_send, METH_FASTCALL | METH_KEYWORDS, acc_send_doc},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef acc_members[] = {
    {"buffered", T_PYSSIZET, offsetof(Accumulator, buffered), 0,
     "Bytes of records queued and not yet answered (buffer_memory's count)."},
    {"closing", T_BOOL, offsetof(Accumulator, closing), 0,
     "Set by close(): append declines every record, so send() raises."},
    {NULL, 0, 0, 0, NULL},
};

PyDoc_STRVAR(acc_doc,
"Accumulator(lock, partitions, sticky, batch_type, future_type, batch_size, buffer_memory,\n"
"            fallback=None)\n\n"
"Producer.send()'s common case in C; see groupkit.runtime.accumulator.Accumulator.");

static PyTypeObject AccumulatorType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "groupkit.protocol._native.Accumulator",
    .tp_basicsize = sizeof(Accumulator),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = acc_doc,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)acc_init,
    .tp_dealloc = (destructor)acc_dealloc,
    .tp_traverse = (traverseproc)acc_traverse,
    .tp_clear = (inquiry)acc_clear,
    .tp_methods = acc_methods,
    .tp_members = acc_members,
};

static PyMethodDef methods[] = {
    {"read_records", read_records, METH_VARARGS, read_records_doc},
    {"write_records", write_records, METH_VARARGS, write_records_doc},
    {"crc32c", crc32c, METH_O, crc32c_doc},
    {"crc32c_table", crc32c_table, METH_O, crc32c_table_doc},
    {"murmur2", murmur2, METH_O, murmur2_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "groupkit.protocol._native",
    "The record-batch v2 record loops in C (see groupkit.protocol.records).", -1, methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    crc_init();
#ifdef HAVE_CRC_HW
    if (__builtin_cpu_supports("sse4.2")) {
        span_init();
        crc_update = crc_hw;
    }
#endif
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    layouts = PyDict_New();
    for (int i = 0; i < 6; i++) {
        send_names[i] = PyUnicode_InternFromString(SEND_NAMES[i]);
        if (send_names[i] == NULL) {
            Py_DECREF(module);
            return NULL;
        }
    }
    if (layouts == NULL || PyType_Ready(&AccumulatorType) < 0 || PyType_Ready(&LockType) < 0
        || PyModule_AddObjectRef(module, "Lock", (PyObject *)&LockType) < 0
        || PyModule_AddObjectRef(module, "_layouts", layouts) < 0
        || PyModule_AddObjectRef(module, "Accumulator", (PyObject *)&AccumulatorType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
