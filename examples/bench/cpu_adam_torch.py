"""cpu_adam_torch.py - PyTorch's CPU optimizer step on the parameter counts
cpu_adam timed zero's on, and the ratios against the targets (make
bench-cpu runs cpu_adam first, then this).

    python3 examples/bench/cpu_adam_torch.py --zero build/bench/cpu_adam.txt [-n 10] [-w 2] [--threads T]

Same parameter counts (one flat tensor each, like zero's flat buffer) and the
same thread count as zero's all-threads rows (read from cpu_adam's file;
torch.set_num_threads). Timed with time.perf_counter (monotonic), median of -n
steps after -w warm-up steps:
  fused     torch.optim.AdamW(fused=True).step() on fp32 parameters and
            gradients, fp32 m and v: reads p, g, m, v, writes p, m, v: 28 bytes
            per parameter, as zero's fp32 variant. Where this torch has no CPU
            fused AdamW it falls back to foreach=True and says so.
  sequence  PyTorch's equivalent of one offload step, what zero_cpu_adam does
            in one pass: copy the fp16 gradients into the fp32 .grad (2 + 4
            bytes), unscale (.grad.mul_(1/scale): 4 + 4), the fused AdamW step
            (28), cast the parameters to the fp16 copy (4 + 2): 48 bytes per
            parameter in four passes.
Ratios printed (the targets, at 1e9 parameters):
  torch fused AdamW time / zero fp32 variant time      >= 1.0x
  torch offload sequence time / zero fp16 variant time >= 2.0x
  zero fp16 variant GB/s at 28 B/param / memory bandwidth (the fastest of
  cpu_adam's kernels: copy, triad, their streaming-store forms, and the
  Adam-shaped 4-read 3-write kernel with cached and streaming stores; all
  threads, same buffers' size; the line names the kernel) >= 85%
Inputs are random uniform; nothing is timed on zeros.
"""
import argparse
import gc
import os
import statistics
import sys
import time


def read_zero(path):
    hdr, adam, stream, bw, kernels, skipped = {}, {}, {}, {}, {}, []
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "adam":  # adam N fp16|fp32 simd threads ms X n K
                n, var, simd, th = int(w[1]), w[2], w[3], int(w[4])
                adam[(n, var, simd, th)] = float(w[6])
            elif w[0] == "stream":  # stream N threads copy_gbps X triad_gbps Y
                stream[(int(w[1]), int(w[2]))] = (float(w[4]), float(w[6]))
            elif w[0] == "bw":  # bw N threads gbps X kernel NAME (the fastest kernel)
                bw[(int(w[1]), int(w[2]))] = (float(w[4]), w[6])
            elif w[0] == "kernel":  # kernel N threads NAME gbps X ms Y
                kernels.setdefault((int(w[1]), int(w[2])), []).append((w[3], float(w[5])))
            elif w[0] == "skipped":
                skipped.append(int(w[1]))
            else:
                hdr[w[0]] = line.strip()[len(w[0]) + 1:]
    # files from before the "bw" lines: the larger of copy and triad
    for key, (c, t) in stream.items():
        bw.setdefault(key, (max(c, t), "copy" if c >= t else "triad"))
    return hdr, adam, bw, kernels, skipped


def mem_available():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def timed(fn, iters, warmup):
    for _ in range(warmup):
        fn()
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


def verdict(ok):
    return "met" if ok else "missed"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--zero", required=True, help="cpu_adam's --out file")
    ap.add_argument("-n", type=int, default=10)
    ap.add_argument("-w", type=int, default=2)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (default: cpu_adam's all-threads count)")
    args = ap.parse_args()
    hdr, adam, bws, kernels, skipped = read_zero(args.zero)
    try:
        import torch
    except ImportError:
        print("cpu_adam_torch: torch is not installed: no PyTorch baseline", file=sys.stderr)
        sys.exit(1)

    zt = int(hdr.get("threads", "0")) or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    threads = args.threads or zt
    torch.set_num_threads(threads)
    simd = hdr.get("simd", "scalar")
    torch.manual_seed(0)
    print(f"# cpu_adam_torch: torch {torch.__version__}, {torch.get_num_threads()} threads "
          f"(zero: {zt} threads, {simd}); cpu: {hdr.get('cpu', '?')}")
    print(f"# time.perf_counter, median of {args.n} after {args.w} warm-up; GB/s at 28 B/param "
          "(the sequence moves 48 B/param: copy 6, unscale 8, AdamW 28, cast 6)")

    # does this torch have a CPU fused AdamW?
    fused_kind = "fused=True"
    try:
        p = torch.nn.Parameter(torch.zeros(64))
        p.grad = torch.ones(64)
        torch.optim.AdamW([p], lr=1e-3, fused=True).step()
    except (RuntimeError, TypeError, ValueError) as e:
        fused_kind = "foreach=True"
        print(f"# NOTE: AdamW(fused=True) on CPU is not available in torch {torch.__version__} "
              f"({str(e).splitlines()[0]}): the baseline is AdamW(foreach=True)")

    def make_opt(params):
        if fused_kind == "fused=True":
            return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, fused=True)
        return torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, foreach=True)

    sizes = sorted({k[0] for k in adam})
    for n in skipped:
        print(f"# {n} parameters: skipped by cpu_adam (memory); skipped here too")
    results = {}
    for N in sizes:
        need = 20 * N  # p, grad, m, v fp32; fp16 grads; fp16 params
        avail = mem_available()
        if avail and need > 0.9 * avail:
            print(f"# SKIPPED {N} parameters: needs {need / 1e9:.1f} GB, MemAvailable {avail / 1e9:.1f} GB")
            continue
        with torch.no_grad():
            p = torch.nn.Parameter(torch.empty(N).uniform_(-0.05, 0.05))
            p.grad = torch.empty(N).uniform_(-1e-3, 1e-3)
        opt = make_opt([p])
        fused_ms = timed(opt.step, args.n, args.w)

        scale = 1024.0
        with torch.no_grad():
            g16 = torch.empty(N, dtype=torch.float16).uniform_(-1e-3 * scale, 1e-3 * scale)
            p16 = torch.empty(N, dtype=torch.float16)

        def sequence():
            with torch.no_grad():
                p.grad.copy_(g16)
                p.grad.mul_(1.0 / scale)
                opt.step()
                p16.copy_(p)

        seq_ms = timed(sequence, args.n, args.w)
        ok = bool(torch.isfinite(p).all()) and bool(torch.isfinite(p16).all())
        if not ok:
            print(f"# WARNING: non-finite parameters after the torch runs at {N}")
        results[N] = (fused_ms, seq_ms)
        del p, opt, g16, p16
        gc.collect()

        def row(label, ms, bpp=28):
            print(f"  {N:>12d} {label:50s} {ms:10.3f} ms {N / (ms * 1e-3) / 1e6:9.1f} Mparam/s "
                  f"{bpp * N / (ms * 1e-3) / 1e9:8.2f} GB/s@{bpp}B")

        print(f"# {N} parameters ({threads} threads)")
        row(f"torch AdamW({fused_kind}).step() fp32", fused_ms)
        row("torch copy fp16 grad+unscale+AdamW+cast fp16", seq_ms)
        row("  (the same at the bytes it moves)", seq_ms, 48)
        for var, label in (("fp32", "zero cpu_adam fp32 grads, no param write"),
                           ("fp16", "zero cpu_adam fp16 grads + fp16 params")):
            ms = adam.get((N, var, simd, zt))
            if ms is not None:
                row(f"{label} ({simd})", ms)

    if not results:
        print("cpu_adam_torch: no parameter count could be run", file=sys.stderr)
        sys.exit(1)
    print("# ratios (targets at 1e9 parameters):")
    for N in sorted(results):
        fused_ms, seq_ms = results[N]
        z32 = adam.get((N, "fp32", simd, zt))
        z16 = adam.get((N, "fp16", simd, zt))
        bw, bw_kernel = bws.get((N, zt), (0.0, "-"))
        measured = ", ".join(f"{k} {g:.2f}" for k, g in kernels.get((N, zt), []))
        tag = "" if N >= 1_000_000_000 else "  [below the target's 1e9 parameters]"
        if z32:
            r = fused_ms / z32
            print(f"#  {N:>12d} torch AdamW({fused_kind}) fp32 / zero fp32 = {r:.2f}x "
                  f"(target >= 1.0x: {verdict(r >= 1.0)}){tag}")
        if z16:
            r = fused_ms / z16
            print(f"#  {N:>12d} torch AdamW({fused_kind}) fp32 / zero fp16 = {r:.2f}x (for reference)")
            r = seq_ms / z16
            print(f"#  {N:>12d} torch offload sequence / zero fp16 = {r:.2f}x "
                  f"(target >= 2.0x: {verdict(r >= 2.0)}){tag}")
            if bw > 0:
                f = 28 * N / (z16 * 1e-3) / 1e9 / bw
                print(f"#  {N:>12d} zero fp16 at 28 B/param = {100 * f:.1f}% of memory bandwidth "
                      f"{bw:.2f} GB/s (the {bw_kernel} kernel, the fastest of: {measured or '?'}) "
                      f"(target >= 85%: {verdict(f >= 0.85)}){tag}")
                if z32:
                    print(f"#  {N:>12d} zero fp32 at 28 B/param = "
                          f"{100 * 28 * N / (z32 * 1e-3) / 1e9 / bw:.1f}% of memory bandwidth (for reference)")
    if max(results) < 1_000_000_000:
        print("# NOTE: the targets are stated at 1e9 parameters; this run's largest was "
              f"{max(results)}: the verdicts above are indicative only")


if __name__ == "__main__":
    main()
