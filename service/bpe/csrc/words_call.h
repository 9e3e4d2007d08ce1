/* The Engine's encode_words: a SentencePiece-style text's stretches and added ids in one call,
   each stretch cut by the word cut (wordcut.h) and merged with the hot pieces and the piece
   cache. Included by _native.c only. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"
#include "py_boundary.h"

/* encode_words(items, mark, contexts): a SentencePiece-style text in one call. `items` in order:
   a str is a stretch cut by the word cut (wordcut.h: before each `mark`, except where one of the
   `contexts`, (behind, ahead) bytes pairs, holds), an int an added token's id, put as it is */
static int words_contexts(PyObject *contexts, wc_context *ctx, size_t *nctx) {
    PyObject *seq = PySequence_Fast(contexts, "contexts must be a sequence of (bytes, bytes)");
    if (!seq) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    int rc = -1;
    if (m > WC_MAX_CONTEXTS) {
        PyErr_SetString(PyExc_ValueError, "too many word cut contexts");
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *pair = PySequence_Fast_GET_ITEM(seq, i);
        PyObject *b, *a;
        if (!PyTuple_Check(pair) || !PyArg_ParseTuple(pair, "SS", &b, &a)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a context is (bytes, bytes)");
            goto done;
        }
        if (PyBytes_GET_SIZE(b) > WC_MAX_BYTES || PyBytes_GET_SIZE(a) > WC_MAX_BYTES) {
            PyErr_SetString(PyExc_ValueError, "word cut context too long");
            goto done;
        }
        ctx[i] = (wc_context){(const uint8_t *)PyBytes_AS_STRING(b),
                              (const uint8_t *)PyBytes_AS_STRING(a),
                              (size_t)PyBytes_GET_SIZE(b), (size_t)PyBytes_GET_SIZE(a)};
    }
    *nctx = (size_t)m;
    rc = 0;
done:
    Py_DECREF(seq); /* the bytes stay alive: the caller holds `contexts` for the call */
    return rc;
}

static PyObject *Engine_encode_words(EngineObject *self, PyObject *args) {
    PyObject *items, *contexts;
    const char *mark;
    Py_ssize_t nmark;
    if (!PyArg_ParseTuple(args, "Oy#O", &items, &mark, &nmark, &contexts)) return NULL;
    if (nmark < 1 || nmark > 4) {
        PyErr_SetString(PyExc_ValueError, "mark must be one character's UTF-8");
        return NULL;
    }
    wc_context ctx[WC_MAX_CONTEXTS];
    wordcut_t w = {(const uint8_t *)mark, (size_t)nmark, ctx, 0};
    if (words_contexts(contexts, ctx, &w.nctx)) return NULL;
    PyObject *seq = PySequence_Fast(items, "items must be a sequence of str and int");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    const char **ptrs = calloc((size_t)m + 1, sizeof *ptrs);
    size_t *lens = calloc((size_t)m + 1, sizeof *lens); /* for an id: the id */
    sink_t out = {0};
    PyObject *res = NULL;
    size_t total = 0;
    int rc = 0;
    if (!ptrs || !lens) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (PyLong_Check(item)) {
            unsigned long id = PyLong_AsUnsignedLong(item);
            if (PyErr_Occurred()) goto done;
            if (id > UINT32_MAX) { PyErr_SetString(PyExc_OverflowError, "id too large"); goto done; }
            lens[i] = id;
            continue;
        }
        if (!(ptrs[i] = text_utf8(item, &lens[i]))) goto done;
        if ((total += lens[i]) > MAX_TEXT) {
            PyErr_SetString(PyExc_ValueError, "text too long for the native engine");
            goto done;
        }
    }
    memo_t memo = {0};
    pc_ctx c = {pc_acquire(), {0, 0, 0, 0, 0}, {0}, NULL, NULL, 0};
    int memo_off = 0;
    PyThreadState *state = total >= GIL_THRESHOLD ? PyEval_SaveThread() : NULL;
    c.hot = hot_take(&self->hot, &self->hot_lock);
    if (c.hot) c.pairs = c.hot->pairs; /* the pairs answered by earlier calls too */
    for (Py_ssize_t i = 0; i < m && rc == 0; i++)
        rc = ptrs[i] ? encode_words(self, &w, (const uint8_t *)ptrs[i], lens[i], &out, &memo,
                                    &memo_off, &c)
                     : sink_put(&out, (uint32_t)lens[i]);
    if (c.hot && c.pairs == c.hot->pairs) c.pairs = NULL; /* the table's, not the call's */
    hot_give(c.hot, &self->hot_lock);
    pc_release(c.t, &c.tally);
    if (state) PyEval_RestoreThread(state);
    free(memo.slots);
    free(c.scratch.ids);
    free(c.pairs);
    res = rc ? raise_for(rc) : ids_to_list(&out);
done:
    free(out.ids);
    free(lens);
    free(ptrs);
    Py_DECREF(seq);
    return res;
}
