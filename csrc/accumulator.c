#include "native.h"

/* Producer.send()'s common case in one call: the record's topic is known, its partition's
 * batch is open with room to spare and buffer_memory has room. Accumulator.append does then
 * what Producer._send_slow does (groupkit/runtime/accumulator.py has the same in Python, the
 * reference both are tested against), holding the producer's lock as that does, and answers
 * None for every other record, which the Python path then takes from the start. It never
 * raises for a bad argument: the Python path names the error.
 *
 * It holds the producer's lock (lock.c's Lock, taken directly; any other lock through its
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
    char refusing;                     /* the producer's transaction refuses sends now */
} Accumulator;

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
    Py_ssize_t records_at, size_at, batch_at, index_at;
    if (gk_slot_offset(batch_cls, "records", &records_at) < 0
        || gk_slot_offset(batch_cls, "size", &size_at) < 0
        || gk_slot_offset(future_cls, "_record_batch", &batch_at) < 0
        || gk_slot_offset(future_cls, "_record_index", &index_at) < 0)
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
    self->own_lock = Py_IS_TYPE(lock, &gk_LockType) ? (Lock *)Py_NewRef(lock) : NULL;
    self->records_at = records_at;
    self->size_at = size_at;
    self->batch_at = batch_at;
    self->index_at = index_at;
    self->batch_size = batch_size;
    self->buffer_memory = buffer_memory;
    self->buffered = 0;
    self->closing = 0;
    self->refusing = 0;
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
    /* Read under the lock the producer sets it under: no record slips in after the
     * transaction's error (send() then raises it on the Python path). */
    if (self->refusing)
        return 0;
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
    {"refusing", T_BOOL, offsetof(Accumulator, refusing), 0,
     "Set (with the producer's lock held) while its transaction refuses sends: append\n"
     "declines every record, so send() takes the Python path, which raises the error."},
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

static PyMethodDef accumulator_methods[] = {
    {"murmur2", murmur2, METH_O, murmur2_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_accumulator_init(PyObject *module)
{
    for (int i = 0; i < 6; i++) {
        send_names[i] = PyUnicode_InternFromString(SEND_NAMES[i]);
        if (send_names[i] == NULL)
            return -1;
    }
    if (PyType_Ready(&AccumulatorType) < 0
        || PyModule_AddObjectRef(module, "Accumulator", (PyObject *)&AccumulatorType) < 0)
        return -1;
    return PyModule_AddFunctions(module, accumulator_methods);
}
