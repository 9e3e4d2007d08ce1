/* service.bpe._native: the native BPE engine (pre-tokenizers for the shipped patterns, both merge
   rules). Typed wrapper: service/bpe/native.py; reference: service/bpe/engine.py's PythonEngine.
   Tables are read-only after construction, so any number of threads may encode at once; the GIL
   is released while a text of GIL_THRESHOLD bytes or more is encoded. The mutable parts are the
   process's piece cache (piece_cache.h), shared by every engine and safe for that, and each
   engine's hot pieces (hot_pieces.h), taken by one call at a time; caches_module.h has the
   module's functions that size and report them. normal_spans.h: the spans of a text NFC or NFKC
   may change (for service/bpe/normalforms.py). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"
#include "caches_module.h"
#include "engine_init.h"
#include "vocab_check.h"
#include "normal_spans.h"

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
