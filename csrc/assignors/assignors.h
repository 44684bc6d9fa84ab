/* Declarations shared by the C files of assignors._native, the sticky assignors' loops over
 * every partition (assignors/sticky_loops.py holds their Python twins and the contract):
 * module.c (the module), numbering.c (topic-partitions to and from partition numbers),
 * owners.c (resolving claims, the uniform fill), general.c (the general path's eligible
 * lists and placement) and wire.c (a leader's Subscription and Assignment bytes, whose Python
 * twins are in assignors/wire.py). Each file adds its functions and types to the module; each
 * init returns 0, or -1 with an exception set. */
#ifndef GROUPKIT_ASSIGNORS_H
#define GROUPKIT_ASSIGNORS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

int gka_numbering_init(PyObject *module);
int gka_owners_init(PyObject *module);
int gka_general_init(PyObject *module);
int gka_wire_init(PyObject *module);

#endif
