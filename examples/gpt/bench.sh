#!/bin/sh
# examples/gpt/bench.sh - the runs behind docs/PERF.md's GPT tables (device
# machine). Every figure is the median step time after warm-up, from CUDA
# events; JSONL of each run lands in $DIR (default build/gpt_bench), then
# examples/gpt/plot.py draws them and examples/gpt/results.py makes
# $DIR/results.tsv, the table docs/results/ keeps (the logs stay in build/).
#
#   sh examples/gpt/bench.sh one      one GPU (H100): stage 0 MFU of GPT-2 XL;
#                                     a 6.4B model that stage 0 cannot hold,
#                                     trained with ZeRO-3 + CPU offload
#   sh examples/gpt/bench.sh two      2 GPUs (H200): stages 0-3 loss curves;
#                                     the largest micro-batch per stage; 1 vs 2
#                                     GPUs per stage; ZeRO-2/3 vs PyTorch FSDP2
#   sh examples/gpt/bench.sh four     4 GPUs: the scale suite below (its runs before 2026-11-29: zero's stages on 1
#                                     and 4 GPUs alone, the runs of docs/results/h200x4.tsv)
#   sh examples/gpt/bench.sh scale    every visible GPU (N >= 2): GPT-2 XL (T 1024, bf16, micro-batch 8 per GPU),
#                                     zero stages 1-3 on one GPU and on N, stage 3 with mics_shard_size N/2 (N >= 4),
#                                     DeepSpeed ZeRO-2/3 (its default buckets, and --hf-auto: the buckets and prefetch
#                                     HF's integration sets for this width) and FSDP2 (each block fully_shard-ed and compiled, reshard 0
#                                     and 1) on one GPU and on N; then examples/gpt/scale_table.py's table (tokens/s per GPU,
#                                     MFU, memory, scaling, zero over the best peer) and $DIR/gpt_scale.png (~8 min)
#   sh examples/gpt/bench.sh stages   only the stages 0-3 loss curves
#   sh examples/gpt/bench.sh hybrid   every visible GPU (2 or more): GPT-2 XL, micro-batch 8, stages 2 and 3,
#                                     mics_shard_size 1, N/2 (N >= 4) and N (flat): the step and the bytes
#                                     each rank sent inside its group and across groups
#   sh examples/gpt/bench.sh timeline where each step's communication goes: GPT-2 XL (T 1024, bf16, micro-batch 8)
#                                     at stages 2 and 3 on one GPU and on every visible GPU, step 5 timed by
#                                     ZERO_TIMELINE (docs/observability.md): a Chrome trace per rank in
#                                     $DIR/tl_stage<s>_<n>gpu.rank<r>.json and rank 0's summary line (~1.5 min)
#   sh examples/gpt/bench.sh groups   GPT-2 XL (T 1024, bf16, micro-batch 8) at stage 3 on one GPU and on every
#                                     visible GPU: the groups of collectives (the default) against ZERO_COLL_GROUP=0
#                                     (each collective alone); stage 2 on every GPU: the step's gathers under its Adam
#                                     (the default) against ZERO_STEP_OVERLAP=0; each pair run twice interleaved, the
#                                     ratio of the summed medians (~4 min on 2 GPUs)
#   sh examples/gpt/bench.sh ctas     GPT-2 XL (T 1024, bf16, micro-batch 8) at stages 2 and 3 on every visible GPU
#                                     with NCCL_MAX_CTAS unset, 16, 8 and 4: the SMs NCCL's kernels take from the
#                                     compute they overlap, against the collectives' own speed (~2.5 min on 4 GPUs)
#   sh examples/gpt/bench.sh tied     GPT-2 XL stage 3 (one GPU and every visible GPU) and the seed's offload
#                                     recipe, the tied embedding found by the engine against --grad-any-order
#                                     (planned at create), each pair REPS times (default 1: ~3 min on 2 GPUs)
#   sh examples/gpt/bench.sh offload  one GPU: zero beside DeepSpeed (baseline/deepspeed_gpt.py) on the
#                                     seed's offload recipe (GPT-2 XL, T 128, micro-batch 16, fp16,
#                                     ZeRO-3 + optimizer and parameter offload to the CPU), ZeRO-2 +
#                                     optimizer offload, and ZeRO-2 / ZeRO-3 without offload (T 1024,
#                                     bf16, micro-batch 8); needs deepspeed importable. Each zero offload
#                                     run prints its floor (zero_floor_of) beside its median step
#   sh examples/gpt/bench.sh offload-recipes   only the offload recipes of `offload` (zero and DeepSpeed)
#   sh examples/gpt/bench.sh offload-capacity  only the largest model of ZeRO-3 with both offloads
#                                     (bench_offload --capacity --placements cpu+param, about 3 minutes)
#   sh examples/gpt/bench.sh offload-n  every visible GPU (N >= 2): the seed's recipe (ZeRO-3 + both offloads, fp16,
#                                     T 128, micro-batch 16 per GPU) and ZeRO-2 + optimizer offload, zero (every rank's
#                                     floor lines) beside DeepSpeed (default buckets and --hf-auto; needs deepspeed),
#                                     each rank's CPU optimizer on its shard with its share of the host's cores
#   BENCH_CODE=<hash> names the code in results.tsv where the checkout's git metadata is not the tree's
#   The one-GPU targets below (one, offload*, fast*, recompute*, biggest, biggest-zero, biggest-torch,
#   torch-smoke) run on the first visible GPU of a machine of several (CUDA_VISIBLE_DEVICES's first entry, or 0)
#   sh examples/gpt/bench.sh offload-ratio  one GPU: offload_optimizer.ratio as `zero_estimate --time --plan
#                                     --offload cpu` chooses it for this GPU, against ratio 1 (all on the CPU),
#                                     twice interleaved: the seed's recipe, and the 6.65e9 GPT (V 50304, T 1024,
#                                     micro-batch 8, recompute, ZeRO-3 + optimizer offload); each run's floor;
#                                     then that GPT with gpt --auto --tokens 131072 (about 7 minutes on one H100)
#   sh examples/gpt/bench.sh offload-scale  one GPU: a 6.65e9 GPT with ZeRO-3 and both offloads at T 1024,
#                                     micro-batch 8, recompute, accumulation 1, 4 (the micro-batches added on the
#                                     device and, ZERO_GRAD_ACC=host, in host memory) and 8, each with its floor,
#                                     then without offload where it fits (about 8 minutes on one H200)
#   One H100, zero against PyTorch on GPT-2 XL (T 1024, bf16, V 256, synthetic tokens): baseline/fsdp2_gpt.py
#   --plain 1 (one GPU, bf16 autocast), FSDP2 on one GPU (reshard_after_forward $FSDP2_RESHARD, default 0), and
#   DeepSpeed where it is importable. Each target ends with a table: tokens/s, MFU, GPU memory, and zero's
#   tokens/s over the best PyTorch run's. Each target's every run is cut by timeout; the wall times are
#   estimates, with build/gpt already built:
#   sh examples/gpt/bench.sh fast         micro-batch 8: zero stage 2, PyTorch, FSDP2, DeepSpeed ZeRO-2 (~3 min)
#   sh examples/gpt/bench.sh fast-max     each at its own largest micro-batch (--find-max-batch): zero stage 2,
#                                         PyTorch, FSDP2 (~3-4 min)
#   sh examples/gpt/bench.sh fast-max-ds  DeepSpeed ZeRO-2 at its largest micro-batch (a fresh engine per trial
#                                         in one process; ~3-5 min)
#   sh examples/gpt/bench.sh recompute    activation checkpointing per block (zero --recompute, PyTorch
#                                         --checkpoint-activations 1) at micro-batch 8 and at the largest
#                                         (~5-6 min; recompute-zero and recompute-torch are its halves)
#   sh examples/gpt/bench.sh biggest      the most layers at C 4096, 32 heads, T 1024, micro-batch 1 that train
#                                         on one GPU without offload: zero stage 2 and PyTorch, each with and
#                                         without recompute (2-step trials; ~5-7 min; biggest-zero and
#                                         biggest-torch are its halves)
#   sh examples/gpt/bench.sh biggest-n    every visible GPU (2 or more): the most layers at C 4096, T 1024, micro-batch 1
#                                         that zero and DeepSpeed ZeRO-3 train, without offload and with both
#                                         offloads to the CPU; zero's search starts at the estimator's plan (a trial
#                                         of up to BIG_TRIAL_S, default 240 s, per size; long: minutes per trial
#                                         with offload)
#   sh examples/gpt/bench.sh torch-smoke  the PyTorch baselines' modes on 124M, a few steps each (~2 min)
set -u
what=${1:-two}
B=${BUILD:-build}
DIR=${DIR:-$B/gpt_bench}
export NCCL_NVLS_ENABLE=${NCCL_NVLS_ENABLE:-0}
mkdir -p "$DIR"
make --no-print-directory "$B/gpt" >/dev/null || exit 1
G="$B/gpt"
XL="--preset 1.5B --synthetic --dtype bf16"
BIG="--layers 32 --dim 4096 --heads 32 --synthetic --dtype bf16" # 6.4e9 parameters
rc=0
run() { # NAME ARGS...: one run of gpt, its output in $DIR/NAME.log
    name=$1; shift
    echo "== $name: $*"
    "$@" >"$DIR/$name.log" 2>&1 || { echo "   (exit $?)"; rc=1; }
    grep -E "^(summary|find-max|gpt:|memory|floor:|floor rank|comm:)" "$DIR/$name.log" | sed 's/^/   /'
    grep -iE "error|fail|hint" "$DIR/$name.log" | head -5 | sed 's/^/   /'
}

ds() { # NAME ARGS...: one run of the DeepSpeed baseline, its output in $DIR/NAME.log
    name=$1; shift
    echo "== $name: deepspeed_gpt.py $*"
    # DeepSpeed's version parser refuses "9.0a" (what torch reports for Hopper): its fused Adam builds for 9.0
    TORCH_CUDA_ARCH_LIST=${DS_CUDA_ARCH_LIST:-9.0} python3 examples/gpt/baseline/deepspeed_gpt.py "$@" \
        --metrics "$DIR/$name.jsonl" >"$DIR/$name.log" 2>&1 || { echo "   (exit $?)"; rc=1; }
    grep -E "^deepspeed_gpt: deepspeed-|^OOM" "$DIR/$name.log" | sed 's/^/   /'
    grep -E "Error|error:" "$DIR/$name.log" | tail -3 | sed 's/^/   /'
}

offload() { # zero and DeepSpeed on one GPU, the same model, data and step
    offload_recipes
    offload_capacity
    no_offload
}

offload_capacity() { # the largest model ZeRO-3 with both offloads trains on this GPU (bench_offload's plan and trials)
    make --no-print-directory "$B/bench/bench_offload" >/dev/null || { rc=1; return; }
    run capacity_cpu_param "$B/bench/bench_offload" --capacity --placements cpu+param --steps 2 --deadline-s 60 \
        --trial-timeout-s 150
    grep -E "^  cpu\+param|^# target" "$DIR/capacity_cpu_param.log" | sed 's/^/   /'
}

offload_recipes() { # the seed's recipe and ZeRO-2 + optimizer offload: zero (with its floor) and DeepSpeed
    SEED="--preset 1.5B --seq 128 --batch 16 --dtype fp16"
    run seed_zero $G $SEED --synthetic --stage 3 --offload-optimizer cpu --offload-param cpu --steps 10 --warmup 3 \
        --print-every 5 --metrics "$DIR/seed_zero.jsonl"
    run seed_zero_no_overlap $G $SEED --synthetic --stage 3 --offload-optimizer cpu --offload-param cpu --steps 10 --warmup 3 \
        --print-every 5 --no-overlap-cpu-step --metrics "$DIR/seed_zero_no_overlap.jsonl"
    ds seed_ds $SEED --stage 3 --offload-optimizer cpu --offload-param cpu --steps 6 --warmup 2
    ds seed_ds_hfauto $SEED --stage 3 --offload-optimizer cpu --offload-param cpu --steps 6 --warmup 2 --hf-auto
    run z2off_zero $G $SEED --synthetic --stage 2 --offload-optimizer cpu --steps 10 --warmup 3 --print-every 5 \
        --metrics "$DIR/z2off_zero.jsonl"
    ds z2off_ds $SEED --stage 2 --offload-optimizer cpu --steps 6 --warmup 2
    # the same with zero's delayed parameter update (the CPU Adam of step t beside step t+1's forward and backward)
    printf '{"train_micro_batch_size_per_gpu":16,"zero_optimization":{"offload_optimizer":{"device":"cpu","delayed_param_update":true}}}\n' \
        >"$DIR/z2dpu.json"
    run z2dpu_zero $G $SEED --synthetic --stage 2 --config "$DIR/z2dpu.json" --steps 10 --warmup 3 --print-every 5 \
        --metrics "$DIR/z2dpu_zero.jsonl"
}

offload_n() { # the seed's recipe and ZeRO-2 + optimizer offload on every visible GPU: zero (each rank's floor) and
    # DeepSpeed (its default buckets and --hf-auto), each rank's CPU optimizer on its shard
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$N" -lt 2 ]; then echo "== offload-n: needs 2 or more GPUs, $N visible"; rc=1; return; fi
    all=$(seq -s, 0 $((N - 1)))
    SEED="--preset 1.5B --seq 128 --batch 16 --dtype fp16"
    run on_seed_zero env CUDA_VISIBLE_DEVICES="$all" timeout -k 10 300 $G $SEED --synthetic --stage 3 \
        --offload-optimizer cpu --offload-param cpu --steps 10 --warmup 3 --print-every 5 --metrics "$DIR/on_seed_zero.jsonl"
    run on_z2_zero env CUDA_VISIBLE_DEVICES="$all" timeout -k 10 300 $G $SEED --synthetic --stage 2 \
        --offload-optimizer cpu --steps 10 --warmup 3 --print-every 5 --metrics "$DIR/on_z2_zero.jsonl"
    if have_ds on_ds; then
        ptn on_seed_ds 300 deepspeed_gpt.py $SEED --stage 3 --offload-optimizer cpu --offload-param cpu --steps 6 --warmup 2
        ptn on_seed_ds_hf 300 deepspeed_gpt.py $SEED --stage 3 --offload-optimizer cpu --offload-param cpu --steps 6 \
            --warmup 2 --hf-auto
        ptn on_z2_ds 300 deepspeed_gpt.py $SEED --stage 2 --offload-optimizer cpu --steps 6 --warmup 2
    fi
    echo "== the seed's recipe on $N GPUs (zero over the faster DeepSpeed):"
    table on_seed_zero on_seed_ds on_seed_ds_hf
    echo "== ZeRO-2 + optimizer offload on $N GPUs:"
    table on_z2_zero on_z2_ds
}

offload_ratio() { # the plan's offload_optimizer.ratio against all on the CPU, on one GPU
    E="$B/zero_estimate"
    make --no-print-directory "$E" >/dev/null || { rc=1; return; }
    case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) in
    *H200*) mach=h200 ;;
    *) mach=h100 ;;
    esac
    # the ratio of the plan's one-GPU row (its offload column: "cpu 0.4", "cpu+param 0.4", or "cpu" for 1; an h
    # after the ratio, the kept units' parameters on the host too, is zero_config's, which gpt leaves at its default)
    pick() { "$E" --time --plan --offload cpu --machine $mach --gpus 1 "$@" |
        awk '$1 == 1 && $2 == 1 { r = $6; sub(/h$/, "", r); print ($5 ~ /^cpu/ && r ~ /^0\./) ? r : 1 }'; }
    SEEDP="--params 1476176000 --layers 48 --hidden 1600 --vocab 256 --seq 128 --batch 16 --dtype fp16"
    BIGP="--params 6654402560 --layers 32 --hidden 4096 --vocab 50304 --seq 1024 --batch 8"
    rs=$(pick $SEEDP)
    rb=$(pick $BIGP)
    echo "== the plan's ratio on $mach: the seed's recipe ${rs:-?}, the 6.65e9 GPT ${rb:-?}"
    [ -n "$rs" ] && [ -n "$rb" ] || { echo "   (zero_estimate gave no ratio)"; rc=1; return; }
    SEED="--preset 1.5B --seq 128 --batch 16 --dtype fp16 --synthetic --stage 3 --offload-optimizer cpu --offload-param cpu"
    S="$BIG --vocab 50304 --stage 3 --seq 1024 --batch 8 --recompute --offload-optimizer cpu"
    for rep in 1 2; do
        run ratio_seed_all_$rep $G $SEED --steps 10 --warmup 3 --metrics "$DIR/ratio_seed_all_$rep.jsonl"
        run ratio_seed_plan_$rep $G $SEED --offload-ratio "$rs" --steps 10 --warmup 3 \
            --metrics "$DIR/ratio_seed_plan_$rep.jsonl"
    done
    for rep in 1 2; do
        run ratio_big_all_$rep $G $S --steps 4 --warmup 1 --metrics "$DIR/ratio_big_all_$rep.jsonl"
        run ratio_big_plan_$rep $G $S --offload-ratio "$rb" --steps 4 --warmup 1 \
            --metrics "$DIR/ratio_big_plan_$rep.jsonl"
    done
    # the whole choice left to the plan (gpt --auto): 131,072 tokens a step, its micro-batch and accumulation too
    run ratio_big_auto $G $BIG --vocab 50304 --seq 1024 --auto --tokens 131072 --steps 3 --warmup 1 \
        --metrics "$DIR/ratio_big_auto.jsonl"
    grep -h "^gpt: --auto" "$DIR/ratio_big_auto.log" | sed 's/^/   /'
}

offload_scale() { # a model that needs offload, at a batch where the GPU's compute can be the floor
    # 6.65e9 (BIG, V 50304), ZeRO-3 + both offloads, T 1024, micro-batch 8, recompute, the gathered parameters
    # kept while the GPU has room (keep.json): accumulation 1, 4 (where the micro-batches add up: the default,
    # the device here, and ZERO_GRAD_ACC=host) and 8; then the same model without offload, where it fits (the
    # compute floor: an H200's 139 GiB hold its 16 bytes a parameter, an H100's do not)
    S="$BIG --vocab 50304 --stage 3 --seq 1024 --batch 8 --recompute --offload-optimizer cpu --offload-param cpu"
    # (the reuse distance counts the fetches between two uses of a unit: with recompute the backward fetches each
    # layer twice, so keeping a 6.65e9 model from one micro-batch to the next needs about 3 x 6.65e9)
    echo '{"zero_optimization":{"stage3_max_live_parameters":1e11,"stage3_max_reuse_distance":1e11}}' >"$DIR/keep.json"
    K="--config $DIR/keep.json"
    run big_off_gas1 $G $S $K --gas 1 --steps 4 --warmup 1 --metrics "$DIR/big_off_gas1.jsonl"
    run big_off_gas4 $G $S $K --gas 4 --steps 3 --warmup 1 --metrics "$DIR/big_off_gas4.jsonl"
    ZERO_GRAD_ACC=host run big_off_gas4_host $G $S $K --gas 4 --steps 3 --warmup 1 --metrics "$DIR/big_off_gas4_host.jsonl"
    run big_off_gas8 $G $S $K --gas 8 --steps 3 --warmup 1 --metrics "$DIR/big_off_gas8.jsonl"
    run big_nooff_gas4 $G $BIG --vocab 50304 --stage 3 --seq 1024 --batch 8 --recompute $K --gas 4 --steps 3 --warmup 1 \
        --metrics "$DIR/big_nooff_gas4.jsonl"
}

no_offload() { # GPT-2 XL, T 1024, micro-batch 8, bf16: zero, DeepSpeed and FSDP2 without offload
    for s in 2 3; do
        run "xl8_zero_stage$s" $G $XL --stage $s --batch 8 --steps 10 --warmup 3 --print-every 5 \
            --metrics "$DIR/xl8_zero_stage$s.jsonl"
        ds "xl8_ds_stage$s" --preset 1.5B --seq 1024 --batch 8 --dtype bf16 --stage $s --steps 6 --warmup 2
    done
    for rs in 0 1; do # PyTorch FSDP2 on the same GPU: reshard 0 keeps the gathered parameters (ZeRO-2-like), 1 frees them
        run "xl8_fsdp2_reshard$rs" python3 examples/gpt/baseline/fsdp2_gpt.py --preset 1.5B --seq 1024 --batch 8 --steps 10 \
            --warmup 3 --reshard-after-forward $rs --metrics "$DIR/xl8_fsdp2_reshard$rs.jsonl"
        grep -E "^fsdp2_gpt: fsdp2|OOM" "$DIR/xl8_fsdp2_reshard$rs.log" | sed 's/^/   /'
    done
}

stages() { # the same loss curve on 2 GPUs for every stage (text, 124M, bf16)
    for s in 0 1 2 3; do
        run "stage$s" $G --preset 124M --dtype bf16 --stage $s --batch 8 --steps 60 --print-every 1 --warmup 5 \
            --metrics "$DIR/stage$s.jsonl"
    done
    python3 - "$DIR" <<'EOF'
import json, sys
d = sys.argv[1]
curves = {}
for s in range(4):
    try:
        curves[s] = {r["step"]: r["loss"] for r in map(json.loads, open(f"{d}/stage{s}.jsonl")) if r.get("event") == "step"}
    except OSError:
        pass
if 0 in curves:
    for s in sorted(curves):
        common = sorted(set(curves[0]) & set(curves[s]))
        worst = max((abs(curves[s][k] - curves[0][k]) for k in common), default=float("nan"))
        first, last = common[0], common[-1]
        print(f"   stage {s} vs stage 0: {len(common)} steps, loss {curves[s][first]:.4f} -> {curves[s][last]:.4f}, "
              f"largest difference {worst:.2e}")
EOF
}

# ---- one H100: zero against PyTorch (fast, fast-max, recompute, biggest) ----

TXL="--preset 1.5B --seq 1024 --vocab 256"
RS=${FSDP2_RESHARD:-0}
TIME0=$(date +%s)

pt() { # NAME SECONDS SCRIPT ARGS...: one run of a PyTorch baseline (baseline/SCRIPT), cut at SECONDS, its
    # output in $DIR/NAME.log, its JSONL in $DIR/NAME.jsonl
    name=$1; secs=$2; script=$3; shift 3
    echo "== $name: $script $*"
    TORCH_CUDA_ARCH_LIST=${DS_CUDA_ARCH_LIST:-9.0} timeout -k 10 "$secs" python3 "examples/gpt/baseline/$script" "$@" \
        --metrics "$DIR/$name.jsonl" >"$DIR/$name.log" 2>&1 || { echo "   (exit $?)"; rc=1; }
    grep -E "^(fsdp2_gpt|deepspeed_gpt): (fsdp2|torch|deepspeed-)|^find-max-batch: (the|not)|^OOM" "$DIR/$name.log" |
        sed 's/^/   /'
    grep -E "Error|error:" "$DIR/$name.log" | tail -3 | sed 's/^/   /'
}

ptn() { # NAME SECONDS SCRIPT ARGS...: pt's run on every visible GPU (torchrun, one process each). torchrun sets
    # OMP_NUM_THREADS=1 in each process unless it is set, which leaves DeepSpeed's CPU Adam (OpenMP) one core
    # a rank; each rank gets the host's cores / N instead, as zero's CPU pool and DeepSpeed's --bind_cores_to_rank
    name=$1; secs=$2; script=$3; shift 3
    omp=${OMP_NUM_THREADS:-$(( $(nproc) / N > 0 ? $(nproc) / N : 1 ))}
    echo "== $name: OMP_NUM_THREADS=$omp torchrun --nproc-per-node $N $script $*"
    OMP_NUM_THREADS=$omp TORCH_CUDA_ARCH_LIST=${DS_CUDA_ARCH_LIST:-9.0} timeout -k 10 "$secs" torchrun --standalone --nproc-per-node "$N" \
        "examples/gpt/baseline/$script" "$@" --metrics "$DIR/$name.jsonl" >"$DIR/$name.log" 2>&1 || { echo "   (exit $?)"; rc=1; }
    grep -E "^(fsdp2_gpt|deepspeed_gpt): (fsdp2|torch|deepspeed-)|^OOM" "$DIR/$name.log" | sed 's/^/   /'
    grep -E "Error|error:" "$DIR/$name.log" | tail -3 | sed 's/^/   /'
}

scale() { # zero's stages on 1 and N GPUs, hybrid, DeepSpeed and FSDP2 on N: scale_table.py's table and the plot
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$N" -lt 2 ]; then echo "== scale: needs 2 or more GPUs, $N visible"; rc=1; return; fi
    all=$(seq -s, 0 $((N - 1)))
    S="--batch 8 --steps 10 --warmup 3 --print-every 5"
    for s in 1 2 3; do
        run "sc_s${s}_1gpu" env CUDA_VISIBLE_DEVICES=0 timeout -k 10 120 $G $XL --stage $s $S --metrics "$DIR/sc_s${s}_1gpu.jsonl"
        run "sc_s${s}_${N}gpu" env CUDA_VISIBLE_DEVICES="$all" timeout -k 10 120 $G $XL --stage $s $S \
            --metrics "$DIR/sc_s${s}_${N}gpu.jsonl"
    done
    if [ "$N" -ge 4 ]; then
        printf '{"train_micro_batch_size_per_gpu":8,"zero_optimization":{"mics_shard_size":%d}}\n' $((N / 2)) >"$DIR/sc_hybrid.json"
        run sc_s3_hybrid env CUDA_VISIBLE_DEVICES="$all" timeout -k 10 120 $G $XL --stage 3 --config "$DIR/sc_hybrid.json" \
            $S --metrics "$DIR/sc_s3_hybrid.jsonl"
    fi
    if have_ds sc_ds; then # DeepSpeed's default buckets, then Hugging Face's "auto" ones: the table takes the faster
        for s in 2 3; do
            ptn "sc_ds_z$s" 240 deepspeed_gpt.py $TXL --dtype bf16 --stage $s --batch 8 --steps 8 --warmup 3
            ptn "sc_ds_z${s}_hf" 240 deepspeed_gpt.py $TXL --dtype bf16 --stage $s --hf-auto --batch 8 --steps 8 --warmup 3
        done
        ptn sc_ds_z3_leaf 240 deepspeed_gpt.py $TXL --dtype bf16 --stage 3 --leaf-blocks --batch 8 --steps 8 --warmup 3
    fi
    for r in 0 1; do # FSDP2 on one GPU (its own scaling), then on N
        CUDA_VISIBLE_DEVICES=0 pt "sc_fsdp2_r${r}_1gpu" 240 fsdp2_gpt.py $TXL --reshard-after-forward $r --compile 1 \
            --batch 8 --steps 8 --warmup 3
        ptn "sc_fsdp2_r$r" 240 fsdp2_gpt.py $TXL --reshard-after-forward $r --compile 1 --batch 8 --steps 8 --warmup 3
    done
    python3 examples/gpt/scale_table.py "$DIR" "$N" | tee "$DIR/scale_table.md" || rc=1
    python3 examples/gpt/plot.py --out "$DIR/plot_scale" "$DIR"/sc_*.jsonl >/dev/null &&
        cp "$DIR/plot_scale/throughput.png" "$DIR/gpt_scale.png" && echo "   $DIR/gpt_scale.png" || rc=1
}

have_ds() { # NAME: DeepSpeed importable, else a line saying that NAME was skipped
    python3 -c "import deepspeed" >/dev/null 2>&1 && return 0
    echo "== $1: skipped (python3 -c \"import deepspeed\" fails)"
    return 1
}

elapsed() { echo "== $what: $(($(date +%s) - TIME0)) s"; }

# the one-GPU targets on a machine of several: gpt trains on every visible GPU, so these keep the first
one_gpu() {
    CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES%%,*}"
    echo "== $what: one GPU (CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES)"
}

table() { # NAME...: a line per run from $DIR/NAME.jsonl's end line; zero's tokens/s over the best PyTorch run's
    python3 - "$DIR" "$@" <<'PY'
import json, sys
d, names = sys.argv[1], sys.argv[2:]
rows = []
for n in names:
    try:
        evs = [json.loads(l) for l in open("%s/%s.jsonl" % (d, n)) if l.strip()]
    except (OSError, ValueError):
        continue  # skipped, or cut inside a line
    st = ([e for e in evs if e.get("event") == "start"] or [{}])[-1]
    end = ([e for e in evs if e.get("event") == "end"] or [None])[-1]
    oom = ([e for e in evs if e.get("event") == "oom"] or [None])[-1]
    rows.append((n, st, end, oom))
print("   %-20s %-14s %4s %8s %8s %6s %8s  %s" % ("run", "program", "mb", "ms/step", "tok/s", "MFU", "GPU GiB",
                                             "(PyTorch: peak reserved / allocated GiB)"))
torch_best = max((e["tokens_per_s_per_gpu"] for n, st, e, o in rows if e and st.get("program") != "gpt"), default=0)
zero = [e["tokens_per_s_per_gpu"] for n, st, e, o in rows if e and st.get("program") == "gpt"]
for n, st, e, o in rows:
    prog = str(st.get("program", "?")) + (" ckpt" if st.get("recompute") else "")
    if not e:
        print("   %-20s %-14s %4s  %s" % (n, prog, o.get("batch", "?") if o else "?",
                                        "out of memory" if o else "no end line (see %s.log)" % n))
        continue
    gpu = e.get("device_used_gib", e.get("gpu_peak_gib", 0))  # the device's used memory (cudaMemGetInfo), all
    b = e.get("batch", st.get("batch", "?"))
    line = "   %-20s %-14s %4s %8.1f %8.0f %5.1f%% %8.2f" % (n, prog, b, e["median_step_ms"],
                                                        e["tokens_per_s_per_gpu"], 100 * e["mfu"], gpu)
    if st.get("program") == "gpt":
        if torch_best:
            line += "  zero / best PyTorch %.2fx" % (e["tokens_per_s_per_gpu"] / torch_best)
    else:
        line += "  %.2f / %.2f" % (e.get("gpu_peak_gib", 0), e.get("gpu_alloc_peak_gib", 0))
        if len(zero) == 1:
            line += "  zero / this %.2fx" % (zero[0] / e["tokens_per_s_per_gpu"])
    print(line)
PY
}

fast() { # GPT-2 XL, one GPU, micro-batch 8: zero stage 2, PyTorch, FSDP2, DeepSpeed ZeRO-2
    run fast_zero timeout -k 10 120 $G $XL --stage 2 --batch 8 --steps 13 --warmup 3 --print-every 13 \
        --metrics "$DIR/fast_zero.jsonl"
    pt fast_torch 120 fsdp2_gpt.py $TXL --plain 1 --batch 8 --steps 10 --warmup 3
    pt fast_fsdp2 120 fsdp2_gpt.py $TXL --reshard-after-forward $RS --batch 8 --steps 10 --warmup 3
    ! have_ds fast_ds || pt fast_ds 240 deepspeed_gpt.py $TXL --dtype bf16 --stage 2 --batch 8 --steps 10 --warmup 3
    table fast_zero fast_torch fast_fsdp2 fast_ds
}

fast_max() { # the same, each at its own largest micro-batch (DeepSpeed's is fast-max-ds)
    run fastmax_zero timeout -k 10 150 $G $XL --stage 2 --find-max-batch --steps 8 --warmup 3 --print-every 8 \
        --metrics "$DIR/fastmax_zero.jsonl"
    pt fastmax_torch 180 fsdp2_gpt.py $TXL --plain 1 --find-max-batch --steps 5 --warmup 2
    pt fastmax_fsdp2 180 fsdp2_gpt.py $TXL --reshard-after-forward $RS --find-max-batch --steps 5 --warmup 2
    table fastmax_zero fastmax_torch fastmax_fsdp2
}

fast_max_ds() { # DeepSpeed ZeRO-2 at its largest micro-batch (the fused Adam's first build included)
    have_ds fastmax_ds || return 0
    pt fastmax_ds 480 deepspeed_gpt.py $TXL --dtype bf16 --stage 2 --find-max-batch --steps 5 --warmup 2
    grep -E "still allocated" "$DIR/fastmax_ds.log" | sed 's/^/   /'
    table fastmax_zero fastmax_ds
}

recompute_zero() { # zero stage 2 with --recompute: micro-batch 8, then the largest (large batches: few steps)
    run rc8_zero timeout -k 10 100 $G $XL --stage 2 --recompute --batch 8 --steps 13 --warmup 3 --print-every 13 \
        --metrics "$DIR/rc8_zero.jsonl"
    run rcmax_zero timeout -k 10 240 $G $XL --stage 2 --recompute --find-max-batch --steps 5 --warmup 2 \
        --print-every 5 --metrics "$DIR/rcmax_zero.jsonl"
}

recompute_torch() { # PyTorch (bf16 autocast) with --checkpoint-activations 1: micro-batch 8, then the largest
    pt rc8_torch 100 fsdp2_gpt.py $TXL --plain 1 --checkpoint-activations 1 --batch 8 --steps 10 --warmup 3
    pt rcmax_torch 240 fsdp2_gpt.py $TXL --plain 1 --checkpoint-activations 1 --find-max-batch --steps 3 --warmup 2
}

recompute_tables() {
    echo "== micro-batch 8, activation checkpointing"
    table rc8_zero rc8_torch
    echo "== the largest micro-batch, activation checkpointing"
    table rcmax_zero rcmax_torch
}

# the biggest model on one GPU: the width fixed, the layers growing (doubling from 8 until a trial fails, then
# bisecting); each trial a process of its own, 2 steps at micro-batch 1
BIGW="--dim 4096 --heads 32 --seq 1024 --vocab 256"

big_trial() { # NAME KIND LAYERS ARGS...: status 0 trains, 1 out of memory, 2 anything else
    name=$1; kind=$2; n=$3; shift 3
    log="$DIR/${name}_L$n.log"
    if [ "$kind" = zero ]; then
        timeout -k 10 150 $G $BIGW --layers "$n" --synthetic --dtype bf16 --stage 2 --batch 1 --steps 2 --warmup 1 \
            --print-every 2 --metrics "$DIR/${name}_L$n.jsonl" "$@" >"$log" 2>&1
        s=$?
        [ $s -eq 0 ] && grep -q "^summary:" "$log" && return 0
        grep -qiE "out of memory|allocation failed|MemoryAllocation|does not fit" "$log" && return 1
    elif [ "$kind" = zero3n ]; then # stage 3 on every visible GPU (biggest-n)
        timeout -k 10 ${BIG_TRIAL_S:-240} $G $BIGW --layers "$n" --synthetic --dtype bf16 --stage 3 --batch 1 --steps 2 \
            --warmup 1 --print-every 2 --metrics "$DIR/${name}_L$n.jsonl" "$@" >"$log" 2>&1
        s=$?
        [ $s -eq 0 ] && grep -q "^summary:" "$log" && return 0
        grep -qiE "out of memory|allocation failed|MemoryAllocation|does not fit|cannot allocate" "$log" && return 1
        [ $s -eq 137 ] && return 1 # (the host's memory: killed)
    elif [ "$kind" = ds3n ]; then # DeepSpeed ZeRO-3 on every visible GPU (biggest-n), its defaults
        OMP_NUM_THREADS=$(( $(nproc) / N > 0 ? $(nproc) / N : 1 )) TORCH_CUDA_ARCH_LIST=${DS_CUDA_ARCH_LIST:-9.0} \
            timeout -k 10 ${BIG_TRIAL_S:-240} torchrun --standalone --nproc-per-node "$N" \
            examples/gpt/baseline/deepspeed_gpt.py $BIGW --layers "$n" --dtype bf16 --stage 3 --batch 1 --steps 2 \
            --warmup 1 --metrics "$DIR/${name}_L$n.jsonl" "$@" >"$log" 2>&1
        s=$?
        grep -q "^deepspeed_gpt: deepspeed-" "$log" && return 0
        grep -qiE "OOM at batch|out of memory|cannot allocate" "$log" && return 1
        [ $s -eq 137 ] && return 1
    else
        timeout -k 10 150 python3 examples/gpt/baseline/fsdp2_gpt.py --plain 1 $BIGW --layers "$n" --batch 1 \
            --steps 1 --warmup 1 --metrics "$DIR/${name}_L$n.jsonl" "$@" >"$log" 2>&1
        s=$?
        [ $s -eq 0 ] && return 0
        [ $s -eq 3 ] && return 1 # fsdp2_gpt.py's status after "OOM at batch"
    fi
    echo "   L$n: exit $s, and not out of memory: see $log"
    tail -3 "$log" | sed 's/^/   /'
    return 2
}

biggest_of() { # NAME KIND ARGS...: the most layers that train (KIND zero, torch, zero3n or ds3n), a line per trial.
    # BIG_START: the first trial's layers (default 8); up from a success by doubling (by an eighth with BIG_START
    # given: a search that starts near its answer), down from a failure by halving (by an eighth), then bisecting
    name=$1; kind=$2; shift 2
    echo "== $name: $kind $BIGW, micro-batch 1 $* (from L${BIG_START:-8})"
    lo=0; hi=0; n=${BIG_START:-8}
    while [ $hi -eq 0 ] || [ $((hi - lo)) -gt 1 ]; do
        big_trial "$name" "$kind" $n "$@"
        case $? in
        0) lo=$n
           echo "   L$n: trains ($(grep -hE "^summary:|^fsdp2_gpt: torch|^deepspeed_gpt: deepspeed-" "$DIR/${name}_L$n.log" |
               grep -oE "[0-9.]+ ms(/step)?|(GPU|device used) [0-9.]+ GiB" | tr '\n' ' '))" ;;
        1) hi=$n; echo "   L$n: out of memory" ;;
        *) rc=1; return ;;
        esac
        [ $hi -eq 1 ] && break
        if [ $hi -ne 0 ] && [ $lo -ne 0 ]; then n=$(((lo + hi) / 2))
        elif [ $hi -eq 0 ]; then n=$([ -n "${BIG_START:-}" ] && echo $((n + (n + 7) / 8)) || echo $((n * 2)))
        else n=$([ -n "${BIG_START:-}" ] && echo $((n - (n + 7) / 8)) || echo $((n / 2))); [ $n -ge 1 ] || break
        fi
    done
    p=$(python3 -c "L, C, T, V = $lo, 4096, 1024, 256; print('%.4g' % (V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C))")
    echo "   $name: the most layers that train: $lo ($p parameters)"
    echo "$name $lo $p" >>"$DIR/biggest.txt"
}

biggest_zero() {
    biggest_of biggest_zero zero
    biggest_of biggest_zero_recompute zero --recompute
}

biggest_n() { # every visible GPU (N >= 2): the most layers at C 4096 (T 1024, V 256, micro-batch 1) that zero and
    # DeepSpeed ZeRO-3 train, without offload and with both offloads to the CPU; zero's search without offload starts
    # at the estimator's plan (zero_estimate --time --largest), the rest at zero's result; a trial per size
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$N" -lt 2 ]; then echo "== biggest-n: needs 2 or more GPUs, $N visible"; rc=1; return; fi
    E="$B/zero_estimate"
    make --no-print-directory "$E" >/dev/null || { rc=1; return; }
    case $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1) in
    *H200*) mach=h200 ;;
    *) mach=h100 ;;
    esac
    est=$("$E" --time --largest --machine $mach --gpus "$N" --hidden 4096 --vocab 256 --seq 1024 --batch 1 --stage 3 |
        awk -v n="$N" '$1 == n && $2 == "L" { print $3 }')
    echo "== biggest-n: the estimator's plan for stage 3 on $N GPUs ($mach): L ${est:-?}"
    [ -n "$est" ] || { rc=1; return; }
    rm -f "$DIR/biggest.txt"
    BIG_START=$est; biggest_of bn_zero3 zero3n
    z=$(awk '$1 == "bn_zero3" { print $2 }' "$DIR/biggest.txt")
    BIG_START=${z:-$est}; biggest_of bn_ds3 ds3n
    # with both offloads: from the estimator's plan at this node's available host memory
    hostb=$(awk '/^MemAvailable:/ { printf "%.0f", $2 * 1024 }' /proc/meminfo)
    esto=$("$E" --time --largest --machine $mach --gpus "$N" --hidden 4096 --vocab 256 --seq 1024 --batch 1 --stage 3 \
        --offload cpu --offload-param cpu --cpu-mem "$hostb" | awk -v n="$N" '$1 == n && $2 == "L" { print $3 }')
    echo "== biggest-n: the estimator's plan with both offloads ($hostb bytes of host memory available): L ${esto:-?}"
    BIG_START=${esto:-$(( ${z:-$est} * 3 / 2 ))}; biggest_of bn_zero3_off zero3n --offload-optimizer cpu --offload-param cpu
    zo=$(awk '$1 == "bn_zero3_off" { print $2 }' "$DIR/biggest.txt")
    BIG_START=${zo:-$est}; biggest_of bn_ds3_off ds3n --offload-optimizer cpu --offload-param cpu
    unset BIG_START
    echo "== biggest-n: the estimator's L ${est} against zero's $(awk '$1 == "bn_zero3" { print $2, "(" $3 " parameters)" }' \
        "$DIR/biggest.txt") without offload; with both offloads L ${esto:-?} against $(awk '$1 == "bn_zero3_off" { print $2 }' \
        "$DIR/biggest.txt")"
    cat "$DIR/biggest.txt" | sed 's/^/   /'
}

biggest_torch() {
    biggest_of biggest_torch torch
    biggest_of biggest_torch_ckpt torch --checkpoint-activations 1
}

torch_smoke() { # the PyTorch baselines' modes on 124M, a few steps each: plain and FSDP2 with and without
    # checkpointing, FSDP2 under torchrun, --find-max-batch (2 layers, T 128), DeepSpeed with checkpointing
    S="--preset 124M --seq 1024 --batch 4 --steps 3 --warmup 1"
    for p in 1 0; do
        for c in 0 1; do
            pt "smoke_plain${p}_ckpt$c" 90 fsdp2_gpt.py $S --plain $p --checkpoint-activations $c
        done
    done
    echo "== smoke_torchrun: torchrun --nproc-per-node 1 fsdp2_gpt.py $S --checkpoint-activations 1"
    timeout -k 10 90 torchrun --standalone --nproc-per-node 1 examples/gpt/baseline/fsdp2_gpt.py $S \
        --checkpoint-activations 1 --metrics "$DIR/smoke_torchrun.jsonl" >"$DIR/smoke_torchrun.log" 2>&1 ||
        { echo "   (exit $?)"; rc=1; }
    grep -E "^fsdp2_gpt: fsdp2" "$DIR/smoke_torchrun.log" | sed 's/^/   /'
    pt smoke_findmax 120 fsdp2_gpt.py --preset 124M --layers 2 --seq 128 --plain 1 --find-max-batch --steps 2 \
        --warmup 1
    ! have_ds smoke_ds_ckpt || pt smoke_ds_ckpt 240 deepspeed_gpt.py $S --stage 2 --checkpoint-activations 1
    table smoke_plain1_ckpt0 smoke_plain1_ckpt1 smoke_plain0_ckpt0 smoke_plain0_ckpt1 smoke_torchrun smoke_ds_ckpt
}

plots() { # loss per stage; memory per stage (largest micro-batch); tokens/s per stage and GPU count
    for p in loss:stage?.jsonl memory:maxb_stage?.jsonl throughput:scale_stage*.jsonl; do
        kind=${p%%:*}; pat=${p#*:}
        python3 examples/gpt/plot.py --out "$DIR/plot_$kind" $(ls "$DIR"/$pat) >/dev/null &&
            cp "$DIR/plot_$kind/$kind.png" "$DIR/gpt_$kind.png" && echo "   $DIR/gpt_$kind.png" || rc=1
    done
    python3 examples/gpt/plot.py --out "$DIR/plot_fsdp2" "$DIR"/xl16_stage?.jsonl "$DIR"/fsdp2_reshard?.jsonl >/dev/null &&
        cp "$DIR/plot_fsdp2/throughput.png" "$DIR/gpt_vs_fsdp2.png" && echo "   $DIR/gpt_vs_fsdp2.png" || rc=1
}

case $what in
one | offload | offload-recipes | offload-capacity | offload-ratio | offload-scale | fast | fast-max | fast-max-ds | \
    recompute | recompute-zero | recompute-torch | biggest | biggest-zero | biggest-torch | torch-smoke) one_gpu ;;
esac
case $what in
one)
    run xl_stage0 $G $XL --stage 0 --find-max-batch --steps 15 --print-every 5 --metrics "$DIR/xl_stage0.jsonl"
    run big_stage0 $G $BIG --stage 0 --batch 1 --steps 3 --metrics "$DIR/big_stage0.jsonl"
    run big_z3_offload $G $BIG --stage 3 --offload-optimizer cpu --offload-param cpu --batch 8 --steps 6 --warmup 2 \
        --print-every 2 --metrics "$DIR/big_z3_offload.jsonl"
    ;;
four) # the scale suite on a 4-GPU machine (zero on 1 and 4 GPUs, hybrid, DeepSpeed and FSDP2 on 4)
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$N" -ne 4 ]; then echo "== four: needs 4 GPUs, $N visible (scale runs on any count of 2 or more)"; exit 1; fi
    scale; elapsed ;;
stages) stages ;;
groups) # docs/engine.md "Groups of collectives" and the overlapped step: the same steps without them
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    cfgs="3:1"
    [ "$N" -gt 1 ] && cfgs="$cfgs 3:$N"
    cfgs="$cfgs 2:$N"
    for cfg in $cfgs; do
        s=${cfg%%:*} n=${cfg#*:} sums=""
        for rep in 1 2; do
            for how in grouped alone; do
                name="groups_s${s}_${n}gpu_${how}_$rep"
                knob=$([ "$s" = 3 ] && echo ZERO_COLL_GROUP || echo ZERO_STEP_OVERLAP)
                e=$([ "$how" = alone ] && echo "$knob=0" || echo "$knob=1")
                run "$name" env CUDA_VISIBLE_DEVICES="$(seq -s, 0 $((n - 1)))" "$e" $G $XL --stage "$s" --batch 8 \
                    --steps 12 --warmup 4 --print-every 6 --metrics "$DIR/$name.jsonl"
                sums="$sums $how $(sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p' "$DIR/$name.log" | tail -1)"
            done
        done
        echo "$sums" | awk -v s="$s" -v n="$n" '{ for (i = 1; i < NF; i += 2) t[$i] += $(i + 1)
            printf "   stage %s, %s GPU(s): default %.1f ms, %s=0 %.1f ms (two medians each): ratio %.3f\n",
                   s, n, t["grouped"], (s == 3 ? "ZERO_COLL_GROUP" : "ZERO_STEP_OVERLAP"), t["alone"],
                   (t["grouped"] > 0 ? t["alone"] / t["grouped"] : 0) }'
    done
    elapsed
    ;;
ctas) # NCCL_MAX_CTAS on every visible GPU: fewer SMs for the collectives, more for the compute beside them
    for s in 2 3; do
        for c in default 16 8 4; do
            name="ctas_stage${s}_$c"
            if [ "$c" = default ]; then run "$name" $G $XL --stage $s --batch 8 --steps 12 --warmup 4 --print-every 6 \
                --metrics "$DIR/$name.jsonl"
            else run "$name" env NCCL_MAX_CTAS="$c" $G $XL --stage $s --batch 8 --steps 12 --warmup 4 --print-every 6 \
                --metrics "$DIR/$name.jsonl"; fi
        done
    done
    ;;
timeline) # ZERO_TIMELINE: the collectives and each stream's waits of one step, stages 2 and 3, 1 and N GPUs
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    for s in 2 3; do
        for n in 1 $([ "$N" -ge 2 ] && echo "$N"); do
            name="tl_stage${s}_${n}gpu"
            run "$name" env CUDA_VISIBLE_DEVICES="$(seq -s, 0 $((n - 1)))" ZERO_TIMELINE="$DIR/$name" \
                ZERO_TIMELINE_STEP=5 $G $XL --stage $s --batch 8 --steps 8 --warmup 3 --print-every 4 \
                --metrics "$DIR/$name.jsonl"
            grep "ZERO_TIMELINE" "$DIR/$name.log" | sed 's/^/   /'
        done
    done
    ;;
hybrid) # hybrid sharding on every visible GPU: the groups' step and bytes beside flat sharding
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    if [ "$N" -lt 2 ]; then echo "bench.sh hybrid: needs 2 or more GPUs, $N visible" >&2; exit 2; fi
    for s in 2 3; do
        for g in 1 $([ "$N" -ge 4 ] && echo $((N / 2))) "$N"; do
            printf '{"train_micro_batch_size_per_gpu":8,"zero_optimization":{"mics_shard_size":%d}}\n' "$g" >"$DIR/hybrid_g$g.json"
            run "hybrid_stage${s}_g$g" $G $XL --stage $s --config "$DIR/hybrid_g$g.json" --steps 12 --print-every 4 \
                --metrics "$DIR/hybrid_stage${s}_g$g.jsonl"
        done
    done
    ;;
tied) # the tied embedding found by the engine (no flag) against --grad-any-order (planned at create): GPT-2 XL stage 3
    # (T 1024, bf16, micro-batch 8) on one GPU and on every visible GPU, and the seed's offload recipe on one GPU; each
    # pair run back to back, flag first, REPS times (default 1; 2 shows drift as a difference between the repeats)
    N=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    SEED="--preset 1.5B --seq 128 --batch 16 --dtype fp16 --synthetic --stage 3 --offload-optimizer cpu --offload-param cpu"
    for rep in $(seq 1 "${REPS:-1}"); do
        for how in flag found; do
            f=$([ "$how" = flag ] && echo --grad-any-order)
            CUDA_VISIBLE_DEVICES=0 run "tied_xl_1gpu_${how}_$rep" $G $XL --stage 3 --batch 8 --steps 12 --warmup 4 \
                --print-every 4 $f --metrics "$DIR/tied_xl_1gpu_${how}_$rep.jsonl"
            [ "$N" -ge 2 ] && run "tied_xl_${N}gpu_${how}_$rep" $G $XL --stage 3 --batch 8 --steps 12 --warmup 4 \
                --print-every 4 $f --metrics "$DIR/tied_xl_${N}gpu_${how}_$rep.jsonl"
            CUDA_VISIBLE_DEVICES=0 run "tied_seed_${how}_$rep" $G $SEED --steps 8 --warmup 3 --print-every 4 $f \
                --metrics "$DIR/tied_seed_${how}_$rep.jsonl"
        done
    done
    ;;
offload) offload ;;
offload-recipes) offload_recipes ;;
offload-capacity) offload_capacity ;;
offload-ratio) offload_ratio; elapsed ;;
offload-scale) offload_scale ;;
offload-n) offload_n; elapsed ;;
plots) plots ;;
two)
    # side by side with PyTorch FSDP2: GPT-2 XL, T 1024, bf16, micro-batch 16, 2 GPUs
    for s in 2 3; do
        run "xl16_stage$s" $G $XL --stage $s --batch 16 --steps 12 --print-every 4 --metrics "$DIR/xl16_stage$s.jsonl"
    done
    for rs in 1 0; do
        run "fsdp2_reshard$rs" torchrun --standalone --nproc-per-node 2 examples/gpt/baseline/fsdp2_gpt.py \
            --preset 1.5B --seq 1024 --batch 16 --steps 12 --warmup 3 --reshard-after-forward $rs \
            --metrics "$DIR/fsdp2_reshard$rs.jsonl"
        grep -E "tok/s|MFU|OOM" "$DIR/fsdp2_reshard$rs.log" | tail -2 | sed 's/^/   /'
    done
    # scaling: GPT-2 XL, micro-batch 8 per GPU, 1 GPU then 2
    for s in 1 2 3; do
        CUDA_VISIBLE_DEVICES=0 run "scale_stage${s}_1gpu" $G $XL --stage $s --batch 8 --steps 12 --print-every 4 \
            --metrics "$DIR/scale_stage${s}_1gpu.jsonl"
        run "scale_stage${s}_2gpu" $G $XL --stage $s --batch 8 --steps 12 --print-every 4 \
            --metrics "$DIR/scale_stage${s}_2gpu.jsonl"
    done
    # the largest micro-batch per stage, 6.4e9 parameters on 2 GPUs (stage 0 holds 16 bytes each)
    for s in 0 2 3; do
        run "maxb_stage$s" $G $BIG --stage $s --find-max-batch --steps 4 --warmup 1 --print-every 2 \
            --metrics "$DIR/maxb_stage$s.jsonl"
    done
    stages
    plots
    ;;
scale) scale; elapsed ;;
fast) fast; elapsed ;;
fast-max) fast_max; elapsed ;;
fast-max-ds) fast_max_ds; elapsed ;;
recompute) recompute_zero; recompute_torch; recompute_tables; elapsed ;;
recompute-zero) recompute_zero; recompute_tables; elapsed ;;
recompute-torch) recompute_torch; recompute_tables; elapsed ;;
biggest) rm -f "$DIR/biggest.txt"; biggest_zero; biggest_torch; elapsed ;;
biggest-zero) biggest_zero; elapsed ;;
biggest-n) biggest_n; elapsed ;;
biggest-torch) biggest_torch; elapsed ;;
torch-smoke) torch_smoke; elapsed ;;
*) echo "usage: sh examples/gpt/bench.sh one|two|four|scale|stages|timeline|ctas|hybrid|offload|offload-recipes|offload-capacity|offload-ratio|offload-scale|offload-n|plots|fast|\
fast-max|fast-max-ds|recompute|recompute-zero|recompute-torch|biggest|biggest-zero|biggest-n|biggest-torch|torch-smoke" >&2
    exit 2 ;;
esac
# the runs as one table (docs/results/ keeps these, not the logs)
if command -v python3 >/dev/null 2>&1 && [ -n "$(ls "$DIR" 2>/dev/null)" ]; then
    python3 examples/gpt/results.py "$DIR" --meta "command: sh examples/gpt/bench.sh $what" \
        --meta "code: ${BENCH_CODE:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}" \
        --meta "machine: $(nvidia-smi -L 2>/dev/null | head -n 1 | sed 's/ (UUID.*//') x $(nvidia-smi -L 2>/dev/null | grep -c '^GPU')" \
        >"$DIR/results.tsv" && echo "== results: $DIR/results.tsv"
fi
exit $rc
