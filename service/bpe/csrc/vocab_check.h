/* build_tokens: the merge rules of format v1 checked in one pass, and every token's bytes built on
   the way (service/store/validation.py's _check_merges and _check_unique_bytes, in C).

   It only ever answers "verified" or "not verified": on any doubt (a broken rule, an unexpected
   type, a size cap) it returns None and the Python reference runs, which finds and names the
   broken entry. So a file this accepts is one the reference accepts, and every error message
   stays the reference's. Included by _native.c only. */
#pragma once
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"

#define VC_MAX_ID ((1u << 24) - 1)          /* fileformat.MAX_ID */
#define VC_MAX_BLOB ((size_t)1 << 28)       /* token bytes; more: leave it to the reference */

typedef struct {
    uint32_t *off, *len; /* by id; len 0: no token (every token has at least one byte) */
    uint8_t *blob;
    size_t used, cap;
    uint64_t *seen; /* (left << 32 | right) + 1 of every merge so far; 0 when empty */
    size_t seen_mask;
    uint32_t *uniq; /* ids + 1 by hash of their bytes; 0 when empty */
    size_t uniq_mask;
} vc_state;

static size_t vc_pow2(size_t x) {
    size_t p = 16;
    while (p < x) p <<= 1;
    return p;
}

static void vc_free(vc_state *s) {
    free(s->off); free(s->len); free(s->blob); free(s->seen); free(s->uniq);
    memset(s, 0, sizeof *s);
}

/* an int in 0..VC_MAX_ID, else -1 (an error set by the conversion is cleared: not verified) */
static long vc_id(PyObject *o) {
    if (!PyLong_Check(o)) return -1;
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) { PyErr_Clear(); return -1; }
    return v < 0 || v > (long)VC_MAX_ID ? -1 : v;
}

static int vc_append(vc_state *s, uint32_t id, const uint8_t *src, size_t n) {
    if (s->used + n > VC_MAX_BLOB) return -1;
    if (s->used + n > s->cap) {
        size_t cap = s->cap * 2 + n + 4096;
        uint8_t *p = realloc(s->blob, cap);
        if (!p) return -1;
        s->blob = p;
        s->cap = cap;
    }
    if (src) memcpy(s->blob + s->used, src, n);
    s->off[id] = (uint32_t)s->used;
    s->len[id] = (uint32_t)n;
    s->used += n;
    return 0;
}

/* 1 if (a, b) was seen before (and now is), 0 if new */
static int vc_seen(vc_state *s, uint32_t a, uint32_t b) {
    uint64_t key = ((uint64_t)a << 32 | b) + 1;
    for (size_t i = hash_pair(key) & s->seen_mask;; i = (i + 1) & s->seen_mask) {
        if (s->seen[i] == key) return 1;
        if (s->seen[i] == 0) { s->seen[i] = key; return 0; }
    }
}

/* 1 if another id already has the bytes of `id`, 0 after recording it */
static int vc_duplicate(vc_state *s, uint32_t id) {
    const uint8_t *k = s->blob + s->off[id];
    uint32_t n = s->len[id];
    for (size_t i = hash_bytes(k, n) & s->uniq_mask;; i = (i + 1) & s->uniq_mask) {
        uint32_t other = s->uniq[i];
        if (other == 0) { s->uniq[i] = id + 1; return 0; }
        other--;
        if (s->len[other] == n && memcmp(s->blob + s->off[other], k, n) == 0) return 1;
    }
}

/* 0: verified, and out_tokens/out_triples are set; 1: not verified; -1: a Python error */
static int vc_run(vc_state *s, int ranks, PyObject *seed, PyObject *merges, PyObject **out_tokens,
                  PyObject **out_triples) {
    if (!PyDict_Check(seed) || !PyList_Check(merges)) return 1;
    Py_ssize_t nm = PyList_GET_SIZE(merges), pos = 0;
    PyObject *key, *value;
    long max_id = -1;
    /* pass 1: the ids, as a flat triples buffer (what the engine and Vocabulary keep) */
    PyObject *triples = PyBytes_FromStringAndSize(NULL, nm * 12);
    if (!triples) return -1;
    uint32_t *t = (uint32_t *)PyBytes_AS_STRING(triples);
    for (Py_ssize_t i = 0; i < nm; i++) {
        PyObject *m = PyList_GET_ITEM(merges, i);
        if (!PyTuple_Check(m) || PyTuple_GET_SIZE(m) != 3) goto not_verified;
        for (int j = 0; j < 3; j++) {
            long v = vc_id(PyTuple_GET_ITEM(m, j));
            if (v < 0) goto not_verified;
            t[3 * i + j] = (uint32_t)v;
        }
        if ((long)t[3 * i + 2] > max_id) max_id = t[3 * i + 2];
    }
    while (PyDict_Next(seed, &pos, &key, &value)) {
        long v = vc_id(key);
        if (v < 0 || !PyBytes_Check(value) || PyBytes_GET_SIZE(value) == 0) goto not_verified;
        if (v > max_id) max_id = v;
    }
    size_t nid = (size_t)max_id + 1;
    s->off = malloc(nid * sizeof *s->off);
    s->len = calloc(nid, sizeof *s->len);
    s->seen_mask = vc_pow2((size_t)nm * 2 + 1) - 1;
    s->seen = calloc(s->seen_mask + 1, sizeof *s->seen);
    if (!s->off || !s->len || !s->seen) goto not_verified;
    pos = 0;
    while (PyDict_Next(seed, &pos, &key, &value))
        if (vc_append(s, (uint32_t)vc_id(key), (const uint8_t *)PyBytes_AS_STRING(value),
                      (size_t)PyBytes_GET_SIZE(value)))
            goto not_verified;
    /* pass 2: the rules of _check_merges, in its order of definition */
    long previous = -1;
    for (Py_ssize_t i = 0; i < nm; i++) {
        uint32_t a = t[3 * i], b = t[3 * i + 1], c = t[3 * i + 2];
        /* c <= max_id < nid; a and b are checked against nid first */
        if (a >= nid || b >= nid || s->len[a] == 0 || s->len[b] == 0)
            goto not_verified; /* a child not defined yet */
        if (vc_seen(s, a, b)) goto not_verified;                 /* the pair twice */
        if (ranks ? (long)c <= previous : (long)c != 256 + i) goto not_verified;
        if (s->len[c] != 0) goto not_verified;                   /* the new id already defined */
        size_t la = s->len[a], lb = s->len[b];
        if (vc_append(s, c, NULL, la + lb)) goto not_verified;   /* may move the blob: copy after */
        memmove(s->blob + s->off[c], s->blob + s->off[a], la);
        memmove(s->blob + s->off[c] + la, s->blob + s->off[b], lb);
        previous = c;
    }
    /* _check_unique_bytes (ranks): no two ids with the same bytes */
    if (ranks) {
        s->uniq_mask = vc_pow2((size_t)PyDict_GET_SIZE(seed) * 2 + (size_t)nm * 2 + 1) - 1;
        s->uniq = calloc(s->uniq_mask + 1, sizeof *s->uniq);
        if (!s->uniq) goto not_verified;
        for (size_t id = 0; id < nid; id++)
            if (s->len[id] && vc_duplicate(s, (uint32_t)id)) goto not_verified;
    }
    PyObject *tokens = PyList_New((Py_ssize_t)nid);
    if (!tokens) { Py_DECREF(triples); return -1; }
    for (size_t id = 0; id < nid; id++) {
        PyObject *item = Py_None;
        if (s->len[id]) {
            item = PyBytes_FromStringAndSize((const char *)s->blob + s->off[id], s->len[id]);
            if (!item) { Py_DECREF(tokens); Py_DECREF(triples); return -1; }
        } else {
            Py_INCREF(item);
        }
        PyList_SET_ITEM(tokens, (Py_ssize_t)id, item);
    }
    *out_tokens = tokens;
    *out_triples = triples;
    return 0;
not_verified:
    Py_DECREF(triples);
    return 1;
}

/* build_tokens(rule, seed, merges) -> (tokens by id, triples as bytes) | None */
static PyObject *native_build_tokens(PyObject *module, PyObject *args) {
    (void)module;
    const char *rule;
    PyObject *seed, *merges, *tokens = NULL, *triples = NULL;
    if (!PyArg_ParseTuple(args, "sOO", &rule, &seed, &merges)) return NULL;
    int ranks = strcmp(rule, "ranks") == 0;
    if (!ranks && strcmp(rule, "pairs") != 0) Py_RETURN_NONE;
    vc_state s = {0};
    int rc = vc_run(&s, ranks, seed, merges, &tokens, &triples);
    vc_free(&s);
    if (rc < 0) return NULL;
    if (rc > 0) Py_RETURN_NONE;
    PyObject *res = PyTuple_Pack(2, tokens, triples);
    Py_DECREF(tokens);
    Py_DECREF(triples);
    return res;
}
