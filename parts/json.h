/* parts/json.h: part of zero.h's implementation (inlined before landing) */

/* ---- JSON parser (RFC 8259 plus hjson-style comments) ------------------

   The config loader's reader. Iterative (explicit stack of at most
   ZERO_JSON_MAX_DEPTH containers, no recursion), one pass over the text,
   nodes in one array that grows by doubling, in document order (node 0 is
   the root). Strings are validated while parsing and decoded on demand.
   Accepted beyond RFC 8259: a leading UTF-8 BOM, and comments wherever
   whitespace may stand: `// ...` and `# ...` to the end of the line and
   `/ * ... * /` blocks (as DeepSpeed's hjson reader accepts them). Duplicate
   keys (compared after decoding) are errors, found by sorting each object's
   keys (stable merge sort, O(m log m)) when the object closes.
   Positions: line counts '\n', column counts bytes from the line start (on
   line 1, after the BOM), both 1-based. */

#ifndef ZERO__JSON_MAX_BYTES
#  define ZERO__JSON_MAX_BYTES ((size_t)256 << 20) /* 256 MiB */
#endif
#ifndef ZERO__JSON_MAX_NODES
#  define ZERO__JSON_MAX_NODES (INT_MAX / 2)
#endif
#define ZERO__JSON_PATH_CAP 256 /* key paths inside error messages */

typedef enum zero__json_type {
    ZERO__JSON_NULL,
    ZERO__JSON_FALSE,
    ZERO__JSON_TRUE,
    ZERO__JSON_NUMBER,
    ZERO__JSON_STRING,
    ZERO__JSON_ARRAY,
    ZERO__JSON_OBJECT
} zero__json_type;

typedef struct zero__json_node {
    zero__json_type type;
    int parent;        /* index of the enclosing array/object node, -1 for the root */
    int next;          /* next sibling (next element / next member VALUE), -1 at the end */
    int first;         /* ARRAY/OBJECT: first child (element / member VALUE), -1 if empty */
    int count;         /* ARRAY/OBJECT: number of children */
    int key;           /* member value: index of its key node (a STRING node in no child chain,
                          whose parent is the object); -1 otherwise */
    size_t start, end; /* byte span in the text; STRING: the raw bytes between the quotes */
    int line, col;     /* 1-based position of the node's first byte (STRING: the opening quote) */
    double number;     /* NUMBER: value (correctly rounded, locale independent) */
    int64_t integer;   /* NUMBER: exact value when is_integer, else 0 */
    int is_integer;    /* NUMBER: written without fraction/exponent AND fits int64_t exactly */
} zero__json_node;

typedef struct zero__json {
    const char *text;
    size_t len;
    zero__json_node *nodes;
    int count, cap;
} zero__json;

typedef struct zero__json_frame {
    int node; /* the open array/object */
    int last; /* its last child so far, -1 when none */
} zero__json_frame;

typedef struct zero__json_parser {
    zero__json *j;
    const char *t;
    size_t len, pos;
    size_t bom;          /* 3 when the text starts with a UTF-8 BOM, else 0 */
    int line;            /* line of pos (tracked while skipping whitespace) */
    size_t line_start;   /* byte offset where that line starts */
    int depth;           /* open containers */
    int pending_key;     /* key node of the member whose value comes next, -1 when none */
    int *sort_a, *sort_b; /* scratch for the duplicate-key check */
    int sort_cap;
    zero_error *err;
    zero__json_frame stack[ZERO_JSON_MAX_DEPTH > 0 ? ZERO_JSON_MAX_DEPTH : 1];
} zero__json_parser;

/* ---- small helpers ---- */

static int zero__json_is_digit(int c) { return c >= '0' && c <= '9'; }
static int zero__json_is_word(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}
static int zero__json_hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}
/* Four hex digits at s[0..4) (the caller checked they exist); -1 if one is not hex. */
static long zero__json_hex4(const char *s) {
    long v = 0;
    int k;
    for (k = 0; k < 4; k++) {
        int h = zero__json_hexval((unsigned char)s[k]);
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* Length (2..4) of the valid UTF-8 sequence at s[0..n) whose first byte is
   >= 0x80, or 0 when it is not valid; *why then says why. */
static int zero__json_utf8_len(const unsigned char *s, size_t n, const char **why) {
    unsigned c = s[0], lo = 0x80, hi = 0xBF;
    int len, k;
    if (c < 0x80) return 1;
    if (c < 0xC0) { *why = "a continuation byte where a character must start"; return 0; }
    if (c < 0xC2) { *why = "an overlong encoding"; return 0; }
    if (c < 0xE0) len = 2;
    else if (c < 0xF0) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;      /* overlong below U+0800 */
        else if (c == 0xED) hi = 0x9F; /* U+D800..U+DFFF: UTF-16 surrogates */
    } else if (c < 0xF5) {
        len = 4;
        if (c == 0xF0) lo = 0x90;      /* overlong below U+10000 */
        else if (c == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        *why = c == 0xFF || c == 0xFE ? "a byte that never occurs in UTF-8"
                                      : "a lead byte of a code point above U+10FFFF";
        return 0;
    }
    for (k = 1; k < len; k++) {
        unsigned b;
        if ((size_t)k >= n) { *why = "a sequence cut off by the end of the input"; return 0; }
        b = s[k];
        if (b < 0x80 || b > 0xBF) { *why = "a sequence missing a continuation byte"; return 0; }
        if (k == 1 && (b < lo || b > hi)) {
            *why = c == 0xED ? "a UTF-16 surrogate encoded in UTF-8"
                 : c == 0xF4 ? "a code point above U+10FFFF"
                             : "an overlong encoding";
            return 0;
        }
    }
    return len;
}

/* Bounded appender: keeps buf NUL-terminated, never writes past cap. */
typedef struct zero__json_out {
    char *buf;
    size_t cap, n;
} zero__json_out;
static void zero__json_put(zero__json_out *o, const char *s, size_t n) {
    size_t room, k;
    if (o->cap == 0) return;
    room = o->cap - 1 - o->n; /* n <= cap - 1 always */
    k = n < room ? n : room;
    if (k) memcpy(o->buf + o->n, s, k);
    o->n += k;
    o->buf[o->n] = 0;
}

/* One decoded step of the raw string text t[*pi..end): 1..4 bytes into out.
   The text was validated by the parser; anything malformed is passed through
   byte by byte, never read past end. */
static size_t zero__json_decode_step(const char *t, size_t *pi, size_t end, unsigned char out[4]) {
    size_t i = *pi;
    unsigned char c = (unsigned char)t[i], e;
    long cp;
    if (c != '\\' || i + 1 >= end) {
        out[0] = c;
        *pi = i + 1;
        return 1;
    }
    e = (unsigned char)t[i + 1];
    *pi = i + 2;
    switch (e) {
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'n': out[0] = '\n'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'u': break;
    default: out[0] = e; return 1; /* '"', '\\', '/' */
    }
    if (i + 6 > end || (cp = zero__json_hex4(t + i + 2)) < 0) {
        out[0] = e;
        return 1;
    }
    i += 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && i + 6 <= end && t[i] == '\\' && t[i + 1] == 'u') {
        long lo = zero__json_hex4(t + i + 2);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i += 6;
        }
    }
    *pi = i;
    if (cp < 0x80) {
        out[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | (cp >> 6));
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | (cp >> 12));
        out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | (cp >> 18));
    out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static int zero__json_is_string(const zero__json *j, int node) {
    return j && j->nodes && node >= 0 && node < j->count &&
           j->nodes[node].type == ZERO__JSON_STRING && j->nodes[node].end <= j->len;
}

ZERO__UNUSED static size_t zero__json_string(const zero__json *j, int node, char *buf, size_t cap) {
    size_t i, end, total = 0;
    if (buf && cap) buf[0] = 0;
    if (!zero__json_is_string(j, node)) return 0;
    i = j->nodes[node].start;
    end = j->nodes[node].end;
    while (i < end) {
        unsigned char b[4];
        size_t n = zero__json_decode_step(j->text, &i, end, b), k;
        for (k = 0; k < n; k++, total++)
            if (buf && total + 1 < cap) buf[total] = (char)b[k];
    }
    if (buf && cap) buf[total < cap ? total : cap - 1] = 0;
    return total;
}

ZERO__UNUSED static int zero__json_string_eq(const zero__json *j, int node, const char *s, size_t n) {
    size_t i, end, at = 0;
    if (!zero__json_is_string(j, node) || (!s && n)) return 0;
    i = j->nodes[node].start;
    end = j->nodes[node].end;
    while (i < end) {
        unsigned char b[4];
        size_t m = zero__json_decode_step(j->text, &i, end, b);
        if (m > n - at || memcmp(b, s + at, m) != 0) return 0;
        at += m;
    }
    return at == n;
}

/* Streaming byte reader over a decoded string, for comparing two keys. */
typedef struct zero__json_reader {
    const char *t;
    size_t i, end;
    unsigned char b[4];
    size_t n, k;
} zero__json_reader;
static void zero__json_reader_init(zero__json_reader *r, const zero__json *j, int node) {
    r->t = j->text;
    r->i = j->nodes[node].start;
    r->end = j->nodes[node].end;
    r->n = r->k = 0;
}
static int zero__json_reader_next(zero__json_reader *r) { /* next byte, -1 at the end */
    if (r->k == r->n) {
        if (r->i >= r->end) return -1;
        r->n = zero__json_decode_step(r->t, &r->i, r->end, r->b);
        r->k = 0;
    }
    return r->b[r->k++];
}
/* memcmp order of the decoded keys, the shorter first on a common prefix. */
static int zero__json_keycmp(const zero__json *j, int a, int b) {
    zero__json_reader ra, rb;
    zero__json_reader_init(&ra, j, a);
    zero__json_reader_init(&rb, j, b);
    for (;;) {
        int x = zero__json_reader_next(&ra), y = zero__json_reader_next(&rb);
        if (x != y) return x < y ? -1 : 1;
        if (x < 0) return 0;
    }
}

/* Path of `node`, then (when extra_key >= 0) ".<that key>", or (when
   extra_index >= 0) "[extra_index]". A key node's path is its member's. */
static void zero__json_path_ex(const zero__json *j, int node, int extra_key, int extra_index,
                               char *buf, size_t cap) {
    int chain[ZERO_JSON_MAX_DEPTH + 2];
    int n = 0, c, k;
    zero__json_out o;
    char tmp[32];
    o.buf = buf;
    o.cap = buf ? cap : 0;
    o.n = 0;
    if (o.cap) buf[0] = 0;
    if (!j || !j->nodes || node < 0 || node >= j->count) return;
    /* node and its ancestors below the root, innermost first */
    for (c = node; c >= 0 && c < j->count && j->nodes[c].parent >= 0 &&
                   n < (int)(sizeof chain / sizeof chain[0]);
         c = j->nodes[c].parent)
        chain[n++] = c;
    for (k = n - 1; k >= -1; k--) {
        int p, keynode = -1, index = -1;
        if (k >= 0) {
            c = chain[k];
            p = j->nodes[c].parent;
            if (p < 0 || p >= j->count) break;
            if (j->nodes[p].type == ZERO__JSON_OBJECT) {
                keynode = j->nodes[c].key >= 0 ? j->nodes[c].key : c;
            } else {
                int s;
                index = 0;
                for (s = j->nodes[p].first; s >= 0 && s < j->count && s != c; s = j->nodes[s].next)
                    index++;
            }
        } else {
            keynode = extra_key;
            index = extra_key >= 0 ? -1 : extra_index;
        }
        if (keynode >= 0 && zero__json_is_string(j, keynode)) {
            zero__json_reader r;
            int b;
            if (o.n) zero__json_put(&o, ".", 1);
            zero__json_reader_init(&r, j, keynode);
            while ((b = zero__json_reader_next(&r)) >= 0) {
                char ch = (char)(b < 0x20 || b == 0x7F ? '?' : b);
                zero__json_put(&o, &ch, 1);
            }
        } else if (index >= 0) {
            snprintf(tmp, sizeof tmp, "[%d]", index);
            zero__json_put(&o, tmp, strlen(tmp));
        }
    }
}

ZERO__UNUSED static void zero__json_path(const zero__json *j, int node, char *buf, size_t cap) {
    zero__json_path_ex(j, node, -1, -1, buf, cap);
}

ZERO__UNUSED static int zero__json_get(const zero__json *j, int obj, const char *name) {
    int c;
    size_t n;
    if (!j || !j->nodes || !name || obj < 0 || obj >= j->count ||
        j->nodes[obj].type != ZERO__JSON_OBJECT)
        return -1;
    n = strlen(name);
    for (c = j->nodes[obj].first; c >= 0 && c < j->count; c = j->nodes[c].next)
        if (zero__json_string_eq(j, j->nodes[c].key, name, n)) return c;
    return -1;
}

ZERO__UNUSED static void zero__json_free(zero__json *j) {
    if (!j) return;
    ZERO_FREE(j->nodes);
    j->nodes = NULL;
    j->text = NULL;
    j->len = 0;
    j->count = j->cap = 0;
}

/* ---- errors ---- */

/* Key path where the parser stands: the value being parsed (after a key or
   inside an array) or the open object. */
static void zero__json_here(const zero__json_parser *p, char *buf, size_t cap) {
    const zero__json *j = p->j;
    int top;
    buf[0] = 0;
    if (p->depth == 0) return;
    top = p->stack[p->depth - 1].node;
    if (j->nodes[top].type == ZERO__JSON_OBJECT)
        zero__json_path_ex(j, top, p->pending_key, -1, buf, cap);
    else
        zero__json_path_ex(j, top, -1, j->nodes[top].count, buf, cap);
}

/* 1-based line and byte column of offset pos. */
static void zero__json_linecol(const zero__json_parser *p, size_t pos, int *line, int *col) {
    size_t i, start = p->bom;
    int l = 1;
    if (pos > p->len) pos = p->len;
    if (pos < start) pos = start;
    for (i = start; i < pos; i++)
        if (p->t[i] == '\n') {
            l++;
            start = i + 1;
        }
    *line = l;
    *col = (int)(pos - start) + 1;
}

/* at: whose key path the message names: ZERO__JSON_AT_NONE, ZERO__JSON_AT_HERE
   (zero__json_here) or a node. Paths are made only here, on error. */
#define ZERO__JSON_AT_NONE (-2)
#define ZERO__JSON_AT_HERE (-1)
static zero_result zero__json_fail_at(zero__json_parser *p, zero_msg item, int at, size_t pos,
                                      const char *fmt, ...) ZERO__PRINTF(5, 6);
static zero_result zero__json_fail_at(zero__json_parser *p, zero_msg item, int at, size_t pos,
                                      const char *fmt, ...) {
    char text[768], key[ZERO__JSON_PATH_CAP];
    int line, col;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    key[0] = 0;
    if (at == ZERO__JSON_AT_HERE) zero__json_here(p, key, sizeof key);
    else if (at >= 0) zero__json_path(p->j, at, key, sizeof key);
    zero__json_linecol(p, pos, &line, &col);
    return zero__fail(p->err, item, at == ZERO__JSON_AT_NONE ? NULL : key, line, col, "%s", text);
}

/* What stands at pos, for "got ...": 'x', 'word', end of input, ... */
static void zero__json_got(const zero__json_parser *p, size_t pos, char *buf, size_t cap) {
    unsigned char c;
    const char *why;
    if (pos >= p->len) {
        snprintf(buf, cap, "end of input");
        return;
    }
    c = (unsigned char)p->t[pos];
    if (zero__json_is_word(c)) {
        size_t n = 0;
        while (pos + n < p->len && zero__json_is_word((unsigned char)p->t[pos + n]) && n < 24) n++;
        snprintf(buf, cap, "'%.*s%s'", (int)n, p->t + pos,
                 pos + n < p->len && zero__json_is_word((unsigned char)p->t[pos + n]) ? "..." : "");
    } else if (c == '\'') {
        snprintf(buf, cap, "\"'\"");
    } else if (c >= 0x20 && c < 0x7F) {
        snprintf(buf, cap, "'%c'", c);
    } else if (c < 0x80) {
        snprintf(buf, cap, "control character 0x%02X", c);
    } else {
        int n = zero__json_utf8_len((const unsigned char *)p->t + pos, p->len - pos, &why);
        if (n > 0) snprintf(buf, cap, "'%.*s'", n, p->t + pos);
        else snprintf(buf, cap, "byte 0x%02X", c);
    }
}

/* "<expected>, got <what is at pos><hint>"; invalid UTF-8 at pos reports JSON_BAD_UTF8. */
static zero_result zero__json_unexpected(zero__json_parser *p, zero_msg item, int at, size_t pos, const char *expected, const char *hint) {
    char got[64];
    const char *why = "";
    if (pos < p->len && (unsigned char)p->t[pos] >= 0x80 &&
        !zero__json_utf8_len((const unsigned char *)p->t + pos, p->len - pos, &why))
        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, at, pos,
                                  "invalid UTF-8 (byte 0x%02X starts %s); %s",
                                  (unsigned char)p->t[pos], why, expected);
    zero__json_got(p, pos, got, sizeof got);
    return zero__json_fail_at(p, item, at, pos, "%s, got %s%s", expected, got, hint ? hint : "");
}

static const char *zero__json_kind(zero__json_type t) {
    return t == ZERO__JSON_OBJECT ? "object" : "array";
}

/* ---- parsing ---- */

static int zero__json_new_node(zero__json_parser *p, zero__json_type type, size_t start) {
    zero__json *j = p->j;
    zero__json_node *n;
    if (j->count >= ZERO__JSON_MAX_NODES) {
        zero__json_fail_at(p, ZERO_MSG_JSON_TOO_LARGE, ZERO__JSON_AT_HERE, start,
                           "the JSON text needs more than %d nodes (values and keys), the most "
                           "the parser accepts",
                           (int)ZERO__JSON_MAX_NODES);
        return -1;
    }
    if (j->count == j->cap) {
        int ncap = j->cap ? (j->cap > ZERO__JSON_MAX_NODES / 2 ? ZERO__JSON_MAX_NODES : j->cap * 2)
                          : 32;
        zero__json_node *nn = NULL;
        if ((size_t)ncap <= SIZE_MAX / sizeof(zero__json_node))
            nn = (zero__json_node *)ZERO_REALLOC(j->nodes, (size_t)ncap * sizeof(zero__json_node));
        if (!nn) {
            zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                       "out of memory growing the JSON parser's node array to %d nodes", ncap);
            return -1;
        }
        j->nodes = nn;
        j->cap = ncap;
    }
    n = &j->nodes[j->count];
    n->type = type;
    n->parent = p->depth > 0 ? p->stack[p->depth - 1].node : -1;
    n->next = n->first = n->key = -1;
    n->count = 0;
    n->start = n->end = start;
    n->line = p->line;
    n->col = (int)(start - p->line_start) + 1;
    n->number = 0;
    n->integer = 0;
    n->is_integer = 0;
    return j->count++;
}

/* Link a new value node into the open container (if any) as its last child. */
static void zero__json_attach(zero__json_parser *p, int idx) {
    zero__json *j = p->j;
    zero__json_frame *f;
    if (p->depth == 0) return;
    f = &p->stack[p->depth - 1];
    if (f->last >= 0) j->nodes[f->last].next = idx;
    else j->nodes[f->node].first = idx;
    f->last = idx;
    j->nodes[f->node].count++;
    j->nodes[idx].key = p->pending_key;
    p->pending_key = -1;
}

/* Skip whitespace and comments. */
static zero_result zero__json_skip(zero__json_parser *p) {
    const char *t = p->t;
    size_t len = p->len;
    const char *why;
    while (p->pos < len) {
        unsigned char c = (unsigned char)t[p->pos];
        if (c == ' ' || c == '\t' || c == '\r') {
            p->pos++;
        } else if (c == '\n') {
            p->pos++;
            p->line++;
            p->line_start = p->pos;
        } else if (c == '#' || (c == '/' && p->pos + 1 < len && t[p->pos + 1] == '/')) {
            while (p->pos < len && t[p->pos] != '\n') {
                if ((unsigned char)t[p->pos] >= 0x80) {
                    int n = zero__json_utf8_len((const unsigned char *)t + p->pos, len - p->pos, &why);
                    if (!n)
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_NONE, p->pos,
                                                  "invalid UTF-8 in a comment (byte 0x%02X starts %s)",
                                                  (unsigned char)t[p->pos], why);
                    p->pos += (size_t)n;
                } else {
                    p->pos++;
                }
            }
        } else if (c == '/' && p->pos + 1 < len && t[p->pos + 1] == '*') {
            int line0 = p->line, col0 = (int)(p->pos - p->line_start) + 1;
            p->pos += 2;
            for (;;) {
                unsigned char d;
                if (p->pos >= len)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_NONE, p->pos,
                                              "expected '*/' to close the comment opened at line "
                                              "%d:%d, got end of input",
                                              line0, col0);
                d = (unsigned char)t[p->pos];
                if (d == '*' && p->pos + 1 < len && t[p->pos + 1] == '/') {
                    p->pos += 2;
                    break;
                }
                if (d == '\n') {
                    p->pos++;
                    p->line++;
                    p->line_start = p->pos;
                } else if (d >= 0x80) {
                    int n = zero__json_utf8_len((const unsigned char *)t + p->pos, len - p->pos, &why);
                    if (!n)
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_NONE, p->pos,
                                                  "invalid UTF-8 in a comment (byte 0x%02X starts %s)",
                                                  d, why);
                    p->pos += (size_t)n;
                } else {
                    p->pos++;
                }
            }
        } else if (c == '/') {
            return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_NONE, p->pos + 1,
                                         "expected '/' or '*' after '/' to start a comment", NULL);
        } else {
            break;
        }
    }
    return ZERO_OK;
}

/* Validate the string whose opening quote is at p->pos; on success *end is
   the offset of the closing quote. */
static zero_result zero__json_scan_string(zero__json_parser *p, size_t *end) {
    const char *t = p->t;
    size_t len = p->len, i = p->pos + 1;
    const char *why;
    for (;;) {
        unsigned char c;
        if (i >= len)
            return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, i,
                                      "expected '\"' to close the string opened at line %d:%d, "
                                      "got end of input",
                                      p->line, (int)(p->pos - p->line_start) + 1);
        c = (unsigned char)t[i];
        if (c == '"') break;
        if (c == '\\') {
            unsigned char e;
            long cp, lo;
            if (i + 1 >= len)
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, i + 1,
                                          "expected an escape character after '\\' and '\"' to "
                                          "close the string opened at line %d:%d, got end of input",
                                          p->line, (int)(p->pos - p->line_start) + 1);
            e = (unsigned char)t[i + 1];
            switch (e) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                i += 2;
                continue;
            case 'u': break;
            default: {
                char got[64];
                zero__json_got(p, i + 1, got, sizeof got);
                if (e < 0x20 || e >= 0x80) {
                    if (e >= 0x80 && !zero__json_utf8_len((const unsigned char *)t + i + 1,
                                                          len - i - 1, &why))
                        return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_HERE, i + 1,
                                                  "invalid UTF-8 (byte 0x%02X starts %s) after '\\'",
                                                  e, why);
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_ESCAPE, ZERO__JSON_AT_HERE, i,
                                              "invalid escape: expected one of \\\" \\\\ \\/ \\b \\f "
                                              "\\n \\r \\t \\uXXXX after '\\', got %s",
                                              got);
                }
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_ESCAPE, ZERO__JSON_AT_HERE, i,
                                          "invalid escape '\\%c': expected one of \\\" \\\\ \\/ \\b "
                                          "\\f \\n \\r \\t \\uXXXX",
                                          e);
            }
            }
            /* \uXXXX */
            {
                size_t k;
                for (k = 0; k < 4; k++)
                    if (i + 2 + k >= len || zero__json_hexval((unsigned char)t[i + 2 + k]) < 0)
                        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i + 2 + k,
                                                     "expected 4 hex digits after '\\u'", NULL);
            }
            cp = zero__json_hex4(t + i + 2);
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                          "lone low surrogate \\u%.4s: expected a high surrogate "
                                          "\\uD800-\\uDBFF before it",
                                          t + i + 2);
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                size_t k;
                if (i + 7 >= len || t[i + 6] != '\\' || t[i + 7] != 'u') {
                    char got[64];
                    zero__json_got(p, i + 6, got, sizeof got);
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                              "high surrogate \\u%.4s must be followed by a low "
                                              "surrogate \\uDC00-\\uDFFF, got %s",
                                              t + i + 2, i + 6 < len && t[i + 6] == '\\' ?
                                              "another escape" : got);
                }
                for (k = 0; k < 4; k++)
                    if (i + 8 + k >= len || zero__json_hexval((unsigned char)t[i + 8 + k]) < 0)
                        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i + 8 + k,
                                                     "expected 4 hex digits after '\\u'", NULL);
                lo = zero__json_hex4(t + i + 8);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UNICODE, ZERO__JSON_AT_HERE, i,
                                              "high surrogate \\u%.4s must be followed by a low "
                                              "surrogate \\uDC00-\\uDFFF, got \\u%.4s",
                                              t + i + 2, t + i + 8);
                i += 12;
            } else {
                i += 6;
            }
        } else if (c < 0x20) {
            return zero__json_fail_at(p, ZERO_MSG_JSON_CONTROL_CHAR, ZERO__JSON_AT_HERE, i,
                                      "raw control character 0x%02X inside a string: expected it "
                                      "escaped (\\n, \\t, \\u00XX)%s",
                                      c, c == '\n' ? "; is a closing '\"' missing?" : "");
        } else if (c >= 0x80) {
            int n = zero__json_utf8_len((const unsigned char *)t + i, len - i, &why);
            if (!n)
                return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_UTF8, ZERO__JSON_AT_HERE, i,
                                          "invalid UTF-8 in a string (byte 0x%02X starts %s)", c, why);
            i += (size_t)n;
        } else {
            i++;
        }
    }
    *end = i;
    return ZERO_OK;
}

/* Parse the string at p->pos into a new node (not attached). */
static zero_result zero__json_string_node(zero__json_parser *p, int *out) {
    size_t end = 0;
    zero_result rc = zero__json_scan_string(p, &end);
    int idx;
    if (rc != ZERO_OK) return rc;
    idx = zero__json_new_node(p, ZERO__JSON_STRING, p->pos);
    if (idx < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    p->j->nodes[idx].start = p->pos + 1;
    p->j->nodes[idx].end = end;
    p->pos = end + 1;
    *out = idx;
    return ZERO_OK;
}

/* Convert the validated number token t[s..e) into node n. */
static zero_result zero__json_convert_number(zero__json_parser *p, size_t s,
                                             size_t e, int is_int, zero__json_node *n) {
    const char *t = p->t;
    int neg = t[s] == '-';
    if (is_int) {
        uint64_t mag = 0, limit = neg ? (uint64_t)1 << 63 : ((uint64_t)1 << 63) - 1;
        size_t i;
        int fits = 1;
        for (i = s + (size_t)neg; i < e; i++) {
            unsigned d = (unsigned)(t[i] - '0');
            if (mag > (limit - d) / 10) {
                fits = 0;
                break;
            }
            mag = mag * 10 + d;
        }
        if (fits) {
            n->is_integer = 1;
            n->integer = neg ? (mag == (uint64_t)1 << 63 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
            n->number = neg ? -(double)mag : (double)mag; /* correctly rounded */
            return ZERO_OK;
        }
    }
    {
        /* strtod with the token's '.' replaced by this locale's decimal point */
        char small[96], *buf = small, *endp;
        const char *dp = ".";
        size_t dpn, need, k = 0, i;
        struct lconv *lc = localeconv();
        double v;
        if (lc && lc->decimal_point && lc->decimal_point[0]) dp = lc->decimal_point;
        dpn = strlen(dp);
        need = (e - s) + dpn + 1;
        if (need > sizeof small) {
            buf = (char *)ZERO_MALLOC(need);
            if (!buf)
                return zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                                  "out of memory converting a %zu-byte number", e - s);
        }
        for (i = s; i < e; i++) {
            if (t[i] == '.') {
                memcpy(buf + k, dp, dpn);
                k += dpn;
            } else {
                buf[k++] = t[i];
            }
        }
        buf[k] = 0;
        v = strtod(buf, &endp);
        i = (size_t)(endp - buf);
        if (buf != small) ZERO_FREE(buf);
        if (i != k)
            return zero__json_fail_at(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, s,
                                      "number '%.*s' could not be converted by strtod",
                                      (int)(e - s < 40 ? e - s : 40), t + s);
        if (v > DBL_MAX || v < -DBL_MAX)
            return zero__json_fail_at(p, ZERO_MSG_JSON_NUMBER_RANGE, ZERO__JSON_AT_HERE, s,
                                      "number '%.*s%s' is out of the range of a double: expected a "
                                      "magnitude below 1.7976931348623157e308",
                                      (int)(e - s < 40 ? e - s : 40), t + s, e - s > 40 ? "..." : "");
        n->number = v; /* underflow to 0 or a subnormal is fine */
    }
    return ZERO_OK;
}

/* Parse the number at p->pos (RFC 8259 grammar exactly) into a new node. */
static zero_result zero__json_number(zero__json_parser *p, int *out) {
    const char *t = p->t;
    size_t len = p->len, s = p->pos, i = s;
    int is_int = 1, idx;
    zero_result rc;
    if (t[i] == '-') i++;
    if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                     "malformed number: expected a digit after '-'", NULL);
    if (t[i] == '0') {
        i++;
        if (i < len && zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected '.', 'e' or the end of the "
                                         "number after a leading '0'",
                                         " (JSON numbers have no leading zeros)");
    } else {
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && t[i] == '.') {
        is_int = 0;
        i++;
        if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected a digit after '.'", NULL);
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && (t[i] == 'e' || t[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < len && (t[i] == '+' || t[i] == '-')) i++;
        if (i >= len || !zero__json_is_digit((unsigned char)t[i]))
            return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i,
                                         "malformed number: expected a digit in the exponent", NULL);
        while (i < len && zero__json_is_digit((unsigned char)t[i])) i++;
    }
    if (i < len && (zero__json_is_word((unsigned char)t[i]) || t[i] == '.' || t[i] == '+' ||
                    t[i] == '-')) {
        char msg[128];
        snprintf(msg, sizeof msg, "malformed number: expected the end of the number after '%.*s'",
                 (int)(i - s < 40 ? i - s : 40), t + s);
        return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, i, msg, NULL);
    }
    idx = zero__json_new_node(p, ZERO__JSON_NUMBER, s);
    if (idx < 0) return p->err ? p->err->code : ZERO_ERR_CONFIG;
    p->j->nodes[idx].end = i;
    rc = zero__json_convert_number(p, s, i, is_int, &p->j->nodes[idx]);
    if (rc != ZERO_OK) return rc;
    p->pos = i;
    *out = idx;
    return ZERO_OK;
}

/* Check the object `obj` (just closed) for duplicate keys. */
static zero_result zero__json_check_dups(zero__json_parser *p, int obj) {
    zero__json *j = p->j;
    int n = j->nodes[obj].count, c, k, width, *a, *b, best = -1, best_first = -1, run;
    if (n < 2) return ZERO_OK;
    if (n > p->sort_cap) {
        int ncap = p->sort_cap ? p->sort_cap : 16;
        int *na, *nb;
        while (ncap < n) ncap = ncap > INT_MAX / 2 ? n : ncap * 2;
        na = (int *)ZERO_MALLOC((size_t)ncap * sizeof(int));
        nb = (int *)ZERO_MALLOC((size_t)ncap * sizeof(int));
        if (!na || !nb) {
            ZERO_FREE(na);
            ZERO_FREE(nb);
            return zero__fail(p->err, ZERO_MSG_OUT_OF_MEMORY, NULL, 0, 0,
                              "out of memory checking an object of %d members for duplicate keys", n);
        }
        ZERO_FREE(p->sort_a);
        ZERO_FREE(p->sort_b);
        p->sort_a = na;
        p->sort_b = nb;
        p->sort_cap = ncap;
    }
    a = p->sort_a;
    b = p->sort_b;
    for (k = 0, c = j->nodes[obj].first; c >= 0; c = j->nodes[c].next) a[k++] = j->nodes[c].key;
    /* bottom-up merge sort, stable: equal keys stay in document order */
    for (width = 1; width < n; width *= 2) {
        int lo, *tmp;
        for (lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n;
            int hi = mid + width < n ? mid + width : n;
            int x = lo, y = mid, o = lo;
            while (x < mid && y < hi) b[o++] = zero__json_keycmp(j, a[x], a[y]) <= 0 ? a[x++] : a[y++];
            while (x < mid) b[o++] = a[x++];
            while (y < hi) b[o++] = a[y++];
        }
        tmp = a;
        a = b;
        b = tmp;
    }
    /* each run of equal keys: its first two are the first duplicate of that key */
    for (run = 0, k = 1; k <= n; k++) {
        if (k < n && zero__json_keycmp(j, a[run], a[k]) == 0) continue;
        if (k - run >= 2 && (best < 0 || a[run + 1] < best)) {
            best = a[run + 1];
            best_first = a[run];
        }
        run = k;
    }
    if (best >= 0) {
        char path[ZERO__JSON_PATH_CAP];
        const zero__json_node *d = &j->nodes[best], *f = &j->nodes[best_first];
        zero__json_path_ex(j, obj, best, -1, path, sizeof path);
        zero__fail(p->err, ZERO_MSG_JSON_DUPLICATE_KEY, path, 0, 0,
                   "duplicate key (line %d:%d), first at line %d:%d", d->line, d->col, f->line,
                   f->col);
        if (p->err) {
            p->err->line = d->line;
            p->err->column = d->col;
        }
        return ZERO_ERR_CONFIG;
    }
    return ZERO_OK;
}

/* Close the container on top of the stack at its bracket p->pos. */
static zero_result zero__json_close(zero__json_parser *p) {
    int node = p->stack[--p->depth].node;
    p->j->nodes[node].end = ++p->pos;
    if (p->j->nodes[node].type == ZERO__JSON_OBJECT) return zero__json_check_dups(p, node);
    return ZERO_OK;
}

enum { ZERO__JSON_ST_VALUE, ZERO__JSON_ST_AFTER, ZERO__JSON_ST_KEY, ZERO__JSON_ST_DONE };

static zero_result zero__json_run(zero__json_parser *p) {
    zero__json *j = p->j;
    const char *t = p->t;
    int state = ZERO__JSON_ST_VALUE;
    char after = 0; /* what the value or key follows: 0 (top), '[', ',' or ':' */
    zero_result rc;

    if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
    if (p->pos >= p->len)
        return zero__json_fail_at(p, ZERO_MSG_JSON_EMPTY, ZERO__JSON_AT_NONE, p->pos,
                                  "expected a JSON value, got end of input (the text is empty or "
                                  "only whitespace and comments)");
    while (state != ZERO__JSON_ST_DONE) {
        if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
        if (state == ZERO__JSON_ST_VALUE) {
            unsigned char c;
            int idx = -1;
            if (p->pos >= p->len) {
                const zero__json_node *o;
                if (p->depth == 0) /* not reached: the text was checked not empty */
                    return zero__json_fail_at(p, ZERO_MSG_JSON_EMPTY, ZERO__JSON_AT_NONE, p->pos,
                                              "expected a JSON value, got end of input");
                o = &j->nodes[p->stack[p->depth - 1].node];
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                          "expected a value after '%c', got end of input (the "
                                          "%s opened at line %d:%d is not closed)",
                                          after, zero__json_kind(o->type), o->line, o->col);
            }
            c = (unsigned char)t[p->pos];
            if (c == '{' || c == '[') {
                zero__json_type type = c == '{' ? ZERO__JSON_OBJECT : ZERO__JSON_ARRAY;
                if (p->depth >= ZERO_JSON_MAX_DEPTH)
                    return zero__json_fail_at(p, ZERO_MSG_JSON_TOO_DEEP, ZERO__JSON_AT_HERE, p->pos,
                                              "expected at most %d nested arrays/objects, got '%c' "
                                              "opening level %d (ZERO_JSON_MAX_DEPTH)",
                                              (int)ZERO_JSON_MAX_DEPTH, c, p->depth + 1);
                if ((idx = zero__json_new_node(p, type, p->pos)) < 0)
                    return p->err ? p->err->code : ZERO_ERR_CONFIG;
                zero__json_attach(p, idx);
                p->stack[p->depth].node = idx;
                p->stack[p->depth].last = -1;
                p->depth++;
                p->pos++;
                after = (char)c;
                if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
                if (p->pos < p->len && t[p->pos] == (c == '{' ? '}' : ']')) {
                    if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
                    state = ZERO__JSON_ST_AFTER;
                } else {
                    state = c == '{' ? ZERO__JSON_ST_KEY : ZERO__JSON_ST_VALUE;
                }
                continue;
            }
            if (c == '"') {
                rc = zero__json_string_node(p, &idx);
            } else if (c == '-' || zero__json_is_digit(c)) {
                rc = zero__json_number(p, &idx);
            } else if (zero__json_is_word(c)) {
                size_t s = p->pos, e = s;
                zero__json_type type = ZERO__JSON_NULL;
                int ok = 1;
                while (e < p->len && zero__json_is_word((unsigned char)t[e])) e++;
                if (e - s == 4 && memcmp(t + s, "true", 4) == 0) type = ZERO__JSON_TRUE;
                else if (e - s == 5 && memcmp(t + s, "false", 5) == 0) type = ZERO__JSON_FALSE;
                else if (e - s == 4 && memcmp(t + s, "null", 4) == 0) type = ZERO__JSON_NULL;
                else ok = 0;
                if (!ok) {
                    static const char *const lits[] = {"true", "false", "null"};
                    const char *hint = " (strings need double quotes)";
                    int k;
                    for (k = 0; k < 3; k++) /* a misspelt literal: "tru", "nul", "falsey" */
                        if (e - s >= 2 && (strncmp(t + s, lits[k], e - s) == 0 ||
                                           strncmp(t + s, lits[k], strlen(lits[k])) == 0))
                            hint = k == 0 ? " (did you mean true?)"
                                 : k == 1 ? " (did you mean false?)"
                                          : " (did you mean null?)";
                    if ((e - s == 4 && (memcmp(t + s, "True", 4) == 0 || memcmp(t + s, "None", 4) == 0)) ||
                        (e - s == 5 && memcmp(t + s, "False", 5) == 0))
                        hint = " (JSON's literals are lowercase true, false and null)";
                    else if ((e - s == 3 && memcmp(t + s, "NaN", 3) == 0) ||
                             (e - s == 8 && memcmp(t + s, "Infinity", 8) == 0))
                        hint = " (JSON has no NaN or Infinity)";
                    return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, s,
                                                 "expected a value (object, array, string, number, "
                                                 "true, false or null)",
                                                 hint);
                }
                if ((idx = zero__json_new_node(p, type, s)) < 0)
                    return p->err ? p->err->code : ZERO_ERR_CONFIG;
                j->nodes[idx].end = e;
                p->pos = e;
                rc = ZERO_OK;
            } else if (c == '+' || c == '.') {
                return zero__json_unexpected(p, ZERO_MSG_JSON_BAD_NUMBER, ZERO__JSON_AT_HERE, p->pos,
                                             "malformed number: expected '-' or a digit to start it",
                                             c == '.' ? " (write 0.5, not .5)"
                                                      : " (JSON numbers have no '+' sign)");
            } else {
                char expected[64];
                snprintf(expected, sizeof expected, "expected a value%s%s%s",
                         after == ',' ? " after ','" : after == ':' ? " after ':'" : "",
                         after == '[' ? " or ']'" : "", "");
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos, expected,
                    after == ',' && c == ']' ? " (trailing commas are not allowed)"
                    : c == '\'' ? " (strings need double quotes)"
                                : "");
            }
            if (rc != ZERO_OK) return rc;
            zero__json_attach(p, idx);
            state = ZERO__JSON_ST_AFTER;
        } else if (state == ZERO__JSON_ST_AFTER) {
            const zero__json_frame *f;
            int isobj;
            if (p->depth == 0) {
                if (p->pos < p->len)
                    return zero__json_unexpected(p, ZERO_MSG_JSON_TRAILING, ZERO__JSON_AT_NONE, p->pos,
                                                 "expected the end of input after the top-level "
                                                 "value",
                                                 NULL);
                state = ZERO__JSON_ST_DONE;
                continue;
            }
            f = &p->stack[p->depth - 1];
            isobj = j->nodes[f->node].type == ZERO__JSON_OBJECT;
            if (p->pos >= p->len) {
                const zero__json_node *o = &j->nodes[f->node];
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, f->last, p->pos,
                                          "expected ',' or '%c' after %s, got end of input (the "
                                          "%s opened at line %d:%d is not closed)",
                                          isobj ? '}' : ']', isobj ? "object member" : "array element",
                                          zero__json_kind(o->type), o->line, o->col);
            }
            if (t[p->pos] == ',') {
                p->pos++;
                after = ',';
                state = isobj ? ZERO__JSON_ST_KEY : ZERO__JSON_ST_VALUE;
            } else if (t[p->pos] == (isobj ? '}' : ']')) {
                if ((rc = zero__json_close(p)) != ZERO_OK) return rc;
            } else {
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, f->last, p->pos,
                                             isobj ? "expected ',' or '}' after object member"
                                                   : "expected ',' or ']' after array element",
                                             NULL);
            }
        } else { /* ZERO__JSON_ST_KEY */
            int key;
            if (p->pos >= p->len) {
                const zero__json_node *o = &j->nodes[p->stack[p->depth - 1].node];
                return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                          "expected '\"' to start %s, got end of input (the "
                                          "object opened at line %d:%d is not closed)",
                                          after == ',' ? "the next key after ','" : "a key or '}'",
                                          o->line, o->col);
            }
            if (t[p->pos] != '"') {
                unsigned char c = (unsigned char)t[p->pos];
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos,
                    after == ',' ? "expected '\"' to start the next key after ','"
                                 : "expected '\"' to start a key or '}'",
                    after == ',' && c == '}' ? " (trailing commas are not allowed)"
                    : zero__json_is_word(c)  ? " (keys need double quotes)"
                    : c == '\''              ? " (keys need double quotes)"
                                             : "");
            }
            if ((rc = zero__json_string_node(p, &key)) != ZERO_OK) return rc;
            p->pending_key = key;
            if ((rc = zero__json_skip(p)) != ZERO_OK) return rc;
            if (p->pos >= p->len || t[p->pos] != ':') {
                char expected[ZERO__JSON_PATH_CAP + 64];
                char name[64];
                size_t n = zero__json_string(j, key, name, sizeof name), k;
                for (k = 0; name[k]; k++) /* one line: control characters shown as '?' */
                    if ((unsigned char)name[k] < 0x20 || name[k] == 0x7F) name[k] = '?';
                snprintf(expected, sizeof expected, "expected ':' after the key \"%s%s\"", name,
                         n >= sizeof name ? "..." : "");
                if (p->pos >= p->len) {
                    const zero__json_node *o = &j->nodes[p->stack[p->depth - 1].node];
                    return zero__json_fail_at(p, ZERO_MSG_JSON_UNTERMINATED, ZERO__JSON_AT_HERE, p->pos,
                                              "%s, got end of input (the object opened at line "
                                              "%d:%d is not closed)",
                                              expected, o->line, o->col);
                }
                return zero__json_unexpected(p, ZERO_MSG_JSON_UNEXPECTED, ZERO__JSON_AT_HERE, p->pos, expected,
                                             NULL);
            }
            p->pos++;
            after = ':';
            state = ZERO__JSON_ST_VALUE;
        }
    }
    return ZERO_OK;
}

ZERO__UNUSED static zero_result zero__json_parse(zero__json *j, const char *text, size_t len,
                                                 zero_error *err) {
    zero__json_parser p;
    zero_result rc;
    if (!j) return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero__json_parse: j is NULL");
    memset(j, 0, sizeof *j);
    if (!text && len)
        return zero__fail(err, ZERO_MSG_NULL_ARG, NULL, 0, 0, "zero__json_parse: text is NULL");
    if (len > ZERO__JSON_MAX_BYTES)
        return zero__fail(err, ZERO_MSG_JSON_TOO_LARGE, NULL, 0, 0,
                          "the JSON text is %zu bytes, expected at most %zu (256 MiB)", len,
                          (size_t)ZERO__JSON_MAX_BYTES);
    memset(&p, 0, sizeof p);
    j->text = text ? text : "";
    j->len = len;
    p.j = j;
    p.t = j->text;
    p.len = len;
    p.line = 1;
    p.pending_key = -1;
    p.err = err;
    if (len >= 3 && (unsigned char)text[0] == 0xEF && (unsigned char)text[1] == 0xBB &&
        (unsigned char)text[2] == 0xBF)
        p.bom = 3;
    p.pos = p.line_start = p.bom;
    rc = zero__json_run(&p);
    ZERO_FREE(p.sort_a);
    ZERO_FREE(p.sort_b);
    if (rc != ZERO_OK) {
        zero__json_free(j);
        return rc;
    }
    zero__ok(err);
    return ZERO_OK;
}
