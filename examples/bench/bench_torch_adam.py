"""bench_torch_adam.py - PyTorch's optimizer step on the GPU that bench_optim
timed zero's on, and the ratios (make bench runs bench_optim first).

    python3 examples/bench/bench_torch_adam.py --zero build/bench/optim_zero.txt [--params 1e9] [--tensors 50]

Same parameter count and tensor split as bench_optim (read from its file).
Timed with CUDA events, median of -n steps after -w warm-up steps:
  fused     torch.optim.AdamW(fused=True).step() alone: fp32 parameters and
            gradients, fp32 m and v (reads p, g, m, v; writes p, m, v: 28 bytes
            per parameter, as zero's kernel)
  sequence  PyTorch's mixed-precision step, what zero_step does: GradScaler
            .unscale_ (torch._amp_foreach_non_finite_check_and_unscale_: inf
            check and unscale), clip_grad_norm_(1.0), GradScaler.step (the fused
            AdamW, which skips on inf without a host sync), GradScaler.update,
            and the cast of the fp32 parameters to the fp16 copy the forward
            uses (torch._foreach_copy_). Gradients are fp32 (autocast keeps
            fp32 parameters, so its backward writes fp32 gradients); they are
            refilled from a saved copy before each step, outside the events.
Inputs are random normal; nothing is timed on zeros.
"""
import argparse
import os
import statistics
import sys

try:
    import torch
except ImportError:
    print("bench_torch_adam: torch is not installed: no PyTorch baseline", file=sys.stderr)
    sys.exit(1)


def read_zero(path):
    out = {}
    with open(path) as f:
        for line in f:
            k, _, v = line.strip().partition(" ")
            out[k] = v
    return out


def timed(fn, iters, warmup, before=None):
    times = []
    for i in range(warmup + iters):
        if before is not None:
            before()
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        if i >= warmup:
            times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zero", required=True, help="bench_optim's --out file")
    ap.add_argument("-n", type=int, default=20)
    ap.add_argument("-w", type=int, default=3)
    args = ap.parse_args()
    z = read_zero(args.zero)
    n_params, n_tensors = int(z["params"]), int(z["tensors"])
    per = n_params // n_tensors
    dev = torch.device("cuda", 0)
    torch.manual_seed(0)
    name = torch.cuda.get_device_name(dev)
    print(f"# bench_torch_adam: torch {torch.__version__}, {name}; {n_params} parameters ({n_tensors} tensors of {per})")
    if name != z.get("device"):
        print(f"# warning: bench_optim ran on '{z.get('device')}', this on '{name}'")

    # device-to-device copy through torch, as a cross-check of bench_optim's
    src = torch.randn(500_000_000, device=dev)
    dst = torch.empty_like(src)
    copy_ms = timed(lambda: dst.copy_(src), args.n, args.w)
    torch_copy_gbps = 2 * src.numel() * 4 / (copy_ms * 1e-3) / 1e9
    del src, dst

    params = [torch.nn.Parameter(torch.randn(per, device=dev) * 0.05) for _ in range(n_tensors)]
    for p in params:
        p.grad = torch.randn(per, device=dev) * 1e-3
    opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, fused=True)
    fused_ms = timed(opt.step, args.n, args.w)

    # the mixed-precision sequence
    scale = 65536.0
    saved = [torch.randn(per, device=dev) * (1e-3 * scale) for _ in range(n_tensors)]
    half = [torch.empty(per, device=dev, dtype=torch.float16) for _ in range(n_tensors)]
    scaler = torch.amp.GradScaler("cuda", init_scale=scale, growth_interval=1_000_000)
    scaler.scale(torch.ones((), device=dev))  # makes the scaler's scale tensor (a forward would)
    grads = [p.grad for p in params]

    def refill():
        torch._foreach_copy_(grads, saved)

    def sequence():
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        scaler.step(opt)
        scaler.update()
        torch._foreach_copy_(half, [p.detach() for p in params])

    seq_ms = timed(sequence, args.n, args.w, before=refill)
    torch.cuda.synchronize()
    mem_gb = torch.cuda.max_memory_allocated(dev) / 1e9

    copy_gbps = float(z["copy_gbps"])
    adam_ms, step_ms = float(z["adam_ms"]), float(z["step_ms"])

    def gbps(ms):
        return 28 * n_params / (ms * 1e-3) / 1e9

    print(f"# torch peak memory {mem_gb:.1f} GB; device-to-device copy: {copy_gbps:.1f} GB/s (bench_optim, cudaMemcpy), "
          f"{torch_copy_gbps:.1f} GB/s (torch copy_), read + write")
    print(f"# {'':44s} {'time (ms)':>10s} {'GB/s@28B':>9s} {'% of copy':>9s}")
    rows = [
        ("zero: fused Adam kernel (backend adam)", adam_ms),
        ("torch: AdamW(fused=True).step()", fused_ms),
        ("zero: zero_step (engine, fp16, stage 2)", step_ms),
        ("torch: unscale_+clip+fused AdamW+cast", seq_ms),
    ]
    for label, ms in rows:
        print(f"  {label:44s} {ms:10.3f} {gbps(ms):9.1f} {100 * gbps(ms) / copy_gbps:8.1f}%")
    r1 = fused_ms / adam_ms
    r2 = seq_ms / step_ms
    r3 = gbps(adam_ms) / copy_gbps
    r4 = gbps(step_ms) / copy_gbps
    print(f"# torch fused AdamW / zero Adam kernel     = {r1:.2f}x (target >= 1.0: {'met' if r1 >= 1.0 else 'missed'})")
    print(f"# torch AdamW alone / zero_step            = {fused_ms / step_ms:.2f}x")
    print(f"# torch mixed-precision sequence / zero_step = {r2:.2f}x (target >= 1.6: {'met' if r2 >= 1.6 else 'missed'})")
    print(f"# zero Adam kernel at 28 B/param = {100 * r3:.1f}% of copy bandwidth "
          f"(target >= 90%: {'met' if r3 >= 0.9 else 'missed'}); zero_step = {100 * r4:.1f}%")


if __name__ == "__main__":
    main()
