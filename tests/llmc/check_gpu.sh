#!/bin/sh
# tests/llmc/check_gpu.sh - the GPU twin of tests/llmc/check.sh: llm.c's CUDA
# shape (tests/llmc/train_gpt2.cu, one GPU) ported onto zero
# (tests/llmc/train_gpt2_zero.cu, one process per GPU), as a test:
#   1. the port's diff against the unported program is at most 60 changed
#      lines, added plus removed;
#   2. both build with nvcc, the host code under -Wall -Wextra -Werror;
#   3. the unported program trains on the first visible GPU with 1 and 2
#      micro-batches per step;
#   4. the port trains at ZeRO stages 0-3 on 1 GPU and on the visible GPUs
#      (the largest of 2 and 4 that there are: the world divides the batch of
#      4; zero_cuda_launch_local starts one process per visible GPU), with 1
#      and 2 micro-batches per step, and prints the unported program's losses
#      (each within LOSS_BOUND relative) and its greedy samples (identical),
#      and writes weights within WEIGHT_BOUND of max|w| of the unported
#      program's.
#   sh tests/llmc/check_gpu.sh [build dir]        (from the repository root)
# Environment: NVCC (default nvcc), GPU_ARCH (default sm_90), NCCL_HOME (NCCL
# outside nvcc's search path: its include/ and lib/ or lib64/). Without a
# visible GPU (nvidia-smi lists none, or CUDA_VISIBLE_DEVICES is set and
# empty) it says so and exits 77, building nothing.
set -u
B=${1:-build/llmc_gpu}
NVCC=${NVCC:-nvcc}
GPU_ARCH=${GPU_ARCH:-sm_90}
NCCL_HOME=${NCCL_HOME:-}
# The bounds, check.sh's to start with: the port and the program run the same
# kernels; they differ in where Adam runs (zero's kernel against the
# program's) and, on several GPUs, in the order of the gradient sums (NCCL's
# reduction of each rank's share of the batch against one pass over all of
# it), so fp32 rounding may ask for more here than on host ranks.
LOSS_BOUND=1e-5   # each of the 20 losses, relative to the unported program's
WEIGHT_BOUND=1e-4 # max |w_port - w_program| over max |w_program|, the final weights
NPARAMS=28032     # the model's parameter count (train_gpt2.c's num_parameters)

. tests/lib.sh # gpu_none, gpu_list
if gpu_none; then
    echo "tests/llmc/check_gpu.sh: no GPU visible (nvidia-smi -L lists none, or CUDA_VISIBLE_DEVICES is empty): skipped (exit 77)"
    exit 77
fi
# The visible GPUs: CUDA_VISIBLE_DEVICES's list, else nvidia-smi's indices;
# the port runs on the first one and on the first W (W: 4, 2 or 1)
GPUS=$(gpu_list)
NGPU=$(echo "$GPUS" | tr ',' '\n' | grep -c .)
GPU0=$(echo "$GPUS" | cut -d, -f1)
if [ "$NGPU" -ge 4 ]; then W=4; elif [ "$NGPU" -ge 2 ]; then W=2; else W=1; fi
WORLDS=1
[ "$W" -gt 1 ] && WORLDS="1 $W"
export NCCL_NVLS_ENABLE=0 ZERO_TIMEOUT_S=120
# limit CMD...: CMD under a deadline of 120 s (coreutils timeout signals the
# whole process group: the port's forked ranks too), so a hang costs a run
if command -v timeout >/dev/null 2>&1; then
    limit() { timeout -k 10 120 "$@"; }
else
    limit() { "$@"; }
fi
NCCL_INC="" NCCL_LIB=""
if [ -n "$NCCL_HOME" ]; then
    NCCL_INC="-I$NCCL_HOME/include"
    NCCL_LIB="-L$NCCL_HOME/lib -L$NCCL_HOME/lib64 -Xlinker -rpath=$NCCL_HOME/lib -Xlinker -rpath=$NCCL_HOME/lib64"
fi
mkdir -p "$B" || exit 1
fail=0

n=$(diff -u tests/llmc/train_gpt2.cu tests/llmc/train_gpt2_zero.cu | grep '^[-+]' | grep -vc '^+++\|^---')
if [ "$n" -le 60 ]; then echo "ok    the port changes $n lines of the program (added plus removed; at most 60)"
else echo "FAIL  the port changes $n lines of the program (at most 60)"; fail=1; fi

# shellcheck disable=SC2086
if ! "$NVCC" -std=c++17 -O2 -arch="$GPU_ARCH" -Xcompiler -Wall,-Wextra,-Werror -I. $NCCL_INC \
    -o "$B/orig" tests/llmc/train_gpt2.cu >"$B/build.log" 2>&1; then
    echo "FAIL  nvcc tests/llmc/train_gpt2.cu (log: $B/build.log)"; tail -n 5 "$B/build.log"; exit 1
fi
# shellcheck disable=SC2086
if ! "$NVCC" -std=c++17 -O2 -arch="$GPU_ARCH" -Xcompiler -Wall,-Wextra,-Werror -I. $NCCL_INC \
    -o "$B/port" tests/llmc/train_gpt2_zero.cu $NCCL_LIB -lnccl >>"$B/build.log" 2>&1; then
    echo "FAIL  nvcc tests/llmc/train_gpt2_zero.cu (log: $B/build.log)"; tail -n 5 "$B/build.log"; exit 1
fi
echo "ok    built both programs (nvcc -arch=$GPU_ARCH, host code -Wall -Wextra -Werror)"

for g in 1 2; do
    rm -f "$B/orig$g.bin"
    CUDA_VISIBLE_DEVICES=$GPU0 limit "$B/orig" "$g" "$B/orig$g.bin" >"$B/orig$g.txt" 2>"$B/orig$g.err"
    rc=$?
    steps=$(grep -c '^step ' "$B/orig$g.txt")
    if [ "$rc" -ne 0 ] || [ "$steps" -ne 20 ]; then
        echo "FAIL  the unported program on GPU $GPU0, $g micro-batches: exit $rc, $steps losses"; tail -n 3 "$B/orig$g.err"; exit 1
    fi
    echo "ok    the unported program on GPU $GPU0, $g micro-batches: 20 losses, the last $(grep '^step 19:' "$B/orig$g.txt" | cut -d' ' -f5)"
done

runs=0
for st in 0 1 2 3; do
    printf '{"train_micro_batch_size_per_gpu": 1, "gradient_clipping": 0, "optimizer": {"type": "AdamW", "params": {"lr": 1e-3, "betas": [0.9, 0.999], "eps": 1e-8, "weight_decay": 0}}, "zero_optimization": {"stage": %d, "reduce_bucket_size": 3000, "stage3_param_persistence_threshold": 0}}\n' "$st" >"$B/s$st.json"
    for w in $WORLDS; do
        gpus=$(echo "$GPUS" | cut -d, -f1-"$w")
        for g in 1 2; do
            runs=$((runs + 1))
            rm -f "$B/port.bin"
            CUDA_VISIBLE_DEVICES=$gpus ZERO_LOCAL_GPUS=$w limit "$B/port" "$g" "$B/port.bin" "$B/s$st.json" >"$B/port.txt" 2>"$B/port.err"
            rc=$?
            if [ "$rc" -ne 0 ]; then
                echo "FAIL  stage $st, $w GPUs, $g micro-batches: exit $rc"; tail -n 3 "$B/port.err"; fail=1; continue
            fi
            r=$(awk -v ref="$B/orig$g.txt" -v bound="$LOSS_BOUND" '
                BEGIN { while ((getline l < ref) > 0) { split(l, f, " ")
                          if (f[1] == "step") want[++nw] = f[5]; else if (f[1] == "generated:") gen = gen l "|" } }
                $1 == "step" { got[++ng] = $5 } $1 == "generated:" { pg = pg $0 "|" }
                END { worst = 0; for (i = 1; i <= nw; i++) { d = got[i] - want[i]; if (d < 0) d = -d; d /= want[i]; if (d > worst) worst = d }
                      ok = ng == nw && nw == 20 && worst <= bound + 0 && pg == gen
                      printf "%s %d %.2g %s", ok ? "ok" : "bad", ng, worst, pg == gen ? "same" : "differ" }' "$B/port.txt")
            # the weights written at the end (every group gathered, rank 0 writes), against the unported program's
            wd=$(od -An -v -tf4 -w4 "$B/orig$g.bin" | paste - "$(od -An -v -tf4 -w4 "$B/port.bin" >"$B/port.f"; echo "$B/port.f")" |
                awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > md) md = d; a = $1 < 0 ? -$1 : $1; if (a > mw) mw = a; n++ }
                     END { printf "%d %.2g", n, mw ? md / mw : 1 }')
            case $r in
            ok*) if awk -v x="${wd#* }" -v n="${wd%% *}" -v want="$NPARAMS" -v bound="$WEIGHT_BOUND" 'BEGIN { exit !(n == want + 0 && x <= bound + 0) }'; then :
                 else r="bad (weights ${wd#* } of max|w|, $wd)"; fi ;;
            esac
            case $r in
            ok*) echo "ok    stage $st, $w GPUs, $g micro-batches: 20 losses within $(echo "$r" | cut -d' ' -f3) (relative) of the program's, samples the same, weights within ${wd#* } of max|w|" ;;
            *) echo "FAIL  stage $st, $w GPUs, $g micro-batches: $r"; fail=1 ;;
            esac
        done
    done
done
echo "llmc_gpu: $runs runs of the port"
exit $fail
