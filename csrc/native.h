/* Declarations shared by the C files of groupkit.protocol._native, one file per job:
 * module.c (the module and its method table), read.c, write.c, crc32c.c, lock.c,
 * accumulator.c, list_slot.c and share_answer.c. Functions and types that cross files are
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

#endif
