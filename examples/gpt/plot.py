"""plot.py - figures from JSONL metrics: examples/gpt's own (zero's gpt and the
FSDP2 baseline, baseline/fsdp2_gpt.py) and the engine's jsonl_monitor file,
which any program's run writes (docs/observability.md).

    python3 examples/gpt/plot.py --out DIR [--title-suffix TEXT] run1.jsonl run2.jsonl ...
    python3 examples/gpt/plot.py --summary run1.jsonl ...

Writes into DIR (made if missing), each only when some run has its data:
  loss.png        loss against step, one line per run
  lr.png          learning rate against step, when it changes at all
  loss_scale.png  loss scale against step (log scale), when it changes at all
  grad_norm.png   gradient norm against step (steps without a finite norm left out)
  memory.png      peak GPU memory per GPU (GiB), one bar per run (gpt's format)
  throughput.png  tokens/s per GPU, one bar per run, grouped by GPU count (gpt's format);
                  samples/s for the engine's jsonl_monitor files, which count no tokens
and prints the paths written. The figures need matplotlib (pip install
matplotlib, or the Debian / Ubuntu package python3-matplotlib); without it
plot.py says so in one line and exits with status 2.

--summary draws nothing and needs no matplotlib: for each run, one line that
names it, then one line per series it has (loss, lr, loss_scale, grad_norm,
samples_per_s):
  loss  count N  first X  last X  min X  max X
with the values as %.9g.

Each file's format is told from its first line (a file may hold several
runs: each "start" line begins one). gpt's format, one line per print:
  {"event":"start","program":"gpt"|"fsdp2"|"torch"|"deepspeed","stage":0..3|"fsdp2-reshard"|"fsdp2-noreshard"|..,
   "world":W,"batch":B,"gas":G,"recompute":0|1,"compile":0|1,"offload_optimizer":..,"offload_param":..,
   "model":{..}}
  {"event":"step","step":i,"loss":x,"lr":x,"loss_scale":x,"grad_norm":x,
   "tokens_per_s_per_gpu":x,"gpu_mem_gib":x,"gpu_peak_gib":x}
  {"event":"end","tokens_per_s_per_gpu":x,"gpu_peak_gib":x,"mfu":x}
  {"event":"oom","batch":B}
gpt's loss is the mean over the steps since the previous print and its
loss_scale the scale after the step. The engine's jsonl_monitor format, one
line per optimizer step:
  {"event":"start","version":"..","world":W,"stage":S,"dtype":"..","train_batch_size":N,
   "gradient_accumulation_steps":G,"params":P,...}
  {"event":"step","step":i,"loss":x,"lr":x,"loss_scale":x,"grad_norm":x,...}
its loss is there when the program calls zero_report_loss, and its
loss_scale is the scale the step ran with. In both, a grad_norm of -1 means
the norm was not finite. Unknown keys are ignored, missing ones tolerated;
lines that are not JSON objects are skipped, and bare inf / nan (what C's
printf writes for them) are read as not finite.

Exit status: 0 done; 1 nothing to plot or summarize; 2 a bad command line
or, without --summary, no matplotlib.
"""
import argparse
import functools
import json
import math
import os
import re
import statistics
import sys


# ---- reading ----


GPT, ZERO = "gpt", "zero"  # the two formats
FORMAT_NAMES = {GPT: "gpt's metrics", ZERO: "the engine's jsonl_monitor"}

# the series drawn against step (and listed by --summary): key, title, y label
SERIES = (
    ("loss", "Training loss", "loss"),
    ("lr", "Learning rate", "learning rate"),
    ("loss_scale", "Loss scale", "loss scale"),
    ("grad_norm", "Gradient norm", "gradient norm"),
    ("samples_per_s", "Samples per second", "samples/s (every rank together)"),
)


class Run:
    def __init__(self, path, index, fmt):
        self.path = path
        self.index = index  # the run's place in its file
        self.fmt = fmt  # GPT or ZERO
        self.start = {}
        self.steps = []  # step events, in file order
        self.end = {}
        self.oom = None  # the oom event, if any
        self.label = None

    def world(self):
        w = self.start.get("world")
        return w if isinstance(w, int) and not isinstance(w, bool) and w > 0 else None

    def model(self):
        """gpt's model object; for the engine's format the parameter count alone"""
        if self.fmt == ZERO:
            p = num(self.start.get("params"))
            return {"params": self.start["params"]} if p is not None and p > 0 else None
        return self.start.get("model")

    def curve(self, key):
        """(steps, values) of one series: the finite values (grad_norm: not the -1 of a non-finite norm)"""
        xs, ys = [], []
        for n, s in enumerate(self.steps):
            v = num(s.get(key))
            if v is None or (key == "grad_norm" and v < 0):
                continue
            step = num(s.get("step"))
            xs.append(step if step is not None else n)
            ys.append(v)
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

    def samples_per_s(self):
        """the median of the steps' samples_per_s (the engine's jsonl_monitor lines)"""
        vals = [num(s.get("samples_per_s")) for s in self.steps]
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


_BARE = re.compile(r'([:\[,]\s*)(-?)(inf(?:inity)?|nan)(?=\s*[,}\]])', re.IGNORECASE)


def parse_line(line):
    """one JSON object, else None; bare inf / nan values are read as such"""
    try:
        ev = json.loads(line)
    except ValueError:
        fixed = _BARE.sub(lambda m: m.group(1) + ("NaN" if m.group(3).lower() == "nan"
                                                  else m.group(2) + "Infinity"), line)
        try:
            ev = json.loads(fixed)
        except ValueError:
            return None
    return ev if isinstance(ev, dict) else None


def detect_format(ev):
    """the format of a file from its first line: gpt's start line names its
    program; the engine's has its version and no program; without a start
    line, the engine's step lines are the ones with next_loss_scale"""
    if ev.get("event") == "start":
        return GPT if "program" in ev or "version" not in ev else ZERO
    return ZERO if "next_loss_scale" in ev or "time_ms" in ev else GPT


def read_runs(path):
    runs = []
    cur = None
    fmt = None
    with open(path, errors="replace") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            ev = parse_line(line)
            if ev is None:
                continue
            if fmt is None:
                fmt = detect_format(ev)
            kind = ev.get("event")
            if kind == "start" or cur is None:
                cur = Run(path, len(runs), fmt)
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
    if prog == "torch":  # fsdp2_gpt.py --plain 1
        return "PyTorch (bf16 autocast)"
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
        parts.append("%.0f" % p if p < 1e3 else "%.0fK" % (p / 1e3) if p < 1e6 else "%.0fM" % (p / 1e6) if p < 1e9
                     else "%.2fB" % (p / 1e9))
        if len(parts) == 1:  # the count alone (the engine's format): say what it counts
            parts[0] += " parameters"
    return " ".join(parts) or None


def zero_run_label(r, with_model):
    """a jsonl_monitor run: stage, dtype, ranks, global batch"""
    st = r.start
    parts = [method_label(st)]
    if isinstance(st.get("dtype"), str):
        parts.append(st["dtype"])
    w = r.world()
    if w is not None:
        parts.append("%d rank%s" % (w, "" if w == 1 else "s"))
    if isinstance(st.get("train_batch_size"), int):
        parts.append("batch %d" % st["train_batch_size"])
    gas = st.get("gradient_accumulation_steps")
    if isinstance(gas, int) and gas > 1:
        parts.append("gas %d" % gas)
    if with_model:
        ml = model_label(r.model())
        if ml:
            parts.append(ml)
    return ", ".join(parts)


def run_label(r, with_model):
    st = r.start
    if r.fmt == ZERO and st:
        return zero_run_label(r, with_model)
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
    return {json.dumps(r.model(), sort_keys=True) for r in some if r.model() is not None}


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


def plot_series(plt, runs, path, model, suffix, key):
    """one series against step, a line per run. Nothing is written when no
    run has it (False) or, beside the loss, when it is one value throughout
    (the reason, as text)."""
    title, ylabel = [(t, y) for k, t, y in SERIES if k == key][0]
    data = [(r, r.curve(key)) for r in runs]
    data = [(r, c) for r, c in data if c[1]]
    if not data:
        return False
    values = {y for _, (_, ys) in data for y in ys}
    if key != "loss" and len(values) == 1:
        return "%s is %.9g throughout" % (key, values.pop())
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for r, (xs, ys) in data:
        ax.plot(xs, ys, label=r.label, linewidth=1.4, marker="." if len(xs) <= 50 else None)
    if key == "loss_scale" and min(y for _, (_, ys) in data for y in ys) > 0:
        ax.set_yscale("log", base=2)
    ax.set_xlabel("step")
    ax.set_ylabel(ylabel)
    ax.set_title(_title(title, model, suffix))
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
    label = "tokens/s per GPU"
    if not items:  # the engine's files count samples, not tokens
        items = [(r, r.samples_per_s(), "") for r in runs if r.samples_per_s() is not None]
        label = "samples/s (every rank together)"
    if not items:
        return False
    return _bars(plt, items, path, label, _title("Throughput", model, suffix),
                 lambda v: "%.0f" % v if v < 1e4 else "%.1fk" % (v / 1e3))


def summarize(runs):
    """--summary: per run, a line naming it, then count / first / last / min / max of each series it has"""
    for r in runs:
        n_runs = sum(1 for x in runs if x.path == r.path)
        where = r.path if n_runs == 1 else "%s, run %d" % (r.path, r.index + 1)
        print("%s: %s format, %s; %d step line%s" % (where, FORMAT_NAMES[r.fmt], r.label, len(r.steps),
                                                    "" if len(r.steps) == 1 else "s"))
        for key, _, _ in SERIES:
            ys = r.curve(key)[1]
            if ys:
                print("  %-10s count %d  first %.9g  last %.9g  min %.9g  max %.9g" % (
                    key, len(ys), ys[0], ys[-1], min(ys), max(ys)))


NO_MATPLOTLIB = ("plot.py: the figures need matplotlib, which this Python (%s) cannot import: "
                 "pip install matplotlib (Debian / Ubuntu: apt install python3-matplotlib); "
                 "--summary runs without it")


def main(argv=None):
    ap = argparse.ArgumentParser(description="plots of JSONL metrics: examples/gpt's and the engine's jsonl_monitor")
    ap.add_argument("--out", help="folder for the PNGs")
    ap.add_argument("--summary", action="store_true",
                    help="print each run's series (count, first, last, min, max); no figures, no matplotlib")
    ap.add_argument("--title-suffix", default="", help="text added to each plot's title")
    ap.add_argument("files", nargs="+", help="JSONL metrics files")
    a = ap.parse_args(argv)
    if not a.summary and not a.out:
        ap.error("--out DIR is needed (or --summary)")

    plt = None
    if not a.summary:  # before the reading: a missing package is the first thing to know
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print(NO_MATPLOTLIB % sys.executable, file=sys.stderr)
            return 2

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
        print("plot.py: no runs to %s" % ("summarize" if a.summary else "plot"), file=sys.stderr)
        return 1
    assign_labels(runs)
    if a.summary:
        summarize(runs)
        return 0
    model = common_model(runs)
    for r in runs:
        if r.oom is not None and not r.end:
            print("plot.py: %s: out of memory at batch %s (no end line)" % (r.label, r.oom.get("batch", "?")))

    os.makedirs(a.out, exist_ok=True)
    written = []
    plots = [(key + ".png", functools.partial(plot_series, key=key)) for key, _, _ in SERIES]
    plots += [("memory.png", plot_memory), ("throughput.png", plot_throughput)]
    for name, fn in plots:
        path = os.path.join(a.out, name)
        done = fn(plt, runs, path, model, a.title_suffix)
        if done is True:
            written.append(path)
        else:
            print("plot.py: %s: no %s" % (done, name) if done else "plot.py: no run has the data for %s" % name)
    for p in written:
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
