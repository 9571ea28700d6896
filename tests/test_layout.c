/* test_layout.c - the unit layout planner (zero_layout_*) against an
   independent planner written here from these rules (zero.h's comments state
   them too):

   - tensors in registration order; a unit is a run of whole tensors placed at
     ZERO_ALIGN-aligned offsets (gaps count in the unit's numel) of at most
     bucket_elems elements; a new unit starts at any change of group, of the
     FROZEN flag or of persistence (stage 3: numel <= persist_threshold while
     the persistent total stays <= model_persist_threshold, DeepSpeed's
     mark_persistent_parameters);
   - a tensor larger than bucket_elems is split into pieces of
     P = max(W, floor(bucket_elems / W) * W) elements, W = world * ZERO_ALIGN,
     each piece a unit, all pieces one span; every other unit its own span;
     bucket_elems 0 (DeepSpeed accepts reduce_bucket_size 0): one tensor per
     unit, none split;
   - each unit padded to a multiple of W, chunk = padded / world, units back to
     back in the padded full buffer, shard_offset = sum of earlier chunks.

   Random tensor lists (sizes 1, primes, sizes below the world, tensors much
   larger than the bucket), every element mapped to exactly one (rank, shard
   offset) and back, and invalid input refused with a clear error.

   Run alone: make test T=test_layout */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_test.h"

/* ---------------------------------------------------------------------- */
/* the reference planner                                                  */

#define MAXT 96
#define MAXU 4096

typedef struct ref_unit {
    int64_t offset, numel, padded, chunk, shard_offset;
    int first, last, span, group, frozen, persistent, split;
} ref_unit;

typedef struct ref_place {
    int64_t offset, unit_offset;
    int first_unit, n_units;
} ref_place;

typedef struct ref_layout {
    ref_unit u[MAXU];
    ref_place p[MAXT];
    int n_units, n_tensors;
    int64_t padded_numel, shard_numel, shard_trainable;
} ref_layout;

static int64_t align_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

static void ref_close(ref_layout *L, ref_unit *u, int world, int64_t *off, int64_t *shard) {
    int64_t W = (int64_t)world * ZERO_ALIGN;
    u->padded = align_up(u->numel, W);
    u->chunk = u->padded / world;
    u->offset = *off;
    u->shard_offset = *shard;
    *off += u->padded;
    *shard += u->chunk;
    L->n_units++;
}

/* Returns 0 when the layout would need more units than the reference holds. */
static int ref_plan(ref_layout *L, const zero_tensor *t, int n, const zero_layout_args *a) {
    int64_t W = (int64_t)a->world * ZERO_ALIGN, off = 0, shard = 0, persist_total = 0;
    int i, open = 0, span = 0;
    ref_unit *cur = NULL;
    memset(L, 0, sizeof *L);
    L->n_tensors = n;
    for (i = 0; i < n; i++) {
        int frozen = (t[i].flags & ZERO_TENSOR_FROZEN) != 0, pers = 0;
        if (a->persist_threshold > 0 && t[i].numel <= a->persist_threshold &&
            (a->model_persist_threshold <= 0 || persist_total + t[i].numel <= a->model_persist_threshold)) {
            pers = 1;
            persist_total += t[i].numel;
        }
        if (a->bucket_elems > 0 && t[i].numel > a->bucket_elems) {
            int64_t P = (a->bucket_elems / W) * W, o;
            if (P < W) P = W;
            if (open) { ref_close(L, cur, a->world, &off, &shard); open = 0; }
            L->p[i].first_unit = L->n_units;
            L->p[i].unit_offset = 0;
            L->p[i].n_units = 0;
            for (o = 0; o < t[i].numel; o += P) {
                if (L->n_units >= MAXU) return 0;
                cur = &L->u[L->n_units];
                memset(cur, 0, sizeof *cur);
                cur->numel = t[i].numel - o < P ? t[i].numel - o : P;
                cur->first = cur->last = i;
                cur->span = span;
                cur->group = t[i].group;
                cur->frozen = frozen;
                cur->persistent = pers;
                cur->split = 1;
                ref_close(L, cur, a->world, &off, &shard);
                L->p[i].n_units++;
            }
            span++;
            continue;
        }
        if (open && (cur->group != t[i].group || cur->frozen != frozen || cur->persistent != pers ||
                     a->bucket_elems == 0 || align_up(cur->numel, ZERO_ALIGN) + t[i].numel > a->bucket_elems)) {
            ref_close(L, cur, a->world, &off, &shard);
            open = 0;
        }
        if (!open) {
            if (L->n_units >= MAXU) return 0;
            cur = &L->u[L->n_units];
            memset(cur, 0, sizeof *cur);
            cur->first = i;
            cur->span = span++;
            cur->group = t[i].group;
            cur->frozen = frozen;
            cur->persistent = pers;
            open = 1;
        }
        L->p[i].first_unit = L->n_units;
        L->p[i].n_units = 1;
        L->p[i].unit_offset = align_up(cur->numel, ZERO_ALIGN);
        cur->numel = L->p[i].unit_offset + t[i].numel;
        cur->last = i;
    }
    if (open) ref_close(L, cur, a->world, &off, &shard);
    for (i = 0; i < n; i++) L->p[i].offset = L->u[L->p[i].first_unit].offset + L->p[i].unit_offset;
    L->padded_numel = off;
    L->shard_numel = shard;
    for (i = 0; i < L->n_units; i++)
        if (!L->u[i].frozen) L->shard_trainable += L->u[i].chunk;
    return 1;
}

/* ---------------------------------------------------------------------- */
/* comparing a zero_layout with the reference, element by element          */

static char names[MAXT][32];

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }

/* Returns the number of failed checks (so the caller can print the case). */
static int check_layout(const zero_layout *l, const zero_tensor *t, int n, const zero_layout_args *a) {
    static ref_layout L;
    static unsigned char *seen;
    static size_t seen_cap;
    int fail0 = zt_fail, u, i, r;
    int64_t j, total_shard;
    if (!ref_plan(&L, t, n, a)) return 0;

    CHECK_EQ_INT(zero_layout_world(l), a->world);
    CHECK_EQ_INT(zero_layout_tensor_count(l), n);
    CHECK_EQ_INT(zero_layout_unit_count(l), L.n_units);
    CHECK_EQ_INT(zero_layout_padded_numel(l), L.padded_numel);
    CHECK_EQ_INT(zero_layout_shard_numel(l, 0), L.shard_numel);
    CHECK_EQ_INT(zero_layout_shard_numel(l, 1), L.shard_trainable);
    CHECK_EQ_INT(zero_layout_shard_numel(l, 0) * a->world, zero_layout_padded_numel(l));
    if (zero_layout_unit_count(l) != L.n_units) return zt_fail - fail0;

    for (u = 0; u < L.n_units; u++) {
        const zero_unit *z = zero_layout_unit(l, u);
        const ref_unit *x = &L.u[u];
        int64_t sum_real = 0;
        if (!z) { CHECKF(z != NULL, "unit %d", u); continue; }
        CHECKF(z->offset == x->offset && z->numel == x->numel && z->padded == x->padded &&
                   z->chunk == x->chunk && z->shard_offset == x->shard_offset,
               "unit %d: offset/numel/padded/chunk/shard_offset %lld/%lld/%lld/%lld/%lld want "
               "%lld/%lld/%lld/%lld/%lld",
               u, (long long)z->offset, (long long)z->numel, (long long)z->padded, (long long)z->chunk,
               (long long)z->shard_offset, (long long)x->offset, (long long)x->numel, (long long)x->padded,
               (long long)x->chunk, (long long)x->shard_offset);
        CHECKF(z->first_tensor == x->first && z->last_tensor == x->last, "unit %d: tensors %d..%d want %d..%d", u,
               z->first_tensor, z->last_tensor, x->first, x->last);
        CHECKF(z->group == x->group && (z->frozen != 0) == x->frozen && (z->persistent != 0) == x->persistent,
               "unit %d: group/frozen/persistent %d/%d/%d want %d/%d/%d", u, z->group, z->frozen, z->persistent,
               x->group, x->frozen, x->persistent);
        /* padding and alignment invariants, stated directly */
        CHECK(z->padded % ((int64_t)a->world * ZERO_ALIGN) == 0);
        CHECK(z->offset % ZERO_ALIGN == 0 && z->chunk % ZERO_ALIGN == 0);
        CHECK(z->padded >= z->numel && z->padded - z->numel < (int64_t)a->world * ZERO_ALIGN);
        if (!x->split && a->bucket_elems > 0) CHECKF(z->numel <= a->bucket_elems, "unit %d numel %lld > bucket %lld", u,
                              (long long)z->numel, (long long)a->bucket_elems);
        for (r = 0; r < a->world; r++) {
            int64_t real = zero_layout_chunk_real(l, u, r);
            CHECKF(real == clamp64(z->numel - r * z->chunk, 0, z->chunk), "unit %d rank %d chunk_real %lld", u, r,
                   (long long)real);
            sum_real += real;
        }
        CHECK_EQ_INT(sum_real, z->numel);
        /* spans: units of one split tensor share one; every other unit has its own */
        if (u > 0) {
            const zero_unit *p = zero_layout_unit(l, u - 1);
            int same = x->split && L.u[u - 1].split && x->first == L.u[u - 1].first;
            CHECKF((p->span == z->span) == same, "units %d,%d spans %d,%d (same tensor split: %d)", u - 1, u, p->span,
                   z->span, same);
            CHECKF(z->offset == p->offset + p->padded, "unit %d not back to back", u);
        } else {
            CHECK_EQ_INT(z->offset, 0);
            CHECK_EQ_INT(z->shard_offset, 0);
        }
    }
    /* and across any two units: the same span iff pieces of one tensor */
    for (u = 1; u < L.n_units; u++) {
        int v, s = zero_layout_unit(l, u)->span, ok = 1;
        for (v = 0; v < u && ok; v++) {
            int same = L.u[u].split && L.u[v].split && L.u[u].first == L.u[v].first;
            if ((zero_layout_unit(l, v)->span == s) != same) ok = 0;
        }
        CHECKF(ok, "unit %d: span %d shared with a unit of another tensor, or not with its own pieces", u, s);
    }

    for (i = 0; i < n; i++) {
        const zero_tensor_place *p = zero_layout_tensor(l, i);
        const ref_place *x = &L.p[i];
        if (!p) { CHECKF(p != NULL, "tensor %d", i); continue; }
        CHECKF(p->offset == x->offset && p->first_unit == x->first_unit && p->n_units == x->n_units &&
                   p->unit_offset == x->unit_offset,
               "tensor %d (%s, %lld elems): offset/first_unit/n_units/unit_offset %lld/%d/%d/%lld want %lld/%d/%d/%lld", i,
               t[i].name, (long long)t[i].numel, (long long)p->offset, p->first_unit, p->n_units,
               (long long)p->unit_offset, (long long)x->offset, x->first_unit, x->n_units, (long long)x->unit_offset);
        CHECK(p->offset % ZERO_ALIGN == 0);
        CHECKF(zero_layout_tensor_name(l, i) && strcmp(zero_layout_tensor_name(l, i), t[i].name) == 0, "name of %d", i);
        CHECK_EQ_INT(zero_layout_find(l, t[i].name), i);
    }
    if (zt_fail != fail0) return zt_fail - fail0;

    /* every element of every tensor: exactly one (rank, shard offset), and
       the map agrees with the unit geometry (pieces contiguous) */
    total_shard = L.shard_numel * a->world;
    if ((size_t)total_shard > seen_cap) {
        free(seen);
        seen_cap = (size_t)total_shard;
        seen = (unsigned char *)malloc(seen_cap);
    }
    memset(seen, 0, (size_t)total_shard);
    for (i = 0; i < n; i++) {
        int bad = 0;
        for (j = 0; j < t[i].numel; j++) {
            zero_location loc;
            zero_error err;
            int64_t g = L.p[i].offset + j, in;
            const ref_unit *x;
            int want_u = L.p[i].first_unit;
            while (want_u + 1 < L.n_units && L.u[want_u + 1].offset <= g) want_u++;
            x = &L.u[want_u];
            in = g - x->offset;
            if (zero_layout_locate(l, i, j, &loc, &err) != ZERO_OK) {
                CHECKF(0, "locate(%d, %lld) failed: %s", i, (long long)j, err.msg);
                bad = 1;
                break;
            }
            if (loc.unit != want_u || loc.rank != in / x->chunk || loc.shard_offset != x->shard_offset + in % x->chunk) {
                CHECKF(0, "locate(%s, %lld) = unit %d rank %d shard %lld, want %d %lld %lld", t[i].name, (long long)j,
                       loc.unit, loc.rank, (long long)loc.shard_offset, want_u, (long long)(in / x->chunk),
                       (long long)(x->shard_offset + in % x->chunk));
                bad = 1;
                break;
            }
            if (in % x->chunk >= zero_layout_chunk_real(l, loc.unit, loc.rank)) {
                CHECKF(0, "element %lld of %s lies in padding of unit %d rank %d", (long long)j, t[i].name, loc.unit,
                       loc.rank);
                bad = 1;
                break;
            }
            if (loc.shard_offset < 0 || loc.shard_offset >= L.shard_numel ||
                seen[(size_t)loc.rank * (size_t)L.shard_numel + (size_t)loc.shard_offset]) {
                CHECKF(0, "element %lld of %s: (rank %d, shard %lld) out of range or taken twice", (long long)j,
                       t[i].name, loc.rank, (long long)loc.shard_offset);
                bad = 1;
                break;
            }
            seen[(size_t)loc.rank * (size_t)L.shard_numel + (size_t)loc.shard_offset] = 1;
            /* the pieces of a split tensor are contiguous: the unit offset
               walks with j */
            if (x->first == i && x->last == i && L.p[i].n_units > 1 &&
                g != zero_layout_unit(l, loc.unit)->offset + in) bad = 1;
        }
        CHECKF(!bad, "element map of tensor %d (%s)", i, t[i].name);
    }
    /* out-of-range queries are errors, not crashes */
    {
        zero_location loc;
        zero_error err;
        CHECK(zero_layout_locate(l, 0, t[0].numel, &loc, &err) != ZERO_OK);
        CHECK(zero_layout_locate(l, 0, -1, &loc, &err) != ZERO_OK);
        CHECK(zero_layout_locate(l, n, 0, &loc, &err) != ZERO_OK);
        CHECK(zero_layout_locate(l, -1, 0, &loc, &err) != ZERO_OK);
        CHECK(zero_layout_unit(l, L.n_units) == NULL && zero_layout_unit(l, -1) == NULL);
        CHECK(zero_layout_tensor(l, n) == NULL && zero_layout_tensor(l, -1) == NULL);
        CHECK(zero_layout_find(l, "no such tensor") == -1);
    }
    return zt_fail - fail0;
}

static void print_case(const zero_tensor *t, int n, const zero_layout_args *a) {
    int i;
    fprintf(stderr, "  case: world %d bucket %lld persist %lld/%lld tensors (numel:group:flags):", a->world,
            (long long)a->bucket_elems, (long long)a->persist_threshold, (long long)a->model_persist_threshold);
    for (i = 0; i < n; i++) fprintf(stderr, " %lld:%d:%d", (long long)t[i].numel, t[i].group, t[i].flags);
    fputc('\n', stderr);
}

/* ---------------------------------------------------------------------- */
/* hand-checked examples                                                   */

static zero_tensor mk(const char *name, int64_t numel) {
    zero_tensor t;
    memset(&t, 0, sizeof t);
    t.name = name;
    t.numel = numel;
    return t;
}

static void test_examples(void) {
    zero_layout *l = NULL;
    zero_error err;
    zero_layout_args a;
    zero_tensor t[4];
    const zero_unit *u;
    zero_location loc;

    /* deepspeed.md 4.1's [5, 7, 3] on 4 ranks, one unit: tensors at 0, 8, 16
       (aligned), numel 19, padded to 32 (4 ranks x 8), chunk 8. */
    t[0] = mk("a", 5); t[1] = mk("b", 7); t[2] = mk("c", 3);
    memset(&a, 0, sizeof a);
    a.world = 4;
    a.bucket_elems = 500000000;
    CHECK_EQ_INT(zero_layout_create(&l, t, 3, &a, &err), ZERO_OK);
    if (l) {
        CHECK_EQ_INT(zero_layout_unit_count(l), 1);
        u = zero_layout_unit(l, 0);
        CHECK_EQ_INT(u->numel, 19);
        CHECK_EQ_INT(u->padded, 32);
        CHECK_EQ_INT(u->chunk, 8);
        CHECK_EQ_INT(zero_layout_tensor(l, 1)->offset, 8);
        CHECK_EQ_INT(zero_layout_tensor(l, 2)->offset, 16);
        CHECK_EQ_INT(zero_layout_chunk_real(l, 0, 0), 8);
        CHECK_EQ_INT(zero_layout_chunk_real(l, 0, 2), 3);
        CHECK_EQ_INT(zero_layout_chunk_real(l, 0, 3), 0); /* rank 3 owns only padding */
        /* b[3] is element 11: rank 1, shard offset 3 */
        CHECK_EQ_INT(zero_layout_locate(l, 1, 3, &loc, &err), ZERO_OK);
        CHECK(loc.unit == 0 && loc.rank == 1 && loc.shard_offset == 3);
        check_layout(l, t, 3, &a);
        zero_layout_destroy(l);
        l = NULL;
    }

    /* bucket 16: "a"(5) + "b"(7) at 8 = 15 <= 16 fits; "c" would start at 16
       -> 19 > 16: new unit. A 40-element tensor on 2 ranks with bucket 16:
       W = 16, P = 16, pieces 16, 16, 8. */
    t[3] = mk("big", 40);
    a.world = 2;
    a.bucket_elems = 16;
    CHECK_EQ_INT(zero_layout_create(&l, t, 4, &a, &err), ZERO_OK);
    if (l) {
        CHECK_EQ_INT(zero_layout_unit_count(l), 5);
        CHECK_EQ_INT(zero_layout_unit(l, 0)->last_tensor, 1);
        CHECK_EQ_INT(zero_layout_unit(l, 1)->first_tensor, 2);
        CHECK_EQ_INT(zero_layout_tensor(l, 3)->first_unit, 2);
        CHECK_EQ_INT(zero_layout_tensor(l, 3)->n_units, 3);
        CHECK_EQ_INT(zero_layout_unit(l, 2)->numel, 16);
        CHECK_EQ_INT(zero_layout_unit(l, 4)->numel, 8);
        CHECK(zero_layout_unit(l, 2)->span == zero_layout_unit(l, 4)->span);
        CHECK(zero_layout_unit(l, 1)->span != zero_layout_unit(l, 2)->span);
        check_layout(l, t, 4, &a);
        zero_layout_destroy(l);
        l = NULL;
    }
    /* the same on 3 ranks: W = 24 > bucket, P = 24: pieces 24, 16 */
    a.world = 3;
    CHECK_EQ_INT(zero_layout_create(&l, t, 4, &a, &err), ZERO_OK);
    if (l) {
        CHECK_EQ_INT(zero_layout_tensor(l, 3)->n_units, 2);
        CHECK_EQ_INT(zero_layout_unit(l, 2)->numel, 24);
        CHECK_EQ_INT(zero_layout_unit(l, 3)->numel, 16);
        check_layout(l, t, 4, &a);
        zero_layout_destroy(l);
        l = NULL;
    }

    /* group, frozen and persistence changes cut units */
    t[0] = mk("w0", 3); t[1] = mk("w1", 3); t[2] = mk("w2", 3); t[3] = mk("w3", 100);
    t[1].group = 1;
    t[2].group = 1;
    t[2].flags = ZERO_TENSOR_FROZEN;
    a.world = 2;
    a.bucket_elems = 1000;
    a.persist_threshold = 10;
    CHECK_EQ_INT(zero_layout_create(&l, t, 4, &a, &err), ZERO_OK);
    if (l) {
        CHECK_EQ_INT(zero_layout_unit_count(l), 4);
        CHECK(zero_layout_unit(l, 0)->persistent && !zero_layout_unit(l, 3)->persistent);
        CHECK(zero_layout_unit(l, 2)->frozen && !zero_layout_unit(l, 1)->frozen);
        CHECK_EQ_INT(zero_layout_shard_numel(l, 1), zero_layout_shard_numel(l, 0) - zero_layout_unit(l, 2)->chunk);
        check_layout(l, t, 4, &a);
        zero_layout_destroy(l);
        l = NULL;
    }
    /* model threshold 5: w0 (3) persistent, w1 would make 6 > 5: not; w2 (3)
       likewise; with threshold 6 both w0 and w1 */
    t[2].flags = 0;
    a.model_persist_threshold = 5;
    CHECK_EQ_INT(zero_layout_create(&l, t, 4, &a, &err), ZERO_OK);
    if (l) {
        CHECK(zero_layout_unit(l, 0)->persistent);
        CHECK(!zero_layout_unit(l, 1)->persistent);
        check_layout(l, t, 4, &a);
        zero_layout_destroy(l);
        l = NULL;
    }
    /* bucket 0: one tensor per unit, the 100-element tensor not split */
    a.bucket_elems = 0;
    a.persist_threshold = 0;
    a.model_persist_threshold = 0;
    t[1].group = t[2].group = 0;
    CHECK_EQ_INT(zero_layout_create(&l, t, 4, &a, &err), ZERO_OK);
    if (l) {
        CHECK_EQ_INT(zero_layout_unit_count(l), 4);
        CHECK_EQ_INT(zero_layout_tensor(l, 3)->n_units, 1);
        CHECK_EQ_INT(zero_layout_unit(l, 3)->numel, 100);
        check_layout(l, t, 4, &a);
        zero_layout_destroy(l);
        l = NULL;
    }
    zero_layout_destroy(NULL); /* no-op */
}

/* ---------------------------------------------------------------------- */
/* random tensor lists                                                     */

static const int64_t primes[] = {2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 61, 97, 101, 127, 257, 509, 1021};

static int64_t rand_size(int world, int64_t bucket) {
    int64_t big = bucket < 4000 ? bucket : 4000;
    switch (zt_rand_int(0, 7)) {
    case 0: return 1;
    case 1: return primes[zt_rand_int(0, (long)(sizeof primes / sizeof primes[0]) - 1)];
    case 2: return zt_rand_int(1, world > 1 ? world - 1 : 1); /* smaller than the world */
    case 3: return zt_rand_int(1, 64);
    case 4: return zt_rand_int(1, big > 1 ? big : 1);
    case 5: return big * zt_rand_int(1, 3) + primes[zt_rand_int(0, 10)]; /* larger than the bucket */
    case 6: return (int64_t)world * ZERO_ALIGN * zt_rand_int(1, 4); /* exact multiples */
    default: return zt_rand_int(1, 300);
    }
}

static void test_random(int iters) {
    static const int worlds[] = {1, 2, 3, 4, 5, 7, 8, 16};
    static const int64_t buckets[] = {0, 1, 7, 8, 16, 24, 100, 1000, 500000000};
    zero_tensor t[MAXT];
    int it, failed_cases = 0;
    for (it = 0; it < iters; it++) {
        zero_layout_args a;
        zero_layout *l = NULL;
        zero_error err;
        int n = (int)zt_rand_int(1, 40), i, group = 0, frozen = 0;
        int64_t total = 0;
        memset(&a, 0, sizeof a);
        a.world = worlds[zt_rand_int(0, 7)];
        a.bucket_elems = buckets[zt_rand_int(0, 8)];
        if (zt_rand_int(0, 2) == 0) {
            a.persist_threshold = zt_rand_int(1, a.bucket_elems > 0 && a.bucket_elems < 64 ? a.bucket_elems : 64);
            if (zt_rand_int(0, 1)) a.model_persist_threshold = zt_rand_int(1, 200);
        }
        for (i = 0; i < n; i++) {
            memset(&t[i], 0, sizeof t[i]);
            snprintf(names[i], sizeof names[i], "layer%d.t%d", group, i);
            t[i].name = names[i];
            t[i].numel = rand_size(a.world, a.bucket_elems);
            if (total + t[i].numel > 200000) t[i].numel = 1 + (int64_t)zt_rand_int(0, 30); /* keep the walk fast */
            total += t[i].numel;
            if (zt_rand_int(0, 5) == 0) group++;
            if (zt_rand_int(0, 6) == 0) frozen = !frozen;
            t[i].group = group;
            t[i].flags = (frozen ? ZERO_TENSOR_FROZEN : 0) | (zt_rand_int(0, 3) == 0 ? ZERO_TENSOR_NO_DECAY : 0);
            if (zt_rand_int(0, 3) == 0) { /* a 2-d shape */
                int64_t d = t[i].numel % 3 == 0 ? 3 : 1;
                t[i].ndim = 2;
                t[i].shape[0] = d;
                t[i].shape[1] = t[i].numel / d;
            }
        }
        if (zero_layout_create(&l, t, n, &a, &err) != ZERO_OK) {
            CHECKF(0, "zero_layout_create: %s", err.msg);
            print_case(t, n, &a);
            failed_cases++;
            continue;
        }
        CHECK(l != NULL);
        if (check_layout(l, t, n, &a)) {
            print_case(t, n, &a);
            failed_cases++;
        }
        /* unit boundaries do not depend on the world size, except where a
           tensor is split */
        {
            zero_layout *l1 = NULL;
            zero_layout_args a1 = a;
            a1.world = 1;
            if (zero_layout_create(&l1, t, n, &a1, &err) == ZERO_OK) {
                int u = 0, v = 0, ok = 1;
                int nu = zero_layout_unit_count(l), nv = zero_layout_unit_count(l1);
                while (u < nu && v < nv) {
                    const zero_unit *x = zero_layout_unit(l, u), *y = zero_layout_unit(l1, v);
                    int xs = zero_layout_tensor(l, x->first_tensor)->n_units > 1;
                    int ys = zero_layout_tensor(l1, y->first_tensor)->n_units > 1;
                    if (xs || ys) { /* skip all pieces of the split tensor in both */
                        int tt = x->first_tensor;
                        if (y->first_tensor != tt) { ok = 0; break; }
                        while (u < nu && zero_layout_unit(l, u)->first_tensor == tt) u++;
                        while (v < nv && zero_layout_unit(l1, v)->first_tensor == tt) v++;
                        continue;
                    }
                    if (x->first_tensor != y->first_tensor || x->last_tensor != y->last_tensor ||
                        x->numel != y->numel) { ok = 0; break; }
                    u++, v++;
                }
                CHECKF(ok && u == nu && v == nv, "units differ between world %d and world 1", a.world);
                zero_layout_destroy(l1);
            } else {
                CHECKF(0, "world 1: %s", err.msg);
            }
        }
        zero_layout_destroy(l);
        if (failed_cases > 5) {
            fprintf(stderr, "test_random: stopping after %d failed cases\n", failed_cases);
            break;
        }
    }
}

/* ---------------------------------------------------------------------- */
/* invalid input                                                           */

static void expect_error(const char *what, const zero_tensor *t, int n, const zero_layout_args *a, zero_msg item,
                         const char *name_in_msg) {
    zero_layout *l = (zero_layout *)(uintptr_t)1; /* must be overwritten or left alone, never used */
    zero_error err;
    zero_result r;
    memset(&err, 0, sizeof err);
    r = zero_layout_create(&l, t, n, a, &err);
    CHECKF(r != ZERO_OK, "%s: accepted", what);
    CHECKF(err.code == r, "%s: err.code %d != result %d", what, (int)err.code, (int)r);
    if (item != ZERO_MSG_NONE)
        CHECKF(err.item == item, "%s: item %s want %s (%s)", what, zero_msg_name(err.item), zero_msg_name(item), err.msg);
    CHECKF(err.msg[0] != 0, "%s: empty message", what);
    if (name_in_msg) CHECKF(strstr(err.msg, name_in_msg) != NULL, "%s: message lacks \"%s\": %s", what, name_in_msg, err.msg);
    if (r == ZERO_OK && l && l != (zero_layout *)(uintptr_t)1) zero_layout_destroy(l);
}

static void test_invalid(void) {
    zero_tensor t[3];
    zero_layout_args a;
    memset(&a, 0, sizeof a);
    a.world = 2;
    a.bucket_elems = 100;
    t[0] = mk("emb.weight", 10); t[1] = mk("fc.weight", 6); t[2] = mk("fc.bias", 3);

    t[1].numel = 0;
    expect_error("numel 0", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    t[1].numel = -5;
    expect_error("numel < 0", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    t[1].numel = 6;
    t[1].name = NULL;
    expect_error("NULL name", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "after 'emb.weight'): its name is NULL");
    t[1].name = "";
    expect_error("empty name", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "its name is \"\" (empty)");
    {
        char longname[260];
        memset(longname, 'x', sizeof longname - 1);
        longname[sizeof longname - 1] = 0;
        t[1].name = longname;
        expect_error("a name past 200 bytes", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "its name is 259 bytes, 200 at most");
    }
    t[1].name = "emb.weight";
    expect_error("duplicate name", t, 3, &a, ZERO_MSG_LAYOUT_DUPLICATE_NAME, "emb.weight");
    t[1].name = "fc.weight";
    t[1].ndim = 2; t[1].shape[0] = 2; t[1].shape[1] = 4;
    expect_error("shape product 8 != 6", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    t[1].shape[0] = -2; t[1].shape[1] = -3;
    expect_error("negative dims with product 6", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    /* an extent past any numel beside a zero, in either order, and beside a small one: every extent is
       checked, the product never overflows */
    t[1].shape[0] = 0; t[1].shape[1] = (int64_t)1 << 62;
    expect_error("shape [0, 2^62]", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "'fc.weight': shape[0] = 0 does not fit numel 6");
    t[1].shape[0] = (int64_t)1 << 62; t[1].shape[1] = 0;
    expect_error("shape [2^62, 0]", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "'fc.weight': shape[1] = 0 does not fit numel 6");
    t[1].shape[0] = 2; t[1].shape[1] = (int64_t)1 << 62;
    expect_error("shape [2, 2^62]", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "'fc.weight': shape[1] = 4611686018427387904");
    t[1].shape[0] = INT64_MAX; t[1].shape[1] = INT64_MAX;
    expect_error("shape [2^63-1, 2^63-1]", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "'fc.weight': shape[1] = 9223372036854775807");
    t[1].ndim = ZERO_MAX_DIMS + 1;
    expect_error("ndim > ZERO_MAX_DIMS", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    t[1].ndim = -1;
    expect_error("ndim < 0", t, 3, &a, ZERO_MSG_LAYOUT_TENSOR, "fc.weight");
    t[1].ndim = 2; t[1].shape[0] = 2; t[1].shape[1] = 3;
    {
        zero_layout *l = NULL;
        zero_error err;
        CHECK_EQ_INT(zero_layout_create(&l, t, 3, &a, &err), ZERO_OK); /* the good shape is fine */
        zero_layout_destroy(l);
    }
    a.world = 0;
    expect_error("world 0", t, 3, &a, ZERO_MSG_NONE, "world");
    a.world = -3;
    expect_error("world < 0", t, 3, &a, ZERO_MSG_NONE, "world");
    a.world = 2;
    a.bucket_elems = -1;
    expect_error("bucket_elems < 0", t, 3, &a, ZERO_MSG_NONE, NULL);
    a.bucket_elems = 100;
    expect_error("n_tensors < 0", t, -1, &a, ZERO_MSG_NONE, NULL);
    expect_error("tensors NULL", NULL, 3, &a, ZERO_MSG_NONE, NULL);
    expect_error("args NULL", t, 3, NULL, ZERO_MSG_NONE, NULL);
    {
        zero_error err;
        CHECK(zero_layout_create(NULL, t, 3, &a, &err) != ZERO_OK);
        CHECK(zero_layout_create(NULL, t, 3, &a, NULL) != ZERO_OK); /* err may be NULL */
    }
}

/* zero_tensors_of_kinds: llm.c's ParameterTensors (two whole kinds, twelve stacked over L layers, two whole)
   in forward order, groups per layer, each slice's pointers, shapes given after a colon; bad input refused
   naming the kind */
static void test_kinds(void) {
    enum { L = 3, NK = 16 };
    static float mem[1 << 16], gmem[1 << 16];
    void *data[NK], *grad[NK];
    size_t numel[NK];
    zero_tensor ts[64];
    char names[64][64];
    zero_error err;
    const char *kinds = "wte wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb  lnfw lnfb ";
    size_t at = 0;
    int k, n, l;
    for (k = 0; k < NK; k++) {
        numel[k] = (size_t)(k >= 2 && k < 14 ? L * (k + 5) : 7 + k);
        data[k] = mem + at, grad[k] = gmem + at;
        at += numel[k];
    }
    n = zero_tensors_of_kinds(kinds, data, grad, numel, 2, 14, L, sizeof(float), ts, 64, names, &err);
    CHECKF(n == 2 + 12 * L + 2, "%d tensors: %s", n, err.msg);
    CHECK(!strcmp(ts[0].name, "wte") && ts[0].group == 0 && ts[0].data == data[0] && ts[0].numel == 7);
    CHECK(!strcmp(ts[1].name, "wpe") && ts[1].group == 0 && ts[1].grad == grad[1]);
    for (l = 0; l < L; l++)
        for (k = 2; k < 14; k++) {
            const zero_tensor *t = &ts[2 + l * 12 + (k - 2)];
            char want[64];
            snprintf(want, sizeof want, "h.%d.qkvw", l);
            CHECK(t->group == 1 + l && t->numel == k + 5 && t->data == (char *)data[k] + (size_t)l * (k + 5) * 4 &&
                  t->grad == (char *)grad[k] + (size_t)l * (k + 5) * 4);
            if (k == 4) CHECKF(!strcmp(t->name, want), "%s", t->name);
        }
    CHECK(!strcmp(ts[n - 2].name, "lnfw") && ts[n - 1].group == L + 1 && ts[n - 1].data == data[15]);
    /* refused: a numel the layers do not divide, a bad range, too small a table, NULL grad allowed */
    numel[4] += 1;
    CHECK(zero_tensors_of_kinds(kinds, data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == -1 &&
          strstr(err.msg, "kind 'qkvw'") && strstr(err.msg, "do not split"));
    numel[4] -= 1;
    CHECK(zero_tensors_of_kinds(kinds, data, grad, numel, 2, 17, L, 4, ts, 64, names, &err) == -1 &&
          strstr(err.msg, "of 16 kinds"));
    CHECK(zero_tensors_of_kinds(kinds, data, grad, numel, 2, 14, L, 4, ts, 10, names, &err) == -1 &&
          strstr(err.msg, "more than cap (10)"));
    CHECK(zero_tensors_of_kinds(kinds, data, NULL, numel, 2, 14, L, 4, ts, 64, names, &err) == n && ts[5].grad == NULL);
    CHECK(zero_tensors_of_kinds(NULL, data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == -1 &&
          strstr(err.msg, "kinds is NULL"));
    /* shapes after a colon: every layer's slice of qkvw (9 elements) 3 x 3, of fcw (15) 3 x 5, wte (7) 7 x 1 x 1;
       the other kinds flat */
    {
        const char *shaped = "wte:7x1x1 wpe ln1w ln1b qkvw:3x3 qkvb attprojw attprojb ln2w ln2b fcw:3x5 fcb fcprojw "
                             "fcprojb lnfw lnfb";
        int bad = 0;
        CHECKF(zero_tensors_of_kinds(shaped, data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == n, "%s", err.msg);
        CHECK(ts[0].ndim == 3 && ts[0].shape[0] == 7 && ts[0].shape[1] == 1 && ts[0].shape[2] == 1 &&
              !strcmp(ts[0].name, "wte") && ts[1].ndim == 0);
        for (l = 0; l < L; l++)
            for (k = 2; k < 14; k++) {
                const zero_tensor *t = &ts[2 + l * 12 + (k - 2)];
                if (k == 4) bad += !(t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 3);
                else if (k == 10) bad += !(t->ndim == 2 && t->shape[0] == 3 && t->shape[1] == 5);
                else bad += t->ndim != 0;
            }
        CHECKF(bad == 0, "%d stacked tensors with the wrong shape", bad);
        CHECK(zero_tensors_of_kinds("wte wpe ln1w ln1b qkvw:2x3 qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb "
                                    "lnfw lnfb", data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == -1 &&
              strstr(err.msg, "kind 'qkvw': its shape holds 6 elements, its layer's slice 9"));
        CHECK(zero_tensors_of_kinds("wte:6 wpe ln1w ln1b qkvw qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb "
                                    "lnfw lnfb", data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == -1 &&
              strstr(err.msg, "kind 'wte': its shape holds 6 elements, its numel 7"));
        CHECK(zero_tensors_of_kinds("wte wpe ln1w ln1b qkvw:3x qkvb attprojw attprojb ln2w ln2b fcw fcb fcprojw fcprojb "
                                    "lnfw lnfb", data, grad, numel, 2, 14, L, 4, ts, 64, names, &err) == -1 &&
              strstr(err.msg, "kind 'qkvw': its shape after ':'"));
        CHECK(zero_tensors_of_kinds("wte:0x7 wpe", data, grad, numel, 0, 0, L, 4, ts, 64, names, &err) == -1 &&
              strstr(err.msg, "kind 'wte': its shape after ':'"));
        CHECK(zero_tensors_of_kinds("wte:7a wpe", data, grad, numel, 0, 0, L, 4, ts, 64, names, &err) == -1 &&
              strstr(err.msg, "kind 'wte': its shape after ':'"));
    }
}

int main(void) {
    int quick = getenv("ZERO_TEST_QUICK") && atoi(getenv("ZERO_TEST_QUICK"));
    test_kinds();
    zt_seed("test_layout");
    test_examples();
    test_random(quick ? 300 : 3000);
    test_invalid();
    return zt_finish();
}
