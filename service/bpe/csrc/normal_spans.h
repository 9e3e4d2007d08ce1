/* normal_spans.h: the stretches of a text that NFC (or NFKC) may change, for
   service/bpe/pipeline/normal_forms.py, which normalizes only those with `unicodedata` and keeps the rest.

   The quick check of UAX #15 over the str's own storage, with the combining classes and quick-check
   values of normal_tables.h (generated from Python's unicodedata, its version in
   NORMAL_UNICODE_VERSION). A character is *bad* if its quick check is not YES, or if it is a
   non-starter whose class is below the one before it (out of canonical order); but a MAYBE
   character (one that may compose with the starter before it) right after a boundary without a
   decomposition is not, unless the two are a pair NFC composes (nf_pairs): normalizing keeps
   them as they are (a nukta after most Devanagari letters). A *boundary* is a YES character of
   class 0: its decomposition starts with a starter that composes with nothing before it, so
   normalize(x + y) == normalize(x) + normalize(y) whenever y starts with one. A bad character
   makes the span from the last boundary at or before it to the next boundary after it (or the
   end); spans fewer than NF_GAP characters apart are one. The text outside the spans is in the
   form. setup.py may point NORMAL_TABLES_HEADER at tables generated for the building Python (the
   committed header otherwise). */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#ifdef NORMAL_TABLES_HEADER
#include NORMAL_TABLES_HEADER
#else
#include "normal_tables.h"
#endif

/* Spans closer than this are one: the characters between (in the form, and starting at a
   boundary, as the next span does) cost less to normalize with them than a call costs. */
#define NF_GAP 8
/* More spans than one per this many characters and the text is normalized whole: a span costs
   300-800 ns (two slices, a call of unicodedata.normalize, its share of the join), a character
   of a whole normalization about 13 ns, so spans denser than this cost more than the whole (a
   composing mark every 12 characters, 2 MB: 56 ms span by span, 26 ms whole). */
#ifndef NF_DENSE
#define NF_DENSE 32
#endif

/* spans as flat (start, end) pairs of code point indices */
typedef struct {
    Py_ssize_t *at;
    size_t len, cap;
} nf_spans_t;

static int nf_push(nf_spans_t *s, Py_ssize_t start, Py_ssize_t end) {
    if (s->len && start - s->at[s->len - 1] < NF_GAP) {  /* near the last span: one span */
        s->at[s->len - 1] = end;
        return 0;
    }
    if (s->len + 2 > s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        Py_ssize_t *grown = PyMem_Realloc(s->at, cap * sizeof *grown);
        if (!grown) return -1;
        s->at = grown;
        s->cap = cap;
    }
    s->at[s->len++] = start;
    s->at[s->len++] = end;
    return 0;
}

#define NF_READ(i) PyUnicode_READ(kind, data, (i))
#define NF_AT(i) nf_order[form][nf_kind(NF_READ(i))]

/* whether NFC composes the two characters into one (nf_pairs is in order) */
static int nf_composes(uint32_t first, uint32_t second) {
    uint64_t key = (uint64_t)second << 21 | first;
    size_t lo = 0, hi = sizeof nf_pairs / sizeof *nf_pairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (nf_pairs[mid] < key) lo = mid + 1;
        else hi = mid;
    }
    return lo < sizeof nf_pairs / sizeof *nf_pairs && nf_pairs[lo] == key;
}

/* form: 0 NFC, 1 NFKC; kind is a constant at each call, so each kind gets its own loop. The loop
   makes one comparison a character (its order against the class before it); a MAYBE character
   is then looked at more closely, and a span's start is looked for backwards from its bad
   character, down to the last span's end at most. */
static inline int nf_scan(int kind, const void *data, Py_ssize_t n, int form, nf_spans_t *out) {
    Py_ssize_t floor = 0;  /* the last span's end (a boundary), or 0 */
    int last_ccc = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int order = NF_AT(i);
        if (__builtin_expect(last_ccc <= order, 1)) {  /* the loop falls through here */
            last_ccc = order & 255;
            continue;
        }
        if (order == NF_MAYBE && i > 0 && NF_AT(i - 1) == NF_BOUNDARY &&
            !nf_composes(NF_READ(i - 1), NF_READ(i))) {
            last_ccc = nf_ccc[nf_kind(NF_READ(i))];
            continue;
        }
        Py_ssize_t start = i;  /* bad: the span is [last boundary <= i, next boundary > i) */
        while (start > floor && NF_AT(start) < NF_BOUNDARY) start--;
        do i++; while (i < n && NF_AT(i) < NF_BOUNDARY);
        if (nf_push(out, start, i)) return -1;
        floor = i;
        last_ccc = 0;  /* i is that boundary, or the end */
    }
    return 0;
}

/* the most characters in a row that are no boundary of the form */
static inline Py_ssize_t nf_longest(int kind, const void *data, Py_ssize_t n, int form) {
    Py_ssize_t run = 0, longest = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        run = NF_AT(i) < NF_BOUNDARY ? run + 1 : 0;
        if (run > longest) longest = run;
    }
    return longest;
}

#undef NF_AT
#undef NF_READ

/* the arguments (form, text): the form (0 NFC, 1 NFKC) and *text, else -1 with an error set */
static int nf_args(PyObject *args, PyObject **text) {
    const char *name;
    if (!PyArg_ParseTuple(args, "sU", &name, text)) return -1;
    int form = !strcmp(name, "NFC") ? 0 : !strcmp(name, "NFKC") ? 1 : -1;
    if (form < 0) PyErr_SetString(PyExc_ValueError, "form must be NFC or NFKC");
    return form;
}

/* normal_longest_run(form, text): the most characters in a row of text that are no boundary of
   the form. CPython puts the marks of such a run in canonical order by an insertion sort, whose
   cost grows with the square of the run's length when it is out of order; normalforms.py orders a
   long run itself first. */
static PyObject *native_normal_longest_run(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *text;
    int form = nf_args(args, &text);
    if (form < 0) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t longest = kind == PyUnicode_1BYTE_KIND   ? nf_longest(PyUnicode_1BYTE_KIND, data, n, form)
                         : kind == PyUnicode_2BYTE_KIND ? nf_longest(PyUnicode_2BYTE_KIND, data, n, form)
                                                        : nf_longest(PyUnicode_4BYTE_KIND, data, n, form);
    return PyLong_FromSsize_t(longest);
}

#define NF_SHORT_RUN 32 /* runs up to this long are sorted in place, longer ones by counting */

/* normal_ordered(text): text with every run of non-starters (class above 0) stably sorted by
   class, which is canonical ordering when text is fully decomposed; a counting sort for a long
   run, so the whole costs O(n) */
static PyObject *native_normal_ordered(PyObject *module, PyObject *text) {
    (void)module;
    if (!PyUnicode_Check(text)) {
        PyErr_SetString(PyExc_TypeError, "text must be a str");
        return NULL;
    }
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (n < 2) return Py_NewRef(text);
    Py_UCS4 *buf = PyUnicode_AsUCS4Copy(text), *tmp = PyMem_Malloc((size_t)n * sizeof *tmp);
    if (!buf || !tmp) {
        PyMem_Free(buf);
        PyMem_Free(tmp);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && nf_ccc[nf_kind(buf[j])]; j++) {}
        if (j == i) { j++; continue; } /* a starter */
        if (j - i <= NF_SHORT_RUN) { /* insertion sort: stable */
            for (Py_ssize_t k = i + 1; k < j; k++) {
                Py_UCS4 c = buf[k];
                uint8_t cc = nf_ccc[nf_kind(c)];
                Py_ssize_t m = k;
                for (; m > i && nf_ccc[nf_kind(buf[m - 1])] > cc; m--) buf[m] = buf[m - 1];
                buf[m] = c;
            }
            continue;
        }
        size_t at[257] = {0}; /* counting sort: stable */
        for (Py_ssize_t k = i; k < j; k++) at[nf_ccc[nf_kind(buf[k])] + 1]++;
        for (int c = 1; c < 257; c++) at[c] += at[c - 1];
        for (Py_ssize_t k = i; k < j; k++) tmp[at[nf_ccc[nf_kind(buf[k])]]++] = buf[k];
        memcpy(buf + i, tmp, (size_t)(j - i) * sizeof *buf);
    }
    PyObject *out = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buf, n);
    PyMem_Free(buf);
    PyMem_Free(tmp);
    return out;
}

/* normal_parts(form, text): None if text is in the form, else the list [kept, span, kept, span,
   ..., kept] of text cut at the spans' ends (the kept parts in the form, maybe empty) */
static PyObject *native_normal_parts(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *text;
    int form = nf_args(args, &text);
    if (form < 0) return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (kind == PyUnicode_1BYTE_KIND && nf_first_unstable[form] > 0xFF) Py_RETURN_NONE;
    nf_spans_t spans = {NULL, 0, 0};
    int rc = kind == PyUnicode_1BYTE_KIND   ? nf_scan(PyUnicode_1BYTE_KIND, data, n, form, &spans)
             : kind == PyUnicode_2BYTE_KIND ? nf_scan(PyUnicode_2BYTE_KIND, data, n, form, &spans)
                                            : nf_scan(PyUnicode_4BYTE_KIND, data, n, form, &spans);
    if (rc) {
        PyMem_Free(spans.at);
        return PyErr_NoMemory();
    }
    if (!spans.len) Py_RETURN_NONE;
    if ((Py_ssize_t)(spans.len / 2) > n / NF_DENSE) { /* one span: the whole text */
        spans.len = 2;
        spans.at[0] = 0;
        spans.at[1] = n;
    }
    PyObject *parts = PyList_New((Py_ssize_t)spans.len + 1);
    for (size_t j = 0; parts && j <= spans.len; j++) {
        Py_ssize_t from = j ? spans.at[j - 1] : 0, to = j < spans.len ? spans.at[j] : n;
        PyObject *part = PyUnicode_Substring(text, from, to);
        if (!part) Py_CLEAR(parts);
        else PyList_SET_ITEM(parts, (Py_ssize_t)j, part);
    }
    PyMem_Free(spans.at);
    return parts;
}
