/* service.bpe._native: the native BPE engine (pre-tokenizers for the shipped patterns, both merge
   rules). Typed wrapper: service/bpe/engine/native.py; reference: service/bpe/engine/python.py's PythonEngine.
   Tables are read-only after construction, so any number of threads may encode at once; the GIL
   is released while a text of GIL_THRESHOLD bytes or more is encoded. The mutable parts are the
   process's piece cache (piece_cache.h), shared by every engine and safe for that, and each
   engine's hot pieces (hot_pieces.h), taken by one call at a time; caches_module.h has the
   module's functions that size and report them. normal_spans.h: the spans of a text NFC or NFKC
   may change (for service/bpe/pipeline/normal_forms.py).
   This file is the CPython module: the Engine type's method and attribute tables and the module's
   own functions. The Engine's methods are in engine_calls.h and words_call.h (encode_words), its
   construction and end in engine_life.h, the conversions between Python objects and the engine's
   inputs and outputs in py_boundary.h. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"
#include "caches_module.h"
#include "engine_init.h"
#include "vocab_check.h"
#include "normal_spans.h"
#include "py_boundary.h"
#include "engine_calls.h"
#include "words_call.h"
#include "engine_life.h"

static int ready(EngineObject *self) {
    if (self->pairs ? self->pt.slots == NULL : self->bt.slots == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Engine is not initialised");
        return 0;
    }
    return 1;
}

#define GUARDED(name)                                                       \
    static PyObject *name##_checked(EngineObject *self, PyObject *arg) {    \
        return ready(self) ? name(self, arg) : NULL;                        \
    }
GUARDED(Engine_encode)
GUARDED(Engine_count)
GUARDED(Engine_encode_with)
GUARDED(Engine_encode_batch)
GUARDED(Engine_count_batch)
GUARDED(Engine_encode_pieces)
GUARDED(Engine_count_pieces)
GUARDED(Engine_merge_bytes)
GUARDED(Engine_encode_words)
GUARDED(Engine_all_whole)
GUARDED(Engine_rescanned)

static PyObject *Engine_nbytes(EngineObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->nbytes);
}

static PyMethodDef Engine_methods[] = {
    {"encode", (PyCFunction)Engine_encode_checked, METH_O, "ids of one text"},
    {"count", (PyCFunction)Engine_count_checked, METH_O, "number of ids of one text"},
    {"encode_with", (PyCFunction)Engine_encode_with_checked, METH_VARARGS,
     "ids of one text cut by the scanner given (scanner, text)"},
    {"encode_batch", (PyCFunction)Engine_encode_batch_checked, METH_O, "ids of each text"},
    {"count_batch", (PyCFunction)Engine_count_batch_checked, METH_O, "count of each text"},
    {"encode_pieces", (PyCFunction)Engine_encode_pieces_checked, METH_O, "ids of pre-split pieces"},
    {"count_pieces", (PyCFunction)Engine_count_pieces_checked, METH_O, "count of pre-split pieces"},
    {"encode_words", (PyCFunction)Engine_encode_words_checked, METH_VARARGS,
     "ids of stretches (str, cut before a mark except in the contexts) and added ids (int)"},
    {"merge_bytes", (PyCFunction)Engine_merge_bytes_checked, METH_O, "ids of one piece of bytes"},
    {"all_whole", (PyCFunction)Engine_all_whole_checked, METH_O,
     "every token (list by id) of more than two bytes merges to itself alone"},
    {"rescanned", (PyCFunction)Engine_rescanned_checked, METH_O,
     "an engine sharing these tables, with another scanner"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Engine_backtracking(EngineObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->bk.on);
}

static PyGetSetDef Engine_getset[] = {
    {"nbytes", (getter)Engine_nbytes, NULL,
     "bytes held by the look-up tables (0 for an engine that shares another's)", NULL},
    {"backtracking", (getter)Engine_backtracking, NULL,
     "whether the ranks rule runs the backtracking encoder (backtrack.h) on longer pieces", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject EngineType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "service.bpe._native.Engine",
    .tp_basicsize = sizeof(EngineObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Engine(rule, tokens, byte_ids, triples, scanner): the native BPE engine",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Engine_init,
    .tp_dealloc = (destructor)Engine_dealloc,
    .tp_methods = Engine_methods,
    .tp_getset = Engine_getset,
};

/* split(scanner, text): the pieces a shipped pattern's scanner cuts (for tests) */
static PyObject *native_split(PyObject *module, PyObject *args) {
    (void)module;
    int scanner;
    PyObject *text;
    size_t n;
    if (!PyArg_ParseTuple(args, "iU", &scanner, &text)) return NULL;
    scan_fn scan = scanner_fn(scanner);
    if (!scan) { PyErr_SetString(PyExc_ValueError, "unknown scanner"); return NULL; }
    const char *s = text_utf8(text, &n);
    if (!s) return NULL;
    PyObject *list = PyList_New(0);
    for (size_t p = 0; list && p < n;) {
        size_t q = scan((const uint8_t *)s, n, p);
        PyObject *piece = PyUnicode_DecodeUTF8(s + p, (Py_ssize_t)(q - p), "strict");
        if (!piece || PyList_Append(list, piece)) { Py_XDECREF(piece); Py_CLEAR(list); break; }
        Py_DECREF(piece);
        p = q;
    }
    return list;
}

static PyMethodDef module_methods[] = {
    {"hot_pieces", native_hot_pieces, METH_VARARGS,
     "hot_pieces(nbytes, seed): each engine's table of hot pieces at most nbytes (0: off)"},
    {"hot_pieces_stats", native_hot_pieces_stats, METH_NOARGS,
     "hot_pieces_stats() -> dict of the hot pieces' tables and counters"},
    {"piece_cache", native_piece_cache, METH_VARARGS,
     "piece_cache(nbytes, seed): the process's piece cache at most nbytes (0: none)"},
    {"piece_cache_stats", native_piece_cache_stats, METH_NOARGS,
     "piece_cache_stats() -> dict of the piece cache's size and counters"},
    {"split", native_split, METH_VARARGS, "split(scanner, text) -> pieces"},
    {"build_tokens", native_build_tokens, METH_VARARGS,
     "build_tokens(rule, seed, merges) -> (tokens by id, triples) if every merge rule holds, else None"},
    {"normal_parts", native_normal_parts, METH_VARARGS,
     "normal_parts(form, text) -> None if text is in NFC/NFKC, else [kept, span, ..., kept]"},
    {"normal_longest_run", native_normal_longest_run, METH_VARARGS,
     "normal_longest_run(form, text) -> the most characters in a row that are no boundary"},
    {"normal_ordered", native_normal_ordered, METH_O,
     "normal_ordered(text) -> text with every run of non-starters stably sorted by class"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "service.bpe._native", "The native BPE engine.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        return NULL;
    }
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0 ||
        PyModule_AddStringConstant(m, "UNICODE_VERSION", UNICODE_TABLES_VERSION) < 0 ||
        PyModule_AddStringConstant(m, "NORMAL_UNICODE_VERSION", NORMAL_UNICODE_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_NONE", SCAN_NONE) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_GPT2", SCAN_GPT2) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_CL100K", SCAN_CL100K) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_O200K", SCAN_O200K) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_QWEN2", SCAN_QWEN2) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_LLAMA3", SCAN_LLAMA3) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_TEKKEN", SCAN_TEKKEN) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_QWEN35", SCAN_QWEN35) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_KIMI", SCAN_KIMI) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_DEEPSEEK", SCAN_DEEPSEEK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
