"""plot.py - figures from the JSONL metrics of examples/gpt's runs (zero's gpt
and the FSDP2 baseline, baseline/fsdp2_gpt.py).

    python3 examples/gpt/plot.py --out DIR [--title-suffix TEXT] run1.jsonl run2.jsonl ...

Writes into DIR (made if missing), each only when some run has its data:
  loss.png        loss against step, one line per run
  memory.png      peak GPU memory per GPU (GiB), one bar per run
  throughput.png  tokens/s per GPU, one bar per run, grouped by GPU count
and prints the paths written.

The lines read (unknown keys ignored, missing ones tolerated):
  {"event":"start","program":"gpt"|"fsdp2","stage":0..3|"fsdp2-reshard"|"fsdp2-noreshard",
   "world":W,"batch":B,"gas":G,"recompute":0|1,"compile":0|1,"offload_optimizer":..,"offload_param":..,
   "model":{..}}
  {"event":"step","step":i,"loss":x,"tokens_per_s_per_gpu":x,"gpu_mem_gib":x,"gpu_peak_gib":x}
  {"event":"end","tokens_per_s_per_gpu":x,"gpu_peak_gib":x,"mfu":x}
  {"event":"oom","batch":B}
A file may hold several runs: each "start" line begins one. Lines that are
not JSON objects are skipped.
"""
import argparse
import json
import math
import os
import re
import statistics
import sys


# ---- reading ----


class Run:
    def __init__(self, path, index):
        self.path = path
        self.index = index  # the run's place in its file
        self.start = {}
        self.steps = []  # step events, in file order
        self.end = {}
        self.oom = None  # the oom event, if any
        self.label = None

    def world(self):
        w = self.start.get("world")
        return w if isinstance(w, int) and w > 0 else None

    def loss_curve(self):
        xs, ys = [], []
        for n, s in enumerate(self.steps):
            loss = num(s.get("loss"))
            if loss is None:
                continue
            step = num(s.get("step"))
            xs.append(step if step is not None else n)
            ys.append(loss)
        return xs, ys

    def peak_gib(self):
        """end's gpu_peak_gib, else the largest a step reported (gpu_peak_gib, then gpu_mem_gib)"""
        v = num(self.end.get("gpu_peak_gib"))
        if v is not None:
            return v
        for key in ("gpu_peak_gib", "gpu_mem_gib"):
            vals = [num(s.get(key)) for s in self.steps]
            vals = [x for x in vals if x is not None]
            if vals:
                return max(vals)
        return None

    def tokens_per_s(self):
        """end's tokens_per_s_per_gpu, else the median of the steps'"""
        v = num(self.end.get("tokens_per_s_per_gpu"))
        if v is not None:
            return v
        vals = [num(s.get("tokens_per_s_per_gpu")) for s in self.steps]
        vals = [x for x in vals if x is not None]
        return statistics.median(vals) if vals else None

    def mfu(self):
        return num(self.end.get("mfu"))


def num(v):
    """a finite number as float, else None"""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def read_runs(path):
    runs = []
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            kind = ev.get("event")
            if kind == "start" or cur is None:
                cur = Run(path, len(runs))
                runs.append(cur)
            if kind == "start":
                cur.start = ev
            elif kind == "step":
                cur.steps.append(ev)
            elif kind == "end":
                cur.end = ev
            elif kind == "oom":
                cur.oom = ev
    return runs


# ---- labels ----


def truthy(v):
    return v not in (None, 0, False, "", "none", "None", "0", "false", "off")


def method_label(st):
    prog = st.get("program")
    stage = st.get("stage")
    if prog == "fsdp2" or (isinstance(stage, str) and stage.startswith("fsdp2")):
        if stage == "fsdp2-noreshard":
            return "FSDP2 (no reshard)"
        if stage == "fsdp2-reshard":
            return "FSDP2 (reshard)"
        return "FSDP2"
    if isinstance(stage, int) and not isinstance(stage, bool):
        s = "ZeRO-%d" % stage
    elif isinstance(stage, str) and stage:
        s = "ZeRO-%s" % stage if stage.isdigit() else stage
    else:
        s = "ZeRO" if prog == "gpt" else (str(prog) if prog else "run")
    off = []
    if truthy(st.get("offload_optimizer")):
        off.append("opt")
    if truthy(st.get("offload_param")):
        off.append("param")
    if off:
        s += " + offload " + "+".join(off)
    return s


def model_label(m):
    if not isinstance(m, dict):
        return None
    parts = []
    for key, tag in (("layers", "L"), ("dim", "C"), ("heads", "H"), ("seq", "T"), ("vocab", "V")):
        if m.get(key) is not None:
            parts.append("%s%s" % (tag, m[key]))
    p = num(m.get("params"))
    if p is not None:
        parts.append("%.0fM" % (p / 1e6) if p < 1e9 else "%.2fB" % (p / 1e9))
    return " ".join(parts) or None


def run_label(r, with_model):
    st = r.start
    parts = [method_label(st)]
    w = r.world()
    if w is not None:
        parts.append("%d GPU%s" % (w, "" if w == 1 else "s"))
    b = r.end.get("batch", st.get("batch")) if r.end else st.get("batch")  # --find-max-batch: the end's
    if b is None and r.oom:
        b = r.oom.get("batch")
    if b is not None:
        parts.append("mb %s" % b)
    gas = st.get("gas")
    if isinstance(gas, int) and gas > 1:
        parts.append("gas %d" % gas)
    if truthy(st.get("recompute")):
        parts.append("recompute")
    if truthy(st.get("compile")):
        parts.append("compiled")
    if with_model:
        ml = model_label(st.get("model"))
        if ml:
            parts.append(ml)
    if not st:
        parts = [os.path.basename(r.path)]
    return ", ".join(parts)


def _models(runs):
    """the distinct models of the runs that have data (an out-of-memory run alone doesn't count)"""
    some = [r for r in runs if r.steps or r.end] or runs
    return {json.dumps(r.start.get("model"), sort_keys=True) for r in some if r.start.get("model") is not None}


def assign_labels(runs):
    """labels; the model goes in when runs differ in it, the file when labels still clash"""
    with_model = len(_models(runs)) > 1
    for r in runs:
        r.label = run_label(r, with_model)
    seen = {}
    for r in runs:
        seen.setdefault(r.label, []).append(r)
    for label, group in seen.items():
        if len(group) > 1:
            for r in group:
                tag = os.path.basename(r.path) + ("#%d" % (r.index + 1) if r.index else "")
                r.label = "%s [%s]" % (label, tag)
    return with_model


def common_model(runs):
    models = _models(runs)
    if len(models) == 1:
        return model_label(json.loads(models.pop()))
    return None


# ---- plots ----


def _title(base, model, suffix):
    t = base
    if model:
        t += " - " + model
    if suffix:
        t += " " + suffix
    return t


def plot_loss(plt, runs, path, model, suffix):
    data = [(r, r.loss_curve()) for r in runs]
    data = [(r, c) for r, c in data if c[1]]
    if not data:
        return False
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for r, (xs, ys) in data:
        ax.plot(xs, ys, label=r.label, linewidth=1.4, marker="." if len(xs) <= 50 else None)
    ax.set_xlabel("step")
    ax.set_ylabel("loss")
    ax.set_title(_title("Training loss", model, suffix))
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _bars(plt, items, path, ylabel, title, fmt):
    """items: [(run, value, note)], grouped by GPU count (file order within a
    group), a gap between groups"""
    items = sorted(items, key=lambda it: (it[0].world() or 0))
    groups = []  # [(world, [item])]
    for it in items:
        w = it[0].world()
        if not groups or groups[-1][0] != w:
            groups.append((w, []))
        groups[-1][1].append(it)
    gap = 0.8
    xs, centers, bounds = [], [], []
    x = 0.0
    for gi, (w, members) in enumerate(groups):
        first = x
        for _ in members:
            xs.append(x)
            x += 1.0
        centers.append(((first + x - 1.0) / 2.0, w))
        if gi + 1 < len(groups):
            bounds.append(x - 1.0 + (1.0 + gap) / 2.0)
        x += gap
    vals = [it[1] for it in items]
    cmap = plt.get_cmap("tab10")
    colors = [cmap(i % 10) for i in range(len(items))]
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(xs) + 2.5), 5.8))
    bars = ax.bar(xs, vals, color=colors, width=0.8)
    for b, (r, v, note) in zip(bars, items):
        text = fmt(v) + ("\n" + note if note else "")
        ax.annotate(text, (b.get_x() + b.get_width() / 2.0, v), xytext=(0, 3), textcoords="offset points",
                    ha="center", va="bottom", fontsize=8)
    ax.set_xticks(xs)
    ax.set_xticklabels([it[0].label for it in items], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    top = max(vals)
    ax.set_ylim(0, top * 1.25 if top > 0 else 1.0)
    ax.grid(True, axis="y", alpha=0.3)
    if len(groups) > 1:
        for c, w in centers:
            ax.annotate("%s GPU%s" % (w if w is not None else "?", "" if w == 1 else "s"), (c, 1.0),
                        xycoords=("data", "axes fraction"), xytext=(0, -6), textcoords="offset points",
                        ha="center", va="top", fontsize=9, fontweight="bold")
        for bx in bounds:
            ax.axvline(bx, color="gray", linewidth=0.8, linestyle=":")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def engine_activations(r):
    """(engine GiB, activations GiB) of a zero run: the end line's, else its log's "memory per GPU" line
    (the .log beside the .jsonl, as examples/gpt/bench.sh writes them); None when neither has them"""
    e, a = num(r.end.get("engine_gib")), num(r.end.get("activations_gib"))
    if e is not None and a is not None:
        return e, a
    log = os.path.splitext(r.path)[0] + ".log"
    try:
        m = re.search(r"memory per GPU: engine ([0-9.]+) GiB.*?activations ([0-9.]+) GiB", open(log).read())
    except OSError:
        return None
    return (float(m.group(1)), float(m.group(2))) if m else None


def plot_memory(plt, runs, path, model, suffix):
    items = []
    for r in runs:
        ea = engine_activations(r)
        items.append((r, r.peak_gib(), "engine %.1f\n+ act. %.1f" % ea if ea else ""))
    items = [it for it in items if it[1] is not None]
    if not items:
        return False
    return _bars(plt, items, path, "peak GPU memory per GPU (GiB)", _title("Peak GPU memory", model, suffix),
                 lambda v: "%.1f" % v)


def plot_throughput(plt, runs, path, model, suffix):
    items = []
    for r in runs:
        v, m = r.tokens_per_s(), r.mfu()
        if v is not None:
            items.append((r, v, "MFU %.1f%%" % (100 * m) if m is not None else ""))
    if not items:
        return False
    return _bars(plt, items, path, "tokens/s per GPU", _title("Throughput", model, suffix),
                 lambda v: "%.0f" % v if v < 1e4 else "%.1fk" % (v / 1e3))


def main(argv=None):
    ap = argparse.ArgumentParser(description="plots of examples/gpt's JSONL metrics")
    ap.add_argument("--out", required=True, help="folder for the PNGs")
    ap.add_argument("--title-suffix", default="", help="text added to each plot's title")
    ap.add_argument("files", nargs="+", help="JSONL metrics files")
    a = ap.parse_args(argv)

    runs = []
    for p in a.files:
        try:
            got = read_runs(p)
        except OSError as e:
            print("plot.py: %s: %s" % (p, e), file=sys.stderr)
            continue
        if not got:
            print("plot.py: %s: no events" % p, file=sys.stderr)
        runs.extend(got)
    if not runs:
        print("plot.py: no runs to plot", file=sys.stderr)
        return 1
    assign_labels(runs)
    model = common_model(runs)
    for r in runs:
        if r.oom is not None and not r.end:
            print("plot.py: %s: out of memory at batch %s (no end line)" % (r.label, r.oom.get("batch", "?")))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(a.out, exist_ok=True)
    written = []
    for name, fn in (("loss.png", plot_loss), ("memory.png", plot_memory), ("throughput.png", plot_throughput)):
        path = os.path.join(a.out, name)
        if fn(plt, runs, path, model, a.title_suffix):
            written.append(path)
        else:
            print("plot.py: no run has the data for %s" % name)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
