/* The process's one piece cache (piece_cache.h) over its life: made and swapped in by
   configure (with the GIL held), taken and given back by each call, freed once no call uses it,
   and given a new generation and seed in a forked child. Included by _native.c only (through
   hot_pieces.h, which takes its seeds from the OS the same way). */
#pragma once
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/random.h>
#endif

#include "piece_cache.h"

/* with the GIL held: the table calls may use until pc_release (NULL: no cache) */
static pc_table *pc_acquire(void) {
    pc_table *t = atomic_load(&g_pc);
    if (t) atomic_fetch_add(&t->users, 1);
    return t;
}

/* with or without the GIL: the call is done with the table; its tally goes in */
static void pc_release(pc_table *t, const pc_tally *tally) {
    if (!t) return;
    atomic_fetch_add_explicit(&t->hits, tally->hits, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->misses, tally->misses, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->inserts, tally->inserts, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->refused, tally->refused, memory_order_relaxed);
    atomic_fetch_add_explicit(&t->busy, tally->busy, memory_order_relaxed);
    /* the misses of a call count towards the next aging once the call is done */
    if (tally->misses &&
        atomic_fetch_add_explicit(&t->misses_since_age, tally->misses, memory_order_relaxed) +
                tally->misses >= t->age_every) {
        atomic_store_explicit(&t->misses_since_age, 0, memory_order_relaxed);
        pc_age(t);
    }
    atomic_fetch_sub(&t->users, 1);
}

static void pc_free(pc_table *t) {
    if (!t) return;
    free(t->buckets);
    free((void *)t->sketch);
    free(t);
}

/* a table of at most nbytes (buckets and sketch), NULL if nbytes is too small or no memory */
static pc_table *pc_new(size_t nbytes, const uint64_t seed[2]) {
    size_t nb = 1;
    /* per bucket: the bucket and 8 sketch counters a way */
    while ((nb * 2) * PC_BUCKET_BYTES <= nbytes) nb *= 2;
    if (nb * PC_BUCKET_BYTES > nbytes) return NULL;
    pc_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->mask = nb - 1;
    t->sketch_mask = nb * 8 * PC_WAYS - 1; /* a power of two, at least 64 */
    /* touched now (zeroed), not page by page while encoding: the table is part of start-up, and
       with huge pages where the system lends them on request, a probe rarely misses the TLB */
    size_t bytes = nb * sizeof *t->buckets, align = (size_t)2 << 20;
    t->buckets = aligned_alloc(align, (bytes + align - 1) / align * align);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (t->buckets) madvise(t->buckets, (bytes + align - 1) / align * align, MADV_HUGEPAGE);
#endif
    if (t->buckets) memset(t->buckets, 0, bytes);
    t->sketch = calloc(t->sketch_mask + 1, 1);
    if (!t->buckets || !t->sketch) { pc_free(t); return NULL; }
    t->age_every = (uint64_t)nb * PC_WAYS * 10;
    t->nbytes = nb * PC_BUCKET_BYTES;
    t->asked = nbytes;
    t->seed[0] = seed[0];
    t->seed[1] = seed[1];
    return t;
}

/* with the GIL held: the new table (or none), after every call using the old one is done */
static void pc_swap(pc_table *t) {
    pc_table *old = atomic_exchange(&g_pc, t);
    if (!old) return;
    while (atomic_load(&old->users) > 0) {
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    pc_free(old);
}

/* a new seed from the OS (in a forked child); without OS randomness, `seed` mixed with what
   differs between children (weaker, never fails) */
static void pc_seed_from_os(uint64_t seed[2]) {
    uint64_t fresh[2] = {0, 0};
    int ok = 0;
#if defined(__linux__)
    ok = getrandom(fresh, sizeof fresh, GRND_NONBLOCK) == (ssize_t)sizeof fresh;
#elif defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || defined(__NetBSD__)
    arc4random_buf(fresh, sizeof fresh);
    ok = 1;
#endif
    if (!ok) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        fresh[0] = seed[0] ^ pc_fold((uint64_t)getpid(), (uint64_t)now.tv_nsec | 1);
        fresh[1] = seed[1] ^ pc_fold((uint64_t)now.tv_sec, (uint64_t)(uintptr_t)&now | 1);
    }
    seed[0] = fresh[0];
    seed[1] = fresh[1];
}

static void pc_reseed_from_os(pc_table *t) { pc_seed_from_os(t->seed); }

/* in the child of a fork (one thread): a new generation (older buckets read as empty, lock words
   of the parent read as free), a new seed, and no call holds the table */
static void pc_after_fork_child(void) {
    g_pc_gen = g_pc_gen + 1 ? g_pc_gen + 1 : 1;
    pc_table *t = atomic_load(&g_pc);
    if (t) {
        pc_reseed_from_os(t);
        atomic_store(&t->users, 0);
        atomic_store(&t->hits, 0);
        atomic_store(&t->misses, 0);
        atomic_store(&t->inserts, 0);
        atomic_store(&t->refused, 0);
        atomic_store(&t->busy, 0);
        atomic_store(&t->misses_since_age, 0);
        atomic_store(&t->aging, 0);
        atomic_store(&t->entries, 0);
        memset((void *)t->sketch, 0, t->sketch_mask + 1);
    }
}
