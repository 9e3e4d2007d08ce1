/* One engine: what it holds (its tables, its scanner) and how it encodes a text: the pieces
   its scanner cuts, each merged by the rule, a piece that repeats within the text merged once.
   Included by _native.c only; the tables are built by engine_init.h. */
#pragma once
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "backtrack.h"
#include "hot_pieces.h"
#include "merge.h"
#include "piece_cache.h"
#include "piece_memo.h"
#include "pretok.h"
#include "pretok_cased.h"
#include "pretok_chain.h"
#include "wordcut.h"

#define MAX_TEXT 0x7FFFFFF0u
#ifndef BACKTRACK_FROM
#define BACKTRACK_FROM 16 /* bytes: shorter pieces merge faster by the scan of merge.h */
#endif
#ifndef BACKTRACK_WIDE_FROM
#define BACKTRACK_WIDE_FROM 6 /* bytes, for a piece that ends in a non-ASCII byte: from two CJK
                                 characters on, backtracking is faster than the scan */
#endif

typedef struct {
    PyObject_HEAD
    int pairs; /* 0: ranks rule, 1: pairs rule */
    int scanner;
    bytes_table bt;
    backtrack_t bk; /* the backtracking encoder's tables, either rule (bk.on: in use) */
    pair_table pt;
    size_t nbytes;
    uint32_t serial; /* this engine's part of a piece cache key: unique in the process, but
                        shared with the engines that share its tables (the same merges) */
    PyObject *owner; /* NULL, or the engine whose tables these are (kept alive, never freed here) */
    hot_table *hot;            /* its hot pieces (hot_pieces.h; NULL until first used) */
    _Atomic uint32_t hot_lock; /* held by the call using them */
} EngineObject;

static scan_fn scanner_fn(int scanner) {
    switch (scanner) {
    case SCAN_GPT2: return scan_gpt2;
    case SCAN_CL100K: return scan_cl100k;
    case SCAN_O200K: return scan_o200k;
    case SCAN_QWEN2: return scan_qwen2;
    case SCAN_LLAMA3: return scan_llama3;
    case SCAN_TEKKEN: return scan_tekken;
    case SCAN_QWEN35: return scan_qwen35;
    case SCAN_KIMI: return scan_kimi;
    case SCAN_DEEPSEEK: return scan_deepseek;
    default: return NULL;
    }
}

/* a piece that is not itself a token (ranks) or longer than one byte (pairs); `memo`: where the
   call keeps its memo of valid pairs (backtrack.h; made on first use), or NULL for none */
static int merge_parts(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out,
                       bk_memo **memo) {
    if (e->bk.on && (n >= BACKTRACK_FROM || (n >= BACKTRACK_WIDE_FROM && s[n - 1] >= 0x80)) &&
        !bk_holds_out(&e->bk, s, n)) {
        if (memo && !*memo) /* NULL (out of memory): none */
            *memo = bk_memo_new(BK_CALL_MEMO_LOG2);
        return bk_encode(&e->bk, &e->bt, s, n, out, memo ? *memo : NULL);
    }
    if (e->pairs)
        return n < LONG_PIECE ? merge_pairs_short(&e->pt, s, n, out)
                              : merge_pairs_long(&e->pt, s, n, out);
    return n < LONG_PIECE ? merge_ranks_short(&e->bt, s, n, out)
                          : merge_ranks_long(&e->bt, s, n, out);
}

static inline int merge_piece(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out,
                              bk_memo **memo) {
    if (n == 0) return 0;
    if (e->pairs)
        return n == 1 ? sink_put(out, e->pt.byte_ids[s[0]]) : merge_parts(e, s, n, out, memo);
    uint32_t whole = bt_lookup(&e->bt, s, n);
    return whole != NO_RANK ? sink_put(out, whole) : merge_parts(e, s, n, out, memo);
}

#ifndef HOT_TRIAL
#define HOT_TRIAL 4096 /* probes of the hot pieces a call makes before it judges them */
#endif

/* one call's use of the process's piece cache (piece_cache.h): the table (NULL: none), its tally,
   a scratch sink for the ids of a piece merged while only counting; and the call's memo of valid
   pairs for the backtracking encoder */
typedef struct {
    pc_table *t;
    pc_tally tally;
    sink_t scratch;
    bk_memo *pairs;
    hot_table *hot;
    int hot_idle; /* 1: the hot pieces missed so often in this call that it goes on without them;
                     2: they hit often enough (judged once, after HOT_TRIAL probes) */
} pc_ctx;

/* merge_parts, through the piece cache when the piece fits an entry */
static int merge_cached(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out,
                        pc_ctx *c) {
    if (!c->t || n < PC_MIN_PIECE || n > PC_KEY) return merge_parts(e, s, n, out, &c->pairs);
    uint64_t h = pc_hash(c->t, s, n, e->serial);
    uint32_t ids[PC_IDS];
    int first;
    int got = pc_get(c->t, e->serial, s, n, h, ids, &c->tally, &first);
    if (got >= 0) return sink_extend(out, ids, (size_t)got);
    const uint32_t *made;
    size_t nmade;
    int rc;
    if (out->count_only) {
        c->scratch.len = 0;
        if ((rc = merge_parts(e, s, n, &c->scratch, &c->pairs))) return rc;
        out->len += c->scratch.len;
        made = c->scratch.ids;
        nmade = c->scratch.len;
    } else {
        size_t before = out->len;
        if ((rc = merge_parts(e, s, n, out, &c->pairs))) return rc;
        made = out->ids + before;
        nmade = out->len - before;
    }
    if (!first && n + 4 * nmade <= PC_PAYLOAD) /* a piece's first miss is only noted */
        pc_put(c->t, e->serial, s, n, h, made, nmade, &c->tally);
    return 0;
}

/* the id of a piece that is one token as it stands (ranks: its bytes are a token; pairs: one
   byte), else NO_RANK */
static inline uint32_t whole_id(const EngineObject *e, const uint8_t *s, size_t n) {
    if (!e->pairs) return bt_lookup(&e->bt, s, n);
    return n == 1 ? e->pt.byte_ids[s[0]] : NO_RANK;
}

/* a piece that is no token as it stands: through the call's memo, the piece cache, the merges */
static int merge_memo_rest(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out,
                           memo_t *m, int *memo_off, pc_ctx *c) {
    if (n > MEMO_MAX_PIECE || *memo_off) return merge_cached(e, s, n, out, c); /* whole: tried */
    uint32_t h = hash_bytes(s, n);
    if (m->slots) {
        memo_slot *sl = memo_find(m, s, (uint32_t)n, h);
        if (sl->key) return replay(out, sl);
    }
    size_t before = out->len;
    int rc = merge_cached(e, s, n, out, c);
    if (rc) return rc;
    if (memo_room(m)) { *memo_off = 1; return 0; }
    memo_slot *sl = memo_find(m, s, (uint32_t)n, h);
    *sl = (memo_slot){s, (uint32_t)n, h, (uint32_t)before, (uint32_t)(out->len - before)};
    m->used++;
    return 0;
}

static int merge_memo_cold(const EngineObject *e, const uint8_t *s, size_t n, sink_t *out,
                           memo_t *m, int *memo_off, pc_ctx *c) {
    uint32_t whole = whole_id(e, s, n);
    return whole != NO_RANK ? sink_put(out, whole) : merge_memo_rest(e, s, n, out, m, memo_off, c);
}

static int merge_memo(const EngineObject *e, const uint8_t *s, size_t n, size_t room, sink_t *out,
                      memo_t *m, int *memo_off, pc_ctx *c) {
    hot_table *ht = c->hot;
    /* a piece of one or two bytes is one array read away already (bytes_table.byte_rank and
       pair_rank; the pairs rule's byte_ids): no probe pays for it */
    if (!ht || c->hot_idle == 1 || n > HOT_KEY || n <= (e->pairs ? 1u : 2u))
        return merge_memo_cold(e, s, n, out, m, memo_off, c);
    hot_key k = hot_key_of(s, n, room);
    uint64_t h = hot_hash(ht, &k, n);
    hot_small *sm = n <= 8 ? hot_small_find(ht, k.w[0], n, h) : NULL;
    if (sm) {
        sm->freq += sm->freq < 255;
        ht->hits++;
        return sink_put(out, sm->id);
    }
    hot_entry *he = hot_find(ht, &k, n, h);
    if (he && (he->has_ids || out->count_only)) {
        he->freq += he->freq < 255;
        ht->hits++;
        return sink_extend(out, he->ids, he->nids);
    }
    /* text that is new piece after piece (random ids, base64) would pay for the probes and
       inserts and never hit: a call whose first HOT_TRIAL probes hit less than one in five goes on
       without the table */
    if (++ht->misses + ht->hits >= HOT_TRIAL && !c->hot_idle)
        c->hot_idle = ht->hits * 5 < ht->hits + ht->misses ? 1 : 2;
    uint32_t whole = whole_id(e, s, n);
    size_t before = out->len;
    int rc = whole != NO_RANK ? sink_put(out, whole) : merge_memo_rest(e, s, n, out, m, memo_off, c);
    if (rc) return rc;
    size_t nids = out->len - before;
    /* the ids, known when encoding or when the piece is one token; a count knows only how many */
    const uint32_t *ids = whole != NO_RANK ? &whole : out->count_only ? NULL : out->ids + before;
    if (he) { /* known by its count only: now its ids too */
        if (ids && nids <= HOT_IDS) {
            memcpy(he->ids, ids, nids * sizeof *he->ids);
            he->has_ids = 1;
        }
    } else if (n <= 8 && nids == 1 && ids) {
        hot_small_put(ht, k.w[0], n, h, ids[0]);
    } else {
        hot_put(ht, &k, n, h, ids, nids);
    }
    return 0;
}

/* one stretch cut by the word cut `w` (wordcut.h), each piece merged through the memo and the
   piece cache as encode_text merges a scanner's pieces */
static int encode_words(const EngineObject *e, const wordcut_t *w, const uint8_t *s, size_t n,
                        sink_t *out, memo_t *memo, int *memo_off, pc_ctx *c) {
    for (size_t p = 0; p < n;) {
        size_t q = wc_next(w, s, n, p);
        int rc = merge_memo(e, s + p, q - p, n - p, out, memo, memo_off, c);
        if (rc) return rc;
        p = q;
    }
    return 0;
}

/* `scan`: what cuts the text into pieces (the engine's scanner, or a chain's; NULL: the text is
   one piece); `pc`: the piece cache this call may use (NULL: none); what it saw goes into *tally */
static int encode_text(const EngineObject *e, scan_fn scan, const uint8_t *s, size_t n,
                       sink_t *out, pc_table *pc, pc_tally *tally) {
    memo_t memo = {0};
    pc_ctx c = {pc, {0, 0, 0, 0, 0}, {0}, NULL, NULL, 0};
    if (!scan) {
        int rc = merge_piece(e, s, n, out, &c.pairs);
        free(c.pairs);
        return rc;
    }
    int memo_off = 0, rc = 0;
    EngineObject *me = (EngineObject *)e; /* its hot pieces change; its tables do not */
    c.hot = hot_take(&me->hot, &me->hot_lock);
    if (c.hot) c.pairs = c.hot->pairs; /* the pairs answered by earlier calls too */
    for (size_t p = 0; p < n;) {
        size_t q = scan(s, n, p);
        rc = merge_memo(e, s + p, q - p, n - p, out, &memo, &memo_off, &c);
        if (rc) break;
        p = q;
    }
    if (c.hot && c.pairs == c.hot->pairs) c.pairs = NULL; /* the table's, not the call's */
    hot_give(c.hot, &me->hot_lock);
    free(memo.slots);
    free(c.scratch.ids);
    free(c.pairs);
    tally->hits += c.tally.hits;
    tally->misses += c.tally.misses;
    tally->inserts += c.tally.inserts;
    tally->refused += c.tally.refused;
    tally->busy += c.tally.busy;
    return rc;
}
