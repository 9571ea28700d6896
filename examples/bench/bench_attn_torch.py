"""bench_attn_torch.py - PyTorch's causal attention on bench_attn's shapes.

torch.nn.functional.scaled_dot_product_attention(is_causal=True) in bf16 on
the first GPU: the forward alone, and the backward as (forward + backward)
minus the forward, each a median of CUDA-event timings after a warm-up.
TFLOP/s count causal FLOPs as build/bench/bench_attn does: forward
2*2*B*H*T*T*hd/2, backward 2.5x the forward's.

    python3 examples/bench/bench_attn_torch.py [--reps N]
"""
import argparse
import statistics

import torch
import torch.nn.functional as F


def timed(fn, reps):
    for _ in range(3):
        fn()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}; torch {torch.__version__}")
    print("TFLOP/s of causal FLOPs: forward 2*2*B*H*T*T*hd/2, backward 2.5x the forward's "
          f"(FlashAttention's count); median of {args.reps}; bf16; backward = (forward + backward) - forward")
    print(f"{'shape':<28} {'kernels':<7} {'fwd ms':>9} {'fwd TF/s':>9} {'bwd ms':>9} {'bwd TF/s':>9}")
    g = torch.Generator(device=dev).manual_seed(0)
    for B, H, T, hd in ((8, 25, 1024, 64), (16, 25, 1024, 64), (8, 16, 1024, 128), (16, 16, 1024, 128)):
        # [B, H, T, hd] views of a [B, T, 3, H, hd] tensor, as a fused qkv projection leaves them
        qkv = torch.rand(B, T, 3, H, hd, device=dev, generator=g, dtype=torch.float32).mul_(2).sub_(1)
        qkv = qkv.to(torch.bfloat16).requires_grad_(True)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        dout = torch.rand(B, H, T, hd, device=dev, generator=g).mul_(2).sub_(1).to(torch.bfloat16)

        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=True)

        def fwd_bwd():
            o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            o.backward(dout)
            qkv.grad = None

        f = timed(fwd, args.reps)
        fb = timed(fwd_bwd, args.reps)
        b = fb - f
        fl = 2.0 * 2.0 * B * H * T * T * hd / 2
        name = f"B={B} H={H} T={T} hd={hd}"
        print(f"{name:<28} {'torch':<7} {f:9.3f} {fl / f * 1e-9:9.1f} {b:9.3f} {2.5 * fl / b * 1e-9:9.1f}")


if __name__ == "__main__":
    main()
