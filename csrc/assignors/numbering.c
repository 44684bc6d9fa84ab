/* Numbering: topic-partitions to partition numbers and back, for one assignment's topics
 * (the C twin of assignors.sticky_loops.Numbering; the contract is documented there).
 *
 * Topics are laid end to end in the order given: partition p of topic k is starts[k] + p.
 * owned() reads a member's owned TopicPartitions (mark() marks them in a bytearray, for a
 * leader's checks, making no int), sticky() its StickyAssignorUserData bytes
 * (one layout attempt: the caller tries them in turn, as sticky_data.layouts lists them) and
 * partitions() writes TopicPartitions for numbers. A leader of 2,000 members owning a million
 * partitions runs each over a million entries per rebalance.
 *
 * sticky() finds topic names by their UTF-8 bytes in an open-addressing table, so it makes no
 * str per entry; a name not in the table is decoded only to check that it is valid UTF-8, as
 * the Python twin's bytes.decode() does (invalid UTF-8 makes the bytes not fit the layout).
 *
 * The TopicPartitions partitions() makes are left untracked by the cyclic garbage collector
 * (they hold a str and an int): made tracked, the collections their allocation sets off walk
 * every one made so far, which costs several times the making. */
#include "assignors.h"

typedef struct {
    PyObject_HEAD
    Py_ssize_t ntopics;
    PyObject **topics;        /* str, owned references */
    Py_ssize_t *starts;       /* ntopics + 1 entries: starts[ntopics] is the total */
    const char **names;       /* UTF-8 of each topic (kept by its str), or NULL if it has none */
    Py_ssize_t *name_sizes;
    Py_ssize_t *slots;        /* the name table: topic index, or -1 for an empty slot */
    size_t mask;
    PyObject *number;         /* dict: topic -> topic index, for owned() */
    PyTypeObject *tp_type;    /* TopicPartition: a tuple subclass */
    PyObject **small;         /* ints 0 .. max count - 1, shared by the TopicPartitions made */
    Py_ssize_t nsmall;
} Numbering;

static uint64_t
name_hash(const char *s, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

/* The topic index of UTF-8 name s[0:n], or -1 when no topic has it. */
static Py_ssize_t
find_name(Numbering *self, const char *s, Py_ssize_t n)
{
    size_t i = (size_t)name_hash(s, n) & self->mask;
    for (;;) {
        Py_ssize_t k = self->slots[i];
        if (k < 0)
            return -1;
        if (self->name_sizes[k] == n && memcmp(self->names[k], s, (size_t)n) == 0)
            return k;
        i = (i + 1) & self->mask;
    }
}

static void
numbering_clear(Numbering *self)
{
    if (self->topics != NULL) {
        for (Py_ssize_t k = 0; k < self->ntopics; k++)
            Py_XDECREF(self->topics[k]);
        PyMem_Free(self->topics);
        self->topics = NULL;
    }
    if (self->small != NULL) {
        for (Py_ssize_t i = 0; i < self->nsmall; i++)
            Py_XDECREF(self->small[i]);
        PyMem_Free(self->small);
        self->small = NULL;
    }
    PyMem_Free(self->starts);
    self->starts = NULL;
    PyMem_Free(self->names);
    self->names = NULL;
    PyMem_Free(self->name_sizes);
    self->name_sizes = NULL;
    PyMem_Free(self->slots);
    self->slots = NULL;
    Py_CLEAR(self->number);
    Py_CLEAR(self->tp_type);
    self->ntopics = 0;
    self->nsmall = 0;
}

static void
numbering_dealloc(Numbering *self)
{
    numbering_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
numbering_init(Numbering *self, PyObject *args, PyObject *kwargs)
{
    PyObject *topics_arg, *counts_arg, *tp_type;
    if (!PyArg_ParseTuple(args, "OOO!:Numbering", &topics_arg, &counts_arg, &PyType_Type, &tp_type))
        return -1;
    if (!PyType_IsSubtype((PyTypeObject *)tp_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "Numbering: the TopicPartition type must subclass tuple");
        return -1;
    }
    numbering_clear(self);
    PyObject *topics = PySequence_Fast(topics_arg, "Numbering: topics must be a sequence");
    if (topics == NULL)
        return -1;
    PyObject *counts = PySequence_Fast(counts_arg, "Numbering: counts must be a sequence");
    if (counts == NULL) {
        Py_DECREF(topics);
        return -1;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(topics);
    if (PySequence_Fast_GET_SIZE(counts) != n) {
        PyErr_SetString(PyExc_ValueError, "Numbering: one count per topic");
        goto fail;
    }
    size_t size = 8;
    while (size < (size_t)n * 2)
        size <<= 1;
    self->mask = size - 1;
    self->topics = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    self->starts = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
    self->names = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    self->name_sizes = PyMem_Calloc((size_t)n + 1, sizeof(Py_ssize_t));
    self->slots = PyMem_Malloc(size * sizeof(Py_ssize_t));
    self->number = PyDict_New();
    if (self->topics == NULL || self->starts == NULL || self->names == NULL
        || self->name_sizes == NULL || self->slots == NULL || self->number == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    for (size_t i = 0; i < size; i++)
        self->slots[i] = -1;
    self->ntopics = n;
    Py_INCREF(tp_type);
    self->tp_type = (PyTypeObject *)tp_type;
    Py_ssize_t start = 0, largest = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *topic = PySequence_Fast_GET_ITEM(topics, k);
        Py_ssize_t count = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(counts, k));
        if (count == -1 && PyErr_Occurred())
            goto fail;
        if (!PyUnicode_Check(topic) || count < 0) {
            PyErr_SetString(PyExc_ValueError, "Numbering: topics are str, counts 0 or more");
            goto fail;
        }
        Py_INCREF(topic);
        self->topics[k] = topic;
        self->starts[k] = start;
        start += count;
        if (count > largest)
            largest = count;
        PyObject *index = PyLong_FromSsize_t(k);
        if (index == NULL)
            goto fail;
        int failed = PyDict_SetItem(self->number, topic, index);
        Py_DECREF(index);
        if (failed < 0)
            goto fail;
        Py_ssize_t name_size;
        const char *name = PyUnicode_AsUTF8AndSize(topic, &name_size);
        if (name == NULL) {
            /* A name with lone surrogates has no UTF-8, so no valid bytes decode to it. */
            PyErr_Clear();
            continue;
        }
        self->names[k] = name;
        self->name_sizes[k] = name_size;
        if (find_name(self, name, name_size) >= 0)
            continue;  /* the same name twice: the first keeps it, as a dict would */
        size_t i = (size_t)name_hash(name, name_size) & self->mask;
        while (self->slots[i] >= 0)
            i = (i + 1) & self->mask;
        self->slots[i] = k;
    }
    self->starts[n] = start;
    self->small = PyMem_Calloc((size_t)largest + 1, sizeof(PyObject *));
    if (self->small == NULL) {
        PyErr_NoMemory();
        goto fail;
    }
    self->nsmall = largest;
    for (Py_ssize_t i = 0; i < largest; i++) {
        self->small[i] = PyLong_FromSsize_t(i);
        if (self->small[i] == NULL)
            goto fail;
    }
    Py_DECREF(topics);
    Py_DECREF(counts);
    return 0;
fail:
    Py_DECREF(topics);
    Py_DECREF(counts);
    numbering_clear(self);
    return -1;
}

/* Append number to out as an int; 0, or -1 with an exception set. */
static int
append_number(PyObject *out, Py_ssize_t number)
{
    PyObject *value = PyLong_FromSsize_t(number);
    if (value == NULL)
        return -1;
    int failed = PyList_Append(out, value);
    Py_DECREF(value);
    return failed;
}

/* Calls take(ctx, n) for the number n of each (topic, partition) pair of `seq` that is in the
 * layout, in order; owned() and mark() differ only in what they do with n. 0, or -1 with an
 * exception set (bad_pair is the message for an item that is not a pair). */
static int
each_number(Numbering *self, PyObject *seq, const char *bad_pair,
            int (*take)(void *ctx, Py_ssize_t number), void *ctx)
{
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *last = NULL;
    Py_ssize_t k = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i], *pair = NULL;
        if (PyTuple_Check(item)) {
            Py_INCREF(item);
            pair = item;
        }
        else if ((pair = PySequence_Tuple(item)) == NULL) {
            return -1;
        }
        if (PyTuple_GET_SIZE(pair) != 2) {
            Py_DECREF(pair);
            PyErr_SetString(PyExc_ValueError, bad_pair);
            return -1;
        }
        PyObject *topic = PyTuple_GET_ITEM(pair, 0), *partition = PyTuple_GET_ITEM(pair, 1);
        if (topic != last) {
            PyObject *found = PyDict_GetItemWithError(self->number, topic);
            if (found == NULL && PyErr_Occurred()) {
                Py_DECREF(pair);
                return -1;
            }
            k = found == NULL ? -1 : PyLong_AsSsize_t(found);
            /* Compared by identity only, and only while a tuple in `seq` holds it. */
            last = pair == item ? topic : NULL;
        }
        if (k >= 0) {
            if (!PyLong_Check(partition)) {
                Py_DECREF(pair);
                PyErr_SetString(PyExc_TypeError, "a partition id must be an int");
                return -1;
            }
            int overflow;
            long long p = PyLong_AsLongLongAndOverflow(partition, &overflow);
            if (p == -1 && PyErr_Occurred()) {
                Py_DECREF(pair);
                return -1;
            }
            if (!overflow && p >= 0 && p < self->starts[k + 1] - self->starts[k]
                && take(ctx, self->starts[k] + (Py_ssize_t)p) < 0) {
                Py_DECREF(pair);
                return -1;
            }
        }
        Py_DECREF(pair);
    }
    return 0;
}

static int
take_append(void *ctx, Py_ssize_t number)
{
    return append_number((PyObject *)ctx, number);
}

PyDoc_STRVAR(owned_doc,
"owned(owned, /)\n--\n\n"
"Numbers of the (topic, partition) pairs in ``owned`` that are in the layout, in order.");

static PyObject *
numbering_owned(Numbering *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "owned partitions must be a sequence");
    if (seq == NULL)
        return NULL;
    PyObject *out = PyList_New(0);
    if (out != NULL && each_number(self, seq, "an owned partition is a (topic, partition) pair",
                                   take_append, out) < 0)
        Py_CLEAR(out);
    Py_DECREF(seq);
    return out;
}

typedef struct {
    unsigned char *taken;
    Py_ssize_t marked;
} Marking;

static int
take_mark(void *ctx, Py_ssize_t number)
{
    Marking *m = ctx;
    m->marked += !m->taken[number];
    m->taken[number] = 1;
    return 0;
}

PyDoc_STRVAR(mark_doc,
"mark(partitions, taken, /)\n--\n\n"
"Set taken[n] to 1 for the number n of each (topic, partition) pair in the layout; how\n"
"many of them were 0 before.");

static PyObject *
numbering_mark(Numbering *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "mark() takes partitions and taken");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[1], &view, PyBUF_WRITABLE) < 0)
        return NULL;
    if (view.len < self->starts[self->ntopics]) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "mark(): taken is shorter than the layout");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(args[0], "partitions must be a sequence");
    if (seq == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Marking marking = {view.buf, 0};
    int failed = each_number(self, seq, "a partition is a (topic, partition) pair",
                             take_mark, &marking);
    Py_DECREF(seq);
    PyBuffer_Release(&view);
    return failed ? NULL : PyLong_FromSsize_t(marking.marked);
}

static inline int32_t
int32_at(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8)
                     | (uint32_t)p[3]);
}

PyDoc_STRVAR(sticky_doc,
"sticky(data, start, with_generation, /)\n--\n\n"
"Numbers and generation read from StickyAssignorUserData at ``start``, or None when the\n"
"bytes do not fit that layout exactly.");

static PyObject *
numbering_sticky(Numbering *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "sticky() takes data, start and with_generation");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    int with_generation = PyObject_IsTrue(args[2]);
    PyObject *out = NULL;
    if ((start == -1 && PyErr_Occurred()) || with_generation < 0)
        goto fail;
    if (start < 0) {
        PyErr_SetString(PyExc_ValueError, "sticky(): start must be 0 or more");
        goto fail;
    }
    const unsigned char *data = view.buf;
    Py_ssize_t end = view.len, pos = start;
    if ((out = PyList_New(0)) == NULL)
        goto fail;
    if (pos + 4 > end)
        goto unfit;
    int32_t topics = int32_at(data + pos);
    pos += 4;
    if (topics < 0 || topics > (end - pos) / 6)
        goto unfit;
    for (int32_t t = 0; t < topics; t++) {
        if (pos + 2 > end)
            goto unfit;
        Py_ssize_t size = (int16_t)(((uint16_t)data[pos] << 8) | data[pos + 1]);
        pos += 2;
        if (size < 0 || pos + size + 4 > end)
            goto unfit;
        const char *name = (const char *)data + pos;
        Py_ssize_t k = find_name(self, name, size);
        if (k < 0) {
            PyObject *checked = PyUnicode_DecodeUTF8(name, size, "strict");
            if (checked == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                    goto fail;
                PyErr_Clear();
                goto unfit;
            }
            Py_DECREF(checked);
        }
        pos += size;
        int32_t count = int32_at(data + pos);
        pos += 4;
        if (count < 0 || (Py_ssize_t)count > (end - pos) / 4)
            goto unfit;
        if (k >= 0) {
            Py_ssize_t base = self->starts[k], limit = self->starts[k + 1] - base;
            for (int32_t i = 0; i < count; i++) {
                int32_t p = int32_at(data + pos + 4 * (Py_ssize_t)i);
                if (p >= 0 && p < limit && append_number(out, base + p) < 0)
                    goto fail;
            }
        }
        pos += 4 * (Py_ssize_t)count;
    }
    long generation = -1;
    if (with_generation) {
        if (pos + 4 > end)
            goto unfit;
        generation = int32_at(data + pos);
        pos += 4;
    }
    if (pos != end)
        goto unfit;
    PyBuffer_Release(&view);
    return Py_BuildValue("(Nl)", out, generation);
unfit:
    Py_DECREF(out);
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return NULL;
}

PyDoc_STRVAR(partitions_doc,
"partitions(numbers, /)\n--\n\n"
"The TopicPartitions of ``numbers``, in the order given, as a tuple.");

static PyObject *
numbering_partitions(Numbering *self, PyObject *arg)
{
    PyObject *seq = PySequence_Fast(arg, "numbers must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        goto fail;
    Py_ssize_t total = self->starts[self->ntopics], k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t number = PyLong_AsSsize_t(items[i]);
        if (number == -1 && PyErr_Occurred())
            goto fail;
        if (number < 0 || number >= total) {
            PyErr_SetString(PyExc_IndexError, "partition number out of range");
            goto fail;
        }
        /* Numbers mostly come in runs of one topic: try the last topic first. */
        if (!(self->starts[k] <= number && number < self->starts[k + 1])) {
            Py_ssize_t lo = 0, hi = self->ntopics - 1;
            while (lo < hi) {  /* the last topic whose start is <= number, skipping empty ones */
                Py_ssize_t mid = (lo + hi + 1) / 2;
                if (self->starts[mid] <= number)
                    lo = mid;
                else
                    hi = mid - 1;
            }
            k = lo;
        }
        Py_ssize_t p = number - self->starts[k];
        PyObject *tp = self->tp_type->tp_alloc(self->tp_type, 2);
        if (tp == NULL)
            goto fail;
        Py_INCREF(self->topics[k]);
        PyTuple_SET_ITEM(tp, 0, self->topics[k]);
        PyObject *partition = self->small[p];
        Py_INCREF(partition);
        PyTuple_SET_ITEM(tp, 1, partition);
        /* A str and an int: never part of a cycle. Untracked, a million of them do not make
         * every collection of the cyclic garbage collector walk them (CPython untracks such
         * tuples too, but only once a collection has looked at them). */
        PyObject_GC_UnTrack(tp);
        PyTuple_SET_ITEM(out, i, tp);
    }
    Py_DECREF(seq);
    return out;
fail:
    Py_XDECREF(out);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef numbering_methods[] = {
    {"owned", (PyCFunction)numbering_owned, METH_O, owned_doc},
    {"mark", (PyCFunction)(void (*)(void))numbering_mark, METH_FASTCALL, mark_doc},
    {"sticky", (PyCFunction)(void (*)(void))numbering_sticky, METH_FASTCALL, sticky_doc},
    {"partitions", (PyCFunction)numbering_partitions, METH_O, partitions_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject NumberingType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "assignors._native.Numbering",
    .tp_doc = PyDoc_STR("Numbering(topics, counts, tp_type): topic-partitions to partition "
                        "numbers and back (see assignors.sticky_loops.Numbering)."),
    .tp_basicsize = sizeof(Numbering),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)numbering_init,
    .tp_dealloc = (destructor)numbering_dealloc,
    .tp_methods = numbering_methods,
};

int
gka_numbering_init(PyObject *module)
{
    if (PyType_Ready(&NumberingType) < 0)
        return -1;
    Py_INCREF(&NumberingType);
    if (PyModule_AddObject(module, "Numbering", (PyObject *)&NumberingType) < 0) {
        Py_DECREF(&NumberingType);
        return -1;
    }
    return 0;
}
