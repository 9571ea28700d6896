#!/bin/sh
# tests/plot.sh BUILD_DIR - the loss in the engine's metrics file and
# examples/gpt/plot.py, on host ranks (no GPU). Run from the repository root:
#
#     sh tests/plot.sh build
#
# Builds examples/train_mlp.c into BUILD_DIR and works in BUILD_DIR/plot.
#   1. train_mlp with jsonl_monitor on: the start line counts the model's
#      parameters (computed here from its shapes and the text's distinct
#      bytes); every step line has a finite loss, the one train_mlp prints
#      (4 decimals) and writes to --loss-file (9 digits).
#   2. plot.py --summary on that file and on a file in gpt.cu's own format
#      written here: count, first, last, min and max of each series against
#      the same values taken from the files with awk (loss, lr, loss_scale,
#      grad_norm, samples_per_s). Bare nan (what C's
#      printf writes) and gpt's grad_norm -1 (no finite norm) are left out.
#   3. plot.py without matplotlib (a stand-in package on PYTHONPATH that
#      raises ImportError): one line naming the package, exit status 2. With
#      a real matplotlib, the PNGs too.
#   4. train_mlp's numeric flags: junk and out-of-range values exit 2 with a
#      line naming the flag.
#   5. examples/gpt/results.py on a directory of runs written here: each
#      row's figures against the files, bench.sh's console left out.
#   6. examples/gpt/scale_table.py (bench.sh scale's table) on runs written
#      here: scaling, zero over the best peer, a run without an end line.
# Prints "ok NAME" or "FAIL NAME: why" per check, ends with "N passed,
# M failed", and exits non-zero on a failure. Without python3 the plot.py
# checks fail, saying so.
set -u
if [ $# -ne 1 ] || [ ! -f examples/gpt/plot.py ]; then
    echo "usage: sh tests/plot.sh BUILD_DIR   (from the repository root)" >&2
    exit 2
fi
B=$1
D=$B/plot
CC=${CC:-gcc}
PY=${PYTHON:-python3}
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok $1"; }
bad() { fail=$((fail + 1)); n=$1; shift; echo "FAIL $n: $*"; }
check() { # check NAME WHY: ok when the last command succeeded
    if [ "$rc" -eq 0 ]; then ok "$1"; else bad "$1" "$2"; fi
}
rm -rf "$D" && mkdir -p "$D" || exit 1

# awk: the number after "KEY": on a JSON line (empty when absent)
JGET='function jget(line, key,   s) {
    if (!match(line, "\"" key "\":[^,}]*")) return ""
    s = substr(line, RSTART, RLENGTH); sub(/^"[^"]*":/, "", s); return s
}
function finite(v) { return v ~ /^-?[0-9]+(\.[0-9]*)?([eE][-+]?[0-9]+)?$/ }'

have_py=0
if command -v "$PY" >/dev/null 2>&1; then have_py=1; fi
nopy() { bad "$1" "$PY is not installed: the plot.py checks need it (apt install python3)"; }

# ---- 1. train_mlp's metrics file ----

# the text: a fixed one, so the vocabulary (and the parameter count) is known
awk 'BEGIN { for (i = 0; i < 400; i++) printf "line %d: the quick brown fox, %d jumps; %s\n", i, i * 7 % 13, (i % 3 ? "ok" : "Zq!") }' > "$D/text.txt"
K=4 C=8 H=24 L=2 WORLD=2 GAS=2 MBS=8 STEPS=25
cat > "$D/metrics.json" <<EOF
{
  "jsonl_monitor": {"enabled": true, "output_path": "$D", "job_name": "mlp"},
  "fp16": {"enabled": true, "initial_scale_power": 24},
  "scheduler": {"type": "WarmupLR", "params": {"warmup_num_steps": 10, "warmup_max_lr": 0.003}}
}
EOF

rm -f "$D/train_mlp"
if $CC -std=c11 -O2 -Wall -Wextra -Werror -I. -o "$D/train_mlp" examples/train_mlp.c -lm -lpthread > "$D/build.log" 2>&1; then
    ok "build train_mlp"
else
    bad "build train_mlp" "$(tail -n 20 "$D/build.log")"
fi

if [ -x "$D/train_mlp" ]; then
    "$D/train_mlp" --data "$D/text.txt" --context $K --embd $C --hidden $H --layers $L --world $WORLD --gas $GAS \
        --mbs $MBS --steps $STEPS --print-every 1 --config "$D/metrics.json" --loss-file "$D/loss.txt" \
        > "$D/train.out" 2> "$D/train.err"
    rc=$?
    check "train_mlp runs with jsonl_monitor" "exit $rc: $(tail -n 5 "$D/train.err")"
fi
M=$D/mlp.jsonl
if [ ! -s "$M" ]; then
    bad "metrics file" "$M is missing or empty"
else
    # parameters: wte V x C, layer 1 (K C) x H + H, L - 1 hidden H x H + H, out H x V + V
    V=$(od -An -v -tu1 "$D/text.txt" | tr -s ' ' '\n' | grep . | sort -u | wc -l)
    P=$((V * C + K * C * H + H + (L - 1) * (H * H + H) + H * V + V))
    awk "$JGET"'
        NR == 1 { ev = jget($0, "event"); p = jget($0, "params"); t = jget($0, "trainable_params") }
        END { if (ev != "\"start\"" || p != want || t != want) { print "start line: event " ev ", params " p ", trainable " t ", want " want; exit 1 } }' \
        want="$P" "$M" > "$D/check.out"
    rc=$?
    check "metrics start line: params $P (vocabulary $V)" "$(cat "$D/check.out")"

    awk "$JGET"'
        jget($0, "event") == "\"step\"" {
            n++; s = jget($0, "step"); l = jget($0, "loss")
            if (s != n) { print "step line " n " says step " s; bad = 1 }
            if (!finite(l)) { print "step " s ": loss \"" l "\" is missing or not finite"; bad = 1 }
        }
        END { if (n != steps) { print n " step lines, want " steps; bad = 1 }; exit bad }' \
        steps=$STEPS "$M" > "$D/check.out"
    rc=$?
    check "metrics: $STEPS step lines, each with a finite loss" "$(head -n 5 "$D/check.out")"

    # the loss file: "step loss" with %.9g, the same double the engine wrote with %.9g
    awk "$JGET"'
        FNR == NR { if ($1 ~ /^[0-9]+$/) want[$1] = $2; next }
        jget($0, "event") == "\"step\"" {
            s = jget($0, "step"); l = jget($0, "loss") + 0; n++
            if (!(s in want)) { print "step " s ": not in the loss file"; bad = 1; next }
            d = l - want[s]; if (d < 0) d = -d
            if (d > 1e-8 * (want[s] < 0 ? -want[s] : want[s])) { print "step " s ": metrics " l ", loss file " want[s]; bad = 1 }
        }
        END { if (n == 0) { print "no step lines"; bad = 1 }; exit bad }' "$D/loss.txt" "$M" > "$D/check.out"
    rc=$?
    check "metrics loss = --loss-file's, every step" "$(head -n 5 "$D/check.out")"

    # the progress lines: "step     3/25  loss 4.5789 (mean of ...", 4 decimals
    awk "$JGET"'
        FNR == NR { if ($1 == "step" && $2 ~ /^[0-9]+\/[0-9]+$/ && $3 == "loss") { split($2, a, "/"); shown[a[1] + 0] = $4 }; next }
        jget($0, "event") == "\"step\"" {
            s = jget($0, "step") + 0; l = jget($0, "loss") + 0; n++
            if (!(s in shown)) { print "step " s ": train_mlp printed no line"; bad = 1; next }
            d = l - shown[s]; if (d < 0) d = -d
            if (d > 0.00005 + 1e-9) { print "step " s ": metrics " l ", printed " shown[s]; bad = 1 }
        }
        END { if (n == 0) { print "no step lines"; bad = 1 }; exit bad }' "$D/train.out" "$M" > "$D/check.out"
    rc=$?
    check "metrics loss = the printed loss (4 decimals), every step" "$(head -n 5 "$D/check.out")"
fi

# ---- 2. plot.py --summary on both formats ----

# a stand-in matplotlib that cannot be imported: --summary must not need one
mkdir -p "$D/nompl/matplotlib"
echo 'raise ImportError("matplotlib hidden by tests/plot.sh")' > "$D/nompl/matplotlib/__init__.py"
NOMPL="$D/nompl${PYTHONPATH:+:$PYTHONPATH}"

# gpt.cu's own lines (its fprintf formats), a print every 10 steps; step 60
# has a nan loss (printf's "-nan"), step 40 no finite norm (grad_norm -1)
awk 'BEGIN {
    printf "{\"event\":\"start\",\"program\":\"gpt\",\"model\":{\"layers\":2,\"dim\":64,\"heads\":4,\"seq\":32,\"vocab\":256,\"positions\":32,\"params\":132224},\"stage\":2,\"world\":2,\"batch\":4,\"gas\":1,\"dtype\":\"bf16\",\"offload_optimizer\":\"none\",\"offload_param\":\"none\",\"recompute\":0,\"gpu\":\"NVIDIA H100 80GB HBM3\",\"peak_tflops\":989.4,\"flops_per_token\":1.2e+06}\n"
    printf "{\"event\":\"eval\",\"when\":\"before\",\"step\":0,\"loss\":%.17g,\"batch\":4,\"seq\":32,\"vocab\":256}\n", 5.5451774444795623
    for (i = 1; i <= 9; i++) {
        loss = sprintf("%.6f", 5.5 * exp(-0.15 * i) + 0.05 * sin(3 * i))
        if (i == 6) loss = "-nan"
        lr = sprintf("%.6e", 6e-4 * (i < 4 ? i / 4 : 1) * (1 - 0.05 * i))
        sc = sprintf("%g", i < 3 ? 65536 : 32768)
        gn = i == 4 ? "-1" : sprintf("%.6g", 2.5 / sqrt(i) + 0.1 * cos(i))
        printf "{\"event\":\"step\",\"step\":%d,\"loss\":%s,\"lr\":%s,\"loss_scale\":%s,\"skipped\":%d,\"grad_norm\":%s,\"step_ms\":%.3f,\"tokens_per_s\":%.1f,\"tokens_per_s_per_gpu\":%.1f,\"tflops_per_gpu\":%.2f,\"mfu\":%.4f,\"gpu_mem_gib\":%.3f,\"host_rss_gib\":%.3f}\n", \
            10 * i, loss, lr, sc, i == 4, gn, 12.5 + i, 20000 + i, 10000 + i, 0.02, 0.0001, 1.5, 0.8
    }
    printf "{\"event\":\"end\",\"batch\":4,\"median_step_ms\":%.3f,\"timed_steps\":%d,\"tokens_per_s_per_gpu\":%.1f,\"tflops_per_gpu\":%.2f,\"mfu\":%.4f,\"gpu_peak_gib\":%.3f,\"engine_gib\":%.3f,\"activations_gib\":%.3f,\"host_peak_gib\":%.3f,\"attention_flop_share\":%.4f}\n", \
        14.5, 87, 10004.5, 0.02, 0.0001, 1.6, 0.01, 0.2, 0.9, 0.181
}' > "$D/gpt.jsonl"

# want FILE: "KEY count N first X last X min X max X" per series, from the
# file's step lines: finite values only, grad_norm only when >= 0
want() {
    awk "$JGET"'
        jget($0, "event") == "\"step\"" {
            for (k = 1; k <= 5; k++) {
                v = jget($0, key[k])
                if (!finite(v) || (key[k] == "grad_norm" && v + 0 < 0)) continue
                v += 0; c = ++n[k]
                if (c == 1) { first[k] = v; lo[k] = v; hi[k] = v }
                last[k] = v; if (v < lo[k]) lo[k] = v; if (v > hi[k]) hi[k] = v
            }
        }
        BEGIN { key[1] = "loss"; key[2] = "lr"; key[3] = "loss_scale"; key[4] = "grad_norm"; key[5] = "samples_per_s" }
        END {
            for (k = 1; k <= 5; k++)
                if (n[k]) printf "%s count %d first %.17g last %.17g min %.17g max %.17g\n", key[k], n[k], first[k], last[k], lo[k], hi[k]
        }' "$1"
}
# same WANT GOT: the same series, counts equal, values within 1e-9 relative
same() {
    awk 'FNR == NR { w[$1] = $0; next }
        $1 in w {
            split(w[$1], a, " "); seen[$1] = 1
            if ($3 != a[3]) { print $1 ": count " $3 ", want " a[3]; bad = 1 }
            for (i = 5; i <= 11; i += 2) {
                d = $i - a[i]; m = a[i] < 0 ? -a[i] : a[i]; if (d < 0) d = -d
                if (d > 1e-9 * m + 1e-300) { print $1 ": " $(i - 1) " " $i ", want " a[i]; bad = 1 }
            }
            next
        }
        $1 ~ /^(loss|lr|loss_scale|grad_norm|samples_per_s)$/ { print $1 ": listed, but the file has no such values"; bad = 1 }
        END { for (k in w) if (!(k in seen)) { print k ": not listed"; bad = 1 }; exit bad }' "$1" "$2"
}

for f in mlp gpt; do
    name="plot.py --summary: $f format"
    if [ $have_py -eq 0 ]; then nopy "$name"; continue; fi
    if [ ! -s "$D/$f.jsonl" ]; then bad "$name" "no $D/$f.jsonl"; continue; fi
    want "$D/$f.jsonl" > "$D/$f.want"
    PYTHONPATH=$NOMPL "$PY" examples/gpt/plot.py --summary "$D/$f.jsonl" > "$D/$f.summary" 2> "$D/$f.summary.err"
    rc=$?
    if [ $rc -ne 0 ]; then bad "$name" "exit $rc: $(head -n 5 "$D/$f.summary.err")"; continue; fi
    if [ "$(grep -c . "$D/$f.want")" -lt 3 ]; then bad "$name" "the test's file has too few series: $(cat "$D/$f.want")"; continue; fi
    same "$D/$f.want" "$D/$f.summary" > "$D/check.out"
    rc=$?
    check "$name (series against awk's reading)" "$(head -n 5 "$D/check.out")"
done
if [ $have_py -eq 1 ] && [ -s "$D/gpt.summary" ] && [ -s "$D/mlp.summary" ]; then
    grep -q "gpt's metrics format" "$D/gpt.summary" && grep -q "jsonl_monitor format" "$D/mlp.summary"
    rc=$?
    check "plot.py --summary: each file's format told from its first line" "$(head -n 1 "$D/gpt.summary"; head -n 1 "$D/mlp.summary")"
    # two runs appended to one file (the engine appends): two runs, each its own
    cat "$D/gpt.jsonl" "$D/gpt.jsonl" > "$D/gpt2.jsonl"
    PYTHONPATH=$NOMPL "$PY" examples/gpt/plot.py --summary "$D/gpt2.jsonl" > "$D/gpt2.summary" 2>&1
    [ "$(grep -c '^ *loss ' "$D/gpt2.summary")" -eq 2 ] && grep -q ', run 2: ' "$D/gpt2.summary"
    rc=$?
    check "plot.py --summary: a start line begins a run" "$(head -n 4 "$D/gpt2.summary")"
fi

# ---- 3. plot.py without matplotlib; with it, the PNGs ----

name="plot.py without matplotlib: one line, exit 2"
if [ $have_py -eq 0 ]; then
    nopy "$name"
else
    PYTHONPATH=$NOMPL "$PY" examples/gpt/plot.py --out "$D/png-none" "$D/gpt.jsonl" > "$D/nompl.out" 2> "$D/nompl.err"
    rc=$?
    if [ $rc -ne 2 ]; then bad "$name" "exit $rc, want 2: $(head -n 5 "$D/nompl.err")"
    elif grep -q Traceback "$D/nompl.err"; then bad "$name" "a traceback: $(tail -n 3 "$D/nompl.err")"
    elif [ "$(grep -c . "$D/nompl.err")" -ne 1 ] || [ -s "$D/nompl.out" ]; then bad "$name" "want one line on stderr: $(cat "$D/nompl.err" "$D/nompl.out")"
    elif ! grep -q 'pip install matplotlib' "$D/nompl.err" || ! grep -q 'python3-matplotlib' "$D/nompl.err"; then
        bad "$name" "the line names neither pip install matplotlib nor python3-matplotlib: $(cat "$D/nompl.err")"
    elif [ -e "$D/png-none" ]; then bad "$name" "it made $D/png-none all the same"
    else ok "$name"; fi

    if "$PY" -c 'import matplotlib' > /dev/null 2>&1; then
        name="plot.py draws the metrics file (matplotlib here)"
        "$PY" examples/gpt/plot.py --out "$D/png" "$M" > "$D/png.out" 2>&1
        rc=$?
        for p in loss lr loss_scale grad_norm; do
            [ "$(od -An -c -N4 "$D/png/$p.png" 2>/dev/null | tr -d ' ')" = '211PNG' ] || rc=1
        done
        # the engine's file counts samples, not tokens: throughput.png shows samples/s
        [ "$(od -An -c -N4 "$D/png/throughput.png" 2>/dev/null | tr -d ' ')" = '211PNG' ] || rc=1
        check "$name" "$(ls "$D/png" 2>&1; cat "$D/png.out")"
    else
        echo "note: matplotlib is not installed for $PY: the PNG check did not run"
    fi
fi

name="plot.py names a small model's parameters exactly (161, not 0K)"
if [ $have_py -eq 0 ]; then
    nopy "$name"
else
    "$PY" -c 'import sys; sys.path.insert(0, "examples/gpt"); import plot
assert plot.model_label({"params": 161}) == "161 parameters", plot.model_label({"params": 161})
assert plot.model_label({"params": 4.2e4}) == "42K parameters"' > "$D/label.out" 2>&1
    rc=$?
    check "$name" "$(cat "$D/label.out")"
fi

# ---- 4. train_mlp's numeric flags (examples/tool_args.h) ----

if [ -x "$D/train_mlp" ]; then
    # refused: exit 2, one line on stderr naming the flag (and the value given), nothing on stdout
    for args in "--world 99999999999" "--world 257" "--world 2.5" "--steps -5" "--steps 0" "--steps" \
        "--lr abc" "--lr 1e400" "--lr -0.1" "--clip nan" "--mbs 1e2x" "--seed 2147483648" "--bucket 0x10" \
        "--dtype fp8" "--config"; do
        # shellcheck disable=SC2086 # the words of $args are the arguments
        "$D/train_mlp" $args > "$D/flag.out" 2> "$D/flag.err"
        rc=$?
        flag=${args%% *}; value=${args#"$flag"}; value=${value# }
        why=""
        if [ $rc -ne 2 ]; then why="exit $rc, want 2"
        elif [ -s "$D/flag.out" ]; then why="it printed on stdout: $(head -n 2 "$D/flag.out")"
        elif [ "$(grep -c . "$D/flag.err")" -ne 1 ]; then why="want one line on stderr: $(head -n 3 "$D/flag.err")"
        elif ! grep -q -e "$flag" "$D/flag.err"; then why="the line does not name $flag: $(cat "$D/flag.err")"
        elif [ -n "$value" ] && ! grep -qF -e "$value" "$D/flag.err"; then why="the line does not show $value: $(cat "$D/flag.err")"
        fi
        if [ -z "$why" ]; then ok "train_mlp $args: refused, exit 2"; else bad "train_mlp $args" "$why"; fi
    done
    # accepted at the bounds (--help then ends the run before training)
    args="--world 256 --steps 100000000 --lr 10 --clip 0 --seed 2147483647 --mbs 1e2 --bucket 2147483647"
    # shellcheck disable=SC2086
    "$D/train_mlp" $args --help > "$D/flag.out" 2> "$D/flag.err"
    rc=$?
    check "train_mlp $args: accepted" "exit $rc: $(head -n 3 "$D/flag.err")"
fi

# ---- 5. examples/gpt/results.py: a run directory as one results table ----
# two runs of gpt's format (one with a find-max event and a floor line in its log), a baseline's (spaces
# after the colons, no offload keys), a log alone, bench.sh's console (left out): each row's figures
# against the files
if [ "$have_py" -eq 1 ]; then
    R=$D/runs
    rm -rf "$R" && mkdir -p "$R"
    printf '%s\n' '{"event":"start","program":"gpt","stage":3,"world":2,"batch":8,"gas":1,"dtype":"bf16","offload_optimizer":"cpu","offload_param":"none","recompute":0}' \
        '{"event":"step","step":1,"loss":6.5}' '{"event":"step","step":2,"loss":6.25}' \
        '{"event":"end","batch":8,"median_step_ms":215.6,"tokens_per_s_per_gpu":37993.6,"mfu":0.3761,"gpu_peak_gib":46.772,"engine_gib":22.5,"activations_gib":16.9,"host_peak_gib":0.766}' \
        > "$R/a_zero.jsonl"
    printf 'gpt: the header\nsummary: bf16 stage 3, 2 GPUs: median step 215.6 ms\nfloor: copies 1.0 ms\nother line\n' > "$R/a_zero.log"
    printf '%s\n' '{"event":"start","program":"gpt","stage":2,"world":1,"dtype":"bf16"}' '{"event":"max_batch","batch":26}' \
        '{"event":"end","batch":26,"median_step_ms":576.6,"tokens_per_s_per_gpu":46173.7,"mfu":0.46,"device_used_gib":79.1}' \
        > "$R/b_max.jsonl"
    printf '%s\n' '{"event": "start", "program": "fsdp2", "stage": "fsdp2-noreshard", "world": 2, "batch": 16}' \
        '{"event": "end", "median_step_ms": 341.08, "tokens_per_s_per_gpu": 48035.7, "mfu": 0.4755, "device_used_gib": 54.29}' \
        > "$R/c_fsdp2.jsonl"
    printf 'gpt: rank 0: activations: cudaMalloc of 32.0 MiB failed (out of memory)\nHINT: smaller\n' > "$R/d_oom.log"
    printf 'summary: a line of the console\n' > "$R/bench.log"
    "$PY" examples/gpt/results.py "$R" --meta "code: abc1234" --meta "command: sh examples/gpt/bench.sh test" \
        > "$D/results.tsv" 2> "$D/results.err"
    rc=$?
    check "results.py: exit 0" "exit $rc: $(head -n 3 "$D/results.err")"
    # the cells: run, program, stage, gpus, batch, gas, dtype, offload, recompute, median_step_ms, tokens/s, mfu,
    # gpu_gib, engine_gib, activations_gib, host_gib, first_loss, last_loss, note
    why=$(awk -F '\t' '
        NR == 1 && $0 != "# code: abc1234" { print "line 1: " $0; exit }
        NR == 2 && $0 != "# command: sh examples/gpt/bench.sh test" { print "line 2: " $0; exit }
        NR == 3 && ($1 != "run" || $19 != "note" || NF != 19) { print "header: " $0; exit }
        $1 == "a_zero" && ($2 != "gpt" || $3 != "3" || $4 != "2" || $5 != "8" || $8 != "cpu/none" || $10 != "215.6" ||
                          $11 != "37993.6" || $13 != "46.772" || $14 != "22.5" || $15 != "16.9" || $16 != "0.766" ||
                          $17 != "6.5" || $18 != "6.25" || $19 !~ /^summary: .* \| floor: copies 1.0 ms$/) { print "a_zero: " $0; exit }
        $1 == "b_max" && ($5 != "26" || $10 != "576.6" || $13 != "79.1" || $19 != "largest micro-batch 26") { print "b_max: " $0; exit }
        $1 == "c_fsdp2" && ($2 != "fsdp2" || $3 != "fsdp2-noreshard" || $8 != "" || $10 != "341.08" || $13 != "54.29") {
                                                                                            print "c_fsdp2: " $0; exit }
        $1 == "d_oom" && ($2 != "" || $19 != "gpt: rank 0: activations: cudaMalloc of 32.0 MiB failed (out of memory)") {
                                                                                            print "d_oom: " $0; exit }
        $1 == "bench" { print "bench.log made a row"; exit }
        NR > 3 { rows++ }
        END { if (rows != 4) print rows + 0 " rows, want 4" }' "$D/results.tsv")
    if [ -z "$why" ]; then ok "results.py: each row's figures"; else bad "results.py: each row's figures" "$why"; fi
else
    nopy "results.py"
fi

# ---- 6. examples/gpt/scale_table.py: bench.sh scale's table from its runs' end lines ----
# zero's stages on 1 and 4 GPUs, hybrid, the peers (DeepSpeed ZeRO-3 missing): each cell against the files
if [ "$have_py" -eq 1 ]; then
    R=$D/scale
    rm -rf "$R" && mkdir -p "$R"
    end() { # NAME TOK MFU GIB
        printf '{"event":"start","program":"x"}\n{"event":"end","tokens_per_s_per_gpu":%s,"mfu":%s,"device_used_gib":%s}\n' \
            "$2" "$3" "$4" >"$R/$1.jsonl"
    }
    end sc_s1_1gpu 41000 0.41 44.0; end sc_s1_4gpu 40000 0.40 32.0
    end sc_s2_1gpu 42000 0.42 45.0; end sc_s2_4gpu 40950 0.41 30.0
    end sc_s3_1gpu 40000 0.40 46.0; end sc_s3_4gpu 38000 0.38 30.5
    end sc_s3_hybrid 39000 0.39 35.0
    end sc_ds_z2 35000 0.35 50.0; end sc_fsdp2_r0 30000 0.30 55.0; end sc_fsdp2_r1 20000 0.20 40.0
    end sc_ds_z2_hf 36000 0.36 49.0 # (the faster ZeRO-2: the best peer of stages 1-2; sc_ds_z3_hf not run)
    end sc_fsdp2_r0_1gpu 40000 0.40 50.0 # (FSDP2 on one GPU: its own scaling; sc_fsdp2_r1_1gpu not run)
    end sc_ds_z3_leaf 25000 0.25 45.0 # (ZeRO-3 with leaf blocks: the best peer of stage 3)
    printf '{"event":"start","program":"deepspeed"}\n{"event":"step","step":1}\n' >"$R/sc_ds_z3.jsonl" # (no end line)
    "$PY" examples/gpt/scale_table.py "$R" 4 >"$D/scale.md" 2>"$D/scale.err"
    rc=$?
    check "scale_table.py: exit 0" "exit $rc: $(head -n 3 "$D/scale.err")"
    why=$(awk -F ' [|] ' '
        { sub(/^[|] /, ""); sub(/ [|]$/, "") }
        NR == 1 && $1 != "run" { print "header: " $0; exit }
        $1 == "zero stage 1" && $2 == 4 && ($3 != "40000" || $4 != "40.0%" || $5 != "32.00" || $6 != "0.976" ||
                                             $7 != "1.11x (DeepSpeed ZeRO-2, --hf-auto, 36000)") { print "s1: " $0; exit }
        $1 == "zero stage 2" && $2 == 4 && ($6 != "0.975" || $7 != "1.14x (DeepSpeed ZeRO-2, --hf-auto, 36000)") {
                                                                                                 print "s2: " $0; exit }
        $1 == "zero stage 3" && $2 == 4 && ($6 != "0.950" || $7 != "1.52x (DeepSpeed ZeRO-3, --leaf-blocks, 25000)") {
                                                                                                 print "s3: " $0; exit }
        $1 == "zero stage 3" && $2 == 1 && ($3 != "40000" || $6 != "" || $7 != "") { print "s3 one GPU: " $0; exit }
        $1 == "zero stage 3, mics_shard_size 2" && ($6 != "0.975" || $7 != "1.56x (DeepSpeed ZeRO-3, --leaf-blocks, 25000)") {
                                                                                                 print "hybrid: " $0; exit }
        $1 == "DeepSpeed ZeRO-3" && $3 != "did not finish (sc_ds_z3.log)" { print "ds_z3: " $0; exit }
        $1 == "DeepSpeed ZeRO-3, --hf-auto" && $3 != "not run" { print "ds_z3_hf: " $0; exit }
        $1 == "DeepSpeed ZeRO-2" && $3 != "35000" { print "ds_z2: " $0; exit }
        $1 == "FSDP2, reshard_after_forward 0" && $2 == 4 && ($3 != "30000" || $5 != "55.00" || $6 != "0.750") {
                                                                                                 print "fsdp2_r0: " $0; exit }
        $1 == "FSDP2, reshard_after_forward 0" && $2 == 1 && $3 != "40000" { print "fsdp2_r0 one GPU: " $0; exit }
        $1 == "FSDP2, reshard_after_forward 1" && $2 == 1 && $3 != "not run" { print "fsdp2_r1 one GPU: " $0; exit }
        $1 == "FSDP2, reshard_after_forward 1" && $2 == 4 && $6 != "" { print "fsdp2_r1 scaling: " $0; exit }
        NR > 2 { rows++ }
        $1 == "DeepSpeed ZeRO-3, --leaf-blocks" && $3 != "25000" { print "ds_z3_leaf: " $0; exit }
        END { if (rows != 16) print rows + 0 " rows, want 16" }' "$D/scale.md")
    if [ -z "$why" ]; then ok "scale_table.py: each cell"; else bad "scale_table.py: each cell" "$why"; fi
    "$PY" examples/gpt/scale_table.py "$R" 1 >/dev/null 2>"$D/scale_usage.err"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -q "^usage: " "$D/scale_usage.err"; then ok "scale_table.py: usage, exit 2"
    else bad "scale_table.py: usage, exit 2" "exit $rc: $(head -n 2 "$D/scale_usage.err")"; fi
else
    nopy "scale_table.py"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
