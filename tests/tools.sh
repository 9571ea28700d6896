#!/bin/sh
# tests/tools.sh BUILD_DIR - the command-line contract of the five tools
# (zero_config, zero_estimate, zero_ckpt, zero_layout, zero_report), built here into
# BUILD_DIR: --help and -h print the usage to stdout and exit 0; a usage
# error (unknown flag, missing or bad value, missing command) prints one line
# saying what is wrong, then the usage, to stderr, nothing to stdout, and
# exits 2; every numeric flag refuses out-of-range, huge, negative, empty
# and malformed values naming the flag; zero_ckpt never writes into a
# checkpoint and overwrites only with --force; zero_config names the flags a
# Hugging Face config needs, and those flags make it resolve; zero_report
# runs without a GPU and says so, its JSON parses, its CPU Adam line agrees
# with /proc/cpuinfo, its constants with the installed headers, and --nvme
# times a directory, leaves nothing there and refuses bad paths. Then the CPU
# benchmark examples/bench/cpu_adam.c: --help, and every numeric flag's bad
# values refused in one line naming the flag (exit 2); a tiny run still works.
#
# Run from the repository root: sh tests/tools.sh build/tt. Prints "ok NAME"
# or "FAIL NAME ..." per check and ends with "N passed, M failed"; exits 1
# on a failure. CC (default gcc) and CFLAGS (added to the build flags) may be
# set; TOOLS_PREBUILT=DIR takes the programs found in DIR (same names) instead
# of building them. Scratch files: BUILD_DIR/tools.tmp.
set -u
B=${1:-}
if [ -z "$B" ]; then
    echo "usage: sh tests/tools.sh BUILD_DIR" >&2
    exit 2
fi
CC=${CC:-gcc}
CFLAGS=${CFLAGS:-}
W=$B/tools.tmp
pass=0
fail=0
rm -rf "$W"
mkdir -p "$W" || exit 2

ok() { pass=$((pass + 1)); echo "ok $1"; }
no() { fail=$((fail + 1)); name=$1; shift; echo "FAIL $name $*"; }

# ---- build: the five tools, and test_ckpt for a checkpoint (two at a time) ----
build() { # NAME SOURCE [LIBS]; TOOLS_PREBUILT=DIR: DIR/NAME, when there, instead (make test built it)
    if [ -n "${TOOLS_PREBUILT:-}" ] && [ -x "$TOOLS_PREBUILT/$1" ]; then
        cp "$TOOLS_PREBUILT/$1" "$B/$1" >"$W/build-$1.log" 2>&1
        echo $? >"$W/build-$1.rc"
        return
    fi
    # shellcheck disable=SC2086
    $CC -std=c11 -Wall -Wextra -Werror -O1 $CFLAGS -I. -o "$B/$1" "$2" -lm -lpthread ${3:-} >"$W/build-$1.log" 2>&1
    echo $? >"$W/build-$1.rc"
}
build zero_config examples/zero_config/zero_config.c &
build zero_estimate examples/zero_estimate/zero_estimate.c &
wait
build zero_ckpt examples/zero_ckpt/zero_ckpt.c &
build zero_layout examples/zero_layout/zero_layout.c &
wait
build test_ckpt tests/test_ckpt.c &
build zero_report examples/zero_report/zero_report.c -ldl &
wait
for t in zero_config zero_estimate zero_ckpt zero_layout zero_report test_ckpt; do
    if [ "$(cat "$W/build-$t.rc")" = 0 ]; then ok "build-$t"; else no "build-$t" "$(head -n 20 "$W/build-$t.log")"; fi
done
for t in zero_config zero_estimate zero_ckpt zero_layout zero_report; do
    if [ ! -x "$B/$t" ]; then
        echo "$pass passed, $((fail + 1)) failed"
        exit 1
    fi
done
ZC=$B/zero_config
ZE=$B/zero_estimate
ZK=$B/zero_ckpt
ZL=$B/zero_layout
ZR=$B/zero_report

# run CMD...: stdout in $W/out, stderr in $W/err, the status in $rc
run() {
    "$@" >"$W/out" 2>"$W/err"
    rc=$?
}

# help NAME CMD...: exit 0, the usage on stdout, nothing on stderr
help() {
    name=$1; shift
    run "$@"
    if [ "$rc" -eq 0 ] && grep -q '^usage: ' "$W/out" && [ ! -s "$W/err" ]; then ok "$name"
    else no "$name" "exit $rc, stdout: $(head -c 200 "$W/out"), stderr: $(head -c 200 "$W/err")"; fi
}

# usage NAME PATTERN CMD...: exit 2, nothing on stdout, the first line of
# stderr matches the extended regex PATTERN, the usage follows on the second
usage() {
    name=$1; pat=$2; shift 2
    run "$@"
    first=$(sed -n 1p "$W/err")
    if [ "$rc" -eq 2 ] && [ ! -s "$W/out" ] && printf '%s\n' "$first" | grep -Eq -- "$pat" &&
        sed -n 2p "$W/err" | grep -q '^usage: '; then
        ok "$name"
    else
        no "$name" "exit $rc (want 2), want /$pat/; stderr: $(head -c 300 "$W/err"); stdout: $(head -c 100 "$W/out")"
    fi
}

# version NAME CMD...: --version prints "TOOL (zero X.Y.Z)" alone and exits 0
version() {
    name=$1; shift
    run "$@" --version
    if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ] && grep -Eq "^$name \(zero [0-9]+\.[0-9]+\.[0-9]+\)$" "$W/out" &&
        [ "$(wc -l <"$W/out")" -eq 1 ]; then ok "$name--version"
    else no "$name--version" "exit $rc, stdout: $(head -c 200 "$W/out"), stderr: $(head -c 200 "$W/err")"; fi
}

# status1 NAME PATTERN CMD...: exit 1 (a file that cannot be read, an error in the work), PATTERN on stderr
status1() {
    name=$1; pat=$2; shift 2
    run "$@"
    if [ "$rc" -eq 1 ] && grep -Eq -- "$pat" "$W/err"; then ok "$name"
    else no "$name" "exit $rc (want 1), want /$pat/; stderr: $(head -c 300 "$W/err")"; fi
}

# numbers TOOL FLAG OVER CMD...: CMD FLAG VALUE for the bad values of a
# numeric flag (OVER: just past its range); the message names the flag.
# badvalues CHECK TOOL FLAG OVER CMD...: the same values through CHECK
# (usage: exit 2 and the usage; oneline: exit 2 and one line only).
badvalues() {
    check=$1; tool=$2; flag=$3; over=$4; shift 4
    pre="^$tool( [a-z]+)?: $flag: "
    $check "$tool$flag-over" "$pre$over is out of range" "$@" "$flag" "$over"
    $check "$tool$flag-huge" "${pre}99999999999999999999 is out of range" "$@" "$flag" 99999999999999999999
    $check "$tool$flag-negative" "${pre}-1 is out of range" "$@" "$flag" -1
    $check "$tool$flag-junk" "$pre'8x' is not" "$@" "$flag" 8x
    $check "$tool$flag-hex" "$pre'0x10' is not" "$@" "$flag" 0x10
    $check "$tool$flag-nan" "$pre'nan' is not" "$@" "$flag" nan
    $check "$tool$flag-blank" "$pre' 8' is not" "$@" "$flag" " 8"
    $check "$tool$flag-empty" "${pre}empty value" "$@" "$flag" ""
    $check "$tool$flag-missing" "${pre}missing value" "$@" "$flag"
}
numbers() { badvalues usage "$@"; }

# ---- zero_config ----
HF=tests/configs/hf_transformers_ds_config_zero2.json
for h in --help -h; do help "zero_config$h" "$ZC" "$h"; done
help "zero_config-check--help" "$ZC" check "$HF" --help
usage "zero_config-no-command" '^zero_config: missing command' "$ZC"
usage "zero_config-unknown-command" "^zero_config: unknown command 'chek'" "$ZC" chek "$HF"
usage "zero_config-no-file" '^zero_config: check: missing FILE' "$ZC" check --world 2
usage "zero_config-unknown-flag" "^zero_config: unknown argument '--wrld' \(did you mean --world\?\)$" "$ZC" check "$HF" --wrld 2
usage "zero_config-unknown-flag-far" "^zero_config: unknown argument '--xyzzy'$" "$ZC" check "$HF" --xyzzy
usage "zero_config-dtype" "^zero_config: --dtype: 'fp8' is not" "$ZC" check "$HF" --dtype fp8
version zero_config "$ZC"
status1 "zero_config-missing-file" "cannot open the config" "$ZC" check "$W/no-such.json"
usage "zero_config-two-files" "^zero_config: check takes one FILE" "$ZC" check "$HF" "$HF"
usage "zero_config-world-wraps" '^zero_config: --world: 99999999999 is out of range \(1 to 1048576\)$' \
    "$ZC" check "$HF" --mbs 4 --supply-hf --world 99999999999
for f in --world --hidden --mbs; do numbers zero_config "$f" 1048577 "$ZC" check "$HF"; done
run "$ZC" check "$HF" --world 1048576 --hidden 1048576 --mbs 1 --supply-hf
if [ "$rc" -eq 0 ] && grep -q '^  "train_batch_size": 1048576,$' "$W/out"; then ok "zero_config-range-top"
else no "zero_config-range-top" "exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi
if "$ZC" --help | grep -q -- '--mbs N' && "$ZC" --help | grep -q -- '--supply-hf' &&
    "$ZC" --help | grep -q -- '--hidden H' && "$ZC" --help | grep -q 'per_device_train_batch_size'; then
    ok "zero_config-help-hf-flags"
else no "zero_config-help-hf-flags" "--help does not explain --mbs, --hidden and --supply-hf"; fi

# A Hugging Face config as it is: exit 1, a message naming --mbs (and the
# others it needs), no talk of C struct fields; the command it suggests, with
# numbers for N and H, resolves.
run "$ZC" check "$HF" --world 2
if [ "$rc" -eq 1 ] && grep -q -- '--mbs N' "$W/err" && grep -q -- '--supply-hf' "$W/err" &&
    grep -q 'train_micro_batch_size_per_gpu' "$W/err" && ! grep -q 'cfg\.' "$W/err"; then
    ok "zero_config-hf-hint"
else no "zero_config-hf-hint" "exit $rc: $(grep -v warning "$W/err" | head -c 400)"; fi
run "$ZC" check "$HF" --world 2 --mbs 4 --supply-hf
tbs=$((4 * 2 * 1)) # mbs x world x gradient_accumulation_steps (the HF Trainer's 1)
if [ "$rc" -eq 0 ] && grep -q "^  \"train_batch_size\": $tbs,\$" "$W/out" &&
    grep -q '^  "train_micro_batch_size_per_gpu": 4,$' "$W/out"; then ok "zero_config-hf-flags-resolve"
else no "zero_config-hf-flags-resolve" "exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi
# indented by 2, floats as the shortest text that reads back (0.9, not 0.90000000000000002), JSON to python3
cp "$W/out" "$W/pretty.json"
if grep -q '^      "betas": \[0.9, 0.999\],$' "$W/out" && grep -q '^      "eps": 1e-08,$' "$W/out" &&
    grep -q '^      "lr": 5e-05,$' "$W/out" && ! grep -Eq '[0-9]\.[0-9]{15}' "$W/out"; then ok "zero_config-shortest-floats"
else no "zero_config-shortest-floats" "$(grep -E '"(betas|eps|lr)"' "$W/out" | head -c 300)"; fi
if ! command -v python3 >/dev/null 2>&1; then ok "zero_config-pretty-json (no python3: skipped)"
elif python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$W/pretty.json" 2>"$W/py.err"; then
    ok "zero_config-pretty-json"
else no "zero_config-pretty-json" "$(head -c 300 "$W/py.err")"; fi
# the summary on stderr: stage, dtype (--supply-hf: fp32), the batch triangle, optimizer, scheduler, offload, warnings
if grep -q '^  ZeRO stage 2, fp32$' "$W/err" && grep -q "^  batch: train_batch_size $tbs = micro-batch 4 x 1 accumulation step x 2 ranks$" "$W/err" &&
    grep -q '^  optimizer: AdamW, lr 5e-05' "$W/err" && grep -q '^  scheduler: WarmupLR' "$W/err" &&
    grep -q '^  offload: optimizer cpu, parameters none$' "$W/err" && grep -q '^  2 warnings (above)$' "$W/err"; then
    ok "zero_config-summary"
else no "zero_config-summary" "$(grep -v warning "$W/err" | head -c 400)"; fi
# the summary's optimizer line: the type and only its own params (Adagrad's lr and eps when the file has none)
printf '{"train_batch_size": 8, "optimizer": {"type": "lion", "params": {"lr": 1e-4, "betas": [0.9, 0.99], "weight_decay": 0.1}}}' >"$W/lion.json"
printf '{"train_batch_size": 8, "optimizer": {"type": "Adagrad"}}' >"$W/adagrad.json"
printf '{"train_batch_size": 8, "optimizer": {"type": "SGD", "params": {"lr": 0.01, "momentum": 0.9, "nesterov": true}}}' >"$W/sgd.json"
for o in 'lion|Lion, lr 0.0001, betas 0.9/0.99, weight_decay 0.1;' 'adagrad|Adagrad, lr 0.01, eps 1e-10, weight_decay 0;' \
    'sgd|SGD, lr 0.01, momentum 0.9, nesterov, weight_decay 0;'; do
    run "$ZC" check "$W/${o%%|*}.json"
    if [ "$rc" -eq 0 ] && grep -qF "  optimizer: ${o#*|} gradient_clipping 1" "$W/err"; then ok "zero_config-summary-${o%%|*}"
    else no "zero_config-summary-${o%%|*}" "exit $rc: $(grep optimizer "$W/err" | head -c 300)"; fi
done
run "$ZC" check "$HF" --world 2 --mbs 4 --supply-hf --compact
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$W/out")" -eq 1 ] && grep -q '"betas":\[0.9,0.999\]' "$W/out"; then ok "zero_config-compact"
else no "zero_config-compact" "exit $rc, $(wc -l <"$W/out") lines"; fi
# --dtype answers an "auto" fp16/bf16 while --supply-hf fills the rest
run "$ZC" check "$HF" --world 2 --mbs 4 --supply-hf --dtype bf16
if [ "$rc" -eq 0 ] && grep -q '^  ZeRO stage 2, bf16$' "$W/err" &&
    [ "$(sed -n '/^  "bf16": {$/{n;p;}' "$W/out")" = '    "enabled": true,' ]; then ok "zero_config-dtype-answers-auto"
else no "zero_config-dtype-answers-auto" "exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi
for f in tests/configs/*.json; do
    n=zero_config-suggested-$(basename "$f" .json)
    run "$ZC" check "$f" --world 2
    if [ "$rc" -eq 0 ]; then ok "$n"; continue; fi
    cmd=$(sed -n 's/^zero_config: run: zero_config //p' "$W/err" | sed 's/--mbs N/--mbs 4/; s/--hidden H/--hidden 1024/')
    if [ "$rc" -ne 1 ] || [ -z "$cmd" ]; then
        no "$n" "exit $rc and no suggested command: $(grep -v warning "$W/err" | head -c 300)"
        continue
    fi
    # shellcheck disable=SC2086
    run "$ZC" $cmd
    if [ "$rc" -eq 0 ]; then ok "$n"; else no "$n" "'$cmd' exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi
done
run "$ZC" check "$HF" --world 2 --mbs 4
if [ "$rc" -eq 1 ] && grep -q -- '--supply-hf' "$W/err" && ! grep -q -- '--mbs N' "$W/err" &&
    grep -q -- '--mbs 4 --supply-hf' "$W/err"; then ok "zero_config-hint-keeps-given-flags"
else no "zero_config-hint-keeps-given-flags" "exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi

# ---- zero_estimate ----
for h in --help -h; do help "zero_estimate$h" "$ZE" "$h"; done
usage "zero_estimate-no-params" '^zero_estimate: missing --params' "$ZE" --gpus 8
usage "zero_estimate-unknown-flag" "^zero_estimate: unknown argument '--gpu' \(did you mean --gpus\?\)$" "$ZE" --params 1e9 --gpu 8
usage "zero_estimate-time-did-you-mean" "^zero_estimate: unknown argument '--modl' \(with --time\) \(did you mean --model\?\)$" \
    "$ZE" --time --modl 7b
version zero_estimate "$ZE"
# --time marks rows that do not fit the GPU and rows outside the measured range (7B's T 4096; past 4 GPUs; nodes)
run "$ZE" --time --model 7b --stage 3 --group 8
if [ "$rc" -eq 0 ] && grep -Eq '^ +1 +1 +3 +1 .* NO  T$' "$W/out" && grep -Eq '^ +4 +1 +3 +4 .* yes  T$' "$W/out" &&
    grep -Eq '^ +16 +2 +3 +8 .* yes  T,GPUs,nodes$' "$W/out" && grep -q '^fits: ' "$W/out" && grep -q '^outside: ' "$W/out"; then
    ok "zero_estimate-time-marks"
else no "zero_estimate-time-marks" "exit $rc: $(grep -E '^ +(1|4|16) ' "$W/out" | head -c 400)"; fi
run "$ZE" --time --stage 2
if [ "$rc" -eq 0 ] && grep -Eq '^ +4 +1 +2 +4 .* yes  -$' "$W/out" && grep -Eq '^ +8 +1 +2 +8 .* yes  GPUs$' "$W/out"; then
    ok "zero_estimate-time-measured"
else no "zero_estimate-time-measured" "exit $rc: $(grep -E '^ +(4|8) ' "$W/out" | head -c 300)"; fi
usage "zero_estimate-dtype" "^zero_estimate: --dtype: 'fp8' is not" "$ZE" --params 1e9 --dtype fp8
# --time: the step-time model, one preset, the whole table down to the 1024-GPU row
run "$ZE" --time --model 70b --machine h200 --stage 3 --group 8
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ] && grep -Eq '^ +1024 +128 +3 +8 +[0-9.]+ ' "$W/out"; then
    ok "zero_estimate-time-70b"
else no "zero_estimate-time-70b" "exit $rc, stderr: $(head -c 200 "$W/err"), last row: $(grep -E '^ +1024 ' "$W/out")"; fi
# --shard: zero's columns per GPU are those of a flat world of the group's size; DeepSpeed's stay flat
run "$ZE" --params 6.74e9 --gpus 8 --nodes 4 --shard 8
h3=$(grep -E '^ZeRO-3 optim=none param=none' "$W/out" | awk '{print $4, $8}')
run "$ZE" --params 6.74e9 --gpus 8
f3=$(grep -E '^ZeRO-3 optim=none param=none' "$W/out" | awk '{print $4}')
run "$ZE" --params 6.74e9 --gpus 8 --nodes 4
d3=$(grep -E '^ZeRO-3 optim=none param=none' "$W/out" | awk '{print $8}')
if [ -n "$h3" ] && [ "$h3" = "$f3 $d3" ]; then ok "zero_estimate-shard"
else no "zero_estimate-shard" "--shard 8 on 4x8: '$h3' (zero per GPU, DeepSpeed per GPU); flat 8: '$f3'; DeepSpeed on 32: '$d3'"; fi
# --optimizer: zero's optimizer-state column follows the state each keeps (Adam 12 bytes a parameter with the
# master, Lion 8, SGD 4 without momentum); DeepSpeed's columns assume Adam
for o in adam lion sgd; do
    run "$ZE" --params 1e9 --optimizer $o
    eval "z0_$o=\$(grep -E '^ZeRO-0 ' \"\$W/out\" | awk '{print \$4, \$7}')"
done
if [ "$z0_adam" = "14.90 14.90" ] && [ "$z0_lion" = "11.18 14.90" ] && [ "$z0_sgd" = "7.45 14.90" ]; then
    ok "zero_estimate-optimizer"
else no "zero_estimate-optimizer" "ZeRO-0 per GPU (zero's, DeepSpeed's): adam '$z0_adam', lion '$z0_lion', sgd '$z0_sgd'"; fi
usage "zero_estimate-optimizer-name" "^zero_estimate: --optimizer: 'musgd' is not one" "$ZE" --params 1e9 --optimizer musgd
usage "zero_estimate-shard-divide" '^zero_estimate: --shard: 3 does not divide the 32 GPUs' "$ZE" --params 1e9 --gpus 8 --nodes 4 --shard 3
# --plan: the fastest option per GPU count; its pick is no slower than the same option's --time row
run "$ZE" --time --plan --model 7b
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ] && grep -Eq '^ +1024 +128 +2 +8 +none +no +[0-9.]+ .* communication +T,GPUs,nodes$' "$W/out"; then
    ok "zero_estimate-plan-7b"
else no "zero_estimate-plan-7b" "exit $rc, stderr: $(head -c 200 "$W/err"), row: $(grep -E '^ +1024 ' "$W/out")"; fi
plan16=$(awk '$1 == 16 && $2 == 2 { print $7 }' "$W/out")
run "$ZE" --time --model 7b --stage 2 --group 8
time16=$(awk '$1 == 16 && $3 == 2 { print $5 }' "$W/out")
run "$ZE" --time --model 7b --stage 3 --group 8
time16s3=$(awk '$1 == 16 && $3 == 3 { print $5 }' "$W/out")
if [ -n "$plan16" ] && [ -n "$time16" ] && [ -n "$time16s3" ] &&
    awk -v p="$plan16" -v t="$time16" -v t3="$time16s3" 'BEGIN { exit !(p == t && p <= t3) }'; then
    ok "zero_estimate-plan-vs-time"
else no "zero_estimate-plan-vs-time" "plan's 16-GPU step '$plan16' ms, --time --stage 2 --group 8 '$time16' ms, stage 3 '$time16s3'"; fi
# --contention and --serial-step: the factor's and the step order's rows (2 GPUs of one node)
run "$ZE" --time --gpus 2 --stage 3 --contention 1e-9
s3_free=$(awk '$1 == 2 { print $5 }' "$W/out")
run "$ZE" --time --gpus 2 --stage 3
s3_def=$(awk '$1 == 2 { print $5 }' "$W/out")
run "$ZE" --time --gpus 2 --stage 2 --serial-step
s2_serial=$(awk '$1 == 2 { print $5 }' "$W/out")
run "$ZE" --time --gpus 2 --stage 2
s2_def=$(awk '$1 == 2 { print $5 }' "$W/out")
if [ -n "$s3_free" ] && [ -n "$s2_serial" ] &&
    awk -v a="$s3_free" -v b="$s3_def" -v c="$s2_serial" -v d="$s2_def" 'BEGIN { exit !(a < b && c > d) }'; then
    ok "zero_estimate-contention-serial-step"
else no "zero_estimate-contention-serial-step" "stage 3 '$s3_free' (no contention) vs '$s3_def'; stage 2 '$s2_serial' (serial) vs '$s2_def'"; fi
usage "zero_estimate-contention-range" '^zero_estimate: --contention: 0 is out of range' "$ZE" --time --contention 0
run "$ZE" --time --plan --model 70b --gpu-mem 10GB
if [ "$rc" -eq 0 ] && [ "$(grep -c 'does not fit' "$W/out")" -eq 11 ]; then ok "zero_estimate-plan-nothing-fits"
else no "zero_estimate-plan-nothing-fits" "exit $rc, $(grep -c 'does not fit' "$W/out") rows do not fit (want 11)"; fi
# --largest: the most blocks that fit; one H100 (79.18 GiB) at stage 2, C 4096, T 1024, V 256, micro-batch 1,
# against the largest examples/gpt trained there (docs/PERF.md 5f, h100_max: 24 blocks, 25 with recompute):
# within 10% of the parameters, never above (the plan keeps a reserve)
run "$ZE" --time --largest --hidden 4096 --seq 1024 --vocab 256 --batch 1 --machine h100
big=$(awk '$1 == 1 && $2 == "L" { print $11, $15 }' "$W/out")
if [ "$rc" -eq 0 ] && [ -n "$big" ] && awk -v b="$big" 'BEGIN { split(b, x, " "); p0 = 24; p1 = 25
        exit !(x[1] <= p0 && x[1] >= 0.9 * p0 && x[2] <= p1 && x[2] >= 0.9 * p1) }'; then
    ok "zero_estimate-largest-h100"
else no "zero_estimate-largest-h100" "exit $rc; stage 2 blocks (kept, recompute): '$big' against 24 and 25 measured; $(sed -n 7p "$W/out")"; fi
usage "zero_estimate-largest-plan" '^zero_estimate: --largest: and --plan' "$ZE" --time --largest --plan
usage "zero_estimate-largest-layers" '^zero_estimate: --largest: searches the blocks: drop --layers' "$ZE" --time --largest --layers 8
usage "zero_estimate-plan-stage" '^zero_estimate: --plan: searches the stage' "$ZE" --time --plan --stage 3
usage "zero_estimate-plan-ratio-given" '^zero_estimate: --plan: searches the stage, --group, --ratio and --offload-param' \
    "$ZE" --time --plan --offload cpu --ratio 0.5
usage "zero_estimate-offload-param-alone" '^zero_estimate: --offload-param: cpu needs --offload cpu and stage 3' "$ZE" \
    --time --offload-param cpu
usage "zero_estimate-max-live-alone" '^zero_estimate: --max-live: prices the pool of --offload-param cpu' "$ZE" --time \
    --max-live 1e9
usage "zero_estimate-cpu-mem-no-plan" '^zero_estimate: --cpu-mem: is --plan' "$ZE" --time --cpu-mem 100GB
usage "zero_estimate-tokens-no-plan" '^zero_estimate: --tokens: is --plan' "$ZE" --time --tokens 65536
# --largest with both offloads: host memory bounds it (500 GiB: about the same blocks on 1, 2 and 4 GPUs, the
# host's reserve of 2 GiB a GPU taking at most two blocks from 4 GPUs), and more than without offload on one GPU
run "$ZE" --time --largest --machine h100 --gpus 4 --hidden 4096 --vocab 256 --seq 1024 --batch 1 --stage 3 --offload cpu \
    --offload-param cpu --cpu-mem 500GiB
off=$(awk '$1 <= 4 && $2 == "L" { print $3 }' "$W/out" | tr '\n' ' ')
run "$ZE" --time --largest --machine h100 --gpus 4 --hidden 4096 --vocab 256 --seq 1024 --batch 1 --stage 3
none1=$(awk '$1 == 1 && $2 == "L" { print $3 }' "$W/out")
if [ "$(echo $off | wc -w)" -eq 3 ] && [ -n "$none1" ] &&
    echo "$off" | awk -v n="$none1" '{ exit !($1 >= $2 && $2 >= $3 && $1 - $3 <= 2 && $3 > n) }'; then
    ok "zero_estimate-largest-offload"
else no "zero_estimate-largest-offload" "with both offloads '$off', without on one GPU '$none1'"; fi
# --plan --tokens: the micro-batch and the accumulation searched; every row's mb x gas x T x GPUs is the tokens
run "$ZE" --time --plan --machine h100 --params 6654402560 --layers 32 --hidden 4096 --vocab 50304 --seq 1024 --gpus 1 \
    --cpu-mem 120GiB --tokens 131072
why=$(awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && $3 ~ /^[0-9]+$/ {
        n++; if ($(NF - 1) != "x" || $(NF - 2) * $NF * 1024 * $1 != 131072) { print "row: " $0; exit } }
    END { if (n < 3) print n + 0 " rows" }' "$W/out")
if [ "$rc" -eq 0 ] && [ -z "$why" ] && grep -q 'mb x gas' "$W/out"; then ok "zero_estimate-plan-tokens"
else no "zero_estimate-plan-tokens" "exit $rc, $why"; fi
run "$ZE" --time --plan --machine h100 --params 1.5e9 --layers 48 --hidden 1600 --seq 1024 --gpus 8 --tokens 3072
if [ "$rc" -eq 0 ] && grep -qE '^ +2 +1 +--tokens 3072 is not a whole number of sequences of 1024 on each of 2 GPUs' \
    "$W/out" && grep -qE '^ +1 +1 +[0-9]' "$W/out"; then ok "zero_estimate-plan-tokens-indivisible"
else no "zero_estimate-plan-tokens-indivisible" "exit $rc: $(grep -E '^ +[12] +1 ' "$W/out" | head -2)"; fi
# --plan with host memory: a 40e9 GPT on one H100 offloads the parameters too where the host holds them, and
# fits nowhere where it does not
run "$ZE" --time --plan --machine h100 --params 40e9 --layers 200 --hidden 4096 --vocab 50304 --seq 1024 --batch 8 \
    --gas 8 --gpus 1 --cpu-mem 1000GiB
big=$(awk '$1 == 1 && $2 == 1 { print $3, $5 }' "$W/out")
run "$ZE" --time --plan --machine h100 --params 40e9 --layers 200 --hidden 4096 --vocab 50304 --seq 1024 --batch 8 \
    --gas 8 --gpus 1 --cpu-mem 120GiB
if [ "$big" = "3 cpu+param" ] && grep -qE '^ +1 +1 +does not fit: .*120 GB|^ +1 +1 +does not fit: .*129 GB' "$W/out"; then
    ok "zero_estimate-plan-param-offload"
else no "zero_estimate-plan-param-offload" "pick '$big' (want '3 cpu+param'); 120 GiB: $(grep -E '^ +1 +1 ' "$W/out")"; fi
usage "zero_estimate-ratio-no-offload" '^zero_estimate: --ratio: 0.5 .*needs --offload cpu and stage 3' "$ZE" --time \
    --ratio 0.5
# --plan --offload cpu: only offloaded options, the ratio chosen; GPT-2 XL's seed recipe on one H100 keeps
# 99% of the optimizer on the GPU (ratio 0.01, the least the search has: its states fit the GPU) and offloads
# the CPU share's parameters (with the kept units
# spread through the layout their fetches run beside the whole pass's compute; with the leading units kept they
# ran beside that share's compute only, which at T 128 cost more than the 0.3 GB they free), and its step beats
# the whole optimizer on the CPU
run "$ZE" --time --plan --offload cpu --machine h100 --params 1476176000 --layers 48 --hidden 1600 --vocab 256 \
    --seq 128 --batch 16 --dtype fp16 --gpus 1
pick=$(awk '$1 == 1 && $2 == 1 { print $3, $5, $6, $8 }' "$W/out")
run "$ZE" --time --stage 3 --offload cpu --machine h100 --params 1476176000 --layers 48 --hidden 1600 --vocab 256 \
    --seq 128 --batch 16 --dtype fp16 --gpus 1
all_cpu=$(awk '$1 == 1 && $2 == 1 { print $5 }' "$W/out")
if [ "$rc" -eq 0 ] && [ "$(echo "$pick" | cut -d' ' -f1-3)" = "3 cpu+param 0.01" ] &&
    awk -v p="$(echo "$pick" | cut -d' ' -f4)" -v a="$all_cpu" 'BEGIN { exit !(p > 0 && p < a) }'; then
    ok "zero_estimate-plan-ratio"
else no "zero_estimate-plan-ratio" "pick '$pick' (want stage 3, cpu+param 0.01, faster than the ratio-1 row's '$all_cpu' ms)"; fi
# --ratio-params: the kept units' parameters on the GPU (the engine's default) or on the host; 70B on 8 H100s at
# the ratio --plan picks there with them on the host (cpu+param 0.51h) and the parameters offloaded: on the host
# the GPU holds less and the step is longer, and the states are those of the plan's pick
run "$ZE" --time --plan --model 70b
pr=$(awk '$1 == 8 && $2 == 1 && $6 ~ /^0\.[0-9]+h$/ { print $6 }' "$W/out")
planh=$(awk '$1 == 8 && $2 == 1 && $6 ~ /^0\.[0-9]+h$/ { print $12 }' "$W/out")
RP="--time --stage 3 --offload cpu --offload-param cpu --ratio ${pr%h} --machine h100 --gpus 8 --model 70b"
run "$ZE" $RP --ratio-params device
dev=$(awk '$1 == 8 && $2 == 1 { print $5, $10 }' "$W/out")
run "$ZE" $RP --ratio-params host
host=$(awk '$1 == 8 && $2 == 1 { print $5, $10 }' "$W/out")
if [ "$rc" -eq 0 ] && [ -n "$pr" ] && [ -n "$dev" ] && [ -n "$host" ] && [ -n "$planh" ] &&
    awk -v d="$dev" -v h="$host" -v p="$planh" 'BEGIN { split(d, a, " "); split(h, b, " ")
        exit !(b[1] > a[1] && b[2] < a[2] && b[2] == p) }'; then
    ok "zero_estimate-ratio-params"
else no "zero_estimate-ratio-params" "device '$dev', host '$host' (step ms, states GiB), the plan's $pr states '$planh'"; fi
usage "zero_estimate-ratio-params-alone" '^zero_estimate: --ratio-params: host places the kept units' "$ZE" --time \
    --ratio-params host
usage "zero_estimate-ratio-params-bad" "^zero_estimate: --ratio-params: 'foo': device or host" "$ZE" --time \
    --ratio-params foo
usage "zero_estimate-plan-gpu-mem" '^zero_estimate: --gpu-mem: ' "$ZE" --time --plan --gpu-mem 1MB
usage "zero_estimate-time-model" "^zero_estimate: --model: '8b' is not a preset" "$ZE" --time --model 8b
usage "zero_estimate-time-unknown" "^zero_estimate: unknown argument '--fit' \(with --time\)" "$ZE" --time --fit
usage "zero_estimate-time-offload-stage0" '^zero_estimate: --offload: cpu needs stage 1' "$ZE" --time --stage 0 --offload cpu
numbers zero_estimate --group 1025 "$ZE" --time
numbers zero_estimate --stage 4 "$ZE" --time
usage "zero_estimate-fit-no-gpu-mem" '^zero_estimate: --fit: needs --gpu-mem' "$ZE" --fit --gpus 8
usage "zero_estimate-fit-params" '^zero_estimate: --fit: .*drop --params' "$ZE" --fit --gpu-mem 80GB --params 1e9
usage "zero_estimate-largest-layer" '^zero_estimate: --largest-layer: .* larger than --params' \
    "$ZE" --params 1e9 --largest-layer 2e9
# past the library's 1e15 bound: refused before the table starts (no half table)
usage "zero_estimate-params-bound" '^zero_estimate: --params: 2e15 is out of range' "$ZE" --params 2e15 --gpus 8
usage "zero_estimate-late-bad-flag" '^zero_estimate: --nodes: ' "$ZE" --params 1e9 --gpus 8 --breakdown --nodes x
numbers zero_estimate --params 2e15 "$ZE"
usage "zero_estimate--params-fraction" "^zero_estimate: --params: '1.5' is not a whole count" "$ZE" --params 1.5
numbers zero_estimate --largest-layer 2e15 "$ZE" --params 1e9
numbers zero_estimate --gpus 1025 "$ZE" --params 1e9
numbers zero_estimate --nodes 1048577 "$ZE" --params 1e9
numbers zero_estimate --bucket 2e15 "$ZE" --params 1e9
numbers zero_estimate --max-live 2e15 "$ZE" --params 1e9
numbers zero_estimate --prefetch 2e15 "$ZE" --params 1e9
numbers zero_estimate --buffer-factor 1001 "$ZE" --params 1e9
numbers zero_estimate --gpu-mem 2e15 "$ZE" --fit
numbers zero_estimate --cpu-mem 2e18 "$ZE" --fit --gpu-mem 80GB
numbers zero_estimate --nvme 2e18 "$ZE" --fit --gpu-mem 80GB
run "$ZE" --params 1e15 --gpus 1024 --nodes 1048576 --prefetch 0 --buffer-factor 1000
if [ "$rc" -eq 0 ] && grep -q '^ZeRO-3 optim=nvme param=nvme' "$W/out"; then ok "zero_estimate-range-top"
else no "zero_estimate-range-top" "exit $rc: $(head -c 300 "$W/err")"; fi

# ---- zero_ckpt ----
CK=$W/ck
"$B/test_ckpt" --make "$CK" >"$W/make.log" 2>&1 && [ -f "$CK/latest" ] && ok "zero_ckpt-make" ||
    no "zero_ckpt-make" "$(head -c 300 "$W/make.log")"
cp "$CK/latest" "$W/latest.orig" 2>/dev/null
STEP=$CK/$(cat "$CK/latest" 2>/dev/null)
for h in --help -h; do help "zero_ckpt$h" "$ZK" "$h"; done
help "zero_ckpt-convert--help" "$ZK" convert "$CK" --help
usage "zero_ckpt-no-command" '^zero_ckpt: missing command' "$ZK"
usage "zero_ckpt-unknown-command" "^zero_ckpt: unknown command 'inspekt' \(did you mean inspect\?\)$" "$ZK" inspekt "$CK"
version zero_ckpt "$ZK"
status1 "zero_ckpt-missing-dir" "is not a checkpoint" "$ZK" inspect "$W/no-such-dir"
status1 "zero_ckpt-import-missing-file" "no-such.st" "$ZK" import "$W/no-such.st" "$W/o"
usage "zero_ckpt-inspect-no-dir" '^zero_ckpt inspect: missing DIR' "$ZK" inspect
usage "zero_ckpt-verify-extra" "^zero_ckpt verify: takes one DIR" "$ZK" verify "$CK" --fast
usage "zero_ckpt-convert-unknown-flag" "^zero_ckpt convert: unexpected argument '--wrld' \(did you mean --world\?\)$" \
    "$ZK" convert "$CK" --wrld 2 "$W/o"
usage "zero_ckpt-convert-no-output" '^zero_ckpt convert: missing the output' "$ZK" convert "$CK"
usage "zero_ckpt-convert-two-outputs" '^zero_ckpt convert: give one output' \
    "$ZK" convert "$CK" --safetensors "$W/a.st" --world 2 "$W/o"
usage "zero_ckpt-convert-dtype" "^zero_ckpt convert: --dtype: 'fp8' is not" "$ZK" convert "$CK" --safetensors "$W/a.st" --dtype fp8
usage "zero_ckpt-convert-dtype-world" '^zero_ckpt convert: --dtype: only with --safetensors' \
    "$ZK" convert "$CK" --world 2 "$W/o" --dtype bf16
usage "zero_ckpt-convert-world-no-outdir" '^zero_ckpt convert: --world: missing OUTDIR' "$ZK" convert "$CK" --world 2
usage "zero_ckpt-import-no-outdir" '^zero_ckpt import: missing OUTDIR' "$ZK" import "$W/a.st" --world 2
usage "zero_ckpt-import-unknown-flag" "^zero_ckpt import: unknown argument '--stag' \(did you mean --stage\?\)$" \
    "$ZK" import "$W/a.st" --stag 2 "$W/o"
usage "zero_ckpt-import-two-outdirs" "^zero_ckpt import: one OUTDIR" "$ZK" import "$W/a.st" --world 2 --stage 1 "$W/o" "$W/p"
numbers zero_ckpt --world 1025 "$ZK" convert "$CK"
numbers zero_ckpt --world 1025 "$ZK" import "$W/a.st" "$W/o" --stage 1
numbers zero_ckpt --stage 4 "$ZK" import "$W/a.st" "$W/o" --world 2
[ ! -e "$W/o" ] && [ ! -e "$W/a.st" ] && ok "zero_ckpt-usage-writes-nothing" || no "zero_ckpt-usage-writes-nothing" "$W/o or $W/a.st exists"

# refuse NAME PATTERN CMD...: exit 2, the reason (PATTERN) on stderr, and
# the checkpoint's `latest` unchanged
refuse() {
    name=$1; pat=$2; shift 2
    run "$@"
    if [ "$rc" -eq 2 ] && grep -Eq -- "$pat" "$W/err" && cmp -s "$CK/latest" "$W/latest.orig"; then ok "$name"
    else no "$name" "exit $rc (want 2), want /$pat/: $(head -c 300 "$W/err")"; fi
}
# writes NAME CMD...: exit 0
writes() {
    name=$1; shift
    run "$@"
    if [ "$rc" -eq 0 ]; then ok "$name"; else no "$name" "exit $rc: $(head -c 300 "$W/err")"; fi
}
refuse "zero_ckpt-st-latest" "$CK/latest is inside the source $CK" "$ZK" convert "$CK" --safetensors "$CK/latest"
refuse "zero_ckpt-st-latest-force" "$CK/latest is inside the source" "$ZK" convert "$CK" --safetensors "$CK/latest" --force
refuse "zero_ckpt-st-in-step" "is inside the source" "$ZK" convert "$CK" --safetensors "$STEP/model.safetensors"
[ ! -e "$STEP/model.safetensors" ] && ok "zero_ckpt-st-in-step-nothing" || no "zero_ckpt-st-in-step-nothing" "file written"
refuse "zero_ckpt-st-is-dir" "is a directory" "$ZK" convert "$CK" --safetensors "$W" --force
writes "zero_ckpt-st-new" "$ZK" convert "$CK" --safetensors "$W/a.st" --dtype bf16
cp "$W/a.st" "$W/a.st.orig"
refuse "zero_ckpt-st-exists" "$W/a.st exists \(--force overwrites it\)" "$ZK" convert "$CK" --safetensors "$W/a.st"
writes "zero_ckpt-st-force" "$ZK" convert "$CK" --safetensors "$W/a.st" --force
# fp32 (the default) after bf16: the file really was replaced
if [ -f "$W/a.st" ] && ! cmp -s "$W/a.st" "$W/a.st.orig"; then ok "zero_ckpt-st-force-replaced"
else no "zero_ckpt-st-force-replaced" "the file did not change"; fi
refuse "zero_ckpt-world-source" "$CK is the source itself" "$ZK" convert "$CK" --world 3 "$CK" --force
refuse "zero_ckpt-world-source-step" "is the source itself" "$ZK" convert "$CK" --world 3 "$STEP" --force
refuse "zero_ckpt-world-inside-source" "$CK/sub is inside the source" "$ZK" convert "$CK" --world 3 "$CK/sub"
[ ! -e "$CK/sub" ] && ok "zero_ckpt-world-inside-nothing" || no "zero_ckpt-world-inside-nothing" "$CK/sub created"
refuse "zero_ckpt-world-source-inside-outdir" "the source .* is inside $W" "$ZK" convert "$STEP" --world 3 "$W" --force
writes "zero_ckpt-world-new" "$ZK" convert "$CK" --world 3 "$W/ck3"
refuse "zero_ckpt-world-not-empty" "$W/ck3 is not empty \(--force" "$ZK" convert "$CK" --world 3 "$W/ck3"
writes "zero_ckpt-world-force" "$ZK" convert "$CK" --world 2 "$W/ck3" --force
# beside the first save, as zero_save does: a new directory, `latest` moved to it
if [ "$(cat "$W/ck3/latest" 2>/dev/null)" = "$(cat "$W/latest.orig").1" ]; then ok "zero_ckpt-world-force-beside"
else no "zero_ckpt-world-force-beside" "$W/ck3/latest holds '$(cat "$W/ck3/latest" 2>/dev/null)'"; fi
# a checkpoint other than the source is a checkpoint too
refuse "zero_ckpt-st-other-checkpoint" "is inside the checkpoint directory $W/ck3" \
    "$ZK" convert "$CK" --safetensors "$W/ck3/model.safetensors" --force
: >"$W/afile"
refuse "zero_ckpt-world-outdir-file" "$W/afile exists and is not a directory" "$ZK" convert "$CK" --world 2 "$W/afile" --force
writes "zero_ckpt-import-new" "$ZK" import "$W/a.st" --world 2 --stage 3 "$W/imp"
refuse "zero_ckpt-import-not-empty" "$W/imp is not empty" "$ZK" import "$W/a.st" --world 2 --stage 3 "$W/imp"
writes "zero_ckpt-import-force" "$ZK" import "$W/a.st" --world 2 --stage 1 "$W/imp" --force
# a file holding a tensor of no elements ([0, 3]) beside one of four: the empty one is left out, not refused
{ printf '\170\000\000\000\000\000\000\000'
  printf '%-120s' '{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"z":{"dtype":"F32","shape":[0,3],"data_offsets":[16,16]}}'
  printf '\000\000\200\077\000\000\000\100\000\000\100\100\000\000\200\100'; } >"$W/empty.st"
writes "zero_ckpt-import-empty-tensor" "$ZK" import "$W/empty.st" --world 2 --stage 1 "$W/imp_empty"
grep -q '1 tensors, saved on 2 ranks' "$W/out" && ok "zero_ckpt-import-empty-tensor-count" ||
    no "zero_ckpt-import-empty-tensor-count" "$(head -c 300 "$W/out")"
# GPT-2's names: --world and --stage optional (1 and 0), --strip-prefix without its '.', the causal
# masks ([1, 1, T, T] bias, scalar masked_bias) left out with a line saying so unless --keep-buffers
{ printf '\020\001\000\000\000\000\000\000'
  printf '%-272s' '{"transformer.h.0.attn.bias":{"dtype":"F32","shape":[1,1,2,2],"data_offsets":[0,16]},"transformer.h.0.attn.c_attn.weight":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},"transformer.h.0.attn.masked_bias":{"dtype":"F32","shape":[],"data_offsets":[24,28]}}'
  for k in 1 2 3 4 5 6 7; do printf '\000\000\200\077'; done; } >"$W/gpt2.st"
writes "zero_ckpt-import-defaults" "$ZK" import "$W/gpt2.st" --strip-prefix transformer "$W/imp_gpt2"
if grep -q ': 1 tensors, saved on 1 ranks, stage 0, fp32' "$W/out" &&
    grep -q 'left out 2 causal-mask buffers (transformer.h.0.attn.bias ..., \[1, 1, 2, 2\]).*--keep-buffers' "$W/err"; then
    ok "zero_ckpt-import-buffers-left-out"
else no "zero_ckpt-import-buffers-left-out" "stdout: $(head -c 200 "$W/out"); stderr: $(head -c 300 "$W/err")"; fi
run "$ZK" inspect "$W/imp_gpt2"
if [ "$rc" -eq 0 ] && grep -Eq '^  h\.0\.attn\.c_attn\.weight +2' "$W/out" && ! grep -q '^  \.' "$W/out"; then
    ok "zero_ckpt-import-strip-prefix-dot"
else no "zero_ckpt-import-strip-prefix-dot" "exit $rc: $(head -c 300 "$W/out")"; fi
writes "zero_ckpt-import-keep-buffers" "$ZK" import "$W/gpt2.st" --strip-prefix transformer. --keep-buffers "$W/imp_gpt2k"
grep -q ': 3 tensors, saved on 1 ranks' "$W/out" && [ ! -s "$W/err" ] && ok "zero_ckpt-import-keep-buffers-count" ||
    no "zero_ckpt-import-keep-buffers-count" "$(head -c 300 "$W/out") $(head -c 300 "$W/err")"
refuse "zero_ckpt-import-in-checkpoint" "$CK/imp is inside the checkpoint directory $CK" \
    "$ZK" import "$W/a.st" --world 2 --stage 3 "$CK/imp" --force
mkdir -p "$W/model"
cp "$W/a.st" "$W/model/model.safetensors"
refuse "zero_ckpt-import-source-dir" "$W/model is the source itself" "$ZK" import "$W/model" --world 2 --stage 3 "$W/model" --force
refuse "zero_ckpt-import-inside-source" "$W/model/ck is inside the source" "$ZK" import "$W/model" --world 2 --stage 3 "$W/model/ck"
run "$ZK" verify "$CK"
if [ "$rc" -eq 0 ] && cmp -s "$CK/latest" "$W/latest.orig" && [ "$(ls "$CK")" = "latest
$(cat "$W/latest.orig")" ]; then ok "zero_ckpt-source-untouched"
else no "zero_ckpt-source-untouched" "verify exit $rc; $CK holds: $(ls "$CK" | tr '\n' ' ')"; fi

# ---- zero_layout ----
for h in --help -h; do help "zero_layout$h" "$ZL" "$h"; done
usage "zero_layout-no-model" '^zero_layout: give the model' "$ZL" --world 2
usage "zero_layout-unknown-flag" "^zero_layout: unknown argument '--wrld' \(did you mean --world\?\)$" "$ZL" --sizes 5,7 --wrld 2
version zero_layout "$ZL"
status1 "zero_layout-missing-config" "cannot open the config" "$ZL" --sizes 5,7 --config "$W/no-such.json"
usage "zero_layout-supply-hf-no-config" '^zero_layout: --supply-hf: only with --config' "$ZL" --sizes 5,7 --supply-hf
numbers zero_layout --mbs 1048577 "$ZL" --sizes 5,7 --config "$HF"
# an HF config's "auto" dtype: refused with the flags that answer it; --supply-hf (fp32) or --dtype answers it
status1 "zero_layout-hf-auto-dtype" 'supply-hf' "$ZL" --memory --mlp 2,8,8 --config "$HF" --hidden 8
run "$ZL" --memory --mlp 2,8,8 --config "$HF" --hidden 8 --supply-hf --mbs 4
if [ "$rc" -eq 0 ] && grep -q 'zero_memory_report' "$W/out"; then ok "zero_layout-supply-hf"
else no "zero_layout-supply-hf" "exit $rc: $(grep -v warning "$W/err" | head -c 300)"; fi
usage "zero_layout-missing-list" '^zero_layout: --sizes: missing value' "$ZL" --sizes
usage "zero_layout-twice" '^zero_layout: --sizes: given twice' "$ZL" --sizes 5 --sizes 7
usage "zero_layout-dtype" "^zero_layout: --dtype: 'fp8' is not" "$ZL" --memory --sizes 5,7 --dtype fp8
usage "zero_layout-memory-only" '^zero_layout: --gas: only with --memory' "$ZL" --sizes 5,7 --gas 2
usage "zero_layout-memory-world" '^zero_layout: --world: 2048 ranks' "$ZL" --memory --sizes 5,7 --world 2048
usage "zero_layout-memory-stage" '^zero_layout: --stage: --memory runs every stage' "$ZL" --memory --sizes 5,7 --stage 2
usage "zero_layout-sizes-item" "^zero_layout: --sizes: item 2 \('x'\)" "$ZL" --sizes 5,x
usage "zero_layout-sizes-huge" "^zero_layout: --sizes: item 1 \('99999999999999999999'\)" "$ZL" --sizes 99999999999999999999
usage "zero_layout-mlp-item" "^zero_layout: --mlp: item 3 \('-4'\)" "$ZL" --mlp 2,3,-4
usage "zero_layout-groups-item" "^zero_layout: --groups: item 1 \('1.5'\)" "$ZL" --sizes 5,7 --groups 1.5,2
usage "zero_layout-names-count" '^zero_layout: --names: 1 names, but --sizes has 2' "$ZL" --sizes 5,7 --names a
usage "zero_layout-frozen-item" "^zero_layout: --frozen: item 1 \('z'\)" "$ZL" --sizes 5,7 --frozen z
usage "zero_layout-locate-offset" "^zero_layout: --locate: " "$ZL" --sizes 5,7 --locate t1:x
usage "zero_layout-locate-outside" "^zero_layout: --locate: t1:7: " "$ZL" --sizes 5,7 --locate t1:7
usage "zero_layout-persist-stage" '^zero_layout: --persist: .*stage 3 only' "$ZL" --sizes 5,7 --persist 3
numbers zero_layout --world 1048577 "$ZL" --sizes 5,7
numbers zero_layout --stage 4 "$ZL" --sizes 5,7
numbers zero_layout --gas 1000001 "$ZL" --memory --sizes 5,7
numbers zero_layout --hidden 1048577 "$ZL" --sizes 5,7
numbers zero_layout --bucket 9000000000000001 "$ZL" --sizes 5,7
numbers zero_layout --persist 9000000000000001 "$ZL" --sizes 5,7 --stage 3
numbers zero_layout --model-persist 9000000000000001 "$ZL" --sizes 5,7 --stage 3
numbers zero_layout --max-live 9000000000000001 "$ZL" --memory --sizes 5,7
numbers zero_layout --prefetch 9000000000000001 "$ZL" --memory --sizes 5,7
run "$ZL" --sizes 5,7,3,300,1 --names a,b,c,d,e --bucket 64 --world 4 --locate d:100
if [ "$rc" -eq 0 ] && grep -q 'zero_layout_locate(d, 100) -> unit 2, rank 2, shard_offset 28' "$W/out"; then
    ok "zero_layout-runs"
else no "zero_layout-runs" "exit $rc: $(head -c 300 "$W/err")"; fi
run "$ZL" --sizes 5,7 --world 1048576 --bucket 9000000000000000 --stage 3 --persist 0
if [ "$rc" -eq 0 ]; then ok "zero_layout-range-top"; else no "zero_layout-range-top" "exit $rc: $(head -c 300 "$W/err")"; fi

# ---- zero_ckpt reads as zero_load does: latest that names another step's metadata, latest that is a FIFO ----
CK2=$W/ck_renamed
mkdir -p "$CK2" && cp -r "$STEP" "$CK2/step7" && printf 'step7\n' >"$CK2/latest"
run "$ZK" inspect "$CK2"
if [ "$rc" -eq 1 ] && grep -q "holds step $(cat "$CK/latest" | sed 's/^step//'), but .*latest names it as \"step7\"" "$W/err"; then
    ok "zero_ckpt-meta-of-another-step"
else no "zero_ckpt-meta-of-another-step" "exit $rc: $(head -c 300 "$W/err")"; fi
CK3=$W/ck_fifo
mkdir -p "$CK3" && cp -r "$STEP" "$CK3/" && mkfifo "$CK3/latest"
run timeout 20 "$ZK" inspect "$CK3"
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "latest: not a regular file (a FIFO" "$W/err"; then ok "zero_ckpt-latest-fifo"
else no "zero_ckpt-latest-fifo" "exit $rc: $(head -c 300 "$W/err")"; fi

# ---- zero_report ----
for h in --help -h; do help "zero_report$h" "$ZR" "$h"; done
usage "zero_report-unknown-flag" "^zero_report: unknown argument '--jsn' \(did you mean --json\?\)$" "$ZR" --jsn
usage "zero_report-nvme-missing-value" '^zero_report: --nvme: missing value' "$ZR" --nvme
usage "zero_report-nvme-empty-value" '^zero_report: --nvme: empty value' "$ZR" --nvme ""
usage "zero_report-nvme-size" "^zero_report: --nvme-size: '8x' is not a size" "$ZR" --nvme-size 8x
usage "zero_report-nvme-size-small" '^zero_report: --nvme-size: 1KB is out of range' "$ZR" --nvme-size 1KB
usage "zero_report-nvme-size-alone" '^zero_report: --nvme-size: only with --nvme PATH$' "$ZR" --nvme-size 8MiB
run "$ZR" --version
if [ "$rc" -eq 0 ] && [ "$(cat "$W/out")" = "zero_report (zero $(sed -n 's/^#define ZERO_VERSION_MAJOR  *//p' zero.h).$(sed -n \
    's/^#define ZERO_VERSION_MINOR  *//p' zero.h).$(sed -n 's/^#define ZERO_VERSION_PATCH  *//p' zero.h))" ]; then
    ok "zero_report-version"
else no "zero_report-version" "exit $rc: $(cat "$W/out")"; fi
# the report itself: exit 0 with or without a GPU; without the driver it says what zero does then
run "$ZR"
if [ "$rc" -eq 0 ] && [ ! -s "$W/err" ] && grep -q '^\[cpu\]$' "$W/out" && grep -q '^  adam_simd ' "$W/out" &&
    grep -q '^  memlock ' "$W/out"; then ok "zero_report-runs"
else no "zero_report-runs" "exit $rc: $(head -c 300 "$W/err")"; fi
if ! ls /dev/nvidia0 >/dev/null 2>&1 && ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
    if grep -q 'no NVIDIA driver: no GPU will be used; zero runs its host backend' "$W/out" &&
        grep -q '^  count  *0$' "$W/out"; then ok "zero_report-no-driver"
    else no "zero_report-no-driver" "$(grep -A1 -E '^  (driver|count) ' "$W/out")"; fi
fi
# JSON: one object with every section; parsed with python3 where it is, else its keys
run "$ZR" --json
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert set(d) >= {"zero", "cuda", "gpu", "cpu", "memory"}, sorted(d)
assert d["cpu"]["adam_simd"] in ("scalar", "avx2", "avx512")
assert isinstance(d["gpu"]["count"], int) and isinstance(d["memory"]["host"]["total_bytes"], int)
assert d["zero"]["notes"]["gpu_arch"]' "$W/out" >"$W/py" 2>&1
    pyrc=$?
else
    grep -q '"cpu": {' "$W/out" && grep -q '"adam_simd": "' "$W/out" && grep -q '"notes": {' "$W/out"
    pyrc=$?
fi
if [ "$rc" -eq 0 ] && [ "$pyrc" -eq 0 ]; then ok "zero_report-json"
else no "zero_report-json" "exit $rc: $(head -c 300 "$W/py" 2>/dev/null) $(head -c 300 "$W/out")"; fi
# the CPU Adam's path is the one /proc/cpuinfo's flags allow (zero_offload.h's rule:
# avx512 needs avx512f, bw and vl; avx2 needs avx2, fma and f16c); ZERO_NO_SIMD=1 forces scalar
if [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ]; then
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | sed 's/^[^:]*://') "
    has() { case $flags in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
    if has avx512f && has avx512bw && has avx512vl; then want=avx512
    elif has avx2 && has fma && has f16c; then want=avx2
    else want=scalar; fi
    got=$(env -u ZERO_NO_SIMD "$ZR" | sed -n 's/^  adam_simd  *//p')
    if [ "$got" = "$want" ]; then ok "zero_report-simd-cpuinfo"
    else no "zero_report-simd-cpuinfo" "zero_report says '$got', /proc/cpuinfo's flags say '$want'"; fi
    got=$(ZERO_NO_SIMD=1 "$ZR" | sed -n 's/^  adam_simd  *//p')
    if [ "$got" = scalar ]; then ok "zero_report-simd-off"; else no "zero_report-simd-off" "ZERO_NO_SIMD=1: '$got'"; fi
fi
# its CUDA, NCCL and NVML constants against the headers, where the toolkit is
CH=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$CH/include/cuda.h" ]; then
    if $CC -std=c11 -Wall -Wextra -Werror -I. -I"$CH/include" ${NCCL_HOME:+-I"$NCCL_HOME/include"} \
        -DZERO_REPORT_CHECK_HEADERS -c -o "$W/zr_headers.o" examples/zero_report/zero_report.c >"$W/zr_headers.log" 2>&1; then
        ok "zero_report-constants"
    else no "zero_report-constants" "$(grep -m3 error "$W/zr_headers.log")"; fi
fi
# the GPU sections against a stand-in driver and NVML (tests/zero_report_fake_driver.c): three GPUs
# of compute capability 9.0, 10.0 and 8.0 against the default GPU_ARCH sm_90, and their links
mkdir -p "$W/fake"
if $CC -shared -fPIC -Wall -Wextra -Werror -o "$W/fake/libcuda.so.1" tests/zero_report_fake_driver.c >"$W/fake.log" 2>&1 &&
    cp "$W/fake/libcuda.so.1" "$W/fake/libnvidia-ml.so.1"; then
    run env LD_LIBRARY_PATH="$W/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$ZR"
    if [ "$rc" -eq 0 ] && grep -Eq '^  count +3$' "$W/out" && grep -q 'CUDA 12\.8$' "$W/out" &&
        grep -q "driver 570.00.fake" "$W/out" && grep -A1 '^  gpu0 ' "$W/out" | grep -q "runs zero's sm_90 kernels natively" &&
        grep -A1 '^  gpu1 ' "$W/out" | grep -q 'run through PTX.*GPU_ARCH=sm_100 ' &&
        grep -A1 '^  gpu2 ' "$W/out" | grep -q 'do NOT run here .*GPU_ARCH=sm_80' &&
        grep -Eq '^  link0-1 +peer access yes, NVLink' "$W/out" &&
        grep -Eq '^  link0-2 +peer access yes, no NVLink, PCIe path PIX' "$W/out" &&
        grep -Eq '^  link1-2 +peer access no, no NVLink, PCIe path SYS' "$W/out"; then ok "zero_report-fake-gpus"
    else no "zero_report-fake-gpus" "exit $rc: $(head -c 200 "$W/err") $(sed -n '/^\[gpu\]/,/^\[cpu\]/p' "$W/out" | head -c 1200)"; fi
    run env LD_LIBRARY_PATH="$W/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$ZR" --json
    if [ "$rc" -eq 0 ] && { ! command -v python3 >/dev/null 2>&1 || python3 -m json.tool "$W/out" >/dev/null 2>&1; } &&
        grep -q '"gpu1": {"name": "Fake B200", [^}]*"runs_gpu_arch": "jit"}' "$W/out" &&
        grep -q '"link1-2": {"peer_access": false, "nvlink": false, "pcie_path": "SYS' "$W/out"; then
        ok "zero_report-fake-gpus-json"
    else no "zero_report-fake-gpus-json" "exit $rc: $(grep -o '"gpu": {.*' "$W/out" | head -c 600)"; fi
    run env LD_LIBRARY_PATH="$W/fake${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" FAKE_CUINIT=100 "$ZR"
    if [ "$rc" -eq 0 ] && grep -q 'cuInit: CUDA_ERROR_NO_DEVICE (100)' "$W/out" && grep -Eq '^  count +0$' "$W/out" &&
        grep -A1 '^  count ' "$W/out" | grep -q 'the driver sees no GPU'; then ok "zero_report-fake-no-device"
    else no "zero_report-fake-no-device" "exit $rc: $(grep -A1 -E '^  (driver|count) ' "$W/out")"; fi
else no "zero_report-fake-build" "$(head -c 300 "$W/fake.log")"; fi
# --nvme: free space and the speeds of a directory; nothing left in it
mkdir -p "$W/nvme"
run "$ZR" --nvme "$W/nvme" --nvme-size 8MiB
if [ "$rc" -eq 0 ] && grep -Eq "^  path  +$W/nvme " "$W/out" && grep -Eq '^  free  +[0-9.]+ GiB of ' "$W/out" &&
    grep -Eq '^  write  +[0-9.]+ GB/s \(8 MiB in ' "$W/out" && grep -Eq '^  read  +[0-9.]+ GB/s ' "$W/out" &&
    grep -Eq '(O_DIRECT|buffered)' "$W/out"; then ok "zero_report-nvme"
else no "zero_report-nvme" "exit $rc: $(head -c 300 "$W/err") $(sed -n '/^\[nvme\]/,$p' "$W/out" | head -c 400)"; fi
if [ -z "$(ls -A "$W/nvme")" ]; then ok "zero_report-nvme-clean"; else no "zero_report-nvme-clean" "$(ls -A "$W/nvme")"; fi
ln -s nvme "$W/nvme-link"
run "$ZR" --nvme "$W/nvme-link" --nvme-size 4MiB --json
if [ "$rc" -eq 0 ] && grep -q "\"resolved\": \"[^\"]*/nvme\"" "$W/out"; then ok "zero_report-nvme-symlink"
else no "zero_report-nvme-symlink" "exit $rc: $(head -c 300 "$W/err")"; fi
# probe_fails NAME PATTERN CMD...: exit 1, PATTERN (the path and why) on stderr, the report still on stdout
probe_fails() {
    name=$1; pat=$2; shift 2
    run "$@"
    if [ "$rc" -eq 1 ] && grep -Eq -- "$pat" "$W/err" && grep -q '^\[cpu\]$' "$W/out"; then ok "$name"
    else no "$name" "exit $rc (want 1), want /$pat/: $(head -c 300 "$W/err")"; fi
}
probe_fails "zero_report-nvme-no-such" "^zero_report: --nvme: $W/no-such: does not exist$" "$ZR" --nvme "$W/no-such"
: >"$W/nvme-file"
probe_fails "zero_report-nvme-file" "^zero_report: --nvme: $W/nvme-file: not a directory" "$ZR" --nvme "$W/nvme-file"
ln -s no-such "$W/nvme-dangling"
probe_fails "zero_report-nvme-dangling" "^zero_report: --nvme: $W/nvme-dangling: a symbolic link to no-such, which does not exist" \
    "$ZR" --nvme "$W/nvme-dangling"
if [ "$(id -u)" -ne 0 ]; then # root writes into a mode-000 directory anyway
    mkdir -p "$W/nvme-ro" && chmod 000 "$W/nvme-ro"
    probe_fails "zero_report-nvme-unwritable" "^zero_report: --nvme: $W/nvme-ro: not writable" "$ZR" --nvme "$W/nvme-ro"
    chmod 755 "$W/nvme-ro"
fi
# ---- zero_ckpt and the program's client state (test_ckpt --make puts some on each rank) ----
run "$ZK" inspect "$CK"
if [ "$rc" -eq 0 ] && grep -q '^  rank 1: loader (16 bytes), rng (8 bytes), epoch (8 bytes)$' "$W/out"; then
    ok "zero_ckpt-inspect-client"
else no "zero_ckpt-inspect-client" "exit $rc: $(head -c 300 "$W/out")"; fi
CK4=$W/ck_client
mkdir -p "$CK4" && cp -r "$STEP" "$CK4/" && cp "$CK/latest" "$CK4/latest" &&
    printf '\001' | dd of="$CK4/$(cat "$CK/latest")/client00001.zck" bs=1 seek=75 conv=notrunc 2>/dev/null
run "$ZK" verify "$CK4"
if [ "$rc" -eq 1 ] && grep -q 'client00001.zck: FAILED: .*body checksum mismatch' "$W/out"; then ok "zero_ckpt-verify-client"
else no "zero_ckpt-verify-client" "exit $rc: $(head -c 300 "$W/out")"; fi

# ---- cpu_adam (examples/bench): its flags, checked as the tools' are, but a
# bad value is one line on stderr (no usage after it) and exit 2 ----
build cpu_adam examples/bench/cpu_adam.c
if [ "$(cat "$W/build-cpu_adam.rc")" = 0 ]; then ok "build-cpu_adam"; else no "build-cpu_adam" "$(head -n 20 "$W/build-cpu_adam.log")"; fi
CA=$B/cpu_adam

# oneline NAME PATTERN CMD...: exit 2, nothing on stdout, stderr one line matching PATTERN
oneline() {
    name=$1; pat=$2; shift 2
    run "$@"
    if [ "$rc" -eq 2 ] && [ ! -s "$W/out" ] && [ "$(wc -l <"$W/err")" -eq 1 ] && grep -Eq -- "$pat" "$W/err"; then
        ok "$name"
    else
        no "$name" "exit $rc (want 2), want one line /$pat/; stderr: $(head -c 300 "$W/err"); stdout: $(head -c 100 "$W/out")"
    fi
}

# values TOOL FLAG OVER CMD...: numbers' bad values, each refused by oneline
values() { badvalues oneline "$@"; }

if [ -x "$CA" ]; then
    for h in --help -h; do help "cpu_adam$h" "$CA" "$h"; done
    usage "cpu_adam-unknown-flag" "^cpu_adam: unknown option '--iter'" "$CA" --iter 3
    values cpu_adam --iters 1000001 "$CA"
    values cpu_adam -n 1000001 "$CA"
    values cpu_adam --warmup 1000001 "$CA"
    values cpu_adam -w 1000001 "$CA"
    values cpu_adam --threads 4097 "$CA"
    values cpu_adam --budget 1e7 "$CA"
    values cpu_adam --params 2e13 "$CA"
    oneline "cpu_adam-iters-fraction" "^cpu_adam: --iters: '1.5' is not a whole number" "$CA" --iters 1.5
    oneline "cpu_adam-iters-zero" "^cpu_adam: --iters: 0 is out of range \(1 to 1000000\)$" "$CA" --iters 0
    oneline "cpu_adam-warmup-zero" "^cpu_adam: --warmup: 0 is out of range" "$CA" --warmup 0
    oneline "cpu_adam-threads-wraps" "^cpu_adam: --threads: 4294967297 is out of range" "$CA" --threads 4294967297
    oneline "cpu_adam-budget-zero" "^cpu_adam: --budget: 0 is out of range" "$CA" --budget 0
    oneline "cpu_adam-budget-inf" "^cpu_adam: --budget: 'inf' is not" "$CA" --budget inf
    oneline "cpu_adam-params-small" "^cpu_adam: --params: 63 is out of range" "$CA" --params 63
    oneline "cpu_adam-params-suffix" "^cpu_adam: --params: 20000G is out of range" "$CA" --params 64M,20000G
    oneline "cpu_adam-params-item-junk" "^cpu_adam: --params: '1Q' is not a count" "$CA" --params 64M,1Q
    oneline "cpu_adam-params-item-empty" "^cpu_adam: --params: item 2 is empty" "$CA" --params 64M,,1B
    oneline "cpu_adam-params-trailing-comma" "^cpu_adam: --params: item 2 is empty" "$CA" --params 64M,
    oneline "cpu_adam-params-17" "^cpu_adam: --params: more than 16 counts" \
        "$CA" --params 64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64
    oneline "cpu_adam-out-missing" "^cpu_adam: --out: missing value" "$CA" --out
    # valid values at the bounds and a tiny run: the counts it prints are the ones given
    # (1e5 rounds up to 100032, a multiple of 64; 1k is 1000 -> 1024; 1M is 2^20)
    run "$CA" --params 1e5,1k,1M --iters 1 --warmup 1 --threads 2 --budget 0.001 --no-single --out "$W/ca.txt"
    if [ "$rc" -eq 0 ] && grep -q '^# ---- 100032 parameters' "$W/out" && grep -q '^# ---- 1024 parameters' "$W/out" &&
        grep -q '^# ---- 1048576 parameters' "$W/out" &&
        grep -q '^iters 1$' "$W/ca.txt" && grep -q '^threads 2$' "$W/ca.txt"; then ok "cpu_adam-tiny-run"
    else no "cpu_adam-tiny-run" "exit $rc: $(head -c 300 "$W/err")"; fi
    run "$CA" --params 1e5 --iters 1
    if [ "$rc" -eq 0 ] && grep -q 'threads: .* and 1;' "$W/out"; then ok "cpu_adam-tiny-run-single"
    else no "cpu_adam-tiny-run-single" "exit $rc: $(head -c 300 "$W/err")"; fi
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
