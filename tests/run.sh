#!/bin/sh
# tests/run.sh - everything `make test` checks; ends with "N passed, N failed".
# Each build step counts as one check; each test program adds its own counts.
# T=name (make test T=test_engine, T=tests/test_engine.c, T=test_cuda_boot,
# T=minimal): only what this script does with that one file; the checks that
# belong to no one file (headers, the other examples, docs, install) run
# only without T.
set -u
B=${BUILD:-build}
CC=${CC:-gcc}; CXX_GCC=${CXX_GCC:-g++}; CLANG=${CLANG:-clang}; CLANGXX=${CLANGXX:-clang++}
NVCC=${NVCC:-nvcc}; GPU_ARCH=${GPU_ARCH:-sm_90}; NCCL_HOME=${NCCL_HOME:-}
mkdir -p "$B/t" "$B/log"
pass=0; fail=0
WARN="-Wall -Wextra -Werror"

. tests/lib.sh # step, run, pick, known

known tests/test_*.c tests/*.cu tests/llmc/*.cu examples/minimal.c examples/*.cu examples/*/*.cu
tests=$(pick $(ls tests/test_*.c 2>/dev/null))

# A comma-decimal locale for the parser's locale test: the system's if it has
# one, else built here from glibc's locale sources when they are installed.
if ! locale -a 2>/dev/null | grep -qi '^de_DE'; then
    if command -v localedef >/dev/null 2>&1 && [ -f /usr/share/i18n/locales/de_DE ]; then
        mkdir -p "$B/locale"
        [ -d "$B/locale/de_DE.UTF-8" ] || localedef -i de_DE -f UTF-8 "$B/locale/de_DE.UTF-8" >/dev/null 2>&1
        [ -d "$B/locale/de_DE.UTF-8" ] && export LOCPATH="$PWD/$B/locale"
    fi
fi

# The implementation compiled once per compiler and flags (tests/zero_impl.c) and linked into the
# tests that take it so (their #define ZERO_IMPLEMENTATION inside #ifndef ZERO_TEST_SHARED_IMPL);
# the others (private functions, macros set before zero.h) compile it themselves. It is most of
# each build's time.
shared_tests=$(grep -l ZERO_TEST_SHARED_IMPL $tests 2>/dev/null)
impl_build() { # TAG COMPILER FLAGS...: $B/t/impl-TAG.o, when a test takes it
    [ -n "$shared_tests" ] || return 0
    itag=$1; shift
    rm -f "$B/t/impl-$itag.o"
    pbuild "build-impl-$itag" "$@" -I. -c tests/zero_impl.c -o "$B/t/impl-$itag.o"
}
# The build order: the tests that compile the implementation themselves first (the longest builds
# start first, so the pool's last builds are short ones)
build_order=$(for t in $tests; do case " $(echo $shared_tests) " in *" $t "*) ;; *) echo "$t" ;; esac; done
              for t in $shared_tests; do echo "$t"; done)
# The sanitizer builds' optimization: -O1 for the implementation built once (tests/zero_impl.c) and the tests
# linked with it; -O0 for a test that compiles the implementation itself, and for the fuzz replays: the same
# sanitizers and checks, and clang compiles the implementation under them 4x faster at -O0 (33 against 8 s for
# test_config on a 2-core machine) while those programs run a second or two longer
san_opt() { # TEST
    case " $(echo $shared_tests) " in *" $1 "*) echo -O1 ;; *) echo -O0 ;; esac
}
impl_of() { # TEST TAG: the arguments that link TEST with $B/t/impl-TAG.o, or none
    case " $(echo $shared_tests) " in *" $1 "*) echo "-DZERO_TEST_SHARED_IMPL $B/t/impl-$2.o" ;; esac
}

# 1. host tests with gcc, C11, the full matrix. clang builds every test in 2 below, with the same
#    warnings and optimization plus the sanitizers, and runs the quick matrix there (a plain clang
#    build and run of the same quick matrix besides it found nothing those do not, and took a
#    sixth of make test's time on two cores)
pbatch "the implementation (tests/zero_impl.c) with $CC"
impl_build "$(basename "$CC")" $CC -std=c11 $WARN -O1 -g
pdone
pbatch "$(echo $tests | wc -w | tr -d ' ') host tests with $CC (C11, -O1), $JOBS at a time"
tag=$(basename "$CC")
for t in $build_order; do
    n=$(basename "$t" .c)
    rm -f "$B/t/$tag-$n"
    pbuild "build-$tag-$n" $CC -std=c11 $WARN -O1 -g -I. -o "$B/t/$tag-$n" "$t" $(impl_of "$t" "$tag") -lm -lpthread
done
pdone
pbatch "running the host tests, $JOBS at a time"
for t in $tests; do
    n=$(basename "$t" .c)
    [ -x "$B/t/$tag-$n" ] && prun "$tag-$n" "$B/t/$tag-$n"
done
prdone

# 2. the same tests under AddressSanitizer + UndefinedBehaviorSanitizer (clang)
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
TSAN_TESTS=$(pick $(ls tests/test_engine*.c tests/test_host*.c 2>/dev/null))
pbatch "the implementation under ASan+UBSan and TSan, with $CLANG"
impl_build asan $CLANG -std=c11 $WARN -O1 -g $SAN
[ -n "$TSAN_TESTS" ] && impl_build tsan $CLANG -std=c11 $WARN -O1 -g -fsanitize=thread
pdone
pbatch "the host tests under ASan+UBSan ($(echo $tests | wc -w | tr -d ' ')) and TSan ($(echo $TSAN_TESTS | wc -w | tr -d ' ')), with $CLANG"
for t in $build_order; do
    n=$(basename "$t" .c)
    rm -f "$B/t/asan-$n"
    pbuild "build-asan-$n" $CLANG -std=c11 $WARN $(san_opt "$t") -g $SAN -I. -o "$B/t/asan-$n" "$t" $(impl_of "$t" asan) -lm -lpthread
done
for t in $TSAN_TESTS; do
    n=$(basename "$t" .c)
    rm -f "$B/t/tsan-$n"
    pbuild "build-tsan-$n" $CLANG -std=c11 $WARN $(san_opt "$t") -g -fsanitize=thread -I. -o "$B/t/tsan-$n" "$t" $(impl_of "$t" tsan) -lm -lpthread
done
pdone
pbatch "running the host tests under ASan+UBSan, then TSan, $JOBS at a time"
for t in $tests; do
    n=$(basename "$t" .c)
    [ -x "$B/t/asan-$n" ] &&
        prun "asan-$n" env ZERO_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 "$B/t/asan-$n"
done
# ZERO_TEST_QUICK=1: the engine and layout tests run a smaller matrix under the sanitizers.

# 2b. ThreadSanitizer on the host backend and the engine (host ranks are threads)
for t in $TSAN_TESTS; do
    n=$(basename "$t" .c)
    [ -x "$B/t/tsan-$n" ] && prun "tsan-$n" env ZERO_TEST_QUICK=1 TSAN_OPTIONS=halt_on_error=1 "$B/t/tsan-$n"
done
prdone

# 3. headers as C11 and C++17 under gcc and clang, -Wall -Wextra -Werror (and -Wpedantic)
if [ -z "$T" ]; then
    pbatch "the headers as C11 and C++17 with gcc and clang, and a two-file program"
    pbuild "c11-gcc"     $CC      -std=c11   $WARN -Wpedantic -I. -c tests/compile_c.c   -o "$B/t/c11-gcc.o"
    pbuild "c11-clang"   $CLANG   -std=c11   $WARN -Wpedantic -I. -c tests/compile_c.c   -o "$B/t/c11-clang.o"
    pbuild "cxx17-gcc"   $CXX_GCC -std=c++17 $WARN -Wpedantic -I. -c tests/compile_cpp.cpp -o "$B/t/cxx17-gcc.o"
    pbuild "cxx17-clang" $CLANGXX -std=c++17 $WARN -Wpedantic -I. -c tests/compile_cpp.cpp -o "$B/t/cxx17-clang.o"
    # optimizing builds: GCC's flow warnings (maybe-uninitialized, format-truncation) need -O2 / -O3
    pbuild "c11-gcc-O3"   $CC      -std=c11   -O3 $WARN -Wpedantic -I. -c tests/compile_c.c   -o "$B/t/c11-gcc-O3.o"
    pbuild "cxx17-gcc-O3" $CXX_GCC -std=c++17 -O3 $WARN -Wpedantic -I. -c tests/compile_cpp.cpp -o "$B/t/cxx17-gcc-O3.o"
    # ZERO_STATIC: every function static, no unused-function warnings
    pbuild "c11-static"  $CC      -std=c11   $WARN -Wpedantic -DZERO_STATIC -I. -c tests/compile_c.c   -o "$B/t/c11-static.o"
    pbuild "cxx17-static" $CLANGXX -std=c++17 $WARN -Wpedantic -DZERO_STATIC -I. -c tests/compile_cpp.cpp -o "$B/t/cxx17-static.o"
    # two translation units, one with the implementation: no duplicate or missing symbols
    pbuild "link-2tu" $CC -std=c11 $WARN -I. -o "$B/t/link2" tests/compile_c.c tests/compile_c_user.c -lm -lpthread
    pdone
fi

# 4. examples/minimal.c, the first program the docs show: gcc, clang and ASan+UBSan,
#    each run with a scratch directory for its checkpoint
if [ -f examples/minimal.c ] && { [ -z "$T" ] || [ "$T" = minimal ]; }; then
    pbatch "examples/minimal.c with gcc, clang and ASan+UBSan"
    for cc in "$CC" "$CLANG"; do
        tag=$(basename "$cc")
        rm -f "$B/t/minimal-$tag"
        pbuild "example-minimal-$tag" $cc -std=c11 $WARN -Wpedantic -O1 -I. -o "$B/t/minimal-$tag" examples/minimal.c -lm -lpthread
    done
    rm -f "$B/t/minimal-asan"
    pbuild "example-minimal-asan" $CLANG -std=c11 $WARN -Wpedantic -O1 -g $SAN -I. -o "$B/t/minimal-asan" examples/minimal.c -lm -lpthread
    pdone
    for tag in "$(basename "$CC")" "$(basename "$CLANG")" asan; do
        [ -x "$B/t/minimal-$tag" ] || continue
        rm -rf "$B/t/minimal-$tag.ckpt" && mkdir -p "$B/t/minimal-$tag.ckpt"
        if [ "$tag" = asan ]; then
            ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 run "minimal-$tag" "$B/t/minimal-$tag" "$B/t/minimal-$tag.ckpt"
        else
            run "minimal-$tag" "$B/t/minimal-$tag" "$B/t/minimal-$tag.ckpt"
        fi
    done
    # a flag is not a directory: --help prints the usage (exit 0), another flag exits 2; neither trains
    [ -x "$B/t/minimal-$(basename "$CC")" ] && step "minimal-help" sh -c "cd '$B/t' && rm -rf ./--help ./--bogus &&
        ./minimal-$(basename "$CC") --help | grep -q '^usage: ' && ! ./minimal-$(basename "$CC") --bogus > /dev/null &&
        [ ! -e ./--help ] && [ ! -e ./--bogus ]"
    # without a directory it trains into a temporary one of its own and removes it at the end
    [ -x "$B/t/minimal-$(basename "$CC")" ] && step "minimal-temp-removed" sh -c "d=\$('$B/t/minimal-$(basename "$CC")' 2>/dev/null |
        sed -n 's/^ok    zero_save to \\(.*\\) (a temporary directory, removed now)\$/\\1/p') && [ -n \"\$d\" ] && [ ! -e \"\$d\" ]"
fi
#    the other examples build and run; the fuzz targets build and replay their corpora
if [ -z "$T" ]; then
    # their builds first, $JOBS at a time (each compiles the implementation at -O2)
    pbatch "the other examples (zero_estimate, zero_config, zero_layout, zero_ckpt, train_mlp, bench/cpu_adam), $JOBS at a time"
    rm -f "$B/t/zero_estimate" "$B/t/zero_config" "$B/t/zero_layout" "$B/t/zero_ckpt" "$B/t/train_mlp" "$B/t/cpu_adam"
    pbuild "example-zero_estimate" $CC -std=c11 $WARN -O2 -I. -o "$B/t/zero_estimate" examples/zero_estimate/zero_estimate.c -lm -lpthread
    pbuild "example-zero_config" $CC -std=c11 $WARN -O2 -I. -o "$B/t/zero_config" examples/zero_config/zero_config.c -lm -lpthread
    pbuild "example-zero_layout" $CC -std=c11 $WARN -Wpedantic -O2 -I. -o "$B/t/zero_layout" examples/zero_layout/zero_layout.c -lm -lpthread
    pbuild "example-zero_ckpt" $CC -std=c11 $WARN -Wpedantic -O2 -I. -o "$B/t/zero_ckpt" examples/zero_ckpt/zero_ckpt.c -lm -lpthread
    pbuild "example-train_mlp" $CC -std=c11 $WARN -O2 -I. -o "$B/t/train_mlp" examples/train_mlp.c -lm -lpthread
    # the CPU Adam benchmark (make bench-cpu); it runs a tiny size below
    pbuild "example-bench-cpu_adam" $CC -std=c11 $WARN -O2 -I. -o "$B/t/cpu_adam" examples/bench/cpu_adam.c -lm -lpthread
    pdone
    [ -x "$B/t/zero_estimate" ] && run "zero_estimate-selftest" "$B/t/zero_estimate" --selftest
    # zero_layout makes docs/engine.md's layout and memory tables: its commands there must run
    if [ -x "$B/t/zero_layout" ]; then
        step "zero_layout-units" sh -c "'$B/t/zero_layout' --sizes 5,7,3,300,1 --names a,b,c,d,e --bucket 64 --world 4 --locate d:100 |
            grep -q 'zero_layout_locate(d, 100) -> unit 2, rank 2, shard_offset 28'"
        step "zero_layout-memory" "$B/t/zero_layout" --memory --mlp 8,250,500 --world 4 --dtype fp16 --bucket 65536 \
            --persist 1000 --max-live 200000 --prefetch 100000
    fi
    # zero_ckpt on a checkpoint test_ckpt writes: inspect, verify, reshard to 3 ranks, export; a flipped byte fails verify
    TCK="$B/t/$(basename "$CC")-test_ckpt"
    if [ -x "$B/t/zero_ckpt" ] && [ -x "$TCK" ]; then
        rm -rf "$B/t/ckpt_demo" "$B/t/ckpt_demo3" "$B/t/ckpt_demo.safetensors"
        step "zero_ckpt-make" "$TCK" --make "$B/t/ckpt_demo"
        step "zero_ckpt-inspect" sh -c "'$B/t/zero_ckpt' inspect '$B/t/ckpt_demo' | grep -q 'saved on 2 ranks, stage 2, bf16; step 2'"
        step "zero_ckpt-verify" "$B/t/zero_ckpt" verify "$B/t/ckpt_demo"
        step "zero_ckpt-convert-world" sh -c "'$B/t/zero_ckpt' convert '$B/t/ckpt_demo' --world 3 '$B/t/ckpt_demo3' &&
            '$B/t/zero_ckpt' verify '$B/t/ckpt_demo3' | grep -q 'rank00002.zck ok'"
        step "zero_ckpt-convert-safetensors" "$B/t/zero_ckpt" convert "$B/t/ckpt_demo3" --safetensors "$B/t/ckpt_demo.safetensors" --dtype bf16
        # import closes the loop: safetensors -> a zero checkpoint on 3 ranks at stage 3 -> safetensors, the same
        # bytes but the header's step (one digit)
        rm -rf "$B/t/ckpt_imp" "$B/t/ckpt_rt.safetensors" "$B/t/ckpt_rt2.safetensors"
        step "zero_ckpt-import-roundtrip" sh -c "'$B/t/zero_ckpt' convert '$B/t/ckpt_demo' --safetensors '$B/t/ckpt_rt.safetensors' &&
            '$B/t/zero_ckpt' import '$B/t/ckpt_rt.safetensors' --world 3 --stage 3 --dtype bf16 '$B/t/ckpt_imp' &&
            '$B/t/zero_ckpt' verify '$B/t/ckpt_imp' | grep -q 'rank00002.zck ok' &&
            '$B/t/zero_ckpt' convert '$B/t/ckpt_imp' --safetensors '$B/t/ckpt_rt2.safetensors' &&
            [ \$(cmp -l '$B/t/ckpt_rt.safetensors' '$B/t/ckpt_rt2.safetensors' | wc -l) -eq 1 ]"
        step "zero_ckpt-import-bad" sh -c "'$B/t/zero_ckpt' import '$B/t/ckpt_rt.safetensors' --world 2 --stage 1 \
            --strip-prefix nope. '$B/t/ckpt_imp2' 2>&1 | grep -q \"tensor '.*' lacks the prefix 'nope.'\""
        step "zero_ckpt-verify-corrupt" sh -c "f=\$(ls '$B/t/ckpt_demo'/step2/rank00001.zck) &&
            printf '\\377' | dd of=\"\$f\" bs=1 seek=100 conv=notrunc 2>/dev/null;
            '$B/t/zero_ckpt' verify '$B/t/ckpt_demo' > '$B/t/ckpt_verify.txt'; [ \$? -eq 1 ] && grep -q 'rank00001.zck: FAILED' '$B/t/ckpt_verify.txt'"
    fi
    # the main example: its backward against finite differences, then short trainings
    if [ -x "$B/t/train_mlp" ]; then
        run "train_mlp-gradcheck" "$B/t/train_mlp" --gradcheck
        step "train_mlp-stages" "$B/t/train_mlp" --world 4 --compare-stages --steps 20 --quiet
        step "train_mlp-fp16-stage3" "$B/t/train_mlp" --world 4 --stage 3 --dtype fp16 --gas 2 --freeze-embedding --steps 20 --quiet
        step "train_mlp-bf16-stage2" "$B/t/train_mlp" --world 3 --stage 2 --dtype bf16 --steps 20 --quiet
        # the tensorboard monitor's event file through TensorBoard's own reader, against the csv_monitor's rows
        # of the same run (tests/tb_read.py), where python3 can import tensorboard; test_observe.c's byte
        # fixtures check the format everywhere
        if python3 -c 'import tensorboard' >/dev/null 2>&1; then
            rm -rf "$B/t/tb_run" && mkdir -p "$B/t/tb_run"
            printf '{"train_micro_batch_size_per_gpu": 16, "fp16": {"enabled": true}, "wall_clock_breakdown": true,
  "tensorboard": {"enabled": true, "output_path": "%s", "job_name": "tb"},
  "csv_monitor": {"enabled": true, "output_path": "%s", "job_name": "csv"}}\n' "$B/t/tb_run" "$B/t/tb_run" >"$B/t/tb_run/ds.json"
            step "train_mlp-fp16-tensorboard" "$B/t/train_mlp" --config "$B/t/tb_run/ds.json" --world 2 --dtype fp16 --steps 12 --quiet
            run "tensorboard-reader" python3 tests/tb_read.py "$B/t/tb_run/tb" "$B/t/tb_run/csv"
        else
            echo "skip  tensorboard-reader: python3 cannot import tensorboard (tests/tb_read.py)"
        fi
        # --save, then --resume (another --seed: the data position comes from the checkpoint's client state):
        # the resumed steps' losses equal the uninterrupted run's, fp16's loss scaler and stage 3 included
        step "train_mlp-resume" sh -c "T='$B/t/train_mlp'; D='$B/t/mlp_resume'; A='--world 3 --stage 3 --dtype fp16 --gas 2 --quiet';
            rm -rf \"\$D\" && mkdir -p \"\$D\" &&
            \"\$T\" \$A --steps 16 --loss-file \"\$D/all.txt\" && \"\$T\" \$A --steps 8 --save \"\$D/ck\" &&
            \"\$T\" \$A --steps 16 --seed 9 --resume \"\$D/ck\" --loss-file \"\$D/resumed.txt\" &&
            grep -v '^#' \"\$D/all.txt\" | tail -n 8 > \"\$D/a\" && grep -v '^#' \"\$D/resumed.txt\" > \"\$D/b\" &&
            [ \$(wc -l < \"\$D/b\") -eq 8 ] && cmp \"\$D/a\" \"\$D/b\" && cat \"\$D/b\""
    fi
    # llm.c's shape ported onto zero (docs/porting.md section 5): at most 60 changed lines, stages 0-3 on 1, 2, 4
    # ranks with the unported program's losses and samples; then the same under ASan+UBSan with clang
    step "llmc-port" sh tests/llmc/check.sh "$B/t/llmc" "$CC"
    step "llmc-port-asan" sh tests/llmc/check.sh "$B/t/llmc_asan" "$CLANG" "-g $SAN"
    # the three headers: no function over 160 lines (tests/headers.sh -v lists those over 100), every section in
    # the map and the map naming only sections
    step "headers" sh tests/headers.sh
    # the CPU Adam benchmark runs a tiny size
    [ -x "$B/t/cpu_adam" ] && step "cpu_adam-smoke" "$B/t/cpu_adam" --params 1e6 --iters 2 --out "$B/t/cpu_adam.txt"
    # the command-line tools' and examples/gpt/plot.py's own tests (each ends with "N passed, M failed")
    #   (the programs built above are taken as they are; test_ckpt is the gcc build of 1)
    PB="$B/t/prebuilt"; rm -rf "$PB" && mkdir -p "$PB"
    for p in zero_config zero_estimate zero_ckpt zero_layout; do [ -x "$B/t/$p" ] && cp "$B/t/$p" "$PB/$p"; done
    [ -x "$B/t/$(basename "$CC")-test_ckpt" ] && cp "$B/t/$(basename "$CC")-test_ckpt" "$PB/test_ckpt"
    [ -f tests/tools.sh ] && run "tools" env TOOLS_PREBUILT="$PB" sh tests/tools.sh "$B/tt"
    [ -f tests/plot.sh ] && run "plot" sh tests/plot.sh "$B/tp"
    # make run builds only what it runs: the host path, and the GPU path (train_mlp_cuda), never
    # examples/gpt or the other examples (make -n: nothing is built or run; the info lines name nvcc)
    step "make-run-builds" sh -c "rm -rf '$B/t/mkrun' &&
        ${MAKE:-make} --no-print-directory -n run GPU_RUN= BUILD='$B/t/mkrun' > '$B/t/mkrun-host.txt' &&
        ${MAKE:-make} --no-print-directory -n run GPU_RUN=1 BUILD='$B/t/mkrun' > '$B/t/mkrun-gpu.txt' &&
        cat '$B/t/mkrun-host.txt' '$B/t/mkrun-gpu.txt' &&
        grep -q 'examples/train_mlp.c ' '$B/t/mkrun-host.txt' && grep -q 'examples/train_mlp.cu ' '$B/t/mkrun-gpu.txt' &&
        ! grep -v '^echo \"zero: ' '$B/t/mkrun-host.txt' | grep -Eq 'nvcc|train_mlp_cuda' &&
        ! grep -Eq 'examples/gpt|/gpt |minimal|zero_config|zero_layout|zero_ckpt' '$B/t/mkrun-host.txt' '$B/t/mkrun-gpu.txt' &&
        grep -q 'zero: make run done: ' '$B/t/mkrun-host.txt'"
    # make run itself, shortened (5 steps): its last line names the host ranks and the final loss of
    # stages 0-3 that train_mlp's comparison printed
    step "make-run-closing" sh -c "${MAKE:-make} --no-print-directory run GPU_RUN= BUILD='$B/t/mkrun' RUN_ARGS='--steps 5' \
            > '$B/t/mkrun.txt' 2>&1; rc=\$?; tail -n 3 '$B/t/mkrun.txt'; [ \$rc -eq 0 ] &&
        loss=\$(awk '/^final loss / { print \$3 }' '$B/t/mkrun.txt') && [ -n \"\$loss\" ] &&
        [ \"\$(tail -n 1 '$B/t/mkrun.txt')\" = \"zero: make run done: trained the MLP language model on 4 host ranks (stage 2, then stages 0-3: final loss \$loss at every stage, the stages agree) and planned the memory of GPT-2 XL on 8 GPUs; next: docs/getting-started.md\" ]"
    # make test-gpu without a GPU (an nvidia-smi that fails first on PATH): one "no GPU visible" line, exit 77
    NG="$B/t/nogpu"; rm -rf "$NG"; mkdir -p "$NG/bin"
    printf '#!/bin/sh\necho "NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver" >&2\nexit 9\n' > "$NG/bin/nvidia-smi"
    chmod +x "$NG/bin/nvidia-smi"
    step "gpu-sh-no-gpu" sh -c "PATH=\"\$(cd '$NG/bin' && pwd):\$PATH\" BUILD='$NG' sh tests/gpu.sh > '$NG/out.txt' 2>&1; rc=\$?;
        cat '$NG/out.txt'; echo \"exit \$rc\"; [ \$rc -eq 77 ] && [ \$(wc -l < '$NG/out.txt') -eq 1 ] && grep -q 'no GPU visible' '$NG/out.txt'"
    # make check-gpu without a GPU: exit 77; its plan (--dry-run, 2 GPUs) lists the main job's matrix and the XL rows
    step "check-gpu-no-gpu" sh -c "PATH=\"\$(cd '$NG/bin' && pwd):\$PATH\" CHECK_GPU_DIR='$NG/chk' sh tests/check_gpu.sh > '$NG/chk.txt' 2>&1;
        rc=\$?; cat '$NG/chk.txt'; echo \"exit \$rc\"; [ \$rc -eq 77 ]"
    step "llmc-gpu-no-gpu" sh -c "PATH=\"\$(cd '$NG/bin' && pwd):\$PATH\" sh tests/llmc/check_gpu.sh '$NG/llmc' > '$NG/llmc.txt' 2>&1;
        rc=\$?; cat '$NG/llmc.txt'; echo \"exit \$rc\"; [ \$rc -eq 77 ]"
    step "check-gpu-plan" sh -c "CHECK_GPU_NGPU=2 CHECK_GPU_DIR='$NG/chk' sh tests/check_gpu.sh --dry-run > '$NG/plan.txt' 2>&1 &&
        [ \$(grep -c '/gpt --layers 2 ' '$NG/plan.txt') -ge 48 ] && grep -q 'preset 1.5B.*--dtype fp16 --stage 3 --offload-optimizer cpu --offload-param cpu' '$NG/plan.txt' &&
        grep -q 'preset 1.5B.*--dtype bf16 --stage 3' '$NG/plan.txt' && grep -q 'hf_check.sh' '$NG/plan.txt' && grep -q 'tests/llmc/check_gpu.sh' '$NG/plan.txt' &&
        grep -q 'windows_s3: .*ZERO_COLL_WINDOWS=1 .*--stage 3 --config ' '$NG/plan.txt'"
    # a batch of builds says what it builds when it starts (tests/lib.sh), not only when it ends
    mkdir -p "$B/t/lib/log"
    step "lib-pbatch" sh -c "B='$B/t/lib'; . tests/lib.sh; pass=0; fail=0
        { pbatch 'two sleeps'; pbuild lib-a sleep 0; pbuild lib-b sleep 0; pdone; pbuild lib-c sleep 0; pdone; } > '$B/t/lib/out.txt'
        printf 'building: two sleeps\\nok    lib-a\\nok    lib-b\\nbuilding: lib-c ...\\nok    lib-c\\n' | diff - '$B/t/lib/out.txt'"
    # test programs two at a time (prun, prdone): each one's counts, in the order they started
    step "lib-prun" sh -c "B='$B/t/lib'; . tests/lib.sh; pass=0; fail=0
        { prun lib-p sh -c 'sleep 0.2; echo 3 passed, 0 failed'; prun lib-q env N=2 sh -c 'echo \$N passed, 1 failed; exit 1'
          prun lib-r sh -c 'exit 3'; prdone; echo \"\$pass \$fail\"; } > '$B/t/lib/prun.txt'
        grep -q '^ok    lib-p (3 checks)' '$B/t/lib/prun.txt' && grep -q '^FAIL  lib-q (exit 1): 2 passed, 1 failed' '$B/t/lib/prun.txt' &&
        grep -q '^FAIL  lib-r (exit 3)' '$B/t/lib/prun.txt' && [ \"\$(tail -n 1 '$B/t/lib/prun.txt')\" = '5 2' ]"
    # every fenced block of the docs, checked by its language (C compiled, JSON
    # parsed, commands' programs and flags looked up), and the blocks of output
    # rerun and compared: tests/docs_check.sh
    echo "checking: the docs' blocks, their output rerun (tests/docs_check.sh)"
    run "docs-check" env BUILD="$B" CC="$CC" CXX_GCC="$CXX_GCC" NVCC="$NVCC" GPU_ARCH="$GPU_ARCH" NCCL_HOME="$NCCL_HOME" \
        sh tests/docs_check.sh README.md docs/*.md
    # docs/config.md's key table is generated from the key table in zero.h: they must agree
    step "docs-config-current" sh -c "'$B/t/zero_config' keys-markdown > '$B/t/keys.md' &&
        sed -n '/<!-- keys:begin -->/,/<!-- keys:end -->/p' docs/config.md | sed '1d;\$d' | diff -u '$B/t/keys.md' -"
    for f in tests/configs/*.json; do
        step "zero_config-check-$(basename "$f" .json)" "$B/t/zero_config" check "$f" --world 2 --hidden 1024 --mbs 4 --supply-hf
    done
    # --strict: a config drawing a warning exits 1 (after printing it), one drawing none exits 0
    step "zero_config-strict" sh -c "printf '{\"train_batch_size\": 8, \"wandb\": {\"enabled\": true}}' > '$B/t/strict.json' &&
        ! '$B/t/zero_config' check '$B/t/strict.json' --strict > /dev/null 2> '$B/t/strict.err' &&
        grep -q 'zero_config: 1 warning above (--strict)' '$B/t/strict.err' &&
        '$B/t/zero_config' check '$B/t/strict.json' > /dev/null 2>&1 &&
        printf '{\"train_batch_size\": 8}' > '$B/t/strict0.json' && '$B/t/zero_config' check '$B/t/strict0.json' --strict > /dev/null &&
        printf '{\"train_batch_size\": 8,}' > '$B/t/strict_hjson.json' &&
        '$B/t/zero_config' check '$B/t/strict_hjson.json' --strict > /dev/null 2> '$B/t/strict_hjson.err' &&
        grep -q 'info: hjson: a trailing comma' '$B/t/strict_hjson.err'"
    # the four replay targets built two at a time, then each replays its corpus
    pbatch "the fuzz targets' replay builds (ASan+UBSan), $JOBS at a time"
    for fz in json:fuzz_replay:-DZERO_FUZZ_CONFIG ckpt:fuzz_ckpt_replay: safetensors:fuzz_safetensors_replay: \
              layout:fuzz_layout_replay:; do
        src=${fz%%:*}; rest=${fz#*:}; bin=${rest%%:*}; def=${rest#*:}
        rm -f "$B/t/$bin"
        pbuild "$(echo "$bin" | sed 's/_replay$//; s/_/-/g')-replay-build" $CLANG -std=c11 $WARN -O0 -g $SAN -DZERO_FUZZ_REPLAY $def -I. \
            -o "$B/t/$bin" "tests/fuzz_$src.c" -lm -lpthread
    done
    pdone
    [ -x "$B/t/fuzz_replay" ] && run "fuzz-replay" "$B/t/fuzz_replay" tests/fuzz_corpus/*
    [ -x "$B/t/fuzz_ckpt_replay" ] && run "fuzz-ckpt-replay" "$B/t/fuzz_ckpt_replay" tests/fuzz_ckpt_corpus/*
    [ -x "$B/t/fuzz_safetensors_replay" ] && run "fuzz-safetensors-replay" "$B/t/fuzz_safetensors_replay" tests/fuzz_safetensors_corpus/*
    [ -x "$B/t/fuzz_layout_replay" ] && run "fuzz-layout-replay" "$B/t/fuzz_layout_replay" tests/fuzz_layout_corpus/*
fi

# 5. every .cu / .cuh compiled by nvcc for $GPU_ARCH (build only: no GPU here)
NCCL_INC=""; [ -n "$NCCL_HOME" ] && NCCL_INC="-I$NCCL_HOME/include"
pbatch "the .cu files with $NVCC for $GPU_ARCH (compile only), $JOBS at a time"
# (tests/test_*.cu are compiled when linked, below.)
# tests/compile_cuda.cu (every kernel of zero_cuda.cuh) and examples/gpt/gpt.cu (the example's own) go
# through ptxas for $GPU_ARCH; the others stop at its PTX (the front end, the device compiler and the
# host compiler, everything but the assembler), a quarter of each file's time: the GPU machine's
# builds (make check-gpu, make bench) assemble them all
PTX_ONLY="-gencode arch=$(echo "$GPU_ARCH" | sed 's/^sm_/compute_/'),code=$(echo "$GPU_ARCH" | sed 's/^sm_/compute_/')"
for cu in $(pick $(ls tests/*.cu tests/llmc/*.cu examples/*.cu examples/*/*.cu 2>/dev/null | grep -v '^tests/test_')); do
    n=$(basename "$cu" .cu)
    case $cu in tests/compile_cuda.cu | examples/gpt/gpt.cu) arch="-arch=$GPU_ARCH" ;; *) arch=$PTX_ONLY ;; esac
    pbuild "nvcc-$n" "$NVCC" -std=c++17 $arch -I. $NCCL_INC -Xcompiler -Wall,-Wextra,-Werror -c "$cu" -o "$B/t/nvcc-$n.o"
done
pdone
# tests/test_*.cu need no GPU (the CUDA backend's host side: bootstrap, environment):
# linked and run here too
if [ -n "$NCCL_HOME" ]; then
    NCCL_LIB="-L$NCCL_HOME/lib -L$NCCL_HOME/lib64 -Xlinker -rpath=$NCCL_HOME/lib -Xlinker -rpath=$NCCL_HOME/lib64"
    for cu in $(pick $(ls tests/test_*.cu 2>/dev/null)); do
        n=$(basename "$cu" .cu)
        step "nvcc-link-$n" "$NVCC" -std=c++17 -arch="$GPU_ARCH" -I. $NCCL_INC -Xcompiler -Wall,-Wextra,-Werror -o "$B/t/$n" "$cu" $NCCL_LIB -lnccl
        [ -x "$B/t/$n" ] && run "$n" "$B/t/$n"
    done
fi

# 6. zero as other projects take it (docs/install.md): make install, then a two-file program
#    built with pkg-config's flags, CMake's find_package and add_subdirectory, and run; nvcc
#    with pkg-config's flags alone; DESTDIR; make uninstall. Needs cmake and pkg-config.
if [ -z "$T" ]; then
    echo "installing: make install, then programs built against it (tests/consumer/run.sh)"
    run "consumer" sh tests/consumer/run.sh "$B/consumer"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
