/* The process's piece cache: the ids of pieces that are no token (so needed merging), kept across
   calls and shared by every engine of the process (an engine's serial number is part of the key).
   Included by _native.c only; the table's life (made, swapped, taken by calls, reseeded after a
   fork) is in piece_cache_life.h.

Layout: a power of two of buckets, each 8 ways of 128-byte entries behind one 64-byte header
(a try-lock, the fork generation, a 32-bit tag and a hit count per way, and 128 "seen" bits); a
piece maps to one bucket, so a flood of colliding pieces can at worst churn 8 entries, and a
look-up reads the header line and the entry that matched. A piece is kept if its bytes and its
ids (4 bytes each) fit in PC_PAYLOAD bytes (a 16-character CJK piece of 16 ids does); a hit
compares the engine and every byte, so it never gives another piece's ids.

Keys: a keyed multiply-fold hash of the bytes and the engine, with a 128-bit seed from the OS
(os.urandom when the table is made; getrandom/arc4random in a forked child), so nobody outside the
process can aim pieces at one bucket or at the sketch below.

Eviction survives scans (TinyLFU admission): a doorkeeper takes the first miss of a piece (a bit
of its bucket's header, which the look-up has just read, so a piece seen once costs one line and
no insert) and a blocked count-min sketch of 8-bit counters the misses after it; a new piece
takes an empty way, else the way with the fewest hits, and only if the piece has missed more
often than that way was hit. A flood of pieces seen once therefore displaces nothing. Every
10 x capacity misses (added up when a call is done) the sketch and the hit counts are halved and
the seen bits cleared, so yesterday's favourites age out.

Threads: encoding runs with the GIL released, so several threads may probe at once. Each bucket
has a try-lock; a thread that finds it taken treats the probe as a miss (and skips the insert):
nobody waits, and a bucket's entries and seen bits are only read or written under its lock.
Sketch counters are relaxed atomic loads and stores, not read-modify-writes (a lost update only
blurs a frequency). Statistics are summed per call and
added once per call. Reconfiguring swaps the table with the GIL held and waits for the calls still
using the old one (they took it with the GIL and give it back before they take the GIL again).

Fork: a child gets a new generation and a new seed (pthread_atfork): buckets of an older
generation read as empty, and a lock word from the parent (its generation's value) reads as free. */
#pragma once
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"

#define PC_WAYS 8
#define PC_PAYLOAD 120 /* an entry's bytes for the piece and then its ids */
#define PC_KEY (PC_PAYLOAD - 4)
#define PC_IDS (PC_PAYLOAD / 4)
#ifndef PC_MIN_PIECE
#define PC_MIN_PIECE 2
#endif

typedef struct {
    _Atomic uint32_t lock; /* == the holder's lock value (generation-derived) while held */
    uint32_t gen;          /* the generation the ways below belong to */
    uint32_t tag[PC_WAYS]; /* 0: empty way */
    uint8_t hits[PC_WAYS];
    uint64_t seen[2];      /* the doorkeeper: bit (h >> 8) & 127 of a piece that missed once */
} pc_head;

typedef struct {
    uint32_t engine;
    uint8_t len, nids, pad[2];
    uint8_t data[PC_PAYLOAD]; /* the piece's len bytes, then its nids ids (unaligned) */
} pc_entry;

typedef struct {
    pc_head h;
    pc_entry e[PC_WAYS];
} pc_bucket;

_Static_assert(sizeof(pc_head) == 64, "one header line");
_Static_assert(sizeof(pc_entry) == 128, "two lines an entry");
#define PC_BUCKET_BYTES (sizeof(pc_bucket) + 8 * PC_WAYS) /* + its sketch counters */

typedef struct {
    pc_bucket *buckets;
    size_t mask;               /* buckets - 1 */
    _Atomic uint8_t *sketch;   /* sketch_mask + 1 counters, in blocks of 64 */
    size_t sketch_mask;
    uint64_t age_every;        /* misses between two halvings */
    _Atomic uint64_t misses_since_age;
    _Atomic int aging;
    _Atomic long users;        /* calls holding this table */
    size_t nbytes, asked;       /* held; asked for (a same-size configure keeps the table) */
    uint64_t seed[2];
    _Atomic uint64_t hits, misses, inserts, refused, busy, entries;
} pc_table;

static _Atomic(pc_table *) g_pc;
static uint32_t g_pc_gen = 1; /* changes in a forked child only (one thread then) */
static _Atomic uint32_t g_engine_serial;

static inline uint64_t pc_fold(uint64_t a, uint64_t b) {
#ifdef __SIZEOF_INT128__
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
    uint64_t h = (a ^ (b >> 29)) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
    h = (h ^ b) * 0x94D049BB133111EBull;
    return h ^ (h >> 32);
#endif
}

static inline uint64_t pc_hash(const pc_table *t, const uint8_t *s, size_t n, uint32_t engine) {
    uint64_t k0 = t->seed[0], k1 = t->seed[1];
    uint64_t h = pc_fold(k0 ^ ((uint64_t)engine << 32 | n), k1 ^ 0x9E3779B97F4A7C15ull);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = pc_fold(w ^ k0, h ^ k1);
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, s, n);
        h = pc_fold(w ^ k1, h ^ k0 ^ n);
    }
    return pc_fold(h ^ k0, 0xD6E8FEB86659FD93ull ^ k1);
}

static inline uint32_t pc_lock_value(void) { return g_pc_gen * 2 + 1; }

static inline int pc_try_lock(pc_head *hd) {
    uint32_t mine = pc_lock_value();
    uint32_t v = atomic_load_explicit(&hd->lock, memory_order_relaxed);
    if (v == mine) return 0;
    return atomic_compare_exchange_strong_explicit(&hd->lock, &v, mine, memory_order_acquire,
                                                   memory_order_relaxed);
}

static inline void pc_unlock(pc_head *hd) {
    atomic_store_explicit(&hd->lock, 0, memory_order_release);
}

/* under the lock: a bucket of an older generation (before a fork) is empty */
static inline void pc_own(pc_head *hd) {
    if (hd->gen == g_pc_gen) return;
    memset(hd->tag, 0, sizeof hd->tag);
    memset(hd->hits, 0, sizeof hd->hits);
    memset(hd->seen, 0, sizeof hd->seen);
    hd->gen = g_pc_gen;
}

/* per call: what the probes saw, added to the table once at the end */
typedef struct {
    uint64_t hits, misses, inserts, refused, busy;
} pc_tally;

/* the ids of piece s[0:n] of `engine` into ids (PC_IDS of room): their number, or -1 with
   *first set if this is the piece's first miss (or the bucket was busy): not worth an insert */
static int pc_get(pc_table *t, uint32_t engine, const uint8_t *s, size_t n, uint64_t h,
                  uint32_t *ids, pc_tally *tally, int *first) {
    pc_bucket *b = &t->buckets[(h >> 32) & t->mask];
    uint32_t tag = (uint32_t)h | 1;
    *first = 1;
    if (!pc_try_lock(&b->h)) { tally->busy++; return -1; }
    int found = -1;
    pc_own(&b->h);
    for (int w = 0; w < PC_WAYS; w++) {
        if (b->h.tag[w] != tag) continue;
        const pc_entry *e = &b->e[w];
        if (e->engine != engine || e->len != n || memcmp(e->data, s, n) != 0) continue;
        memcpy(ids, e->data + n, e->nids * sizeof *ids);
        found = e->nids;
        if (b->h.hits[w] < 255) b->h.hits[w]++;
        break;
    }
    if (found < 0) {
        uint64_t *word = &b->h.seen[(h >> 14) & 1], bit = (uint64_t)1 << ((h >> 8) & 63);
        *first = !(*word & bit);
        *word |= bit;
    }
    pc_unlock(&b->h);
    if (found >= 0) {
        tally->hits++;
    } else {
        tally->misses++;
        tally->refused += (uint64_t)*first; /* a first miss is noted, not inserted */
    }
    return found;
}

/* how often the piece of hash h missed after its first, this one counted (the doorkeeper took
   the first; a flood of pieces seen once stays out of the sketch) */
static uint32_t pc_sketch_count(pc_table *t, uint64_t h) {
    uint64_t m = h * 0x9E3779B97F4A7C15ull;
    size_t block = (size_t)(m >> 40) & t->sketch_mask & ~(size_t)63;
    uint32_t est = 255;
    for (int i = 0; i < 4; i++) {
        _Atomic uint8_t *c = &t->sketch[block | ((h >> (i * 6)) & 63)];
        uint8_t v = atomic_load_explicit(c, memory_order_relaxed);
        if (v < 255) atomic_store_explicit(c, (uint8_t)(v + 1), memory_order_relaxed);
        uint32_t now = v < 255 ? v + 1u : 255u;
        est = now < est ? now : est;
    }
    return est; /* the first miss is not counted: the seen bits of a bucket saturate under a
                   flood, so a piece of the flood may pass them, but seldom the sketch too */
}

/* halve every sketch counter and every hit count, clear the seen bits (one thread at a time; a
   bucket whose lock is taken keeps its counts this round) */
static void pc_age(pc_table *t) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&t->aging, &expected, 1)) return;
    for (size_t i = 0; i <= t->sketch_mask; i++) {
        uint8_t v = atomic_load_explicit(&t->sketch[i], memory_order_relaxed);
        atomic_store_explicit(&t->sketch[i], (uint8_t)(v >> 1), memory_order_relaxed);
    }
    for (size_t i = 0; i <= t->mask; i++) {
        pc_head *hd = &t->buckets[i].h;
        if (!pc_try_lock(hd)) continue;
        if (hd->gen == g_pc_gen) {
            for (int w = 0; w < PC_WAYS; w++) hd->hits[w] >>= 1;
            memset(hd->seen, 0, sizeof hd->seen);
        }
        pc_unlock(hd);
    }
    atomic_store(&t->aging, 0);
}

static void pc_put(pc_table *t, uint32_t engine, const uint8_t *s, size_t n, uint64_t h,
                   const uint32_t *ids, size_t nids, pc_tally *tally) {
    uint32_t freq = pc_sketch_count(t, h);
    pc_bucket *b = &t->buckets[(h >> 32) & t->mask];
    if (!pc_try_lock(&b->h)) { tally->busy++; return; }
    pc_own(&b->h);
    int way = -1;
    for (int w = 0; w < PC_WAYS && way < 0; w++)
        if (b->h.tag[w] == 0) way = w;
    int fresh = way >= 0;
    if (!fresh) {
        way = (int)(h & (PC_WAYS - 1)); /* the first of the least hit ways from a keyed start */
        for (int i = 1; i < PC_WAYS; i++) {
            int w = (int)((h + (uint64_t)i) & (PC_WAYS - 1));
            if (b->h.hits[w] < b->h.hits[way]) way = w;
        }
        if (freq <= b->h.hits[way]) {
            pc_unlock(&b->h);
            tally->refused++;
            return;
        }
    }
    pc_entry *e = &b->e[way];
    e->engine = engine;
    e->len = (uint8_t)n;
    e->nids = (uint8_t)nids;
    memcpy(e->data, s, n);
    memcpy(e->data + n, ids, nids * sizeof *ids);
    b->h.tag[way] = (uint32_t)h | 1;
    b->h.hits[way] = 0;
    pc_unlock(&b->h);
    tally->inserts++;
    if (fresh) atomic_fetch_add_explicit(&t->entries, 1, memory_order_relaxed);
}
