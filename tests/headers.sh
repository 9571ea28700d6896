#!/bin/sh
# tests/headers.sh - the measure of the three headers (make test runs it):
#   1. no function is longer than 160 lines (the line of its opening brace
#      to its closing one): a function that grows past a screen or three is
#      split where it has parts;
#   2. each header's map (its opening comment, from "search for >>") names
#      every section the file has (the "/* ---- >>name" headings), and no
#      section the file does not have.
# Prints what is wrong, ends with "N functions over 160 lines, M map
# mismatches", exits 1 on any. With -v, every function over 100 lines too.
#   sh tests/headers.sh [-v]
LIMIT=160
show=$LIMIT
[ "${1:-}" = -v ] && show=100
awk -v limit=$LIMIT -v show=$show '
    FNR == 1 { depth = 0; start = 0; inmap = 0 }
    /search for >>/ && !done[FILENAME] { inmap = 1 }
    inmap && /\*\// { inmap = 0; done[FILENAME] = 1 }
    inmap && /^     [a-z][a-z0-9-]+ +[^ ]/ { mapped[FILENAME, $1] = 1 }
    /^\/\* ---- >>[a-z0-9-]+/ { name = $0; sub(/^\/\* ---- >>/, "", name); sub(/[^a-z0-9-].*/, "", name); has[FILENAME, name] = 1 }
    {
        line = $0
        gsub(/"([^"\\]|\\.)*"/, "", line)   # strings and character constants hold no braces that count
        gsub(/\047([^\047\\]|\\.)*\047/, "", line)
        sub(/\/\/.*/, "", line)
        n = gsub(/\{/, "{", line); m = gsub(/\}/, "}", line)
        if (depth == 0 && n > m && line ~ /\)[^;]*\{ *$/) { start = FNR; fname = $0 }
        depth += n - m
        if (depth == 0 && start) {
            len = FNR - start + 1
            if (len > show) printf "%s:%d: %d lines: %s\n", FILENAME, start, len, substr(fname, 1, 90)
            if (len > limit) over++
            start = 0
        }
    }
    END {
        for (k in has) if (!(k in mapped)) { split(k, p, SUBSEP); printf "%s: section >>%s is not in the map\n", p[1], p[2]; bad++ }
        for (k in mapped) if (!(k in has)) { split(k, p, SUBSEP); printf "%s: the map names %s, which has no section\n", p[1], p[2]; bad++ }
        printf "%d functions over %d lines, %d map mismatches\n", over, limit, bad
        exit over + bad > 0
    }' zero.h zero_cuda.cuh zero_offload.h
