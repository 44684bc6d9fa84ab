/* ShareFetch answers (v1-v2) read in C: the shape brokers send, no tagged fields.
 *
 * A share consumer reads one answer per fetch on a connection's reader thread; the reader in
 * Python (groupkit.protocol.messages.share_fetch._read_answer_from) spends tens of calls on
 * each, which on a busy member cost more than its records' decoding. This one reads the same
 * bytes into the same structs (attrs slotted classes, filled slot by slot as read.c fills
 * records) and gives up, returning None with nothing read, on anything else: a tagged field,
 * an overrun, a count or length out of range, a string that is not UTF-8, a varint longer
 * than five bytes. The Python reader then reads the answer again from the start and either
 * reads it or leaves it to the schema, which names what is wrong; so this reader only has to
 * be right where it succeeds, and tests hold it to the schema there.
 */
#include "native.h"

enum { RESPONSE, TOPIC, PARTITION, LEADER, ACQUIRED, ENDPOINT, ROLES };
#define MAX_FIELDS 9

/* How a field is read: fixed-width ints, a nullable compact string, a non-null one, a topic
 * id, a record set (a view), a nested struct, a compact array of structs. */
enum { I16 = 1, I32, I64, TEXT, NAME, TOPIC_ID, RECORDS, NESTED, ARRAY };

typedef struct {
    const char *name;
    char kind;
    char role; /* the struct of a NESTED field or of an ARRAY's items */
} Field;

/* Each struct's fields in wire order, every struct's unknown_tags first (an empty dict of its
 * own, as the attrs factory gives; on the wire, an empty tagged-field section last). */
static const Field FIELDS[ROLES][MAX_FIELDS + 1] = {
    [RESPONSE] = {{"unknown_tags"}, {"throttle_time_ms", I32}, {"error_code", I16},
                  {"error_message", TEXT}, {"acquisition_lock_timeout_ms", I32},
                  {"responses", ARRAY, TOPIC}, {"node_endpoints", ARRAY, ENDPOINT}},
    [TOPIC] = {{"unknown_tags"}, {"topic_id", TOPIC_ID}, {"partitions", ARRAY, PARTITION}},
    [PARTITION] = {{"unknown_tags"}, {"partition_index", I32}, {"error_code", I16},
                   {"error_message", TEXT}, {"acknowledge_error_code", I16},
                   {"acknowledge_error_message", TEXT}, {"current_leader", NESTED, LEADER},
                   {"records", RECORDS}, {"acquired_records", ARRAY, ACQUIRED}},
    [LEADER] = {{"unknown_tags"}, {"leader_id", I32}, {"leader_epoch", I32}},
    [ACQUIRED] = {{"unknown_tags"}, {"first_offset", I64}, {"last_offset", I64},
                  {"delivery_count", I16}},
    [ENDPOINT] = {{"unknown_tags"}, {"node_id", I32}, {"host", NAME}, {"port", I32},
                  {"rack", TEXT}},
};

typedef struct {
    PyTypeObject *cls;
    Py_ssize_t at[MAX_FIELDS];
} Shape;

/* class -> bytes holding its Shape, found once per class. */
static PyObject *shapes = NULL;

static int
shape_of(PyObject *cls, int role, Shape *out)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "read_share_fetch: the struct classes must be types");
        return -1;
    }
    PyObject *known = PyDict_GetItemWithError(shapes, cls);
    if (known == NULL) {
        if (PyErr_Occurred())
            return -1;
        Shape shape;
        memset(&shape, 0, sizeof shape);
        shape.cls = (PyTypeObject *)cls;
        for (int i = 0; FIELDS[role][i].name != NULL; i++)
            if (gk_slot_offset(shape.cls, FIELDS[role][i].name, &shape.at[i]) < 0)
                return -1;
        known = PyBytes_FromStringAndSize((const char *)&shape, sizeof shape);
        if (known == NULL)
            return -1;
        int rc = PyDict_SetItem(shapes, cls, known);
        Py_DECREF(known);
        if (rc < 0)
            return -1;
    }
    memcpy(out, PyBytes_AS_STRING(known), sizeof *out);
    return 0;
}

typedef struct {
    const unsigned char *base, *p, *end;
    PyObject *view;  /* the answer's read-only memoryview, sliced for the record sets */
    PyObject *uuids; /* raw 16 bytes -> uuid.UUID, kept between answers */
    PyObject *uuid_cls;
    Shape shapes[ROLES];
} Cursor;

/* Each read returns 0 or a new reference, or gives up with -1 or NULL: with an exception set
 * only when one must go up (a failed allocation), none for what the caller reads instead. */

static int
fixed(Cursor *c, int width, int64_t *v)
{
    if (c->end - c->p < width)
        return -1;
    *v = gk_load_be(c->p, width);
    c->p += width;
    return 0;
}

static int
uvarint(Cursor *c, uint64_t *v)
{
    uint64_t u = 0;
    for (int i = 0; i < 5; i++) {
        if (c->p >= c->end)
            return -1;
        unsigned char b = *c->p++;
        u |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *v = u;
            return 0;
        }
    }
    return -1;
}

/* An empty tagged-field section: anything else is the schema's. */
static int
no_tags(Cursor *c)
{
    uint64_t n;
    return uvarint(c, &n) < 0 || n != 0 ? -1 : 0;
}

/* A compact array's count, checked as Reader.array_length(compact=True) checks it. */
static int
count(Cursor *c, Py_ssize_t *n)
{
    uint64_t u;
    if (uvarint(c, &u) < 0 || u == 0 || u - 1 > (uint64_t)(c->end - c->p))
        return -1;
    *n = (Py_ssize_t)(u - 1);
    return 0;
}

/* A compact string as a new str, or None when ``nullable`` and null. */
static PyObject *
text(Cursor *c, int nullable)
{
    uint64_t u;
    if (uvarint(c, &u) < 0)
        return NULL;
    if (u == 0)
        return nullable ? Py_NewRef(Py_None) : NULL;
    if (u - 1 > (uint64_t)(c->end - c->p))
        return NULL;
    PyObject *s = PyUnicode_DecodeUTF8((const char *)c->p, (Py_ssize_t)(u - 1), "strict");
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError))
        PyErr_Clear(); /* not UTF-8: the schema says so */
    if (s != NULL)
        c->p += u - 1;
    return s;
}

static PyObject *
int_field(Cursor *c, int width)
{
    int64_t v;
    return fixed(c, width, &v) < 0 ? NULL : PyLong_FromLongLong(v);
}

static PyObject *
topic_id(Cursor *c)
{
    if (c->end - c->p < 16)
        return NULL;
    PyObject *raw = PyBytes_FromStringAndSize((const char *)c->p, 16);
    if (raw == NULL)
        return NULL;
    c->p += 16;
    PyObject *id = PyDict_GetItemWithError(c->uuids, raw);
    if (id != NULL) {
        Py_DECREF(raw);
        return Py_NewRef(id);
    }
    if (PyErr_Occurred()) {
        Py_DECREF(raw);
        return NULL;
    }
    if (PyDict_Size(c->uuids) >= 1024) /* a bound: a member sees few topics */
        PyDict_Clear(c->uuids);
    PyObject *args = PyTuple_New(0), *kwargs = Py_BuildValue("{sO}", "bytes", raw);
    id = args == NULL || kwargs == NULL ? NULL : PyObject_Call(c->uuid_cls, args, kwargs);
    Py_XDECREF(args);
    Py_XDECREF(kwargs);
    if (id != NULL && PyDict_SetItem(c->uuids, raw, id) < 0)
        Py_CLEAR(id);
    Py_DECREF(raw);
    return id;
}

/* The record set: a read-only view of the answer's bytes, or None. */
static PyObject *
records(Cursor *c)
{
    uint64_t u;
    if (uvarint(c, &u) < 0)
        return NULL;
    if (u == 0)
        return Py_NewRef(Py_None);
    if (u - 1 > (uint64_t)(c->end - c->p))
        return NULL;
    Py_ssize_t at = c->p - c->base;
    c->p += u - 1;
    return PySequence_GetSlice(c->view, at, at + (Py_ssize_t)(u - 1));
}

static PyObject *read_struct(Cursor *c, int role);

/* A compact array of ``role`` structs, as a list. */
static PyObject *
array(Cursor *c, int role)
{
    Py_ssize_t n;
    if (count(c, &n) < 0)
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *obj = read_struct(c, role);
        if (obj == NULL || PyList_Append(list, obj) < 0) {
            Py_XDECREF(obj);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(obj);
    }
    return list;
}

static PyObject *
read_field(Cursor *c, const Field *field)
{
    switch (field->kind) {
    case I16:
        return int_field(c, 2);
    case I32:
        return int_field(c, 4);
    case I64:
        return int_field(c, 8);
    case TEXT:
        return text(c, 1);
    case NAME:
        return text(c, 0);
    case TOPIC_ID:
        return topic_id(c);
    case RECORDS:
        return records(c);
    case NESTED:
        return read_struct(c, field->role);
    default:
        return array(c, field->role);
    }
}

/* A ``role`` struct: a new instance (an empty unknown_tags dict of its own), each field read
 * into its slot, then the empty tagged-field section. Dropped half filled when a read gives
 * up (its empty slots are cleared with Py_XDECREF like the others). */
static PyObject *
read_struct(Cursor *c, int role)
{
    const Shape *shape = &c->shapes[role];
    PyObject *obj = shape->cls->tp_alloc(shape->cls, 0);
    if (obj == NULL)
        return NULL;
    PyObject *tags = PyDict_New();
    if (tags == NULL)
        goto fail;
    SLOT(obj, shape->at[0]) = tags;
    for (int i = 1; FIELDS[role][i].name != NULL; i++) {
        PyObject *value = read_field(c, &FIELDS[role][i]);
        if (value == NULL)
            goto fail;
        SLOT(obj, shape->at[i]) = value;
    }
    if (no_tags(c) == 0)
        return obj;
fail:
    Py_DECREF(obj);
    return NULL;
}

PyDoc_STRVAR(read_share_fetch_doc,
"read_share_fetch(view, pos, end, classes, uuids, uuid_cls) -> (answer, end_pos) | None\n\n"
"Read the ShareFetch v1-v2 answer body at ``view[pos:end]`` (a read-only memoryview, whose\n"
"slices become the record sets) into ``classes``: the response, topic, partition, leader,\n"
"acquired-records and node-endpoint struct classes, whose fields SHARE_FETCH_FIELDS names in\n"
"the order read. Topic ids are uuid_cls(bytes=...) objects kept in the dict ``uuids``. None\n"
"when the answer is not of the usual shape or not well formed: the caller reads it then.");

static PyObject *
read_share_fetch(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6 || !PyMemoryView_Check(args[0]) || !PyTuple_Check(args[3])
        || PyTuple_GET_SIZE(args[3]) != ROLES || !PyDict_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "read_share_fetch(view, pos, end, classes, uuids,"
                                         " uuid_cls): a memoryview, two ints, a tuple of six"
                                         " classes, a dict and a class");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]), end = PyLong_AsSsize_t(args[2]);
    if ((pos == -1 || end == -1) && PyErr_Occurred())
        return NULL;
    Cursor c;
    for (int role = 0; role < ROLES; role++)
        if (shape_of(PyTuple_GET_ITEM(args[3], role), role, &c.shapes[role]) < 0)
            return NULL;
    Py_buffer buf;
    if (PyObject_GetBuffer(args[0], &buf, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *result = NULL;
    if (pos < 0 || end < pos || end > buf.len) {
        PyErr_SetString(PyExc_ValueError, "read_share_fetch: pos and end outside the view");
        goto done;
    }
    c.base = (const unsigned char *)buf.buf;
    c.p = c.base + pos;
    c.end = c.base + end;
    c.view = args[0];
    c.uuids = args[4];
    c.uuid_cls = args[5];
    PyObject *got = read_struct(&c, RESPONSE);
    if (got != NULL) {
        result = Py_BuildValue("(Nn)", got, (Py_ssize_t)(c.p - c.base));
    }
    else if (!PyErr_Occurred()) {
        result = Py_NewRef(Py_None);
    }
done:
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef share_methods[] = {
    {"read_share_fetch", (PyCFunction)(void (*)(void))read_share_fetch, METH_FASTCALL,
     read_share_fetch_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_share_answer_init(PyObject *module)
{
    shapes = PyDict_New();
    if (shapes == NULL || PyModule_AddObjectRef(module, "_share_shapes", shapes) < 0)
        return -1;
    PyObject *fields = PyTuple_New(ROLES);
    if (fields == NULL)
        return -1;
    for (int role = 0; role < ROLES; role++) {
        int n = 0;
        while (FIELDS[role][n].name != NULL)
            n++;
        PyObject *names = PyTuple_New(n);
        if (names == NULL) {
            Py_DECREF(fields);
            return -1;
        }
        PyTuple_SET_ITEM(fields, role, names);
        for (int i = 0; i < n; i++) {
            PyObject *name = PyUnicode_FromString(FIELDS[role][i].name);
            if (name == NULL) {
                Py_DECREF(fields);
                return -1;
            }
            PyTuple_SET_ITEM(names, i, name);
        }
    }
    if (PyModule_AddObject(module, "SHARE_FETCH_FIELDS", fields) < 0) {
        Py_DECREF(fields);
        return -1;
    }
    return PyModule_AddFunctions(module, share_methods);
}
