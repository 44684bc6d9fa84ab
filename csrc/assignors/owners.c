/* resolve() and fill_uniform(): the C twins of assignors.sticky_loops.resolve and
 * fill_uniform (the contract, and which list comes back as the same object, is documented
 * there). Members are numbered by their place in the Java member order, partitions 0 .. total-1.
 *
 * Both keep the int objects they are given: a member's owned list holds the very ints of its
 * claims, and a member that neither gives up nor receives a partition gets its own list back,
 * so the caller can hand back the TopicPartitions it was sent. */
#include "assignors.h"

/* The number at items[i] as an index below total; -1 with an exception set otherwise. */
static Py_ssize_t
index_of(PyObject *item, Py_ssize_t total)
{
    Py_ssize_t index = PyLong_AsSsize_t(item);
    if (index == -1 && PyErr_Occurred())
        return -1;
    if (index < 0 || index >= total) {
        PyErr_SetString(PyExc_IndexError, "partition number out of range");
        return -1;
    }
    return index;
}

/* A list of int lists, as borrowed item arrays; NULL with an exception set if not. */
static PyObject *
int_lists(PyObject *arg, const char *what)
{
    if (!PyList_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "%s must be a list of lists", what);
        return NULL;
    }
    for (Py_ssize_t m = 0; m < PyList_GET_SIZE(arg); m++) {
        if (!PyList_Check(PyList_GET_ITEM(arg, m))) {
            PyErr_Format(PyExc_TypeError, "%s must be a list of lists", what);
            return NULL;
        }
    }
    return arg;
}

PyDoc_STRVAR(resolve_doc,
"resolve(claims, generations, total, /)\n--\n\n"
"Each partition's owner, and each member's claims that it owns (see sticky_loops.resolve).");

static PyObject *
resolve(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "resolve() takes claims, generations and total");
        return NULL;
    }
    PyObject *claims = int_lists(args[0], "claims");
    if (claims == NULL)
        return NULL;
    Py_ssize_t members = PyList_GET_SIZE(claims);
    Py_ssize_t total = PyLong_AsSsize_t(args[2]);
    if (total == -1 && PyErr_Occurred())
        return NULL;
    if (total < 0) {
        PyErr_SetString(PyExc_ValueError, "resolve(): total must be 0 or more");
        return NULL;
    }
    PyObject *gens = PySequence_Fast(args[1], "generations must be a sequence");
    if (gens == NULL)
        return NULL;
    int32_t *owner = PyMem_Malloc(((size_t)total + 1) * sizeof(int32_t));
    unsigned char *taken = PyMem_Calloc((size_t)total + 1, 1);
    long long *generation = PyMem_Malloc(((size_t)members + 1) * sizeof(long long));
    PyObject **numbers = PyMem_Calloc((size_t)members + 2, sizeof(PyObject *));
    PyObject *owner_list = NULL, *owned = NULL, *result = NULL;
    if (owner == NULL || taken == NULL || generation == NULL || numbers == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (PySequence_Fast_GET_SIZE(gens) != members) {
        PyErr_SetString(PyExc_ValueError, "resolve(): one generation per member");
        goto done;
    }
    for (Py_ssize_t m = 0; m < members; m++) {
        generation[m] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(gens, m));
        if (generation[m] == -1 && PyErr_Occurred())
            goto done;
    }
    for (Py_ssize_t i = 0; i < total; i++)
        owner[i] = -1;
    /* Higher generation wins a partition claimed twice; on a tie the earlier member keeps it. */
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *claimed = PyList_GET_ITEM(claims, m);
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(claimed); j++) {
            Py_ssize_t index = index_of(PyList_GET_ITEM(claimed, j), total);
            if (index < 0)
                goto done;
            int32_t current = owner[index];
            if (current < 0 || generation[m] > generation[current])
                owner[index] = (int32_t)m;
        }
    }
    if ((owned = PyList_New(members)) == NULL)
        goto done;
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *claimed = PyList_GET_ITEM(claims, m);
        Py_ssize_t n = PyList_GET_SIZE(claimed), kept = 0;
        /* Only m owns a partition m keeps, so `taken` needs no clearing between members. */
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_ssize_t index = PyLong_AsSsize_t(PyList_GET_ITEM(claimed, j));
            if (owner[index] == m && !taken[index]) {
                taken[index] = 1;
                kept++;
            }
        }
        PyObject *mine;
        if (kept == n) {
            Py_INCREF(claimed);
            mine = claimed;
        }
        else {
            if ((mine = PyList_New(kept)) == NULL)
                goto done;
            kept = 0;
            for (Py_ssize_t j = 0; j < n; j++) {
                PyObject *item = PyList_GET_ITEM(claimed, j);
                Py_ssize_t index = PyLong_AsSsize_t(item);
                /* taken[] is 1 now for each owned one; 2 marks it placed in `mine` already. */
                if (owner[index] == m && taken[index] == 1) {
                    taken[index] = 2;
                    Py_INCREF(item);
                    PyList_SET_ITEM(mine, kept++, item);
                }
            }
        }
        PyList_SET_ITEM(owned, m, mine);
    }
    /* The owner list shares one int object per member number (and -1). */
    for (Py_ssize_t m = -1; m < members; m++) {
        if ((numbers[m + 1] = PyLong_FromSsize_t(m)) == NULL)
            goto done;
    }
    if ((owner_list = PyList_New(total)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < total; i++) {
        PyObject *number = numbers[owner[i] + 1];
        Py_INCREF(number);
        PyList_SET_ITEM(owner_list, i, number);
    }
    result = PyTuple_Pack(2, owner_list, owned);
done:
    Py_XDECREF(owner_list);
    Py_XDECREF(owned);
    if (numbers != NULL) {
        for (Py_ssize_t m = 0; m <= members; m++)
            Py_XDECREF(numbers[m]);
    }
    PyMem_Free(numbers);
    PyMem_Free(owner);
    PyMem_Free(taken);
    PyMem_Free(generation);
    Py_DECREF(gens);
    return result;
}

PyDoc_STRVAR(fill_uniform_doc,
"fill_uniform(owned, total, /)\n--\n\n"
"The balanced, sticky assignment when every member may take any partition (see\n"
"sticky_loops.fill_uniform).");

static PyObject *
fill_uniform(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "fill_uniform() takes owned and total");
        return NULL;
    }
    PyObject *owned = int_lists(args[0], "owned");
    if (owned == NULL)
        return NULL;
    Py_ssize_t members = PyList_GET_SIZE(owned);
    Py_ssize_t total = PyLong_AsSsize_t(args[1]);
    if (total == -1 && PyErr_Occurred())
        return NULL;
    if (members == 0) {
        PyErr_SetString(PyExc_ZeroDivisionError, "fill_uniform(): no members");
        return NULL;
    }
    if (total < 0) {
        PyErr_SetString(PyExc_ValueError, "fill_uniform(): total must be 0 or more");
        return NULL;
    }
    Py_ssize_t quota = total / members, extra = total % members;
    Py_ssize_t *target = PyMem_Malloc((size_t)members * sizeof(Py_ssize_t));
    Py_ssize_t *need = PyMem_Malloc((size_t)members * sizeof(Py_ssize_t));
    Py_ssize_t *active = PyMem_Malloc((size_t)members * sizeof(Py_ssize_t));
    unsigned char *free_ = PyMem_Malloc((size_t)total + 1);
    PyObject *result = NULL;
    if (target == NULL || need == NULL || active == NULL || free_ == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* Members owning more than the quota get the extra places first, then those still short. */
    for (Py_ssize_t m = 0; m < members; m++) {
        Py_ssize_t n = PyList_GET_SIZE(PyList_GET_ITEM(owned, m));
        if (n > quota && extra) {
            extra--;
            target[m] = quota + 1;
        }
        else {
            target[m] = quota;
        }
    }
    for (Py_ssize_t m = 0; m < members && extra; m++) {
        if (target[m] == quota) {
            target[m]++;
            extra--;
        }
    }
    memset(free_, 1, (size_t)total + 1);
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *mine = PyList_GET_ITEM(owned, m);
        Py_ssize_t n = PyList_GET_SIZE(mine), kept = n < target[m] ? n : target[m];
        for (Py_ssize_t j = 0; j < kept; j++) {
            Py_ssize_t index = index_of(PyList_GET_ITEM(mine, j), total);
            if (index < 0)
                goto done;
            free_[index] = 0;
        }
        need[m] = target[m] - kept;
    }
    if ((result = PyList_New(members)) == NULL)
        goto done;
    Py_ssize_t nactive = 0;
    for (Py_ssize_t m = 0; m < members; m++) {
        PyObject *mine = PyList_GET_ITEM(owned, m), *out;
        Py_ssize_t n = PyList_GET_SIZE(mine);
        if (need[m] > 0) {
            /* Room for what it keeps (all it owns) and what it receives, filled below. */
            if ((out = PyList_New(n + need[m])) == NULL)
                goto fail;
            for (Py_ssize_t j = 0; j < n; j++) {
                PyObject *item = PyList_GET_ITEM(mine, j);
                Py_INCREF(item);
                PyList_SET_ITEM(out, j, item);
            }
            active[nactive++] = m;
        }
        else if (n > target[m]) {
            if ((out = PyList_GetSlice(mine, 0, target[m])) == NULL)
                goto fail;
        }
        else {
            Py_INCREF(mine);
            out = mine;
        }
        PyList_SET_ITEM(result, m, out);
    }
    /* Deal the free partitions in number order, one at a time to each member still short. */
    Py_ssize_t position = 0;
    while (nactive > 0) {
        Py_ssize_t still = 0;
        for (Py_ssize_t a = 0; a < nactive; a++) {
            Py_ssize_t m = active[a];
            while (position < total && !free_[position])
                position++;
            if (position >= total) {
                PyErr_SetString(PyExc_RuntimeError, "fill_uniform(): ran out of partitions");
                goto fail;
            }
            PyObject *out = PyList_GET_ITEM(result, m);
            Py_ssize_t slot = PyList_GET_SIZE(out) - need[m];
            PyObject *number = PyLong_FromSsize_t(position++);
            if (number == NULL)
                goto fail;
            PyList_SET_ITEM(out, slot, number);
            if (--need[m] > 0)
                active[still++] = m;
        }
        nactive = still;
    }
    goto done;
fail:
    /* Lists not yet filled hold NULLs, which list deallocation skips. */
    Py_CLEAR(result);
done:
    PyMem_Free(target);
    PyMem_Free(need);
    PyMem_Free(active);
    PyMem_Free(free_);
    return result;
}

static PyMethodDef owners_methods[] = {
    {"resolve", (PyCFunction)(void (*)(void))resolve, METH_FASTCALL, resolve_doc},
    {"fill_uniform", (PyCFunction)(void (*)(void))fill_uniform, METH_FASTCALL, fill_uniform_doc},
    {NULL, NULL, 0, NULL},
};

int
gka_owners_init(PyObject *module)
{
    return PyModule_AddFunctions(module, owners_methods);
}
