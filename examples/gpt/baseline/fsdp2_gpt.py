"""fsdp2_gpt.py - the PyTorch baseline for examples/gpt: the same GPT-2 as
gpt_model.h, trained with PyTorch FSDP2 (fully_shard), timed the same way.

    torchrun --standalone --nproc-per-node 2 examples/gpt/baseline/fsdp2_gpt.py \
        --preset 124M --seq 1024 --batch 8 --steps 20 --warmup 5 --metrics fsdp2.jsonl
    python3 examples/gpt/baseline/fsdp2_gpt.py ...   (one process, no torchrun)
    python3 examples/gpt/baseline/fsdp2_gpt.py --plain 1 --preset 1.5B --find-max-batch

The model (gpt_model.h's): pre-LN GPT-2, byte vocabulary (V = 256) by
default, learned wpe, biases where GPT-2 has them, GELU (tanh form),
LayerNorm eps 1e-5, the head tied to wte; init N(0, 0.02) for every weight
matrix and both embeddings, N(0, 0.02 / sqrt(2 L)) for the two residual
projections, biases 0, LayerNorm weights 1. nn.Linear keeps its weight
[out, in] (gpt_model.h stores [in, out]): the same math and parameter count.

The training: fully_shard on each block, then on the root;
MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), so the sharded
master parameters, their gradients and Adam's moments are fp32 and the
forward and backward run in bf16; torch.optim.AdamW(fused=True), biases and
LayerNorm parameters without weight decay; clip_grad_norm_ (default 1.0, as
zero's gradient_clipping); attention by scaled_dot_product_attention
(is_causal=True). --reshard-after-forward 1 frees the gathered parameters
after each block's forward and gathers them again for the backward (ZeRO-3's
traffic); 0 keeps them until the backward (ZeRO-2-like memory of the
parameters, no second all-gather).

--plain 1: plain PyTorch on one GPU, no FSDP and no process group, the
usual recipe for bf16 training: fp32 parameters, the forward (and the loss)
under torch.autocast("cuda", torch.bfloat16), the backward outside it (it
follows the forward's casts), fp32 gradients, the same fused AdamW and
clip_grad_norm_. Autocast keeps the bf16 copies of the weights that the
backward needs; LayerNorm and the loss run in fp32.

--checkpoint-activations 1: each block's forward runs inside
torch.utils.checkpoint (use_reentrant=False) and again in the backward; in
FSDP2 mode the checkpoint sits inside the block's FSDP unit, so the
parameters are gathered before the recomputation (torchtitan's order).

--find-max-batch (one GPU): the largest micro-batch that trains, found by
doubling from 1 until a trial runs out of memory, then bisecting. Each trial
builds a fresh model and optimizer and runs 2 steps (the second holds Adam's
moments beside the activations); torch.cuda.OutOfMemoryError is caught, the
trial's objects dropped, then gc.collect() and torch.cuda.empty_cache().
Prints "find-max-batch: the largest micro-batch is N" and times N as
--batch would (a fresh model again).

Data: random tokens uniform over [0, V), drawn on the GPU each step from a
generator seeded by (--seed, rank); inputs are T tokens, targets the same
row shifted by one. The loss stays near ln V: there is nothing to learn.

Timing: CUDA events around each step (forward, backward, clip, optimizer
step, zero_grad), with no host sync inside the loop; after the last step one
synchronize, then each step's elapsed time. Reported: the median over the
timed steps (warm-up steps excluded), tokens/s per GPU = batch * seq /
median, TFLOP/s per GPU = that * gpt_flops_per_token (6 (12 L C^2 + V C) +
12 L C T), MFU = that / --peak-tflops. Memory: the peaks of
max_memory_reserved / max_memory_allocated (the maximum over the ranks),
counted from after the model is built and sharded, and the device's used
memory (cudaMemGetInfo: also the CUDA context and NCCL's buffers).

Metrics (--metrics FILE, JSONL, written by rank 0): a "start" line, one
"step" line per timed step (the loss is the mean over the ranks), an "end"
line. Out of memory: prints "OOM at batch B", appends {"event":"oom",
"batch":B} to the metrics file (from whichever rank ran out) and exits with
status 3 (torchrun then stops the other ranks and exits with its own status,
1: a driver should look for the "oom" line, or "OOM at batch" in the output).
"""
import argparse
import gc
import json
import math
import os
import socket
import statistics
import sys
import time

try:
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError:
    print("fsdp2_gpt: torch is not installed: no PyTorch baseline", file=sys.stderr)
    sys.exit(1)

try:
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
except ImportError:  # torch < 2.6 kept FSDP2 under _composable
    from torch.distributed._composable.fsdp import MixedPrecisionPolicy, fully_shard
from torch.distributed.device_mesh import init_device_mesh
from torch.utils.checkpoint import checkpoint

# gpt_model.h's presets: name -> (layers, dim, heads)
PRESETS = {"124M": (12, 768, 12), "350M": (24, 1024, 16), "774M": (36, 1280, 20), "1.5B": (48, 1600, 25)}

LN_EPS = 1e-5
INIT_STD = 0.02
OOM_EXIT = 3


# ---- the model ----


class Block(nn.Module):
    def __init__(self, dim, heads, recompute):
        super().__init__()
        self.heads = heads
        self.recompute = recompute
        self.ln_1 = nn.LayerNorm(dim, eps=LN_EPS)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.attn_proj = nn.Linear(dim, dim)  # HF's attn.c_proj
        self.ln_2 = nn.LayerNorm(dim, eps=LN_EPS)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)  # HF's mlp.c_proj

    def _forward(self, x):
        B, T, C = x.shape
        H = self.heads
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q = q.view(B, T, H, C // H).transpose(1, 2)
        k = k.view(B, T, H, C // H).transpose(1, 2)
        v = v.view(B, T, H, C // H).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attn_proj(y)
        x = x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))
        return x

    def forward(self, x):
        # the checkpoint sits inside the FSDP unit (fully_shard's hooks run
        # around forward): torchtitan's order, checkpoint then fully_shard
        if self.recompute and torch.is_grad_enabled():
            return checkpoint(self._forward, x, use_reentrant=False)
        return self._forward(x)


class GPT(nn.Module):
    def __init__(self, layers, dim, heads, seq, vocab, recompute):
        super().__init__()
        self.layers, self.dim, self.seq, self.vocab = layers, dim, seq, vocab
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.h = nn.ModuleList([Block(dim, heads, recompute) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim, eps=LN_EPS)

    @torch.no_grad()
    def init_weights(self):
        resid_std = INIT_STD / math.sqrt(2.0 * self.layers)
        for name, p in self.named_parameters():
            if name.endswith("attn_proj.weight") or name.endswith("mlp_proj.weight"):
                nn.init.normal_(p, 0.0, resid_std)
            elif name.startswith("ln_") or ".ln_" in name:
                nn.init.ones_(p) if name.endswith(".weight") else nn.init.zeros_(p)
            elif name.endswith(".bias"):
                nn.init.zeros_(p)
            else:  # wte, wpe, c_attn.weight, c_fc.weight
                nn.init.normal_(p, 0.0, INIT_STD)

    def forward(self, idx, targets):
        T = idx.shape[1]
        pos = torch.arange(T, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight)  # tied head: ln_f(x) wte^T
        return F.cross_entropy(logits.float().view(-1, self.vocab), targets.reshape(-1))


def n_params_formula(L, C, T, V):
    """gpt_model.h's gpt_n_params"""
    return V * C + T * C + L * (12 * C * C + 13 * C) + 2 * C


def flops_per_token(L, C, T, V):
    """gpt_model.h's gpt_flops_per_token"""
    return 6.0 * (12.0 * L * C * C + V * C) + 12.0 * L * C * T


def attention_flop_share(L, C, T, V):
    return 12.0 * L * C * T / flops_per_token(L, C, T, V)


# ---- setup ----


def detect_peak_tflops(name):
    """dense bf16 peak (TFLOP/s) of the GPU named name, or None"""
    n = name.upper()
    if "H100" in n and "PCIE" in n:
        return 756.0
    if "H100" in n or "H200" in n or "H800" in n:  # SXM (and GH200): 989.4
        return 989.4
    if "B200" in n:
        return 2250.0
    if "A100" in n or "A800" in n:
        return 312.0
    return None


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def init_dist():
    """the process group; one process without torchrun is a world of 1"""
    if "RANK" not in os.environ:
        os.environ.update(RANK="0", WORLD_SIZE="1", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(free_port()))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    dist.init_process_group(backend="nccl", device_id=device)
    return dist.get_rank(), dist.get_world_size(), device


def parse_args():
    ap = argparse.ArgumentParser(
        description="GPT-2 (gpt_model.h) trained with PyTorch FSDP2 (or, with --plain 1, plain PyTorch with "
                    "bf16 autocast on one GPU), timed")
    ap.add_argument("--preset", choices=list(PRESETS), default=None,
                    help="gpt_model.h's sizes (layers, dim, heads); --layers/--dim/--heads override (default 124M)")
    ap.add_argument("--layers", type=int, default=None)
    ap.add_argument("--dim", type=int, default=None)
    ap.add_argument("--heads", type=int, default=None)
    ap.add_argument("--seq", type=int, default=1024, help="T, the context (default 1024)")
    ap.add_argument("--vocab", type=int, default=256, help="V (default 256: bytes)")
    ap.add_argument("--batch", type=int, default=8, help="micro-batch per GPU (default 8)")
    ap.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first (default 5)")
    ap.add_argument("--lr", type=float, default=3e-4, help="AdamW lr (default 3e-4)")
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--wd", type=float, default=0.0,
                    help="weight decay of the weight matrices and embeddings; biases and LayerNorm exempt (default 0)")
    ap.add_argument("--clip", type=float, default=1.0, help="clip_grad_norm_ max norm (default 1.0; 0 disables)")
    ap.add_argument("--reshard-after-forward", type=int, choices=(0, 1), default=1,
                    help="1: free gathered params after forward (ZeRO-3-like, default); 0: keep them (ZeRO-2-like)")
    ap.add_argument("--compile", type=int, choices=(0, 1), default=0, help="torch.compile each block (default 0)")
    ap.add_argument("--checkpoint-activations", type=int, choices=(0, 1), default=0,
                    help="recompute each block in the backward (torch.utils.checkpoint, non-reentrant)")
    ap.add_argument("--plain", type=int, choices=(0, 1), default=0,
                    help="1: one GPU, no FSDP, no process group: fp32 parameters, forward under "
                         "torch.autocast(cuda, bf16), fused AdamW on fp32 gradients (PyTorch's usual bf16 "
                         "recipe; default 0: FSDP2)")
    ap.add_argument("--find-max-batch", action="store_true",
                    help="one GPU: the largest micro-batch that fits (doubling from 1, then bisecting; a trial is "
                         "a fresh model and optimizer and 2 steps, out of memory caught), then time it")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--metrics", default=None, help="JSONL file (rank 0 writes it)")
    ap.add_argument("--peak-tflops", type=float, default=None,
                    help="bf16 dense peak per GPU for MFU (default: from the GPU's name, 989.4 for H100/H200 SXM)")
    a = resolve_shape(ap, ap.parse_args())
    if a.find_max_batch and a.compile:
        ap.error("--find-max-batch and --compile: a trial per batch would compile again; give one")
    launched = int(os.environ.get("WORLD_SIZE", "1"))
    if a.plain and launched > 1:
        ap.error("--plain 1 is one process on one GPU (WORLD_SIZE is %d)" % launched)
    if a.find_max_batch and launched > 1:
        ap.error("--find-max-batch runs on one GPU: an out-of-memory rank would leave the others in a collective")
    return a


def resolve_shape(ap, a):
    """--preset's sizes where --layers / --dim / --heads are not given, then the checks every baseline shares"""
    L, C, H = PRESETS[a.preset or "124M"]
    a.layers = a.layers if a.layers is not None else L
    a.dim = a.dim if a.dim is not None else C
    a.heads = a.heads if a.heads is not None else H
    if a.dim % a.heads:
        ap.error("--dim %d is not a multiple of --heads %d" % (a.dim, a.heads))
    if min(a.layers, a.dim, a.heads, a.seq, a.vocab, a.batch, a.steps) < 1 or a.warmup < 0:
        ap.error("sizes and --steps must be positive, --warmup not negative")
    return a


# ---- metrics ----


class Metrics:
    """JSONL lines, flushed one by one (append: an oom line from another rank lands too)"""

    def __init__(self, path, truncate):
        self.f = None
        if path:
            if truncate:
                open(path, "w").close()
            self.f = open(path, "a")

    def write(self, obj):
        if self.f:
            self.f.write(json.dumps(obj) + "\n")
            self.f.flush()

    def close(self):
        if self.f:
            self.f.close()
            self.f = None


def gib(x):
    return x / 2.0**30


# ---- the run ----


def random_batch(gen, V, B, T, device):
    """B rows of T + 1 random tokens: inputs, and targets shifted by one"""
    tok = torch.randint(0, V, (B, T + 1), device=device, generator=gen)
    return tok[:, :-1], tok[:, 1:]


def timed_steps(a, rank, world, device, step, who):
    """a.warmup + a.steps calls of step(x, y) -> loss on random tokens (seeded by a.seed and rank), the
    timed ones between CUDA events with no host sync inside the loop: (each step's ms, each step's loss
    averaged over the ranks, wall seconds of the timed steps)"""
    V, B, T = a.vocab, a.batch, a.seq
    gen = torch.Generator(device=device)
    gen.manual_seed(a.seed * 1000003 + rank)
    events, losses = [], []
    wall0 = None
    for i in range(a.warmup + a.steps):
        timed = i >= a.warmup
        x, y = random_batch(gen, V, B, T, device)
        if timed:
            if wall0 is None:
                torch.cuda.synchronize(device)
                wall0 = time.perf_counter()
            ev0 = torch.cuda.Event(enable_timing=True)
            ev1 = torch.cuda.Event(enable_timing=True)
            ev0.record()
        loss = step(x, y)
        if timed:
            ev1.record()
            events.append((ev0, ev1))
            losses.append(loss.detach().float())
        elif i == 0 and rank == 0:
            # the first step's loss, a check of the init (about ln V); a sync outside the timed steps
            print("%s: step 0 loss %.4f (ln V = %.4f)" % (who, loss.item(), math.log(V)), flush=True)
    torch.cuda.synchronize(device)
    wall = time.perf_counter() - wall0
    step_ms = [e0.elapsed_time(e1) for e0, e1 in events]
    loss_t = torch.stack(losses)
    if dist.is_available() and dist.is_initialized():  # --plain 1 has no process group
        dist.all_reduce(loss_t, op=dist.ReduceOp.SUM)
    return step_ms, (loss_t / world).tolist(), wall


def free_memory(device):
    """after a trial: the dropped objects collected (cycles too), the allocator's cache back to the driver"""
    gc.collect()
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()


def find_max_batch(fits, who):
    """the largest micro-batch B with fits(B) (0 if not even 1): doubling from 1 until a trial does not fit,
    then bisecting the gap (build/gpt's search)"""
    lo, hi, b = 0, 0, 1
    while not hi or hi - lo > 1:
        t0 = time.perf_counter()
        ok = fits(b)
        print("find-max-batch: micro-batch %d %s (%.1f s)" % (b, "fits" if ok else "does not fit",
                                                              time.perf_counter() - t0), flush=True)
        if ok:
            lo = b
        else:
            hi = b
        if hi == 1:
            break
        b = (lo + hi) // 2 if hi else 2 * b
    print("find-max-batch: the largest micro-batch is %d" % lo if lo else
          "find-max-batch: not even micro-batch 1 fits (%s)" % who, flush=True)
    return lo


def build(a, device, world, mesh):
    """a fresh model (seeded: the same on every rank), built on the GPU, sharded unless --plain, and its
    fused AdamW: (model, optimizer, parameter count)"""
    L, C, H, T, V = a.layers, a.dim, a.heads, a.seq, a.vocab
    torch.manual_seed(a.seed)
    with torch.device(device):  # the default init runs on the GPU: no slow CPU init of a large model
        model = GPT(L, C, H, T, V, bool(a.checkpoint_activations))
    model.init_weights()
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params == n_params_formula(L, C, T, V), (n_params, n_params_formula(L, C, T, V))
    if a.compile:
        for i, block in enumerate(model.h):
            model.h[i] = torch.compile(block)
    if not a.plain:
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        reshard = bool(a.reshard_after_forward)
        for block in model.h:
            fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)
        fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=reshard)

    decay = [p for p in model.parameters() if p.ndim >= 2]
    no_decay = [p for p in model.parameters() if p.ndim < 2]
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": a.wd}, {"params": no_decay, "weight_decay": 0.0}],
        lr=a.lr, betas=(a.beta1, a.beta2), eps=a.eps, fused=True)
    model.train()
    return model, opt, n_params


def make_step(a, model, opt):
    """one training step on (x, y): forward (under bf16 autocast with --plain 1), backward, clip, AdamW"""

    def step(x, y):
        if a.plain:
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(x, y)
        else:
            loss = model(x, y)  # FSDP2's MixedPrecisionPolicy casts
        loss.backward()
        if a.clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), a.clip, foreach=True)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    return step


def _trial(a, device, world, mesh, B):
    model, opt, _ = build(a, device, world, mesh)
    step = make_step(a, model, opt)
    gen = torch.Generator(device=device)
    gen.manual_seed(a.seed)
    for _ in range(2):  # the second step holds Adam's moments beside the activations
        x, y = random_batch(gen, a.vocab, B, a.seq, device)
        step(x, y)
    torch.cuda.synchronize(device)


def trial_fits(a, device, world, mesh, B):
    """one trial of --find-max-batch: True if micro-batch B trains 2 steps; every object of the trial is
    gone afterwards (its frame with it), the memory freed"""
    try:
        _trial(a, device, world, mesh, B)
        ok = True
    except Exception as e:  # noqa: BLE001 (OOM only)
        if not is_oom(e):
            raise
        ok = False  # leaving the except block drops the traceback, and with it the trial's frame
    free_memory(device)
    return ok


def train(a, rank, world, device, metrics):
    L, C, H, T, V = a.layers, a.dim, a.heads, a.seq, a.vocab
    gpu = torch.cuda.get_device_name(device)
    peak = a.peak_tflops if a.peak_tflops is not None else detect_peak_tflops(gpu)
    if peak is None:
        peak = 989.4
        if rank == 0:
            print("fsdp2_gpt: unknown GPU %r: MFU against 989.4 TFLOP/s (set --peak-tflops)" % gpu)
    mesh = None if a.plain else init_device_mesh("cuda", (world,))
    if a.plain:
        stage = "torch-autocast"
    else:
        stage = "fsdp2-reshard" if a.reshard_after_forward else "fsdp2-noreshard"

    if a.find_max_batch:
        best = find_max_batch(lambda b: trial_fits(a, device, world, mesh, b), stage)
        a.batch = max(best, 1)  # 0: the timed run at 1 runs out of memory and says so
        metrics.write({"event": "max_batch", "batch": best})
    B = a.batch

    model, opt, n_params = build(a, device, world, mesh)
    # peaks from here: the build's transients are gone (with FSDP2, the unsharded model)
    torch.cuda.synchronize(device)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(device)

    fpt = flops_per_token(L, C, T, V)
    att = attention_flop_share(L, C, T, V)
    if rank == 0:
        metrics.write({"event": "start", "program": "torch" if a.plain else "fsdp2",
                       "model": {"layers": L, "dim": C, "heads": H, "seq": T, "vocab": V, "params": n_params},
                       "stage": stage, "world": world, "batch": B, "gas": 1, "dtype": "bf16",
                       "recompute": int(a.checkpoint_activations), "gpu": gpu, "peak_tflops": peak,
                       "compile": int(a.compile), "find_max_batch": int(a.find_max_batch)})

    step = make_step(a, model, opt)
    step_ms, loss_v, wall = timed_steps(a, rank, world, device, step, "fsdp2_gpt")

    free, total = torch.cuda.mem_get_info(device)
    mem = torch.tensor([gib(torch.cuda.max_memory_reserved(device)), gib(torch.cuda.max_memory_allocated(device)),
                        gib(total - free)], device=device, dtype=torch.float64)
    if not a.plain:
        dist.all_reduce(mem, op=dist.ReduceOp.MAX)
    reserved, allocated, used = mem.tolist()

    med = statistics.median(step_ms)
    tps = B * T / (med / 1e3)
    tflops = tps * fpt / 1e12
    mfu = tflops / peak
    if rank == 0:
        for j, (ms, lv) in enumerate(zip(step_ms, loss_v)):
            metrics.write({"event": "step", "step": a.warmup + j, "loss": lv, "step_ms": ms,
                           "tokens_per_s_per_gpu": B * T / (ms / 1e3)})
        metrics.write({"event": "end", "batch": B, "median_step_ms": med, "tokens_per_s_per_gpu": tps,
                       "tflops_per_gpu": tflops, "mfu": mfu, "gpu_peak_gib": reserved, "gpu_alloc_peak_gib": allocated,
                       "attention_flop_share": att, "device_used_gib": used})
        print("fsdp2_gpt: %s L%d C%d H%d T%d V%d (%.1fM params) | %d GPU%s x mb %d%s%s | %.2f ms/step (median of %d; "
              "wall %.2f) | %.0f tok/s/GPU | %.1f TFLOP/s/GPU | MFU %.1f%% of %.1f (attention %.1f%% of the FLOPs) | "
              "peak reserved %.2f GiB, allocated %.2f GiB, device used %.2f GiB | loss %.4f -> %.4f | %s"
              % (stage, L, C, H, T, V, n_params / 1e6, world, "s" if world > 1 else "", B,
                 ", recompute" if a.checkpoint_activations else "", ", compiled" if a.compile else "",
                 med, len(step_ms), wall * 1e3 / len(step_ms), tps, tflops, 100 * mfu, peak, 100 * att,
                 reserved, allocated, used, loss_v[0], loss_v[-1], gpu), flush=True)


def is_oom(e):
    if isinstance(e, torch.cuda.OutOfMemoryError):
        return True
    return isinstance(e, RuntimeError) and "out of memory" in str(e).lower()


def init_plain():
    """--plain 1: the one GPU (LOCAL_RANK's under a launcher), no process group"""
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
    return 0, 1, device


def main():
    a = parse_args()
    rank, world, device = init_plain() if a.plain else init_dist()
    metrics = Metrics(a.metrics if rank == 0 else None, truncate=True)
    try:
        train(a, rank, world, device, metrics)
    except Exception as e:  # noqa: BLE001 (OOM only; the rest re-raised)
        if not is_oom(e):
            raise
        print("OOM at batch %d (rank %d): %s" % (a.batch, rank, str(e).splitlines()[0] if str(e) else ""),
              flush=True)
        if a.metrics:
            line = json.dumps({"event": "oom", "batch": a.batch}) + "\n"
            with open(a.metrics, "a") as f:  # one short append per rank that ran out
                f.write(line)
        metrics.close()
        sys.stdout.flush()
        sys.stderr.flush()
        # no destroy_process_group: the other ranks may sit in a collective
        os._exit(OOM_EXIT)
    metrics.close()
    if not a.plain:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
