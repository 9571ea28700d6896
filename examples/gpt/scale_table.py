"""scale_table.py - the table of `sh examples/gpt/bench.sh scale`: zero's stages
on one GPU and on N, hybrid sharding, and the peers (DeepSpeed ZeRO-2/3, PyTorch
FSDP2) on N, from the runs' JSONL in DIR (docs/PERF.md section 5).

    python3 examples/gpt/scale_table.py DIR N

The runs it reads, by name (DIR/NAME.jsonl; a missing one, or one without an
end line, is a row that says so):
    sc_s{1,2,3}_1gpu, sc_s{1,2,3}_{N}gpu   zero stages 1-3 on one GPU and on N
    sc_s3_hybrid                           zero stage 3, mics_shard_size N / 2
    sc_ds_z2, sc_ds_z3                     DeepSpeed ZeRO-2 and ZeRO-3 on N, its default buckets
    sc_ds_z2_hf, sc_ds_z3_hf               the same with --hf-auto (Hugging Face's "auto" buckets); a
                                           peer's run absent from DIR is a row that says "not run"
    sc_ds_z3_leaf                          ZeRO-3 with each block a leaf module (--leaf-blocks)
    sc_fsdp2_r0, sc_fsdp2_r1               FSDP2, reshard_after_forward 0 and 1, on N
    sc_fsdp2_r0_1gpu, sc_fsdp2_r1_1gpu     the same on one GPU (FSDP2's own scaling; absent: "not run")
Prints a Markdown table: tokens/s per GPU, MFU, GPU memory (GiB, the device's
used memory where the run reports it, else its peak), scaling (N GPUs over one,
tokens/s per GPU, the same stage or FSDP2 setting) and zero over the best peer of its kind:
stage 1-2 over the fastest of ZeRO-2 (either buckets) and FSDP2 without
resharding, stage 3 (flat and hybrid) over the fastest of ZeRO-3 (either
buckets) and FSDP2 with resharding. Exit 0; 2 on usage.
"""
import json
import os
import sys


def end_of(d, name):
    """The run's last end event, or None (missing, cut, out of memory)."""
    try:
        with open(os.path.join(d, name + ".jsonl"), errors="replace") as f:
            evs = []
            for line in f:
                try:
                    evs.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by a timeout
    except OSError:
        return None
    ends = [e for e in evs if e.get("event") == "end" and "tokens_per_s_per_gpu" in e]
    return ends[-1] if ends else None


def gib(e):
    return e.get("device_used_gib", e.get("gpu_peak_gib"))


def main(argv):
    if len(argv) != 3 or not argv[2].isdigit() or int(argv[2]) < 2:
        sys.stderr.write("usage: python3 examples/gpt/scale_table.py DIR N   (N >= 2: the GPUs of the runs)\n")
        return 2
    d, n = argv[1], int(argv[2])
    peers2 = [("sc_ds_z2", "DeepSpeed ZeRO-2"), ("sc_ds_z2_hf", "DeepSpeed ZeRO-2, --hf-auto"),
              ("sc_fsdp2_r0", "FSDP2, reshard_after_forward 0")]
    peers3 = [("sc_ds_z3", "DeepSpeed ZeRO-3"), ("sc_ds_z3_hf", "DeepSpeed ZeRO-3, --hf-auto"),
              ("sc_ds_z3_leaf", "DeepSpeed ZeRO-3, --leaf-blocks"),
              ("sc_fsdp2_r1", "FSDP2, reshard_after_forward 1")]

    def best(peers):
        got = [(end_of(d, k)["tokens_per_s_per_gpu"], what) for k, what in peers if end_of(d, k)]
        return max(got) if got else None

    b2, b3 = best(peers2), best(peers3)
    rows = []
    for s in (1, 2, 3):
        one, many = end_of(d, "sc_s%d_1gpu" % s), end_of(d, "sc_s%d_%dgpu" % (s, n))
        rows.append(("zero stage %d" % s, 1, "sc_s%d_1gpu" % s, one, None, None))
        scaling = many["tokens_per_s_per_gpu"] / one["tokens_per_s_per_gpu"] if one and many else None
        rows.append(("zero stage %d" % s, n, "sc_s%d_%dgpu" % (s, n), many, scaling, b3 if s == 3 else b2))
    if n >= 4:
        one = end_of(d, "sc_s3_1gpu")
        hyb = end_of(d, "sc_s3_hybrid")
        scaling = hyb["tokens_per_s_per_gpu"] / one["tokens_per_s_per_gpu"] if one and hyb else None
        rows.append(("zero stage 3, mics_shard_size %d" % (n // 2), n, "sc_s3_hybrid", hyb, scaling, b3))
    for k, what in peers2 + peers3:
        if k.startswith("sc_fsdp2_"):  # FSDP2 on one GPU first (absent: not run), then its own scaling
            one = end_of(d, k + "_1gpu")
            many = end_of(d, k)
            rows.append((what, 1, k + "_1gpu", one, None, None))
            rows.append((what, n, k, many,
                         many["tokens_per_s_per_gpu"] / one["tokens_per_s_per_gpu"] if one and many else None, None))
        else:
            rows.append((what, n, k, end_of(d, k), None, None))
    print("| run | GPUs | tokens/s per GPU | MFU | GPU GiB | scaling (over 1 GPU) | zero over the best peer |")
    print("|---|---|---|---|---|---|---|")
    for what, g, name, e, scaling, peer in rows:
        if not e:
            ran = os.path.exists(os.path.join(d, name + ".jsonl")) or not (name.startswith("sc_ds_") or
                                                                           name.endswith("_1gpu") and "fsdp2" in name)
            print("| %s | %d | %s | | | | |" % (what, g, "did not finish (%s.log)" % name if ran else "not run"))
            continue
        over = ""
        if peer:
            over = "%.2fx (%s, %.0f)" % (e["tokens_per_s_per_gpu"] / peer[0], peer[1], peer[0])
        mem = gib(e)
        print("| %s | %d | %.0f | %s | %s | %s | %s |" % (
            what, g, e["tokens_per_s_per_gpu"], "%.1f%%" % (100 * e["mfu"]) if "mfu" in e else "",
            "%.2f" % mem if mem is not None else "", "%.3f" % scaling if scaling else "", over))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
