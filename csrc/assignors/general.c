/* eligible() and place(): the C twins of assignors.sticky_loops.eligible and place, the sticky
 * assignors' general path's loops over every (member, topic) pair of the subscriptions (the
 * contract is documented with the Python twins). place() gives a topic's free partitions out
 * as one-at-a-time least-loaded placement would: water-filling over the eligible members
 * sorted by (count, member) once. */
#include "assignors.h"

PyDoc_STRVAR(eligible_doc,
"eligible(subscribed, topics, /)\n--\n\n"
"For each topic number below ``topics``, the members subscribed to it, in member order.");

static PyObject *
eligible(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyList_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "eligible() takes a list of topic-number lists and a count");
        return NULL;
    }
    PyObject *subscribed = args[0];
    Py_ssize_t topics = PyLong_AsSsize_t(args[1]);
    if (topics == -1 && PyErr_Occurred())
        return NULL;
    if (topics < 0) {
        PyErr_SetString(PyExc_ValueError, "eligible(): topics must be 0 or more");
        return NULL;
    }
    Py_ssize_t members = PyList_GET_SIZE(subscribed);
    Py_ssize_t *sizes = PyMem_Calloc((size_t)topics + 1, sizeof(Py_ssize_t));
    PyObject *out = NULL, *number = NULL;
    if (sizes == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *ks = PyList_GET_ITEM(subscribed, m);
        if (!PyList_Check(ks)) {
            PyErr_SetString(PyExc_TypeError, "eligible(): each member's topics must be a list");
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ks); j++) {
            Py_ssize_t k = PyLong_AsSsize_t(PyList_GET_ITEM(ks, j));
            if (k == -1 && PyErr_Occurred())
                goto fail;
            if (k < 0 || k >= topics) {
                PyErr_SetString(PyExc_IndexError, "eligible(): topic number out of range");
                goto fail;
            }
            sizes[k]++;
        }
    }
    if ((out = PyList_New(topics)) == NULL)
        goto fail;
    for (Py_ssize_t k = 0; k < topics; k++) {
        PyObject *list = PyList_New(sizes[k]);
        if (list == NULL)
            goto fail;
        PyList_SET_ITEM(out, k, list);
        sizes[k] = 0;  /* from here on: how many are filled */
    }
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *ks = PyList_GET_ITEM(subscribed, m);
        if ((number = PyLong_FromSsize_t(m)) == NULL)
            goto fail;
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(ks); j++) {
            Py_ssize_t k = PyLong_AsSsize_t(PyList_GET_ITEM(ks, j));
            Py_INCREF(number);
            PyList_SET_ITEM(PyList_GET_ITEM(out, k), sizes[k]++, number);
        }
        Py_CLEAR(number);
    }
    PyMem_Free(sizes);
    return out;
fail:
    Py_XDECREF(out);
    PyMem_Free(sizes);
    return NULL;
}

typedef struct {
    Py_ssize_t count;
    Py_ssize_t member;
    PyObject *object;  /* the member's int, borrowed from `eligible` */
} Ranked;

static int
by_count_then_member(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? -1 : 1;
    return (x->member > y->member) - (x->member < y->member);
}

static int
by_member(const void *a, const void *b)
{
    const Ranked *x = a, *y = b;
    return (x->member > y->member) - (x->member < y->member);
}

PyDoc_STRVAR(place_doc,
"place(eligible, count, free, holding, /)\n--\n\n"
"Give ``free`` out as one-at-a-time least-loaded placement over ``eligible`` would; updates\n"
"``count`` and ``holding`` (see sticky_loops.place).");

static PyObject *
place(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 4 || !PyList_Check(args[0]) || !PyList_Check(args[1]) || !PyList_Check(args[2])
        || !PyDict_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError,
                        "place() takes the eligible, count and free lists and a holding dict");
        return NULL;
    }
    PyObject *eligible_ = args[0], *count = args[1], *free_ = args[2], *holding = args[3];
    Py_ssize_t n = PyList_GET_SIZE(eligible_), f = PyList_GET_SIZE(free_);
    if (n == 0) {
        PyErr_SetString(PyExc_IndexError, "place(): no eligible member");
        return NULL;
    }
    Ranked *ranked = PyMem_Malloc((size_t)n * sizeof(Ranked));
    if (ranked == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *object = PyList_GET_ITEM(eligible_, i);
        Py_ssize_t m = PyLong_AsSsize_t(object);
        if (m == -1 && PyErr_Occurred())
            goto fail;
        if (m < 0 || m >= PyList_GET_SIZE(count)) {
            PyErr_SetString(PyExc_IndexError, "place(): member number out of range");
            goto fail;
        }
        Py_ssize_t c = PyLong_AsSsize_t(PyList_GET_ITEM(count, m));
        if (c == -1 && PyErr_Occurred())
            goto fail;
        ranked[i] = (Ranked){c, m, object};
    }
    /* Sorting by (count, member) is Python's stable sort by count of members in member order. */
    qsort(ranked, (size_t)n, sizeof(Ranked), by_count_then_member);
    Py_ssize_t remaining = f, level = ranked[0].count, pooled;
    for (;;) {
        Py_ssize_t lo = 0, hi = n;  /* pooled = bisect_right(counts, level) */
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (level < ranked[mid].count)
                hi = mid;
            else
                lo = mid + 1;
        }
        pooled = lo;
        if (pooled < n && pooled * (ranked[pooled].count - level) <= remaining) {
            remaining -= pooled * (ranked[pooled].count - level);
            level = ranked[pooled].count;
            continue;
        }
        level += remaining / pooled;
        remaining %= pooled;
        break;
    }
    /* Every pooled member rises to `level`; the first `remaining` of them, by member, one more. */
    qsort(ranked, (size_t)pooled, sizeof(Ranked), by_member);
    Py_ssize_t position = 0;
    for (Py_ssize_t i = 0; i < pooled; i++) {
        Py_ssize_t share = level - ranked[i].count + (i < remaining);
        if (share <= 0)
            continue;
        PyObject *part = PyList_GetSlice(free_, position, position + share);
        if (part == NULL)
            goto fail;
        position += share;
        PyObject *updated = PyLong_FromSsize_t(ranked[i].count + share);
        if (updated == NULL) {
            Py_DECREF(part);
            goto fail;
        }
        PyList_SetItem(count, ranked[i].member, updated);  /* steals `updated` */
        PyObject *mine = PyDict_GetItemWithError(holding, ranked[i].object);
        int failed;
        if (mine != NULL) {
            failed = PyList_SetSlice(mine, PyList_GET_SIZE(mine), PyList_GET_SIZE(mine), part);
        }
        else if (PyErr_Occurred()) {
            failed = -1;
        }
        else {
            failed = PyDict_SetItem(holding, ranked[i].object, part);
        }
        Py_DECREF(part);
        if (failed < 0)
            goto fail;
    }
    PyMem_Free(ranked);
    Py_RETURN_NONE;
fail:
    PyMem_Free(ranked);
    return NULL;
}

static PyMethodDef general_methods[] = {
    {"eligible", (PyCFunction)(void (*)(void))eligible, METH_FASTCALL, eligible_doc},
    {"place", (PyCFunction)(void (*)(void))place, METH_FASTCALL, place_doc},
    {NULL, NULL, 0, NULL},
};

int
gka_general_init(PyObject *module)
{
    return PyModule_AddFunctions(module, general_methods);
}
