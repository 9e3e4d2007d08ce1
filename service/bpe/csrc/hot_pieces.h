/* An engine's hot pieces: the ids of the short pieces it cuts most often, kept across calls in a
   small table of its own, probed before every other path (the vocabulary's table, the call's
   memo, the merges). Included by engine.h only.

Layout: two kinds of sets in one block. A piece of at most 8 bytes that is one token (most of
them: 85% of the pieces of English prose or code) goes to a set of four 16-byte entries, one line
(its bytes as a zero-padded word, its length, its id, a use count); any other piece of up to
HOT_KEY bytes goes to a set of two 64-byte entries (its bytes as three zero-padded words, its
length, up to HOT_IDS ids, a use count). A piece maps to its sets by a hash keyed with a random
seed of the process, so nobody outside can aim pieces at one set. A hit compares every byte and
never gives another piece's ids. There are as many large entries as small ones (640 KiB by
default: 8,192 of each): a large one costs four times the bytes, but its hit saves a merge
(200-1,500 ns) where a small one saves one look-up of the vocabulary (about 40 ns), and the
small entries, probed most, stay within 128 KiB of the core's cache. The block comes zeroed from
calloc, so pages no piece has reached usually take no memory.

Admission survives scans: a miss takes an empty way or a way whose count is 0; when every way of
its set is in use it only lowers their counts by one and waits. A hit raises its way's count
(to 255), so a piece read more often than its set sees new pieces stays, and a flood of pieces
seen once only wears the counts down (each costs a probe, never an eviction of a hot piece that
is still being read).

Beside it the table keeps the backtracking encoder's answers for pairs of tokens (a bk_memo of
backtrack.h, 256 KiB of zeroed pages), so a call does not make and clear its own and the answers
outlive it.

Threads: a call takes its engine's table with a try-lock (one compare-and-swap per call, none per
piece); a call that finds it taken runs without it. Fork: the lock word holds a value of the
process's generation (piece_cache.h's), so a table a thread of the parent held reads as free in
the child, which takes a new seed from the OS; a table of an older generation is cleared and
keyed with it before use. */
#pragma once
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backtrack.h"
#include "merge.h"
#include "piece_cache.h"
#include "piece_cache_life.h" /* the generation and the OS seeds */

#define HOT_KEY 24 /* bytes of a piece it keeps, at most */
#define HOT_IDS 9  /* ids of a piece it keeps, at most */

typedef struct {
    uint64_t key[3];                  /* the piece's bytes, zero-padded */
    uint8_t len, nids, freq, has_ids; /* len 0: empty; has_ids 0: its count only (a count call) */
    uint32_t ids[HOT_IDS];
} hot_entry;
_Static_assert(sizeof(hot_entry) == 64, "one line an entry");

/* a piece's bytes as three zero-padded words (read with plain loads when 8 bytes past each word
   are in the text, else byte by byte) */
typedef struct {
    uint64_t w[3];
} hot_key;

static inline uint64_t hot_word(const uint8_t *s, size_t from, size_t n, size_t room) {
    if (from >= n) return 0;
    uint64_t w = 0;
    size_t k = n - from;
    if (k >= 8) { memcpy(&w, s + from, 8); return w; }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (room >= from + 8) { /* one load, then the first k bytes (the low ones) */
        memcpy(&w, s + from, 8);
        return w & ((1ull << (8 * k)) - 1);
    }
#else
    (void)room;
#endif
    memcpy(&w, s + from, k); /* the same word as the load and mask above, in either byte order */
    return w;
}

/* the key of piece s[0:n], `room` bytes readable from s (n <= room) */
static inline hot_key hot_key_of(const uint8_t *s, size_t n, size_t room) {
    hot_key k = {{hot_word(s, 0, n, room), 0, 0}};
    if (n > 8) k.w[1] = hot_word(s, 8, n, room);
    if (n > 16) k.w[2] = hot_word(s, 16, n, room);
    return k;
}

/* a piece of at most 8 bytes that is one token: four to a line */
typedef struct {
    uint64_t key;          /* its bytes, zero-padded */
    uint32_t id;
    uint8_t len, freq, pad[2]; /* len 0: empty */
} hot_small;
_Static_assert(sizeof(hot_small) == 16, "four to a line");

typedef struct {
    void *block;    /* what e and sm are carved from (zeroed by calloc) */
    hot_entry *e;   /* HOT_LARGE (mask + 1) sets of two entries, then */
    hot_small *sm;  /* 2 (mask + 1) sets of four small entries, in the same block */
    bk_memo *pairs; /* the backtracking encoder's answers for pairs of tokens (backtrack.h) */
    size_t mask, nbytes;
    uint32_t gen; /* the fork generation its entries and seed belong to */
    uint64_t seed[2];
    uint64_t hits, misses, inserts; /* of the call holding it, added up when it is given back */
} hot_table;

/* what every table of the process asks for (0: none), its seed, and the counters of them all */
static _Atomic size_t g_hot_bytes;
static _Atomic uint64_t g_hot_seed[2];
static _Atomic uint64_t g_hot_hits, g_hot_misses, g_hot_inserts, g_hot_tables, g_hot_held;

#define HOT_LARGE 4 /* sets of large entries for each two sets of small ones */
/* the bytes of HOT_LARGE sets of large entries and the two sets of small ones that go with them */
#define HOT_SET_BYTES (HOT_LARGE * 2 * sizeof(hot_entry) + 2 * 4 * sizeof(hot_small))

/* the bytes of a table of at most nbytes (at least one group): a power of two of groups of sets */
static size_t hot_new_size(size_t nbytes) {
    size_t sets = 1;
    while ((sets * 2) * HOT_SET_BYTES <= nbytes) sets *= 2;
    return sets * HOT_SET_BYTES;
}

/* a table of at most nbytes (at least one group of sets), empty; NULL without memory */
static hot_table *hot_new(size_t nbytes) {
    hot_table *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->nbytes = hot_new_size(nbytes);
    /* zeroed by calloc (a block this large usually comes from the system mapped anew, its pages
       taking memory only as pieces reach them); entries start on a line */
    t->block = calloc(1, t->nbytes + 128);
    if (!t->block) { free(t); return NULL; }
    t->pairs = bk_memo_new(BK_MEMO_LOG2);
    if (!t->pairs) { free(t->block); free(t); return NULL; }
    t->e = (hot_entry *)(((uintptr_t)t->block + 127) & ~(uintptr_t)127);
    t->mask = t->nbytes / HOT_SET_BYTES - 1;
    t->sm = (hot_small *)(t->e + 2 * HOT_LARGE * (t->mask + 1));
    t->gen = 0; /* keyed on first use (its entries are empty already) */
    atomic_fetch_add(&g_hot_tables, 1);
    atomic_fetch_add(&g_hot_held, t->nbytes + bk_memo_bytes(BK_MEMO_LOG2));
    return t;
}

static void hot_free(hot_table *t) {
    if (!t) return;
    atomic_fetch_sub(&g_hot_tables, 1);
    atomic_fetch_sub(&g_hot_held, t->nbytes + bk_memo_bytes(BK_MEMO_LOG2));
    free(t->pairs);
    free(t->block);
    free(t);
}

static inline uint64_t hot_hash(const hot_table *t, const hot_key *k, size_t n) {
    uint64_t h = pc_fold(k->w[0] ^ t->seed[0], n ^ t->seed[1]);
    if (n > 8) h = pc_fold(k->w[1] ^ t->seed[1], h ^ 0x9E3779B97F4A7C15ull);
    if (n > 16) h = pc_fold(k->w[2] ^ t->seed[0], h ^ 0xD6E8FEB86659FD93ull);
    return h;
}

static inline int hot_same(const hot_entry *e, const hot_key *k, size_t n) {
    return e->len == n && e->key[0] == k->w[0] && e->key[1] == k->w[1] && e->key[2] == k->w[2];
}

/* the set of two large entries, and the set of four small ones, of a piece with hash h */
static inline hot_entry *hot_set(const hot_table *t, uint64_t h) {
    return &t->e[2 * ((h >> 20) & (HOT_LARGE * (t->mask + 1) - 1))];
}

static inline hot_small *hot_small_set(const hot_table *t, uint64_t h) {
    return &t->sm[4 * ((h >> 40) & (2 * t->mask + 1))];
}

/* the entry of the piece with key k and hash h, or NULL */
static inline hot_entry *hot_find(hot_table *t, const hot_key *k, size_t n, uint64_t h) {
    hot_entry *set = hot_set(t, h);
    if (hot_same(&set[0], k, n)) return &set[0];
    if (hot_same(&set[1], k, n)) return &set[1];
    return NULL;
}

/* the small entry of the one-token piece of n <= 8 bytes `key` (hash h), or NULL */
static inline hot_small *hot_small_find(hot_table *t, uint64_t key, size_t n, uint64_t h) {
    hot_small *set = hot_small_set(t, h);
    for (int w = 0; w < 4; w++)
        if (set[w].key == key && set[w].len == n) return &set[w];
    return NULL;
}

/* keep the one-token piece of n <= 8 bytes `key` (as hot_put keeps the others) */
static inline void hot_small_put(hot_table *t, uint64_t key, size_t n, uint64_t h, uint32_t id) {
    hot_small *set = hot_small_set(t, h), *e = &set[0];
    for (int w = 1; w < 4; w++)
        if (set[w].freq < e->freq || (!set[w].len && e->len)) e = &set[w];
    if (e->len && e->freq) {
        for (int w = 0; w < 4; w++) set[w].freq -= set[w].freq > 0;
        return;
    }
    *e = (hot_small){key, id, (uint8_t)n, 1, {0, 0}};
    t->inserts++;
}

/* keep the piece with key k, n bytes, and its nids ids (ids NULL: its count only) */
static inline void hot_put(hot_table *t, const hot_key *k, size_t n, uint64_t h,
                           const uint32_t *ids, size_t nids) {
    if (nids > HOT_IDS) return;
    hot_entry *set = hot_set(t, h);
    hot_entry *e = set[0].freq <= set[1].freq ? &set[0] : &set[1];
    if (e->len && e->freq) { /* both ways in use: they age, the new piece waits */
        set[0].freq -= set[0].freq > 0;
        set[1].freq -= set[1].freq > 0;
        return;
    }
    memcpy(e->key, k->w, sizeof e->key);
    e->len = (uint8_t)n;
    e->nids = (uint8_t)nids;
    e->freq = 1;
    e->has_ids = ids != NULL;
    if (ids) memcpy(e->ids, ids, nids * sizeof *ids);
    t->inserts++;
}

/* Take the table behind `slot` (an engine's) for one call: made on first use, cleared and keyed
   anew in a new generation (after a fork). NULL: hot pieces are off, no memory, or another call
   holds it (that call's lock value is this generation's). Give it back with hot_give. */
static hot_table *hot_take(hot_table **slot, _Atomic uint32_t *lock) {
    size_t want = atomic_load_explicit(&g_hot_bytes, memory_order_relaxed);
    if (want < HOT_SET_BYTES) return NULL; /* off, or less than one group of sets */
    uint32_t mine = pc_lock_value(), v = atomic_load_explicit(lock, memory_order_relaxed);
    if (v == mine || !atomic_compare_exchange_strong_explicit(lock, &v, mine, memory_order_acquire,
                                                              memory_order_relaxed))
        return NULL;
    hot_table *t = *slot;
    if (t && t->nbytes != hot_new_size(want)) { hot_free(t); t = *slot = NULL; }
    if (!t && !(t = *slot = hot_new(want))) {
        atomic_store_explicit(lock, 0, memory_order_release);
        return NULL;
    }
    if (t->gen != g_pc_gen) {
        if (t->gen) { /* a parent's entries, under its seed */
            memset(t->e, 0, t->nbytes);
            bk_memo_clear(t->pairs);
        }
        t->seed[0] = atomic_load_explicit(&g_hot_seed[0], memory_order_relaxed);
        t->seed[1] = atomic_load_explicit(&g_hot_seed[1], memory_order_relaxed);
        t->gen = g_pc_gen;
    }
    t->hits = t->misses = t->inserts = 0;
    return t;
}

static void hot_give(hot_table *t, _Atomic uint32_t *lock) {
    if (!t) return;
    atomic_fetch_add_explicit(&g_hot_hits, t->hits, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_hot_misses, t->misses, memory_order_relaxed);
    atomic_fetch_add_explicit(&g_hot_inserts, t->inserts, memory_order_relaxed);
    atomic_store_explicit(lock, 0, memory_order_release);
}

/* in a forked child (one thread): a new seed, counters from zero; tables are cleared and keyed
   with the new seed on their next use */
static void hot_after_fork_child(void) {
    uint64_t seed[2] = {atomic_load(&g_hot_seed[0]), atomic_load(&g_hot_seed[1])};
    pc_seed_from_os(seed);
    atomic_store(&g_hot_seed[0], seed[0]);
    atomic_store(&g_hot_seed[1], seed[1]);
    atomic_store(&g_hot_hits, 0);
    atomic_store(&g_hot_misses, 0);
    atomic_store(&g_hot_inserts, 0);
}
