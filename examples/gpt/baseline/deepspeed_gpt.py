"""deepspeed_gpt.py - the DeepSpeed baseline for examples/gpt: the same GPT-2 as
gpt_model.h (fsdp2_gpt.py's model, imported from beside this file), trained
with DeepSpeed's ZeRO, timed the same way as fsdp2_gpt.py and examples/gpt.

    python3 examples/gpt/baseline/deepspeed_gpt.py --preset 1.5B --seq 128 --batch 16 \\
        --dtype fp16 --stage 3 --offload-optimizer cpu --offload-param cpu --metrics ds.jsonl
    torchrun --standalone --nproc-per-node 2 examples/gpt/baseline/deepspeed_gpt.py ...

The config is built from the flags (DeepSpeed's JSON keys, printed at the
start): train_micro_batch_size_per_gpu, gradient_accumulation_steps 1,
gradient_clipping (--clip, default 1.0 as zero's default), fp16 with the
dynamic loss scale (initial_scale_power 16, DeepSpeed's default) or bf16,
zero_optimization.stage, offload_optimizer / offload_param {"device": "cpu",
"pin_memory": true}, and the optimizer "AdamW" (lr, betas, eps, weight
decay on the weight matrices and embeddings only). With the optimizer
offloaded DeepSpeed runs DeepSpeedCPUAdam (built just in time with ninja);
without, its FusedAdam (TORCH_CUDA_ARCH_LIST=9.0 on Hopper: "9.0a" breaks
DeepSpeed's version parser). Bucket sizes are DeepSpeed's defaults unless
--bucket is given (then reduce_bucket_size, allgather_bucket_size and
stage3_prefetch_bucket_size) or --hf-auto (what Hugging Face's Trainer and
Accelerate put for "auto": reduce_bucket_size hidden^2,
stage3_prefetch_bucket_size 0.9 hidden^2, stage3_param_persistence_threshold
10 hidden). --leaf-blocks (stage 3) sets stage3_module_granularity_threshold
to 2 hidden^2: each transformer block becomes a ZeRO-3 leaf module, its
parameters fetched together under one hook (DeepSpeed's documented remedy
for the host overhead of fine-grained modules' hooks).

At stage 3 the model is built inside deepspeed.zero.Init (in the config's
dtype, as a DeepSpeed user gets it: partitions keep the dtype they are made
in, and the script stops if the parameters are not the run's dtype), so no
rank holds it whole, and the tied head (the forward reads wte.weight outside the
embedding module) is registered as an external parameter of the root. At
stages 0-2 it is built on the GPU (no slow CPU init of a large model).

--checkpoint-activations 1: fsdp2_gpt.py's per-block recomputation
(torch.utils.checkpoint, use_reentrant=False, inside each block's forward);
it needs no DeepSpeed config (deepspeed.checkpointing's does).

--find-max-batch (one GPU): fsdp2_gpt.py's search (doubling from 1, then
bisecting), each trial a fresh model and a fresh deepspeed.initialize at
that micro-batch, 2 steps, out of memory caught; then engine.destroy()
where DeepSpeed has it, the objects dropped, gc.collect() and
torch.cuda.empty_cache(). Each trial prints the memory still allocated
after it: if that grows from trial to trial, DeepSpeed kept something of an
old engine and the search is low.

Timing: CUDA events around each step (engine forward, backward, step); the
CPU Adam of an offloaded step runs inside engine.step(), on the host, so
the events enclose it. Reported: the median over the timed steps, tokens/s
per GPU, TFLOP/s and MFU (fsdp2_gpt.py's formulas), the GPU's peak
reserved / allocated memory and the device's used memory, and the host's
peak resident memory of this process (getrusage: DeepSpeed's pinned buffers
and CPU optimizer state included). Metrics (--metrics, JSONL, rank 0): the
same "start" / "step" / "end" lines as fsdp2_gpt.py, program "deepspeed".
"""
import argparse
import json
import os
import resource
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fsdp2_gpt as base  # noqa: E402  the model, the formulas, init_dist, Metrics

torch = base.torch
dist = base.dist

try:
    import deepspeed
except ImportError as e:
    print("deepspeed_gpt: deepspeed is not importable (%s): no DeepSpeed baseline" % e, file=sys.stderr)
    sys.exit(1)


def parse_args():
    ap = argparse.ArgumentParser(description="GPT-2 (gpt_model.h) trained with DeepSpeed ZeRO, timed")
    ap.add_argument("--preset", choices=list(base.PRESETS), default=None, help="gpt_model.h's sizes (default 124M)")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--vocab", type=int, default=256)
    ap.add_argument("--batch", type=int, default=8, help="micro-batch per GPU")
    ap.add_argument("--steps", type=int, default=10, help="timed steps")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--dtype", choices=("fp16", "bf16"), default="bf16")
    ap.add_argument("--stage", type=int, choices=(0, 1, 2, 3), default=2)
    ap.add_argument("--offload-optimizer", choices=("none", "cpu"), default="none")
    ap.add_argument("--offload-param", choices=("none", "cpu"), default="none")
    ap.add_argument("--bucket", type=float, default=None, help="bucket sizes in elements (default DeepSpeed's)")
    ap.add_argument("--hf-auto", action="store_true",
                    help="the bucket sizes Hugging Face's integration gives \"auto\": reduce_bucket_size hidden^2, "
                         "stage3_prefetch_bucket_size 0.9 hidden^2, stage3_param_persistence_threshold 10 hidden")
    ap.add_argument("--leaf-blocks", action="store_true",
                    help="stage 3: stage3_module_granularity_threshold 2 hidden^2, so that each transformer block "
                         "(granularity about 1.7 hidden^2: its parameters over 1 + its 6 modules) is a ZeRO-3 leaf "
                         "module, fetched whole with one hook instead of one per Linear and LayerNorm (DeepSpeed's "
                         "remedy for fine-grained modules' hook overhead)")
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--wd", type=float, default=0.0)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--checkpoint-activations", type=int, choices=(0, 1), default=0,
                    help="recompute each block in the backward (torch.utils.checkpoint, non-reentrant)")
    ap.add_argument("--find-max-batch", action="store_true",
                    help="one GPU: the largest micro-batch that fits (a fresh engine per trial, 2 steps), then time it")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--metrics", default=None)
    ap.add_argument("--peak-tflops", type=float, default=None)
    a = base.resolve_shape(ap, ap.parse_args())
    if a.find_max_batch and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        ap.error("--find-max-batch runs on one GPU: an out-of-memory rank would leave the others in a collective")
    if a.offload_param != "none" and a.stage != 3:
        ap.error("--offload-param needs --stage 3 (as in DeepSpeed)")
    if a.offload_optimizer != "none" and a.stage == 0:
        ap.error("--offload-optimizer needs --stage 1, 2 or 3")
    if a.hf_auto and a.bucket is not None:
        ap.error("--hf-auto and --bucket: give one")
    if a.leaf_blocks and a.stage != 3:
        ap.error("--leaf-blocks needs --stage 3 (ZeRO-3's module hooks)")
    return a


def ds_config(a):
    z = {"stage": a.stage}
    if a.offload_optimizer != "none":
        z["offload_optimizer"] = {"device": a.offload_optimizer, "pin_memory": True}
    if a.offload_param != "none":
        z["offload_param"] = {"device": a.offload_param, "pin_memory": True}
    if a.hf_auto:
        z["reduce_bucket_size"] = a.dim * a.dim
        if a.stage == 3:
            z["stage3_prefetch_bucket_size"] = int(0.9 * a.dim * a.dim)
            z["stage3_param_persistence_threshold"] = 10 * a.dim
    if a.leaf_blocks:
        z["stage3_module_granularity_threshold"] = 2 * a.dim * a.dim
    if a.bucket is not None:
        z["reduce_bucket_size"] = int(a.bucket)
        z["allgather_bucket_size"] = int(a.bucket)
        if a.stage == 3:
            z["stage3_prefetch_bucket_size"] = int(a.bucket)
    cfg = {"train_micro_batch_size_per_gpu": a.batch, "gradient_accumulation_steps": 1,
           "gradient_clipping": a.clip, "steps_per_print": 10**9, "wall_clock_breakdown": False,
           "zero_optimization": z,
           "optimizer": {"type": "AdamW", "params": {"lr": a.lr, "betas": [0.9, 0.999], "eps": 1e-8,
                                                     "weight_decay": a.wd}}}
    if a.dtype == "fp16":
        cfg["fp16"] = {"enabled": True, "loss_scale": 0, "initial_scale_power": 16}
    else:
        cfg["bf16"] = {"enabled": True}
    return cfg


def host_peak_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2.0**20  # KiB on Linux


def build_engine(a, device):
    """a fresh model (seeded) at micro-batch a.batch and its DeepSpeed engine: (engine, optimizer, parameter
    count, config)"""
    L, C, H, T, V = a.layers, a.dim, a.heads, a.seq, a.vocab
    cfg = ds_config(a)
    recompute = bool(a.checkpoint_activations)
    torch.manual_seed(a.seed)
    if a.stage == 3:
        # no dtype: zero.Init takes the config's (bf16 or fp16), as DeepSpeed's users get it. Partitions made
        # here keep the dtype they are made in (the engine casts only a model built outside zero.Init), so an
        # explicit float32 ran the whole ZeRO-3 step in fp32 (as this script did before: docs/PERF.md 5c)
        with deepspeed.zero.Init(config_dict_or_path=cfg):
            model = base.GPT(L, C, H, T, V, recompute)
        # the tied head reads wte.weight in the root's forward: gather it there too
        deepspeed.zero.register_external_parameter(model, model.wte.weight)
        with deepspeed.zero.GatheredParameters(list(model.parameters()), modifier_rank=0):
            if dist.get_rank() == 0:
                model.init_weights()
        n_params = sum(p.ds_numel for p in model.parameters())
    else:
        with torch.device(device):
            model = base.GPT(L, C, H, T, V, recompute)
        model.init_weights()
        n_params = sum(p.numel() for p in model.parameters())
    assert n_params == base.n_params_formula(L, C, T, V), (n_params, base.n_params_formula(L, C, T, V))
    # weight decay on the matrices and both embeddings (all 2-D), none on biases and LayerNorm (fsdp2_gpt.py's split;
    # a zero.Init parameter is empty here, its ds_shape is the real one)
    decay = [p for p in model.parameters() if len(getattr(p, "ds_shape", p.shape)) >= 2]
    no_decay = [p for p in model.parameters() if len(getattr(p, "ds_shape", p.shape)) < 2]
    groups = [{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}]
    engine, opt, _, _ = deepspeed.initialize(model=model, model_parameters=groups, config=cfg)
    engine.train()
    return engine, opt, n_params, cfg


def make_step(engine):
    def step(x, y):
        loss = engine(x, y)
        engine.backward(loss)
        engine.step()
        return loss

    return step


def destroy(engine):
    """what DeepSpeed offers to let go of an engine (its hooks), where it has it"""
    fn = getattr(engine, "destroy", None)
    if fn is not None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 (best effort: the objects are dropped anyway)
            print("deepspeed_gpt: engine.destroy(): %s" % e, flush=True)


def _trial(a, device, B):
    a.batch = B
    engine = None
    try:
        engine, _, _, _ = build_engine(a, device)
        step = make_step(engine)
        gen = torch.Generator(device=device)
        gen.manual_seed(a.seed)
        for _ in range(2):  # the second step holds the optimizer's state beside the activations
            x, y = base.random_batch(gen, a.vocab, B, a.seq, device)
            step(x, y)
        torch.cuda.synchronize(device)
    finally:
        if engine is not None:
            destroy(engine)


def trial_fits(a, device, B):
    """one trial of --find-max-batch: True if micro-batch B trains 2 steps with a fresh engine"""
    try:
        _trial(a, device, B)
        ok = True
    except Exception as e:  # noqa: BLE001 (OOM only)
        if not base.is_oom(e):
            raise
        ok = False
    base.free_memory(device)
    print("deepspeed_gpt: after the trial at micro-batch %d: %.2f GiB still allocated" %
          (B, base.gib(torch.cuda.memory_allocated(device))), flush=True)
    return ok


def train(a, rank, world, device, metrics):
    L, C, H, T, V = a.layers, a.dim, a.heads, a.seq, a.vocab
    gpu = torch.cuda.get_device_name(device)
    peak = a.peak_tflops if a.peak_tflops is not None else (base.detect_peak_tflops(gpu) or 989.4)
    if a.find_max_batch:
        best = base.find_max_batch(lambda b: trial_fits(a, device, b), "deepspeed")
        a.batch = max(best, 1)  # 0: the timed run at 1 runs out of memory and says so
        metrics.write({"event": "max_batch", "batch": best})
    B = a.batch
    if rank == 0:
        print("deepspeed_gpt: deepspeed %s, config %s" % (deepspeed.__version__, json.dumps(ds_config(a))), flush=True)
    engine, opt, n_params, cfg = build_engine(a, device)
    # the dtype the forward computes in: a parameter's partition at stage 3, the parameter itself below
    pdt = str(next(getattr(p, "ds_tensor", p) for p in engine.module.parameters()).dtype).replace("torch.", "")
    want = {"bf16": "bfloat16", "fp16": "float16"}[a.dtype]
    if pdt != want:
        raise SystemExit("deepspeed_gpt: the model's parameters are %s, not %s: DeepSpeed would compute in %s" %
                         (pdt, want, pdt))
    if rank == 0:
        print("deepspeed_gpt: optimizer %s inside %s; parameters %s" %
              (type(getattr(opt, "optimizer", opt)).__name__, type(opt).__name__, pdt), flush=True)

    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)
    fpt = base.flops_per_token(L, C, T, V)
    att = base.attention_flop_share(L, C, T, V)
    stage = "deepspeed-zero%d%s%s%s" % (a.stage, "-offopt" if a.offload_optimizer != "none" else "",
                                         "-offparam" if a.offload_param != "none" else "",
                                         ("-hfauto" if a.hf_auto else "") + ("-leaf" if a.leaf_blocks else ""))
    if rank == 0:
        metrics.write({"event": "start", "program": "deepspeed", "deepspeed": deepspeed.__version__,
                       "model": {"layers": L, "dim": C, "heads": H, "seq": T, "vocab": V, "params": n_params},
                       "stage": stage, "world": world, "batch": B, "gas": 1, "dtype": a.dtype,
                       "recompute": int(a.checkpoint_activations), "find_max_batch": int(a.find_max_batch),
                       "gpu": gpu, "peak_tflops": peak, "optimizer": type(getattr(opt, "optimizer", opt)).__name__,
                       "param_dtype": pdt,
                       "config": cfg})

    step = make_step(engine)
    step_ms, loss_v, wall = base.timed_steps(a, rank, world, device, step, "deepspeed_gpt")
    free, total = torch.cuda.mem_get_info(device)
    mem = torch.tensor([base.gib(torch.cuda.max_memory_reserved(device)), base.gib(torch.cuda.max_memory_allocated(device)),
                        base.gib(total - free), host_peak_gib()], device=device, dtype=torch.float64)
    dist.all_reduce(mem, op=dist.ReduceOp.MAX)
    reserved, allocated, used, host = mem.tolist()
    med = statistics.median(step_ms)
    tps = B * T / (med / 1e3)
    tflops = tps * fpt / 1e12
    if rank == 0:
        for j, (ms, lv) in enumerate(zip(step_ms, loss_v)):
            metrics.write({"event": "step", "step": a.warmup + j, "loss": lv, "step_ms": ms,
                           "tokens_per_s_per_gpu": B * T / (ms / 1e3)})
        metrics.write({"event": "end", "batch": B, "median_step_ms": med, "tokens_per_s_per_gpu": tps,
                       "tflops_per_gpu": tflops, "mfu": tflops / peak, "gpu_peak_gib": reserved,
                       "gpu_alloc_peak_gib": allocated, "attention_flop_share": att, "device_used_gib": used,
                       "host_peak_gib": host})
        print("deepspeed_gpt: %s %s L%d C%d H%d T%d V%d (%.1fM params) | %d GPU%s x mb %d%s | %.2f ms/step (median of "
              "%d; wall %.2f) | %.0f tok/s/GPU | %.1f TFLOP/s/GPU | MFU %.1f%% | peak reserved %.2f GiB, allocated "
              "%.2f GiB, device used %.2f GiB | host peak %.2f GiB | loss %.4f -> %.4f | %s"
              % (stage, a.dtype, L, C, H, T, V, n_params / 1e6, world, "s" if world > 1 else "", B,
                 ", recompute" if a.checkpoint_activations else "", med, len(step_ms), wall * 1e3 / len(step_ms), tps,
                 tflops, 100 * tflops / peak, reserved, allocated, used, host, loss_v[0], loss_v[-1], gpu), flush=True)


def main():
    a = parse_args()
    rank, world, device = base.init_dist()
    metrics = base.Metrics(a.metrics if rank == 0 else None, truncate=True)
    try:
        train(a, rank, world, device, metrics)
    except Exception as e:  # noqa: BLE001 (OOM only; the rest re-raised)
        if not base.is_oom(e):
            raise
        print("OOM at batch %d (rank %d): %s" % (a.batch, rank, str(e).splitlines()[0] if str(e) else ""), flush=True)
        if a.metrics:
            with open(a.metrics, "a") as f:
                f.write(json.dumps({"event": "oom", "batch": a.batch}) + "\n")
        metrics.close()
        sys.stdout.flush()
        os._exit(base.OOM_EXIT)
    metrics.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
