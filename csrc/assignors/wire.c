/* The consumer protocol's Subscription and Assignment bytes as a group leader reads and writes
 * them (the C twins of the Python path in assignors/wire.py, whose contract is documented
 * there): a leader of 2,000 members on a million partitions reads 2,000 lists of every topic
 * name and a million owned partitions, and writes a million assigned ones, per rebalance.
 *
 * SubscriptionReader.read(data) gives (topics, user_data, owned, generation, rack) or None when
 * the bytes are malformed; the caller then reads them in Python for the named error. One reader
 * serves one rebalance: members sending the same topic list (the same bytes) share one tuple of
 * it, and every topic name is made once, found again by its UTF-8 bytes in an open-addressing
 * table, so a million owned entries make no str of their own.
 *
 * encode_assignment(partitions, user_data, version) gives the Assignment bytes, partitions
 * grouped by topic in name order and ids in order, or None for what only the Python path
 * handles (a value that is not a str topic or an int id, a version out of range): it then
 * encodes or raises as before. The TopicPartitions read are left untracked by the cyclic
 * collector, as numbering.c explains. */
#include "assignors.h"

#define SMALL_IDS 65536  /* partition ids below this share one int object per reader */

typedef struct {
    PyObject_HEAD
    PyTypeObject *tp_type;   /* TopicPartition: a tuple subclass */
    PyObject *spans;         /* dict: bytes of a topics array -> tuple of str */
    PyObject **names;        /* str, owned references */
    const char **utf8;       /* each name's UTF-8 (kept by its str) */
    Py_ssize_t *sizes;
    Py_ssize_t nnames, capacity;
    Py_ssize_t *slots;       /* the name table: name index, or -1 for an empty slot */
    size_t mask;
    PyObject **ids;          /* SMALL_IDS entries, made on first use */
} Reader;

static uint64_t
hash_bytes(const char *s, Py_ssize_t n)
{
    uint64_t h = 1469598103934665603ULL;  /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static inline int32_t
int32_at(const unsigned char *p)
{
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8)
                     | (uint32_t)p[3]);
}

static inline int16_t
int16_at(const unsigned char *p)
{
    return (int16_t)(((uint16_t)p[0] << 8) | p[1]);
}

static void
reader_clear(Reader *self)
{
    for (Py_ssize_t i = 0; i < self->nnames; i++)
        Py_DECREF(self->names[i]);
    PyMem_Free(self->names);
    PyMem_Free(self->utf8);
    PyMem_Free(self->sizes);
    PyMem_Free(self->slots);
    self->names = NULL;
    self->utf8 = NULL;
    self->sizes = NULL;
    self->slots = NULL;
    self->nnames = self->capacity = 0;
    if (self->ids != NULL) {
        for (Py_ssize_t i = 0; i < SMALL_IDS; i++)
            Py_XDECREF(self->ids[i]);
        PyMem_Free(self->ids);
        self->ids = NULL;
    }
    Py_CLEAR(self->spans);
    Py_CLEAR(self->tp_type);
}

static void
reader_dealloc(Reader *self)
{
    reader_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
reader_init(Reader *self, PyObject *args, PyObject *kwargs)
{
    PyObject *tp_type;
    if (!PyArg_ParseTuple(args, "O!:SubscriptionReader", &PyType_Type, &tp_type))
        return -1;
    if (!PyType_IsSubtype((PyTypeObject *)tp_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError,
                        "SubscriptionReader: the TopicPartition type must subclass tuple");
        return -1;
    }
    reader_clear(self);
    self->capacity = 64;
    self->mask = 127;
    self->names = PyMem_Calloc((size_t)self->capacity, sizeof(PyObject *));
    self->utf8 = PyMem_Calloc((size_t)self->capacity, sizeof(char *));
    self->sizes = PyMem_Calloc((size_t)self->capacity, sizeof(Py_ssize_t));
    self->slots = PyMem_Malloc((self->mask + 1) * sizeof(Py_ssize_t));
    self->spans = PyDict_New();
    if (self->names == NULL || self->utf8 == NULL || self->sizes == NULL || self->slots == NULL
        || self->spans == NULL) {
        reader_clear(self);
        PyErr_NoMemory();
        return -1;
    }
    for (size_t i = 0; i <= self->mask; i++)
        self->slots[i] = -1;
    Py_INCREF(tp_type);
    self->tp_type = (PyTypeObject *)tp_type;
    return 0;
}

/* Place name index k in a table of mask + 1 slots. */
static void
place_name(Reader *self, Py_ssize_t *slots, size_t mask, Py_ssize_t k)
{
    size_t i = (size_t)hash_bytes(self->utf8[k], self->sizes[k]) & mask;
    while (slots[i] >= 0)
        i = (i + 1) & mask;
    slots[i] = k;
}

/* The str whose UTF-8 is s[0:n], made on first sight (a borrowed reference); NULL with no
 * exception set when the bytes are not valid UTF-8, NULL with one set on failure. */
static PyObject *
name_of(Reader *self, const char *s, Py_ssize_t n)
{
    size_t i = (size_t)hash_bytes(s, n) & self->mask;
    for (;;) {
        Py_ssize_t k = self->slots[i];
        if (k < 0)
            break;
        if (self->sizes[k] == n && memcmp(self->utf8[k], s, (size_t)n) == 0)
            return self->names[k];
        i = (i + 1) & self->mask;
    }
    PyObject *name = PyUnicode_DecodeUTF8(s, n, "strict");
    if (name == NULL) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
            PyErr_Clear();
        return NULL;
    }
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(name, &size);
    if (utf8 == NULL) {
        Py_DECREF(name);
        return NULL;
    }
    if (self->nnames == self->capacity) {
        Py_ssize_t capacity = self->capacity * 2;
        size_t mask = (size_t)capacity * 2 - 1;
        PyObject **names = PyMem_Realloc(self->names, (size_t)capacity * sizeof(PyObject *));
        if (names != NULL)
            self->names = names;
        const char **utf8s = PyMem_Realloc(self->utf8, (size_t)capacity * sizeof(char *));
        if (utf8s != NULL)
            self->utf8 = utf8s;
        Py_ssize_t *sizes = PyMem_Realloc(self->sizes, (size_t)capacity * sizeof(Py_ssize_t));
        if (sizes != NULL)
            self->sizes = sizes;
        Py_ssize_t *slots = PyMem_Malloc((mask + 1) * sizeof(Py_ssize_t));
        if (names == NULL || utf8s == NULL || sizes == NULL || slots == NULL) {
            PyMem_Free(slots);
            Py_DECREF(name);
            PyErr_NoMemory();
            return NULL;
        }
        for (size_t j = 0; j <= mask; j++)
            slots[j] = -1;
        for (Py_ssize_t k = 0; k < self->nnames; k++)
            place_name(self, slots, mask, k);
        PyMem_Free(self->slots);
        self->slots = slots;
        self->mask = mask;
        self->capacity = capacity;
    }
    Py_ssize_t k = self->nnames++;
    self->names[k] = name;
    self->utf8[k] = utf8;
    self->sizes[k] = size;
    place_name(self, self->slots, self->mask, k);
    return name;
}

/* A new reference to the int id, shared for small ids. */
static PyObject *
id_of(Reader *self, int32_t id)
{
    if (id < 0 || id >= SMALL_IDS)
        return PyLong_FromLong(id);
    if (self->ids == NULL && (self->ids = PyMem_Calloc(SMALL_IDS, sizeof(PyObject *))) == NULL)
        return PyErr_NoMemory();
    PyObject *value = self->ids[id];
    if (value == NULL && (value = self->ids[id] = PyLong_FromLong(id)) == NULL)
        return NULL;
    Py_INCREF(value);
    return value;
}

/* Bytes reading state; the macros leave through `unfit` when the data ends too soon. */
#define NEED(n) do { if ((n) < 0 || (n) > end - pos) goto unfit; } while (0)

/* The tuple of topic names of the array at data[pos:], shared by members sending the same
 * bytes; *next is set past it. NULL with no exception set: malformed. */
static PyObject *
read_topics(Reader *self, const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
            Py_ssize_t *next)
{
    Py_ssize_t start = pos;
    NEED(4);
    int32_t count = int32_at(data + pos);
    pos += 4;
    if (count < 0 || count > end - pos)
        goto unfit;
    for (int32_t i = 0; i < count; i++) {
        NEED(2);
        Py_ssize_t size = int16_at(data + pos);
        pos += 2;
        NEED(size);
        pos += size;
    }
    *next = pos;
    PyObject *key = PyBytes_FromStringAndSize((const char *)data + start, pos - start);
    if (key == NULL)
        return NULL;
    PyObject *topics = PyDict_GetItemWithError(self->spans, key);
    if (topics != NULL) {
        Py_DECREF(key);
        Py_INCREF(topics);
        return topics;
    }
    if (PyErr_Occurred() || (topics = PyTuple_New(count)) == NULL) {
        Py_DECREF(key);
        return NULL;
    }
    for (Py_ssize_t i = 0, at = start + 4; i < count; i++) {
        Py_ssize_t size = int16_at(data + at);
        PyObject *name = name_of(self, (const char *)data + at + 2, size);
        if (name == NULL) {
            Py_DECREF(key);
            Py_DECREF(topics);
            return NULL;
        }
        Py_INCREF(name);
        PyTuple_SET_ITEM(topics, i, name);
        at += 2 + size;
    }
    if (PyDict_SetItem(self->spans, key, topics) < 0) {
        Py_CLEAR(topics);
    }
    Py_DECREF(key);
    return topics;
unfit:
    return NULL;
}

/* The owned partitions array at data[pos:] as a tuple of TopicPartitions. */
static PyObject *
read_owned(Reader *self, const unsigned char *data, Py_ssize_t pos, Py_ssize_t end,
           Py_ssize_t *next)
{
    PyObject *out = NULL;
    NEED(4);
    int32_t entries = int32_at(data + pos);
    pos += 4;
    if (entries < 0 || entries > end - pos)
        goto unfit;
    /* Count the partitions first, so the tuple is made once at its size. */
    Py_ssize_t total = 0, at = pos;
    for (int32_t e = 0; e < entries; e++) {
        Py_ssize_t size;
        if (2 > end - at || (size = int16_at(data + at)) < 0 || size + 6 > end - at)
            goto unfit;
        at += 2 + size;
        int32_t count = int32_at(data + at);
        at += 4;
        if (count < 0 || count > (end - at) / 4)
            goto unfit;
        at += 4 * (Py_ssize_t)count;
        total += count;
    }
    if ((out = PyTuple_New(total)) == NULL)
        return NULL;
    Py_ssize_t made = 0;
    for (int32_t e = 0; e < entries; e++) {
        Py_ssize_t size = int16_at(data + pos);
        PyObject *name = name_of(self, (const char *)data + pos + 2, size);
        if (name == NULL)
            goto fail;
        pos += 2 + size;
        int32_t count = int32_at(data + pos);
        pos += 4;
        for (int32_t i = 0; i < count; i++, pos += 4) {
            PyObject *id = id_of(self, int32_at(data + pos));
            if (id == NULL)
                goto fail;
            PyObject *tp = self->tp_type->tp_alloc(self->tp_type, 2);
            if (tp == NULL) {
                Py_DECREF(id);
                goto fail;
            }
            Py_INCREF(name);
            PyTuple_SET_ITEM(tp, 0, name);
            PyTuple_SET_ITEM(tp, 1, id);
            PyObject_GC_UnTrack(tp);
            PyTuple_SET_ITEM(out, made++, tp);
        }
    }
    *next = pos;
    return out;
unfit:
fail:
    Py_XDECREF(out);
    return NULL;
}

PyDoc_STRVAR(read_doc,
"read(data, /)\n--\n\n"
"(topics, user_data, owned, generation, rack) of consumer Subscription bytes, or None when\n"
"they are malformed (see assignors.wire).");

static PyObject *
reader_read(Reader *self, PyObject *arg)
{
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t end = view.len, pos = 0;
    PyObject *topics = NULL, *user_data = NULL, *owned = NULL, *rack = NULL;
    long generation = -1;
    NEED(2);
    int16_t version = int16_at(data);
    pos = 2;
    if (version < 0)
        goto unfit;
    if ((topics = read_topics(self, data, pos, end, &pos)) == NULL)
        goto unfit;
    NEED(4);
    int32_t size = int32_at(data + pos);
    pos += 4;
    if (size == -1) {
        Py_INCREF(Py_None);
        user_data = Py_None;
    }
    else {
        NEED(size);
        if ((user_data = PyBytes_FromStringAndSize((const char *)data + pos, size)) == NULL)
            goto fail;
        pos += size;
    }
    if (version >= 1) {
        if ((owned = read_owned(self, data, pos, end, &pos)) == NULL)
            goto unfit;
    }
    else if ((owned = PyTuple_New(0)) == NULL) {
        goto fail;
    }
    if (version >= 2) {
        NEED(4);
        generation = int32_at(data + pos);
        pos += 4;
    }
    if (version >= 3) {
        NEED(2);
        Py_ssize_t rack_size = int16_at(data + pos);
        pos += 2;
        if (rack_size != -1) {
            NEED(rack_size);
            rack = PyUnicode_DecodeUTF8((const char *)data + pos, rack_size, "strict");
            if (rack == NULL) {
                if (!PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
                    goto fail;
                PyErr_Clear();
                goto unfit;
            }
        }
    }
    if (rack == NULL) {
        Py_INCREF(Py_None);
        rack = Py_None;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NNNlN)", topics, user_data, owned, generation, rack);
unfit:
    /* Malformed, or an error (then the exception is set and stands). */
fail:
    Py_XDECREF(topics);
    Py_XDECREF(user_data);
    Py_XDECREF(owned);
    Py_XDECREF(rack);
    PyBuffer_Release(&view);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

#undef NEED

static PyMethodDef reader_methods[] = {
    {"read", (PyCFunction)reader_read, METH_O, read_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "assignors._native.SubscriptionReader",
    .tp_doc = PyDoc_STR("SubscriptionReader(tp_type): reads one rebalance's consumer "
                        "Subscriptions (see assignors.wire)."),
    .tp_basicsize = sizeof(Reader),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)reader_init,
    .tp_dealloc = (destructor)reader_dealloc,
    .tp_methods = reader_methods,
};

/* Encoding: each partition becomes a key, topic rank (name order) then id, sorted. */

typedef struct {
    const char *utf8;         /* kept by its str, which the partitions hold */
    Py_ssize_t size;
} Topic;

static int
compare_keys(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Topics in name order: Python orders str by code point, and UTF-8 bytes compared as unsigned
 * bytes (a prefix first) give that same order. */
static int
compare_names(const void *a, const void *b)
{
    const Topic *x = *(Topic *const *)a, *y = *(Topic *const *)b;
    int c = memcmp(x->utf8, y->utf8, (size_t)(x->size < y->size ? x->size : y->size));
    return c ? c : (x->size > y->size) - (x->size < y->size);
}

/* order[r] = the topic number of rank r in name order. -1 with an exception set on failure. */
static int
sort_topics(Topic *topics, Py_ssize_t *order, Py_ssize_t n)
{
    Topic **sorted = PyMem_Malloc(((size_t)n + 1) * sizeof(Topic *));
    if (sorted == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    int in_order = 1;  /* as they mostly come: then no sort */
    for (Py_ssize_t i = 0; i < n; i++) {
        sorted[i] = &topics[i];
        if (i && in_order && compare_names(&sorted[i - 1], &sorted[i]) > 0)
            in_order = 0;
    }
    if (!in_order)
        qsort(sorted, (size_t)n, sizeof(Topic *), compare_names);
    for (Py_ssize_t r = 0; r < n; r++)
        order[r] = sorted[r] - topics;
    PyMem_Free(sorted);
    return 0;
}

static inline void
put32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24);
    p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8);
    p[3] = (unsigned char)v;
}

PyDoc_STRVAR(encode_doc,
"encode_assignment(partitions, user_data, version, /)\n--\n\n"
"Consumer Assignment bytes, or None for what only the Python path handles (see\n"
"assignors.wire).");

static PyObject *
encode_assignment(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError,
                        "encode_assignment() takes partitions, user_data and version");
        return NULL;
    }
    PyObject *user_data = args[1];
    long version = PyLong_Check(args[2]) ? PyLong_AsLong(args[2]) : -1;
    if (version == -1 && PyErr_Occurred())
        PyErr_Clear();
    if (version < 0 || version > 3 || !PyBytes_Check(user_data))
        Py_RETURN_NONE;
    PyObject *seq = PySequence_Fast(args[0], "partitions must be a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    PyObject *result = NULL, *numbers = PyDict_New();
    uint64_t *keys = PyMem_Malloc(((size_t)n + 1) * sizeof(uint64_t));
    Topic *topics = NULL;
    Py_ssize_t *order = NULL, *rank = NULL, ntopics = 0, cap = 0;
    if (numbers == NULL || keys == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Pass 1: each partition's topic (numbered in order of first sight) and id. */
    PyObject *last = NULL;
    Py_ssize_t k = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i];
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2)
            goto python;
        PyObject *topic = PyTuple_GET_ITEM(item, 0), *id = PyTuple_GET_ITEM(item, 1);
        if (!PyLong_CheckExact(id))
            goto python;
        int overflow;
        long long value = PyLong_AsLongLongAndOverflow(id, &overflow);
        if (overflow || value < INT32_MIN || value > INT32_MAX)
            goto python;
        if (topic != last) {
            if (!PyUnicode_CheckExact(topic))
                goto python;
            PyObject *found = PyDict_GetItemWithError(numbers, topic);
            if (found != NULL) {
                k = PyLong_AsSsize_t(found);
            }
            else if (PyErr_Occurred()) {
                goto done;
            }
            else {
                if (ntopics == cap) {
                    cap = cap ? cap * 2 : 16;
                    Topic *grown = PyMem_Realloc(topics, (size_t)cap * sizeof(Topic));
                    if (grown == NULL) {
                        PyErr_NoMemory();
                        goto done;
                    }
                    topics = grown;
                }
                Py_ssize_t size;
                const char *utf8 = PyUnicode_AsUTF8AndSize(topic, &size);
                if (utf8 == NULL || size > INT16_MAX) {
                    PyErr_Clear();  /* the Python path raises what it raises */
                    goto python;
                }
                k = ntopics++;
                topics[k] = (Topic){utf8, size};
                PyObject *number = PyLong_FromSsize_t(k);
                if (number == NULL || PyDict_SetItem(numbers, topic, number) < 0) {
                    Py_XDECREF(number);
                    goto done;
                }
                Py_DECREF(number);
            }
            last = topic;
        }
        keys[i] = ((uint64_t)k << 32) | (uint32_t)((int64_t)value - INT32_MIN);
    }
    /* Topic numbers to ranks in name order, then every key sorted. */
    order = PyMem_Malloc(((size_t)ntopics + 1) * sizeof(Py_ssize_t));
    rank = PyMem_Malloc(((size_t)ntopics + 1) * sizeof(Py_ssize_t));
    if (order == NULL || rank == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (sort_topics(topics, order, ntopics) < 0)
        goto done;
    int renumber = 0;
    for (Py_ssize_t r = 0; r < ntopics; r++) {
        rank[order[r]] = r;
        renumber |= order[r] != r;
    }
    int sorted = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (renumber)
            keys[i] = ((uint64_t)rank[keys[i] >> 32] << 32) | (keys[i] & 0xFFFFFFFFu);
        if (i && keys[i] < keys[i - 1])
            sorted = 0;
    }
    if (!sorted)
        qsort(keys, (size_t)n, sizeof(uint64_t), compare_keys);
    /* Size: version, topic count, per topic name and id count, the ids, user data. */
    Py_ssize_t ulen = PyBytes_GET_SIZE(user_data), size = 2 + 4 + 4 * n + 4 + ulen;
    for (Py_ssize_t r = 0; r < ntopics; r++)
        size += 2 + topics[r].size + 4;
    if ((result = PyBytes_FromStringAndSize(NULL, size)) == NULL)
        goto done;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(result);
    out[0] = (unsigned char)(version >> 8);
    out[1] = (unsigned char)version;
    put32(out + 2, (uint32_t)ntopics);
    out += 6;
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t r = (Py_ssize_t)(keys[i] >> 32), j = i;
        while (j < n && (Py_ssize_t)(keys[j] >> 32) == r)
            j++;
        Topic *t = &topics[order[r]];
        out[0] = (unsigned char)(t->size >> 8);
        out[1] = (unsigned char)t->size;
        memcpy(out + 2, t->utf8, (size_t)t->size);
        out += 2 + t->size;
        put32(out, (uint32_t)(j - i));
        out += 4;
        for (; i < j; i++, out += 4)
            put32(out, (uint32_t)((int64_t)(uint32_t)keys[i] + INT32_MIN));
    }
    if (ulen == 0) {
        put32(out, 0xFFFFFFFFu);  /* empty user data goes as null, as the Python path sends it */
    }
    else {
        put32(out, (uint32_t)ulen);
        memcpy(out + 4, PyBytes_AS_STRING(user_data), (size_t)ulen);
    }
    goto done;
python:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(keys);
    PyMem_Free(topics);
    PyMem_Free(order);
    PyMem_Free(rank);
    Py_XDECREF(numbers);
    Py_DECREF(seq);
    return result;
}

static PyMethodDef wire_functions[] = {
    {"encode_assignment", (PyCFunction)(void (*)(void))encode_assignment, METH_FASTCALL,
     encode_doc},
    {NULL, NULL, 0, NULL},
};

int
gka_wire_init(PyObject *module)
{
    if (PyType_Ready(&ReaderType) < 0)
        return -1;
    Py_INCREF(&ReaderType);
    if (PyModule_AddObject(module, "SubscriptionReader", (PyObject *)&ReaderType) < 0) {
        Py_DECREF(&ReaderType);
        return -1;
    }
    return PyModule_AddFunctions(module, wire_functions);
}
