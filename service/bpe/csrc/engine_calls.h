/* The Engine's encode and count methods: one text (by the engine's scanner or the one named), a
   batch of texts (the work without the GIL), pieces already split in Python, one piece of bytes
   merged, and the self-consistency check of a `pairs` vocabulary (all_whole).
   Included by _native.c only. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"
#include "py_boundary.h"

/* encode (count_only = 0) or count one text, cut by `scan` */
static int run_one(EngineObject *self, scan_fn scan, PyObject *text, sink_t *out) {
    size_t n;
    int rc;
    const char *s = text_utf8(text, &n);
    if (!s) return -3;
    pc_tally tally = {0, 0, 0, 0, 0};
    pc_table *pc = pc_acquire();
    if (n >= GIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        rc = encode_text(self, scan, (const uint8_t *)s, n, out, pc, &tally);
        pc_release(pc, &tally);
        Py_END_ALLOW_THREADS
    } else {
        rc = encode_text(self, scan, (const uint8_t *)s, n, out, pc, &tally);
        pc_release(pc, &tally);
    }
    return rc;
}

static PyObject *encode_one(EngineObject *self, scan_fn scan, PyObject *text) {
    sink_t out = {0};
    int rc = run_one(self, scan, text, &out);
    PyObject *res = rc == -3 ? NULL : rc ? raise_for(rc) : ids_to_list(&out);
    free(out.ids);
    return res;
}

static PyObject *count_one(EngineObject *self, scan_fn scan, PyObject *text) {
    sink_t out = {0};
    out.count_only = 1;
    int rc = run_one(self, scan, text, &out);
    if (rc == -3) return NULL;
    if (rc) return raise_for(rc);
    return PyLong_FromSize_t(out.len);
}

static PyObject *Engine_encode(EngineObject *self, PyObject *text) {
    return encode_one(self, scanner_fn(self->scanner), text);
}

static PyObject *Engine_count(EngineObject *self, PyObject *text) {
    return count_one(self, scanner_fn(self->scanner), text);
}

/* (scanner, text): the scanner named by the call, not the engine's (a v2 file's chain) */
static scan_fn scanner_arg(PyObject *args, PyObject **text) {
    int scanner;
    if (!PyArg_ParseTuple(args, "iU", &scanner, text)) return NULL;
    scan_fn scan = scanner_fn(scanner);
    if (!scan) PyErr_SetString(PyExc_ValueError, "unknown scanner");
    return scan;
}

static PyObject *Engine_encode_with(EngineObject *self, PyObject *args) {
    PyObject *text;
    scan_fn scan = scanner_arg(args, &text);
    return scan ? encode_one(self, scan, text) : NULL;
}

/* a batch: UTF-8 of every text first (with the GIL), then all of the work without it */
static PyObject *batch(EngineObject *self, PyObject *texts, int count_only) {
    PyObject *seq = PySequence_Fast(texts, "texts must be a sequence of str");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    const char **ptrs = calloc((size_t)m + 1, sizeof *ptrs);
    size_t *lens = calloc((size_t)m + 1, sizeof *lens);
    sink_t *outs = calloc((size_t)m + 1, sizeof *outs);
    PyObject *res = NULL;
    int rc = 0;
    if (!ptrs || !lens || !outs) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t i = 0; i < m; i++) {
        ptrs[i] = text_utf8(PySequence_Fast_GET_ITEM(seq, i), &lens[i]);
        if (!ptrs[i]) goto done;
        outs[i].count_only = count_only;
    }
    pc_tally tally = {0, 0, 0, 0, 0};
    pc_table *pc = pc_acquire();
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m && rc == 0; i++)
        rc = encode_text(self, scanner_fn(self->scanner), (const uint8_t *)ptrs[i], lens[i],
                         &outs[i], pc, &tally);
    pc_release(pc, &tally);
    Py_END_ALLOW_THREADS
    if (rc) { raise_for(rc); goto done; }
    res = PyList_New(m);
    if (!res) goto done;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *v = count_only ? PyLong_FromSize_t(outs[i].len) : ids_to_list(&outs[i]);
        if (!v) { Py_CLEAR(res); goto done; }
        PyList_SET_ITEM(res, i, v);
    }
done:
    if (outs)
        for (Py_ssize_t i = 0; i < m; i++) free(outs[i].ids);
    free(outs);
    free(lens);
    free(ptrs);
    Py_DECREF(seq);
    return res;
}

static PyObject *Engine_encode_batch(EngineObject *self, PyObject *texts) {
    return batch(self, texts, 0);
}

static PyObject *Engine_count_batch(EngineObject *self, PyObject *texts) {
    return batch(self, texts, 1);
}

/* pieces split in Python (a custom pattern): merge each, concatenate */
static PyObject *pieces(EngineObject *self, PyObject *list, int count_only) {
    PyObject *seq = PySequence_Fast(list, "pieces must be a sequence of str");
    if (!seq) return NULL;
    sink_t out = {0};
    out.count_only = count_only;
    bk_memo *memo = NULL;
    PyObject *res = NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < m; i++) {
        size_t n;
        const char *s = text_utf8(PySequence_Fast_GET_ITEM(seq, i), &n);
        if (!s) goto done;
        int rc = merge_piece(self, (const uint8_t *)s, n, &out, &memo);
        if (rc) { raise_for(rc); goto done; }
    }
    res = count_only ? PyLong_FromSize_t(out.len) : ids_to_list(&out);
done:
    free(out.ids);
    free(memo);
    Py_DECREF(seq);
    return res;
}

static PyObject *Engine_encode_pieces(EngineObject *self, PyObject *list) {
    return pieces(self, list, 0);
}

static PyObject *Engine_count_pieces(EngineObject *self, PyObject *list) {
    return pieces(self, list, 1);
}

/* the ids of one piece given as bytes (merge only, no pre-tokenization) */
static PyObject *Engine_merge_bytes(EngineObject *self, PyObject *data) {
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "piece must be bytes");
        return NULL;
    }
    sink_t out = {0};
    int rc = merge_piece(self, (const uint8_t *)PyBytes_AS_STRING(data),
                         (size_t)PyBytes_GET_SIZE(data), &out, NULL);
    PyObject *res = rc ? raise_for(rc) : ids_to_list(&out);
    free(out.ids);
    return res;
}

/* all_whole(tokens): every token of more than two bytes merges to its own id alone (what
   Vocabulary.self_consistent asks of a `pairs` vocabulary; two bytes always do) */
static PyObject *Engine_all_whole(EngineObject *self, PyObject *tokens) {
    if (!PyList_Check(tokens)) {
        PyErr_SetString(PyExc_TypeError, "tokens must be a list");
        return NULL;
    }
    sink_t out = {0};
    bk_memo *memo = NULL;
    int whole = 1;
    for (Py_ssize_t id = 0; whole && id < PyList_GET_SIZE(tokens); id++) {
        PyObject *t = PyList_GET_ITEM(tokens, id);
        if (!PyBytes_Check(t) || PyBytes_GET_SIZE(t) <= 2) continue;
        out.len = 0;
        int rc = merge_piece(self, (const uint8_t *)PyBytes_AS_STRING(t),
                             (size_t)PyBytes_GET_SIZE(t), &out, &memo);
        if (rc) { free(out.ids); free(memo); return raise_for(rc); }
        whole = out.len == 1 && out.ids[0] == (uint32_t)id;
    }
    free(out.ids);
    free(memo);
    return PyBool_FromLong(whole);
}
