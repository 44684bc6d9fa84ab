/* The module groupkit.protocol._native: each C file adds its own functions and types. */
#include "native.h"

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "groupkit.protocol._native",
    "The record-batch v2 record loops in C (see groupkit.protocol.records).", -1, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (gk_crc32c_init(module) < 0 || gk_read_init(module) < 0 || gk_write_init(module) < 0
        || gk_lock_init(module) < 0 || gk_accumulator_init(module) < 0
        || gk_list_slot_init(module) < 0 || gk_share_answer_init(module) < 0
        || gk_record_set_init(module) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
