# tests/lib.sh - the counting helpers tests/run.sh and tests/gpu.sh share
# (sourced; needs $B, and pass / fail set to 0), and the visible GPUs that
# tests/check_gpu.sh and tests/llmc/check_gpu.sh ask for.

# T=name (make test T=test_engine; also T=tests/test_engine.c): a script runs
# only what it does with that one file. pick FILE... prints the files of the
# list that T names (every existing one without T); known FILE... counts a
# failure when T names none of them.
T=${T:-}
if [ -n "$T" ]; then T=$(basename "$T"); T=${T%.cu}; T=${T%.c}; fi
pick() {
    for f in "$@"; do
        [ -e "$f" ] || continue
        n=$(basename "$f"); n=${n%.*}
        if [ -z "$T" ] || [ "$n" = "$T" ]; then echo "$f"; fi
    done
}
known() {
    if [ -n "$T" ] && [ -z "$(pick "$@")" ]; then
        fail=$((fail + 1)); echo "FAIL  no test named $T here"
    fi
}

# step NAME CMD...: run a build or check command, count it.
step() {
    name=$1; shift
    if "$@" >"$B/log/$name.log" 2>&1; then
        pass=$((pass + 1)); echo "ok    $name"
    else
        fail=$((fail + 1)); echo "FAIL  $name: $*"; tail -n 60 "$B/log/$name.log"
    fi
}

# run NAME BIN...: run a test program, add its "N passed, N failed" counts
# (a missing line, or a non-zero exit with 0 failed, counts as one failure).
run() {
    name=$1; shift
    "$@" >"$B/log/$name.run.log" 2>&1
    run_count "$name" $?
}
# run_count NAME RC: the counts of NAME's log (run's second half)
run_count() {
    name=$1; rc=$2
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$B/log/$name.run.log" | tail -n 1)
    p=$(echo "$line" | sed -n 's/^\([0-9]*\) passed.*/\1/p'); p=${p:-0}
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p'); f=${f:-0}
    if [ -z "$line" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then f=$((f + 1)); fi
    pass=$((pass + p)); fail=$((fail + f))
    if [ "$f" -eq 0 ]; then echo "ok    $name ($p checks)"
    else echo "FAIL  $name (exit $rc): $line"; grep -v '^ok' "$B/log/$name.run.log" | tail -n 60; fi
}
# prun NAME BIN...: run, in the pool below (JOBS at once; environment settings
# through env(1)); prdone waits and counts each as run does, in the order
# they started. Most test programs keep one core busy: two at a time.
prnames=""
prun() {
    prn=$1; shift
    rm -f "$B/log/$prn.run.rc"
    prnames="$prnames $prn"
    pbuild "$prn.run-job" sh -c '"$@" >"$0" 2>&1; echo $? >"$0.rc-part"; mv "$0.rc-part" "$(dirname "$0")/$(basename "$0" .log).rc"' \
        "$B/log/$prn.run.log" "$@"
}
prdone() {
    wait
    for prn in $prnames; do
        run_count "$prn" "$(cat "$B/log/$prn.run.rc" 2>/dev/null || echo 1)"
    done
    prnames=""; pnames=""; pwhat=""
}

# Builds are most of a run's time: pbuild NAME CMD... starts one in the
# background (JOBS at once, default 2; output and status kept by name), and
# pdone waits for them and counts each as a step, in the order they started.
# A new build starts as soon as any running one ends (a pool, not pairs: a
# short build beside a long one left a core idle for the difference).
# A batch (the builds up to pdone) says what it builds when its first build
# starts, "building: TEXT" (pbatch TEXT before it; else the first build's
# name), so that a long batch is not silent.
JOBS=${JOBS:-2}
pnames=""
pwhat=""
pbatch() { pwhat=$*; }
prunning() { # how many of this batch's builds have no status yet
    pr=0
    for pn in $pnames; do [ -f "$B/log/$pn.rc" ] || pr=$((pr + 1)); done
    echo $pr
}
pbuild() {
    name=$1; shift
    [ -n "$pnames" ] || echo "building: ${pwhat:-$name ...}"
    rm -f "$B/log/$name.rc" "$B/log/$name.rc.part"
    ( "$@" >"$B/log/$name.log" 2>&1; echo $? >"$B/log/$name.rc.part"; mv "$B/log/$name.rc.part" "$B/log/$name.rc" ) &
    pnames="$pnames $name"
    while [ "$(prunning)" -ge "$JOBS" ]; do sleep 0.1; done
}
pdone() {
    wait
    for name in $pnames; do
        if [ "$(cat "$B/log/$name.rc" 2>/dev/null)" = 0 ]; then
            pass=$((pass + 1)); echo "ok    $name"
        else
            fail=$((fail + 1)); echo "FAIL  $name"; tail -n 60 "$B/log/$name.log"
        fi
    done
    pnames=""; pwhat=""
}

# gpu_none: true when no GPU is visible (nvidia-smi lists none, or
# CUDA_VISIBLE_DEVICES is set and empty). gpu_list: the visible GPUs,
# comma-separated: CUDA_VISIBLE_DEVICES's list, else nvidia-smi's indices.
gpu_none() {
    ! nvidia-smi -L 2>/dev/null | grep -q '^GPU' || { [ -n "${CUDA_VISIBLE_DEVICES+set}" ] && [ -z "$CUDA_VISIBLE_DEVICES" ]; }
}
gpu_list() {
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then echo "$CUDA_VISIBLE_DEVICES"
    else nvidia-smi -L | sed -n 's/^GPU \([0-9]*\):.*/\1/p' | paste -sd, -; fi
}
