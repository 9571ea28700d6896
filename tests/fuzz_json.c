/* tests/fuzz_json.c - libFuzzer target for the JSON parser (in zero.h).

   Fuzz (from the repository root; `make fuzz` does this):
       clang -std=c11 -g -O1 -fsanitize=fuzzer,address,undefined -I. -o fz tests/fuzz_json.c -lm
       ./fz -max_total_time=60 tests/fuzz_corpus
   Replay files without libFuzzer (what `make test` does with the corpus):
       clang -std=c11 -g -O1 -fsanitize=address,undefined -DZERO_FUZZ_REPLAY -I. -o fr tests/fuzz_json.c -lm
       ./fr tests/fuzz_corpus/[a-z]*
   ZERO_FUZZ_CONFIG also runs the config loader (zero_config_parse_json) on each input.
   Each input is parsed twice: as strict JSON (checkpoint metadata) and with
   hjson's forms (the config loader's mode); JSON text must read the same in
   both, and hjson's forms only in the second.

   On a successful parse every node is checked: links (parent, first, next,
   count, key) form exactly one tree over all nodes, spans lie within the
   text, strings decode to their reported length, key lookup finds each
   member, paths fit their buffer. A broken invariant aborts under libFuzzer
   and counts as a failed file under replay. */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "fuzz_common.h"

#ifdef ZERO_FUZZ_CONFIG
/* warnings are expected on fuzz input; check they are well-formed text and drop them */
static void fz_quiet_log(void *user, zero_log_level level, zero_msg item, int rank, const char *text) {
    (void)user;
    (void)rank;
    if ((unsigned)level >= ZERO_LOG_LEVEL_COUNT || (unsigned)item >= ZERO_MSG_COUNT || strlen(text) >= 1024) abort();
}
#endif



static void fz_check_tree(const zero__json *j, const char *text, size_t size) {
    int i, seen = 0;
    unsigned char *visits = (unsigned char *)calloc((size_t)j->count + 1, 1);
    FZ_ASSERT(j->count >= 1 && j->count <= j->cap && j->nodes != NULL);
    FZ_ASSERT(j->text == text || size == 0);
    FZ_ASSERT(j->len == size);
    if (!visits || j->count < 1) {
        free(visits);
        return;
    }
    FZ_ASSERT(j->nodes[0].parent == -1 && j->nodes[0].next == -1 && j->nodes[0].key == -1);
    visits[0] = 1;
    seen = 1;
    for (i = 0; i < j->count; i++) {
        const zero__json_node *n = &j->nodes[i];
        char path[64 + 8];
        int depth = 0, a;
        FZ_ASSERT(n->type >= ZERO__JSON_NULL && n->type <= ZERO__JSON_OBJECT);
        FZ_ASSERT(n->start <= n->end && n->end <= size);
        FZ_ASSERT(n->line >= 1 && n->col >= 1);
        FZ_ASSERT(n->parent >= -1 && n->parent < i); /* parents come first */
        for (a = n->parent; a >= 0; a = j->nodes[a].parent) depth++;
        FZ_ASSERT(depth <= ZERO_JSON_MAX_DEPTH);
        switch (n->type) {
        case ZERO__JSON_STRING: {
            size_t len = zero__json_string(j, i, NULL, 0), len2;
            char *buf = (char *)malloc(len + 1);
            FZ_ASSERT(n->start >= 1 && n->end < size && text[n->end] == text[n->start - 1] &&
                      (text[n->end] == '"' || (j->hjson && text[n->end] == '\'')));
            FZ_ASSERT(len <= n->end - n->start); /* decoding never grows the text */
            if (buf) {
                buf[len] = 'X';
                len2 = zero__json_string(j, i, buf, len + 1);
                FZ_ASSERT(len2 == len && buf[len] == 0);
                FZ_ASSERT(zero__json_string_eq(j, i, buf, len));
                FZ_ASSERT(!zero__json_string_eq(j, i, buf, len + 1));
                if (len) FZ_ASSERT(!zero__json_string_eq(j, i, buf, len - 1));
                free(buf);
            }
            break;
        }
        case ZERO__JSON_NUMBER:
            if (!(n->number == n->number && n->number <= DBL_MAX && n->number >= -DBL_MAX)) { /* hjson's words */
                size_t w = n->end - n->start;
                FZ_ASSERT(j->hjson && !n->is_integer && n->integer == 0);
                FZ_ASSERT((w == 8 && memcmp(text + n->start, "Infinity", 8) == 0 && n->number > 0) ||
                          (w == 9 && memcmp(text + n->start, "-Infinity", 9) == 0 && n->number < 0) ||
                          (w == 3 && memcmp(text + n->start, "NaN", 3) == 0 && n->number != n->number));
                break;
            }
            if (n->is_integer) FZ_ASSERT((double)n->integer == n->number);
            else FZ_ASSERT(n->integer == 0);
            FZ_ASSERT(n->end > n->start && (text[n->start] == '-' || (text[n->start] >= '0' && text[n->start] <= '9')));
            break;
        case ZERO__JSON_TRUE: FZ_ASSERT(n->end - n->start == 4 && memcmp(text + n->start, "true", 4) == 0); break;
        case ZERO__JSON_FALSE: FZ_ASSERT(n->end - n->start == 5 && memcmp(text + n->start, "false", 5) == 0); break;
        case ZERO__JSON_NULL: FZ_ASSERT(n->end - n->start == 4 && memcmp(text + n->start, "null", 4) == 0); break;
        case ZERO__JSON_ARRAY:
        case ZERO__JSON_OBJECT: {
            int c, count = 0, prev = i;
            int obj = n->type == ZERO__JSON_OBJECT;
            FZ_ASSERT(n->end - n->start >= 2 && text[n->start] == (obj ? '{' : '[') &&
                      text[n->end - 1] == (obj ? '}' : ']'));
            for (c = n->first; c >= 0; c = j->nodes[c].next) {
                if (c <= prev || c >= j->count) { /* children in document order */
                    FZ_ASSERT(c > prev && c < j->count);
                    break;
                }
                prev = c;
                count++;
                FZ_ASSERT(j->nodes[c].parent == i);
                FZ_ASSERT(j->nodes[c].start >= n->start && j->nodes[c].end <= n->end);
                FZ_ASSERT(!visits[c]);
                visits[c] = 1;
                seen++;
                if (obj) {
                    int k = j->nodes[c].key;
                    FZ_ASSERT(k > i && k < c);
                    if (k > i && k < c) {
                        size_t klen = zero__json_string(j, k, NULL, 0);
                        char *name = (char *)malloc(klen + 1);
                        FZ_ASSERT(j->nodes[k].type == ZERO__JSON_STRING && j->nodes[k].parent == i &&
                                  j->nodes[k].next == -1 && j->nodes[k].key == -1);
                        FZ_ASSERT(!visits[k]);
                        visits[k] = 1;
                        seen++;
                        if (name) {
                            zero__json_string(j, k, name, klen + 1);
                            /* keys are unique, so lookup finds this very member */
                            if (strlen(name) == klen) FZ_ASSERT(zero__json_get(j, i, name) == c);
                            free(name);
                        }
                    }
                } else {
                    FZ_ASSERT(j->nodes[c].key == -1);
                }
            }
            FZ_ASSERT(count == n->count);
            FZ_ASSERT((n->first == -1) == (n->count == 0));
            if (!obj) FZ_ASSERT(zero__json_get(j, i, "") == -1);
            break;
        }
        }
        /* the path fits any buffer; nothing is written past cap (a path
           walks the siblings before it: sample the nodes of big inputs) */
        if (j->count > 256 && i % (j->count / 256) != 0) continue;
        memset(path, 0x5A, sizeof path);
        zero__json_path(j, i, path, 64);
        FZ_ASSERT(memchr(path, 0, 64) != NULL);
        for (a = 64; a < (int)sizeof path; a++) FZ_ASSERT(path[a] == 0x5A);
        memset(path, 0x5A, sizeof path);
        zero__json_path(j, i, path, 1);
        FZ_ASSERT(path[0] == 0 && path[1] == 0x5A);
        if (i == 0) {
            zero__json_path(j, i, path, sizeof path);
            FZ_ASSERT(path[0] == 0);
        }
    }
    FZ_ASSERT(seen == j->count); /* every node in the tree exactly once */
    free(visits);
}

/* One parse, strict or hjson, checked; returns its result, *j kept for the caller. */
static zero_result fz_parse(zero__json *j, const char *text, size_t size, int hjson, zero_error *err) {
    zero_result rc = hjson ? zero__json_parse_hjson(j, text, size, err) : zero__json_parse(j, text, size, err);
    int f;
    FZ_ASSERT(rc == err->code);
    if (rc == ZERO_OK) {
        FZ_ASSERT(err->item == ZERO_MSG_NONE && err->msg[0] == 0);
        FZ_ASSERT(j->hjson == hjson);
        fz_check_tree(j, text, size);
        for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) {
            FZ_ASSERT(j->forms[f].count >= 0 && (hjson || j->forms[f].count == 0));
            if (j->forms[f].count) FZ_ASSERT(j->forms[f].line >= 1 && j->forms[f].col >= 1);
        }
    } else {
        FZ_ASSERT(rc == ZERO_ERR_CONFIG || rc == ZERO_ERR_OUT_OF_MEMORY);
        FZ_ASSERT((err->item >= ZERO_MSG_JSON_EMPTY && err->item <= ZERO_MSG_JSON_DUPLICATE_KEY) ||
                  err->item == ZERO_MSG_OUT_OF_MEMORY);
        FZ_ASSERT(err->msg[0] != 0 && strlen(err->msg) < sizeof err->msg);
        FZ_ASSERT(j->nodes == NULL && j->count == 0);
        if (err->item != ZERO_MSG_JSON_TOO_LARGE && err->item != ZERO_MSG_OUT_OF_MEMORY)
            FZ_ASSERT(err->line >= 1 && err->column >= 1);
    }
    return rc;
}

static int fz_one(const unsigned char *data, size_t size) {
    const char *text = (const char *)data;
    zero__json j, h;
    zero_error err, herr;
    zero_result rc = fz_parse(&j, text, size, 0, &err), hrc = fz_parse(&h, text, size, 1, &herr);
    if (rc == ZERO_OK) { /* JSON reads the same with hjson's forms accepted, and uses none of them */
        int i, f;
        FZ_ASSERT(hrc == ZERO_OK);
        if (hrc == ZERO_OK) {
            FZ_ASSERT(h.count == j.count);
            for (i = 0; i < j.count && i < h.count; i++) {
                const zero__json_node *x = &j.nodes[i], *y = &h.nodes[i];
                FZ_ASSERT(x->type == y->type && x->parent == y->parent && x->next == y->next && x->first == y->first &&
                          x->count == y->count && x->key == y->key && x->start == y->start && x->end == y->end &&
                          x->line == y->line && x->col == y->col && x->is_integer == y->is_integer &&
                          x->integer == y->integer && memcmp(&x->number, &y->number, sizeof x->number) == 0);
            }
            for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) FZ_ASSERT(h.forms[f].count == 0);
        }
    } else if (hrc == ZERO_OK) { /* only a form of hjson tells them apart */
        int f, forms = 0;
        for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) forms += h.forms[f].count;
        FZ_ASSERT(forms > 0 || err.item == ZERO_MSG_OUT_OF_MEMORY);
    }
    zero__json_free(&j);
    zero__json_free(&h);
#ifdef ZERO_FUZZ_CONFIG
    {
        /* the config loader on the same bytes; on success, the config must
           survive zero_config_to_json -> parse unchanged, and resolve must
           answer (either way) without harm */
        static char out[1 << 16];
        zero_config cfg = zero_config_default(), again;
        zero_result crc;
        cfg.log.fn = fz_quiet_log;
        crc = zero_config_parse_json(&cfg, text, size, &err);
        FZ_ASSERT(crc == err.code);
        if (crc == ZERO_OK) {
            size_t n = zero_config_to_json(&cfg, out, sizeof out);
            int i;
            FZ_ASSERT(n < sizeof out);
            again = zero_config_default();
            again.log.fn = fz_quiet_log;
            /* keys the text did not set keep their defaults in both */
            FZ_ASSERT(zero_config_parse_json(&again, out, n, &err) == ZERO_OK);
            for (i = 0; i < ZERO__NKEYS; i++)
                if (zero__key_emitted(&cfg, &zero__keys[i])) FZ_ASSERT(!zero__key_differs(&cfg, &again, &zero__keys[i]));
            crc = zero_config_resolve(&cfg, 1 + (int)(size % 8), &err);
            FZ_ASSERT(crc == err.code);
        }
    }
#endif
    return 1;
}
