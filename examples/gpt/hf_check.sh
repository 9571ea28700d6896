#!/bin/sh
# examples/gpt/hf_check.sh [OUTDIR] - build/gpt against Hugging Face
# transformers on one GPU (python3 with torch, transformers, safetensors and
# numpy; no network). Every model is made here with random weights
# (examples/gpt/hf_check.py make). Logs, models and a summary.tsv go to
# OUTDIR (default build/hf_check); it ends with a table of the checks (name,
# value, tolerance, PASS/FAIL) and exits non-zero on any FAIL. A value that
# is NaN, infinite or null (gpt's metrics write a non-finite number so) fails
# its check, whatever the comparison said. GPT_BIN=path uses that build/gpt
# instead of making one.
#
#   a. a small GPT-2 (L 2, C 128, H 2: head size 64, so fp16 / bf16 run the
#      fused attention; P 256, V 50257), saved whole and sharded: gpt
#      --init-from --steps 0 --eval at stages 0-3 in fp32, bf16 and fp16
#      against transformers' fp32 loss and logits of the same batch; every
#      stage and the sharded checkpoint give the same loss bits per dtype.
#   b. fine-tuning it on structured token data (.u16): the eval loss falls;
#      --export plus config.json is a model directory transformers loads
#      with no missing, unexpected or mismatched key, and its logits are
#      gpt's.
#   c. GPT-2 XL's shape (L 48, C 1600, H 25, P 1024) with random weights:
#      gpt --init-from at stage 3 with optimizer and parameters offloaded to
#      the CPU, fp16, context 128, micro-batch 16: the eval loss before
#      training against transformers', then the throughput of a few steps.
#
# Tolerances, on the difference to transformers' fp32 result (no TF32 on
# either side):
#   loss    |gpt - hf| <= 1e-4 (fp32); relative 2e-3 (fp16), 1e-2 (bf16):
#           tests/gpu_gpt.cu's loss tolerances against its float64 reference
#   logits  max|gpt - hf| / max|hf| <= 1e-4 (fp32), 1e-2 (fp16), 4e-2 (bf16).
#           For scale: transformers itself run in fp16 / bf16 lands 1.6e-3 /
#           1.3e-2 from its fp32 logits on model a (measured on a CPU); gpt
#           keeps the residual stream and softmax in fp32, so it should land
#           closer. The summary lists transformers' own fp16 / bf16 losses
#           against its fp32 one as info rows.
set -u
cd "$(dirname "$0")/../.." || exit 1
OUT=${1:-build/hf_check}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
PY=${PYTHON:-python3}
HF="$PY examples/gpt/hf_check.py"
GPT=${GPT_BIN:-build/gpt} # GPT_BIN: a build/gpt made elsewhere (tests/check_gpu.sh builds it first)
export NCCL_NVLS_ENABLE=0 CUDA_VISIBLE_DEVICES=0 PYTHONUNBUFFERED=1
SUM="$OUT/summary.tsv"
: >"$SUM"
T0=$(date +%s)

say() { echo "== $*"; }
# check NAME VALUE TOL OK(1/0): one row of the summary. It passes only on
# OK 1 and a VALUE that names no NaN, infinity or null, whatever computed OK:
# a row whose own test let a NaN through still fails here.
check() {
    v=FAIL
    if [ "$4" = 1 ] && ! nonfinite "$2"; then v=PASS; fi
    printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$v" >>"$SUM"
    echo "   $1: $2 (tolerance $3) $v"
}
# nonfinite TEXT: true when TEXT holds nan, inf, infinity or null as a word
# (printf's "-nan", Python's "inf", JSON's null for gpt's non-finite numbers)
nonfinite() { echo "$1" | grep -Eiq '(^|[^a-z])[-+]?(nan|inf|infinity|null)([^a-z]|$)'; }
info() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "-" "info" >>"$SUM"; echo "   $1: $2"; }
# the value after "result: NAME" in a log (hf_check.py's lines)
res() { sed -n "s/^result: $2 //p" "$1" | tail -n 1; }
# gpt's eval loss (the JSONL's full precision): eval_loss METRICS before|after
eval_loss() { sed -n "s/.*\"event\":\"eval\",\"when\":\"$2\".*\"loss\":\([^,]*\),.*/\1/p" "$1" | tail -n 1; }
# gpt's training losses (the JSONL's step lines), one a line; null where one was not finite
step_losses() { sed -n 's/.*"event":"step",.*"loss":\([^,]*\),.*/\1/p' "$1"; }
# The numbers: every comparison below goes through num_awk, whose fin(x)
# accepts only the text of a finite decimal number. mawk (Debian's awk)
# compares NaN as equal to, below and above everything (nan <= 3, nan >= 3
# and nan == nan + 0 are all true), so no test may compare a value before
# fin() has read its text: an input, and a difference computed from two
# inputs (1e400 - 1e400 is NaN), are both checked.
num_awk() { awk -v a="$1" -v b="$2" -v t="$3" -v m="$4" '
    function fin(x) { x = x ""; return x ~ /^[-+]?([0-9]+[.]?[0-9]*|[.][0-9]+)([eE][-+]?[0-9]+)?$/ }
    function abs(x) { return x < 0 ? -x : x }
    BEGIN { '"$5"' }'; }
# within A B TOL abs|rel: 1 when |a - b| <= tol (abs) or <= tol |b| (rel); 0 for anything not finite
within() { num_awk "$1" "$2" "$3" "$4" 'if (!fin(a) || !fin(b) || !fin(t)) { print 0; exit }
    d = abs(a - b); s = m == "abs" ? t : t * abs(b)
    print (fin(d) && fin(s) && d <= s) ? 1 : 0'; }
# diffof A B abs|rel: |a - b| or |a - b| / |b|, "none" for anything not finite
diffof() { num_awk "$1" "$2" "" "$3" 'if (!fin(a) || !fin(b)) { print "none"; exit }
    d = abs(a - b); if (m != "abs") { if (b == 0) { print "none"; exit } d = d / abs(b) }
    if (fin(d)) printf "%.3g\n", d; else print "none"'; }
# minus A B: a - b, "none" for anything not finite
minus() { num_awk "$1" "$2" "" "" 'd = a - b; if (fin(a) && fin(b) && fin(d)) printf "%.4f\n", d; else print "none"'; }
# le A T, ge A T: 1 when a <= t (a >= t) with both finite
le() { num_awk "$1" "" "$2" "" 'print (fin(a) && fin(t) && a + 0 <= t + 0) ? 1 : 0'; }
ge() { num_awk "$1" "" "$2" "" 'print (fin(a) && fin(t) && a + 0 >= t + 0) ? 1 : 0'; }
# all_fin "X Y ...": 1 when there is at least one number and every one is finite
all_fin() { num_awk "$1" "" "" "" 'n = split(a, v, " "); for (i = 1; i <= n; i++) if (!fin(v[i])) { print 0; exit }
    print (n > 0 ? 1 : 0)'; }

if [ -z "${GPT_BIN:-}" ]; then
    say "build/gpt (make build/gpt)"
    make --no-print-directory BUILD=build build/gpt >"$OUT/build.log" 2>&1 ||
        { cat "$OUT/build.log"; echo "hf_check: build/gpt did not build"; exit 1; }
fi
[ -x "$GPT" ] || { echo "hf_check: $GPT is not there (GPT_BIN)"; exit 1; }
nvidia-smi -L 2>/dev/null | head -n 1
$PY -c 'import torch, transformers, safetensors; print("torch", torch.__version__, "| transformers", transformers.__version__, "| safetensors", safetensors.__version__)' || exit 1

# ---------------------------------------------------------------------------
say "a. small GPT-2 (L 2, C 128, H 2, P 256, V 50257): gpt --init-from --eval vs transformers"
S=$OUT/small
rm -rf "$S" "$S-sharded"
$HF make "$S" --layers 2 --dim 128 --heads 2 --positions 256 --seed 11 --std 0.1 >"$OUT/make_small.log" 2>&1 &&
    $HF make "$S-sharded" --layers 2 --dim 128 --heads 2 --positions 256 --seed 11 --std 0.1 --shard-mb 8 \
        >"$OUT/make_small_sharded.log" 2>&1 || { cat "$OUT"/make_small*.log; exit 1; }
grep '^make:' "$OUT"/make_small*.log
$HF tokens "$OUT/eval.u16" --batch 4 --seq 128 --seed 12 >/dev/null || exit 1
$HF loss "$S" "$OUT/eval.u16" --seq 128 --logits "$OUT/hf_small.f32" >"$OUT/hf_small.log" 2>&1 || { cat "$OUT/hf_small.log"; exit 1; }
HF_LOSS=$(res "$OUT/hf_small.log" loss)
grep '^hf loss' "$OUT/hf_small.log"
for dt in bf16 fp16; do # transformers' own low-precision losses, for scale
    $HF loss "$S" "$OUT/eval.u16" --seq 128 --dtype $dt >"$OUT/hf_small_$dt.log" 2>&1 &&
        info "a.hf_loss_${dt}_vs_fp32_rel" "$(diffof "$(res "$OUT/hf_small_$dt.log" loss)" "$HF_LOSS" rel)"
done

# gpt_eval NAME DIR STAGE DTYPE [flags]: gpt --steps 0 --eval; the loss into $L
gpt_eval() {
    n=$1 dir=$2 st=$3 dt=$4
    shift 4
    $GPT --init-from "$dir" --stage "$st" --dtype "$dt" --steps 0 --seq 128 --batch 4 --eval "$OUT/eval.u16" \
        --metrics "$OUT/$n.jsonl" "$@" >"$OUT/$n.log" 2>&1
    rc=$?
    grep '^eval loss' "$OUT/$n.log" | sed "s/^/   $n: /"
    L=$(eval_loss "$OUT/$n.jsonl" before 2>/dev/null)
    [ $rc -eq 0 ] || { tail -n 5 "$OUT/$n.log"; L=""; }
}

for dt in fp32 bf16 fp16; do
    case $dt in fp32) ltol=1e-4 lmode=abs ktol=1e-4 ;; fp16) ltol=2e-3 lmode=rel ktol=1e-2 ;; bf16) ltol=1e-2 lmode=rel ktol=4e-2 ;; esac
    first="" same=1
    for st in 0 1 2 3; do
        extra=""
        [ $st = 0 ] || [ $st = 3 ] && extra="--eval-logits $OUT/gpt_small_${dt}_s$st.f32"
        gpt_eval "small_${dt}_s$st" "$S" $st $dt $extra
        [ -n "$L" ] || same=0
        [ -z "$first" ] && first=$L
        [ "$L" = "$first" ] || same=0
    done
    check "a.loss_${dt}_vs_hf_$lmode" "$(diffof "$first" "$HF_LOSS" $lmode)" "$ltol" "$(within "$first" "$HF_LOSS" $ltol $lmode)"
    for st in 0 3; do
        f=$OUT/gpt_small_${dt}_s$st.f32
        if [ -s "$f" ] && $HF compare "$f" "$OUT/hf_small.f32" >"$OUT/compare_${dt}_s$st.log" 2>&1; then
            r=$(res "$OUT/compare_${dt}_s$st.log" rel)
        else r=""; fi
        check "a.logits_${dt}_s${st}_vs_hf_rel" "${r:-none}" "$ktol" "$(le "$r" $ktol)"
    done
    cmp -s "$OUT/gpt_small_${dt}_s0.f32" "$OUT/gpt_small_${dt}_s3.f32" && bits=1 || bits=0
    check "a.logits_${dt}_stage0_eq_stage3" "$( [ $bits = 1 ] && echo identical || echo differ)" "bitwise" $bits
    # the sharded checkpoint (model.safetensors.index.json): the same loss bits
    gpt_eval "small_${dt}_sharded_s3" "$S-sharded" 3 $dt
    [ -n "$L" ] && [ "$L" = "$first" ] || same=0
    check "a.loss_${dt}_stages0-3_sharded_same_bits" "$first" "bitwise" $same
    rm -f "$OUT"/gpt_small_${dt}_s*.f32
done
# the unfused attention (cuBLAS) agrees too
gpt_eval small_bf16_noflash_s2 "$S" 2 bf16 --no-flash
check "a.loss_bf16_noflash_vs_hf_rel" "$(diffof "$L" "$HF_LOSS" rel)" 1e-2 "$(within "$L" "$HF_LOSS" 1e-2 rel)"
# a shape flag against the checkpoint is an error, a longer context than n_positions too
$GPT --init-from "$S" --dim 256 --steps 0 >"$OUT/conflict.log" 2>&1
c1=$?
$GPT --init-from "$S" --seq 512 --steps 0 >>"$OUT/conflict.log" 2>&1
c2=$?
grep -q 'conflicts with' "$OUT/conflict.log" && grep -q "n_positions 256" "$OUT/conflict.log" && [ $c1 != 0 ] && [ $c2 != 0 ] && ok=1 || ok=0
check "a.shape_flags_conflict_rejected" "exit $c1, $c2" "non-zero, named" $ok

# ---------------------------------------------------------------------------
say "b. fine-tune the small model on structured tokens, export, load in transformers"
$HF pattern "$OUT/pattern.u16" "$OUT/pattern_eval.u16" --tokens 400000 --batch 4 --seq 128 --seed 13 || exit 1
FT=$OUT/finetuned
rm -rf "$FT" && mkdir -p "$FT"
$GPT --init-from "$S" --data "$OUT/pattern.u16" --eval "$OUT/pattern_eval.u16" --eval-logits "$OUT/gpt_ft.f32" \
    --stage 2 --dtype fp32 --seq 128 --batch 8 --steps 300 --lr 1e-3 --print-every 50 \
    --metrics "$OUT/finetune.jsonl" --export "$FT/model.safetensors" >"$OUT/finetune.log" 2>&1
rc=$?
grep -E '^(eval loss|step|exported)' "$OUT/finetune.log"
[ $rc -eq 0 ] || tail -n 5 "$OUT/finetune.log"
B0=$(eval_loss "$OUT/finetune.jsonl" before) B1=$(eval_loss "$OUT/finetune.jsonl" after)
drop=$(minus "$B0" "$B1")
check "b.eval_loss_drop" "$drop ($B0 -> $B1)" ">= 3" "$(ge "$drop" 3)"
cp "$S/config.json" "$FT/config.json"
$HF load-check "$FT" >"$OUT/load_check.log" 2>&1 && ok=1 || ok=0
grep '^load-check' "$OUT/load_check.log"
check "b.export_load_check" "$(grep -c 'none' "$OUT/load_check.log") of 3 key lists empty" "all empty, head tied" $ok
$HF loss "$FT" "$OUT/pattern_eval.u16" --seq 128 --logits "$OUT/hf_ft.f32" >"$OUT/hf_ft.log" 2>&1 || cat "$OUT/hf_ft.log"
HF_FT=$(res "$OUT/hf_ft.log" loss)
check "b.loss_after_vs_hf_abs" "$(diffof "$B1" "$HF_FT" abs)" 1e-4 "$(within "$B1" "$HF_FT" 1e-4 abs)"
if [ -s "$OUT/gpt_ft.f32" ] && $HF compare "$OUT/gpt_ft.f32" "$OUT/hf_ft.f32" >"$OUT/compare_ft.log" 2>&1; then
    r=$(res "$OUT/compare_ft.log" rel)
else r=""; fi
check "b.logits_vs_hf_rel" "${r:-none}" 1e-4 "$(le "$r" 1e-4)"
rm -f "$OUT/gpt_ft.f32" "$OUT/hf_ft.f32" "$OUT/hf_small.f32"

# ---------------------------------------------------------------------------
say "c. GPT-2 XL's shape (L 48, C 1600, H 25, P 1024), random weights: stage 3, offload to the CPU, fp16"
X=$OUT/xl
rm -rf "$X"
$HF make "$X" --layers 48 --dim 1600 --heads 25 --positions 1024 --seed 21 >"$OUT/make_xl.log" 2>&1 || { cat "$OUT/make_xl.log"; exit 1; }
grep '^make:' "$OUT/make_xl.log"
$HF tokens "$OUT/eval_xl.u16" --batch 4 --seq 128 --seed 22 >/dev/null || exit 1
$HF loss "$X" "$OUT/eval_xl.u16" --seq 128 >"$OUT/hf_xl.log" 2>&1 || cat "$OUT/hf_xl.log"
HF_XL=$(res "$OUT/hf_xl.log" loss)
grep '^hf loss' "$OUT/hf_xl.log"
$GPT --init-from "$X" --stage 3 --offload-optimizer cpu --offload-param cpu --dtype fp16 --seq 128 --batch 16 \
    --steps 8 --warmup 3 --print-every 1 --eval "$OUT/eval_xl.u16" --metrics "$OUT/xl.jsonl" >"$OUT/xl.log" 2>&1
rc=$?
grep -E '^(gpt:|eval loss|step|summary)' "$OUT/xl.log"
[ $rc -eq 0 ] || tail -n 5 "$OUT/xl.log"
X0=$(eval_loss "$OUT/xl.jsonl" before)
check "c.xl_loss_fp16_vs_hf_rel" "$(diffof "$X0" "$HF_XL" rel)" 2e-3 "$(within "$X0" "$HF_XL" 2e-3 rel)"
SUMLINE=$(grep '^summary:' "$OUT/xl.log" | tail -n 1)
XL=$(step_losses "$OUT/xl.jsonl" | tr '\n' ' ')
check "c.xl_trained" "exit $rc, losses ${XL:-none}" "exit 0, finite" \
    "$([ $rc -eq 0 ] && [ -n "$SUMLINE" ] && [ "$(all_fin "$XL")" = 1 ] && echo 1 || echo 0)"
info "c.xl_tokens_per_s" "$(echo "$SUMLINE" | sed -n 's/.*| \([0-9.]*\) tok\/s per GPU.*/\1/p')"
info "c.xl_step_ms" "$(echo "$SUMLINE" | sed -n 's/.*median step \([0-9.]*\) ms.*/\1/p')"
info "c.xl_gpu_gib" "$(echo "$SUMLINE" | sed -n 's/.*| GPU \([0-9.]*\) GiB.*/\1/p')"
info "c.xl_host_peak_gib" "$(echo "$SUMLINE" | sed -n 's/.*host peak \([0-9.]*\) GiB.*/\1/p')"
rm -rf "$X"

# ---------------------------------------------------------------------------
echo
echo "hf_check: $(($(date +%s) - T0)) s; logs in $OUT"
awk -F '\t' 'BEGIN { printf "%-42s %-28s %-22s %s\n", "check", "value", "tolerance", "result" }
    { printf "%-42s %-28s %-22s %s\n", $1, $2, $3, $4 }' "$SUM"
p=$(grep -c 'PASS$' "$SUM") f=$(grep -c 'FAIL$' "$SUM")
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
