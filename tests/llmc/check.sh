#!/bin/sh
# tests/llmc/check.sh - the llm.c port as a test (make test runs it):
#   1. the port's diff against the unported program (tests/llmc/train_gpt2.c,
#      llm.c's shape) is at most 60 changed lines, added plus removed;
#   2. the port (tests/llmc/train_gpt2_zero.c, run on host ranks by
#      port_main.c) trains at ZeRO stages 0-3 on 1, 2 and 4 ranks, with 1 and
#      2 micro-batches per step, and prints the unported program's losses
#      (each within 1e-5 relative) and its greedy samples (identical), and
#      writes weights within 1e-4 of max|w| of the unported program's.
#   sh tests/llmc/check.sh [build dir] [cc] [extra cflags]
set -u
B=${1:-build/llmc}
CC=${2:-cc}
XFLAGS=${3:-}
mkdir -p "$B"
fail=0
n=$(diff -u tests/llmc/train_gpt2.c tests/llmc/train_gpt2_zero.c | grep '^[-+]' | grep -vc '^+++\|^---')
if [ "$n" -le 60 ]; then echo "ok    the port changes $n lines of the program (added plus removed; at most 60)"
else echo "FAIL  the port changes $n lines of the program (at most 60)"; fail=1; fi
# shellcheck disable=SC2086
$CC -std=c11 -O1 -Wall -Wextra -Werror -Wpedantic $XFLAGS -o "$B/orig" tests/llmc/train_gpt2.c -lm || exit 1
# shellcheck disable=SC2086
$CC -std=c11 -O1 -Wall -Wextra -Werror -Wpedantic $XFLAGS -I. -o "$B/port" tests/llmc/port_main.c -lm -lpthread || exit 1
for g in 1 2; do "$B/orig" "$g" "$B/orig$g.bin" >"$B/orig$g.txt" 2>/dev/null || { echo "FAIL  the unported program"; exit 1; }; done
runs=0
for st in 0 1 2 3; do
    printf '{"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 0, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0}}, "zero_optimization": {"stage": %d, "reduce_bucket_size": 3000, "stage3_param_persistence_threshold": 0}}\n' "$st" >"$B/s$st.json"
    for w in 1 2 4; do
        for g in 1 2; do
            runs=$((runs + 1))
            if ! WORLD=$w "$B/port" "$g" "$B/port.bin" "$B/s$st.json" >"$B/port.txt" 2>"$B/port.err"; then
                echo "FAIL  stage $st, $w ranks, $g micro-batches: exit $?"; tail -n 3 "$B/port.err"; fail=1; continue
            fi
            r=$(awk -v ref="$B/orig$g.txt" '
                BEGIN { while ((getline l < ref) > 0) { split(l, f, " ")
                          if (f[1] == "step") want[++nw] = f[5]; else if (f[1] == "generated:") gen = gen l "|" } }
                $1 == "step" { got[++ng] = $5 } $1 == "generated:" { pg = pg $0 "|" }
                END { worst = 0; for (i = 1; i <= nw; i++) { d = got[i] - want[i]; if (d < 0) d = -d; d /= want[i]; if (d > worst) worst = d }
                      ok = ng == nw && nw == 20 && worst <= 1e-5 && pg == gen
                      printf "%s %d %.2g %s", ok ? "ok" : "bad", ng, worst, pg == gen ? "same" : "differ" }' "$B/port.txt")
            # the weights written at the end (every group fetched, rank 0 writes), against the unported program's
            wd=$(od -An -v -tf4 -w4 "$B/orig$g.bin" | paste - "$(od -An -v -tf4 -w4 "$B/port.bin" >"$B/port.f"; echo "$B/port.f")" |
                awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > md) md = d; a = $1 < 0 ? -$1 : $1; if (a > mw) mw = a; n++ }
                     END { printf "%d %.2g", n, mw ? md / mw : 1 }')
            case $r in
            ok*) if awk -v x="${wd#* }" -v n="${wd%% *}" 'BEGIN { exit !(n == 28032 && x <= 1e-4) }'; then :; else r="bad (weights ${wd#* } of max|w|, $wd)"; fi ;;
            esac
            case $r in
            ok*) set -- $r; echo "ok    stage $st, $w ranks, $g micro-batches: 20 losses within $3 (relative) of the program's, samples the same, weights within ${wd#* } of max|w|" ;;
            *) echo "FAIL  stage $st, $w ranks, $g micro-batches: $r"; fail=1 ;;
            esac
        done
    done
done
echo "llmc: $runs runs of the port"
exit $fail
