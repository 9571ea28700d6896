#!/bin/sh
# tests/snippets.sh DIR FILE... - compile the C blocks of the docs that are
# marked for it, so the documented code stays true to the API:
#   <!-- snippet: compiled by make test -->        a fragment: gets the prelude below
#   <!-- snippet: file, compiled by make test -->  a whole translation unit
set -u
out=$1; shift
mkdir -p "$out"
n=0; bad=0
for f in "$@"; do
    # one file per marked block: snippet-<doc>-<k>.c, whole files marked by a first line
    awk -v out="$out" -v base="$(basename "$f" .md)" '
        /<!-- snippet: file, compiled by make test -->/ { want = 2; next }
        /<!-- snippet: compiled by make test -->/       { want = 1; next }
        want && /^```c$/ { k++; name = out "/snippet-" base "-" k ".c"; inblk = 1;
                           if (want == 1) print "/* fragment */" > name; else print "/* file */" > name;
                           want = 0; next }
        inblk && /^```$/ { inblk = 0; close(name); next }
        inblk { print >> name }
    ' "$f"
done
for c in "$out"/snippet-*.c; do
    [ -f "$c" ] || continue
    n=$((n + 1))
    if head -n 1 "$c" | grep -q fragment; then
        { printf '#include "zero.h"\n#include <stdio.h>\n'
          printf 'typedef struct model { zero_tensor *tensors; int n_tensors; int steps; } model;\n'
          printf 'void model_forward(model *m, int t, const void *param);\n'
          printf 'void model_backward(model *m, int t, const void *param, void *grad, double scale);\n'
          cat "$c"; } > "$c.full.c"
    else
        cp "$c" "$c.full.c"
    fi
    if ! ${CC:-gcc} -std=c11 -Wall -Wextra -Werror -Wno-unused-function -I. -c "$c.full.c" -o "$c.o"; then
        echo "snippet does not compile: $c (from the docs)"; bad=$((bad + 1))
    fi
done
echo "$n snippets, $bad failed"
[ "$n" -gt 0 ] && [ "$bad" -eq 0 ]
