/* zero_config - check a DeepSpeed config the way zero reads it.

     zero_config check ds_config.json [--world N] [--hidden H] [--mbs N] [--supply-hf]
         parse, print every warning, resolve for N ranks and print the
         resolved config as JSON; exit 1 on error. A training program fills
         the "auto" values itself; here --hidden gives the model's hidden
         size (bucket sizes), --mbs the micro-batch, and --supply-hf fills
         the rest with the HF Trainer's default arguments (lr 5e-5, betas
         0.9/0.999, eps 1e-8, weight_decay 0, gradient_clipping 1, fp16 and
         bf16 off, 100 warmup steps of 1000, 1 accumulation step).
     zero_config keys-markdown
         the key table of docs/config.md (make test checks the two agree).
*/
#define ZERO_IMPLEMENTATION
#include "zero.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *status_name(zero_key_status s) {
    switch (s) {
    case ZERO_KEY_IMPLEMENTED: return "implemented";
    case ZERO_KEY_NOT_YET: return "accepted, not yet";
    case ZERO_KEY_NO_EFFECT: return "accepted, no effect";
    case ZERO_KEY_REJECTED: return "rejected unless default";
    case ZERO_KEY_DEPRECATED: return "deprecated, remapped";
    default: return "?";
    }
}

/* markdown cell: escape the pipe */
static void cell(const char *s) {
    for (; *s; s++) {
        if (*s == '|') fputs("\\|", stdout);
        else putchar(*s);
    }
}

static int keys_markdown(void) {
    int i, n = zero_config_key_count();
    printf("| key | type | default (DeepSpeed's = zero's) | status | meaning (DeepSpeed's) | zero |\n");
    printf("|---|---|---|---|---|---|\n");
    for (i = 0; i < n; i++) {
        const zero_key_info *k = zero_config_key(i);
        printf("| `%s` | ", k->path);
        cell(k->type);
        printf(" | ");
        cell(k->ds_default);
        printf(" | %s | ", status_name(k->status));
        cell(k->meaning);
        printf(" | ");
        cell(k->note);
        printf(" |\n");
    }
    return 0;
}

/* The HF Trainer's defaults, for each "auto" a program must answer. */
static void supply_hf(zero_config *c) {
    if (c->fp16.enabled == ZERO_AUTO) c->fp16.enabled = 0;
    if (c->bf16.enabled == ZERO_AUTO) c->bf16.enabled = 0;
    if (c->optimizer.lr == ZERO_AUTO) c->optimizer.lr = 5e-5;
    if (c->optimizer.beta1 == ZERO_AUTO) {
        c->optimizer.beta1 = 0.9;
        c->optimizer.beta2 = 0.999;
    }
    if (c->optimizer.eps == ZERO_AUTO) c->optimizer.eps = 1e-8;
    if (c->optimizer.weight_decay == ZERO_AUTO) c->optimizer.weight_decay = 0;
    if (c->gradient_clipping == ZERO_AUTO) c->gradient_clipping = 1.0;
    if (c->scheduler.warmup_num_steps == ZERO_AUTO) c->scheduler.warmup_num_steps = 100;
    if (c->scheduler.total_num_steps == ZERO_AUTO) c->scheduler.total_num_steps = 1000;
    if (c->gradient_accumulation_steps == ZERO_AUTO) c->gradient_accumulation_steps = 1;
}

static int usage(void) {
    fprintf(stderr, "usage: zero_config check FILE [--world N] [--hidden H] [--mbs N] [--supply-hf]\n"
                    "       zero_config keys-markdown\n");
    return 2;
}

int main(int argc, char **argv) {
    zero_config cfg = zero_config_default();
    zero_error err;
    int world = 1, i, supply = 0;
    long mbs = 0;
    static char json[1 << 16];
    if (argc >= 2 && strcmp(argv[1], "keys-markdown") == 0) return keys_markdown();
    if (argc < 3 || strcmp(argv[1], "check") != 0) return usage();
    cfg.log.rank = 0;
    for (i = 3; i < argc; i++) {
        char *end;
        long v;
        if (strcmp(argv[i], "--supply-hf") == 0) {
            supply = 1;
            continue;
        }
        if (i + 1 >= argc) return usage();
        v = strtol(argv[i + 1], &end, 10);
        if (*end || v < 1) {
            fprintf(stderr, "zero_config: %s needs a positive integer, got \"%s\"\n", argv[i], argv[i + 1]);
            return 2;
        }
        if (strcmp(argv[i], "--world") == 0) world = (int)v;
        else if (strcmp(argv[i], "--hidden") == 0) cfg.hidden_size = v;
        else if (strcmp(argv[i], "--mbs") == 0) mbs = v;
        else return usage();
        i++;
    }
    if (zero_config_load(&cfg, argv[2], &err) != ZERO_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    if (mbs && cfg.train_micro_batch_size_per_gpu < 0) cfg.train_micro_batch_size_per_gpu = mbs;
    if (supply) supply_hf(&cfg);
    if (zero_config_resolve(&cfg, world, &err) != ZERO_OK) {
        fprintf(stderr, "error: %s\n", err.msg);
        return 1;
    }
    zero_config_to_json(&cfg, json, sizeof json);
    printf("%s\n", json);
    return 0;
}
