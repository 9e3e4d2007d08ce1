/* A call's memo of pieces (engine.h). Within one text, a piece that is no token and occurs again
   is merged once: the memo maps its bytes (in the text itself) to where its ids went in the
   output (or to its count). Local to one call and free of locks; behind it, the process's piece
   cache (piece_cache.h) keeps pieces across calls. */
#pragma once
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h" /* sink_t */

typedef struct {
    const uint8_t *key;
    uint32_t len, hash, start, count;
} memo_slot;

typedef struct {
    memo_slot *slots;
    size_t mask, used;
} memo_t;

#define MEMO_MAX_PIECE 64
#ifndef MEMO_MAX_SLOTS
#define MEMO_MAX_SLOTS (1u << 16) /* 1.5 MB: a larger memo missed the cache on text that never repeats */
#endif

static memo_slot *memo_find(memo_t *m, const uint8_t *k, uint32_t len, uint32_t h) {
    for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
        memo_slot *sl = &m->slots[i];
        if (sl->key == NULL || (sl->hash == h && sl->len == len && memcmp(sl->key, k, len) == 0))
            return sl;
    }
}

/* room for one more entry (0), or no memo from now on (-1: out of memory or full) */
static int memo_room(memo_t *m) {
    if (m->slots && (m->used + 1) * 2 <= m->mask + 1) return 0;
    size_t cap = m->slots ? (m->mask + 1) * 2 : 1024;
    if (cap > MEMO_MAX_SLOTS) return -1;
    memo_slot *slots = calloc(cap, sizeof *slots);
    if (!slots) return -1;
    memo_t grown = {slots, cap - 1, 0};
    for (size_t i = 0; m->slots && i <= m->mask; i++)
        if (m->slots[i].key) {
            *memo_find(&grown, m->slots[i].key, m->slots[i].len, m->slots[i].hash) = m->slots[i];
            grown.used++;
        }
    free(m->slots);
    *m = grown;
    return 0;
}

static int replay(sink_t *out, const memo_slot *sl) {
    if (out->count_only) { out->len += sl->count; return 0; }
    for (uint32_t i = 0; i < sl->count; i++)
        if (sink_put(out, out->ids[sl->start + i])) return -1;
    return 0;
}
