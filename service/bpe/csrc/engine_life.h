/* An Engine's life: built from its Python arguments (engine_init.h's tables; a failure half-way
   leaves none), a second engine over the same tables with another scanner (rescanned), and freed
   (the tables by the engine that owns them). Included by _native.c only. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"
#include "engine_init.h"
#include "py_boundary.h"

static PyTypeObject EngineType;

/* rescanned(scanner): an engine with this engine's tables (not copied: it keeps this one alive)
   and another scanner, for a vocabulary that two files split with different patterns */
static PyObject *Engine_rescanned(EngineObject *self, PyObject *arg) {
    long scanner = PyLong_AsLong(arg);
    if (scanner == -1 && PyErr_Occurred()) return NULL;
    if (scanner < SCAN_NONE || scanner > SCAN_LAST) {
        PyErr_SetString(PyExc_ValueError, "unknown scanner");
        return NULL;
    }
    EngineObject *other = (EngineObject *)EngineType.tp_alloc(&EngineType, 0);
    if (!other) return NULL;
    PyObject *owner = self->owner ? self->owner : (PyObject *)self;
    other->pairs = self->pairs;
    other->scanner = (int)scanner;
    other->bt = self->bt;
    other->bk = self->bk;
    other->pt = self->pt;
    other->nbytes = 0;
    other->serial = self->serial; /* a piece merges alike whatever cut it: cache entries agree */
    Py_INCREF(owner);
    other->owner = owner;
    return (PyObject *)other;
}

static int Engine_init(EngineObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rule", "tokens", "byte_ids", "triples", "scanner", "free_ids",
                             "backtracking", NULL};
    const char *rule;
    PyObject *tokens, *byte_ids, *triples;
    int scanner, free_ids = 0, backtracking = 1;
    if (self->bt.slots || self->pt.slots || self->owner) {
        PyErr_SetString(PyExc_RuntimeError, "Engine is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOOi|pp", kwlist, &rule, &tokens, &byte_ids,
                                     &triples, &scanner, &free_ids, &backtracking))
        return -1;
    if (scanner < SCAN_NONE || scanner > SCAN_LAST) {
        PyErr_SetString(PyExc_ValueError, "unknown scanner");
        return -1;
    }
    self->scanner = scanner;
    self->serial = atomic_fetch_add(&g_engine_serial, 1) + 1;
    Py_ssize_t ntokens = PyObject_Length(tokens);
    if (ntokens < 0 || ensure_ints((size_t)ntokens)) return -1;
    int rc = -1;
    if (strcmp(rule, "ranks") == 0) {
        self->pairs = 0;
        rc = init_ranks(self, tokens);
    } else if (strcmp(rule, "pairs") == 0) {
        self->pairs = 1;
        rc = init_pairs(self, tokens, byte_ids, triples, free_ids, backtracking);
    } else {
        PyErr_SetString(PyExc_ValueError, "rule must be 'ranks' or 'pairs'");
    }
    if (rc) { /* a failure half-way leaves no half-built engine that would answer */
        bt_free(&self->bt);
        bk_free(&self->bk);
        pt_free(&self->pt);
        self->nbytes = 0;
    }
    return rc;
}

static void Engine_dealloc(EngineObject *self) {
    hot_free(self->hot);
    if (self->owner) {
        Py_CLEAR(self->owner); /* the tables are the owner's */
    } else {
        bt_free(&self->bt);
        bk_free(&self->bk);
        pt_free(&self->pt);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}
