"""results.py - one results table (TSV) from a directory of examples/gpt runs:
what docs/results/ keeps of a benchmark instead of its raw logs.

    python3 examples/gpt/results.py DIR [--meta "key: value"]... > docs/results/NAME.tsv

One row per run: each NAME.jsonl (build/gpt, baseline/fsdp2_gpt.py,
baseline/deepspeed_gpt.py: their start and end events, the first and last
loss), then each NAME.log without a JSONL beside it (its lines that carry
figures; bench.log, bench.sh's console, is left out). Columns: run, program, stage, gpus, batch, gas, dtype, offload
(optimizer/parameters), recompute, median_step_ms, tokens_per_s_per_gpu,
mfu, gpu_gib (the device's used memory where the run reports it, else its
peak), engine_gib and activations_gib (build/gpt's plan), host_gib, first_loss, last_loss, note (gpt's summary, floor and
find-max lines; for a log alone, its figure lines joined by " | "). Each
--meta becomes a "# key: value" line above the header: the machine, the
date, the code (commit) and the command that made the runs.
"""
import argparse
import json
import os
import re
import sys

FIGURES = re.compile(r"^(summary|floor:|find-max-batch: the|comm:|fsdp2_gpt: (fsdp2|torch)|deepspeed_gpt: deepspeed-|"
                     r"biggest|OOM|.* passed, .* failed|PASS|FAIL|.*median step|.*out of memory|# target|# placement|cpu\+param |nvme|memory per GPU)")
COLS = ["run", "program", "stage", "gpus", "batch", "gas", "dtype", "offload", "recompute", "median_step_ms",
        "tokens_per_s_per_gpu", "mfu", "gpu_gib", "engine_gib", "activations_gib", "host_gib", "first_loss", "last_loss",
        "note"]


def cell(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return "%.6g" % v
    return str(v).replace("\t", " ").replace("\n", " ")


def figure_lines(path, limit=6):
    try:
        with open(path, errors="replace") as f:
            lines = [l.strip() for l in f if FIGURES.match(l.strip())]
    except OSError:
        return []
    return lines[-limit:]


def from_jsonl(d, name):
    evs = []
    with open(os.path.join(d, name + ".jsonl"), errors="replace") as f:
        for line in f:
            try:
                evs.append(json.loads(line))
            except ValueError:
                pass  # a line cut by a timeout
    start = next((e for e in evs if e.get("event") == "start"), {})
    end = next((e for e in reversed(evs) if e.get("event") == "end"), {})
    steps = [e for e in evs if e.get("event") == "step" and "loss" in e]
    maxb = [e["batch"] for e in evs if e.get("event") == "max_batch" and "batch" in e]
    oom = [e for e in evs if e.get("event") == "oom"]
    note = figure_lines(os.path.join(d, name + ".log"), 4) if os.path.exists(os.path.join(d, name + ".log")) else []
    if maxb:
        note.insert(0, "largest micro-batch %s" % maxb[-1])
    if oom and not end:
        note.insert(0, "out of memory at micro-batch %s" % oom[-1].get("batch", "?"))
    off = ("%s/%s" % (start.get("offload_optimizer", "none"), start.get("offload_param", "none"))
           if "offload_optimizer" in start or "offload_param" in start else None)  # (the baselines' stage says it)
    return [name, start.get("program"), start.get("stage"), start.get("world"), end.get("batch", start.get("batch")),
            start.get("gas"), start.get("dtype"), off, start.get("recompute"), end.get("median_step_ms"),
            end.get("tokens_per_s_per_gpu"), end.get("mfu"), end.get("device_used_gib", end.get("gpu_peak_gib")),
            end.get("engine_gib"), end.get("activations_gib"), end.get("host_peak_gib"), steps[0]["loss"] if steps else None, steps[-1]["loss"] if steps else None,
            " | ".join(note)]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--meta", action="append", default=[], help='"key: value", a comment line above the table')
    a = ap.parse_args()
    names = sorted(os.listdir(a.dir))
    jsonl = [n[:-6] for n in names if n.endswith(".jsonl")]
    # (bench.log: bench.sh's own console, the runs' lines again)
    logs = [n[:-4] for n in names if n.endswith(".log") and n[:-4] not in jsonl and n != "bench.log"]
    out = sys.stdout
    for m in a.meta:
        out.write("# %s\n" % m.replace("\n", " "))
    out.write("\t".join(COLS) + "\n")
    for n in jsonl:
        out.write("\t".join(cell(v) for v in from_jsonl(a.dir, n)) + "\n")
    for n in logs:
        row = [n] + [""] * (len(COLS) - 2) + [" | ".join(figure_lines(os.path.join(a.dir, n + ".log")))]
        out.write("\t".join(cell(v) for v in row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
