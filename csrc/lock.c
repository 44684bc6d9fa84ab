#include "native.h"

/* The producer's lock: threading.Lock's behaviour (acquire with blocking and timeout, release,
 * locked, the context manager, interruptible waits), so threading.Condition works on it as on
 * a threading.Lock. It exists so the accumulator can take it without a method call: taking a
 * threading.Lock from C goes through acquire()'s argument parsing, which costs more than the
 * rest of appending a record. */

static PyObject *
lock_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs != NULL && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    Lock *self = (Lock *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void
lock_dealloc(Lock *self)
{
    if (self->lock != NULL) {
        if (self->locked)
            PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Microseconds of a monotonic clock, for what is left of a timeout after an interruption. */
static long long
monotonic_us(void)
{
    struct timespec ts;
#ifdef CLOCK_MONOTONIC
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
        return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
#endif
    timespec_get(&ts, TIME_UTC);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Take the lock, waiting up to ``us`` microseconds (-1: for ever) with the GIL released and
 * running signal handlers when a signal interrupts the wait. 1 taken, 0 timed out, -1 error. */
static int
lock_take(Lock *self, long long us)
{
    if (PyThread_acquire_lock_timed(self->lock, 0, 0) == PY_LOCK_ACQUIRED) {
        self->locked = 1;
        return 1;
    }
    if (us == 0)
        return 0;
    long long deadline = us > 0 ? monotonic_us() + us : 0;
    for (;;) {
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, us, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) {
            self->locked = 1;
            return 1;
        }
        if (r == PY_LOCK_FAILURE)
            return 0;
        /* Interrupted: run the signal handlers (they may raise), then wait what is left. */
        if (Py_MakePendingCalls() < 0)
            return -1;
        if (us > 0) {
            us = deadline - monotonic_us();
            if (us <= 0)
                return 0;
        }
    }
}

PyDoc_STRVAR(lock_acquire_doc,
"acquire($self, /, blocking=True, timeout=-1)\n--\n\n"
"As threading.Lock.acquire: True once taken, False if not within the timeout.");

static PyObject *
lock_acquire(Lock *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *blocking_obj = NULL, *timeout_obj = NULL;
    Py_ssize_t nkw = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs > 2) {
        PyErr_Format(PyExc_TypeError, "acquire() takes at most 2 arguments (%zd given)", nargs);
        return NULL;
    }
    if (nargs > 0)
        blocking_obj = args[0];
    if (nargs > 1)
        timeout_obj = args[1];
    for (Py_ssize_t j = 0; j < nkw; j++) {
        PyObject *name = PyTuple_GET_ITEM(kwnames, j);
        PyObject **slot = PyUnicode_CompareWithASCIIString(name, "blocking") == 0 ? &blocking_obj
                          : PyUnicode_CompareWithASCIIString(name, "timeout") == 0 ? &timeout_obj
                          : NULL;
        if (slot == NULL) {
            PyErr_Format(PyExc_TypeError, "acquire() got an unexpected keyword argument '%U'",
                         name);
            return NULL;
        }
        if (*slot != NULL) {
            PyErr_Format(PyExc_TypeError, "acquire() got multiple values for argument '%U'",
                         name);
            return NULL;
        }
        *slot = args[nargs + j];
    }
    int blocking = 1;
    if (blocking_obj != NULL) {
        blocking = PyObject_IsTrue(blocking_obj);
        if (blocking < 0)
            return NULL;
    }
    double timeout = -1;
    if (timeout_obj != NULL) {
        timeout = PyFloat_AsDouble(timeout_obj);
        if (timeout == -1 && PyErr_Occurred())
            return NULL;
        if (timeout != timeout) {
            PyErr_SetString(PyExc_ValueError, "Invalid value NaN (not a number)");
            return NULL;
        }
    }
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    long long us = -1;
    if (!blocking)
        us = 0;
    else if (timeout >= 0) {
        if (timeout * 1e6 >= (double)PY_TIMEOUT_MAX) {
            PyErr_SetString(PyExc_OverflowError, "timeout value is too large");
            return NULL;
        }
        us = (long long)(timeout * 1e6);
    }
    int taken = lock_take(self, us);
    if (taken < 0)
        return NULL;
    return PyBool_FromLong(taken);
}

static PyObject *
lock_enter(Lock *self, PyObject *unused)
{
    if (lock_take(self, -1) < 0)
        return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
lock_release(Lock *self, PyObject *unused)
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    self->locked = 0;
    PyThread_release_lock(self->lock);
    Py_RETURN_NONE;
}

static PyObject *
lock_exit(Lock *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lock_release(self, NULL);
}

static PyObject *
lock_locked(Lock *self, PyObject *unused)
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
lock_repr(Lock *self)
{
    return PyUnicode_FromFormat("<%s groupkit Lock object at %p>",
                                self->locked ? "locked" : "unlocked", self);
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_FASTCALL | METH_KEYWORDS,
     lock_acquire_doc},
    {"release", (PyCFunction)lock_release, METH_NOARGS,
     "release($self, /)\n--\n\nAs threading.Lock.release."},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS,
     "locked($self, /)\n--\n\nWhether the lock is held."},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject gk_LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "groupkit.protocol._native.Lock",
    .tp_basicsize = sizeof(Lock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Lock()\n--\n\nA lock that behaves as threading.Lock; the producer's lock, which "
              "its C accumulator takes directly.",
    .tp_new = lock_new,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_repr = (reprfunc)lock_repr,
    .tp_methods = lock_methods,
};

int
gk_lock_init(PyObject *module)
{
    if (PyType_Ready(&gk_LockType) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Lock", (PyObject *)&gk_LockType);
}
