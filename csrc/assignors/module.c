/* The module assignors._native: each C file adds its own functions and types. */
#include "assignors.h"

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "assignors._native",
    "The sticky assignors' loops over every partition, and a leader's consumer protocol bytes,"
    " in C (see assignors.sticky_loops and assignors.wire).", -1,
    NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (gka_numbering_init(module) < 0 || gka_owners_init(module) < 0
        || gka_general_init(module) < 0 || gka_wire_init(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
