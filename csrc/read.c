/* The record-batch v2 record loops in C: reading (varints, keys, values, headers and record
 * objects) and writing (a producer's rows as record bytes), and their CRC-32C; and the
 * producer's accumulator (send()'s common case, accumulator.c). This file holds the reading.
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
#include "native.h"

/* Record's fields in the order read_records sets them; the sourced subclass adds two. */
static const char *const FIELD_NAMES[] = {
    "offset", "timestamp", "key", "value", "headers", "timestamp_type", "topic", "partition",
};
#define PLAIN_FIELDS 6
typedef GkLayout Layout;

/* type -> bytes holding its Layout; filled on first use of a record class. */
static PyObject *layouts = NULL;

/* The offset of the writable object slot ``name`` of ``cls`` into *at (a TypeError if
 * ``name`` is not one). */
int
gk_slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *at)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)cls, name);
    if (descr == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s has no slot %s", cls->tp_name, name);
        return -1;
    }
    if (Py_IS_TYPE(descr, &gk_ListSlotType)) { /* the headers slot (list_slot.c) */
        PyObject *member = PyObject_GetAttrString(descr, "member");
        Py_SETREF(descr, member);
        if (descr == NULL)
            return -1;
    }
    if (!Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        Py_DECREF(descr);
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", cls->tp_name, name);
        return -1;
    }
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    PyTypeObject *owner = ((PyDescrObject *)descr)->d_type;
    int ok = member->type == T_OBJECT_EX && !(member->flags & READONLY)
             && PyType_IsSubtype(cls, owner);
    *at = member->offset;
    Py_DECREF(descr);
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a writable object slot", cls->tp_name,
                     name);
        return -1;
    }
    return 0;
}

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
    for (int i = 0; i < fields; i++)
        if (gk_slot_offset(cls, FIELD_NAMES[i], &out->at[i]) < 0)
            return -1;
    if (sourced) {
        PyObject *names = PyObject_GetAttrString(key, "SET_AFTER_DECODE");
        if (names == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();
        }
        else {
            int bad = !PyTuple_Check(names) || PyTuple_GET_SIZE(names) > MAX_AFTER;
            for (Py_ssize_t i = 0; !bad && i < PyTuple_GET_SIZE(names); i++) {
                PyObject *name = PyTuple_GET_ITEM(names, i);
                const char *text = PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
                if (text == NULL || gk_slot_offset(cls, text, &out->after_at[i]) < 0) {
                    Py_DECREF(names);
                    if (!PyErr_Occurred())
                        PyErr_Format(PyExc_TypeError, "%s.SET_AFTER_DECODE holds a non-str",
                                     cls->tp_name);
                    return -1;
                }
                out->n_after++;
            }
            Py_DECREF(names);
            if (bad) {
                PyErr_Format(PyExc_TypeError, "%s.SET_AFTER_DECODE must be a tuple of at most"
                             " %d field names", cls->tp_name, MAX_AFTER);
                return -1;
            }
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

/* The nullable byte string at *pp (a zigzag length, then that many bytes; -1 is null), named
 * ``what`` in errors: a new reference (None for null) with *pp moved past it, or NULL with
 * ValueError set. Keys, values and header values are all written this way. */
static PyObject *
nullable_bytes(const unsigned char **pp, const unsigned char *end, const char *what)
{
    int64_t n;
    const unsigned char *p = varint(*pp, end, &n);
    if (p == NULL)
        return NULL;
    if (n < 0) {
        if (n != -1)
            return malformed("%s length %lld", what, (long long)n);
        *pp = p;
        return Py_NewRef(Py_None);
    }
    if (n > end - p)
        return malformed("%s runs past the end of the records", what);
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)p, (Py_ssize_t)n);
    if (bytes != NULL)
        *pp = p + n;
    return bytes;
}

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
        PyObject *value = nullable_bytes(&p, end, "header value");
        if (value == NULL) {
            Py_DECREF(name);
            goto fail;
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
"             topic, partition, sourced[, from_offset[, after]]) -> int\n\n"
"Decode ``count`` v2 records from ``buf[pos:end]`` into ``out`` as instances of ``cls``\n"
"(their timestamp is ``max_ts`` when ``ts_type`` is 1, log-append time); returns the end\n"
"position. Records whose offset is below ``from_offset`` are passed over by their length,\n"
"not built (-2**63: none). ``after`` (a tuple) holds a value for each field a sourced\n"
"``cls`` names in SET_AFTER_DECODE, set on every record built; without it those stay empty.\n"
"Raises ValueError on malformed records.");

int
gk_record_build(PyObject *cls, int sourced, PyObject *topic, PyObject *partition,
                PyObject *after, GkBuild *out)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "cls must be a type");
        return -1;
    }
    out->type = (PyTypeObject *)cls;
    if (find_layout(out->type, sourced, &out->layout) < 0)
        return -1;
    out->n_after = after == NULL ? 0 : (int)PyTuple_GET_SIZE(after);
    if (out->n_after && out->n_after != out->layout.n_after) {
        PyErr_Format(PyExc_TypeError, "after holds %d values; %s.SET_AFTER_DECODE names %d",
                     out->n_after, out->type->tp_name, out->layout.n_after);
        return -1;
    }
    out->topic = topic;
    out->partition = partition;
    out->after = after;
    return 0;
}

const unsigned char *
gk_record_loop(const unsigned char *origin, const unsigned char *p, const unsigned char *end,
               Py_ssize_t count,
               long long base_offset, long long base_ts, int ts_type, long long max_ts,
               long long from_offset, const GkBuild *b, PyObject *out)
{
    const unsigned char *result = NULL;
    PyObject *ts_obj = NULL, *ts_type_obj = NULL;
    int64_t last_ts = 0;
    PyTypeObject *type = b->type;
    const Layout *layout = &b->layout;
    int sourced = layout->sourced;
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
        int64_t length, ts_delta, offset_delta;
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
        int64_t at;
        if (from_offset != LLONG_MIN && !__builtin_add_overflow(base_offset, offset_delta, &at)
            && at < from_offset) {
            p = rec_end; /* not wanted: passed over unread */
            continue;
        }
        PyObject *headers;
        PyObject *key = nullable_bytes(&p, end, "key");
        if (key == NULL)
            goto fail;
        PyObject *value = nullable_bytes(&p, end, "value");
        if (value == NULL) {
            Py_DECREF(key);
            goto fail;
        }
        if (p < end && *p == 0) {
            headers = NULL; /* no list until asked for (list_slot.c) */
            p++;
        }
        else if ((headers = read_headers(&p, end, rec_end)) == NULL) {
            Py_DECREF(key);
            Py_DECREF(value);
            goto fail;
        }
        if (p != rec_end) {
            Py_DECREF(key);
            Py_DECREF(value);
            Py_XDECREF(headers);
            malformed("record length says it ends at byte %zd, fields end at %zd",
                      (Py_ssize_t)(rec_end - origin), (Py_ssize_t)(p - origin));
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
            Py_XDECREF(headers);
            goto fail;
        }
        if (PyType_IS_GC(type))
            PyObject_GC_UnTrack(r);
        if (headers != NULL)
            PyObject_GC_UnTrack(headers);
        SLOT(r, layout->at[0]) = offset;
        SLOT(r, layout->at[1]) = ts;
        SLOT(r, layout->at[2]) = key;
        SLOT(r, layout->at[3]) = value;
        SLOT(r, layout->at[4]) = headers;
        SLOT(r, layout->at[5]) = Py_NewRef(ts_type_obj);
        if (sourced) {
            SLOT(r, layout->at[6]) = Py_NewRef(b->topic);
            SLOT(r, layout->at[7]) = Py_NewRef(b->partition);
        }
        for (int k = 0; k < b->n_after; k++)
            SLOT(r, layout->after_at[k]) = Py_NewRef(PyTuple_GET_ITEM(b->after, k));
        int appended = PyList_Append(out, r);
        Py_DECREF(r);
        if (appended < 0)
            goto fail;
    }
    result = p;
fail:
done:
    Py_XDECREF(ts_obj);
    Py_XDECREF(ts_type_obj);
    return result;
}

static PyObject *
read_records(PyObject *module, PyObject *args)
{
    Py_buffer view;
    Py_ssize_t pos, stop, count;
    long long base_offset, base_ts, max_ts, from_offset = LLONG_MIN;
    int ts_type, sourced;
    PyObject *out, *cls, *topic, *partition, *after = NULL;
    if (!PyArg_ParseTuple(args, "y*nnnLLiLO!OOOp|LO!:read_records", &view, &pos, &stop, &count,
                          &base_offset, &base_ts, &ts_type, &max_ts, &PyList_Type, &out, &cls,
                          &topic, &partition, &sourced, &from_offset, &PyTuple_Type, &after))
        return NULL;
    PyObject *result = NULL;
    GkBuild build;
    if (gk_record_build(cls, sourced, topic, partition, after, &build) < 0)
        goto done;
    if (pos < 0 || stop < pos || stop > view.len || count < 0) {
        PyErr_SetString(PyExc_ValueError, "record range outside the buffer");
        goto done;
    }
    const unsigned char *base = (const unsigned char *)view.buf;
    const unsigned char *end = gk_record_loop(base, base + pos, base + stop, count,
                                              base_offset, base_ts, ts_type, max_ts,
                                              from_offset, &build, out);
    if (end != NULL)
        result = PyLong_FromSsize_t(end - base);
done:
    PyBuffer_Release(&view);
    return result;
}

PyDoc_STRVAR(untrack_list_doc,
"untrack_list(items) -> bool\n\n"
"Stop the cyclic garbage collector tracking the list ``items`` when none of its items is\n"
"tracked (records read here, ints, bytes, str, None), as CPython stops tracking such tuples;\n"
"returns whether it did. The caller keeps the list as it is: an item added later that leads\n"
"back to the list would make a cycle the collector cannot see (a leak, not a crash).");

/* A share consumer's answer is one list of hundreds of records, kept until polls have taken
 * them; each young collection meanwhile walks the list item by item (twice) though no item
 * can be garbage of a cycle. */
static PyObject *
untrack_list(PyObject *module, PyObject *items)
{
    if (!PyList_CheckExact(items)) {
        PyErr_SetString(PyExc_TypeError, "untrack_list() takes a list");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (PyObject_IS_GC(item) && PyObject_GC_IsTracked(item))
            Py_RETURN_FALSE;
    }
    if (PyObject_GC_IsTracked(items))
        PyObject_GC_UnTrack(items);
    Py_RETURN_TRUE;
}

static PyMethodDef read_methods[] = {
    {"read_records", read_records, METH_VARARGS, read_records_doc},
    {"untrack_list", untrack_list, METH_O, untrack_list_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_read_init(PyObject *module)
{
    layouts = PyDict_New();
    if (layouts == NULL || PyModule_AddObjectRef(module, "_layouts", layouts) < 0)
        return -1;
    return PyModule_AddFunctions(module, read_methods);
}
