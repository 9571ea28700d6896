/* test_json.c - the JSON parser of the config loader (in zero.h): values,
   strings and UTF-8, every error with its line and column, limits (nodes,
   depth, memory), numbers, locale independence, comments, BOM, duplicate
   keys, paths, hjson's forms (the config loader's mode: values, counts and
   places, the errors that remain, strict mode unchanged), and random
   documents parsed back to what was written, the same in both modes.

   Run alone: make test T=test_json */

/* A small node limit so that JSON_TOO_LARGE can be reached (the real one is
   INT_MAX / 2), and an allocator that can be told to fail. */
#define ZERO__JSON_MAX_NODES 300000
#include <stdlib.h>
static long zt_alloc_countdown = -1; /* allocations left before one fails; -1: never */
static void *zt_malloc(size_t n) {
    if (zt_alloc_countdown == 0) return NULL;
    if (zt_alloc_countdown > 0) zt_alloc_countdown--;
    return malloc(n);
}
static void *zt_realloc(void *p, size_t n) {
    if (zt_alloc_countdown == 0) return NULL;
    if (zt_alloc_countdown > 0) zt_alloc_countdown--;
    return realloc(p, n);
}
#define ZERO_MALLOC(n) zt_malloc(n)
#define ZERO_REALLOC(p, n) zt_realloc(p, n)
#define ZERO_FREE(p) free(p)

#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_test.h"

/* the bound on parsing 50,000 keys or 100,000 nested arrays: 1 s, 5 s under AddressSanitizer */
#if defined(__SANITIZE_ADDRESS__)
#define JSON_KEYS_S 5.0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define JSON_KEYS_S 5.0
#endif
#endif
#ifndef JSON_KEYS_S
#define JSON_KEYS_S 1.0
#endif

#include <locale.h>

static zero__json J;
static zero_error E;

static zero_result parse_n(const char *s, size_t n) {
    memset(&E, 0, sizeof E);
    return zero__json_parse(&J, s, n, &E);
}
static zero_result parse(const char *s) { return parse_n(s, strlen(s)); }
static zero_result parse_h(const char *s) { /* hjson's forms accepted, as the config loader parses */
    memset(&E, 0, sizeof E);
    return zero__json_parse_hjson(&J, s, strlen(s), &E);
}

/* Decoded string of node k (static buffer). */
static const char *str(int k) {
    static char buf[4096];
    zero__json_string(&J, k, buf, sizeof buf);
    return buf;
}
static const char *path(int k) {
    static char buf[512];
    zero__json_path(&J, k, buf, sizeof buf);
    return buf;
}

/* ---- error expectations ---- */

static void expect_err_n(int src_line, const char *text, size_t n, zero_msg item, int line,
                         int col, const char *key, const char *sub) {
    zero_result rc = parse_n(text, n);
    CHECKF(rc == ZERO_ERR_CONFIG, "line %d: rc %d for %.60s", src_line, (int)rc, text);
    CHECKF(E.code == rc, "line %d: err.code %d rc %d", src_line, (int)E.code, (int)rc);
    CHECKF(E.item == item, "line %d: item %s, want %s (%s)", src_line, zero_msg_name(E.item),
           zero_msg_name(item), E.msg);
    CHECKF(E.line == line && E.column == col, "line %d: at %d:%d, want %d:%d (%s)", src_line, E.line,
           E.column, line, col, E.msg);
    if (key) CHECKF(strcmp(E.key, key) == 0, "line %d: key '%s', want '%s'", src_line, E.key, key);
    if (sub) CHECKF(strstr(E.msg, sub) != NULL, "line %d: \"%s\" lacks \"%s\"", src_line, E.msg, sub);
    CHECKF(J.nodes == NULL && J.count == 0 && J.cap == 0, "line %d: j not emptied", src_line);
    zero__json_free(&J);
}
#define EXPECT_ERR(text, item, line, col, key, sub) \
    expect_err_n(__LINE__, text, strlen(text), ZERO_MSG_##item, line, col, key, sub)
#define EXPECT_ERR_N(text, n, item, line, col, key, sub) \
    expect_err_n(__LINE__, text, n, ZERO_MSG_##item, line, col, key, sub)

/* The same error in hjson mode. */
static void expect_err_h(int src_line, const char *text, zero_msg item, int line, int col, const char *sub) {
    zero_result rc = parse_h(text);
    CHECKF(rc == ZERO_ERR_CONFIG && E.item == item, "line %d: rc %d item %s, want %s (%s)", src_line, (int)rc,
           zero_msg_name(E.item), zero_msg_name(item), E.msg);
    CHECKF(E.line == line && E.column == col, "line %d: at %d:%d, want %d:%d (%s)", src_line, E.line, E.column, line,
           col, E.msg);
    if (sub) CHECKF(strstr(E.msg, sub) != NULL, "line %d: \"%s\" lacks \"%s\"", src_line, E.msg, sub);
    CHECKF(J.nodes == NULL && J.count == 0, "line %d: j not emptied", src_line);
    zero__json_free(&J);
}
#define EXPECT_ERR_H(text, item, line, col, sub) expect_err_h(__LINE__, text, ZERO_MSG_##item, line, col, sub)

/* ---- value types, links, spans, positions ---- */

static void test_values(void) {
    const char *text = "{\n"
                       "  \"a\": [1, -2.5, \"s\", true, false, null, [], {}],\n"
                       "  \"b\": {\"c\": {\"d\": [[\"deep\"]]}},\n"
                       "  \"e\": \"\"\n"
                       "}";
    int a, b, c, d, e, k, i;
    static const zero__json_type want[] = {ZERO__JSON_NUMBER, ZERO__JSON_NUMBER, ZERO__JSON_STRING,
                                           ZERO__JSON_TRUE,   ZERO__JSON_FALSE,  ZERO__JSON_NULL,
                                           ZERO__JSON_ARRAY,  ZERO__JSON_OBJECT};
    CHECK(parse(text) == ZERO_OK);
    CHECK(E.code == ZERO_OK && E.item == ZERO_MSG_NONE && E.msg[0] == 0);
    CHECK(J.text == text && J.len == strlen(text));
    CHECK(J.count == 21); /* root, a: key + 9, b: key + 7 (obj, key c, obj, key d, 2 arrays, str), e: 2 */
    CHECK(J.nodes[0].type == ZERO__JSON_OBJECT && J.nodes[0].parent == -1 && J.nodes[0].count == 3);
    CHECK(J.nodes[0].start == 0 && J.nodes[0].end == strlen(text) && J.nodes[0].line == 1 &&
          J.nodes[0].col == 1 && J.nodes[0].key == -1 && J.nodes[0].next == -1);
    a = zero__json_get(&J, 0, "a");
    b = zero__json_get(&J, 0, "b");
    e = zero__json_get(&J, 0, "e");
    CHECK(a > 0 && b > a && e > b);
    CHECK(J.nodes[0].first == a && J.nodes[a].next == b && J.nodes[b].next == e && J.nodes[e].next == -1);
    CHECK(zero__json_get(&J, 0, "x") == -1 && zero__json_get(&J, 0, "") == -1);
    CHECK(zero__json_get(&J, a, "a") == -1); /* not an object */
    CHECK(zero__json_get(&J, -1, "a") == -1 && zero__json_get(&J, 1000, "a") == -1);
    /* the key node: a STRING outside the child chains, parent is the object */
    k = J.nodes[a].key;
    CHECK(k >= 0 && J.nodes[k].type == ZERO__JSON_STRING && J.nodes[k].parent == 0 &&
          J.nodes[k].next == -1 && J.nodes[k].key == -1);
    CHECK(J.nodes[k].line == 2 && J.nodes[k].col == 3 && J.nodes[k].end - J.nodes[k].start == 1 &&
          text[J.nodes[k].start] == 'a');
    CHECK(zero__json_string_eq(&J, k, "a", 1) && !zero__json_string_eq(&J, k, "ab", 2) &&
          !zero__json_string_eq(&J, k, "", 0) && !zero__json_string_eq(&J, k, "b", 1));
    CHECK(J.nodes[a].type == ZERO__JSON_ARRAY && J.nodes[a].count == 8 && J.nodes[a].line == 2 &&
          J.nodes[a].col == 8 && J.nodes[a].parent == 0);
    for (i = 0, c = J.nodes[a].first; c >= 0; c = J.nodes[c].next, i++) {
        CHECKF(i < 8 && J.nodes[c].type == want[i], "element %d type %d", i, (int)J.nodes[c].type);
        CHECK(J.nodes[c].parent == a && J.nodes[c].key == -1 && J.nodes[c].line == 2);
    }
    CHECK(i == 8);
    c = J.nodes[a].first;
    CHECK(J.nodes[c].number == 1.0 && J.nodes[c].is_integer && J.nodes[c].integer == 1 &&
          J.nodes[c].col == 9 && J.nodes[c].end - J.nodes[c].start == 1);
    c = J.nodes[c].next;
    CHECK(J.nodes[c].number == -2.5 && !J.nodes[c].is_integer && J.nodes[c].col == 12 &&
          memcmp(text + J.nodes[c].start, "-2.5", 4) == 0 && J.nodes[c].end - J.nodes[c].start == 4);
    c = J.nodes[c].next;
    CHECK(strcmp(str(c), "s") == 0 && J.nodes[c].col == 18 && text[J.nodes[c].start] == 's');
    c = J.nodes[c].next;
    CHECK(J.nodes[c].col == 23 && J.nodes[c].end - J.nodes[c].start == 4);
    c = J.nodes[J.nodes[c].next].next; /* null */
    CHECK(J.nodes[c].type == ZERO__JSON_NULL && J.nodes[c].end - J.nodes[c].start == 4);
    c = J.nodes[c].next; /* [] */
    CHECK(J.nodes[c].count == 0 && J.nodes[c].first == -1 && J.nodes[c].end - J.nodes[c].start == 2);
    c = J.nodes[c].next; /* {} */
    CHECK(J.nodes[c].count == 0 && J.nodes[c].first == -1 && text[J.nodes[c].start] == '{' &&
          text[J.nodes[c].end - 1] == '}');
    c = zero__json_get(&J, b, "c");
    d = zero__json_get(&J, c, "d");
    CHECK(c > b && d > c && J.nodes[d].line == 3 && J.nodes[d].col == 20);
    CHECK(J.nodes[J.nodes[d].first].type == ZERO__JSON_ARRAY);
    k = J.nodes[J.nodes[d].first].first;
    CHECK(strcmp(str(k), "deep") == 0 && strcmp(path(k), "b.c.d[0][0]") == 0);
    CHECK(J.nodes[e].type == ZERO__JSON_STRING && J.nodes[e].start == J.nodes[e].end &&
          zero__json_string(&J, e, NULL, 0) == 0 && zero__json_string_eq(&J, e, "", 0) &&
          J.nodes[e].line == 4 && J.nodes[e].col == 8);
    zero__json_free(&J);
    CHECK(J.nodes == NULL && J.count == 0);
    zero__json_free(&J); /* twice is fine */

    /* scalars at the top level, and whitespace around them */
    CHECK(parse(" \t\r\n 42 \n") == ZERO_OK && J.count == 1 && J.nodes[0].type == ZERO__JSON_NUMBER &&
          J.nodes[0].integer == 42 && J.nodes[0].line == 2 && J.nodes[0].col == 2);
    zero__json_free(&J);
    CHECK(parse("\"top\"") == ZERO_OK && J.count == 1 && strcmp(str(0), "top") == 0);
    zero__json_free(&J);
    CHECK(parse("true") == ZERO_OK && J.nodes[0].type == ZERO__JSON_TRUE);
    zero__json_free(&J);
    CHECK(parse("false") == ZERO_OK && J.nodes[0].type == ZERO__JSON_FALSE);
    zero__json_free(&J);
    CHECK(parse("null") == ZERO_OK && J.nodes[0].type == ZERO__JSON_NULL);
    zero__json_free(&J);
    /* the text need not be NUL-terminated: only len bytes are read */
    CHECK(parse_n("[1,2]xyz", 5) == ZERO_OK && J.nodes[0].count == 2);
    zero__json_free(&J);
    CHECK(parse_n("123456", 3) == ZERO_OK && J.nodes[0].integer == 123);
    zero__json_free(&J);
    /* NULL text with len 0 is the empty text; with len > 0 an argument error */
    CHECK(zero__json_parse(&J, NULL, 0, &E) == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_EMPTY);
    CHECK(zero__json_parse(&J, NULL, 3, &E) == ZERO_ERR_INVALID_ARG && E.item == ZERO_MSG_NULL_ARG);
    CHECK(zero__json_parse(NULL, "1", 1, &E) == ZERO_ERR_INVALID_ARG && E.item == ZERO_MSG_NULL_ARG);
    CHECK(zero__json_parse(&J, "[1]", 3, NULL) == ZERO_OK); /* err may be NULL */
    zero__json_free(&J);
    CHECK(zero__json_parse(&J, "[1", 2, NULL) == ZERO_ERR_CONFIG && J.nodes == NULL);
}

/* ---- strings and escapes ---- */

static void test_strings(void) {
    char buf[64];
    size_t n;
    static const char want[] = "\"\\/\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80" "x\0y";
    CHECK(parse("\"\\\"\\\\\\/\\b\\f\\n\\r\\tA\\u00e9\\u20AC\\ud83d\\ude00x\\u0000y\"") == ZERO_OK);
    n = zero__json_string(&J, 0, buf, sizeof buf);
    CHECK_EQ_INT(n, sizeof want - 1);
    CHECK(memcmp(buf, want, sizeof want - 1) == 0 && buf[n] == 0);
    CHECK(zero__json_string_eq(&J, 0, want, sizeof want - 1));
    CHECK(!zero__json_string_eq(&J, 0, want, sizeof want - 2));
    CHECK(!zero__json_string_eq(&J, 0, want, 3));
    /* truncation: full length returned, NUL-terminated within cap */
    memset(buf, 'Z', sizeof buf);
    CHECK(zero__json_string(&J, 0, buf, 4) == sizeof want - 1);
    CHECK(memcmp(buf, "\"\\/", 3) == 0 && buf[3] == 0 && buf[4] == 'Z');
    buf[0] = 'Z';
    CHECK(zero__json_string(&J, 0, buf, 1) == sizeof want - 1 && buf[0] == 0 && buf[1] == '\\');
    buf[0] = 'Z';
    CHECK(zero__json_string(&J, 0, buf, 0) == sizeof want - 1 && buf[0] == 'Z');
    CHECK(zero__json_string(&J, 0, NULL, 0) == sizeof want - 1);
    /* a truncated multi-byte character is cut bytewise, never past cap */
    memset(buf, 'Z', sizeof buf);
    CHECK(zero__json_string(&J, 0, buf, 11) == sizeof want - 1 && buf[10] == 0 && buf[11] == 'Z' &&
          (unsigned char)buf[9] == 0xC3);
    zero__json_free(&J);

    /* surrogate pair of the brief, and its upper-case spelling; the largest code point */
    CHECK(parse("[\"\\ud83d\\ude00\", \"\\uD83D\\uDE00\", \"\\udbff\\udfff\", \"\\uFFFF\", \"\\u07ff\"]") ==
          ZERO_OK);
    n = zero__json_string(&J, 1, buf, sizeof buf);
    CHECK(n == 4 && memcmp(buf, "\xF0\x9F\x98\x80", 4) == 0);
    CHECK(zero__json_string(&J, 2, buf, sizeof buf) == 4 && memcmp(buf, "\xF0\x9F\x98\x80", 4) == 0);
    CHECK(zero__json_string(&J, 3, buf, sizeof buf) == 4 && memcmp(buf, "\xF4\x8F\xBF\xBF", 4) == 0);
    CHECK(zero__json_string(&J, 4, buf, sizeof buf) == 3 && memcmp(buf, "\xEF\xBF\xBF", 3) == 0);
    CHECK(zero__json_string(&J, 5, buf, sizeof buf) == 2 && memcmp(buf, "\xDF\xBF", 2) == 0);
    CHECK(zero__json_string(&J, 0, buf, sizeof buf) == 0 && buf[0] == 0); /* not a string */
    CHECK(!zero__json_string_eq(&J, 0, "", 0) && !zero__json_string_eq(&J, 99, "", 0));
    zero__json_free(&J);

    /* raw UTF-8 passes through; comment markers inside strings are text */
    CHECK(parse("{\"k\\u00e9y\": \"caf\xC3\xA9 // not a comment # /* either */\"}") == ZERO_OK);
    CHECK(strcmp(str(2), "caf\xC3\xA9 // not a comment # /* either */") == 0);
    CHECK(strcmp(str(1), "k\xC3\xA9y") == 0 && zero__json_get(&J, 0, "k\xC3\xA9y") == 2);
    CHECK(J.nodes[1].end - J.nodes[1].start == 8); /* raw span: escapes not decoded */
    zero__json_free(&J);
    /* DEL (0x7F) is not a control character for JSON */
    CHECK(parse("\"a\x7F\"") == ZERO_OK && strcmp(str(0), "a\x7F") == 0);
    zero__json_free(&J);
}

/* ---- UTF-8 validation ---- */

static void test_utf8(void) {
    static const char *const valid[] = {
        "\"\xC2\x80\"",         "\"\xDF\xBF\"",         "\"\xE0\xA0\x80\"",     "\"\xED\x9F\xBF\"",
        "\"\xEE\x80\x80\"",     "\"\xEF\xBF\xBF\"",     "\"\xF0\x90\x80\x80\"", "\"\xF4\x8F\xBF\xBF\"",
        "\"\xF3\xBF\xBF\xBF\"", "// \xC3\xA9\n1",       "/* \xE2\x82\xAC */ 1", "# \xF0\x9F\x98\x80\n1",
    };
    size_t i;
    for (i = 0; i < sizeof valid / sizeof valid[0]; i++) {
        CHECKF(parse(valid[i]) == ZERO_OK, "valid[%zu]: %s", i, E.msg);
        zero__json_free(&J);
    }
    /* column of the offending lead byte */
    EXPECT_ERR("[\"ab\xC0\xAF\"]", JSON_BAD_UTF8, 1, 5, "[0]", "overlong");            /* overlong '/' */
    EXPECT_ERR("\"\xE0\x80\xAF\"", JSON_BAD_UTF8, 1, 2, "", "overlong");               /* overlong 3-byte */
    EXPECT_ERR("\"\xF0\x80\x80\xAF\"", JSON_BAD_UTF8, 1, 2, "", "overlong");           /* overlong 4-byte */
    EXPECT_ERR("\"\xC1\xBF\"", JSON_BAD_UTF8, 1, 2, "", "overlong");
    EXPECT_ERR("\"\xED\xA0\x80\"", JSON_BAD_UTF8, 1, 2, "", "surrogate");              /* U+D800 */
    EXPECT_ERR("\"\xED\xBF\xBF\"", JSON_BAD_UTF8, 1, 2, "", "surrogate");              /* U+DFFF */
    EXPECT_ERR("\"\xF4\x90\x80\x80\"", JSON_BAD_UTF8, 1, 2, "", "above U+10FFFF");     /* U+110000 */
    EXPECT_ERR("\"\xF5\x80\x80\x80\"", JSON_BAD_UTF8, 1, 2, "", "above U+10FFFF");
    EXPECT_ERR("\"\xFF\"", JSON_BAD_UTF8, 1, 2, "", "never occurs");
    EXPECT_ERR("\"x\x80\"", JSON_BAD_UTF8, 1, 3, "", "continuation");
    EXPECT_ERR("\"\xE2\x82\"", JSON_BAD_UTF8, 1, 2, "", "missing a continuation");    /* truncated */
    EXPECT_ERR("\"\xE2\x82", JSON_BAD_UTF8, 1, 2, "", "end of the input");           /* cut by the end */
    EXPECT_ERR("{\"k\xC3\":1}", JSON_BAD_UTF8, 1, 4, "", NULL);                        /* in a key */
    EXPECT_ERR("{\"a\": {\"b\": \"\xC3\x28\"}}", JSON_BAD_UTF8, 1, 14, "a.b", NULL);  /* key path */
    EXPECT_ERR("1 // x\n  /* \xC3 */", JSON_BAD_UTF8, 2, 6, NULL, "comment");
    EXPECT_ERR("# \xFE\n1", JSON_BAD_UTF8, 1, 3, NULL, "comment");
    EXPECT_ERR("[1, \xC3]", JSON_BAD_UTF8, 1, 5, "[1]", NULL);                          /* at a value */
    EXPECT_ERR("[1 \xE9]", JSON_BAD_UTF8, 1, 4, "[0]", NULL);                           /* between tokens */
    /* valid UTF-8 where a token must stand is unexpected, not bad UTF-8 */
    EXPECT_ERR("[\xC3\xA9]", JSON_UNEXPECTED, 1, 2, "[0]", "got '\xC3\xA9'");
}

/* ---- every error message item, with its position and key path ---- */

static void test_errors(void) {
    zero__json_free(&J);
    /* JSON_EMPTY */
    EXPECT_ERR("", JSON_EMPTY, 1, 1, NULL, "got end of input");
    EXPECT_ERR("  \n  /* c\n */  // x\n# y\n\t", JSON_EMPTY, 5, 2, NULL, "empty");
    /* JSON_UNEXPECTED: what was expected and what came instead */
    EXPECT_ERR("{\"a\": 1]", JSON_UNEXPECTED, 1, 8, "a",
               "expected ',' or '}' after object member, got ']'");
    EXPECT_ERR("[1 2]", JSON_UNEXPECTED, 1, 4, "[0]", "expected ',' or ']' after array element, got '2'");
    EXPECT_ERR("{\n  \"train_batch_size\": 8,\n  \"fp16\": }", JSON_UNEXPECTED, 3, 11, "fp16",
               "expected a value after ':', got '}'");
    EXPECT_ERR("{\"a\": 1,}", JSON_UNEXPECTED, 1, 9, "", "trailing commas");
    EXPECT_ERR("[1, 2,]", JSON_UNEXPECTED, 1, 7, "[2]", "trailing commas");
    EXPECT_ERR("{'a': 1}", JSON_UNEXPECTED, 1, 2, "", "keys need double quotes");
    EXPECT_ERR("{a: 1}", JSON_UNEXPECTED, 1, 2, "", "got 'a' (keys need double quotes)");
    EXPECT_ERR("[\"a\", 'b']", JSON_UNEXPECTED, 1, 7, "[1]", "strings need double quotes");
    EXPECT_ERR("{\"a\" 1}", JSON_UNEXPECTED, 1, 6, "a", "expected ':' after the key \"a\", got '1'");
    EXPECT_ERR("{\"o\": {\"p\": tru}}", JSON_UNEXPECTED, 1, 13, "o.p", "got 'tru' (did you mean true?)");
    EXPECT_ERR("[True]", JSON_UNEXPECTED, 1, 2, "[0]", "lowercase");
    EXPECT_ERR("[NaN]", JSON_UNEXPECTED, 1, 2, "[0]", "no NaN or Infinity");
    EXPECT_ERR("[Infinity]", JSON_UNEXPECTED, 1, 2, "[0]", "no NaN or Infinity");
    EXPECT_ERR("[1, ,]", JSON_UNEXPECTED, 1, 5, "[1]", "expected a value after ',', got ','");
    EXPECT_ERR("[}", JSON_UNEXPECTED, 1, 2, "[0]", "expected a value or ']', got '}'");
    EXPECT_ERR("{]", JSON_UNEXPECTED, 1, 2, "", "expected '\"' to start a key or '}', got ']'");
    EXPECT_ERR(":", JSON_UNEXPECTED, 1, 1, NULL, "expected a value, got ':'");
    EXPECT_ERR("[1 / 2]", JSON_UNEXPECTED, 1, 5, NULL, "expected '/' or '*' after '/'");
    EXPECT_ERR("[\f1]", JSON_UNEXPECTED, 1, 2, "[0]", "control character 0x0C"); /* form feed: not JSON whitespace */
    EXPECT_ERR("[\"a\"\x01]", JSON_UNEXPECTED, 1, 5, "[0]", "control character 0x01");
    /* JSON_UNTERMINATED: strings, arrays, objects, comments */
    EXPECT_ERR("{\"a\": [1, 2", JSON_UNTERMINATED, 1, 12, "a[1]", "the array opened at line 1:7 is not closed");
    EXPECT_ERR("{\"a\": 1", JSON_UNTERMINATED, 1, 8, "a", "the object opened at line 1:1 is not closed");
    EXPECT_ERR("{\"a\": 1,", JSON_UNTERMINATED, 1, 9, "", "the next key");
    EXPECT_ERR("{", JSON_UNTERMINATED, 1, 2, "", "a key or '}'");
    EXPECT_ERR("{\"a\"", JSON_UNTERMINATED, 1, 5, "a", "expected ':'");
    EXPECT_ERR("{\"a\":", JSON_UNTERMINATED, 1, 6, "a", "expected a value after ':'");
    EXPECT_ERR("[", JSON_UNTERMINATED, 1, 2, "[0]", "expected a value after '['");
    EXPECT_ERR("\n  \"abc", JSON_UNTERMINATED, 2, 7, "", "the string opened at line 2:3");
    EXPECT_ERR("\"abc\\", JSON_UNTERMINATED, 1, 6, "", "string opened at line 1:1");
    EXPECT_ERR("[1] /* a\n b", JSON_UNTERMINATED, 2, 3, NULL, "comment opened at line 1:5");
    /* JSON_CONTROL_CHAR */
    EXPECT_ERR("{\"k\": \"a\tb\"}", JSON_CONTROL_CHAR, 1, 9, "k", "0x09");
    EXPECT_ERR("[\"abc\n\"]", JSON_CONTROL_CHAR, 1, 6, "[0]", "closing '\"' missing");
    EXPECT_ERR_N("\"a\0\"", 4, JSON_CONTROL_CHAR, 1, 3, "", "0x00");
    /* JSON_BAD_ESCAPE */
    EXPECT_ERR("{\"k\": \"a\\x\"}", JSON_BAD_ESCAPE, 1, 9, "k", "invalid escape '\\x'");
    EXPECT_ERR("\"\\'\"", JSON_BAD_ESCAPE, 1, 2, "", "expected one of");
    EXPECT_ERR("\"\\U0041\"", JSON_BAD_ESCAPE, 1, 2, "", NULL);
    EXPECT_ERR("\"\\\t\"", JSON_BAD_ESCAPE, 1, 2, "", "control character 0x09");
    /* JSON_BAD_UNICODE */
    EXPECT_ERR("\"\\u12G4\"", JSON_BAD_UNICODE, 1, 6, "", "expected 4 hex digits after '\\u', got 'G4'");
    EXPECT_ERR("\"\\u12\"", JSON_BAD_UNICODE, 1, 6, "", "got '\"'");
    EXPECT_ERR("\"\\u12", JSON_BAD_UNICODE, 1, 6, "", "end of input");
    EXPECT_ERR("[\"\\ud800\"]", JSON_BAD_UNICODE, 1, 3, "[0]", "high surrogate \\ud800 must be followed");
    EXPECT_ERR("\"\\ud800x\"", JSON_BAD_UNICODE, 1, 2, "", "got 'x'");
    EXPECT_ERR("\"\\ud800\\u0041\"", JSON_BAD_UNICODE, 1, 2, "", "got \\u0041");
    EXPECT_ERR("\"\\ud800\\ud800\"", JSON_BAD_UNICODE, 1, 2, "", "got \\ud800");
    EXPECT_ERR("\"\\ud800\\n\"", JSON_BAD_UNICODE, 1, 2, "", "another escape");
    EXPECT_ERR("\"\\ud800\\u12", JSON_BAD_UNICODE, 1, 12, "", "4 hex digits");
    EXPECT_ERR("\"ab\\udc00\"", JSON_BAD_UNICODE, 1, 4, "", "lone low surrogate \\udc00");
    EXPECT_ERR("\"\\uDFFF\\uD800\"", JSON_BAD_UNICODE, 1, 2, "", "lone low surrogate");
    /* JSON_BAD_UTF8: see test_utf8 */
    EXPECT_ERR("\"\xC0\xAF\"", JSON_BAD_UTF8, 1, 2, "", "byte 0xC0");
    /* JSON_BAD_NUMBER: see test_numbers for the full table */
    EXPECT_ERR("{\"stage\": 01}", JSON_BAD_NUMBER, 1, 12, "stage", "leading");
    /* JSON_NUMBER_RANGE */
    EXPECT_ERR("{\"lr\": 1e400}", JSON_NUMBER_RANGE, 1, 8, "lr", "'1e400' is out of the range of a double");
    /* JSON_TOO_DEEP: see test_depth */
    EXPECT_ERR("{\"a\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]"
               "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
               JSON_TOO_DEEP, 1, 70, NULL, "expected at most 64 nested");
    /* JSON_TRAILING */
    EXPECT_ERR("{} x", JSON_TRAILING, 1, 4, NULL, "expected the end of input after the top-level value, got 'x'");
    EXPECT_ERR("1 2", JSON_TRAILING, 1, 3, NULL, "got '2'");
    EXPECT_ERR("[]]", JSON_TRAILING, 1, 3, NULL, "got ']'");
    EXPECT_ERR("{}\n// ok\n{}", JSON_TRAILING, 3, 1, NULL, "got '{'");
    EXPECT_ERR("{} \xC3\xA9", JSON_TRAILING, 1, 4, NULL, NULL);
    /* JSON_DUPLICATE_KEY: the brief's message, exactly */
    CHECK(parse("{\n  \"zero_optimization\": {\n    \"stage\": 1,\n    \"overlap_comm\": true,\n"
                "    \"stage\": 2\n  }\n}") == ZERO_ERR_CONFIG);
    CHECK(E.item == ZERO_MSG_JSON_DUPLICATE_KEY && E.line == 5 && E.column == 5);
    CHECKF(strcmp(E.msg, "zero_optimization.stage: duplicate key (line 5:5), first at line 3:5") == 0,
           "%s", E.msg);
    CHECK(strcmp(E.key, "zero_optimization.stage") == 0);
    CHECK(J.nodes == NULL);
    /* JSON_TOO_LARGE: the length is refused before any byte is read, so a
       short buffer with a large claimed length is safe here */
    EXPECT_ERR_N("{}", ZERO__JSON_MAX_BYTES + 1, JSON_TOO_LARGE, 0, 0, NULL, "at most 268435456");
    CHECK(parse_n("1", 1) == ZERO_OK); /* and the limit itself is not an error for small texts */
    zero__json_free(&J);
}

/* Node limit (ZERO__JSON_MAX_NODES, 300000 in this test): at the limit OK, one more fails. */
static void test_node_limit(void) {
    size_t n = 300000, i, len;
    char *t = (char *)malloc(2 * n + 2);
    if (!t) return;
    /* one array + (n - 1) elements = n nodes */
    t[0] = '[';
    for (i = 0; i < n - 1; i++) {
        t[1 + 2 * i] = '0';
        t[2 + 2 * i] = ',';
    }
    len = 1 + 2 * (n - 1);
    t[len - 1] = ']';
    CHECK(parse_n(t, len) == ZERO_OK && J.count == (int)n && J.nodes[0].count == (int)n - 1);
    zero__json_free(&J);
    /* one element more */
    t[len - 1] = ',';
    t[len] = '0';
    t[len + 1] = ']';
    CHECK(parse_n(t, len + 2) == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_TOO_LARGE);
    CHECK(E.line == 1 && E.column == (int)len + 1 && strstr(E.msg, "300000 nodes") != NULL);
    CHECK(strcmp(E.key, "[299999]") == 0);
    zero__json_free(&J);
    free(t);
}

/* Every allocation failing in turn: OUT_OF_MEMORY, nothing leaks, j empty. */
static void test_out_of_memory(void) {
    /* nodes grow past the first capacity; objects of >= 2 members use the
       sort scratch; a number token longer than the stack buffer is copied */
    char text[4096];
    int i, k, failures = 0;
    size_t n = 0;
    n += (size_t)snprintf(text + n, sizeof text - n, "{\"big\": 1");
    for (i = 0; i < 150; i++) text[n++] = '0';
    n += (size_t)snprintf(text + n, sizeof text - n, ".5, \"list\": [");
    for (i = 0; i < 60; i++) n += (size_t)snprintf(text + n, sizeof text - n, "%s{\"a\": %d, \"b\": 2}", i ? "," : "", i);
    n += (size_t)snprintf(text + n, sizeof text - n, "]}");
    for (k = 0; k < 100; k++) {
        zero_result rc;
        zt_alloc_countdown = k;
        rc = parse_n(text, n);
        zt_alloc_countdown = -1;
        if (rc == ZERO_OK) break;
        failures++;
        CHECKF(rc == ZERO_ERR_OUT_OF_MEMORY && E.item == ZERO_MSG_OUT_OF_MEMORY &&
                   E.code == ZERO_ERR_OUT_OF_MEMORY,
               "countdown %d: rc %d item %s: %s", k, (int)rc, zero_msg_name(E.item), E.msg);
        CHECK(J.nodes == NULL && J.count == 0);
        CHECK_STR_CONTAINS(E.msg, "out of memory");
    }
    CHECKF(failures >= 4, "only %d allocation points failed", failures); /* growths, sort, number */
    CHECK(k < 100 && J.count > 180 && J.nodes[zero__json_get(&J, 0, "big")].number == 1e150);
    zero__json_free(&J);
}

/* ---- nesting depth ---- */

static void test_depth(void) {
    char t[512];
    int d, i;
    /* arrays: 64 levels OK, 65 refused at the 65th '[' */
    for (d = 63; d <= 66; d++) {
        for (i = 0; i < d; i++) t[i] = '[';
        for (i = 0; i < d; i++) t[d + i] = ']';
        if (d <= ZERO_JSON_MAX_DEPTH) {
            CHECKF(parse_n(t, 2 * (size_t)d) == ZERO_OK, "depth %d: %s", d, E.msg);
            CHECK(J.count == d);
            if (J.count == d) CHECK(J.nodes[d - 1].parent == d - 2 && J.nodes[0].count == 1);
            zero__json_free(&J);
        } else {
            CHECK(parse_n(t, 2 * (size_t)d) == ZERO_ERR_CONFIG);
            CHECK(E.item == ZERO_MSG_JSON_TOO_DEEP && E.line == 1 && E.column == 65);
        }
    }
    CHECK(ZERO_JSON_MAX_DEPTH == 64);
    /* objects: {"k":{"k":...}} */
    for (d = 64; d <= 65; d++) {
        size_t n = 0;
        for (i = 0; i < d; i++) n += (size_t)snprintf(t + n, sizeof t - n, "{\"k\":");
        n += (size_t)snprintf(t + n, sizeof t - n, "1");
        for (i = 0; i < d; i++) t[n++] = '}';
        if (d == 64) {
            CHECKF(parse_n(t, n) == ZERO_OK, "%s", E.msg);
            CHECK(J.count == 2 * 64 + 1 && J.nodes[J.count - 1].type == ZERO__JSON_NUMBER);
            zero__json_free(&J);
        } else {
            CHECK(parse_n(t, n) == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_TOO_DEEP);
            CHECK(E.column == 64 * 5 + 1);
            CHECK(strncmp(E.key, "k.k.k.k", 7) == 0);
        }
    }
    /* a million '[' is refused at level 65 without deep recursion */
    {
        size_t n = 1000000;
        char *big = (char *)malloc(n);
        if (big) {
            memset(big, '[', n);
            CHECK(parse_n(big, n) == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_TOO_DEEP && E.column == 65);
            free(big);
        }
    }
}

/* ---- numbers ---- */

static void test_numbers(void) {
    static const struct {
        const char *text;
        double value;
        int is_integer;
    } ok[] = {
        {"0", 0.0, 1},
        {"-0", -0.0, 1},
        {"1", 1.0, 1},
        {"-1", -1.0, 1},
        {"2e8", 200000000.0, 0},
        {"2E8", 200000000.0, 0},
        {"1E-7", 1e-7, 0},
        {"1e-7", 0.0000001, 0},
        {"1.5e+3", 1500.0, 0},
        {"1.5E-3", 0.0015, 0},
        {"0.1", 0.1, 0},
        {"0.5", 0.5, 0},
        {"-0.0", -0.0, 0},
        {"0e0", 0.0, 0},
        {"0.000", 0.0, 0},
        {"3.141592653589793", 3.141592653589793, 0},
        {"1e308", 1e308, 0},
        {"1.7976931348623157e308", 1.7976931348623157e308, 0},
        {"-1.7976931348623157e308", -1.7976931348623157e308, 0},
        {"2.2250738585072011e-308", 2.2250738585072011e-308, 0},
        {"4.9406564584124654e-324", 4.9406564584124654e-324, 0},
        {"1e-400", 0.0, 0},
        {"-1e-400", -0.0, 0},
        {"0.1000000000000000055511151231257827021181583404541015625", 0.1, 0},
        {"9007199254740993", 9007199254740992.0, 1}, /* 2^53 + 1: ties to even */
        {"123456789012345678901234567890", 1.2345678901234568e29, 0},
        {"1e0", 1.0, 0},
        {"5e-1", 0.5, 0},
        {"100", 100.0, 1},
        {"4294967296", 4294967296.0, 1},
    };
    static const char *const bad[] = {
        "01", "-01", "00", "+1", ".5", "-.5", "1.", "1.e5", "-", "--1", "1e", "1e+", "1E-", "0x10",
        "0X1F", "1.5.2", "1e5e3", "1e5.0", "1-2", "1+2", "-a", "1a", "0b1", "1_000", "2..3",
        "-Infinity", "- 1", "1e 5",
    };
    size_t i;
    for (i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        zero_result rc = parse(ok[i].text);
        CHECKF(rc == ZERO_OK, "%s: %s", ok[i].text, E.msg);
        if (rc != ZERO_OK) continue;
        CHECKF(J.nodes[0].type == ZERO__JSON_NUMBER && J.nodes[0].number == ok[i].value &&
                   !!signbit(J.nodes[0].number) == !!signbit(ok[i].value),
               "%s: got %.17g want %.17g", ok[i].text, J.nodes[0].number, ok[i].value);
        CHECKF(J.nodes[0].is_integer == ok[i].is_integer, "%s: is_integer %d", ok[i].text,
               J.nodes[0].is_integer);
        if (ok[i].is_integer && fabs(ok[i].value) < 9007199254740992.0)
            CHECK(J.nodes[0].integer == (int64_t)ok[i].value);
        CHECK(J.nodes[0].start == 0 && J.nodes[0].end == strlen(ok[i].text));
        zero__json_free(&J);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char t[64];
        zero_result rc;
        snprintf(t, sizeof t, "[%s]", bad[i]);
        rc = parse(t);
        CHECKF(rc == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_BAD_NUMBER,
               "%s: rc %d item %s %s", t, (int)rc, zero_msg_name(E.item), E.msg);
        zero__json_free(&J);
    }
    CHECK(parse("9007199254740993") == ZERO_OK && J.nodes[0].integer == 9007199254740993LL);
    zero__json_free(&J);
    /* positions and texts of number errors: the offending character */
    EXPECT_ERR("[01]", JSON_BAD_NUMBER, 1, 3, "[0]", "leading '0', got '1'");
    EXPECT_ERR("[1.]", JSON_BAD_NUMBER, 1, 4, "[0]", "expected a digit after '.', got ']'");
    EXPECT_ERR("[.5]", JSON_BAD_NUMBER, 1, 2, "[0]", "write 0.5");
    EXPECT_ERR("[+1]", JSON_BAD_NUMBER, 1, 2, "[0]", "no '+' sign");
    EXPECT_ERR("[-]", JSON_BAD_NUMBER, 1, 3, "[0]", "expected a digit after '-', got ']'");
    EXPECT_ERR("{\"x\": 1e+}", JSON_BAD_NUMBER, 1, 10, "x", "exponent, got '}'");
    EXPECT_ERR("[0x10]", JSON_BAD_NUMBER, 1, 3, "[0]", "after '0', got 'x10'");
    EXPECT_ERR("[1.5.2]", JSON_BAD_NUMBER, 1, 5, "[0]", "after '1.5', got '.'");
    EXPECT_ERR("-", JSON_BAD_NUMBER, 1, 2, "", "end of input");
    /* integers: exact over the whole int64 range, then doubles */
    CHECK(parse("[9223372036854775807, -9223372036854775808, 9223372036854775808, "
                "-9223372036854775809, -0, 18446744073709551616]") == ZERO_OK);
    if (J.count == 7) {
        CHECK(J.nodes[1].is_integer && J.nodes[1].integer == INT64_MAX &&
              J.nodes[1].number == 9223372036854775807.0);
        CHECK(J.nodes[2].is_integer && J.nodes[2].integer == INT64_MIN &&
              J.nodes[2].number == -9223372036854775808.0);
        CHECK(!J.nodes[3].is_integer && J.nodes[3].integer == 0 && J.nodes[3].number == 9223372036854775808.0);
        CHECK(!J.nodes[4].is_integer && J.nodes[4].number == -9223372036854775808.0);
        CHECK(J.nodes[5].is_integer && J.nodes[5].integer == 0 && J.nodes[5].number == 0.0 &&
              signbit(J.nodes[5].number));
        CHECK(!J.nodes[6].is_integer && J.nodes[6].number == 18446744073709551616.0);
    }
    zero__json_free(&J);
    CHECK(parse("[99999999999999999, 1234567890123456789]") == ZERO_OK);
    CHECK(J.nodes[1].integer == 99999999999999999LL && J.nodes[1].number == 1e17);
    CHECK(J.nodes[2].integer == 1234567890123456789LL && J.nodes[2].number == 1234567890123456789.0);
    zero__json_free(&J);
    /* range: overflow is an error, underflow is 0 */
    EXPECT_ERR("1e400", JSON_NUMBER_RANGE, 1, 1, "", "out of the range");
    EXPECT_ERR("[-1e400]", JSON_NUMBER_RANGE, 1, 2, "[0]", "'-1e400'");
    EXPECT_ERR("1.8e308", JSON_NUMBER_RANGE, 1, 1, "", NULL);
    {
        char t[512];
        size_t n;
        memset(t, '9', 400); /* a 400-digit integer: beyond int64 and double */
        n = 400;
        EXPECT_ERR_N(t, n, JSON_NUMBER_RANGE, 1, 1, "", "...");
        /* a 300-digit one is a fine double, converted through a heap copy of the token */
        CHECK(parse_n(t, 300) == ZERO_OK && J.nodes[0].number == 1e300 && !J.nodes[0].is_integer);
        zero__json_free(&J);
        /* long mantissa, exact expectation: 1 followed by 200 zeros, times 1e-200 */
        t[0] = '1';
        memset(t + 1, '0', 200);
        memcpy(t + 201, "e-200", 5);
        CHECK(parse_n(t, 206) == ZERO_OK && J.nodes[0].number == 1.0);
        zero__json_free(&J);
    }
}

/* ---- locale independence ---- */

static void test_locale(void) {
    static const char *const names[] = {"de_DE.UTF-8", "de_DE.utf8", "de_DE", "fr_FR.UTF-8",
                                        "fr_FR.utf8",  "fr_FR",      "ru_RU.UTF-8", "es_ES.UTF-8",
                                        "nl_NL.UTF-8", "it_IT.UTF-8", "pt_BR.UTF-8"};
    size_t i;
    const char *got = NULL;
    for (i = 0; i < sizeof names / sizeof names[0] && !got; i++) {
        if (setlocale(LC_NUMERIC, names[i]) && strcmp(localeconv()->decimal_point, ",") == 0)
            got = names[i];
        else
            setlocale(LC_NUMERIC, "C");
    }
    if (!got) {
        printf("test_locale: no comma-decimal locale installed, skipped (LOCPATH may point to one)\n");
        return;
    }
    printf("test_locale: LC_NUMERIC=%s\n", got);
    CHECK(strtod("1.5", NULL) == 1.0); /* the locale is really in effect */
    CHECK(parse("[1.5, -2.25e1, 0.1, 1e-7, 123456789012345678901234567890, 2]") == ZERO_OK);
    if (J.count == 7) {
        CHECK(J.nodes[1].number == 1.5);
        CHECK(J.nodes[2].number == -22.5);
        CHECK(J.nodes[3].number == 0.1);
        CHECK_NEAR(J.nodes[4].number, 1e-7, 0.0); /* exact: rel 0 */
        CHECK(J.nodes[5].number == 1.2345678901234568e29);
        CHECK(J.nodes[6].integer == 2);
    }
    zero__json_free(&J);
    EXPECT_ERR("[1,5e400]", JSON_NUMBER_RANGE, 1, 4, "[1]", NULL);
    EXPECT_ERR("[1,5]x", JSON_TRAILING, 1, 6, NULL, NULL); /* "1,5" is two numbers, never one */
    setlocale(LC_NUMERIC, "C");
    CHECK(strtod("1.5", NULL) == 1.5);
}

/* ---- comments (hjson) and the BOM ---- */

static void test_comments(void) {
    const char *t = "// leading line comment\n"
                    "# hash comment\n"
                    "/* block\n   over lines */ {  // after brace\n"
                    "  \"a\" /* before colon */ : /* after colon */ 1 /* before comma */ , # x\n"
                    "  \"b\": [ /**/ 2 /***/ , // c\n 3 # d\n ] /* * / ** */\n"
                    "} // trailing\n"
                    "/* trailing block */ # end";
    int a, b;
    CHECKF(parse(t) == ZERO_OK, "%s", E.msg);
    a = zero__json_get(&J, 0, "a");
    b = zero__json_get(&J, 0, "b");
    CHECK(a > 0 && J.nodes[a].integer == 1 && J.nodes[a].line == 5 && J.nodes[a].col == 46);
    CHECK(b > 0 && J.nodes[b].count == 2 && J.nodes[J.nodes[b].first].integer == 2);
    CHECK(J.nodes[0].line == 4 && J.nodes[0].col == 18);
    CHECK(J.nodes[J.nodes[J.nodes[b].first].next].line == 7);
    zero__json_free(&J);
    CHECK(parse("1//x") == ZERO_OK && J.nodes[0].integer == 1 && J.nodes[0].end == 1);
    zero__json_free(&J);
    CHECK(parse("1#x") == ZERO_OK);
    zero__json_free(&J);
    CHECK(parse("[1/**/,/**/2]") == ZERO_OK && J.nodes[0].count == 2);
    zero__json_free(&J);
    CHECK(parse("/*/ 1 */ 2") == ZERO_OK && J.nodes[0].integer == 2); /* the '/' after the opener closes nothing */
    zero__json_free(&J);
    CHECK(parse("// only a comment, no newline") == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_EMPTY);
    EXPECT_ERR("/* never closed *", JSON_UNTERMINATED, 1, 18, NULL, "'*/'");
    EXPECT_ERR("{\"a\": 1 /* x", JSON_UNTERMINATED, 1, 13, NULL, "line 1:9");
    /* a comment cannot sit inside a token */
    EXPECT_ERR("tr/**/ue", JSON_UNEXPECTED, 1, 1, NULL, "'tr'");
    EXPECT_ERR("[1/**/2]", JSON_UNEXPECTED, 1, 7, "[0]", "got '2'");
}

static void test_bom(void) {
    CHECK(parse("\xEF\xBB\xBF{\"a\": 1}") == ZERO_OK && J.nodes[0].line == 1 && J.nodes[0].col == 1 &&
          J.nodes[0].start == 3 && J.nodes[2].col == 7);
    zero__json_free(&J);
    CHECK(parse("\xEF\xBB\xBF" "1") == ZERO_OK && J.nodes[0].integer == 1);
    zero__json_free(&J);
    EXPECT_ERR("\xEF\xBB\xBF", JSON_EMPTY, 1, 1, NULL, NULL);
    EXPECT_ERR("\xEF\xBB\xBF  x", JSON_UNEXPECTED, 1, 3, NULL, "got 'x'"); /* columns after the BOM */
    /* a BOM elsewhere is not whitespace */
    EXPECT_ERR("[1, \xEF\xBB\xBF 2]", JSON_UNEXPECTED, 1, 5, "[1]", NULL);
    EXPECT_ERR("\xEF\xBB\xBF\xEF\xBB\xBF{}", JSON_UNEXPECTED, 1, 1, NULL, NULL);
    /* a cut BOM is bad UTF-8 */
    EXPECT_ERR("\xEF\xBB{}", JSON_BAD_UTF8, 1, 1, NULL, NULL);
}

/* ---- duplicate keys ---- */

static double now_s(void) { return (double)clock() / CLOCKS_PER_SEC; }

static void test_duplicates(void) {
    char *t;
    size_t n, cap = 2000000;
    int i;
    double t0, dt;
    EXPECT_ERR("{\"a\": 1, \"b\": 2, \"a\": 3}", JSON_DUPLICATE_KEY, 1, 18, "a",
               "duplicate key (line 1:18), first at line 1:2");
    /* compared after decoding */
    EXPECT_ERR("{\"a\": 1, \"\\u0061\": 2}", JSON_DUPLICATE_KEY, 1, 10, "a", "first at line 1:2");
    EXPECT_ERR("{\"\\/\": 1, \"/\": 2}", JSON_DUPLICATE_KEY, 1, 11, "/", NULL);
    EXPECT_ERR("{\"\\ud83d\\ude00\": 1, \"\xF0\x9F\x98\x80\": 2}", JSON_DUPLICATE_KEY, 1, 21, NULL, NULL);
    EXPECT_ERR("{\"\": 1, \"\": 2}", JSON_DUPLICATE_KEY, 1, 9, "", "first at line 1:2");
    /* the earliest second occurrence is reported */
    EXPECT_ERR("{\"b\": 1, \"a\": 1, \"b\": 2, \"a\": 2, \"a\": 3}", JSON_DUPLICATE_KEY, 1, 18, "b",
               "first at line 1:2");
    /* nested: the path names the member */
    EXPECT_ERR("{\"x\": [{\"k\": 1}, {\"k\": 1, \"j\": 0, \"k\": 2}]}", JSON_DUPLICATE_KEY, 1, 35, "x[1].k",
               "first at line 1:19");
    /* not duplicates: prefixes, embedded NUL, case, the same key in different objects */
    CHECK(parse("{\"a\": 1, \"ab\": 2, \"a\\u0000\": 3, \"A\": 4, \"o\": {\"a\": 5}, \"p\": {\"a\": 6}}") == ZERO_OK);
    CHECK(J.nodes[0].count == 6);
    {
        int k = J.nodes[zero__json_get(&J, 0, "A")].next; /* "o"'s value... */
        CHECK(k > 0 && J.nodes[k].type == ZERO__JSON_OBJECT);
        /* the key with a NUL: decoded length 2, zero__json_get("a") must not match it */
        CHECK(J.nodes[zero__json_get(&J, 0, "a")].integer == 1);
        CHECK(zero__json_string(&J, 5, NULL, 0) == 2 && zero__json_string_eq(&J, 5, "a\0", 2));
    }
    zero__json_free(&J);

    /* 50,000 distinct keys: O(n log n) (quadratic would be 1.25e9 comparisons: seconds optimized, a minute
       under the sanitizers, which make test builds without optimization) */
    t = (char *)malloc(cap);
    if (!t) return;
    n = 0;
    t[n++] = '{';
    for (i = 0; i < 50000; i++) n += (size_t)snprintf(t + n, cap - n, "%s\"key_%d\\u005f%d\": %d", i ? ", " : "", (i * 7919) % 50000, i, i);
    t[n++] = '}';
    t0 = now_s();
    CHECKF(parse_n(t, n) == ZERO_OK, "%s", E.msg);
    dt = now_s() - t0;
    CHECKF(dt < JSON_KEYS_S, "50000 keys took %.3f s", dt);
    printf("test_duplicates: 50000 distinct keys in %.1f ms\n", dt * 1e3);
    CHECK(J.nodes[0].count == 50000 && J.count == 100001);
    {
        int v = zero__json_get(&J, 0, "key_7919_1");
        CHECK(v > 0 && J.nodes[v].integer == 1);
    }
    zero__json_free(&J);
    /* and one duplicate among them, last */
    n--;
    n += (size_t)snprintf(t + n, cap - n, ",\n\"key_%d_%d\": 0}", (4 * 7919) % 50000, 4);
    t0 = now_s();
    CHECK(parse_n(t, n) == ZERO_ERR_CONFIG && E.item == ZERO_MSG_JSON_DUPLICATE_KEY);
    dt = now_s() - t0;
    CHECKF(dt < JSON_KEYS_S, "50000 keys took %.3f s", dt);
    CHECK(E.line == 2 && E.column == 1);
    {
        char want[64];
        snprintf(want, sizeof want, "key_%d_4", (4 * 7919) % 50000);
        CHECKF(strcmp(E.key, want) == 0, "key %s want %s", E.key, want);
    }
    CHECK_STR_CONTAINS(E.msg, "first at line 1:");
    /* 100,000 one-element arrays inside an array: no quadratic path work */
    n = 0;
    t[n++] = '[';
    for (i = 0; i < 100000; i++) n += (size_t)snprintf(t + n, cap - n, "%s[%d]", i ? "," : "", i);
    t[n++] = ']';
    t0 = now_s();
    CHECK(parse_n(t, n) == ZERO_OK && J.count == 200001);
    dt = now_s() - t0;
    CHECKF(dt < JSON_KEYS_S, "100000 arrays took %.3f s", dt);
    zero__json_free(&J);
    free(t);
}

/* ---- zero__json_get and zero__json_path ---- */

static void test_get_path(void) {
    const char *t = "{\"zero_optimization\": {\"stage\": 3, \"offload_optimizer\": {\"device\": \"cpu\"}},"
                    " \"optimizer\": {\"params\": {\"betas\": [0.9, 0.999]}}, \"list\": [[1, [2]], {\"k\\n\": 0}]}";
    int zo, oo, dev, betas, b1, list, k;
    char buf[256];
    CHECK(parse(t) == ZERO_OK);
    zo = zero__json_get(&J, 0, "zero_optimization");
    oo = zero__json_get(&J, zo, "offload_optimizer");
    dev = zero__json_get(&J, oo, "device");
    CHECK(zo > 0 && oo > zo && dev > oo && strcmp(str(dev), "cpu") == 0);
    CHECK(strcmp(path(dev), "zero_optimization.offload_optimizer.device") == 0);
    CHECK(strcmp(path(J.nodes[dev].key), "zero_optimization.offload_optimizer.device") == 0);
    CHECK(strcmp(path(zo), "zero_optimization") == 0 && strcmp(path(0), "") == 0);
    CHECK(J.nodes[zero__json_get(&J, zo, "stage")].integer == 3);
    betas = zero__json_get(&J, zero__json_get(&J, zero__json_get(&J, 0, "optimizer"), "params"), "betas");
    b1 = J.nodes[J.nodes[betas].first].next;
    CHECK(J.nodes[b1].number == 0.999 && strcmp(path(b1), "optimizer.params.betas[1]") == 0);
    list = zero__json_get(&J, 0, "list");
    k = J.nodes[J.nodes[J.nodes[list].first].first].next; /* [2] */
    CHECK(strcmp(path(J.nodes[k].first), "list[0][1][0]") == 0);
    k = J.nodes[J.nodes[list].first].next;
    CHECK(strcmp(path(J.nodes[k].first), "list[1].k?") == 0); /* control characters shown as '?' */
    CHECK(zero__json_get(&J, k, "k\n") == J.nodes[k].first);
    /* truncation: NUL-terminated within cap, nothing written past it */
    memset(buf, 'Z', sizeof buf);
    zero__json_path(&J, dev, buf, 5);
    CHECK(strcmp(buf, "zero") == 0 && buf[5] == 'Z');
    memset(buf, 'Z', sizeof buf);
    zero__json_path(&J, dev, buf, 1);
    CHECK(buf[0] == 0 && buf[1] == 'Z');
    memset(buf, 'Z', sizeof buf);
    zero__json_path(&J, dev, buf, 0);
    CHECK(buf[0] == 'Z');
    zero__json_path(&J, dev, NULL, 0);
    zero__json_path(&J, -5, buf, sizeof buf);
    CHECK(buf[0] == 0);
    zero__json_path(&J, J.count, buf, sizeof buf);
    CHECK(buf[0] == 0);
    zero__json_free(&J);
    /* a root array */
    CHECK(parse("[0, {\"a\": [5]}]") == ZERO_OK && strcmp(path(4), "[1].a") == 0 && strcmp(path(5), "[1].a[0]") == 0);
    zero__json_free(&J);
}

/* ---- randomized round trip ---- */

typedef struct mnode {
    int type; /* zero__json_type */
    double num;
    int64_t ival;
    int is_int;
    char *s; /* STRING: decoded bytes */
    size_t slen;
    int n;                 /* children */
    struct mnode *kids;    /* n children */
    char **keys;           /* OBJECT: n decoded keys */
    size_t *klens;
} mnode;

typedef struct sbuf {
    char *p;
    size_t n, cap;
} sbuf;
static void sb_put(sbuf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < b->n + n + 1) nc *= 2;
        b->p = (char *)realloc(b->p, nc);
        if (!b->p) abort();
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }

static size_t utf8_encode(unsigned long cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

static unsigned long rand_cp(void) {
    switch (zt_rand_int(0, 9)) {
    case 0: return (unsigned long)zt_rand_int(0, 0x1F);            /* control, incl. NUL */
    case 1: { static const char sp[] = "\"\\/"; return (unsigned char)sp[zt_rand_int(0, 2)]; }
    case 2: return (unsigned long)zt_rand_int(0x80, 0x7FF);        /* 2 bytes */
    case 3: { long c = zt_rand_int(0x800, 0xFFFF - 0x800);          /* 3 bytes, no surrogates */
              return (unsigned long)(c >= 0xD800 ? c + 0x800 : c); }
    case 4: return (unsigned long)zt_rand_int(0x10000, 0x10FFFF);  /* 4 bytes */
    default: return (unsigned long)zt_rand_int(0x20, 0x7E);        /* printable ASCII */
    }
}

/* Random decoded string (code points) into *s; its JSON text onto b. */
static void gen_string(sbuf *b, char **s, size_t *slen) {
    sbuf d = {NULL, 0, 0};
    int n = (int)zt_rand_int(0, 12), i;
    sb_put(&d, "", 0);
    sb_str(b, "\"");
    for (i = 0; i < n; i++) {
        unsigned long cp = rand_cp();
        char u[8], e[32];
        size_t m = utf8_encode(cp, u);
        int how = (int)zt_rand_int(0, 2); /* 0 raw, 1 short escape, 2 \u */
        sb_put(&d, u, m);
        if (how == 0 && (cp < 0x20 || cp == '"' || cp == '\\')) how = 1;
        if (how == 1) {
            const char *sh = NULL;
            switch (cp) {
            case '"': sh = "\\\""; break;
            case '\\': sh = "\\\\"; break;
            case '/': sh = "\\/"; break;
            case '\b': sh = "\\b"; break;
            case '\f': sh = "\\f"; break;
            case '\n': sh = "\\n"; break;
            case '\r': sh = "\\r"; break;
            case '\t': sh = "\\t"; break;
            default: break;
            }
            if (sh) { sb_str(b, sh); continue; }
            how = cp < 0x20 ? 2 : 0;
        }
        if (how == 0) {
            sb_put(b, u, m);
        } else {
            const char *fmt = zt_rand_int(0, 1) ? "\\u%04lx" : "\\u%04lX";
            if (cp >= 0x10000) {
                unsigned long v = cp - 0x10000;
                snprintf(e, sizeof e, fmt, 0xD800 + (v >> 10));
                sb_str(b, e);
                snprintf(e, sizeof e, fmt, 0xDC00 + (v & 0x3FF));
            } else {
                snprintf(e, sizeof e, fmt, cp);
            }
            sb_str(b, e);
        }
    }
    sb_str(b, "\"");
    *s = d.p;
    *slen = d.n;
}

static void gen_ws(sbuf *b) {
    static const char *const ws[] = {"", "", "", " ", "\n", "\t", "\r\n", "  ", "// c\n", "# h \xC3\xA9\n",
                                     "/* b\n * */", "/**/"};
    sb_str(b, ws[zt_rand_int(0, (long)(sizeof ws / sizeof ws[0]) - 1)]);
}

static void gen_value(sbuf *b, mnode *m, int depth) {
    int r = depth == 0 ? (int)zt_rand_int(6, 9) : (int)zt_rand_int(0, depth >= 6 ? 5 : 9);
    char num[64];
    memset(m, 0, sizeof *m);
    gen_ws(b);
    if (r == 0) { m->type = ZERO__JSON_NULL; sb_str(b, "null"); }
    else if (r == 1) { m->type = zt_rand_int(0, 1) ? ZERO__JSON_TRUE : ZERO__JSON_FALSE; sb_str(b, m->type == ZERO__JSON_TRUE ? "true" : "false"); }
    else if (r == 2) { /* any finite double, %.17g */
        uint64_t bits;
        double v;
        do {
            bits = zt_rand_u64();
            memcpy(&v, &bits, sizeof v);
        } while (v != v || v > DBL_MAX || v < -DBL_MAX);
        if (zt_rand_int(0, 3) == 0) v = zt_rand_range(-1e6, 1e6);
        if (zt_rand_int(0, 9) == 0) v = -0.0;
        snprintf(num, sizeof num, "%.17g", v);
        m->type = ZERO__JSON_NUMBER;
        m->num = v;
        m->is_int = strpbrk(num, ".eE") == NULL; /* %.17g may write an integer */
        if (m->is_int) m->ival = (int64_t)v;
        sb_str(b, num);
    } else if (r == 3) { /* any int64 */
        int64_t v = (int64_t)zt_rand_u64();
        int sh = (int)zt_rand_int(0, 63);
        if (zt_rand_int(0, 1)) v >>= sh;
        if (zt_rand_int(0, 20) == 0) v = zt_rand_int(0, 1) ? INT64_MAX : INT64_MIN;
        snprintf(num, sizeof num, "%lld", (long long)v);
        m->type = ZERO__JSON_NUMBER;
        m->ival = v;
        m->is_int = 1;
        m->num = (double)v;
        sb_str(b, num);
    } else if (r <= 5) {
        m->type = ZERO__JSON_STRING;
        gen_string(b, &m->s, &m->slen);
    } else {
        int i, obj = r >= 8;
        m->type = obj ? ZERO__JSON_OBJECT : ZERO__JSON_ARRAY;
        m->n = (int)zt_rand_int(0, 7);
        m->kids = (mnode *)calloc((size_t)m->n + 1, sizeof(mnode));
        if (obj) {
            m->keys = (char **)calloc((size_t)m->n + 1, sizeof(char *));
            m->klens = (size_t *)calloc((size_t)m->n + 1, sizeof(size_t));
        }
        sb_str(b, obj ? "{" : "[");
        for (i = 0; i < m->n; i++) {
            if (i) { gen_ws(b); sb_str(b, ","); }
            if (obj) {
                int k, dup;
                size_t mark = b->n;
                do { /* keys unique within the object */
                    b->n = mark;
                    free(m->keys[i]);
                    gen_ws(b);
                    gen_string(b, &m->keys[i], &m->klens[i]);
                    for (dup = 0, k = 0; k < i; k++)
                        if (m->klens[k] == m->klens[i] && memcmp(m->keys[k], m->keys[i], m->klens[i]) == 0) dup = 1;
                } while (dup);
                gen_ws(b);
                sb_str(b, ":");
            }
            gen_value(b, &m->kids[i], depth + 1);
        }
        gen_ws(b);
        sb_str(b, obj ? "}" : "]");
    }
    gen_ws(b);
}

static void free_model(mnode *m) {
    int i;
    for (i = 0; i < m->n; i++) {
        free_model(&m->kids[i]);
        if (m->keys) free(m->keys[i]);
    }
    free(m->kids);
    free(m->keys);
    free(m->klens);
    free(m->s);
}

static int g_mismatch;
#define RT_CHECK(c) do { if (!(c)) { g_mismatch++; CHECK(c); } } while (0)

static void compare(const mnode *m, int node, int parent) {
    const zero__json_node *n = &J.nodes[node];
    char buf[256];
    RT_CHECK(n->type == (zero__json_type)m->type);
    RT_CHECK(n->parent == parent);
    if (n->type != (zero__json_type)m->type) return;
    switch (n->type) {
    case ZERO__JSON_NUMBER:
        RT_CHECK(n->number == m->num && !!signbit(n->number) == !!signbit(m->num));
        RT_CHECK(n->is_integer == m->is_int || (m->is_int && fabs(m->num) >= 9.2e18));
        if (m->is_int && n->is_integer) RT_CHECK(n->integer == m->ival);
        break;
    case ZERO__JSON_STRING:
        RT_CHECK(zero__json_string(&J, node, buf, sizeof buf) == m->slen);
        RT_CHECK(memcmp(buf, m->s, m->slen) == 0 && buf[m->slen] == 0);
        RT_CHECK(zero__json_string_eq(&J, node, m->s, m->slen));
        break;
    case ZERO__JSON_ARRAY:
    case ZERO__JSON_OBJECT: {
        int i, c;
        RT_CHECK(n->count == m->n);
        for (i = 0, c = n->first; i < m->n && c >= 0; i++, c = J.nodes[c].next) {
            if (n->type == ZERO__JSON_OBJECT) {
                int k = J.nodes[c].key;
                RT_CHECK(k >= 0 && J.nodes[k].parent == node);
                RT_CHECK(zero__json_string(&J, k, buf, sizeof buf) == m->klens[i] &&
                         memcmp(buf, m->keys[i], m->klens[i]) == 0);
                if (strlen(m->keys[i]) == m->klens[i]) RT_CHECK(zero__json_get(&J, node, m->keys[i]) == c);
            } else {
                RT_CHECK(J.nodes[c].key == -1);
            }
            compare(&m->kids[i], c, node);
        }
        RT_CHECK(i == m->n && c == -1);
        break;
    }
    default: break;
    }
}

/* ---- hjson's forms (the config loader's mode) ---- */

static void expect_form(int src_line, zero__json_form f, int count, int line, int col) {
    const zero__json_seen *s = &J.forms[f];
    CHECKF(s->count == count && (!count || (s->line == line && s->col == col)),
           "line %d: form %d seen %d times, first at %d:%d; want %d at %d:%d", src_line, (int)f, s->count, s->line,
           s->col, count, line, col);
}
#define EXPECT_FORM(f, count, line, col) expect_form(__LINE__, ZERO__JSON_FORM_##f, count, line, col)

static void test_hjson(void) {
    const char *text = "{\n"
                       "  \"a\": [1, 2,],\n"
                       "  'b': 'it\\'s \"q\"'\n"
                       "  \"c\": {\"x\": Infinity, \"y\": -Infinity, \"z\": NaN,}\n"
                       "  \"d\": \"a\\'b\" // the last member\n"
                       "}";
    int a, b, c, x, f;
    zero_result rc;
    /* values */
    rc = parse_h(text);
    CHECKF(rc == ZERO_OK, "%s", E.msg);
    if (rc != ZERO_OK) return;
    CHECK(J.hjson == 1 && J.nodes[0].count == 4);
    a = zero__json_get(&J, 0, "a");
    CHECK(a >= 0 && J.nodes[a].type == ZERO__JSON_ARRAY && J.nodes[a].count == 2);
    b = zero__json_get(&J, 0, "b");
    CHECK(b >= 0 && strcmp(str(b), "it's \"q\"") == 0 && strcmp(str(J.nodes[b].key), "b") == 0);
    CHECK(b >= 0 && J.nodes[b].line == 3 && J.nodes[b].col == 8);
    c = zero__json_get(&J, 0, "c");
    CHECK(c >= 0 && J.nodes[c].count == 3);
    if (a < 0 || b < 0 || c < 0) return;
    x = zero__json_get(&J, c, "x");
    CHECK(x >= 0 && J.nodes[x].type == ZERO__JSON_NUMBER && J.nodes[x].number > DBL_MAX && !J.nodes[x].is_integer);
    x = zero__json_get(&J, c, "y");
    CHECK(x >= 0 && J.nodes[x].number < -DBL_MAX && J.nodes[x].end - J.nodes[x].start == 9);
    x = zero__json_get(&J, c, "z");
    CHECK(x >= 0 && J.nodes[x].type == ZERO__JSON_NUMBER && J.nodes[x].number != J.nodes[x].number);
    x = zero__json_get(&J, 0, "d");
    CHECK(x >= 0 && strcmp(str(x), "a'b") == 0);
    /* each form counted, the first one's place */
    EXPECT_FORM(TRAILING_COMMA, 2, 2, 13);
    EXPECT_FORM(LINE_COMMA, 2, 3, 19);
    EXPECT_FORM(SINGLE_QUOTE, 2, 3, 3);
    EXPECT_FORM(QUOTE_ESCAPE, 1, 5, 10);
    EXPECT_FORM(NONFINITE, 3, 4, 14);
    zero__json_free(&J);

    /* a line break stands for the comma before any value; comments in between count by their line breaks */
    CHECKF(parse_h("[1\n2\n\"x\"\n[3]\n{}\n-4\ntrue # t\nnull /* a\n b */ 'q'\n]") == ZERO_OK, "%s", E.msg);
    CHECK(J.count > 0 && J.nodes[0].count == 9 && J.forms[ZERO__JSON_FORM_LINE_COMMA].count == 8);
    CHECK(J.count > 0 && strcmp(str(J.count - 1), "q") == 0);
    zero__json_free(&J);
    CHECKF(parse_h("{\"a\": 1\n\n  \"b\": {}\n  'c': [],\n}") == ZERO_OK, "%s", E.msg);
    CHECK(J.count > 0 && J.nodes[0].count == 3);
    EXPECT_FORM(LINE_COMMA, 2, 1, 8);
    EXPECT_FORM(TRAILING_COMMA, 1, 4, 10);
    zero__json_free(&J);
    /* empty containers and plain JSON: no form */
    CHECKF(parse_h("{\"a\": [], \"b\": {}, \"c\": \"'\", \"d\": -0.5e3}") == ZERO_OK, "%s", E.msg);
    for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) CHECK(J.forms[f].count == 0);
    zero__json_free(&J);
    CHECKF(parse_h("['', '\\u00e9\\n', '\\\\']") == ZERO_OK, "%s", E.msg); /* the JSON escapes in single quotes */
    CHECK(J.count > 0 && J.nodes[0].count == 3 && strcmp(str(2), "\xC3\xA9\n") == 0 && strcmp(str(3), "\\") == 0 && str(1)[0] == 0);
    zero__json_free(&J);

    /* still errors, with the place and what to write */
    EXPECT_ERR_H("[1,,2]", JSON_UNEXPECTED, 1, 4, "two commas in a row");
    EXPECT_ERR_H("[1,\n,]", JSON_UNEXPECTED, 2, 1, "two commas in a row");
    EXPECT_ERR_H("{\"a\": 1,,}", JSON_UNEXPECTED, 1, 9, "two commas in a row");
    EXPECT_ERR_H("{,}", JSON_UNEXPECTED, 1, 2, "expected '\"' to start a key or '}'");
    EXPECT_ERR_H("[,]", JSON_UNEXPECTED, 1, 2, "expected a value or ']'");
    EXPECT_ERR_H(",", JSON_UNEXPECTED, 1, 1, "expected a value");
    EXPECT_ERR_H("[1],", JSON_TRAILING, 1, 4, NULL);
    EXPECT_ERR_H("{\"a\": 1 \"b\": 2}", JSON_UNEXPECTED, 1, 9, "a comma is missing: only a line break may stand for one");
    EXPECT_ERR_H("[1 2]", JSON_UNEXPECTED, 1, 4, "only a line break may stand for one");
    EXPECT_ERR_H("{\"a\": 1\n: 2}", JSON_UNEXPECTED, 2, 1, "expected ',' or '}' after object member, got ':'");
    EXPECT_ERR_H("{\"a\": 1\n2}", JSON_UNEXPECTED, 2, 1, "expected ',' or '}' after object member");
    EXPECT_ERR_H("{\"a\": quoteless}", JSON_UNEXPECTED, 1, 7, "hjson's quoteless strings are not accepted");
    EXPECT_ERR_H("{stage: 1}", JSON_UNEXPECTED, 1, 2, "hjson's quoteless keys are not accepted");
    EXPECT_ERR_H("{\"a\": '''x\ny'''}", JSON_UNEXPECTED, 1, 7, "multi-line string, not accepted");
    EXPECT_ERR_H("{'''a''': 1}", JSON_UNEXPECTED, 1, 2, "multi-line form");
    EXPECT_ERR_H("['abc]", JSON_UNTERMINATED, 1, 7, "expected \"'\" to close the string");
    EXPECT_ERR_H("['a\nb']", JSON_CONTROL_CHAR, 1, 4, "is a closing \"'\" missing?");
    EXPECT_ERR_H("['a\\qb']", JSON_BAD_ESCAPE, 1, 4, "\\'");
    EXPECT_ERR_H("[+Infinity]", JSON_BAD_NUMBER, 1, 2, NULL);
    EXPECT_ERR_H("[-NaN]", JSON_BAD_NUMBER, 1, 3, NULL);
    EXPECT_ERR_H("[Infinityx]", JSON_UNEXPECTED, 1, 2, "quoteless");
    EXPECT_ERR_H("[infinity]", JSON_UNEXPECTED, 1, 2, NULL);
    EXPECT_ERR_H("[-Infinity5]", JSON_BAD_NUMBER, 1, 3, NULL);

    /* strict mode (checkpoint metadata) refuses every one of them, where it did before */
    EXPECT_ERR("[1, 2,]", JSON_UNEXPECTED, 1, 7, NULL, "trailing commas are not allowed");
    EXPECT_ERR("{\"a\": 1,}", JSON_UNEXPECTED, 1, 9, NULL, "trailing commas are not allowed");
    EXPECT_ERR("[1\n2]", JSON_UNEXPECTED, 2, 1, NULL, "expected ',' or ']'");
    EXPECT_ERR("['a']", JSON_UNEXPECTED, 1, 2, NULL, "strings need double quotes");
    EXPECT_ERR("{'a': 1}", JSON_UNEXPECTED, 1, 2, NULL, "keys need double quotes");
    EXPECT_ERR("[\"a\\'b\"]", JSON_BAD_ESCAPE, 1, 4, NULL, NULL);
    EXPECT_ERR("[Infinity]", JSON_UNEXPECTED, 1, 2, NULL, "JSON has no NaN or Infinity");
    EXPECT_ERR("[NaN]", JSON_UNEXPECTED, 1, 2, NULL, "JSON has no NaN or Infinity");
    EXPECT_ERR("[-Infinity]", JSON_BAD_NUMBER, 1, 3, NULL, "JSON has no NaN or Infinity");
}

static void test_roundtrip(void) {
    int it, nodes = 0, cuts = 0;
    for (it = 0; it < 400; it++) {
        sbuf b = {NULL, 0, 0};
        mnode m;
        zero_result rc;
        size_t last;
        if (it % 2) { /* containers at the top so that a cut text is always invalid */
            sb_str(&b, "[");
            gen_value(&b, &m, 1);
            sb_str(&b, "]");
        } else {
            gen_value(&b, &m, 0);
        }
        rc = parse_n(b.p, b.n);
        CHECKF(rc == ZERO_OK, "iteration %d: %s\n%s", it, E.msg, b.p);
        if (rc == ZERO_OK) {
            g_mismatch = 0;
            if (it % 2) {
                RT_CHECK(J.nodes[0].type == ZERO__JSON_ARRAY && J.nodes[0].count == 1);
                compare(&m, J.nodes[0].first, 0);
            } else {
                compare(&m, 0, -1);
            }
            if (g_mismatch) fprintf(stderr, "iteration %d mismatched on:\n%s\n", it, b.p);
            nodes += J.count;
        }
        { /* JSON reads the same in hjson mode: the same nodes, no form */
            zero__json strict = J;
            int f, same;
            memset(&J, 0, sizeof J);
            CHECK(zero__json_parse_hjson(&J, b.p, b.n, &E) == rc);
            same = rc != ZERO_OK || J.count == strict.count;
            for (f = 0; same && rc == ZERO_OK && f < J.count; f++) { /* field by field: padding is not compared */
                const zero__json_node *x = &J.nodes[f], *y = &strict.nodes[f];
                same = x->type == y->type && x->parent == y->parent && x->next == y->next && x->first == y->first &&
                       x->count == y->count && x->key == y->key && x->start == y->start && x->end == y->end &&
                       x->line == y->line && x->col == y->col && memcmp(&x->number, &y->number, sizeof x->number) == 0 &&
                       x->integer == y->integer && x->is_integer == y->is_integer;
            }
            for (f = 0; f < ZERO__JSON_FORM_COUNT; f++) same = same && J.forms[f].count == 0;
            CHECKF(same, "iteration %d: hjson mode reads the JSON text differently", it);
            zero__json_free(&J);
            J = strict;
        }
        zero__json_free(&J);
        /* every cut before the closing bracket fails cleanly */
        if (it % 2) {
            last = b.n;
            while (last > 0 && b.p[last - 1] != ']') last--;
            if (last > 1) {
                size_t cut = (size_t)zt_rand_int(0, (long)last - 2);
                char *c = (char *)malloc(cut + 1); /* exact size: ASan catches over-reads */
                memcpy(c, b.p, cut);
                rc = parse_n(c, cut);
                CHECKF(rc == ZERO_ERR_CONFIG && E.item >= ZERO_MSG_JSON_EMPTY &&
                           E.item <= ZERO_MSG_JSON_DUPLICATE_KEY && E.line >= 1 && E.column >= 1,
                       "cut at %zu: rc %d %s", cut, (int)rc, E.msg);
                CHECK(J.nodes == NULL);
                zero__json_free(&J);
                { /* the same error at the same place in hjson mode */
                    zero_error strict = E;
                    CHECK(zero__json_parse_hjson(&J, c, cut, &E) == ZERO_ERR_CONFIG);
                    CHECKF(E.item == strict.item && E.line == strict.line && E.column == strict.column,
                           "cut at %zu: hjson mode %s at %d:%d, strict %s at %d:%d", cut, zero_msg_name(E.item), E.line,
                           E.column, zero_msg_name(strict.item), strict.line, strict.column);
                    zero__json_free(&J);
                }
                free(c);
                cuts++;
            }
        }
        free_model(&m);
        free(b.p);
    }
    printf("test_roundtrip: 400 documents, %d nodes, %d cut texts\n", nodes, cuts);
    CHECK(nodes > 1000);
}

int main(void) {
    zt_seed("test_json");
    test_values();
    test_strings();
    test_utf8();
    test_errors();
    test_node_limit();
    test_out_of_memory();
    test_depth();
    test_numbers();
    test_locale();
    test_comments();
    test_bom();
    test_duplicates();
    test_get_path();
    test_hjson();
    test_roundtrip();
    return zt_finish();
}
