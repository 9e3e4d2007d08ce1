/* What a vocabulary's merges look up, built once per vocabulary: a token's bytes -> its id (the
`ranks` rule's table, bytes_table) and (left id, right id) -> the id their merge makes (the `pairs`
rule's, pair_table). Both are open-addressing tables read on every merge step, laid out so that a
look-up reads one slot (after a bit filter, for bytes: most look-ups of bytes are of no token). */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_RANK UINT32_MAX

/* ---- token bytes -> id (the ranks rule) ---- */
/* A slot is 16 bytes (four a cache line): the token's first 8 bytes (zero-padded), where its
   bytes are in the blob, and its id with its length (ids below 2^24, lengths below 255). A probe
   compares the length and the head in the slot; only a token longer than 8 bytes whose head
   matched is read from the blob. The few tokens of 255 bytes or more are kept in a short list. */
#define SLOT_HEAD 8
#define SLOT_LONG 255        /* tokens this long or longer live in bytes_table.longs */
#define BT_MAX_IDS (1u << 24) /* ids must fit the slot's 24 bits */
typedef struct {
    uint64_t head;   /* the token's first bytes (at most SLOT_HEAD), zero-padded */
    uint32_t off;    /* where its bytes are in the blob */
    uint32_t id_len; /* id << 8 | length; 0 marks an empty slot (a slot token has 3+ bytes) */
} slot_t;

typedef struct {
    uint32_t off, len, id;
} long_token;

typedef struct {
    slot_t *slots;   /* open addressing, linear probing */
    size_t mask;
    uint8_t *blob;   /* every token's bytes, back to back */
    uint32_t byte_rank[256];
    uint32_t *pair_rank; /* 65536 entries: the id of every two-byte token */
    uint64_t *filter;    /* one bit per hash value (& filter_mask) of each longer token: most */
    size_t filter_mask;  /* look-ups are misses, and this answers them from a small table */
    long_token *longs;   /* tokens of SLOT_LONG bytes or more (few or none), searched in turn */
    size_t nlongs;
} bytes_table;

static inline uint32_t hash_bytes(const uint8_t *k, size_t len) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, k, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        k += 8;
        len -= 8;
    }
    if (len) {
        uint64_t w = 0;
        memcpy(&w, k, len);
        h = (h ^ w) * 0xC4CEB9FE1A85EC53ull;
    }
    h ^= h >> 29;
    h *= 0xFF51AFD7ED558CCDull;
    return (uint32_t)(h ^ (h >> 32));
}

static inline uint64_t slot_head(const uint8_t *k, size_t len) {
    uint64_t w = 0;
    if (len >= SLOT_HEAD) memcpy(&w, k, SLOT_HEAD);
    else memcpy(&w, k, len);
    return w;
}

/* the slot of k (a token of 3 to SLOT_LONG - 1 bytes), or the empty slot where it would go */
static inline slot_t *bt_probe(const bytes_table *t, const uint8_t *k, size_t len, uint32_t h) {
    uint64_t head = slot_head(k, len);
    for (size_t i = h & t->mask;; i = (i + 1) & t->mask) {
        slot_t *sl = &t->slots[i];
        if (sl->id_len == 0) return sl;
        if ((sl->id_len & 0xFF) == len && sl->head == head &&
            (len <= SLOT_HEAD ||
             memcmp(t->blob + sl->off + SLOT_HEAD, k + SLOT_HEAD, len - SLOT_HEAD) == 0))
            return sl;
    }
}

static inline long_token *bt_long(const bytes_table *t, const uint8_t *k, size_t len) {
    for (size_t i = 0; i < t->nlongs; i++)
        if (t->longs[i].len == len && memcmp(t->blob + t->longs[i].off, k, len) == 0)
            return &t->longs[i];
    return NULL;
}

static inline uint32_t bt_lookup(const bytes_table *t, const uint8_t *k, size_t len) {
    if (len == 1) return t->byte_rank[k[0]];
    if (len == 2) return t->pair_rank[(size_t)k[0] << 8 | k[1]];
    uint32_t h = hash_bytes(k, len);
    size_t bit = h & t->filter_mask;
    if (!(t->filter[bit >> 6] >> (bit & 63) & 1)) return NO_RANK;
    if (len >= SLOT_LONG) {
        const long_token *lt = bt_long(t, k, len);
        return lt ? lt->id : NO_RANK;
    }
    const slot_t *sl = bt_probe(t, k, len, h);
    return sl->id_len ? sl->id_len >> 8 : NO_RANK;
}

/* Insert (later ids win for equal bytes, as in a dict built in id order); id < BT_MAX_IDS, and
   `longs` has room for every token of SLOT_LONG bytes or more. 0 on success. */
static int bt_insert(bytes_table *t, uint32_t off, uint32_t len, uint32_t id) {
    const uint8_t *k = t->blob + off;
    if (len == 1) { t->byte_rank[k[0]] = id; return 0; }
    if (len == 2) { t->pair_rank[(size_t)k[0] << 8 | k[1]] = id; return 0; }
    uint32_t h = hash_bytes(k, len);
    size_t bit = h & t->filter_mask;
    t->filter[bit >> 6] |= (uint64_t)1 << (bit & 63);
    if (len >= SLOT_LONG) {
        long_token *lt = bt_long(t, k, len);
        if (lt) lt->id = id;
        else t->longs[t->nlongs++] = (long_token){off, len, id};
        return 0;
    }
    slot_t *sl = bt_probe(t, k, len, h);
    if (sl->id_len == 0) {
        sl->head = slot_head(k, len);
        sl->off = off;
    }
    sl->id_len = id << 8 | len;
    return 0;
}

static void bt_free(bytes_table *t) {
    free(t->slots);
    free(t->blob);
    free(t->pair_rank);
    free(t->filter);
    free(t->longs);
    memset(t, 0, sizeof *t);
}

/* ---- (left id, right id) -> new id (the pairs rule) ---- */
typedef struct {
    uint32_t left, right, val; /* left UINT32_MAX: empty; a probe reads one slot, not two arrays */
} pt_slot;

typedef struct {
    pt_slot *slots;
    size_t mask;
    uint32_t byte_ids[256];
    uint32_t *new_of; /* NULL: vals are new ids (ascending in rank); else vals are ranks and
                         new_of[rank] is the id the merge makes (format v2's free ids) */
    uint32_t char_ranks; /* the ranks below join a lead byte (or what such a merge made) and a
                            continuation byte: characters rebuilt from bytes (pt_chars) */
} pair_table;

static inline uint32_t pt_new(const pair_table *t, uint32_t rank) {
    return t->new_of ? t->new_of[rank] : rank;
}

static inline size_t hash_pair(uint64_t key) {
    key ^= key >> 31;
    key *= 0x9E3779B97F4A7C15ull;
    return (size_t)(key ^ (key >> 29));
}

static inline uint32_t pt_lookup(const pair_table *t, uint32_t a, uint32_t b) {
    for (size_t i = hash_pair((uint64_t)a << 32 | b) & t->mask;; i = (i + 1) & t->mask) {
        const pt_slot *sl = &t->slots[i];
        if (sl->left == a && sl->right == b) return sl->val;
        if (sl->left == UINT32_MAX) return NO_RANK;
    }
}

static void pt_insert(pair_table *t, uint32_t a, uint32_t b, uint32_t v) {
    for (size_t i = hash_pair((uint64_t)a << 32 | b) & t->mask;; i = (i + 1) & t->mask) {
        pt_slot *sl = &t->slots[i];
        if ((sl->left == a && sl->right == b) || sl->left == UINT32_MAX) {
            *sl = (pt_slot){a, b, v};
            return;
        }
    }
}

static void pt_free(pair_table *t) {
    free(t->slots);
    free(t->new_of);
    memset(t, 0, sizeof *t);
}
