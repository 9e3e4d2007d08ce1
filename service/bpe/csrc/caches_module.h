/* The module's functions for the process's two caches (piece_cache.h, hot_pieces.h): set their
   size and seed, report what they hold and have seen, and start them anew in a forked child.
   Included by _native.c only. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "engine.h"

/* (nbytes, seed) of piece_cache and hot_pieces: 0, or -1 with an exception set */
static int size_and_seed(PyObject *args, Py_ssize_t *nbytes, uint64_t key[2]) {
    Py_buffer seed;
    if (!PyArg_ParseTuple(args, "ny*", nbytes, &seed)) return -1;
    int ok = *nbytes >= 0 && seed.len == 16;
    if (ok) memcpy(key, seed.buf, 2 * sizeof *key);
    PyBuffer_Release(&seed);
    if (!ok) PyErr_SetString(PyExc_ValueError, "nbytes must be >= 0 and seed 16 bytes");
    return ok ? 0 : -1;
}

/* piece_cache(nbytes, seed): the process's piece cache at most nbytes (0: none); seed, 16 bytes
   from the OS, keys a new table. The same nbytes again keeps the table and what it holds. */
static PyObject *native_piece_cache(PyObject *module, PyObject *args) {
    (void)module;
    Py_ssize_t nbytes;
    uint64_t key[2];
    if (size_and_seed(args, &nbytes, key)) return NULL;
    pc_table *now = atomic_load(&g_pc);
    if (now ? now->asked == (size_t)nbytes : nbytes == 0) Py_RETURN_NONE;
    pc_table *t = NULL;
    if (nbytes > 0 && !(t = pc_new((size_t)nbytes, key))) {
        if ((size_t)nbytes >= PC_BUCKET_BYTES) return PyErr_NoMemory();
    }
    pc_swap(t);
    Py_RETURN_NONE;
}

/* piece_cache_stats(): the cache's size and what it has seen in this process (since a fork) */
static PyObject *native_piece_cache_stats(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    pc_table *t = atomic_load(&g_pc);
    if (!t) return Py_BuildValue("{s:n,s:n,s:i,s:i,s:i,s:i,s:i,s:i}", "capacity_bytes",
                                 (Py_ssize_t)0, "capacity_entries", (Py_ssize_t)0, "entries", 0,
                                 "hits", 0, "misses", 0, "inserts", 0, "refused", 0, "busy", 0);
    return Py_BuildValue(
        "{s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:K}", "capacity_bytes", (Py_ssize_t)t->nbytes,
        "capacity_entries", (Py_ssize_t)((t->mask + 1) * PC_WAYS), "entries",
        (unsigned long long)atomic_load(&t->entries), "hits",
        (unsigned long long)atomic_load(&t->hits), "misses",
        (unsigned long long)atomic_load(&t->misses), "inserts",
        (unsigned long long)atomic_load(&t->inserts), "refused",
        (unsigned long long)atomic_load(&t->refused), "busy",
        (unsigned long long)atomic_load(&t->busy));
}

/* hot_pieces(nbytes, seed): every engine's table of hot pieces at most nbytes (0, or less than
   one group of sets, HOT_SET_BYTES: off); seed, 16 bytes from the OS, keys the tables (each is keyed anew
   when next used). Tables of another size are made anew on their next use. */
static PyObject *native_hot_pieces(PyObject *module, PyObject *args) {
    (void)module;
    Py_ssize_t nbytes;
    uint64_t key[2];
    if (size_and_seed(args, &nbytes, key)) return NULL;
    atomic_store(&g_hot_seed[0], key[0]);
    atomic_store(&g_hot_seed[1], key[1]);
    atomic_store(&g_hot_bytes, (size_t)nbytes);
    Py_RETURN_NONE;
}

/* hot_pieces_stats(): the tables held and what every engine's hot pieces have seen */
static PyObject *native_hot_pieces_stats(PyObject *module, PyObject *unused) {
    (void)module;
    (void)unused;
    return Py_BuildValue("{s:n,s:K,s:K,s:K,s:K,s:K}", "table_bytes",
                         (Py_ssize_t)atomic_load(&g_hot_bytes),
                         "tables", (unsigned long long)atomic_load(&g_hot_tables), "held_bytes",
                         (unsigned long long)atomic_load(&g_hot_held), "hits",
                         (unsigned long long)atomic_load(&g_hot_hits), "misses",
                         (unsigned long long)atomic_load(&g_hot_misses), "inserts",
                         (unsigned long long)atomic_load(&g_hot_inserts));
}

static void after_fork_child(void) {
    pc_after_fork_child();
    hot_after_fork_child();
}
