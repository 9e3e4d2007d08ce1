/* service.bpe._native: the native BPE engine (pre-tokenizers for the shipped patterns, both merge
   rules). Typed wrapper: service/bpe/native.py; reference: service/bpe/engine.py's PythonEngine.
   Tables are read-only after construction, so any number of threads may encode at once; the GIL
   is released while a text of GIL_THRESHOLD bytes or more is encoded. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backtrack.h"
#include "merge.h"
#include "pretok.h"
#include "vocab_check.h"

#define GIL_THRESHOLD 2048
#define MAX_TEXT 0x7FFFFFF0u
#ifndef BACKTRACK_FROM
#define BACKTRACK_FROM 16 /* bytes: shorter pieces merge faster by the scan of merge.h */
#endif

typedef struct {
    PyObject_HEAD
    int pairs; /* 0: ranks rule, 1: pairs rule */
    int scanner;
    bytes_table bt;
    backtrack_t bk; /* the ranks rule's backtracking tables (bk.on: in use) */
    pair_table pt;
    size_t nbytes;
} EngineObject;

static scan_fn scanner_fn(int scanner) {
    switch (scanner) {
    case SCAN_GPT2: return scan_gpt2;
    case SCAN_CL100K: return scan_cl100k;
    case SCAN_O200K: return scan_o200k;
    case SCAN_QWEN2: return scan_qwen2;
    default: return NULL;
    }
}

/* a piece that is not itself a token (ranks) or longer than one byte (pairs) */
static int merge_parts(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out) {
    if (e->bk.on && n >= BACKTRACK_FROM) return bk_encode(&e->bk, &e->bt, s, n, out);
    if (e->pairs)
        return n < LONG_PIECE ? merge_pairs_short(&e->pt, s, n, out)
                              : merge_pairs_long(&e->pt, s, n, out);
    return n < LONG_PIECE ? merge_ranks_short(&e->bt, s, n, out)
                          : merge_ranks_long(&e->bt, s, n, out);
}

static inline int merge_piece(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out) {
    if (n == 0) return 0;
    if (e->pairs) return n == 1 ? sink_put(out, e->pt.byte_ids[s[0]]) : merge_parts(e, s, n, out);
    uint32_t whole = bt_lookup(&e->bt, s, n);
    return whole != NO_RANK ? sink_put(out, whole) : merge_parts(e, s, n, out);
}

/* Within one text, a piece that is no token and occurs again is merged once: the memo maps its
   bytes (in the text itself) to where its ids went in the output (or to its count). Local to one
   call, so no state is shared between threads or texts. */
typedef struct {
    const uint8_t *key;
    uint32_t len, hash, start, count;
} memo_slot;

typedef struct {
    memo_slot *slots;
    size_t mask, used;
} memo_t;

#define MEMO_MAX_PIECE 64
#ifndef MEMO_MAX_SLOTS
#define MEMO_MAX_SLOTS (1u << 16) /* 1.5 MB: a larger memo missed the cache on text that never repeats */
#endif

static memo_slot *memo_find(memo_t *m, const uint8_t *k, uint32_t len, uint32_t h) {
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        memo_slot *sl = &m->slots[i];
        if (sl->key == NULL || (sl->hash == h && sl->len == len && memcmp(sl->key, k, len) == 0))
            return sl;
    }
}

/* room for one more entry (0), or no memo from now on (-1: out of memory or full) */
static int memo_room(memo_t *m) {
    if (m->slots && (m->used + 1) * 2 <= m->mask + 1) return 0;
    size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
    if (cap > MEMO_MAX_SLOTS) return -1;
    memo_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    memo_t grown = {slots, cap - 1, 0};
    for (size_t i = 0; m->slots && i <= m->mask; i++)
        if (m->slots[i].key) {
            *memo_find(&grown, m->slots[i].key, m->slots[i].len, m->slots[i].hash) = m->slots[i];
            grown.used++;
        }
    free(m->slots);
    *m = grown;
    return 0;
}

static int replay(sink_t *out, const memo_slot *sl) {
    if (out->count_only) { out->len += sl->count; return 0; }
    for (uint32_t i = 0; i < sl->count; i++)
        if (sink_put(out, out->ids[sl->start + i])) return -1;
    return 0;
}

static int merge_memo(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out, memo_t *m,
                      int *memo_off) {
    if (!e->pairs) {
        uint32_t whole = bt_lookup(&e->bt, s, n);
        if (whole != NO_RANK) return sink_put(out, whole);
    } else if (n == 1) {
        return sink_put(out, e->pt.byte_ids[s[0]]);
    }
    if (n > MEMO_MAX_PIECE || *memo_off) return merge_piece(e, s, n, out);
    uint32_t h = hash_bytes(s, n);
    if (m->slots) {
        memo_slot *sl = memo_find(m, s, (uint32_t)n, h);
        if (sl->key) return replay(out, sl);
    }
    size_t before = out->len;
    int rc = merge_parts(e, s, n, out);
    if (rc) return rc;
    if (memo_room(m)) { *memo_off = 1; return 0; }
    memo_slot *sl = memo_find(m, s, (uint32_t)n, h);
    *sl = (memo_slot){s, (uint32_t)n, h, (uint32_t)before, (uint32_t)(out->len - before)};
    m->used++;
    return 0;
}

static int encode_text(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out) {
    scan_fn scan = scanner_fn(e->scanner);
    if (!scan) return merge_piece(e, s, n, out);
    memo_t memo = {0};
    int memo_off = 0, rc = 0;
    for (size_t p = 0; p < n;) {
        size_t q = scan(s, n, p);
        rc = merge_memo(e, s + p, q - p, out, &memo, &memo_off);
        if (rc) break;
        p = q;
    }
    free(memo.slots);
    return rc;
}

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

/* encode (count_only = 0) or count one text */
static int run_one(EngineObject *self, PyObject *text, sink_t *out) {
    size_t n;
    int rc;
    const char *s = text_utf8(text, &n);
    if (!s) return -3;
    if (n >= GIL_THRESHOLD) {
        Py_BEGIN_ALLOW_THREADS
        rc = encode_text(self, (const uint8_t *)s, n, out);
        Py_END_ALLOW_THREADS
    } else {
        rc = encode_text(self, (const uint8_t *)s, n, out);
    }
    return rc;
}

static PyObject *Engine_encode(EngineObject *self, PyObject *text) {
    sink_t out = {0};
    int rc = run_one(self, text, &out);
    PyObject *res = rc == -3 ? NULL : rc ? raise_for(rc) : ids_to_list(&out);
    free(out.ids);
    return res;
}

static PyObject *Engine_count(EngineObject *self, PyObject *text) {
    sink_t out = {0};
    out.count_only = 1;
    int rc = run_one(self, text, &out);
    if (rc == -3) return NULL;
    if (rc) return raise_for(rc);
    return PyLong_FromSize_t(out.len);
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
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < m && rc == 0; i++)
        rc = encode_text(self, (const uint8_t *)ptrs[i], lens[i], &outs[i]);
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
    PyObject *res = NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < m; i++) {
        size_t n;
        const char *s = text_utf8(PySequence_Fast_GET_ITEM(seq, i), &n);
        if (!s) goto done;
        int rc = merge_piece(self, (const uint8_t *)s, n, &out);
        if (rc) { raise_for(rc); goto done; }
    }
    res = count_only ? PyLong_FromSize_t(out.len) : ids_to_list(&out);
done:
    free(out.ids);
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
                         (size_t)PyBytes_GET_SIZE(data), &out);
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
    int whole = 1;
    for (Py_ssize_t id = 0; whole && id < PyList_GET_SIZE(tokens); id++) {
        PyObject *t = PyList_GET_ITEM(tokens, id);
        if (!PyBytes_Check(t) || PyBytes_GET_SIZE(t) <= 2) continue;
        out.len = 0;
        int rc = merge_piece(self, (const uint8_t *)PyBytes_AS_STRING(t),
                             (size_t)PyBytes_GET_SIZE(t), &out);
        if (rc) { free(out.ids); return raise_for(rc); }
        whole = out.len == 1 && out.ids[0] == (uint32_t)id;
    }
    free(out.ids);
    return PyBool_FromLong(whole);
}

static size_t pow2_at_least(size_t x) {
    size_t p = 16;
    while (p < x) p <<= 1;
    return p;
}

static int init_ranks(EngineObject *self, PyObject *tokens) {
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence");
    if (!seq) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    size_t total = 0, longer = 0;
    int rc = -1;
    if ((size_t)m >= NO_RANK) { PyErr_SetString(PyExc_ValueError, "too many tokens"); goto done; }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (t == Py_None) continue;
        if (!PyBytes_Check(t)) { PyErr_SetString(PyExc_TypeError, "tokens are bytes or None"); goto done; }
        Py_ssize_t len = PyBytes_GET_SIZE(t);
        if (len == 0) { PyErr_SetString(PyExc_ValueError, "an empty token"); goto done; }
        total += (size_t)len;
        longer += len > 2;
    }
    if (total >= MAX_TEXT) { PyErr_SetString(PyExc_ValueError, "tokens too large"); goto done; }
    bytes_table *t = &self->bt;
    t->mask = pow2_at_least(longer * 2) - 1;
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    t->blob = malloc(total + 1);
    t->pair_rank = malloc(65536 * sizeof *t->pair_rank);
    /* ~6% of misses reach the slots; at least one 64-bit word (with up to three longer tokens,
       16 or 32 bits made a calloc of 0 words that bt_insert and bt_lookup then overran) */
    t->filter_mask = pow2_at_least(longer * 16 < 64 ? 64 : longer * 16) - 1;
    t->filter = calloc((t->filter_mask + 1) / 64, sizeof *t->filter);
    if (!t->slots || !t->blob || !t->pair_rank || !t->filter) { PyErr_NoMemory(); goto done; }
    memset(t->pair_rank, 0xFF, 65536 * sizeof *t->pair_rank);
    memset(t->byte_rank, 0xFF, sizeof t->byte_rank);
    backtrack_t *b = &self->bk;
    b->ntok = (uint32_t)m;
    b->off = calloc((size_t)m + 1, sizeof *b->off);
    b->len = calloc((size_t)m + 1, sizeof *b->len);
    if (!b->off || !b->len) { PyErr_NoMemory(); goto done; }
    size_t off = 0, longest = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *tok = PySequence_Fast_GET_ITEM(seq, i);
        if (tok == Py_None) continue;
        size_t len = (size_t)PyBytes_GET_SIZE(tok);
        memcpy(t->blob + off, PyBytes_AS_STRING(tok), len);
        bt_insert(t, (uint32_t)off, (uint32_t)len, (uint32_t)i);
        b->off[i] = (uint32_t)off;
        b->len[i] = (uint16_t)(len <= BK_MAX_TOKEN ? len : 0);
        longest = len > longest ? len : longest;
        off += len;
    }
    for (int c = 0; c < 256; c++)
        if (t->byte_rank[c] == NO_RANK) {
            PyErr_Format(PyExc_ValueError, "byte 0x%02x is no token: the ranks rule needs all 256", c);
            goto done;
        }
    self->nbytes = (t->mask + 1) * sizeof *t->slots + total + 65536 * sizeof *t->pair_rank +
                   (t->filter_mask + 1) / 8;
    b->blob = t->blob;
    if (longest <= BK_MAX_TOKEN) {
        int built;
        Py_BEGIN_ALLOW_THREADS
        built = bk_build_ranks(b, t);
        Py_END_ALLOW_THREADS
        if (built) { PyErr_NoMemory(); goto done; }
    }
    if (b->on) self->nbytes += bk_nbytes(b);
    else bk_free(b);
    rc = 0;
done:
    Py_DECREF(seq);
    return rc;
}

/* the pairs rule's backtracking tables need every token's bytes: copied from `tokens` (bytes or
   None by id); 1 if they fit (every token at most BK_MAX_TOKEN bytes), 0 if not, -1 on error */
static int bk_layout(backtrack_t *b, PyObject *tokens) {
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence");
    if (!seq) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    size_t total = 0;
    int rc = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *tok = PySequence_Fast_GET_ITEM(seq, i);
        if (tok == Py_None) continue;
        if (!PyBytes_Check(tok) || (size_t)PyBytes_GET_SIZE(tok) > BK_MAX_TOKEN) goto done;
        total += (size_t)PyBytes_GET_SIZE(tok);
    }
    b->ntok = (uint32_t)m;
    b->own_blob = malloc(total + 1);
    b->off = calloc((size_t)m + 1, sizeof *b->off);
    b->len = calloc((size_t)m + 1, sizeof *b->len);
    if (!b->own_blob || !b->off || !b->len) { PyErr_NoMemory(); rc = -1; goto done; }
    size_t off = 0;
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *tok = PySequence_Fast_GET_ITEM(seq, i);
        if (tok == Py_None) continue;
        size_t len = (size_t)PyBytes_GET_SIZE(tok);
        memcpy(b->own_blob + off, PyBytes_AS_STRING(tok), len);
        b->off[i] = (uint32_t)off;
        b->len[i] = (uint16_t)len;
        off += len;
    }
    b->blob = b->own_blob;
    b->own_bytes = total;
    rc = 1;
done:
    Py_DECREF(seq);
    return rc;
}

static int init_pairs(EngineObject *self, PyObject *tokens, PyObject *byte_ids, PyObject *triples) {
    pair_table *t = &self->pt;
    PyObject *seq = PySequence_Fast(byte_ids, "byte_ids must be a sequence");
    if (!seq) return -1;
    if (PySequence_Fast_GET_SIZE(seq) != 256) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "byte_ids needs 256 ids");
        return -1;
    }
    for (int b = 0; b < 256; b++) {
        unsigned long v = PyLong_AsUnsignedLong(PySequence_Fast_GET_ITEM(seq, b));
        if (PyErr_Occurred() || v >= NO_RANK) {
            Py_DECREF(seq);
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "id out of range");
            return -1;
        }
        t->byte_ids[b] = (uint32_t)v;
    }
    Py_DECREF(seq);
    Py_buffer view;
    if (PyObject_GetBuffer(triples, &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return -1;
    int rc = -1;
    size_t count = (size_t)view.len / 12;
    if (view.itemsize != 4 || view.len % 12 || !view.format || strchr("IiLl", view.format[0]) == NULL) {
        PyErr_SetString(PyExc_ValueError, "triples must be a flat array('I') of left, right, new");
        goto done;
    }
    t->mask = pow2_at_least(count * 2) - 1;
    t->keys = malloc((t->mask + 1) * sizeof *t->keys);
    t->vals = malloc((t->mask + 1) * sizeof *t->vals);
    if (!t->keys || !t->vals) { PyErr_NoMemory(); goto done; }
    memset(t->keys, 0xFF, (t->mask + 1) * sizeof *t->keys);
    const uint32_t *v = view.buf;
    for (size_t i = 0; i < count; i++) {
        if (v[3 * i + 2] >= NO_RANK) { PyErr_SetString(PyExc_ValueError, "id out of range"); goto done; }
        pt_insert(t, v[3 * i], v[3 * i + 1], v[3 * i + 2]);
    }
    self->nbytes = (t->mask + 1) * (sizeof *t->keys + sizeof *t->vals);
    backtrack_t *b = &self->bk;
    int fits = bk_layout(b, tokens);
    if (fits < 0) goto done;
    if (fits) {
        int built;
        Py_BEGIN_ALLOW_THREADS
        built = bk_build_pairs(b, t, v, count);
        Py_END_ALLOW_THREADS
        if (built) { PyErr_NoMemory(); goto done; }
    }
    if (b->on) self->nbytes += bk_nbytes(b);
    else bk_free(b);
    rc = 0;
done:
    PyBuffer_Release(&view);
    return rc;
}

static int Engine_init(EngineObject *self, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"rule", "tokens", "byte_ids", "triples", "scanner", NULL};
    const char *rule;
    PyObject *tokens, *byte_ids, *triples;
    int scanner;
    if (self->bt.slots || self->pt.keys) {
        PyErr_SetString(PyExc_RuntimeError, "Engine is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "sOOOi", kwlist, &rule, &tokens, &byte_ids,
                                     &triples, &scanner))
        return -1;
    if (scanner < SCAN_NONE || scanner > SCAN_QWEN2) {
        PyErr_SetString(PyExc_ValueError, "unknown scanner");
        return -1;
    }
    self->scanner = scanner;
    Py_ssize_t ntokens = PyObject_Length(tokens);
    if (ntokens < 0 || ensure_ints((size_t)ntokens)) return -1;
    int rc = -1;
    if (strcmp(rule, "ranks") == 0) {
        self->pairs = 0;
        rc = init_ranks(self, tokens);
    } else if (strcmp(rule, "pairs") == 0) {
        self->pairs = 1;
        rc = init_pairs(self, tokens, byte_ids, triples);
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
    if (self->pairs ? self->pt.keys == NULL : self->bt.slots == NULL) {
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
GUARDED(Engine_encode_batch)
GUARDED(Engine_count_batch)
GUARDED(Engine_encode_pieces)
GUARDED(Engine_count_pieces)
GUARDED(Engine_merge_bytes)
GUARDED(Engine_all_whole)

static void Engine_dealloc(EngineObject *self) {
    bt_free(&self->bt);
    bk_free(&self->bk);
    pt_free(&self->pt);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Engine_nbytes(EngineObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->nbytes);
}

static PyMethodDef Engine_methods[] = {
    {"encode", (PyCFunction)Engine_encode_checked, METH_O, "ids of one text"},
    {"count", (PyCFunction)Engine_count_checked, METH_O, "number of ids of one text"},
    {"encode_batch", (PyCFunction)Engine_encode_batch_checked, METH_O, "ids of each text"},
    {"count_batch", (PyCFunction)Engine_count_batch_checked, METH_O, "count of each text"},
    {"encode_pieces", (PyCFunction)Engine_encode_pieces_checked, METH_O, "ids of pre-split pieces"},
    {"count_pieces", (PyCFunction)Engine_count_pieces_checked, METH_O, "count of pre-split pieces"},
    {"merge_bytes", (PyCFunction)Engine_merge_bytes_checked, METH_O, "ids of one piece of bytes"},
    {"all_whole", (PyCFunction)Engine_all_whole_checked, METH_O,
     "every token (list by id) of more than two bytes merges to itself alone"},
    {NULL, NULL, 0, NULL},
};

static PyObject *Engine_backtracking(EngineObject *self, void *closure) {
    (void)closure;
    return PyBool_FromLong(self->bk.on);
}

static PyGetSetDef Engine_getset[] = {
    {"nbytes", (getter)Engine_nbytes, NULL, "bytes held by the look-up tables", NULL},
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
    {"split", native_split, METH_VARARGS, "split(scanner, text) -> pieces"},
    {"build_tokens", native_build_tokens, METH_VARARGS,
     "build_tokens(rule, seed, merges) -> (tokens by id, triples) if every merge rule holds, else None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, "service.bpe._native", "The native BPE engine.", -1, module_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&EngineType) < 0) return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    Py_INCREF(&EngineType);
    if (PyModule_AddObject(m, "Engine", (PyObject *)&EngineType) < 0 ||
        PyModule_AddStringConstant(m, "UNICODE_VERSION", UNICODE_TABLES_VERSION) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_NONE", SCAN_NONE) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_GPT2", SCAN_GPT2) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_CL100K", SCAN_CL100K) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_O200K", SCAN_O200K) < 0 ||
        PyModule_AddIntConstant(m, "SCAN_QWEN2", SCAN_QWEN2) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
