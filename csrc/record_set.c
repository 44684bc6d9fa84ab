/* A record set of uncompressed v2 batches read in one call: the common Fetch and ShareFetch
 * answer (Java's producers and librdkafka's compress nothing by default).
 *
 * groupkit.protocol.records.decode_records walks a record set entry by entry in Python (the
 * entry's prefix, the batch header, its CRC, the codec, the record count) and calls the C
 * record loop once per batch; for a share member's answers, two batches of a few hundred
 * records, that walk costs about as much as the records. read_v2_set walks the set and reads
 * each batch's records with the same loop (gk_record_loop, read.c) and the same checks, and
 * gives up, with ``out`` as it found it and no exception, on anything else: a compressed,
 * control or legacy entry, a bad CRC, length or count, a malformed record. The Python walk
 * then reads the set from the start and raises what is wrong, so this walk only has to be
 * right where it succeeds; tests hold the two to the same records.
 */
#include "native.h"

#define LOG_OVERHEAD 12      /* an entry's offset and length */
#define LEGACY_MIN_LENGTH 14 /* the smallest legacy message after the prefix */
#define V2_HEADER 61         /* a v2 batch's header, prefix included */
#define V2_CRC_FROM 21       /* the CRC covers the batch from its attributes on */
#define V2_MIN_RECORD 7      /* the smallest record */

/* Read the set's batches into ``out``: 1 when read, 0 to give up (nothing set), -1 on an
 * error that must go up (an allocation). */
static int
walk(const unsigned char *base, Py_ssize_t n, int check_crc, long long from_offset,
     long long up_to, int bounded, const GkBuild *build, PyObject *out)
{
    Py_ssize_t pos = 0;
    while (n - pos >= LOG_OVERHEAD) {
        const unsigned char *p = base + pos;
        int64_t base_offset = gk_load_be(p, 8), length = gk_load_be(p + 8, 4);
        if (length < LEGACY_MIN_LENGTH)
            return 0;
        Py_ssize_t end = pos + LOG_OVERHEAD + (Py_ssize_t)length;
        if (end > n)
            return 1; /* a partial entry at the end: the broker cut the set there */
        if (p[16] != 2 || length < V2_HEADER - LOG_OVERHEAD)
            return 0;
        if (bounded && base_offset > up_to)
            return 1; /* nothing from here on is wanted (offsets only grow) */
        int attributes = (int)gk_load_be(p + 21, 2);
        if (attributes & 0x27) /* compressed (the codec's three bits) or a control batch */
            return 0;
        uint32_t crc = (uint32_t)gk_load_be(p + 17, 4);
        if (check_crc && crc != gk_crc32c(p + V2_CRC_FROM, (size_t)(end - pos - V2_CRC_FROM)))
            return 0;
        int64_t count = gk_load_be(p + 57, 4);
        const unsigned char *records = p + V2_HEADER, *stop = base + end;
        if (count < 0 || count > (stop - records) / V2_MIN_RECORD)
            return 0;
        int whole = 1;
        if (bounded) {
            int64_t wanted;
            if (__builtin_sub_overflow(up_to, base_offset, &wanted) || wanted == INT64_MAX)
                return 0;
            if (wanted + 1 < count) {
                count = wanted + 1 > 0 ? wanted + 1 : 0;
                whole = 0;
            }
        }
        const unsigned char *last = gk_record_loop(
            base, records, stop, (Py_ssize_t)count, base_offset, gk_load_be(p + 27, 8),
            (attributes >> 3) & 1, gk_load_be(p + 35, 8),
            from_offset > base_offset ? from_offset : LLONG_MIN, build, out);
        if (last == NULL)
            return PyErr_ExceptionMatches(PyExc_ValueError) ? (PyErr_Clear(), 0) : -1;
        if (whole && last != stop)
            return 0;
        pos = end;
    }
    return 1;
}

PyDoc_STRVAR(read_v2_set_doc,
"read_v2_set(data, check_crc, out, cls, topic, partition, sourced, from_offset, up_to,\n"
"            after) -> bool\n\n"
"Append the records of ``data``, a record set of uncompressed v2 batches, to ``out`` as\n"
"decode_records builds them (``from_offset``: -2**63 for none; ``up_to``: None or the last\n"
"offset wanted; ``after``: None or the SET_AFTER_DECODE values). False, with ``out`` as it\n"
"was, for a set it does not read: the caller reads it then.");

static PyObject *
read_v2_set(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 10 || !PyList_Check(args[2]) || (args[9] != Py_None && !PyTuple_Check(args[9]))) {
        PyErr_SetString(PyExc_TypeError, "read_v2_set(data, check_crc, out, cls, topic,"
                                         " partition, sourced, from_offset, up_to, after)");
        return NULL;
    }
    int check_crc = PyObject_IsTrue(args[1]), sourced = PyObject_IsTrue(args[6]);
    long long from_offset = PyLong_AsLongLong(args[7]);
    int bounded = args[8] != Py_None;
    long long up_to = bounded ? PyLong_AsLongLong(args[8]) : 0;
    if (check_crc < 0 || sourced < 0 || PyErr_Occurred())
        return NULL;
    GkBuild build;
    if (gk_record_build(args[3], sourced, args[4], args[5],
                        args[9] == Py_None ? NULL : args[9], &build) < 0)
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *out = args[2];
    Py_ssize_t had = PyList_GET_SIZE(out);
    int read = walk((const unsigned char *)view.buf, view.len, check_crc, from_offset, up_to,
                    bounded, &build, out);
    PyBuffer_Release(&view);
    if (read != 1 && PyList_SetSlice(out, had, PyList_GET_SIZE(out), NULL) < 0)
        return NULL;
    if (read < 0)
        return NULL;
    return PyBool_FromLong(read);
}

static PyMethodDef record_set_methods[] = {
    {"read_v2_set", (PyCFunction)(void (*)(void))read_v2_set, METH_FASTCALL, read_v2_set_doc},
    {NULL, NULL, 0, NULL},
};

int
gk_record_set_init(PyObject *module)
{
    return PyModule_AddFunctions(module, record_set_methods);
}
