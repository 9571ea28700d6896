/* test_sched.c - the loss scaler and the LR schedules against DeepSpeed's
   worked numbers (the scaler's example run and the schedules' table, both in
   docs/schedules.md) and against plain, independently written simulations
   of DeepSpeed's code.

   Run alone: make test T=test_sched */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_test.h"

/* ---------------------------------------------------------------------- */
/* helpers                                                                */

static zero_config fp16_cfg(int stage, int power, int64_t window, int hysteresis, int consecutive,
                            double min_scale) {
    zero_config c = zero_config_default();
    c.fp16.enabled = 1;
    c.fp16.loss_scale = 0;
    c.fp16.initial_scale_power = power;
    c.fp16.loss_scale_window = window;
    c.fp16.hysteresis = hysteresis;
    c.fp16.consecutive_hysteresis = consecutive;
    c.fp16.min_loss_scale = min_scale;
    c.zero_optimization.stage = stage;
    return c;
}

/* relative 1e-7, or absolute 1e-12 when the expected value is 0 */
static int close_rel(double got, double want, double rel) {
    if (want == 0.0) return fabs(got) <= 1e-12;
    return fabs(got - want) <= rel * fabs(want);
}
#define CHECK_CLOSE(got, want, ...)                                                         \
    do {                                                                                     \
        double g_ = (got), w_ = (want);                                                      \
        CHECKF(close_rel(g_, w_, 1e-7), "got %.17g want %.17g: ", g_, w_);                   \
        if (!close_rel(g_, w_, 1e-7)) {                                                      \
            fprintf(stderr, "    at: ");                                                     \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fputc('\n', stderr);                                                             \
        }                                                                                    \
    } while (0)

static int scaler_same(const zero_loss_scaler *a, const zero_loss_scaler *b) {
    return a->cur_scale == b->cur_scale && a->min_scale == b->min_scale &&
           a->scale_factor == b->scale_factor && a->scale_window == b->scale_window &&
           a->delayed_shift == b->delayed_shift && a->cur_hysteresis == b->cur_hysteresis &&
           a->consecutive_hysteresis == b->consecutive_hysteresis && a->cur_iter == b->cur_iter &&
           a->last_overflow_iter == b->last_overflow_iter && a->dynamic == b->dynamic &&
           a->zero_rules == b->zero_rules && a->valid == b->valid;
}

/* ---------------------------------------------------------------------- */
/* the scaler's worked example, iteration by iteration                    */

static void test_worked_example(void) {
    /* iter:              0  1  2  3  4  5  6  7  8  9 10 11 12 13 14 15 16 17 18 */
    static const int ev[] = {1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0};
    /* DeepSpeed 0.19's row */
    static const double want[] = {65536,  32768,  32768,  32768,  32768, 32768, 65536,
                                  65536,  65536,  65536,  131072, 131072, 131072, 65536,
                                  65536,  65536,  65536,  65536,  131072};
    /* consecutive_hysteresis = true: the clean step at 12 refills h, so the
       overflow at 13 only decrements it; the rest follows from the rule
       (grow at 18, k = 18 - 13 - 1 = 4). */
    static const double want_consec[] = {65536,  32768,  32768,  32768,  32768,  32768, 65536,
                                         65536,  65536,  65536,  131072, 131072, 131072, 131072,
                                         131072, 131072, 131072, 131072, 262144};
    /* DeepSpeed 0.16's row, which zero must NOT reproduce (iterations where it differs) */
    static const double old_row[] = {65536,  32768,  32768,  32768,  32768, 65536, 65536,
                                     65536,  65536,  131072, 131072, 131072, 131072, 65536,
                                     65536,  65536,  65536,  131072, 131072};
    int n = (int)(sizeof ev / sizeof ev[0]), i, differs_from_old = 0;
    zero_config c = fp16_cfg(2, 16, 4, 2, 0, 1);
    zero_loss_scaler s;

    zero_loss_scaler_init(&s, &c);
    CHECK(s.valid && s.dynamic && s.zero_rules);
    CHECK(zero_loss_scaler_scale(&s) == 65536.0);
    CHECK_EQ_INT(s.cur_hysteresis, 2);
    for (i = 0; i < n; i++) {
        CHECK_EQ_INT(zero_loss_scaler_update(&s, ev[i]), ZERO_OK);
        CHECKF(zero_loss_scaler_scale(&s) == want[i], "iter %d: S %g want %g", i,
               zero_loss_scaler_scale(&s), want[i]);
        if (zero_loss_scaler_scale(&s) != old_row[i]) differs_from_old++;
        /* hysteresis values the table states */
        if (i == 0) CHECK_EQ_INT(s.cur_hysteresis, 1);  /* h 2 -> 1 */
        if (i == 1) CHECK_EQ_INT(s.cur_hysteresis, 1);  /* drained: halves */
        if (i == 5) CHECK_EQ_INT(s.cur_hysteresis, 1);  /* not refilled by clean steps */
        if (i == 6) CHECK_EQ_INT(s.cur_hysteresis, 2);  /* refilled when S grows */
        if (i == 11) CHECK_EQ_INT(s.cur_hysteresis, 1); /* h 2 -> 1 */
        if (i == 12) CHECK_EQ_INT(s.cur_hysteresis, 1);
        if (i == 13) CHECK_EQ_INT(s.cur_hysteresis, 1);
        if (i == 18) CHECK_EQ_INT(s.cur_hysteresis, 2);
    }
    CHECK_EQ_INT(s.cur_iter, n);
    CHECK_EQ_INT(s.last_overflow_iter, 13);
    CHECK_EQ_INT(differs_from_old, 3); /* iterations 5, 9 and 17: OLD grows one step earlier */

    c.fp16.consecutive_hysteresis = 1;
    zero_loss_scaler_init(&s, &c);
    for (i = 0; i < n; i++) {
        CHECK_EQ_INT(zero_loss_scaler_update(&s, ev[i]), ZERO_OK);
        CHECKF(zero_loss_scaler_scale(&s) == want_consec[i], "consecutive iter %d: S %g want %g", i,
               zero_loss_scaler_scale(&s), want_consec[i]);
        if (i == 12) CHECK_EQ_INT(s.cur_hysteresis, 2); /* refilled by the clean step */
        if (i == 13) CHECK_EQ_INT(s.cur_hysteresis, 1); /* only decremented, S kept */
        if (i == 14) CHECK_EQ_INT(s.cur_hysteresis, 2);
    }

    /* the same events under stage 0 (FP16_Optimizer): no hysteresis, every
       overflow halves: 0:32768 1:16384, grow at 6 and 10, 11 halves, 13
       halves, grow at 18 */
    {
        static const double want0[] = {32768, 16384, 16384, 16384, 16384, 16384, 32768,
                                       32768, 32768, 32768, 65536, 32768, 32768, 16384,
                                       16384, 16384, 16384, 16384, 32768};
        c = fp16_cfg(0, 16, 4, 2, 0, 1);
        zero_loss_scaler_init(&s, &c);
        CHECK(!s.zero_rules);
        for (i = 0; i < n; i++) {
            CHECK_EQ_INT(zero_loss_scaler_update(&s, ev[i]), ZERO_OK);
            CHECKF(zero_loss_scaler_scale(&s) == want0[i], "stage 0 iter %d: S %g want %g", i,
                   zero_loss_scaler_scale(&s), want0[i]);
        }
    }

    /* fresh run, no overflow: NEW grows at 0-based iteration `window` */
    c = fp16_cfg(1, 10, 5, 2, 0, 1);
    zero_loss_scaler_init(&s, &c);
    for (i = 0; i < 5; i++) zero_loss_scaler_update(&s, 0);
    CHECK(zero_loss_scaler_scale(&s) == 1024.0); /* OLD would be 2048 here */
    zero_loss_scaler_update(&s, 0);              /* iteration 5 */
    CHECK(zero_loss_scaler_scale(&s) == 2048.0);
    for (i = 0; i < 4; i++) zero_loss_scaler_update(&s, 0);
    CHECK(zero_loss_scaler_scale(&s) == 2048.0);
    zero_loss_scaler_update(&s, 0); /* iteration 10 */
    CHECK(zero_loss_scaler_scale(&s) == 4096.0);
}

/* ---------------------------------------------------------------------- */
/* min scale, static, bf16/fp32, unresolved                                */

static void test_scaler_edges(void) {
    zero_config c;
    zero_loss_scaler s, before;
    int i;

    /* ZeRO: S0 = 4, min 1, hysteresis 1: 4 -> 2 -> 1 -> error */
    c = fp16_cfg(2, 2, 1000, 1, 0, 1);
    zero_loss_scaler_init(&s, &c);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 2.0);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    before = s;
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_ERR_LOSS_SCALE);
    CHECK(scaler_same(&s, &before)); /* DeepSpeed raises before changing anything */
    CHECK_EQ_INT(s.cur_iter, 2);
    CHECK_EQ_INT(s.last_overflow_iter, 1);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_ERR_LOSS_SCALE); /* and again */
    CHECK(scaler_same(&s, &before));
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 0), ZERO_OK); /* a clean step still works */
    CHECK_EQ_INT(s.cur_iter, 3);
    /* the item behind the code */
    CHECK_EQ_INT(zero__msg_results[ZERO_MSG_LOSS_SCALE_AT_MIN], ZERO_ERR_LOSS_SCALE);

    /* a non-power-of-two minimum: 2 -> max(1, 1.5) = 1.5 -> error */
    c = fp16_cfg(3, 1, 1000, 1, 0, 1.5);
    zero_loss_scaler_init(&s, &c);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 1.5);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_ERR_LOSS_SCALE);
    CHECK(zero_loss_scaler_scale(&s) == 1.5);

    /* hysteresis 2 at the minimum: the first overflow only drains h */
    c = fp16_cfg(1, 0, 1000, 2, 0, 1);
    zero_loss_scaler_init(&s, &c);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK_EQ_INT(s.cur_hysteresis, 1);
    before = s;
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_ERR_LOSS_SCALE);
    CHECK(scaler_same(&s, &before));

    /* stage 0 (FP16_Optimizer): clamps at the minimum, never an error */
    c = fp16_cfg(0, 2, 1000, 2, 0, 1);
    zero_loss_scaler_init(&s, &c);
    for (i = 0; i < 10; i++) CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    CHECK_EQ_INT(s.cur_iter, 10);
    CHECK_EQ_INT(s.last_overflow_iter, 9);

    /* static scale: never changes, update is a no-op */
    c = fp16_cfg(2, 16, 4, 2, 0, 1);
    c.fp16.loss_scale = 128;
    zero_loss_scaler_init(&s, &c);
    CHECK(s.valid && !s.dynamic);
    CHECK(zero_loss_scaler_scale(&s) == 128.0);
    for (i = 0; i < 50; i++) CHECK_EQ_INT(zero_loss_scaler_update(&s, i % 3 == 0), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 128.0);
    c.zero_optimization.stage = 0;
    zero_loss_scaler_init(&s, &c);
    for (i = 0; i < 50; i++) CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 128.0);

    /* bf16 and fp32: S = 1 whatever the fp16 block says */
    c = fp16_cfg(2, 16, 4, 2, 0, 1);
    c.fp16.enabled = 0;
    c.bf16.enabled = 1;
    zero_loss_scaler_init(&s, &c);
    CHECK(s.valid && !s.dynamic);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    for (i = 0; i < 20; i++) CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_OK);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    c.bf16.enabled = 0;
    c.fp16.loss_scale = 64; /* ignored without fp16 */
    zero_loss_scaler_init(&s, &c);
    CHECK(zero_loss_scaler_scale(&s) == 1.0);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 0), ZERO_OK);
    c = zero_config_default(); /* plain defaults: fp32 */
    zero_loss_scaler_init(&s, &c);
    CHECK(s.valid && zero_loss_scaler_scale(&s) == 1.0);

    /* defaults with fp16 on: S0 = 2^16, window 1000, hysteresis 2, min 1 */
    c = zero_config_default();
    c.fp16.enabled = 1;
    zero_loss_scaler_init(&s, &c);
    CHECK(s.dynamic && zero_loss_scaler_scale(&s) == 65536.0);
    CHECK_EQ_INT(s.scale_window, 1000);
    CHECK_EQ_INT(s.delayed_shift, 2);
    CHECK(s.min_scale == 1.0 && s.scale_factor == 2.0);
    CHECK_EQ_INT(s.last_overflow_iter, -1);
    CHECK_EQ_INT(s.zero_rules, 0); /* default stage 0 */

    /* unresolved: fp16.enabled still "auto" */
    c = zero_config_default();
    c.fp16.enabled = ZERO_AUTO;
    zero_loss_scaler_init(&s, &c);
    CHECK(!s.valid);
    CHECK(isnan(zero_loss_scaler_scale(&s)));
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 0), ZERO_ERR_STATE);
    CHECK_EQ_INT(zero_loss_scaler_update(&s, 1), ZERO_ERR_STATE);
    CHECK(isnan(zero_loss_scaler_scale(&s)));
    CHECK_EQ_INT(zero__msg_results[ZERO_MSG_LOSS_SCALER_UNRESOLVED], ZERO_ERR_STATE);
    /* NULL arguments */
    zero_loss_scaler_init(&s, NULL);
    CHECK(!s.valid && isnan(zero_loss_scaler_scale(&s)));
    CHECK(isnan(zero_loss_scaler_scale(NULL)));
    CHECK_EQ_INT(zero_loss_scaler_update(NULL, 0), ZERO_ERR_INVALID_ARG);
    zero_loss_scaler_init(NULL, &c); /* must not crash */
}

/* ---------------------------------------------------------------------- */
/* randomized loss scaler against a transcription of the pseudocode       */

typedef struct sim_scaler {
    double cur_scale, min_scale;
    long window;
    int delayed_shift, cur_hysteresis, consecutive, raise_at_min;
    long cur_iter, last_overflow_iter;
} sim_scaler;

/* deepspeed.md 1.3, line by line. raise_at_min = 1: DynamicLossScaler (ZeRO).
   raise_at_min = 0 and no hysteresis: FP16_Optimizer._update_scale.
   Returns 0, or 1 where DeepSpeed raises. */
static int sim_update(sim_scaler *s, int overflow) {
    if (overflow) {
        if (!s->raise_at_min) { /* FP16_Optimizer */
            s->cur_scale = fmax(s->cur_scale / 2.0, s->min_scale);
        } else if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
            if (s->cur_scale == s->min_scale) return 1; /* raise "loss scale already at minimum" */
            s->cur_scale = fmax(s->cur_scale / 2.0, s->min_scale);
        } else {
            s->cur_hysteresis -= 1;
        }
        s->last_overflow_iter = s->cur_iter;
    } else {
        long k;
        if (s->raise_at_min && s->consecutive) s->cur_hysteresis = s->delayed_shift;
        k = s->cur_iter - s->last_overflow_iter - 1;
        if (k > 0 && k % s->window == 0) {
            if (s->raise_at_min && !s->consecutive) s->cur_hysteresis = s->delayed_shift;
            s->cur_scale = s->cur_scale * 2.0;
        }
    }
    s->cur_iter += 1;
    return 0;
}

static void test_scaler_random(void) {
    int cfgs, errors_seen = 0, grows_seen = 0, stage0_clamps = 0;
    for (cfgs = 0; cfgs < 500; cfgs++) {
        int stage = zt_rand_int(0, 1) ? 2 : 0;
        int power = (int)zt_rand_int(0, 24);
        long window = zt_rand_int(1, 50);
        int hyst = (int)zt_rand_int(1, 4);
        int consec = (int)zt_rand_int(0, 1);
        double min_scale = ldexp(1.0, (int)zt_rand_int(0, 8));
        double p = zt_rand01() < 0.3 ? zt_rand_range(0.0, 0.08) : zt_rand_range(0.0, 0.7);
        zero_config c = fp16_cfg(stage, power, window, hyst, consec, min_scale);
        zero_loss_scaler s;
        sim_scaler m;
        int step, grew = 0;

        m.cur_scale = ldexp(1.0, power);
        m.min_scale = min_scale;
        m.window = window;
        m.delayed_shift = m.cur_hysteresis = hyst;
        m.consecutive = consec;
        m.raise_at_min = stage >= 1;
        m.cur_iter = 0;
        m.last_overflow_iter = -1;

        zero_loss_scaler_init(&s, &c);
        CHECK(s.valid && s.dynamic);
        CHECK(zero_loss_scaler_scale(&s) == m.cur_scale);
        for (step = 0; step < 200; step++) {
            int ov = zt_rand01() < p;
            double before_scale = m.cur_scale;
            zero_loss_scaler saved = s;
            int raised = sim_update(&m, ov);
            zero_result r = zero_loss_scaler_update(&s, ov);
            if (raised) {
                CHECKF(r == ZERO_ERR_LOSS_SCALE, "cfg %d step %d: result %d, want LOSS_SCALE", cfgs,
                       step, (int)r);
                CHECKF(scaler_same(&s, &saved), "cfg %d step %d: state changed on error", cfgs, step);
                errors_seen++;
                break; /* DeepSpeed exits the run */
            }
            if (m.cur_scale > before_scale && !ov) grew = 1;
            if (stage == 0 && ov && before_scale == min_scale) stage0_clamps++;
            CHECKF(r == ZERO_OK, "cfg %d step %d: result %d", cfgs, step, (int)r);
            if (s.cur_scale != m.cur_scale || s.cur_iter != m.cur_iter ||
                s.last_overflow_iter != m.last_overflow_iter ||
                (stage >= 1 && s.cur_hysteresis != m.cur_hysteresis)) {
                CHECKF(0,
                       "cfg %d (stage %d power %d window %ld hyst %d consec %d min %g) step %d ov %d: "
                       "S %g/%g h %d/%d iter %lld/%ld last %lld/%ld",
                       cfgs, stage, power, window, hyst, consec, min_scale, step, ov, s.cur_scale,
                       m.cur_scale, s.cur_hysteresis, m.cur_hysteresis, (long long)s.cur_iter,
                       m.cur_iter, (long long)s.last_overflow_iter, m.last_overflow_iter);
                break;
            }
            zt_pass++;
        }
        grows_seen += grew;
    }
    /* the random sequences really reached the interesting cases */
    CHECKF(errors_seen > 0, "no sequence hit the error at min scale");
    CHECKF(grows_seen > 0, "no sequence grew the scale");
    CHECKF(stage0_clamps > 0, "no stage-0 sequence overflowed at the minimum");
}

/* ---------------------------------------------------------------------- */
/* the schedules' numeric table                                            */

/* |got - printed| within half a unit of the printed value's last digit */
static int matches_printed(double got, const char *printed) {
    const char *p = printed;
    int digits = 0, seen_point = 0, after_point = 0, exp10 = 0;
    double half_unit;
    if (strtod(printed, NULL) == 0.0) return fabs(got) <= 1e-12;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            seen_point = 1;
        } else if (*p >= '0' && *p <= '9') {
            if (digits || *p != '0') digits++;
            if (seen_point) after_point++;
        }
    }
    if (*p) exp10 = atoi(p + 1);
    half_unit = 0.5 * pow(10.0, exp10 - after_point);
    return fabs(got - strtod(printed, NULL)) <= half_unit * (1 + 1e-9);
}

static void test_table_26(void) {
    /* it, WarmupLR log, linear, WarmupDecayLR log, linear, WarmupCosineLR NEW (as printed) */
    static const struct { long it; const char *v[5]; } rows[] = {
        {-1, {"0", "0", "0", "0", "0"}},
        {0, {"0", "0", "0", "0", "0"}},
        {1, {"3.0103e-4", "1e-4", "3.0103e-4", "1e-4", "1e-4"}},
        {2, {"4.77121e-4", "2e-4", "4.77121e-4", "2e-4", "2e-4"}},
        {3, {"6.0206e-4", "3e-4", "6.0206e-4", "3e-4", "3e-4"}},
        {5, {"7.78151e-4", "5e-4", "7.78151e-4", "5e-4", "5e-4"}},
        {8, {"9.54243e-4", "8e-4", "9.54243e-4", "8e-4", "8e-4"}},
        {9, {"1e-3", "9e-4", "1e-3", "9e-4", "9e-4"}},
        {10, {"1e-3", "1e-3", "1e-3", "1e-3", "9.75531e-4"}},
        {11, {"1e-3", "1e-3", "9e-4", "9e-4", "9.04518e-4"}},
        {14, {"1e-3", "1e-3", "6e-4", "6e-4", "5.0005e-4"}},
        {18, {"1e-3", "1e-3", "2e-4", "2e-4", "2.45693e-5"}},
        {19, {"1e-3", "1e-3", "1e-4", "1e-4", "1e-7"}},
        {20, {"1e-3", "1e-3", "0", "0", "1e-7"}},
        {22, {"1e-3", "1e-3", "0", "0", "1e-7"}},
    };
    static const char *const names[5] = {"WarmupLR log", "WarmupLR linear", "WarmupDecayLR log",
                                         "WarmupDecayLR linear", "WarmupCosineLR NEW"};
    const double pi = 3.14159265358979323846;
    size_t r;
    int col;
    for (r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        long it = rows[r].it;
        for (col = 0; col < 5; col++) {
            zero_config c = zero_config_default();
            double got, exact;
            c.optimizer.lr = 1e-3;
            c.scheduler.warmup_min_lr = 0;
            c.scheduler.warmup_max_lr = 1e-3;
            c.scheduler.warmup_num_steps = 10;
            c.scheduler.total_num_steps = 20;
            c.scheduler.warmup_type = (col == 0 || col == 2) ? ZERO_WARMUP_LOG : ZERO_WARMUP_LINEAR;
            c.scheduler.type = col < 2   ? ZERO_SCHEDULER_WARMUP_LR
                               : col < 4 ? ZERO_SCHEDULER_WARMUP_DECAY_LR
                                         : ZERO_SCHEDULER_WARMUP_COSINE_LR;
            if (col == 4) {
                c.scheduler.warmup_max_lr = ZERO_UNSET; /* not a cosine key */
                c.scheduler.warmup_min_ratio = 0;
                c.scheduler.cos_min_ratio = 1e-4;
            }
            got = zero_lr_at(&c, it);
            /* the exact value each printed entry is the rounding of */
            if (it < 0) exact = 0;
            else if (it < 10 && (col == 0 || col == 2)) exact = 1e-3 * log10((double)it + 1);
            else if (it < 10) exact = 1e-3 * (double)it / 10;
            else if (col < 2) exact = 1e-3;
            else if (col < 4) exact = it >= 20 ? 0 : 1e-3 * (20 - (double)it) / 10;
            else {
                double p = fmin(1.0, ((double)it - 9) / 10);
                exact = 1e-3 * (1e-4 + (1 - 1e-4) * (1 + cos(pi * p)) / 2);
            }
            CHECK_CLOSE(got, exact, "%s it %ld", names[col], it);
            CHECKF(matches_printed(got, rows[r].v[col]), "%s it %ld: got %.9g, table %s", names[col],
                   it, got, rows[r].v[col]);
        }
    }
    /* OLD's column differs at 20 and 22 (the cosine rose again); NEW stays at 1e-7 */
    {
        zero_config c = zero_config_default();
        c.optimizer.lr = 1e-3;
        c.scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
        c.scheduler.warmup_num_steps = 10;
        c.scheduler.total_num_steps = 20;
        c.scheduler.warmup_type = ZERO_WARMUP_LINEAR;
        CHECK(!matches_printed(zero_lr_at(&c, 22), "2.06187e-4"));
        CHECK_CLOSE(zero_lr_at(&c, 1000), 1e-7, "cosine long after T");
    }
}

/* ---------------------------------------------------------------------- */
/* randomized schedules against plain reimplementations                    */

/* Written from deepspeed.md 2.1-2.5 in a different shape from the library:
   by phase, step counts kept as integers. */
static double ref_warmup(long it, double lo, double hi, long w_raw, int linear, long T, int decay) {
    long W = w_raw > 2 ? w_raw : 2;
    double g;
    if (it < 0) return lo;
    if (it < W) g = linear ? (double)it / (double)W : log((double)(it + 1)) / log((double)W);
    else if (!decay) g = 1;
    else {
        long den = T - W < 1 ? 1 : T - W;
        g = (double)(T - it) / (double)den;
        if (g < 0) g = 0;
    }
    return lo + (hi - lo) * g;
}

static double ref_cosine(long it, double base, long w_raw, int linear, long T, double wmin,
                         double cmin) {
    long W = w_raw > 2 ? w_raw : 2;
    double ratio;
    if (it < 0) return 0;
    if (it < W) {
        double r = linear ? (double)it / (double)W : log((double)(it + 1)) / log((double)W);
        ratio = wmin + r * (1 - wmin);
    } else {
        long den = T - W < 1 ? 1 : T - W;
        double p = (double)(it - W + 1) / (double)den;
        if (p > 1) p = 1;
        ratio = cmin + (1 - cmin) * (1 + cos(3.14159265358979323846 * p)) / 2;
        if (ratio < 0) ratio = 0;
    }
    return base * ratio;
}

typedef struct ref_cycle {
    double min_lr, max_lr, min_mom, max_mom, lr_rate, mom_rate;
    long first, second, stairs1, stairs2, decay_step;
} ref_cycle;

/* s exactly, from the integer offset c into the cycle; stairs with integer
   floor division */
static double ref_cycle_s(const ref_cycle *o, long it) {
    long total = o->first + o->second, c = (it + 1) % total;
    if (c <= o->first) {
        if (o->stairs1 > 0) return (double)((long long)c * o->stairs1 / o->first) / (double)o->stairs1;
        return (double)c / (double)o->first;
    }
    if (o->stairs2 > 0)
        return (double)((long long)(total - c) * o->stairs2 / o->second) / (double)o->stairs2;
    return (double)(total - c) / (double)o->second;
}

static void ref_one_cycle(const ref_cycle *o, long it, double *lr, double *b1) {
    long total = o->first + o->second;
    if (it < 0) {
        *lr = o->min_lr;
        *b1 = o->min_mom;
    } else if (it < total) {
        double s = ref_cycle_s(o, it);
        *lr = o->min_lr + (o->max_lr - o->min_lr) * s;
        *b1 = o->max_mom - (o->max_mom - o->min_mom) * s;
    } else {
        double interval = o->decay_step ? (double)(it - total + 1) / (double)o->decay_step : 0;
        *lr = (o->decay_step && o->lr_rate != 0) ? o->min_lr / (1 + o->lr_rate * interval) : o->min_lr;
        *b1 = (o->decay_step && o->mom_rate != 0) ? o->max_mom * (1 + o->mom_rate * interval)
                                                  : o->max_mom;
    }
}

/* up to 64 `it` values: boundaries plus random ones in [-1, 3 * span] */
static int pick_its(long *its, long span, const long *edges, int n_edges) {
    int n = 0, i;
    its[n++] = -1;
    its[n++] = 0;
    for (i = 0; i < n_edges; i++) {
        long e = edges[i];
        if (e - 1 >= -1) its[n++] = e - 1;
        its[n++] = e;
        its[n++] = e + 1;
    }
    while (n < 64) its[n++] = zt_rand_int(-1, 3 * span);
    return n;
}

static double rand_lr(void) { return pow(10.0, zt_rand_range(-6, -1)); }

static void test_sched_random(void) {
    long its[64];
    int set, i, n;

    /* WarmupLR and WarmupDecayLR */
    for (set = 0; set < 300; set++) {
        int decay;
        for (decay = 0; decay < 2; decay++) {
            zero_config c = zero_config_default();
            long w = zt_rand_int(1, 200), T = zt_rand_int(1, 600);
            long edges[3];
            int linear = (int)zt_rand_int(0, 1), unset_max = zt_rand_int(0, 3) == 0;
            double lo = zt_rand01() < 0.3 ? 0 : rand_lr(), hi = rand_lr();
            c.optimizer.lr = rand_lr();
            c.scheduler.type = decay ? ZERO_SCHEDULER_WARMUP_DECAY_LR : ZERO_SCHEDULER_WARMUP_LR;
            c.scheduler.warmup_min_lr = lo;
            c.scheduler.warmup_max_lr = unset_max ? ZERO_UNSET : hi;
            if (unset_max) hi = decay ? 1e-3 : c.optimizer.lr; /* WarmupDecayLR's signature keeps 0.001 */
            c.scheduler.warmup_num_steps = w;
            c.scheduler.warmup_type = linear ? ZERO_WARMUP_LINEAR : ZERO_WARMUP_LOG;
            c.scheduler.total_num_steps = T;
            edges[0] = w;
            edges[1] = w > 2 ? w : 2;
            edges[2] = T;
            n = pick_its(its, T > w ? T : w, edges, 3);
            for (i = 0; i < n; i++)
                CHECK_CLOSE(zero_lr_at(&c, its[i]), ref_warmup(its[i], lo, hi, w, linear, T, decay),
                            "%s set %d w %ld T %ld linear %d it %ld", decay ? "WarmupDecayLR" : "WarmupLR",
                            set, w, T, linear, its[i]);
        }
    }

    /* WarmupCosineLR */
    for (set = 0; set < 300; set++) {
        zero_config c = zero_config_default();
        long w = zt_rand_int(1, 200), T = zt_rand_int(1, 600);
        long edges[3];
        int linear = (int)zt_rand_int(0, 1);
        double wmin = zt_rand01() < 0.3 ? 0 : zt_rand01(), cmin = zt_rand01() < 0.3 ? 1e-4 : zt_rand01();
        c.optimizer.lr = rand_lr();
        c.scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
        c.scheduler.warmup_num_steps = w;
        c.scheduler.warmup_type = linear ? ZERO_WARMUP_LINEAR : ZERO_WARMUP_LOG;
        c.scheduler.total_num_steps = T;
        c.scheduler.warmup_min_ratio = wmin;
        c.scheduler.cos_min_ratio = cmin;
        edges[0] = w;
        edges[1] = w > 2 ? w : 2;
        edges[2] = T;
        n = pick_its(its, T > w ? T : w, edges, 3);
        for (i = 0; i < n; i++)
            CHECK_CLOSE(zero_lr_at(&c, its[i]),
                        ref_cosine(its[i], c.optimizer.lr, w, linear, T, wmin, cmin),
                        "WarmupCosineLR set %d w %ld T %ld linear %d it %ld", set, w, T, linear, its[i]);
    }

    /* OneCycle: stairs on/off, decay on/off, cycle_momentum on/off */
    for (set = 0; set < 300; set++) {
        zero_config c = zero_config_default();
        ref_cycle o;
        long edges[3];
        int unset_second = zt_rand_int(0, 2) == 0, unset_stairs2 = zt_rand_int(0, 2) == 0;
        int momentum = set % 4 != 3;
        o.min_lr = rand_lr();
        o.max_lr = o.min_lr * zt_rand_range(1, 100);
        o.min_mom = zt_rand_range(0.5, 0.9);
        o.max_mom = zt_rand_range(o.min_mom, 0.99);
        o.first = zt_rand_int(1, 200);
        o.second = unset_second ? o.first : zt_rand_int(1, 200);
        o.stairs1 = set % 2 ? zt_rand_int(1, 12) : 0;
        o.stairs2 = unset_stairs2 ? o.stairs1 : (set % 2 ? zt_rand_int(0, 12) : 0);
        o.decay_step = set % 3 ? zt_rand_int(1, 50) : 0;
        o.lr_rate = zt_rand_int(0, 3) ? zt_rand_range(0, 2) : 0;
        o.mom_rate = zt_rand_int(0, 3) ? zt_rand_range(0, 0.1) : 0;

        c.optimizer.beta1 = 0.91;
        c.optimizer.beta2 = 0.95;
        c.scheduler.type = ZERO_SCHEDULER_ONE_CYCLE;
        c.scheduler.cycle_min_lr = o.min_lr;
        c.scheduler.cycle_max_lr = o.max_lr;
        c.scheduler.cycle_min_mom = o.min_mom;
        c.scheduler.cycle_max_mom = o.max_mom;
        c.scheduler.cycle_first_step_size = o.first;
        c.scheduler.cycle_second_step_size = unset_second ? ZERO_UNSET : o.second;
        c.scheduler.cycle_first_stair_count = o.stairs1;
        c.scheduler.cycle_second_stair_count = unset_stairs2 ? ZERO_UNSET : o.stairs2;
        c.scheduler.decay_step_size = o.decay_step;
        c.scheduler.decay_lr_rate = o.lr_rate;
        c.scheduler.decay_mom_rate = o.mom_rate;
        c.scheduler.cycle_momentum = momentum;
        edges[0] = o.first;
        edges[1] = o.first + o.second;
        edges[2] = o.first + o.second - 1;
        n = pick_its(its, o.first + o.second, edges, 3);
        for (i = 0; i < n; i++) {
            double lr, b1, g1, g2;
            ref_one_cycle(&o, its[i], &lr, &b1);
            CHECK_CLOSE(zero_lr_at(&c, its[i]), lr,
                        "OneCycle set %d first %ld second %ld stairs %ld/%ld decay %ld it %ld", set,
                        o.first, o.second, o.stairs1, o.stairs2, o.decay_step, its[i]);
            zero_betas_at(&c, its[i], &g1, &g2);
            if (momentum) {
                CHECK_CLOSE(g1, b1, "OneCycle beta1 set %d it %ld", set, its[i]);
                CHECK(g2 == 0.99);
            } else {
                CHECK(g1 == 0.91 && g2 == 0.95);
            }
        }
    }

    /* LRRangeTest, staircase and continuous */
    for (set = 0; set < 300; set++) {
        zero_config c = zero_config_default();
        long step = zt_rand_int(1, 300), edges[2];
        double lo = rand_lr(), rate = zt_rand_range(0, 5);
        int stair = set % 2;
        c.scheduler.type = ZERO_SCHEDULER_LR_RANGE_TEST;
        c.scheduler.lr_range_test_min_lr = lo;
        c.scheduler.lr_range_test_step_size = step;
        c.scheduler.lr_range_test_step_rate = rate;
        c.scheduler.lr_range_test_staircase = stair;
        edges[0] = step - 1;
        edges[1] = 2 * step - 1;
        n = pick_its(its, 2 * step, edges, 2);
        for (i = 0; i < n; i++) {
            long it = its[i];
            double interval = stair ? (double)((it + 1) / step) : (double)(it + 1) / (double)step;
            CHECK_CLOSE(zero_lr_at(&c, it), lo * (1 + rate * interval),
                        "LRRangeTest set %d step %ld stair %d it %ld", set, step, stair, it);
        }
    }
}

/* ---------------------------------------------------------------------- */
/* fixed OneCycle / NONE cases                                             */

static void test_one_cycle_fixed(void) {
    zero_config c = zero_config_default();
    double b1, b2;
    long it;
    c.scheduler.type = ZERO_SCHEDULER_ONE_CYCLE;
    c.scheduler.cycle_min_lr = 1e-4;
    c.scheduler.cycle_max_lr = 1e-3;
    c.scheduler.cycle_first_step_size = 10; /* second = first */
    /* constructor: lr = min, betas = (min_mom, 0.99) */
    CHECK_CLOSE(zero_lr_at(&c, -1), 1e-4, "OneCycle -1");
    zero_betas_at(&c, -1, &b1, &b2);
    CHECK(b1 == 0.8 && b2 == 0.99);
    /* it = 9: b = 10 = first: the peak; beta1 at its minimum */
    CHECK_CLOSE(zero_lr_at(&c, 9), 1e-3, "OneCycle peak");
    zero_betas_at(&c, 9, &b1, &b2);
    CHECK_CLOSE(b1, 0.8, "beta1 at the peak");
    /* it = 4: s = 0.5 */
    CHECK_NEAR(zero_lr_at(&c, 4), 5.5e-4, 1e-7); /* half way up */
    /* it = 19 = total - 1: back to min; 20 on: min (no decay) */
    CHECK_CLOSE(zero_lr_at(&c, 19), 1e-4, "OneCycle end");
    CHECK_CLOSE(zero_lr_at(&c, 500), 1e-4, "OneCycle after");
    zero_betas_at(&c, 500, &b1, &b2);
    CHECK(b1 == 0.9 && b2 == 0.99);
    /* stairs: 4 stairs of the 10-step rising half: s = floor(b * 4 / 10) / 4 */
    c.scheduler.cycle_first_stair_count = 4;
    for (it = 0; it < 10; it++) {
        double s = floor((double)(it + 1) * 4 / 10) / 4;
        CHECK_CLOSE(zero_lr_at(&c, it), 1e-4 + 9e-4 * s, "stairs it %ld", it);
    }
    /* an asymmetric cycle where s * n computed from the rounded s falls 1e-16
       short of a stair: first 3, second 7, 3 stairs: at b = 3 the peak must
       be exactly 1 */
    c.scheduler.cycle_first_step_size = 3;
    c.scheduler.cycle_second_step_size = 7;
    c.scheduler.cycle_first_stair_count = 3;
    c.scheduler.cycle_second_stair_count = 7;
    for (it = 0; it < 10; it++) {
        long b = it + 1;
        double s = b <= 3 ? (double)b / 3 : (double)(10 - b) / 7;
        CHECK_CLOSE(zero_lr_at(&c, it), 1e-4 + 9e-4 * s, "asymmetric stairs it %ld", it);
    }
    /* decay: lr = min / (1 + rate * (it - total + 1) / step), beta1 grows */
    c = zero_config_default();
    c.scheduler.type = ZERO_SCHEDULER_ONE_CYCLE;
    c.scheduler.cycle_min_lr = 1e-4;
    c.scheduler.cycle_max_lr = 1e-3;
    c.scheduler.cycle_first_step_size = 5;
    c.scheduler.decay_step_size = 2;
    c.scheduler.decay_lr_rate = 0.5;
    c.scheduler.decay_mom_rate = 0.01;
    CHECK_CLOSE(zero_lr_at(&c, 13), 1e-4 / (1 + 0.5 * 2.0), "OneCycle decay");
    zero_betas_at(&c, 13, &b1, &b2);
    CHECK_CLOSE(b1, 0.9 * (1 + 0.01 * 2.0), "OneCycle mom decay");
    CHECK(b2 == 0.99);
    c.scheduler.decay_step_size = 0; /* no decay at all */
    CHECK_CLOSE(zero_lr_at(&c, 13), 1e-4, "decay_step_size 0");
    zero_betas_at(&c, 13, &b1, &b2);
    CHECK(b1 == 0.9);

    /* no scheduler: the optimizer's lr and betas */
    c = zero_config_default();
    c.optimizer.lr = 3e-4;
    CHECK(zero_lr_at(&c, -1) == 3e-4 && zero_lr_at(&c, 12345) == 3e-4);
    zero_betas_at(&c, 7, &b1, &b2);
    CHECK(b1 == 0.9 && b2 == 0.999);
    zero_betas_at(&c, 7, NULL, NULL); /* outputs may be NULL */
    /* WarmupLR with warmup_max_lr None takes the optimizer's lr (NEW) */
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
    c.scheduler.warmup_num_steps = 10;
    CHECK(c.scheduler.warmup_max_lr == ZERO_UNSET);
    CHECK_CLOSE(zero_lr_at(&c, 10), 3e-4, "WarmupLR max = optimizer lr");
    /* ... but WarmupDecayLR's None is its signature's 0.001, as in DeepSpeed */
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_DECAY_LR;
    c.scheduler.total_num_steps = 100;
    CHECK_CLOSE(zero_lr_at(&c, 10), 1e-3 * 90.0 / 90.0, "WarmupDecayLR max = 0.001");
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
    c.scheduler.total_num_steps = ZERO_UNSET;
    /* warmup_num_steps 1 behaves as 2 (W = max(2, n)) for all three */
    c.scheduler.warmup_num_steps = 1;
    CHECK_CLOSE(zero_lr_at(&c, 1), 3e-4, "W = 2: it 1 is still warmup end");
    c.scheduler.warmup_type = ZERO_WARMUP_LINEAR;
    CHECK_CLOSE(zero_lr_at(&c, 1), 1.5e-4, "W = 2 linear it 1");
    c.scheduler.type = ZERO_SCHEDULER_WARMUP_COSINE_LR;
    c.scheduler.total_num_steps = 10;
    c.scheduler.warmup_min_ratio = 0;
    CHECK_CLOSE(zero_lr_at(&c, 1), 1.5e-4, "cosine W = 2 linear it 1");
    c.scheduler.warmup_type = ZERO_WARMUP_LOG;
    CHECK(!isnan(zero_lr_at(&c, 0)));
    CHECK_CLOSE(zero_lr_at(&c, 0), 0.0, "cosine W = 2 log it 0");
}

/* ---------------------------------------------------------------------- */
/* optimizer step k uses it = k - 2                                        */

static void test_step_mapping(void) {
    int type;
    for (type = 0; type < 2; type++) {
        zero_config c = zero_config_default();
        long it = -1; /* the engine's scheduler state: last_batch_iteration */
        int k;
        double lr1 = 0, lr2 = 0, lr3 = 0;
        c.optimizer.lr = 1e-3;
        c.scheduler.type = ZERO_SCHEDULER_WARMUP_LR;
        c.scheduler.warmup_min_lr = 1e-5;
        c.scheduler.warmup_num_steps = 100;
        c.scheduler.warmup_type = type ? ZERO_WARMUP_LINEAR : ZERO_WARMUP_LOG;
        /* steps 1..3, no overflow: each step trains with zero_lr_at(it), then
           the scheduler steps */
        for (k = 1; k <= 3; k++) {
            double lr = zero_lr_at(&c, it);
            CHECK(it == k - 2);
            if (k == 1) lr1 = lr;
            if (k == 2) lr2 = lr;
            if (k == 3) lr3 = lr;
            it++;
        }
        CHECK(lr1 == 1e-5);
        CHECK(lr2 == 1e-5); /* f(0) = min_lr for both log and linear */
        CHECK(lr3 > 1e-5);
        /* an overflow step does not advance it: with step 2 skipped, step 3
           trains with f(0) as well */
        {
            long it2 = -1;
            int skipped[4] = {0, 0, 1, 0};
            double lrs[4];
            for (k = 1; k <= 3; k++) {
                lrs[k] = zero_lr_at(&c, it2);
                if (!skipped[k]) it2++;
            }
            CHECK(lrs[1] == 1e-5 && lrs[2] == 1e-5 && lrs[3] == 1e-5);
            CHECK(it2 == 1); /* k - 2 - skipped */
        }
    }
}

/* ---------------------------------------------------------------------- */
/* NaN for values still "auto" or missing                                  */

static void test_unresolved(void) {
    zero_config c;
    double b1, b2;

#define BASE_WARMUP(t)                                      \
    c = zero_config_default();                              \
    c.scheduler.type = (t);                                 \
    c.scheduler.warmup_num_steps = 10;                      \
    c.scheduler.total_num_steps = 20
    /* sanity: these bases are fine */
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    CHECK(!isnan(zero_lr_at(&c, 3)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_DECAY_LR);
    CHECK(!isnan(zero_lr_at(&c, 3)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_COSINE_LR);
    CHECK(!isnan(zero_lr_at(&c, 3)));

    c = zero_config_default();
    c.optimizer.lr = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, 0)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    c.scheduler.warmup_min_lr = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, -1)) && isnan(zero_lr_at(&c, 5)) && isnan(zero_lr_at(&c, 50)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    c.scheduler.warmup_max_lr = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, -1)) && isnan(zero_lr_at(&c, 50)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    c.optimizer.lr = ZERO_AUTO; /* needed because warmup_max_lr is None */
    CHECK(isnan(zero_lr_at(&c, 50)));
    c.scheduler.warmup_max_lr = 1e-3; /* not needed any more */
    CHECK(zero_lr_at(&c, 50) == 1e-3);
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    c.scheduler.warmup_num_steps = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, 0)) && isnan(zero_lr_at(&c, 5000)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_DECAY_LR);
    c.scheduler.total_num_steps = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, 30)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_DECAY_LR);
    c.scheduler.total_num_steps = ZERO_UNSET; /* required */
    CHECK(isnan(zero_lr_at(&c, 30)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_LR);
    c.scheduler.total_num_steps = ZERO_AUTO; /* WarmupLR does not use it */
    CHECK(!isnan(zero_lr_at(&c, 30)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_COSINE_LR);
    c.optimizer.lr = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, -1)) && isnan(zero_lr_at(&c, 15)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_COSINE_LR);
    c.scheduler.warmup_num_steps = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, 15)));
    BASE_WARMUP(ZERO_SCHEDULER_WARMUP_COSINE_LR);
    c.scheduler.total_num_steps = ZERO_AUTO;
    CHECK(isnan(zero_lr_at(&c, 15)));
#undef BASE_WARMUP

    /* OneCycle without its required lrs */
    c = zero_config_default();
    c.scheduler.type = ZERO_SCHEDULER_ONE_CYCLE;
    CHECK(isnan(zero_lr_at(&c, 3)));
    c.scheduler.cycle_min_lr = 1e-4;
    c.scheduler.cycle_max_lr = 1e-3;
    CHECK(!isnan(zero_lr_at(&c, 3)));
    /* LRRangeTest with a zero step size */
    c = zero_config_default();
    c.scheduler.type = ZERO_SCHEDULER_LR_RANGE_TEST;
    c.scheduler.lr_range_test_step_size = 0;
    CHECK(isnan(zero_lr_at(&c, 3)));

    /* betas */
    c = zero_config_default();
    c.optimizer.beta1 = ZERO_AUTO;
    c.optimizer.beta2 = ZERO_AUTO;
    zero_betas_at(&c, 3, &b1, &b2);
    CHECK(isnan(b1) && isnan(b2));
    /* OneCycle with cycle_momentum does not read them */
    c.scheduler.type = ZERO_SCHEDULER_ONE_CYCLE;
    c.scheduler.cycle_min_lr = 1e-4;
    c.scheduler.cycle_max_lr = 1e-3;
    zero_betas_at(&c, 3, &b1, &b2);
    CHECK(!isnan(b1) && b2 == 0.99);
    c.scheduler.cycle_momentum = 0;
    zero_betas_at(&c, 3, &b1, &b2);
    CHECK(isnan(b1) && isnan(b2));

    /* NULL config */
    CHECK(isnan(zero_lr_at(NULL, 0)));
    zero_betas_at(NULL, 0, &b1, &b2);
    CHECK(isnan(b1) && isnan(b2));
}

int main(void) {
    zt_seed("test_sched");
    test_worked_example();
    test_scaler_edges();
    test_scaler_random();
    test_table_26();
    test_sched_random();
    test_one_cycle_fixed();
    test_step_mapping();
    test_unresolved();
    return zt_finish();
}
