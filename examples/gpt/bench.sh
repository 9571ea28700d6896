#!/bin/sh
# examples/gpt/bench.sh - the runs behind docs/PERF.md's GPT tables (device
# machine). Every figure is the median step time after warm-up, from CUDA
# events; JSONL of each run lands in $DIR (default build/gpt_bench), then
# examples/gpt/plot.py draws them.
#
#   sh examples/gpt/bench.sh one      one GPU (H100): stage 0 MFU of GPT-2 XL;
#                                     a 6.4B model that stage 0 cannot hold,
#                                     trained with ZeRO-3 + CPU offload
#   sh examples/gpt/bench.sh two      2 GPUs (H200): stages 0-3 loss curves;
#                                     the largest micro-batch per stage; 1 vs 2
#                                     GPUs per stage; ZeRO-2/3 vs PyTorch FSDP2
#   sh examples/gpt/bench.sh four     4 GPUs (H200): 1 vs 4 GPUs per stage
#   sh examples/gpt/bench.sh stages   only the stages 0-3 loss curves
#   sh examples/gpt/bench.sh offload  one GPU: zero beside DeepSpeed (baseline/deepspeed_gpt.py) on the
#                                     seed's offload recipe (GPT-2 XL, T 128, micro-batch 16, fp16,
#                                     ZeRO-3 + optimizer and parameter offload to the CPU), ZeRO-2 +
#                                     optimizer offload, and ZeRO-2 / ZeRO-3 without offload (T 1024,
#                                     bf16, micro-batch 8); needs deepspeed importable. Each zero offload
#                                     run prints its floor (zero_floor_of) beside its median step
#   sh examples/gpt/bench.sh offload-recipes   only the offload recipes of `offload` (zero and DeepSpeed)
#   sh examples/gpt/bench.sh offload-capacity  only the largest model of ZeRO-3 with both offloads
#                                     (bench_offload --capacity --placements cpu+param, about 3 minutes)
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
    grep -E "^(summary|find-max|gpt:|memory|floor:)" "$DIR/$name.log" | sed 's/^/   /'
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
one)
    run xl_stage0 $G $XL --stage 0 --find-max-batch --steps 15 --print-every 5 --metrics "$DIR/xl_stage0.jsonl"
    run big_stage0 $G $BIG --stage 0 --batch 1 --steps 3 --metrics "$DIR/big_stage0.jsonl"
    run big_z3_offload $G $BIG --stage 3 --offload-optimizer cpu --offload-param cpu --batch 8 --steps 6 --warmup 2 \
        --print-every 2 --metrics "$DIR/big_z3_offload.jsonl"
    ;;
four) # scaling on 4 GPUs: GPT-2 XL, micro-batch 8 per GPU, 1 GPU then 4
    for s in 1 2 3; do
        CUDA_VISIBLE_DEVICES=0 run "scale_stage${s}_1gpu" $G $XL --stage $s --batch 8 --steps 12 --print-every 4 \
            --metrics "$DIR/scale_stage${s}_1gpu.jsonl"
        run "scale_stage${s}_4gpu" $G $XL --stage $s --batch 8 --steps 12 --print-every 4 \
            --metrics "$DIR/scale_stage${s}_4gpu.jsonl"
    done
    ;;
stages) stages ;;
offload) offload ;;
offload-recipes) offload_recipes ;;
offload-capacity) offload_capacity ;;
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
*) echo "usage: sh examples/gpt/bench.sh one|two|four|stages|offload|offload-recipes|offload-capacity|plots" >&2; exit 2 ;;
esac
exit $rc
