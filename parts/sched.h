/* parts/sched.h: part of zero.h's implementation (inlined before landing) */

/* ---- loss scaler -------------------------------------------------------

   DeepSpeed has three fp16 scalers (../shared/reference/deepspeed.md 1.1):
   the ZeRO optimizers use DynamicLossScaler (hysteresis, raise at the
   minimum), FP16_Optimizer / FP16_UnfusedOptimizer (no ZeRO) have their own
   _update_scale without hysteresis that clamps at the minimum. zero_rules
   picks between the two; both grow with the NEW (>= v0.17.1) window rule. */

/* A config value that is still "auto" (or the ZERO_AUTO sentinel anyway). */
static int zero__scaler_open(double v) { return v == (double)ZERO_AUTO; }

ZERO__DEF void zero_loss_scaler_init(zero_loss_scaler *s, const zero_config *cfg) {
    const zero_fp16_config *f;
    if (!s) return;
    memset(s, 0, sizeof *s);
    s->cur_scale = NAN;
    s->min_scale = NAN;
    s->scale_factor = 2.0; /* hard-coded in DeepSpeed, not a JSON key */
    s->last_overflow_iter = -1;
    s->valid = 0;
    if (!cfg) return;

    f = &cfg->fp16;
    s->zero_rules = cfg->zero_optimization.stage >= 1;
    s->scale_window = f->loss_scale_window;
    s->delayed_shift = f->hysteresis;
    s->cur_hysteresis = f->hysteresis;
    s->consecutive_hysteresis = f->consecutive_hysteresis != 0;

    /* fp16.enabled still "auto": nobody has said which precision this run uses. */
    if (f->enabled == ZERO_AUTO) return;

    if (!f->enabled) { /* bf16 or fp32: a static scaler with S = 1 */
        s->cur_scale = 1.0;
        s->min_scale = 1.0;
        s->valid = 1;
        return;
    }
    /* fp16: every value the scaler is made from must be known. */
    if (zero__scaler_open(f->loss_scale) || f->initial_scale_power == ZERO_AUTO ||
        f->loss_scale_window == ZERO_AUTO || f->hysteresis == ZERO_AUTO ||
        zero__scaler_open(f->min_loss_scale))
        return;
    if (f->loss_scale > 0) { /* static: S fixed (DeepSpeed's LossScaler) */
        s->cur_scale = f->loss_scale;
        s->min_scale = f->loss_scale;
        s->valid = 1;
        return;
    }
    s->dynamic = 1;
    s->cur_scale = ldexp(1.0, f->initial_scale_power);
    s->min_scale = f->min_loss_scale;
    s->valid = 1;
}

/* The scale after an overflow that shifts: max(S / 2, min). */
static double zero__scaler_halved(const zero_loss_scaler *s) {
    double next = s->cur_scale / s->scale_factor;
    return next > s->min_scale ? next : s->min_scale;
}

/* There is no zero_error parameter: the result code says everything and the
   engine that calls this once per optimizer step reports it (with the step
   number it knows). ZERO_ERR_LOSS_SCALE: an overflow arrived with S already
   at min_scale under ZeRO rules; DeepSpeed raises "Current loss scale already
   at minimum" before touching its state, so the scaler is left exactly as it
   was (cur_iter not advanced either). ZERO_ERR_STATE: made from a config with
   fp16.enabled (or another fp16 value) still "auto". */
ZERO__DEF zero_result zero_loss_scaler_update(zero_loss_scaler *s, int overflow) {
    if (!s) return zero__fail(NULL, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero_loss_scaler_update: s is NULL");
    if (!s->valid)
        return zero__fail(NULL, ZERO_MSG_LOSS_SCALER_UNRESOLVED, "fp16.enabled", 0, 0,
                          "the loss scaler was made from an unresolved config");
    if (!s->dynamic) return ZERO_OK; /* static or bf16/fp32: LossScaler.update_scale is a no-op */

    if (overflow) {
        if (!s->zero_rules) {
            /* FP16_Optimizer: no hysteresis, never raises. */
            s->cur_scale = zero__scaler_halved(s);
        } else if (s->delayed_shift == 1 || s->cur_hysteresis == 1) {
            if (s->cur_scale == s->min_scale)
                return zero__fail(NULL, ZERO_MSG_LOSS_SCALE_AT_MIN, "fp16.min_loss_scale", 0, 0,
                                  "overflow at iteration %lld with the loss scale already at its minimum %g",
                                  (long long)s->cur_iter, s->min_scale);
            s->cur_scale = zero__scaler_halved(s);
        } else {
            s->cur_hysteresis--; /* scale kept, the step is still skipped */
        }
        s->last_overflow_iter = s->cur_iter;
    } else {
        /* NEW window rule (DeepSpeed >= v0.17.1): k clean steps since the last
           overflow; grow on the first clean step after each full window.
           (OLD grew when (cur_iter - last_overflow_iter) % window == 0, one
           step earlier.) A window <= 0 (rejected by the config) never grows
           instead of dividing by zero. */
        int64_t k = s->cur_iter - s->last_overflow_iter - 1;
        if (s->zero_rules && s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
        if (k > 0 && s->scale_window > 0 && k % s->scale_window == 0) {
            if (s->zero_rules && !s->consecutive_hysteresis) s->cur_hysteresis = s->delayed_shift;
            s->cur_scale *= s->scale_factor;
        }
    }
    s->cur_iter++;
    return ZERO_OK;
}

ZERO__DEF double zero_loss_scaler_scale(const zero_loss_scaler *s) {
    return (s && s->valid) ? s->cur_scale : NAN;
}

/* ---- learning-rate schedules --------------------------------------------

   Each f(it) is DeepSpeed's lr_schedules.py (NEW) written out; `it` is the
   scheduler's last_batch_iteration. Every scheduler's constructor writes
   f(-1) (OneCycle and LRRangeTest write their min values, which is the same
   lr), so it < 0 means "before the first scheduler step"; values below -1
   are treated like -1. A scheduler with a value it needs still "auto" (or a
   required value missing) gives NaN for every `it`, not only where that value
   enters, so an unresolved config cannot look right for the first steps. */

static int zero__sched_open(double v) { return v == (double)ZERO_AUTO; }

/* pi as Python's math.pi (M_PI is not C11). */
#define ZERO__SCHED_PI 3.14159265358979323846

/* W = max(2, warmup_num_steps): WarmupLR's constructor does this, and
   WarmupDecayLR (a subclass) inherits it. WarmupCosineLR: section 2.3 of the
   reference writes "it < W" with the W that 2.1 defines as max(2, ...), and
   DeepSpeed's WarmupCosineLR.__init__ indeed sets
   warmup_num_steps = max(2, warmup_num_steps) too, so all three use it (the
   reference's table 2.6, W = 10, is the same either way). With the raw value
   a log warmup of 1 step would compute ln(1)/ln(1) = NaN. */
static double zero__sched_warmup_w(const zero_scheduler_config *sc) {
    return sc->warmup_num_steps < 2 ? 2.0 : (double)sc->warmup_num_steps;
}

/* The warmup fraction at 0 <= it < W: ln(it+1)/ln(W) or it/W. DeepSpeed
   keeps 1/ln(W) and multiplies; so does this. An unknown type is log, as
   DeepSpeed falls back to log (the config rejects unknown names). */
static double zero__sched_warmup_frac(zero_warmup_type type, long it, double w) {
    if (type == ZERO_WARMUP_LINEAR) return (double)it / w;
    return (1.0 / log(w)) * log((double)it + 1.0);
}

/* WarmupLR (decay = 0) and WarmupDecayLR (decay = 1). */
static double zero__sched_warmup_lr(const zero_config *cfg, long it, int decay) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double min_lr = sc->warmup_min_lr, max_lr = sc->warmup_max_lr, w, gamma;
    /* warmup_max_lr None: WarmupLR (NEW) takes the optimizer's lr (OLD: 0.001);
       WarmupDecayLR's own signature still defaults to 0.001, in NEW too. */
    if (max_lr == (double)ZERO_UNSET) max_lr = decay ? 1e-3 : cfg->optimizer.lr;
    if (zero__sched_open(min_lr) || zero__sched_open(max_lr) ||
        sc->warmup_num_steps == ZERO_AUTO)
        return NAN;
    if (decay && (sc->total_num_steps == ZERO_AUTO || sc->total_num_steps == ZERO_UNSET)) return NAN;
    if (it < 0) return min_lr;
    w = zero__sched_warmup_w(sc);
    if ((double)it < w) {
        gamma = zero__sched_warmup_frac(sc->warmup_type, it, w);
    } else if (!decay) {
        gamma = 1.0;
    } else {
        double t = (double)sc->total_num_steps, den = t - w;
        gamma = (t - (double)it) / (den > 1.0 ? den : 1.0);
        if (gamma < 0.0) gamma = 0.0; /* reaches min_lr at it = T and stays */
    }
    return min_lr + (max_lr - min_lr) * gamma;
}

/* WarmupCosineLR (NEW, >= v0.19.3): a ratio of the optimizer's lr. */
static double zero__sched_cosine_lr(const zero_config *cfg, long it) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double lr = cfg->optimizer.lr, w, ratio;
    if (zero__sched_open(lr) || sc->warmup_num_steps == ZERO_AUTO ||
        sc->total_num_steps == ZERO_AUTO || sc->total_num_steps == ZERO_UNSET)
        return NAN;
    if (it < 0) return 0.0;
    w = zero__sched_warmup_w(sc);
    if ((double)it < w) {
        double r = zero__sched_warmup_frac(sc->warmup_type, it, w);
        ratio = sc->warmup_min_ratio + r * (1.0 - sc->warmup_min_ratio);
    } else {
        /* p = (it - W + 1) / max(1, T - W), clamped to 1: the ratio stays at
           cos_min_ratio after T (OLD let the cosine rise again). */
        double den = (double)sc->total_num_steps - w;
        double p = ((double)it - w + 1.0) / (den > 1.0 ? den : 1.0);
        if (p > 1.0) p = 1.0;
        ratio = sc->cos_min_ratio + (1.0 - sc->cos_min_ratio) * ((1.0 + cos(ZERO__SCHED_PI * p)) / 2.0);
        if (ratio < 0.0) ratio = 0.0;
    }
    return lr * ratio;
}

/* OneCycle's half-cycle lengths; 0 when they are unusable. */
static int zero__sched_cycle_sizes(const zero_scheduler_config *sc, double *first, double *second) {
    int64_t a = sc->cycle_first_step_size;
    int64_t b = sc->cycle_second_step_size == ZERO_UNSET ? a : sc->cycle_second_step_size;
    if (a <= 0 || b <= 0) return 0;
    *first = (double)a;
    *second = (double)b;
    return 1;
}

/* OneCycle's position s in [0, 1] at 0 <= it < first + second (0 at the
   start, 1 at the end of the rising half, back to 0 at the end).

   Stairs: the reference says only "stair counts > 0 quantise s to
   floor(position * stairs) / stairs". Our reading: in the half the step
   falls in, with n = that half's stair count (the second's defaults to the
   first's), s becomes floor(s * n) / n, so s takes the values 0, 1/n, ...,
   (n-1)/n, and 1 only at the peak itself. s * n is computed from the integer
   offset c into the cycle (c * n / first, or (total - c) * n / second)
   rather than from the rounded s, so an exact stair is never lost to a
   1e-16 rounding; DeepSpeed's current lr_schedules.py does the same. */
static double zero__sched_cycle_pos(const zero_scheduler_config *sc, long it, double first,
                                    double second) {
    double total = first + second, ratio = first / total;
    double b = (double)it + 1.0;
    double x = 1.0 + b / total - floor(1.0 + b / total);
    double s;
    int64_t stairs;
    if (x <= ratio) {
        s = x / ratio;
        stairs = sc->cycle_first_stair_count;
    } else {
        s = (x - 1.0) / (ratio - 1.0);
        stairs = sc->cycle_second_stair_count == ZERO_UNSET ? sc->cycle_first_stair_count
                                                             : sc->cycle_second_stair_count;
    }
    if (stairs > 0) {
        double n = (double)stairs, c = fmod(b, total), pos;
        if (c <= first)
            pos = c * n / first;
        else
            pos = (total - c) * n / second;
        s = floor(pos) / n;
    }
    return s;
}

/* OneCycle lr and beta1. */
static void zero__sched_one_cycle(const zero_config *cfg, long it, double *lr, double *beta1) {
    const zero_scheduler_config *sc = &cfg->scheduler;
    double first, second, total;
    double min_lr = sc->cycle_min_lr, max_lr = sc->cycle_max_lr;
    double min_mom = sc->cycle_min_mom, max_mom = sc->cycle_max_mom;
    *lr = *beta1 = NAN;
    if (!zero__sched_cycle_sizes(sc, &first, &second)) return;
    total = first + second;
    if (!zero__sched_open(min_lr) && min_lr != (double)ZERO_UNSET && !zero__sched_open(max_lr) &&
        max_lr != (double)ZERO_UNSET) {
        if (it < 0) /* the constructor's lr */
            *lr = min_lr;
        else if ((double)it < total)
            *lr = min_lr + (max_lr - min_lr) * zero__sched_cycle_pos(sc, it, first, second);
        else if (sc->decay_step_size == 0 || sc->decay_lr_rate == 0.0)
            *lr = min_lr;
        else
            *lr = min_lr / (1.0 + sc->decay_lr_rate *
                                      (((double)it - total + 1.0) / (double)sc->decay_step_size));
    }
    if (zero__sched_open(min_mom) || zero__sched_open(max_mom)) return;
    if (it < 0) /* the constructor's betas: (cycle_min_mom, 0.99), not f(-1) */
        *beta1 = min_mom;
    else if ((double)it < total)
        *beta1 = max_mom - (max_mom - min_mom) * zero__sched_cycle_pos(sc, it, first, second);
    else if (sc->decay_step_size == 0 || sc->decay_mom_rate == 0.0)
        *beta1 = max_mom;
    else
        *beta1 = max_mom * (1.0 + sc->decay_mom_rate *
                                      (((double)it - total + 1.0) / (double)sc->decay_step_size));
}

/* LRRangeTest: min_lr * (1 + step_rate * interval). */
static double zero__sched_range_test_lr(const zero_scheduler_config *sc, long it) {
    double interval;
    if (zero__sched_open(sc->lr_range_test_min_lr) || sc->lr_range_test_step_size <= 0) return NAN;
    if (it < 0) return sc->lr_range_test_min_lr; /* the constructor's lr (= f(-1)) */
    interval = ((double)it + 1.0) / (double)sc->lr_range_test_step_size;
    if (sc->lr_range_test_staircase) interval = floor(interval);
    return sc->lr_range_test_min_lr * (1.0 + sc->lr_range_test_step_rate * interval);
}

ZERO__DEF double zero_lr_at(const zero_config *cfg, long it) {
    double lr, beta1;
    if (!cfg) return NAN;
    switch (cfg->scheduler.type) {
    case ZERO_SCHEDULER_NONE:
        return zero__sched_open(cfg->optimizer.lr) ? NAN : cfg->optimizer.lr;
    case ZERO_SCHEDULER_WARMUP_LR: return zero__sched_warmup_lr(cfg, it, 0);
    case ZERO_SCHEDULER_WARMUP_DECAY_LR: return zero__sched_warmup_lr(cfg, it, 1);
    case ZERO_SCHEDULER_WARMUP_COSINE_LR: return zero__sched_cosine_lr(cfg, it);
    case ZERO_SCHEDULER_ONE_CYCLE:
        zero__sched_one_cycle(cfg, it, &lr, &beta1);
        return lr;
    case ZERO_SCHEDULER_LR_RANGE_TEST: return zero__sched_range_test_lr(&cfg->scheduler, it);
    default: return NAN;
    }
}

ZERO__DEF void zero_betas_at(const zero_config *cfg, long it, double *beta1, double *beta2) {
    double b1 = NAN, b2 = NAN;
    if (cfg && cfg->scheduler.type == ZERO_SCHEDULER_ONE_CYCLE && cfg->scheduler.cycle_momentum) {
        double lr;
        zero__sched_one_cycle(cfg, it, &lr, &b1);
        (void)lr;
        b2 = b1 == b1 ? 0.99 : NAN; /* DeepSpeed writes betas = (beta1, 0.99): beta2 is forced */
    } else if (cfg) {
        b1 = zero__sched_open(cfg->optimizer.beta1) ? NAN : cfg->optimizer.beta1;
        b2 = zero__sched_open(cfg->optimizer.beta2) ? NAN : cfg->optimizer.beta2;
    }
    if (beta1) *beta1 = b1;
    if (beta2) *beta2 = b2;
}
