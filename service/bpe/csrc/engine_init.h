/* An engine's tables, built from the Python objects Engine(rule, tokens, byte_ids, triples, ...)
   is given: the ranks rule's token table, the pairs rule's merge table, and for either the
   backtracking encoder's tables when the vocabulary qualifies. Included by _native.c only. */
#pragma once
#include "engine.h"
#include "backtrack_build.h"

static size_t pow2_at_least(size_t x) {
    size_t p = 16;
    while (p < x) p <<= 1;
    return p;
}

/* after a backtracking build (`built`: its result, 0 if none was tried): the tables are kept and
   counted if the vocabulary qualified, else freed; -1 (MemoryError) if the build ran out */
static int keep_backtracking(EngineObject *self, int built) {
    if (built) {
        PyErr_NoMemory();
        return -1;
    }
    if (self->bk.on) self->nbytes += bk_nbytes(&self->bk);
    else bk_free(&self->bk);
    return 0;
}

static int init_ranks(EngineObject *self, PyObject *tokens) {
    PyObject *seq = PySequence_Fast(tokens, "tokens must be a sequence");
    if (!seq) return -1;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    size_t total = 0, longer = 0, longs = 0;
    int rc = -1;
    if ((size_t)m > BT_MAX_IDS) { PyErr_SetString(PyExc_ValueError, "too many tokens"); goto done; }
    for (Py_ssize_t i = 0; i < m; i++) {
        PyObject *t = PySequence_Fast_GET_ITEM(seq, i);
        if (t == Py_None) continue;
        if (!PyBytes_Check(t)) { PyErr_SetString(PyExc_TypeError, "tokens are bytes or None"); goto done; }
        Py_ssize_t len = PyBytes_GET_SIZE(t);
        if (len == 0) { PyErr_SetString(PyExc_ValueError, "an empty token"); goto done; }
        total += (size_t)len;
        longer += len > 2;
        longs += len >= SLOT_LONG;
    }
    if (total >= MAX_TEXT) { PyErr_SetString(PyExc_ValueError, "tokens too large"); goto done; }
    bytes_table *t = &self->bt;
    /* filled to at most 3/4: a hit probes about two slots (four to a cache line), and most
       misses never reach the slots (the filter) */
    t->mask = pow2_at_least(longer + longer / 3 + 1) - 1;
    t->slots = calloc(t->mask + 1, sizeof *t->slots);
    t->blob = malloc(total + 1);
    t->pair_rank = malloc(65536 * sizeof *t->pair_rank);
    /* ~6% of misses reach the slots; at least one 64-bit word (with up to three longer tokens,
       16 or 32 bits made a calloc of 0 words that bt_insert and bt_lookup then overran) */
    t->filter_mask = pow2_at_least(longer * 16 < 64 ? 64 : longer * 16) - 1;
    t->filter = calloc((t->filter_mask + 1) / 64, sizeof *t->filter);
    t->longs = malloc((longs ? longs : 1) * sizeof *t->longs);
    if (!t->slots || !t->blob || !t->pair_rank || !t->filter || !t->longs) {
        PyErr_NoMemory();
        goto done;
    }
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
                   (t->filter_mask + 1) / 8 + longs * sizeof *t->longs;
    b->blob = t->blob;
    int built = 0;
    if (longest <= BK_MAX_TOKEN) {
        Py_BEGIN_ALLOW_THREADS
        built = bk_build_ranks(b, t);
        Py_END_ALLOW_THREADS
    }
    rc = keep_backtracking(self, built);
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

/* How many merges, from the first, join a lead byte (or what such a merge made) and a continuation
   byte into an id not seen before: SentencePiece-style characters rebuilt from their bytes
   (service/bpe/pipeline/byte_fallback.py), which pt_chars spends at once. Ranks are positions (free ids). */
static uint32_t char_ranks_of(const pair_table *t, const uint32_t *v, size_t count) {
    uint32_t top = 0;
    for (int b = 0; b < 256; b++) top = t->byte_ids[b] > top ? t->byte_ids[b] : top;
    for (size_t i = 0; i < 3 * count; i++) top = v[i] > top ? v[i] : top;
    if (top >= (1u << 26)) return 0;
    uint8_t *kind = calloc((size_t)top + 1, 1); /* 1 lead byte, 2 continuation, 3 made, 4 byte */
    if (!kind) return 0;
    for (int b = 0; b < 256; b++) kind[t->byte_ids[b]] = b >= 0xC0 ? 1 : b >= 0x80 ? 2 : 4;
    size_t k = 0;
    for (; k < count && k < NO_RANK; k++) {
        uint32_t a = v[3 * k], b = v[3 * k + 1], c = v[3 * k + 2];
        if (!(kind[a] == 1 || kind[a] == 3) || kind[b] != 2 || kind[c] != 0) break;
        kind[c] = 3;
    }
    free(kind);
    return (uint32_t)k;
}

/* `backtracking` 0: the merge table alone (a check of the vocabulary, not an engine to serve) */
static int init_pairs(EngineObject *self, PyObject *tokens, PyObject *byte_ids, PyObject *triples,
                      int free_ids, int backtracking) {
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
    t->slots = malloc((t->mask + 1) * sizeof *t->slots);
    if (!t->slots) { PyErr_NoMemory(); goto done; }
    memset(t->slots, 0xFF, (t->mask + 1) * sizeof *t->slots);
    const uint32_t *v = view.buf;
    if (free_ids && !(t->new_of = malloc((count + 1) * sizeof *t->new_of))) { PyErr_NoMemory(); goto done; }
    /* with free ids a pair listed twice keeps its first (lowest) rank, as the reference does:
       insert from the last merge to the first, so the first overwrites the others */
    for (size_t k = 0; k < count; k++) {
        size_t i = free_ids ? count - 1 - k : k;
        if (v[3 * i + 2] >= NO_RANK) { PyErr_SetString(PyExc_ValueError, "id out of range"); goto done; }
        if (free_ids) t->new_of[i] = v[3 * i + 2];
        pt_insert(t, v[3 * i], v[3 * i + 1], free_ids ? (uint32_t)i : v[3 * i + 2]);
    }
    if (free_ids) t->char_ranks = char_ranks_of(t, v, count);
    self->nbytes = (t->mask + 1) * sizeof *t->slots +
                   (free_ids ? count * sizeof *t->new_of : 0);
    if (free_ids || !backtracking) { /* backtracking needs ids = ranks */
        rc = keep_backtracking(self, 0);
        goto done;
    }
    backtrack_t *b = &self->bk;
    int fits = bk_layout(b, tokens);
    if (fits < 0) goto done;
    int built = 0;
    if (fits) {
        Py_BEGIN_ALLOW_THREADS
        built = bk_build_pairs(b, t, v, count);
        Py_END_ALLOW_THREADS
    }
    rc = keep_backtracking(self, built);
done:
    PyBuffer_Release(&view);
    return rc;
}
