/* ListSlot: a record's header list made at first use.
 *
 * Most records carry no headers, and a list per record is an allocation, a free and a count
 * towards the cyclic collector's next pass, for a list that is rarely asked for. The record
 * loop (read.c) leaves the headers slot of such a record empty; ListSlot stands in for that
 * slot's member descriptor on the record class and, when the slot is empty, puts a new empty
 * list there before handing it out, so every reader of ``record.headers`` (attrs' __eq__,
 * __repr__, pickling, evolve, the application) sees a list, the same one each time. Setting
 * and the checks of the object's type are the member descriptor's.
 */
#include "native.h"

typedef struct {
    PyObject_HEAD
    PyObject *member;    /* the member descriptor of the slot */
    PyTypeObject *owner; /* the class that defines the slot */
    Py_ssize_t offset;
} ListSlot;

static PyObject *
list_slot_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *member;
    if ((kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)
        || !PyArg_ParseTuple(args, "O!:ListSlot", &PyMemberDescr_Type, &member))
        return NULL;
    PyMemberDef *def = ((PyMemberDescrObject *)member)->d_member;
    if (def->type != T_OBJECT_EX || (def->flags & READONLY)) {
        PyErr_SetString(PyExc_TypeError, "ListSlot takes a writable object slot");
        return NULL;
    }
    ListSlot *self = (ListSlot *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->member = Py_NewRef(member);
    self->owner = (PyTypeObject *)Py_NewRef(((PyDescrObject *)member)->d_type);
    self->offset = def->offset;
    return (PyObject *)self;
}

static void
list_slot_dealloc(PyObject *op)
{
    ListSlot *self = (ListSlot *)op;
    Py_XDECREF(self->member);
    Py_XDECREF(self->owner);
    Py_TYPE(op)->tp_free(op);
}

static PyObject *
list_slot_get(PyObject *op, PyObject *obj, PyObject *type)
{
    ListSlot *self = (ListSlot *)op;
    if (obj == NULL)
        return Py_NewRef(op);
    if (!PyObject_TypeCheck(obj, self->owner))
        /* the member descriptor's own error */
        return Py_TYPE(self->member)->tp_descr_get(self->member, obj, type);
    PyObject **slot = (PyObject **)((char *)obj + self->offset);
    if (*slot == NULL) {
        /* Allocating may run the collector, and through it a finaliser that reads this
         * record's headers first: keep the list that got there first. */
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL)
            return NULL;
        if (*slot == NULL)
            *slot = fresh;
        else
            Py_DECREF(fresh);
    }
    return Py_NewRef(*slot);
}

static int
list_slot_set(PyObject *op, PyObject *obj, PyObject *value)
{
    ListSlot *self = (ListSlot *)op;
    return Py_TYPE(self->member)->tp_descr_set(self->member, obj, value);
}

static PyObject *
list_slot_member(PyObject *op, void *closure)
{
    return Py_NewRef(((ListSlot *)op)->member);
}

static PyGetSetDef list_slot_getset[] = {
    {"member", list_slot_member, NULL, "The member descriptor of the slot.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject gk_ListSlotType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "groupkit.protocol._native.ListSlot",
    .tp_basicsize = sizeof(ListSlot),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = PyDoc_STR("ListSlot(member) -> descriptor\n\n"
                        "Stands in for ``member`` (a slot's member descriptor): reading an "
                        "empty slot puts a new empty list there first."),
    .tp_new = list_slot_new,
    .tp_dealloc = list_slot_dealloc,
    .tp_descr_get = list_slot_get,
    .tp_descr_set = list_slot_set,
    .tp_getset = list_slot_getset,
};

int
gk_list_slot_init(PyObject *module)
{
    if (PyType_Ready(&gk_ListSlotType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "ListSlot", (PyObject *)&gk_ListSlotType);
}
