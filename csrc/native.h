/* Declarations shared by the C files of groupkit.protocol._native, one file per job:
 * module.c (the module and its method table), read.c, write.c, crc32c.c, lock.c,
 * accumulator.c, list_slot.c, share_answer.c and record_set.c. Functions and types that cross files are
 * declared here; the rest stay static in their file. */
#ifndef GROUPKIT_NATIVE_H
#define GROUPKIT_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* A record field's slot at byte offset ``at`` in an instance (attrs slotted classes). */
#define SLOT(r, at) (*(PyObject **)((char *)(r) + (at)))

/* The producer's lock (lock.c), which the accumulator takes directly. */
typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    char locked;
} Lock;

extern PyTypeObject gk_LockType;

/* A slot's member descriptor whose empty slot reads as a new empty list (list_slot.c). */
extern PyTypeObject gk_ListSlotType;

/* A record class's slots as the record loop fills them (read.c): offset, timestamp, key, value,
 * headers, timestamp type, and for a sourced class topic and partition; then the slots of up
 * to MAX_AFTER fields its SET_AFTER_DECODE names (a share record's delivery count). */
#define ALL_FIELDS 8
#define MAX_AFTER 2
typedef struct {
    Py_ssize_t at[ALL_FIELDS];
    Py_ssize_t after_at[MAX_AFTER];
    int n_after;
    int sourced;
} GkLayout;

/* What the record loop builds: the class, its layout and the values of its other fields. */
typedef struct {
    PyTypeObject *type;
    GkLayout layout;
    PyObject *topic, *partition; /* borrowed */
    PyObject *after;             /* borrowed tuple, or NULL */
    int n_after;
} GkBuild;

/* Fill *out for records of ``cls`` (0, or -1 with TypeError); the arguments as read_records
 * takes them. */
int gk_record_build(PyObject *cls, int sourced, PyObject *topic, PyObject *partition,
                    PyObject *after, GkBuild *out);

/* Decode ``count`` v2 records at p..end into ``out``: the position after the last one read,
 * or NULL with an exception set (ValueError for malformed records, which gives positions
 * from ``origin``, the buffer's start). */
const unsigned char *gk_record_loop(const unsigned char *origin, const unsigned char *p,
                                    const unsigned char *end, Py_ssize_t count, long long base_offset,
                                    long long base_ts, int ts_type, long long max_ts,
                                    long long from_offset, const GkBuild *b, PyObject *out);

/* The big-endian signed integer of ``width`` bytes (2, 4 or 8) at p: Kafka's fixed-width
 * fields. */
static inline int64_t
gk_load_be(const unsigned char *p, int width)
{
    uint64_t u = 0;
    for (int i = 0; i < width; i++)
        u = (u << 8) | p[i];
    int shift = 64 - 8 * width; /* sign-extend from width bytes */
    return shift ? (int64_t)(u << shift) >> shift : (int64_t)u;
}

/* The CRC-32C of p[0:n] (crc32c.c: by the CPU's instruction where it has one). */
uint32_t gk_crc32c(const unsigned char *p, size_t n);

/* The offset of the writable object slot ``name`` of ``cls`` into *at; -1 with a TypeError
 * when ``name`` is not one (read.c). */
int gk_slot_offset(PyTypeObject *cls, const char *name, Py_ssize_t *at);

/* Each file adds its functions and types to the module (module.c calls them in turn);
 * each returns 0, or -1 with an exception set. */
int gk_read_init(PyObject *module);
int gk_write_init(PyObject *module);
int gk_crc32c_init(PyObject *module);
int gk_lock_init(PyObject *module);
int gk_accumulator_init(PyObject *module);
int gk_list_slot_init(PyObject *module);
int gk_share_answer_init(PyObject *module);
int gk_record_set_init(PyObject *module);

#endif
