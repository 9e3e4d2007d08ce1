/* The word cut of a SentencePiece-style stretch: before each `mark` (the UTF-8 of the metaspace
   character '▁') except where some token of the vocabulary could span the cut. A merge only ever
   makes tokens of the vocabulary, so a cut no token can span changes no id. The caller derives
   the contexts from the tokens that hold the mark after their first character (service/bpe/
   wordcut.py): a cut at q is unsafe when the text before q ends with a context's `behind` and the
   text from q starts with its `ahead` (both within the stretch). No context: every mark cuts. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define WC_MAX_CONTEXTS 64
#define WC_MAX_BYTES 256

typedef struct {
    const uint8_t *behind, *ahead;
    size_t nbehind, nahead;
} wc_context;

typedef struct {
    const uint8_t *mark;
    size_t nmark; /* 1 to 4 bytes: one character */
    const wc_context *ctx;
    size_t nctx;
} wordcut_t;

static inline int wc_unsafe(const wordcut_t *w, const uint8_t *s, size_t n, size_t q) {
    for (size_t i = 0; i < w->nctx; i++) {
        const wc_context *c = &w->ctx[i];
        if (c->nbehind <= q && c->nahead <= n - q &&
            memcmp(s + q - c->nbehind, c->behind, c->nbehind) == 0 &&
            memcmp(s + q, c->ahead, c->nahead) == 0)
            return 1;
    }
    return 0;
}

/* where the piece that starts at p (< n) ends: the next safe cut before a mark, or n */
static size_t wc_next(const wordcut_t *w, const uint8_t *s, size_t n, size_t p) {
    for (size_t q = p + 1; q + w->nmark <= n; q++) {
        const uint8_t *hit = memchr(s + q, w->mark[0], n - q - w->nmark + 1);
        if (!hit) return n;
        q = (size_t)(hit - s);
        if (memcmp(hit, w->mark, w->nmark) == 0 && !wc_unsafe(w, s, n, q)) return q;
    }
    return n;
}
