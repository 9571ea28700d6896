#!/usr/bin/env python3
"""hf_check.py - the Hugging Face side of examples/gpt/hf_check.sh: GPT-2
models, token batches and reference losses and logits from transformers,
for checking build/gpt --init-from / --eval / --export against them.

    make DIR --layers L --dim C --heads H --positions P [--vocab 50257] [--seed S]
             [--std 0.02] [--shard-mb N] [--device cuda|cpu]
        GPT2LMHeadModel(GPT2Config(...)) with random weights, every LayerNorm
        weight and bias and every bias moved off its default too, then
        save_pretrained(DIR) (sharded by max_shard_size with --shard-mb).
    tokens FILE --batch B --seq T [--vocab 50257] [--seed S]
        B x (T + 1) uniform random token ids < vocab, raw little-endian uint16.
    pattern TRAIN EVAL --tokens N --batch B --seq T [--vocab 50257] [--seed S]
        structured data a model can learn: phrases of random ids repeated in
        random order; N tokens of them into TRAIN (*.u16) and B x (T + 1)
        more into EVAL.
    loss DIR FILE --seq T [--dtype fp32|bf16|fp16] [--logits OUT]
        transformers' mean next-token loss on the batch in FILE, as gpt
        computes it: the logits of positions [0, T) against the targets
        [1, T], averaged over all B x T positions. The model in dtype on the
        GPU (eager attention, no TF32), the loss in float64. --logits writes
        the logits as float32 [B, T, V].
    compare A B
        max|a - b| and max|a - b| / max|b| of two float32 files.
    load-check DIR
        GPT2LMHeadModel.from_pretrained(DIR, output_loading_info=True):
        fails unless missing, unexpected and mismatched keys are all empty.

Every number this prints for hf_check.sh is on a line of its own as
"name value" after "result:", so the script reads it with sed."""

import argparse
import math
import os
import sys
import time

import numpy as np


def log(*a):
    print(*a, flush=True)


def result(name, value):
    print(f"result: {name} {value!r}", flush=True)


def device_of(arg):
    import torch

    if arg:
        return torch.device(arg)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def no_tf32():
    import torch

    torch.set_float32_matmul_precision("highest")  # fp32 GEMMs in fp32, as gpt without --tf32
    torch.backends.cudnn.allow_tf32 = False


def cmd_make(a):
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    t0 = time.time()
    dev = device_of(a.device)
    cfg = GPT2Config(n_layer=a.layers, n_embd=a.dim, n_head=a.heads, n_positions=a.positions, vocab_size=a.vocab,
                     initializer_range=a.std, activation_function="gelu_new", layer_norm_epsilon=1e-5,
                     tie_word_embeddings=True)
    torch.manual_seed(a.seed)
    with torch.device(dev):  # built where it is initialised: on the GPU GPT-2 XL takes seconds, not minutes
        model = GPT2LMHeadModel(cfg)
    g = torch.Generator(device=dev).manual_seed(a.seed + 1)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim != 1:
                continue
            if ".ln_" in name or name.startswith("transformer.ln_f") or ".ln_f." in name:
                base = 1.0 if name.endswith("weight") else 0.0
                std = 0.1 if name.endswith("weight") else 0.02
            else:
                base, std = 0.0, 0.02  # the linear layers' biases
            p.copy_(base + std * torch.randn(p.shape, generator=g, device=dev, dtype=p.dtype))
    n = sum(p.numel() for p in model.parameters())
    kw = {"max_shard_size": f"{a.shard_mb}MB"} if a.shard_mb else {"max_shard_size": "100GB"}
    model.save_pretrained(a.dir, **kw)
    files = sorted(os.listdir(a.dir))
    log(f"make: {a.dir}: {n} parameters (L {a.layers}, C {a.dim}, H {a.heads}, P {a.positions}, V {a.vocab}), "
        f"{len([f for f in files if f.endswith('.safetensors')])} safetensors file(s), {time.time() - t0:.1f} s")
    result("params", n)


def cmd_tokens(a):
    rng = np.random.default_rng(a.seed)
    ids = rng.integers(0, a.vocab, size=a.batch * (a.seq + 1), dtype=np.int64).astype("<u2")
    ids.tofile(a.file)
    log(f"tokens: {a.file}: {a.batch} x {a.seq + 1} ids < {a.vocab}")


def cmd_pattern(a):
    rng = np.random.default_rng(a.seed)
    # 256 phrases of 4 to 12 ids, drawn from the whole vocabulary
    phrases = [rng.integers(0, a.vocab, size=int(rng.integers(4, 13)), dtype=np.int64) for _ in range(256)]

    def stream(n):
        out, have = [], 0
        while have < n:
            p = phrases[int(rng.integers(0, len(phrases)))]
            out.append(p)
            have += len(p)
        return np.concatenate(out)[:n].astype("<u2")

    stream(a.tokens).tofile(a.train)
    stream(a.batch * (a.seq + 1)).tofile(a.eval)
    log(f"pattern: {a.train}: {a.tokens} ids; {a.eval}: {a.batch} x {a.seq + 1} ids (256 phrases of 4-12 ids)")


def load_model(path, dtype, dev):
    import torch
    from transformers import GPT2LMHeadModel

    model = GPT2LMHeadModel.from_pretrained(path, attn_implementation="eager")  # loaded in fp32
    dt = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    return model.to(device=dev, dtype=dt).eval()


def cmd_loss(a):
    import torch
    import torch.nn.functional as F

    no_tf32()
    dev = device_of(a.device)
    ids = np.fromfile(a.file, dtype="<u2").astype(np.int64)
    row = a.seq + 1
    if ids.size == 0 or ids.size % row:
        sys.exit(f"loss: {a.file}: {ids.size} ids are not whole rows of {row}")
    B = ids.size // row
    t0 = time.time()
    model = load_model(a.dir, a.dtype, dev)
    x = torch.from_numpy(ids).view(B, row).to(dev)
    with torch.no_grad():
        logits = model(input_ids=x[:, : a.seq]).logits  # [B, T, V]
        V = logits.shape[-1]
        loss = F.cross_entropy(logits.double().reshape(-1, V), x[:, 1:].reshape(-1), reduction="mean").item()
    log(f"hf loss {loss:.9f} ({B} x {a.seq} tokens, {a.dtype}, {time.time() - t0:.1f} s)")
    result("loss", loss)
    if a.logits:
        logits.float().cpu().numpy().astype("<f4").tofile(a.logits)
        log(f"hf logits: {a.logits}, float32 [{B}, {a.seq}, {V}]")


def cmd_compare(a):
    x = np.fromfile(a.a, dtype="<f4")
    y = np.fromfile(a.b, dtype="<f4")
    if x.size != y.size or x.size == 0:
        sys.exit(f"compare: {a.a} has {x.size} values, {a.b} {y.size}")
    # a NaN or an infinity on either side is no match: both results are inf then, whatever
    # the finite values give (np.max of an array with a NaN is NaN, which compares false)
    bad = int(np.count_nonzero(~np.isfinite(x))), int(np.count_nonzero(~np.isfinite(y)))
    d = np.abs(x.astype(np.float64) - y.astype(np.float64))
    mx = float(np.max(np.abs(y))) if not bad[1] else math.inf
    diff = float(np.max(d)) if not any(bad) else math.inf
    rel = diff / mx if not any(bad) and mx > 0 else math.inf
    log(f"compare: {a.a} vs {a.b}: {x.size} values, max|a-b| {diff:.3e}, max|b| {mx:.4g}, "
        f"max|a-b|/max|b| {rel:.3e}" + (f" (not finite: {bad[0]} in a, {bad[1]} in b)" if any(bad) else ""))
    result("max_abs", diff)
    result("rel", rel)


def cmd_load_check(a):
    from transformers import GPT2LMHeadModel

    model, info = GPT2LMHeadModel.from_pretrained(a.dir, output_loading_info=True)
    bad = {k: sorted(map(str, info.get(k) or [])) for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
    errs = list(info.get("error_msgs") or [])
    tied = model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()
    for k, v in bad.items():
        log(f"load-check: {k}: {v if v else 'none'}")
    if errs:
        log(f"load-check: error_msgs: {errs}")
    log(f"load-check: lm_head tied to wte: {tied}")
    ok = not any(bad.values()) and not errs and tied
    result("ok", 1 if ok else 0)
    sys.exit(0 if ok else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("dir")
    m.add_argument("--layers", type=int, required=True)
    m.add_argument("--dim", type=int, required=True)
    m.add_argument("--heads", type=int, required=True)
    m.add_argument("--positions", type=int, required=True)
    m.add_argument("--vocab", type=int, default=50257)
    m.add_argument("--seed", type=int, default=1)
    m.add_argument("--std", type=float, default=0.02, help="initializer_range (the matrices' std)")
    m.add_argument("--shard-mb", type=int, default=0, help="max_shard_size in MB: a sharded save")
    m.add_argument("--device", default=None)
    toks = argparse.ArgumentParser(add_help=False)  # what the two token writers share
    toks.add_argument("--batch", type=int, required=True)
    toks.add_argument("--seq", type=int, required=True)
    toks.add_argument("--vocab", type=int, default=50257)
    toks.add_argument("--seed", type=int, default=1)
    t = sub.add_parser("tokens", parents=[toks])
    t.add_argument("file")
    q = sub.add_parser("pattern", parents=[toks])
    q.add_argument("train")
    q.add_argument("eval")
    q.add_argument("--tokens", type=int, required=True)
    lo = sub.add_parser("loss")
    lo.add_argument("dir")
    lo.add_argument("file")
    lo.add_argument("--seq", type=int, required=True)
    lo.add_argument("--dtype", choices=["fp32", "bf16", "fp16"], default="fp32")
    lo.add_argument("--logits", default=None)
    lo.add_argument("--device", default=None)
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    lc = sub.add_parser("load-check")
    lc.add_argument("dir")
    a = p.parse_args()
    {"make": cmd_make, "tokens": cmd_tokens, "pattern": cmd_pattern, "loss": cmd_loss, "compare": cmd_compare,
     "load-check": cmd_load_check}[a.cmd](a)


if __name__ == "__main__":
    main()
