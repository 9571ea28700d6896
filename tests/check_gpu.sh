#!/bin/sh
# tests/check_gpu.sh - what `make check-gpu` runs on a GPU machine: the main
# job's matrix in one command, one line per row (PASS / FAIL / SKIP, the name,
# the figure that decides it, the seconds it took), then a line for the
# ledger and "N passed, N failed"; non-zero exit on any failure. 6 to 7
# minutes on one H100 (docs/cuda.md, "make check-gpu" has the budget); every
# visible GPU is used.
#
#   build    build/gpt, build/minimal_cuda (make), tests/gpu_engine.cu and
#            tests/gpu_gpt.cu (nvcc as tests/gpu.sh builds them), in parallel
#   gpt_*    build/gpt on a 2-layer GPT (C 128, 2 heads, T 128, batch 4, the
#            byte vocabulary, the head tied to the embedding), 8 steps of this
#            repository's docs: stages 0-3 x fp32 / bf16 / fp16 x (no offload;
#            --offload-optimizer cpu at stages 1-3; both offloads at stage 3)
#            x (one GPU; every visible GPU when there are 2 or more). A row
#            passes when the program exits 0, all 8 losses are finite, the
#            last is below the first and, within one dtype and GPU count, the
#            final loss is stage 0's within a bound (relative, bound_of): the
#            stages compute the same function and differ only in the order
#            of their reductions and where Adam runs, so fp32 agrees to 1e-5
#            and fp16 / bf16, whose rounding of those sums shows in the
#            weights, to 1e-3 (on 1 and 2 H200s at da3199c every device row
#            equalled stage 0 exactly and the CPU optimizer's rows came within
#            9.1e-6: the bounds keep 100 times that for other GPU counts'
#            reduction orders). Three more rows per GPU count train with
#            other optimizers (bf16): Lion at stage 2 on its CPU path with
#            the optimizer offloaded and at stage 3 in the CUDA kernels (lr
#            1e-3), Lamb at stage 2 offloaded; and one more picks its
#            accumulation (--gas auto, stage 3, the optimizer offloaded):
#            finite losses that drop, no stage-0 loss to match.
#   xl_*     GPT-2 XL's shape (1.48e9 parameters with the byte vocabulary) on
#            one GPU, synthetic data: fp16 stage 3 with optimizer and
#            parameters offloaded to the CPU (T 128, batch 16), and bf16
#            stage 3 (T 1024, batch 8); each must train (exit 0, finite
#            losses), and its row shows the median step time of gpt's
#            summary line. The bf16 run again through the program's own
#            pointers (--zero-alloc): its losses within 1e-4 of the first's,
#            its step time and the ratio beside; with 2 or more GPUs, that
#            pair again on every GPU (xl_*_all). Run alone, after everything
#            else, so the times are the machine's.
#   hybrid   stage 3 with zero_optimization.mics_shard_size 2 (a --config
#            JSON in the log directory) on 4 GPUs, against the same config
#            flat: within 1e-4 (two levels of reduction against one ring:
#            another order of the fp32 sums), and bytes sent across the
#            groups. Fewer than 4 GPUs: a SKIP line (counted neither way).
#   windows  with 2 or more GPUs: bf16 stage 3 with ZERO_COLL_WINDOWS=1 (the
#            shard and a fixed gather pool in NCCL's symmetric windows) on
#            every GPU, and the same run without: the engine's note that it
#            took them, and the final loss of the run without, exactly.
#   hf_check sh examples/gpt/hf_check.sh, all of it (build/gpt against
#            transformers; needs torch and transformers).
#   tests    tests/gpu_engine, gpu_gpt and gpu_trainer with ZERO_TEST_QUICK=1,
#            run plainly (make test-gpu adds the sanitizers), and
#            build/minimal_cuda; tests/gpu_vm alone once hf_check is done
#            (it checks the GPU's free memory, which any other process on
#            the GPU moves): each passes on exit 0 and "N passed, 0 failed".
#   llmc_gpu sh tests/llmc/check_gpu.sh: llm.c's shape as a CUDA program and
#            its port onto zero (at most 60 changed lines), the port at
#            stages 0-3 x 1 and every GPU (up to 4) x 1 and 2 micro-batches
#            against the unported program's losses, samples and weights;
#            passes on exit 0 and its "llmc_gpu: N runs" line.
#
# Logs of each row go to build/check_gpu/ ($CHECK_GPU_DIR), its summary to
# build/check_gpu/summary.txt. With 0 failed it appends a line to
# tests/gpu_ledger.tsv (the columns are in that file's header): the commit is
# git's HEAD, refused when a tracked file under zero*.h, zero_cuda*.cuh,
# examples/ or tests/gpu_* differs from it; without git metadata (a copy of
# the tree) the commit is $CHECK_GPU_COMMIT, and the line says so and carries
# the files' fingerprint (sh tests/check_gpu.sh --fingerprint prints it; run
# it at that commit to compare). With $OUT set (a device machine's results
# folder), the ledger line, the summary and the logs are copied there too.
#
#   sh tests/check_gpu.sh                run it (make check-gpu)
#   sh tests/check_gpu.sh --dry-run      print the rows and their commands, run nothing (no GPU needed;
#                                        CHECK_GPU_NGPU=N plans for N GPUs)
#   sh tests/check_gpu.sh --fingerprint  the sha256 of the files a ledger line vouches for
#
# Without a visible GPU (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES is
# set and empty) it says so and exits 77, as tests/gpu.sh does.
set -u
cd "$(dirname "$0")/.." || exit 1

MODE=run
case "${1:-}" in
"") ;;
--dry-run) MODE=dry ;;
--fingerprint) MODE=fingerprint ;;
*)
    echo "usage: sh tests/check_gpu.sh [--dry-run | --fingerprint]" >&2
    exit 2
    ;;
esac

# The files a ledger line vouches for (the ledger itself aside: it grows with
# every line), as they lie here: in a clean checkout of a commit, the same
# list and bytes as on a copy of it (a copy's git metadata may be another
# commit's, so git is not asked).
VOUCHED="zero*.h zero_cuda*.cuh examples tests/gpu_* tests/check_gpu.sh tests/llmc"
vouched_files() {
    {
        for f in zero*.h zero_cuda*.cuh tests/gpu_* tests/check_gpu.sh; do
            [ -f "$f" ] && [ "$f" != tests/gpu_ledger.tsv ] && echo "$f"
        done
        find examples tests/llmc -type f ! -path '*/__pycache__/*' ! -name '*.pyc'
    } | LC_ALL=C sort
}
fingerprint() { vouched_files | while IFS= read -r f; do sha256sum "$f"; done | sha256sum | cut -c1-16; }
if [ "$MODE" = fingerprint ]; then
    echo "$(fingerprint)  ($(vouched_files | wc -l) files: $VOUCHED)"
    exit 0
fi

. tests/lib.sh # gpu_none, gpu_list
if [ "$MODE" = run ] && gpu_none; then
    echo "tests/check_gpu.sh: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty): skipped (exit 77)"
    exit 77
fi

# a commit the ledger line could not name is refused before the run, not after it (a short hash cannot be
# checked in a copy whose git metadata is another commit's)
if [ -n "${CHECK_GPU_COMMIT:-}" ] && ! echo "$CHECK_GPU_COMMIT" | grep -Eq '^[0-9a-f]{40}$'; then
    echo "tests/check_gpu.sh: CHECK_GPU_COMMIT '$CHECK_GPU_COMMIT' is not 40 hex digits: give the full hash (git rev-parse)"
    exit 2
fi

B=${BUILD:-build}
D=${CHECK_GPU_DIR:-$B/check_gpu}
NVCC=${NVCC:-nvcc}
GPU_ARCH=${GPU_ARCH:-sm_90}
NCCL_HOME=${NCCL_HOME:-}
GPT=$B/gpt
HF_CHECK=${HF_CHECK:-sh examples/gpt/hf_check.sh} # a command line (word-split)
LEDGER=tests/gpu_ledger.tsv
export NCCL_NVLS_ENABLE=0

# The bounds of the stage agreement (relative, on the final loss against
# stage 0's of the same dtype and GPU count); see the top comment
bound_of() {
    case $1 in
    fp32) echo 1e-5 ;;
    *) echo 1e-3 ;; # bf16, fp16
    esac
}

# The visible GPUs: CUDA_VISIBLE_DEVICES's list, else nvidia-smi's indices
if [ "$MODE" = dry ]; then
    n=${CHECK_GPU_NGPU:-1}
    GPUS=$(i=0; while [ $i -lt "$n" ]; do printf '%s%d' "$([ $i -gt 0 ] && echo ,)" $i; i=$((i + 1)); done)
else
    GPUS=$(gpu_list)
fi
NGPU=$(echo "$GPUS" | tr ',' '\n' | grep -c .)
GPU0=$(echo "$GPUS" | cut -d, -f1)
GPU4=$(echo "$GPUS" | cut -d, -f1-4)
if [ "$MODE" = dry ]; then
    GPU_NAMES="(dry run) x $NGPU"
else # "NVIDIA H100 80GB HBM3 x 1"; several kinds joined by ", "
    GPU_NAMES=$({ nvidia-smi --query-gpu=name --format=csv,noheader -i "$GPUS" 2>/dev/null ||
        nvidia-smi --query-gpu=name --format=csv,noheader | head -n "$NGPU"; } | sort | uniq -c |
        awk '{ c = $1; sub(/^ *[0-9]+ /, ""); printf "%s%s x %d", (NR > 1 ? ", " : ""), $0, c }')
fi

# a fresh start: only what an earlier run wrote is removed (CHECK_GPU_DIR may name any folder)
mkdir -p "$D" || exit 1
rm -rf "$D/hf_check" "$D/minimal.ckpt"
rm -f "$D"/*.log "$D"/*.jsonl "$D"/*.rc "$D"/*.s "$D"/rows_*.txt "$D"/summary.txt "$D"/data.txt "$D"/hybrid*.json
SUMMARY=$D/summary.txt
: >"$SUMMARY"
pass=0 fail=0 skip=0
T0=$(date +%s)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f\n", b - a }'; }
say() { echo "$*" | tee -a "$SUMMARY"; }
# row VERDICT NAME FIGURE SECONDS: one line of the result; PASS and FAIL count, SKIP does not
row() {
    case $1 in
    PASS) pass=$((pass + 1)) ;;
    SKIP) skip=$((skip + 1)) ;;
    *) fail=$((fail + 1)) ;;
    esac
    say "$(printf '%-4s  %-34s %6s s  %s' "$1" "$2" "$4" "$3")"
}
# limit SECONDS CMD...: CMD under a deadline (coreutils timeout, which signals
# the whole process group: gpt's forked ranks too), so a hang costs a row, not the run
if command -v timeout >/dev/null 2>&1; then
    limit() { timeout -k 10 "$@"; }
else
    limit() { shift; "$@"; }
fi
# job NAME SECONDS CMD...: CMD (output in $D/NAME.log) under limit; its exit
# status into NAME.rc and its seconds into NAME.s. In a dry run: the command.
job() {
    jn=$1 js=$2
    shift 2
    if [ "$MODE" = dry ]; then
        echo "    $jn: $*"
        return 0
    fi
    jt=$(now)
    limit "$js" "$@" >"$D/$jn.log" 2>&1 </dev/null
    echo $? >"$D/$jn.rc"
    since "$jt" >"$D/$jn.s"
}
rc_of() { cat "$D/$1.rc" 2>/dev/null || echo none; }
secs_of() { cat "$D/$1.s" 2>/dev/null || echo -; }

# The numbers, read with awk. fin(x) accepts only the text of a finite
# decimal number: mawk (Debian's awk) compares NaN as equal to, below and
# above everything (nan < 3, nan > 3 and nan == nan + 0 are all true), so no
# value is compared before fin() has read it, and a difference computed from
# two (1e400 - 1e400 is NaN) is read again. gpt's metrics write a non-finite
# number as null and name it in "nonfinite":[...], which counts too.
AWK_FIN='function fin(x) { x = x ""; return x ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
function abs(x) { return x < 0 ? -x : x }
function field(line, key) { if (!match(line, "\"" key "\":[^,}]*")) return ""; return substr(line, RSTART + length(key) + 3, RLENGTH - length(key) - 3) }'
# judge JSONL RC STEPS DROP REF BOUND LABEL: "PASS|FAIL<TAB>figure" for a
# gpt run: exit 0, STEPS step lines, every loss finite; with DROP 1 the last
# below the first; with REF (not "-"), the last within BOUND (relative) of
# REF, the final loss of LABEL
judge() {
    jf=$1
    [ -f "$jf" ] || jf=/dev/null
    awk -v rc="$2" -v want="$3" -v drop="$4" -v ref="$5" -v bound="$6" -v label="$7" "$AWK_FIN"'
    /"event":"step"/ { n++; v = field($0, "loss"); if (!fin(v)) bad++; if ($0 ~ /"nonfinite"/) nonfin++
                       if (n == 1) first = v; last = v }
    END {
        why = ""
        if (rc != "0") why = why "exit " rc "; "
        if (n != want) why = why n + 0 " of " want " steps; "
        if (bad || nonfin) why = why (bad > nonfin ? bad : nonfin) " losses not finite; "
        fig = n ? "loss " first " -> " last : "no loss"
        if (drop == 1 && fin(first) && fin(last) && !(last + 0 < first + 0)) why = why "no drop; "
        if (ref != "-") {
            if (!fin(ref)) why = why "no loss of " label " to compare; "
            else if (fin(last)) {
                d = abs(last - ref); r = (ref + 0 == 0) ? d : d / abs(ref)
                fig = fig sprintf(", vs %s %.2g (bound %s)", label, r, bound)
                if (!(fin(r) && fin(bound) && r <= bound + 0)) why = why "off " label "; "
            }
        }
        printf "%s\t%s%s\n", (why == "" ? "PASS" : "FAIL"), fig, (why == "" ? "" : " [" substr(why, 1, length(why) - 2) "]")
    }' "$jf"
}
last_loss() { [ -f "$1" ] && awk "$AWK_FIN"'/"event":"step"/ { v = field($0, "loss") } END { print v }' "$1"; }
# counted NAME: a test program's verdict from its "N passed, N failed" line and exit status
counted() {
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$D/$1.log" 2>/dev/null | tail -n 1)
    f=$(echo "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    if [ "$(rc_of "$1")" = 0 ] && [ -n "$line" ] && [ "$f" = 0 ]; then v=PASS; else v=FAIL; fi
    row $v "$1" "${line:-no result line}, exit $(rc_of "$1")" "$(secs_of "$1")"
}

say "check-gpu: $NGPU GPU(s): $GPU_NAMES; logs in $D"

# ---- builds, in parallel ----
NCCL_INC="" NCCL_LIB=""
if [ -n "$NCCL_HOME" ]; then
    NCCL_INC="-I$NCCL_HOME/include"
    NCCL_LIB="-L$NCCL_HOME/lib -L$NCCL_HOME/lib64 -Xlinker -rpath=$NCCL_HOME/lib -Xlinker -rpath=$NCCL_HOME/lib64"
fi
TESTS="gpu_engine gpu_gpt gpu_trainer gpu_vm"
mkdir -p "$B/g"
[ "$MODE" = dry ] && echo "builds:"
job build_gpt 600 make --no-print-directory BUILD="$B" "$B/gpt" &
pid_gpt=$!
job build_minimal_cuda 600 make --no-print-directory BUILD="$B" "$B/minimal_cuda" &
pids=$!
for t in $TESTS; do
    # shellcheck disable=SC2086 # the NCCL flags are several words
    job "build_$t" 600 "$NVCC" -std=c++17 -O2 -lineinfo -arch="$GPU_ARCH" -I. $NCCL_INC -o "$B/g/$t" "tests/$t.cu" \
        $NCCL_LIB -lnccl -lcublasLt -lcublas &
    pids="$pids $!"
done
[ "$MODE" = dry ] && wait # the commands in order
wait $pid_gpt
built() { [ "$MODE" = dry ] || [ "$(rc_of "build_$1")" = 0 ]; }

# ---- hf_check, in the background from here (the longest row, mostly Python and small runs) ----
if built gpt; then
    [ "$MODE" = dry ] && echo "hf_check (background):"
    # shellcheck disable=SC2086 # HF_CHECK is a command line
    job hf_check 600 env GPT_BIN="$GPT" $HF_CHECK "$D/hf_check" &
    pid_hf=$!
fi
# shellcheck disable=SC2086
wait $pids
for n in gpt minimal_cuda $TESTS; do
    [ "$MODE" = dry ] && continue
    if built "$n"; then row PASS "build_$n" "built" "$(secs_of "build_$n")"
    else row FAIL "build_$n" "$(tail -n 1 "$D/build_$n.log" 2>/dev/null)" "$(secs_of "build_$n")"; fi
done

# ---- the matrix (one lane on one GPU, several at once; one lane on every GPU), the tests beside ----
# the tokens: this repository's prose, copied once so that every row reads the same bytes
cat README.md docs/*.md >"$D/data.txt"
SMALL="--layers 2 --dim 128 --heads 2 --seq 128 --batch 4 --steps 8 --warmup 8 --print-every 1 --seed 7 --lr 2e-3"
SMALL="$SMALL --data $D/data.txt"
# rows of one GPU count: NAME ARGS (the offload spelled into the name)
matrix_rows() {
    for dt in fp32 bf16 fp16; do
        for st in 0 1 2 3; do
            echo "gpt_$1_${dt}_s$st --dtype $dt --stage $st"
            [ $st -ge 1 ] && echo "gpt_$1_${dt}_s${st}_optcpu --dtype $dt --stage $st --offload-optimizer cpu"
            [ $st = 3 ] && echo "gpt_$1_${dt}_s3_optcpu_paramcpu --dtype $dt --stage 3 --offload-optimizer cpu --offload-param cpu"
        done
    done
    # partial offload (offload_optimizer.ratio 0.5) with the parameters offloaded: the first units' Adam on the
    # device, their parameters kept there (zero_config.ratio_params_device); stage 0's loss within the bound
    echo "gpt_$1_bf16_s3_optcpu_paramcpu_ratio --dtype bf16 --stage 3 --offload-optimizer cpu --offload-param cpu --offload-ratio 0.5"
    # optimizers beside Adam, each its loss dropping (no stage-0 Adam loss to match): Lion on its CPU path under
    # the GPU's step and in the CUDA kernels at stage 3; Lamb (its per-tensor trust ratio) in the CUDA kernels at
    # stage 3 and on the CPU path (its loss against the first's)
    echo "gpt_$1_bf16_lion_s2_optcpu --dtype bf16 --stage 2 --offload-optimizer cpu --optimizer lion --lr 1e-3"
    echo "gpt_$1_bf16_lion_s3 --dtype bf16 --stage 3 --optimizer lion --lr 1e-3"
    echo "gpt_$1_bf16_lamb_s3 --dtype bf16 --stage 3 --optimizer lamb"
    echo "gpt_$1_bf16_lamb_s2_optcpu --dtype bf16 --stage 2 --offload-optimizer cpu --optimizer lamb"
    # Muon: its matrices orthogonalised by the device's muon_ns at stage 3; offloaded, the CPU's passes around it
    # (its loss against the first's)
    echo "gpt_$1_bf16_muon_s3 --dtype bf16 --stage 3 --optimizer muon"
    echo "gpt_$1_bf16_muon_s2_optcpu --dtype bf16 --stage 2 --offload-optimizer cpu --optimizer muon"
    # and over NVMe tiles (its units' tiles read twice, the updates in host memory between): the same loss
    echo "gpt_$1_bf16_muon_s2_optnvme --dtype bf16 --stage 2 --offload-optimizer nvme --nvme-path $D/nvme_$1 --optimizer muon"
    # the accumulation picked by a measured step (zero_set_train_batch_size; another batch: its loss drops)
    echo "gpt_$1_bf16_s3_optcpu_gasauto --dtype bf16 --stage 3 --offload-optimizer cpu --gas auto"
    # the options zero_estimate_plan picks for this machine (--auto: its choice printed; its loss drops)
    echo "gpt_$1_bf16_auto --dtype bf16 --auto"
    # bf16 master weights and optimizer state (the parameters are the master): stage 3 against stage 1, on
    # every GPU (on one when there is one)
    if [ "$1" != 1gpu ] || [ "$NGPU" -lt 2 ]; then
        echo "gpt_$1_bf16_bf16state_s1 --dtype bf16 --stage 1 --config $BF16S"
        echo "gpt_$1_bf16_bf16state_s3 --dtype bf16 --stage 3 --config $BF16S"
    fi
}
# gpt_job NAME GPUS SECONDS ARGS...: one run of build/gpt on the GPUs listed
gpt_job() {
    gn=$1 gg=$2 gs=$3
    shift 3
    job "$gn" "$gs" env CUDA_VISIBLE_DEVICES="$gg" ZERO_TIMEOUT_S=120 "$GPT" "$@" --metrics "$D/$gn.jsonl"
}
PAR=4 # runs at once in the one-GPU lane: the model is tiny, the runs are mostly start-up
lane_one() {
    k=0 lp=""
    while read -r name args; do
        # shellcheck disable=SC2086
        if [ "$MODE" = dry ]; then gpt_job "$name" "$GPU0" 180 $SMALL $args; continue; fi
        # shellcheck disable=SC2086
        gpt_job "$name" "$GPU0" 180 $SMALL $args &
        lp="$lp $!" k=$((k + 1))
        if [ $k -ge $PAR ]; then
            # shellcheck disable=SC2086
            wait $lp
            k=0 lp=""
        fi
    done <"$D/rows_1gpu.txt"
    # shellcheck disable=SC2086
    wait $lp
}
HYB=$D/hybrid.json FLAT=$D/hybrid_flat.json BF16S=$D/bf16_state.json
printf '{"bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}}\n' >"$BF16S"
printf '{"zero_optimization": {"stage": 3, "mics_shard_size": 2}}\n' >"$HYB"
printf '{"zero_optimization": {"stage": 3, "mics_shard_size": -1}}\n' >"$FLAT"
WIN=$D/windows.json # (a pool of fixed size: windows hold no pool that grows)
printf '{"zero_optimization": {"stage": 3, "stage3_max_live_parameters": 400000, "stage3_prefetch_bucket_size": 100000}}\n' >"$WIN"
lane_all() { # one at a time: each uses every GPU
    while read -r name args; do
        # shellcheck disable=SC2086
        gpt_job "$name" "$GPUS" 180 $SMALL $args
    done <"$D/rows_all.txt"
    if [ "$NGPU" -ge 2 ]; then # stage 3's gathers in NCCL's symmetric windows (ZERO_COLL_WINDOWS=1), and without
        for w in 1 0; do
            wn=windows_s3 && [ $w = 0 ] && wn=windows_s3_ref
            # shellcheck disable=SC2086
            job $wn 180 env CUDA_VISIBLE_DEVICES="$GPUS" ZERO_TIMEOUT_S=120 ZERO_COLL_WINDOWS=$w "$GPT" $SMALL \
                --dtype bf16 --stage 3 --config "$WIN" --metrics "$D/$wn.jsonl"
        done
    fi
    if [ "$NGPU" -ge 4 ]; then
        # shellcheck disable=SC2086
        gpt_job hybrid_flat "$GPU4" 180 $SMALL --dtype fp32 --config "$FLAT"
        # shellcheck disable=SC2086
        gpt_job hybrid_s3_G2 "$GPU4" 180 $SMALL --dtype fp32 --config "$HYB"
    fi
}
lane_tests() {
    built gpu_engine && job gpu_engine 300 env ZERO_TEST_QUICK=1 "$B/g/gpu_engine"
    built gpu_gpt && job gpu_gpt 300 env CUDA_VISIBLE_DEVICES="$GPU0" ZERO_TEST_QUICK=1 "$B/g/gpu_gpt"
    # the trainer of test_trainer.c on the CUDA backend (stage 3 in zero_alloc memory), the address ranges alone
    built gpu_trainer && job gpu_trainer 300 env ZERO_TEST_QUICK=1 "$B/g/gpu_trainer"
    rm -rf "$D/minimal.ckpt" && mkdir -p "$D/minimal.ckpt"
    built minimal_cuda && job minimal_cuda 120 "$B/minimal_cuda" "$D/minimal.ckpt"
    # the llm.c port's GPU twin (tests/llmc/train_gpt2.cu and its port): stages 0-3 x 1 and every GPU (up to 4)
    job llmc_gpu 420 env NVCC="$NVCC" GPU_ARCH="$GPU_ARCH" NCCL_HOME="$NCCL_HOME" sh tests/llmc/check_gpu.sh "$B/llmc_gpu"
}
# the rows of each lane, written before either starts
matrix_rows 1gpu >"$D/rows_1gpu.txt"
: >"$D/rows_all.txt"
[ "$NGPU" -ge 2 ] && matrix_rows "${NGPU}gpu" >"$D/rows_all.txt"
mkdir -p "$D/nvme_1gpu" "$D/nvme_${NGPU}gpu" # (the NVMe rows' nvme_path: it must exist)
if built gpt; then
    [ "$MODE" = dry ] && echo "the matrix, one GPU ($PAR at once):"
    lane_one &
    l1=$!
    if [ "$MODE" = dry ]; then wait $l1; echo "the matrix, every GPU (one at a time):"; fi
    # the tests after the every-GPU runs, not beside them (two NCCL jobs on one set of GPUs)
    { lane_all; [ "$MODE" = dry ] && echo "tests:"; lane_tests; } &
    wait $l1 $!
else
    lane_tests
fi

# the verdicts, stage 0 of each dtype and GPU count first (the others compare with it)
for rows in "$D/rows_1gpu.txt" "$D/rows_all.txt"; do
    while read -r name args; do
        g=$(echo "$name" | cut -d_ -f2)
        dt=$(echo "$name" | cut -d_ -f3)
        [ "$MODE" = dry ] && continue
        ref=- bound=- against="stage 0"
        case $name in
        *_s0 | *_lion_* | *_lamb_s3 | *_gasauto | *_auto | *_muon_s3 | *_bf16state_s1) ;;
        *_bf16state_*) # (bf16 master and state: not stage 0's loss; stage 3 against stage 1)
            ref=$(last_loss "$D/gpt_${g}_${dt}_bf16state_s1.jsonl")
            ref=${ref:-none} bound=$(bound_of "$dt") against="bf16 state at stage 1"
            ;;
        *_muon_* | *_lamb_*) # (Muon's and Lamb's losses are not Adam's: the offloaded run against the device's)
            o=$(echo "$name" | cut -d_ -f4)
            ref=$(last_loss "$D/gpt_${g}_${dt}_${o}_s3.jsonl")
            ref=${ref:-none} bound=$(bound_of "$dt") against="$( [ "$o" = muon ] && echo Muon || echo Lamb) at stage 3"
            ;;
        *)
            ref=$(last_loss "$D/gpt_${g}_${dt}_s0.jsonl")
            ref=${ref:-none}
            bound=$(bound_of "$dt")
            ;;
        esac
        v=$(judge "$D/$name.jsonl" "$(rc_of "$name")" 8 1 "$ref" "$bound" "$against")
        row "${v%%	*}" "$name" "${v#*	}" "$(secs_of "$name")"
    done <"$rows"
done
if [ "$MODE" = run ]; then
    if [ "$NGPU" -ge 2 ]; then
        # the gathers' buffers in windows copy the same bytes: the loss of the same run without windows, exactly;
        # the engine's note that the windows were taken (with none, the row would test nothing)
        ref=$(last_loss "$D/windows_s3_ref.jsonl")
        v=$(judge "$D/windows_s3.jsonl" "$(rc_of windows_s3)" 8 1 "${ref:-none}" 0 "the run without windows")
        grep -q 'ZERO_COLL_WINDOWS=1: the parameter shard .* in window memory' "$D/windows_s3.log" 2>/dev/null ||
            v="FAIL	${v#*	} [no windows taken: $(grep -m1 'ZERO_COLL_WINDOWS' "$D/windows_s3.log" 2>/dev/null | cut -c1-160)]"
        row "${v%%	*}" "windows_s3_bf16_${NGPU}gpu" "${v#*	}" \
            "$(awk -v p="$(secs_of windows_s3)" -v q="$(secs_of windows_s3_ref)" 'BEGIN { if (p ~ /^[0-9.]+$/ && q ~ /^[0-9.]+$/) printf "%.1f", p + q; else print "-" }')"
    fi
    if [ "$NGPU" -ge 4 ]; then
        ref=$(last_loss "$D/hybrid_flat.jsonl")
        # (1e-4: the groups reduce in two levels, the flat run in one ring: another order of the fp32 sums;
        # no 4-GPU run has measured it since the bounds came from the measured spread)
        v=$(judge "$D/hybrid_s3_G2.jsonl" "$(rc_of hybrid_s3_G2)" 8 1 "${ref:-none}" 1e-4 flat)
        # the bytes rank 0 sent across the groups in the last step: none would mean no hybrid at all
        x=$(awk "$AWK_FIN"'/"event":"comm"/ { g = field($0, "mics_shard_size"); r = field($0, "replica_bytes") }
            END { print ((g == "2" && fin(r) && r + 0 > 0) ? "ok" : "bad") "\t" r + 0 " B across groups" }' \
            "$D/hybrid_s3_G2.jsonl" 2>/dev/null)
        case $x in ok*) ;; *) v="FAIL	${v#*	} [mics_shard_size 2 not seen in the comm line]" ;; esac
        fv=$(judge "$D/hybrid_flat.jsonl" "$(rc_of hybrid_flat)" 8 1 - - -)
        case $fv in PASS*) ;; *) v="FAIL	${v#*	} [the flat twin: ${fv#*	}]" ;; esac
        row "${v%%	*}" "hybrid_s3_G2_fp32_4gpu" "${v#*	}, ${x#*	}" \
            "$(awk -v a="$(secs_of hybrid_flat)" -v b="$(secs_of hybrid_s3_G2)" 'BEGIN { printf "%.1f", a + b }')"
    else
        row SKIP "hybrid_s3_G2" "needs 4 GPUs, $NGPU visible" -
    fi
    for t in $TESTS minimal_cuda; do [ "$t" = gpu_vm ] || { built "$t" && counted "$t"; }; done
    # the llm.c twin: exit 0 and its count line; the lines of its runs that failed, if any
    line=$(grep -E '^llmc_gpu: [0-9]+ runs' "$D/llmc_gpu.log" 2>/dev/null | tail -n 1)
    if [ "$(rc_of llmc_gpu)" = 0 ] && [ -n "$line" ]; then v=PASS; else
        v=FAIL
        grep '^FAIL' "$D/llmc_gpu.log" 2>/dev/null | head -n 5 | sed 's/^/      /' | tee -a "$SUMMARY"
    fi
    row $v llmc_gpu "${line:-no result line}, $(grep -c '^ok' "$D/llmc_gpu.log" 2>/dev/null) ok lines, exit $(rc_of llmc_gpu)" \
        "$(secs_of llmc_gpu)"
fi

# ---- hf_check's result ----
if built gpt; then
    wait "$pid_hf"
    if [ "$MODE" = run ]; then
        line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$D/hf_check.log" | tail -n 1)
        if [ "$(rc_of hf_check)" = 0 ] && echo "$line" | grep -q ' 0 failed$'; then v=PASS; else
            v=FAIL
            grep 'FAIL$' "$D/hf_check.log" | sed 's/^/      /' | tee -a "$SUMMARY"
        fi
        row $v hf_check "${line:-no result line}, exit $(rc_of hf_check)" "$(secs_of hf_check)"
    fi
fi

# ---- gpu_vm, alone: it checks the GPU's free memory around backing and
# releasing (the driver's figure), which every other process on the GPU
# moves: beside hf_check and the matrix one run saw 550 MiB less after a
# release than before ----
if built gpu_vm; then
    [ "$MODE" = dry ] && echo "gpu_vm, alone:"
    job gpu_vm 120 env CUDA_VISIBLE_DEVICES="$GPU0" ZERO_TEST_QUICK=1 "$B/g/gpu_vm"
    [ "$MODE" = run ] && counted gpu_vm
fi

# ---- GPT-2 XL, alone: on one GPU, then stage 3 on every GPU ----
# xl_row NAME: exit 0, every loss finite (no drop asked: a few steps from a
# random start, fp16's first steps may be skipped), the median step time read
# from the metrics' end line
xl_row() {
    v=$(judge "$D/$1.jsonl" "$(rc_of "$1")" "$2" 0 - - -)
    x=$(awk "$AWK_FIN"'/"event":"end"/ { m = field($0, "median_step_ms"); t = field($0, "tokens_per_s_per_gpu")
                                          g = field($0, "gpu_peak_gib"); h = field($0, "host_peak_gib") }
        END { if (fin(m) && m + 0 > 0) printf "ok\tmedian step %s ms, %s tok/s, GPU %s GiB, host %s GiB\n", m, t, g, h
              else print "bad\tno step time" }' "$D/$1.jsonl" 2>/dev/null)
    case $x in ok*) ;; *) v="FAIL	${v#*	}" ;; esac
    row "${v%%	*}" "$1" "${x#*	}, ${v#*	}" "$(secs_of "$1")"
}
# za_pair NAME [SUFFIX]: NAME_zero_alloc SUFFIX and its repeat _r2 (through the program's pointers) against
# NAME SUFFIX and NAME SUFFIX_r2 (through zero_param), run interleaved: each one's losses within 1e-4 of its
# partner's, the median step times and the ratio of their sums beside (a process's step time differs from the
# next one's by up to 5% on 4 GPUs: one pair of runs cannot show 2%)
za_pair() {
    a=$1_zero_alloc${2:-} b=$1${2:-}
    # (not bitwise: with .data the fp32 master starts from the program's bf16 weights, rounded, as documented)
    v=$(judge "$D/$a.jsonl" "$(rc_of "$a")" "$XL_STEPS" 0 "$(last_loss "$D/$b.jsonl")" 1e-4 "zero_param's run")
    v2=$(judge "$D/${a}_r2.jsonl" "$(rc_of "${a}_r2")" "$XL_STEPS" 0 "$(last_loss "$D/${b}_r2.jsonl")" 1e-4 "zero_param's run")
    case $v2 in PASS*) ;; *) v="FAIL	${v#*	}; repeat: ${v2#*	}" ;; esac
    x=$(awk "$AWK_FIN"'/"event":"end"/ { m[FILENAME] = field($0, "median_step_ms") }
        END { for (k = 1; k < ARGC; k++) if (!fin(m[ARGV[k]]) || m[ARGV[k]] + 0 <= 0) { print "bad\tno step time"; exit }
              printf "ok\tmedian steps %s, %s ms (zero_param'"'"'s %s, %s ms; ratio %.3f)", m[ARGV[1]], m[ARGV[2]],
                     m[ARGV[3]], m[ARGV[4]], (m[ARGV[1]] + m[ARGV[2]]) / (m[ARGV[3]] + m[ARGV[4]]) }' \
        "$D/$a.jsonl" "$D/${a}_r2.jsonl" "$D/$b.jsonl" "$D/${b}_r2.jsonl" 2>/dev/null)
    case $x in ok*) ;; *) v="FAIL	${v#*	}" ;; esac
    row "${v%%	*}" "$a" "${x#*	}, ${v#*	}" \
        "$(awk -v p="$(secs_of "$a")" -v q="$(secs_of "${a}_r2")" 'BEGIN { if (p ~ /^[0-9.]+$/ && q ~ /^[0-9.]+$/) printf "%.1f", p + q; else print "-" }')"
}
if built gpt; then
    [ "$MODE" = dry ] && echo "GPT-2 XL, alone: one GPU (then stage 3 on every GPU, with 2 or more):"
    # the seed's recipe: 1.48e9 parameters loaded into pinned host memory; 5 steps, 2 of warm-up
    gpt_job xl_fp16_s3_offload "$GPU0" 300 --preset 1.5B --synthetic --dtype fp16 --stage 3 --offload-optimizer cpu \
        --offload-param cpu --seq 128 --batch 16 --steps 5 --warmup 2 --print-every 1 --seed 7
    # stage 3 at T 1024 through zero_param, and through the program's own pointers (zero_alloc): its losses equal,
    # its step time beside; the pair twice, interleaved, 12 steps each (4 of warm-up: a step is 0.2 s, the start 10 s)
    XL_STEPS=12
    XLS="--preset 1.5B --synthetic --dtype bf16 --stage 3 --seq 1024 --batch 8 --steps $XL_STEPS --warmup 4 --print-every 1 --seed 7"
    for r in "" _r2; do
        # shellcheck disable=SC2086
        gpt_job xl_bf16_s3_T1024$r "$GPU0" 300 $XLS
        # shellcheck disable=SC2086
        gpt_job xl_bf16_s3_T1024_zero_alloc$r "$GPU0" 300 $XLS --zero-alloc
    done
    if [ "$NGPU" -ge 2 ]; then # the pairs again on every GPU
        for r in "" _r2; do
            # shellcheck disable=SC2086
            gpt_job xl_bf16_s3_T1024_all$r "$GPUS" 300 $XLS
            # shellcheck disable=SC2086
            gpt_job xl_bf16_s3_T1024_zero_alloc_all$r "$GPUS" 300 $XLS --zero-alloc
        done
    fi
    if [ "$MODE" = run ]; then
        xl_row xl_fp16_s3_offload 5
        xl_row xl_bf16_s3_T1024 "$XL_STEPS"
        za_pair xl_bf16_s3_T1024
        if [ "$NGPU" -ge 2 ]; then
            xl_row xl_bf16_s3_T1024_all "$XL_STEPS"
            za_pair xl_bf16_s3_T1024 _all
        fi
    fi
fi
[ "$MODE" = dry ] && exit 0

# ---- the ledger ----
wall=$(($(date +%s) - T0))
result="$pass passed, $fail failed"
say "check-gpu: $result ($skip skipped), $wall s on $GPU_NAMES"
head=$(git rev-parse HEAD 2>/dev/null)
if [ -n "$head" ] && { [ -z "${CHECK_GPU_COMMIT:-}" ] || [ "$CHECK_GPU_COMMIT" = "$head" ]; }; then
    commit=$head
    how="git HEAD"
    dirty=$(git status --porcelain --untracked-files=no -- 'zero*.h' 'zero_cuda*.cuh' examples 'tests/gpu_*' \
        tests/check_gpu.sh tests/llmc ':!tests/gpu_ledger.tsv' 2>/dev/null)
elif [ -n "$head" ]; then
    # a copy whose git metadata is not the tree's (a device machine's copy of a working tree keeps the
    # .git of an older commit): the caller's commit, vouched for by the files' fingerprint
    commit=$CHECK_GPU_COMMIT dirty=""
    how="CHECK_GPU_COMMIT (this copy's git HEAD is $head); files $(fingerprint)"
    say "check-gpu: CHECK_GPU_COMMIT $CHECK_GPU_COMMIT is not this copy's HEAD ($head): the line names" \
        "CHECK_GPU_COMMIT with the files' fingerprint $(fingerprint) (sh tests/check_gpu.sh --fingerprint at that commit must print it)"
else
    commit=${CHECK_GPU_COMMIT:-} dirty=""
    how="CHECK_GPU_COMMIT, no git metadata here; files $(fingerprint)"
    say "check-gpu: no git metadata here: the commit is CHECK_GPU_COMMIT (${commit:-unset}), not checked against" \
        "these files; their fingerprint is $(fingerprint) (sh tests/check_gpu.sh --fingerprint at that commit must print it)"
fi
line=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$commit" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$GPU_NAMES" "$result" "$wall" "$how")
if [ "$fail" -ne 0 ]; then
    say "ledger: not appended ($fail failed)"
elif ! echo "$commit" | grep -Eq '^[0-9a-f]{40}$'; then
    say "ledger: not appended: no commit (no git metadata and CHECK_GPU_COMMIT is '${commit}', not 40 hex digits)"
elif [ -n "$dirty" ]; then
    say "ledger: not appended: these tracked files differ from $commit, so the line would vouch for a commit that was not run:"
    echo "$dirty" | sed 's/^/      /' | tee -a "$SUMMARY"
    # (the usual cause: CHECK_GPU_COMMIT taken from a copy's stale git metadata, not from where the commit lives)
    [ -n "${CHECK_GPU_COMMIT:-}" ] &&
        say "ledger: CHECK_GPU_COMMIT is this copy's HEAD, which is not these files: give the full hash of the" \
            "commit they are (git rev-parse HEAD in the checkout the copy came from); their fingerprint is" \
            "$(fingerprint) (sh tests/check_gpu.sh --fingerprint there must print it)"
else
    printf '%s\n' "$line" >>"$LEDGER"
    say "ledger: appended to $LEDGER: $line"
    if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
        printf '%s\n' "$line" >"$OUT/gpu_ledger_line.tsv"
        say "ledger: the line is also in \$OUT/gpu_ledger_line.tsv (append it to $LEDGER where the commit lives)"
    fi
fi
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then # the summary and the small logs come back with the results
    cp "$SUMMARY" "$OUT/check_gpu_summary.txt"
    (cd "$D" && find . -type f \( -name '*.log' -o -name '*.jsonl' -o -name '*.tsv' -o -name '*.json' \) -size -4M |
        tar czf "$OUT/check_gpu_logs.tgz" -T -) 2>/dev/null
fi
say "$result"
[ "$fail" -eq 0 ]
