/* tool_args.h - command-line numbers for the example programs, checked.

   Each parser takes the program's name and the flag (for the message), the
   flag's value s (NULL when the command line ended before it) and the
   accepted range [lo, hi]. On success it stores the value and returns 0. On
   failure it prints one line to stderr, unless tool is NULL, and returns 1:

       zero_config: --world: 99999999999 is out of range (1 to 1048576)
       zero_config: --world: '8x' is not a whole number (1 to 1048576)
       zero_config: --world: missing value (a whole number, 1 to 1048576)

   Numbers are decimal: an optional sign, digits with an optional fraction,
   an optional exponent (5e8, 1.5e3). Leading or trailing blanks, hex, inf
   and nan are refused, as is any text after the number except a suffix the
   parser names.

     tool_int    a whole number (8, 65536, 5e8); exact to the last digit of a
                 long long, so out-of-range values never wrap
     tool_num    a real number (0.9, 1e-8)
     tool_count  a whole count with an optional decimal suffix, any case:
                 K = 1e3, M = 1e6, B or G = 1e9, T = 1e12 (1.5B, 350M, 1.5e9)
     tool_size   bytes with an optional suffix, any case, a space allowed
                 before it: B, KB/MB/GB/TB (1e3 .. 1e12), KiB/MiB/GiB/TiB
                 (2^10 .. 2^40); 1.1GB is exactly 1100000000, 1.5GiB exactly
                 1.5 * 2^30
     tool_fail   prints "<tool>: <flag>: <message>" (printf-style; flag may
                 be NULL) and returns 1, for the checks a program makes itself
     tool_usage_error  prints the usage text to stderr, after the line that
                 said what is wrong, and returns 2: a usage error's exit status
     tool_usage_fail   both: tool_fail's line, then the usage; returns 2
     tool_did_you_mean  " (did you mean --world?)" for an unknown flag
                 within a typo's edit distance of one the program knows,
                 else ""; for an "unknown argument" line
     tool_version  prints "<tool> (zero X.Y.Z)" to stdout and returns 0: the
                 answer to --version

   The exit status of every tool: 0 done; 1 the work failed: a file that
   cannot be read or is bad, an error the library returned; 2 a usage
   error: a bad flag, value or combination (one line, then the usage).

   C11 or C++ (the CUDA examples include it); every function is static
   inline, so a program that uses a few of them compiles without warnings.
   tool_did_you_mean and tool_version exist where zero.h's implementation
   came first in the same file (the four zero_* tools): they reuse its
   version and the config parser's edit distance. */
#ifndef ZERO_TOOL_ARGS_H
#define ZERO_TOOL_ARGS_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) || defined(__clang__)
#  define TOOL_ARGS_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#  define TOOL_ARGS_PRINTF(f, a)
#endif

static inline void tool__vfail(const char *tool, const char *flag, const char *fmt, va_list ap) TOOL_ARGS_PRINTF(3, 0);
static inline void tool__vfail(const char *tool, const char *flag, const char *fmt, va_list ap) {
    if (!tool) return;
    fprintf(stderr, "%s: ", tool);
    if (flag) fprintf(stderr, "%s: ", flag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static inline int tool_fail(const char *tool, const char *flag, const char *fmt, ...) TOOL_ARGS_PRINTF(3, 4);
static inline int tool_fail(const char *tool, const char *flag, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tool__vfail(tool, flag, fmt, ap);
    va_end(ap);
    return 1;
}

static inline int tool_usage_error(const char *usage) {
    fputs(usage, stderr);
    return 2;
}

/* --help or -h anywhere in argv[1..]: the usage to stdout, and 1 (the caller returns 0 before parsing the rest). */
static inline int tool_help_asked(int argc, char **argv, const char *usage) {
    int i;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return 1;
        }
    return 0;
}

/* An argument no flag matched: "TOOL: unknown option 'ARG'", the usage to stderr; 2 (the usage exit status). */
static inline int tool_unknown_option(const char *tool, const char *arg, const char *usage) {
    fprintf(stderr, "%s: unknown option '%s'\n", tool, arg);
    return tool_usage_error(usage);
}

static inline int tool_usage_fail(const char *tool, const char *flag, const char *usage, const char *fmt, ...)
    TOOL_ARGS_PRINTF(4, 5);
static inline int tool_usage_fail(const char *tool, const char *flag, const char *usage, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tool__vfail(tool, flag, fmt, ap);
    va_end(ap);
    return tool_usage_error(usage);
}

/* A range bound for messages: digits below 1e7, else 1e15-style when that is
   exact (1e9, 9e15), else digits. */
static inline void tool__fmt_ll(long long v, char *buf, size_t cap) {
    long long m = v < 0 ? -(v + 1) + 1 : v; /* |v| without overflow for > LLONG_MIN */
    int e = 0;
    if (v == LLONG_MIN || m < 10000000) {
        snprintf(buf, cap, "%lld", v);
        return;
    }
    while (m % 10 == 0) m /= 10, e++;
    if (e >= 6 && m < 1000) snprintf(buf, cap, "%s%llde%d", v < 0 ? "-" : "", m, e);
    else snprintf(buf, cap, "%lld", v);
}

/* The decimal number at the start of s: [+-] digits [. digits] [(e|E) [+-] digits],
   at least one mantissa digit. Returns its length, 0 when there is none. */
static inline size_t tool__scan(const char *s) {
    size_t i = 0, digits = 0;
    if (s[i] == '+' || s[i] == '-') i++;
    while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9') i++, digits++;
    }
    if (!digits) return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (s[j] >= '0' && s[j] <= '9') {
            while (s[j] >= '0' && s[j] <= '9') j++;
            i = j;
        }
    }
    return i;
}

/* The whole number written in s[0, len) (tool__scan's syntax), times
   10^exp10, exactly: *neg and *mag (its magnitude). Returns 0, 1 when it is
   not whole, 2 when it exceeds an unsigned long long. */
static inline int tool__whole(const char *s, size_t len, int exp10, int *neg, unsigned long long *mag) {
    unsigned long long m = 0;
    long ex = exp10, e = 0;
    size_t i = 0;
    int frac = 0, esign = 1, big = 0;
    *neg = s[0] == '-';
    if (s[0] == '+' || s[0] == '-') i++;
    for (; i < len && s[i] != 'e' && s[i] != 'E'; i++) {
        unsigned d;
        if (s[i] == '.') {
            frac = 1;
            continue;
        }
        d = (unsigned)(s[i] - '0');
        if (m > (ULLONG_MAX - d) / 10) { /* more digits than fit: only zeros may follow */
            if (d) big = 1;
            if (!frac) ex++;
            continue;
        }
        m = m * 10 + d;
        if (frac) ex--;
    }
    if (i < len) { /* the exponent; its size is capped well past any value that fits */
        i++;
        if (s[i] == '+' || s[i] == '-') esign = s[i++] == '-' ? -1 : 1;
        for (; i < len; i++)
            if (e < 100000) e = e * 10 + (s[i] - '0');
        ex += esign * e;
    }
    if (m == 0) {
        *mag = 0;
        return 0;
    }
    if (big) return 2; /* over 19 significant digits */
    for (; ex < 0; ex++) {
        if (m % 10) return 1;
        m /= 10;
    }
    for (; ex > 0; ex--) {
        if (m > ULLONG_MAX / 10) return 2;
        m *= 10;
    }
    *mag = m;
    return 0;
}

/* tool__whole into [lo, hi]: 0, or 1 not whole, 2 out of range */
static inline int tool__whole_in(const char *s, size_t len, int exp10, long long lo, long long hi, long long *out) {
    unsigned long long mag;
    int neg, r = tool__whole(s, len, exp10, &neg, &mag);
    long long v;
    if (r == 1) return 1;
    if (r == 2) return 2;
    if (!neg && mag > (unsigned long long)LLONG_MAX) return 2;
    if (neg && mag > (unsigned long long)LLONG_MAX + 1ULL) return 2;
    v = !neg ? (long long)mag : mag == (unsigned long long)LLONG_MAX + 1ULL ? LLONG_MIN : -(long long)mag;
    if (v < lo || v > hi) return 2;
    *out = v;
    return 0;
}

/* missing / empty: the shared first two checks; what names the kind of value */
static inline int tool__present(const char *tool, const char *flag, const char *s, const char *what,
                                const char *range) {
    if (!s) return tool_fail(tool, flag, "missing value (%s, %s)", what, range);
    if (!*s) return tool_fail(tool, flag, "empty value (%s, %s)", what, range);
    return 0;
}

static inline int tool_int(const char *tool, const char *flag, const char *s, long long lo, long long hi,
                           long long *out) {
    char a[32], b[32], range[72];
    size_t n;
    int r;
    tool__fmt_ll(lo, a, sizeof a);
    tool__fmt_ll(hi, b, sizeof b);
    snprintf(range, sizeof range, "%s to %s", a, b);
    if (tool__present(tool, flag, s, "a whole number", range)) return 1;
    n = tool__scan(s);
    if (n == 0 || s[n]) return tool_fail(tool, flag, "'%s' is not a whole number (%s)", s, range);
    r = tool__whole_in(s, n, 0, lo, hi, out);
    if (r == 1) return tool_fail(tool, flag, "'%s' is not a whole number (%s)", s, range);
    if (r == 2) return tool_fail(tool, flag, "%s is out of range (%s)", s, range);
    return 0;
}

static inline int tool_num(const char *tool, const char *flag, const char *s, double lo, double hi, double *out) {
    char range[72], *end;
    size_t n;
    double v;
    snprintf(range, sizeof range, "%g to %g", lo, hi);
    if (tool__present(tool, flag, s, "a number", range)) return 1;
    n = tool__scan(s);
    if (n == 0 || s[n]) return tool_fail(tool, flag, "'%s' is not a number (%s)", s, range);
    errno = 0;
    v = strtod(s, &end);
    if (errno == ERANGE || !isfinite(v) || !(v >= lo && v <= hi))
        return tool_fail(tool, flag, "%s is out of range (%s)", s, range);
    *out = v;
    return 0;
}

static inline int tool__suffix_is(const char *s, const char *want) {
    for (; *s && *want; s++, want++)
        if ((*s | 0x20) != (*want | 0x20)) return 0;
    return *s == 0 && *want == 0;
}

static inline int tool_count(const char *tool, const char *flag, const char *s, long long lo, long long hi,
                             long long *out) {
    static const struct { const char *name; int exp10; } sfx[] = {
        {"", 0}, {"K", 3}, {"M", 6}, {"B", 9}, {"G", 9}, {"T", 12},
    };
    char a[32], b[32], range[72];
    size_t n, i;
    tool__fmt_ll(lo, a, sizeof a);
    tool__fmt_ll(hi, b, sizeof b);
    snprintf(range, sizeof range, "%s to %s", a, b);
    if (tool__present(tool, flag, s, "a count such as 1.5e9 or 1.5B", range)) return 1;
    n = tool__scan(s);
    for (i = 0; n && i < sizeof sfx / sizeof sfx[0]; i++) {
        int r;
        if (!tool__suffix_is(s + n, sfx[i].name)) continue;
        r = tool__whole_in(s, n, sfx[i].exp10, lo, hi, out);
        if (r == 1) return tool_fail(tool, flag, "'%s' is not a whole count (%s)", s, range);
        if (r == 2) return tool_fail(tool, flag, "%s is out of range (%s)", s, range);
        return 0;
    }
    return tool_fail(tool, flag, "'%s' is not a count such as 1.5e9, 1.5B or 350M (%s)", s, range);
}

static inline int tool_size(const char *tool, const char *flag, const char *s, double lo, double hi, double *out) {
    static const struct { const char *name; int dec, bin; } sfx[] = {
        {"", 0, -1},    {"B", 0, -1},     {"KB", 3, -1},    {"MB", 6, -1},    {"GB", 9, -1},
        {"TB", 12, -1}, {"KiB", -1, 10}, {"MiB", -1, 20}, {"GiB", -1, 30}, {"TiB", -1, 40},
    };
    char range[72], buf[160], *end;
    const char *suffix;
    size_t n, i;
    snprintf(range, sizeof range, "%g to %g bytes", lo, hi);
    if (tool__present(tool, flag, s, "a size such as 80GB or 80GiB", range)) return 1;
    n = tool__scan(s);
    suffix = s + n;
    while (*suffix == ' ') suffix++;
    for (i = 0; n && n < 128 && i < sizeof sfx / sizeof sfx[0]; i++) {
        const char *e = (const char *)memchr(s, 'e', n);
        long ex;
        double v;
        if (!tool__suffix_is(suffix, sfx[i].name) || (!*sfx[i].name && suffix != s + n)) continue;
        if (!e) e = (const char *)memchr(s, 'E', n);
        /* mantissa e (exponent + the suffix's), rounded once by strtod */
        ex = e ? strtol(e + 1, NULL, 10) : 0;
        if (ex > 100000 || ex < -100000) ex = ex < 0 ? -100000 : 100000; /* as strtod would: 0 or inf */
        ex += sfx[i].dec > 0 ? sfx[i].dec : 0;
        snprintf(buf, sizeof buf, "%.*se%ld", (int)(e ? (size_t)(e - s) : n), s, ex);
        errno = 0;
        v = strtod(buf, &end);
        if (sfx[i].bin > 0) v = ldexp(v, sfx[i].bin); /* exact: a power of two */
        if (errno == ERANGE || !isfinite(v) || !(v >= lo && v <= hi))
            return tool_fail(tool, flag, "%s is out of range (%s)", s, range);
        *out = v;
        return 0;
    }
    return tool_fail(tool, flag, "'%s' is not a size such as 80GB, 80GiB or 1.5TB (%s)", s, range);
}

/* ---- with zero.h's implementation: --version and did-you-mean ---- */
#if defined(ZERO_H) && defined(ZERO_IMPLEMENTATION)
static inline int tool_version(const char *tool) {
    printf("%s (zero %s)\n", tool, zero_version());
    return 0;
}

/* The flag of known (NULL-terminated) nearest to arg, as the config parser
   suggests a key: within 1 + len/4 edits, at most 3; "" when none is. The
   text lands in buf. A value after '=' is not part of the name. */
static inline const char *tool_did_you_mean(const char *arg, const char *const *known, char *buf, size_t cap) {
    const char *best = NULL;
    size_t n = strcspn(arg, "=");
    int best_d = (int)(1 + n / 4), i;
    if (best_d > 3) best_d = 3;
    if (cap) buf[0] = 0;
    for (i = 0; known[i]; i++) {
        int d = zero__edit_distance(arg, n, known[i], strlen(known[i]));
        if (d > 0 && d <= best_d && (!best || d < best_d)) best = known[i], best_d = d;
    }
    if (best) snprintf(buf, cap, " (did you mean %s?)", best);
    return buf;
}
#endif

#endif
