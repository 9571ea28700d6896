#!/bin/sh
# tests/fn_length.sh - no function of the three headers is longer than 160
# lines (the line of its opening brace to its closing one): a function that
# grows past a screen or three is split where it has parts. Prints each one
# over the limit and exits 1; with -v, every function over 100 lines.
#   sh tests/fn_length.sh [-v]
LIMIT=160
show=$LIMIT
[ "${1:-}" = -v ] && show=100
awk -v limit=$LIMIT -v show=$show '
    FNR == 1 { depth = 0; start = 0 }
    {
        line = $0
        gsub(/"([^"\\]|\\.)*"/, "", line)   # strings and character constants hold no braces that count
        gsub(/\047([^\047\\]|\\.)*\047/, "", line)
        sub(/\/\/.*/, "", line)
        n = gsub(/\{/, "{", line); m = gsub(/\}/, "}", line)
        if (depth == 0 && n > m && line ~ /\)[^;]*\{ *$/) { start = FNR; name = $0 }
        depth += n - m
        if (depth == 0 && start) {
            len = FNR - start + 1
            if (len > show) printf "%s:%d: %d lines: %s\n", FILENAME, start, len, substr(name, 1, 90)
            if (len > limit) over++
            start = 0
        }
    }
    END { printf "%d functions over %d lines\n", over, limit; exit over > 0 }' zero.h zero_cuda.cuh zero_offload.h
