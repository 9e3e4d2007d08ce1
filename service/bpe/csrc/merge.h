/* The two merge rules of service/bpe/merge.py, in C, over look-up tables built once per vocabulary.

`ranks` (tiktoken's): a piece that is a token is returned whole; otherwise start from its bytes and
merge the adjacent pair whose concatenated bytes form the lowest-id token, leftmost on ties.
`pairs` (classic BPE): start from the byte ids and merge the adjacent id pair with the lowest new id.
Short pieces use a scan over an array (quadratic, but tiny); from LONG_PIECE symbols on, a binary
heap of (rank, position) over a linked list of symbols makes it O(n log n): an entry is stale when
the rank of the pair now at its position differs (a rank names one token, so equal means same). */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NO_RANK UINT32_MAX
#define LONG_PIECE 64

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

/* ---- output: ids appended to a growable array, or only counted ---- */
typedef struct {
    uint32_t *ids;
    size_t len, cap;
    int count_only; /* only count: ids stays NULL */
} sink_t;

static inline int sink_put(sink_t *o, uint32_t id) {
    if (o->count_only) { o->len++; return 0; }
    if (o->len == o->cap) {
        size_t cap = o->cap * 2 + 64;
        uint32_t *p = realloc(o->ids, cap * sizeof *p);
        if (!p) return -1;
        o->ids = p;
        o->cap = cap;
    }
    o->ids[o->len++] = id;
    return 0;
}

/* append n ids (`ids` must not point into o->ids: growing may move them) */
static inline int sink_extend(sink_t *o, const uint32_t *ids, size_t n) {
    if (o->count_only) { o->len += n; return 0; }
    if (o->len + n > o->cap) {
        for (size_t i = 0; i < n; i++)
            if (sink_put(o, ids[i])) return -1;
        return 0;
    }
    memcpy(o->ids + o->len, ids, n * sizeof *ids);
    o->len += n;
    return 0;
}

/* ---- a min-heap of (rank << 32 | position) ---- */
typedef struct {
    uint64_t *v;
    size_t len, cap;
    int on_stack; /* v is the caller's stack array: copy it out before growing */
} heap_t;

static int heap_push(heap_t *h, uint64_t x) {
    if (h->len == h->cap) {
        size_t cap = h->cap * 2 + 64;
        uint64_t *p = h->on_stack ? malloc(cap * sizeof *p) : realloc(h->v, cap * sizeof *p);
        if (!p) return -1;
        if (h->on_stack) memcpy(p, h->v, h->len * sizeof *p);
        h->on_stack = 0;
        h->v = p;
        h->cap = cap;
    }
    size_t i = h->len++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (h->v[up] <= x) break;
        h->v[i] = h->v[up];
        i = up;
    }
    h->v[i] = x;
    return 0;
}

static uint64_t heap_pop(heap_t *h) {
    uint64_t top = h->v[0], x = h->v[--h->len];
    size_t i = 0, n = h->len;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && h->v[c + 1] < h->v[c]) c++;
        if (x <= h->v[c]) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (n) h->v[i] = x;
    return top;
}

/* the lowest of ranks[0:k] and its leftmost index: a min the compiler vectorizes, then a find */
static inline uint32_t lowest(const uint32_t *ranks, size_t k, size_t *at) {
    uint32_t best = NO_RANK;
    for (size_t i = 0; i < k; i++) best = ranks[i] < best ? ranks[i] : best;
    size_t i = 0;
    while (i < k && ranks[i] != best) i++;
    *at = i;
    return best;
}

/* ranks rule, short piece that is not itself a token (the caller looked): bounds[] are part
   starts, ids[i] the id of part i, ranks[i] the rank of parts i and i+1 (a merge's rank is the id
   of the token it makes) */
static int merge_ranks_short(const bytes_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t bounds[LONG_PIECE + 1], ids[LONG_PIECE], ranks[LONG_PIECE];
    size_t m = n; /* parts */
    for (size_t i = 0; i <= n; i++) bounds[i] = (uint32_t)i;
    for (size_t i = 0; i < n; i++) ids[i] = t->byte_rank[s[i]];
    for (size_t i = 0; i + 1 < n; i++) ranks[i] = t->pair_rank[(size_t)s[i] << 8 | s[i + 1]];
    while (m > 2) { /* two parts left are the whole piece: no token */
        size_t at;
        uint32_t best = lowest(ranks, m - 1, &at);
        if (best == NO_RANK) break;
        ids[at] = best;
        memmove(&bounds[at + 1], &bounds[at + 2], (m - at - 1) * sizeof bounds[0]);
        memmove(&ids[at + 1], &ids[at + 2], (m - at - 2) * sizeof ids[0]);
        memmove(&ranks[at], &ranks[at + 1], (m - at - 2) * sizeof ranks[0]);
        if (--m == 2) break;
        if (at > 0)
            ranks[at - 1] = bt_lookup(t, s + bounds[at - 1], bounds[at + 1] - bounds[at - 1]);
        if (at + 1 < m)
            ranks[at] = bt_lookup(t, s + bounds[at], bounds[at + 2] - bounds[at]);
    }
    return sink_extend(out, ids, m);
}

/* ranks rule, long piece: parts linked by nxt/prv (byte positions), heap of candidate merges */
#define STACK_PIECE 512
static int merge_ranks_long(const bytes_table *t, const uint8_t *s, size_t n, sink_t *out) {
    /* pieces up to STACK_PIECE bytes work in stack arrays; the heap array grows only if needed */
    uint32_t nxt_stack[STACK_PIECE + 1], prv_stack[STACK_PIECE + 1];
    uint64_t heap_stack[2 * STACK_PIECE];
    int small = n <= STACK_PIECE;
    uint32_t *nxt = small ? nxt_stack : malloc((n + 1) * sizeof *nxt);
    uint32_t *prv = small ? prv_stack : malloc((n + 1) * sizeof *prv);
    heap_t h = {small ? heap_stack : NULL, 0, small ? 2 * STACK_PIECE : 0, small};
    int rc = -1;
    if (!nxt || !prv) goto done;
    for (size_t i = 0; i < n; i++) {
        nxt[i] = (uint32_t)(i + 1);
        prv[i] = (uint32_t)(i - 1); /* UINT32_MAX for the first */
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = t->pair_rank[(size_t)s[i] << 8 | s[i + 1]];
        if (r != NO_RANK && heap_push(&h, (uint64_t)r << 32 | i)) goto done;
    }
    while (h.len) {
        uint64_t top = heap_pop(&h);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        uint32_t j = nxt[i];
        if (j == UINT32_MAX - 1 || j >= n) continue; /* i is merged away, or is the last part */
        uint32_t k = nxt[j];
        if (bt_lookup(t, s + i, k - i) != r) continue; /* stale */
        nxt[i] = k;
        nxt[j] = UINT32_MAX - 1;
        if (k < n) {
            prv[k] = i;
            uint32_t rk = bt_lookup(t, s + i, nxt[k] - i);
            if (rk != NO_RANK && heap_push(&h, (uint64_t)rk << 32 | i)) goto done;
        }
        uint32_t p = prv[i];
        if (p != UINT32_MAX) {
            uint32_t rp = bt_lookup(t, s + p, k - p);
            if (rp != NO_RANK && heap_push(&h, (uint64_t)rp << 32 | p)) goto done;
        }
    }
    for (uint32_t i = 0; i < n; i = nxt[i]) {
        uint32_t id = bt_lookup(t, s + i, nxt[i] - i);
        if (id == NO_RANK) { rc = -2; goto done; }
        if (sink_put(out, id)) goto done;
    }
    rc = 0;
done:
    if (!small) {
        free(nxt);
        free(prv);
    }
    if (!h.on_stack) free(h.v);
    return rc;
}

/* The symbols of a piece once the ranks below char_ranks are spent, as the pairs rule spends them
   first: they are lower than every other, and never compete (a continuation byte is never a
   left), so each run of a lead byte and continuation bytes merges left to right, alone. */
static size_t pt_chars(const pair_table *t, const uint8_t *s, size_t n, uint32_t *sym) {
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cur = t->byte_ids[s[i++]];
        if (t->char_ranks && s[i - 1] >= 0xC0)
            for (; i < n && (s[i] & 0xC0) == 0x80; i++) {
                uint32_t r = pt_lookup(t, cur, t->byte_ids[s[i]]);
                if (r >= t->char_ranks) break; /* NO_RANK too */
                cur = pt_new(t, r);
            }
        sym[m++] = cur;
    }
    return m;
}

/* pairs rule, short piece */
static int merge_pairs_short(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t ids[LONG_PIECE], ranks[LONG_PIECE];
    size_t m = pt_chars(t, s, n, ids);
    for (size_t i = 0; i + 1 < m; i++) ranks[i] = pt_lookup(t, ids[i], ids[i + 1]);
    while (m > 1) {
        size_t at;
        uint32_t best = lowest(ranks, m - 1, &at);
        if (best == NO_RANK) break;
        uint32_t made = pt_new(t, best);
        ids[at] = made;
        memmove(&ids[at + 1], &ids[at + 2], (m - at - 2) * sizeof ids[0]);
        memmove(&ranks[at], &ranks[at + 1], (m - at - 2) * sizeof ranks[0]);
        m--;
        if (at > 0) ranks[at - 1] = pt_lookup(t, ids[at - 1], made);
        if (at + 1 < m) ranks[at] = pt_lookup(t, made, ids[at + 1]);
    }
    for (size_t i = 0; i < m; i++)
        if (sink_put(out, ids[i])) return -1;
    return 0;
}

/* pairs rule, long piece: symbols (pt_chars) linked by nxt/prv */
static int merge_pairs_long(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    uint32_t *nxt = malloc(n * sizeof *nxt), *prv = malloc(n * sizeof *prv);
    uint32_t *sym = malloc(n * sizeof *sym);
    heap_t h = {0};
    int rc = -1;
    if (!nxt || !prv || !sym) goto done;
    n = pt_chars(t, s, n, sym);
    for (size_t i = 0; i < n; i++) {
        nxt[i] = (uint32_t)(i + 1);
        prv[i] = (uint32_t)(i - 1);
    }
    for (size_t i = 0; i + 1 < n; i++) {
        uint32_t r = pt_lookup(t, sym[i], sym[i + 1]);
        if (r != NO_RANK && heap_push(&h, (uint64_t)r << 32 | i)) goto done;
    }
    while (h.len) {
        uint64_t top = heap_pop(&h);
        uint32_t r = (uint32_t)(top >> 32), i = (uint32_t)top;
        uint32_t j = nxt[i];
        if (j == UINT32_MAX - 1 || j >= n) continue;
        if (pt_lookup(t, sym[i], sym[j]) != r) continue;
        uint32_t k = nxt[j];
        uint32_t made = pt_new(t, r);
        sym[i] = made;
        nxt[i] = k;
        nxt[j] = UINT32_MAX - 1;
        if (k < n) {
            prv[k] = i;
            uint32_t rk = pt_lookup(t, made, sym[k]);
            if (rk != NO_RANK && heap_push(&h, (uint64_t)rk << 32 | i)) goto done;
        }
        uint32_t p = prv[i];
        if (p != UINT32_MAX) {
            uint32_t rp = pt_lookup(t, sym[p], made);
            if (rp != NO_RANK && heap_push(&h, (uint64_t)rp << 32 | p)) goto done;
        }
    }
    for (uint32_t i = 0; i < n; i = nxt[i])
        if (sink_put(out, sym[i])) goto done;
    rc = 0;
done:
    free(nxt);
    free(prv);
    free(sym);
    free(h.v);
    return rc;
}

static int merge_pairs_piece(const pair_table *t, const uint8_t *s, size_t n, sink_t *out) {
    if (n == 1) return sink_put(out, t->byte_ids[s[0]]);
    return n < LONG_PIECE ? merge_pairs_short(t, s, n, out) : merge_pairs_long(t, s, n, out);
}
