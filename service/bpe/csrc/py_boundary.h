/* What crosses between Python and the engine: a text in as its UTF-8 (too long a text refused),
   the ids out as a list (one int object per id, shared by every engine), an engine's error code
   out as an exception; GIL_THRESHOLD, the text length from which the work runs without the GIL.
   Included by _native.c only. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"

#define GIL_THRESHOLD 2048

static PyObject *raise_for(int rc) {
    if (rc == -2)
        PyErr_SetString(PyExc_ValueError, "a byte of the text is no token of this vocabulary");
    else
        PyErr_NoMemory();
    return NULL;
}

/* One int object per id, shared by every engine of the process (ids overlap between
   vocabularies): building an ids list is then a reference count and a store per id. Only touched
   with the GIL held. */
static PyObject **g_ints;
static size_t g_nints;

static int ensure_ints(size_t n) {
    if (n <= g_nints) return 0;
    PyObject **grown = PyMem_Realloc(g_ints, n * sizeof *grown);
    if (!grown) { PyErr_NoMemory(); return -1; }
    g_ints = grown;
    for (; g_nints < n; g_nints++)
        if (!(g_ints[g_nints] = PyLong_FromSize_t(g_nints))) return -1;
    return 0;
}

static PyObject *ids_to_list(const sink_t *out) {
    PyObject *list = PyList_New((Py_ssize_t)out->len);
    if (!list) return NULL;
    for (size_t i = 0; i < out->len; i++) {
        uint32_t id = out->ids[i];
        PyObject *v;
        if (id < g_nints) {
            v = g_ints[id];
            Py_INCREF(v);
        } else if (!(v = PyLong_FromUnsignedLong(id))) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

static const char *text_utf8(PyObject *text, size_t *n) {
    Py_ssize_t len;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be a str");
        return NULL;
    }
    const char *s = PyUnicode_AsUTF8AndSize(text, &len);
    if (s && (size_t)len > MAX_TEXT) {
        PyErr_SetString(PyExc_ValueError, "text too long for the native engine");
        return NULL;
    }
    *n = (size_t)len;
    return s;
}
