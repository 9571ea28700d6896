#!/bin/sh
# tests/docs_check.sh [FILE.md ...] - every fenced code block of the docs,
# checked by its language, so that documented code, configs and commands
# cannot rot. Default files: README.md docs/*.md. Ends with "N passed,
# N failed" (tests/lib.sh's counting: one check per block) and exits non-zero
# on a failure; tests/run.sh runs it as part of `make test`. Logs and the
# generated sources: $BUILD/docs_check (default build/docs_check).
#
# By the block's language (the first word after the opening fence):
#   c        compiled with $CC -std=c11 -Wall -Wextra -Werror -I. -c
#              - a whole translation unit when its first code line is a
#                preprocessor directive (#include, #define ...) or it defines
#                main(): compiled as it is. With main() it is also linked
#                (-lm -lpthread; against the implementation of zero.h and
#                zero_offload.h unless the block defines ZERO_IMPLEMENTATION).
#                Functions the block declares but does not define (the reader's
#                own: my_forward, ...) get empty stubs for that link, never a
#                zero_* one. Marked `run`: linked without stubs, then run from
#                the repository root (stdin empty, 60 s), and it must exit 0.
#              - otherwise a fragment: the prelude below, then the block's
#                function definitions at file scope, the rest of it inside
#                the body of a function whose parameters are the prelude's
#                common variables. Fragments are excerpts, so unused variables,
#                parameters and functions are allowed there
#                (-Wno-unused-variable -Wno-unused-but-set-variable
#                -Wno-unused-parameter -Wno-unused-but-set-parameter -Wno-unused-function
#                -Wno-unused-local-typedefs; C++ also -Wno-vexing-parse, for a
#                declaration "T f(void);" inside the function); everything
#                else is -Werror.
#              #line directives make errors point at the markdown file.
#              The fragments of one file and language compile as one
#              translation unit (each in its own function); when that fails,
#              each one alone, so the failure names its block.
#   cpp      the same with $CXX_GCC -std=c++17 (compiled, not linked)
#   cu       the same with $NVCC -std=c++17 -arch=$GPU_ARCH -c (zero_cuda.cuh in
#            the prelude; -DZERO_NO_NCCL when no nccl.h is found); without
#            nvcc these blocks are skipped and counted as skipped, not passed
#   json     a DeepSpeed config: `build/zero_config check FILE ARGS` must
#            accept it (exit 0) and warn of no unknown key. ARGS default to
#            --world 1 --hidden 1024 --mbs 1 --supply-hf ("auto" values get
#            the HF Trainer's defaults); a marker's --options replace them
#   sh, bash, shell, console
#            sh -n (bash -n for bash) on the commands (console: the lines that
#            start with "$ ", and their \ continuations; the rest is output),
#            then every simple command:
#              - build/X: a Makefile rule must build it; every -flag / --flag
#                must appear in `build/X --help` (C programs: built here with
#                -O0 and asked) or, for CUDA programs, in the usage text of
#                their sources (nvcc and a GPU are not needed)
#              - make: every target must be a Makefile target, every VAR=value
#                a variable the Makefile mentions, every --flag in the
#                Makefile or `make --help`
#              - examples/... or tests/... scripts (run directly or through
#                sh, bash, python, python3): the file must exist and every
#                --flag must appear in its text
#              - launchers (torchrun, srun, mpirun, env, time, timeout, ...):
#                the build/X they start is checked as above
#              - anything else (nvcc, cmake, pkg-config, cd, export, ...) is
#                accepted after the syntax check; an examples/ or tests/ path
#                among its arguments must exist
#   text, cmake, and any other language: not checked (counted)
#   no language: a failure: choose one (text for output and pseudo-code)
#
# And when docs/api.md is among the files: every ZERO_API function of zero.h,
# zero_offload.h and zero_cuda.cuh has its "### name" entry there, and no
# entry names a function the headers no longer declare. When README.md is:
# every "GPT-2 XL (N" count of the files and the Makefile is GPT-2 XL's, with
# GPT-2's vocabulary or examples/gpt's (gpt2_xl below), make run plans the
# former and README gives it; README's account of make run (host ranks, GPUs,
# its closing line) agrees with the Makefile, and docs/estimator.md shows
# make run's estimator commands (make_run_docs below).
#
# Output. A block that shows what a command prints is rerun here and
# compared, or says that it is a recorded run (required of console blocks,
# whose output is plain to see; text blocks are the writer's to mark):
#   <!-- output -->            (a console block) each "$ " command runs, and
#                              the lines after it, up to the next "$ ", must
#                              be what it prints
#   <!-- output: COMMAND -->   (any block) COMMAND runs; the block must be
#                              what it prints
#   <!-- output (OPTIONS)... -->  with OPTIONS, comma-separated, among:
#       excerpt     the block's lines must appear in the output in this
#                   order, others may come between (lines "..." are skipped)
#       rendered    the output goes on past the block, through the Markdown
#                   that follows (tables the program prints as Markdown,
#                   rendered), to a line <!-- output ends -->; fence lines
#                   there are left out
#       mask ERE    what varies by run (an id, a time): each match of the ERE
#                   (no commas, parentheses or slashes) becomes <masked> on both sides
#   The commands run with sh, LC_ALL=C, stdin empty and a limit of 120 s, in
#   a scratch directory per Markdown file ($O/run/NAME), one after another in
#   the order of the file, so a command may use what an earlier one wrote.
#   It holds links to the headers, Makefile, README.md, docs, examples and
#   tests, build/ with the C programs the commands name (built here from the
#   Makefile's sources, -O0), and the blocks marked <!-- file: NAME -->
#   (saved as NAME, before anything runs from a later block). stdout and
#   stderr are compared together, as one pipe gets them (a program that does
#   not flush its stdout writes it after its stderr lines); the exit status is
#   not compared. "make ..." commands are not run (the programs are built
#   here) and must show no output. Compared after cutting each line's
#   trailing blanks and the trailing blank lines; nothing else is normalised,
#   so the numbers must be the program's, to the digit.
#   A recorded run (GPUs, timings, a machine's paths) is not rerun: a line of
#   its own right before the block, visible to the reader, says when and
#   where: "Recorded YYYY-MM-DD on MACHINE ...". A console block that shows
#   output needs one of the two (or <!-- not checked: -->). The summary lists
#   the blocks rerun and those recorded.
#
# Markers, HTML comments on the non-blank lines right before the fence (they
# stack: one per line):
#   <!-- not checked: REASON -->   skip the block; listed with the reason
#   <!-- snippet: OPTIONS -->      words among: file (a whole translation
#                                  unit), fragment, run (link and run a C
#                                  main()), then --options for zero_config
#                                  check (json). Other words are ignored, so
#                                  the old "<!-- snippet: compiled by make
#                                  test -->" and "<!-- snippet: file, compiled
#                                  by make test -->" markers keep working.
#   <!-- output ... -->            see Output above
#   <!-- file: NAME -->            the block is also saved as NAME in the
#                                  scratch directory of output commands
#   <!-- source: PATH -->          the block is the file PATH of the repository,
#                                  byte for byte (a program the docs show whole
#                                  and examples/ ships)
#
# The fragment prelude (prelude() below): zero.h, zero_offload.h (and
# zero_cuda.cuh for cu), <math.h>, <stdio.h>, <stdlib.h>, <string.h>; README's
# model type with model_forward / model_backward; and, as the enclosing
# function's parameters, these variables a fragment may use without declaring
# them (it may also declare its own of the same names):
#     zero_config cfg; zero_error err; zero_engine *e; const zero_backend *backend;
#     zero_tensor *tensors; int n; int world_size; int my_rank; void *state;
#     long it; zero_cpu_pool *pool; zero_backend ob;
# A fragment's own return statements return int.
set -u
B=${BUILD:-build}
CC=${CC:-gcc}; CXX_GCC=${CXX_GCC:-g++}; NVCC=${NVCC:-nvcc}; GPU_ARCH=${GPU_ARCH:-sm_90}
NCCL_HOME=${NCCL_HOME:-}
O="$B/docs_check"
rm -rf "$O"
mkdir -p "$O/blocks" "$O/src" "$O/bin" "$O/help" "$B/log"
pass=0; fail=0
. tests/lib.sh # step, pbuild, pdone
TAB=$(printf '\t'); RS=$(printf '\036'); US=$(printf '\037')

if [ $# -eq 0 ]; then set -- README.md docs/*.md; fi

# ---- 1. the blocks ------------------------------------------------------
# One file per block ($O/blocks/ID.txt, indentation of the fence removed) and
# one manifest line: ID file first-content-line fence-line lang marker.
i=0
for f in "$@"; do
    i=$((i + 1))
    awk -v md="$f" -v fileno="$i" -v dir="$O/blocks" '
        function trim(s) { sub(/^[ \t]+/, "", s); sub(/[ \t]+$/, "", s); return s }
        function emit(lang) { printf "%s\t%s\t%d\t%d\t%s\t%s\n", id, md, fence + 1, fence, lang, mark }
        function add(m) { pending = (pending == "") ? m : pending "\036" m }   # markers stack
        !inb {
            if (match($0, /^[ \t]*(```+|~~~+)/)) {
                info = substr($0, RSTART + RLENGTH)
                fl = $0; sub(/^[ \t]*/, "", fl)
                ch = substr(fl, 1, 1); flen = RLENGTH - (length($0) - length(fl))
                if (ch == "`" && index(info, "`")) next      # inline code, not a fence
                ind = length($0) - length(fl)
                lang = tolower(trim(info)); sub(/[ \t{].*$/, "", lang)
                if (lang == "") lang = "-"
                fence = FNR; k++; id = sprintf("%02d-%03d", fileno, k)
                out = dir "/" id ".txt"; printf "" > out
                inb = 1; mark = pending; pending = ""
                next
            }
            if ($0 ~ /^[ \t]*$/) next                         # blank lines keep a marker
            if (match($0, /<!--[ \t]*not checked:/)) {
                r = substr($0, RSTART + RLENGTH); sub(/-->.*$/, "", r)
                add("skip:" trim(r)); next
            }
            if (match($0, /<!--[ \t]*snippet:/)) {
                r = substr($0, RSTART + RLENGTH); sub(/-->.*$/, "", r)
                add("opts:" trim(r)); next
            }
            if (match($0, /<!--[ \t]*output[ \t]*(\(|:|-->)/)) {   # out:OPTIONS \037 COMMAND
                r = substr($0, RSTART); sub(/^<!--[ \t]*output[ \t]*/, "", r); sub(/-->.*$/, "", r)
                o = ""
                if (substr(r, 1, 1) == "(" && index(r, ")")) { o = substr(r, 2, index(r, ")") - 2); r = substr(r, index(r, ")") + 1) }
                r = trim(r); if (substr(r, 1, 1) == ":") r = trim(substr(r, 2))
                add("out:" trim(o) "\037" r); next
            }
            if (match($0, /<!--[ \t]*file:/)) {
                r = substr($0, RSTART + RLENGTH); sub(/-->.*$/, "", r)
                add("file:" trim(r)); next
            }
            if (match($0, /<!--[ \t]*source:/)) {
                r = substr($0, RSTART + RLENGTH); sub(/-->.*$/, "", r)
                add("src:" trim(r)); next
            }
            if ($0 ~ /^[ \t]*Recorded [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] on /) { add("rec:" trim($0)); next }
            pending = ""
            next
        }
        {
            l = $0; t = l; sub(/^[ \t]*/, "", t)
            if (substr(t, 1, 1) == ch) {
                c = t; gsub(ch, "", c)
                if (trim(c) == "" && length(trim(t)) >= flen) { close(out); emit(lang); inb = 0; next }
            }
            for (j = 0; j < ind && substr(l, 1, 1) ~ /[ \t]/; j++) l = substr(l, 2)
            print l >> out
        }
        END { if (inb) { close(out); emit("!unclosed") } }
    ' "$f" >> "$O/manifest.tsv"
done
[ -f "$O/manifest.tsv" ] || : > "$O/manifest.tsv"

# ---- 2. what the Makefile builds ------------------------------------------
# build/X -> its source (the rule's first prerequisite, one level of
# variables expanded); every target, for make lines.
awk '
    function expand(s,   v) {
        while (match(s, /\$\([A-Za-z_][A-Za-z0-9_]*\)/)) {
            v = substr(s, RSTART + 2, RLENGTH - 3)
            s = substr(s, 1, RSTART - 1) ((v == "BUILD") ? "build" : ((v in var) ? var[v] : "")) substr(s, RSTART + RLENGTH)
        }
        return s
    }
    /^[A-Za-z_][A-Za-z0-9_]*[ \t]*(:=|\?=|\+=|=)/ {
        name = $0; sub(/[ \t]*(:=|\?=|\+=|=).*$/, "", name)
        val = $0; sub(/^[^=]*=[ \t]*/, "", val)
        if (!(name in var)) var[name] = val
        next
    }
    /^[^ \t#][^=]*:([^=]|$)/ {
        tg = $0; sub(/:.*$/, "", tg); pre = $0; sub(/^[^:]*:[ \t]*/, "", pre)
        if (tg ~ /^\.PHONY/) { n = split(pre, w, /[ \t]+/); for (i = 1; i <= n; i++) if (w[i] != "") print "target\t" w[i]; next }
        n = split(expand(tg), w, /[ \t]+/)
        split(expand(pre), p, /[ \t]+/)
        for (i = 1; i <= n; i++) if (w[i] != "") {
            print "target\t" w[i]
            if (w[i] ~ /^build\//) print "source\t" w[i] "\t" p[1]
        }
    }
' Makefile > "$O/make.tsv"

# ---- 3. checks ------------------------------------------------------------

# The prelude of fragments: written once per language.
prelude() { # LANG
    printf '/* tests/docs_check.sh: the prelude of documentation fragments */\n'
    printf '#include "zero.h"\n#include "zero_offload.h"\n'
    [ "$1" = cu ] && printf '#include "zero_cuda.cuh"\n'
    printf '#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n'
    printf 'typedef struct model { zero_tensor *tensors; int n_tensors; int steps; } model;\n'
    printf 'void model_forward(model *m, int t, const void *param);\n'
    printf 'void model_backward(model *m, int t, const void *param, void *grad, double scale);\n'
}
for l in c cpp cu; do prelude $l > "$O/prelude.$l"; done

# Does the C/C++ block form a whole translation unit? (first code line a
# directive, or a main function)
is_unit() { # BLOCK
    awk '
        /^[ \t]*$/ || /^[ \t]*\/\// || /^[ \t]*\/\*.*\*\/[ \t]*$/ { next }
        !seen { seen = 1; if ($0 ~ /^[ \t]*#/) unit = 1 }
        /(^|[ \t*])main[ \t]*\(/ && $0 !~ /^[ \t]*(\/\/|\/\*|\*)/ { unit = 1 }
        END { exit unit ? 0 : 1 }
    ' "$1"
}

# unit or fragment (a marker's file / fragment, else is_unit)
block_mode() { # BLOCK OPTS
    case " $2 " in
    *" file "*) echo unit ;;
    *" fragment "*) echo fragment ;;
    *) if is_unit "$1"; then echo unit; else echo fragment; fi ;;
    esac
}

# Write the source of a block: a unit with #line, or a fragment wrapped
# (MODE fragment: the prelude first; MODE part: appended to the batch file
# OUT, which already has BASE lines, as function number K).
gen_source() { # BLOCK MDFILE FIRSTLINE MODE LANG OUT [BASE K]
    pre="$O/prelude.$5"; [ "$4" = part ] && pre=/dev/null
    awk -v md="$2" -v first="$3" -v mode="$4" -v gen="$6" -v ol="${7:-0}" -v k="${8:-}" '
        function out(s) { print s; ol++ }
        function mdline(k) { if (k != last + 1) out("#line " (first + k - 1) " \"" md "\""); last = k; }
        function resync() { out("#line " (ol + 2) " \"" gen "\""); last = -10 }
        function code(s) {   # the line without comments and literals, for braces
            if (incom) { if (!sub(/^.*\*\//, "", s)) return ""; incom = 0 }
            gsub(/"([^"\\]|\\.)*"/, "\"\"", s); gsub(/\047([^\047\\]|\\.)*\047/, "0", s)
            gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", s); sub(/\/\/.*$/, "", s)
            if (sub(/\/\*.*$/, "", s)) incom = 1
            return s
        }
        FILENAME == ARGV[1] { pre[++np] = $0; next }
        { blk[++nb] = $0 }
        END {
            last = -10
            if (mode == "unit") {
                for (k = 1; k <= nb; k++) { mdline(k); out(blk[k]) }
                exit
            }
            # split: function definitions at depth 0 go to file scope
            depth = 0; incom = 0; kk = k
            for (k = 1; k <= nb; k++) {
                c = code(blk[k]); where[k] = "body"
                if (depth == 0 && !indef) {
                    t = c; sub(/^[ \t]+/, "", t)
                    fw = t; sub(/[^A-Za-z0-9_].*$/, "", fw)
                    if (t ~ /^[A-Za-z_][A-Za-z0-9_]*[ \t*]+[A-Za-z_*][A-Za-z0-9_ \t*]*\(/ && t !~ /^[^(]*=/ &&
                        fw !~ /^(return|if|else|for|while|do|switch|case|goto|sizeof|typedef|break|continue)$/) {
                        # a definition when "{" comes before ";" (looking ahead)
                        isdef = 0
                        for (j = k; j <= nb; j++) {
                            s = c
                            if (j > k) { s = blk[j]; gsub(/"([^"\\]|\\.)*"/, "\"\"", s); sub(/\/\/.*$/, "", s) }
                            pb = index(s, "{"); ps = index(s, ";")
                            if (pb && (!ps || pb < ps)) { isdef = 1; break }
                            if (ps) break
                        }
                        if (isdef) indef = 1
                    }
                }
                if (indef) where[k] = "file"
                if (blk[k] ~ /^[ \t]*#[ \t]*include/) where[k] = "file"
                nopen = gsub(/\{/, "{", c); nclose = gsub(/\}/, "}", c)
                depth += nopen - nclose
                if (indef && depth <= 0 && (nopen || nclose)) { indef = 0; depth = 0 }
            }
            for (k = 1; k <= np; k++) out(pre[k])
            last = -10
            for (k = 1; k <= nb; k++) if (where[k] == "file") { mdline(k); out(blk[k]) }
            resync()
            out("int zero__docs_fragment" kk "(zero_config cfg, zero_error err, zero_engine *e,")
            out("        const zero_backend *backend, zero_tensor *tensors, int n, int world_size,")
            out("        int my_rank, void *state, long it, zero_cpu_pool *pool, zero_backend ob) {")
            out("    {")
            for (k = 1; k <= nb; k++) if (where[k] == "body") { mdline(k); out(blk[k]) }
            resync()
            out("    }")
            out("    return 0;")
            out("}")
        }
    ' "$pre" "$1"
}

# The compilers, with the warnings of units or of fragments.
compile_src() { # LANG MODE SRC OBJ
    quiet=""
    [ "$2" = unit ] || quiet="-Wno-unused-variable -Wno-unused-but-set-variable -Wno-unused-parameter -Wno-unused-but-set-parameter -Wno-unused-function -Wno-unused-local-typedefs"
    [ "$2" = unit ] || [ "$1" = c ] || quiet="$quiet -Wno-vexing-parse" # "T f(void);" at block scope
    case $1 in
    c)   $CC -std=c11 -Wall -Wextra -Werror $quiet -I. -c "$3" -o "$4" ;;
    cpp) $CXX_GCC -std=c++17 -Wall -Wextra -Werror $quiet -I. -c "$3" -o "$4" ;;
    cu)  xq=""; [ -n "$quiet" ] && xq=",$(echo $quiet | tr ' ' ',')"
         $NVCC -std=c++17 -arch="$GPU_ARCH" -I. $NCCL_FLAGS -Xcompiler "-Wall,-Wextra,-Werror$xq" -c "$3" -o "$4" ;;
    esac
}

# A C, C++ or CUDA block: compile; link (C with main); run when marked.
check_code() { # LANG BLOCK MDFILE FIRSTLINE OPTS ID
    lang=$1; blk=$2; md=$3; first=$4; opts=$5; id=$6
    mode=$(block_mode "$blk" "$opts")
    src="$O/src/$id.$lang"
    gen_source "$blk" "$md" "$first" "$mode" "$lang" "$src" > "$src"
    echo "$md:$first: \`\`\`$lang, compiled as a $mode ($src)"
    compile_src "$lang" "$mode" "$src" "$O/src/$id.o" || return 1
    [ "$lang" = c ] && [ "$mode" = unit ] || return 0
    grep -Eq '(^|[ \t*])main[ \t]*\(' "$blk" || return 0
    objs="$O/src/$id.o"
    grep -Eq '^[ \t]*#[ \t]*define[ \t]+ZERO_IMPLEMENTATION' "$blk" || objs="$objs $O/impl.o"
    echo "linking it"
    if ! $CC -o "$O/bin/$id" $objs -lm -lpthread 2> "$O/src/$id.link"; then
        cat "$O/src/$id.link"
        case " $opts " in *" run "*) echo "a block marked run must link as it is"; return 1 ;; esac
        undef=$(sed -n "s/.*undefined reference to [\`']\([A-Za-z_][A-Za-z0-9_]*\)'.*/\1/p" "$O/src/$id.link" | sort -u)
        [ -n "$undef" ] || return 1
        if echo "$undef" | grep -q '^zero'; then echo "zero's own functions are missing: $undef"; return 1; fi
        echo "the reader's own functions get stubs: $undef" | tr '\n' ' '; echo
        for s in $undef; do echo "void $s(void) {}"; done > "$O/src/$id.stubs.c"
        $CC -c -o "$O/src/$id.stubs.o" "$O/src/$id.stubs.c" &&
            $CC -o "$O/bin/$id" $objs "$O/src/$id.stubs.o" -lm -lpthread || return 1
    fi
    case " $opts " in
    *" run "*)
        echo "running it"
        timeout 60 "$O/bin/$id" < /dev/null || { echo "exit status $?"; return 1; } ;;
    esac
    return 0
}

# build/X -> the source its Makefile rule builds it from (the rule's first
# prerequisite; pattern rules too).
src_of() { # build/X
    src=$(awk -F "$TAB" -v p="$1" '$1 == "source" && $2 == p { print $3; exit }' "$O/make.tsv")
    if [ -z "$src" ]; then # a pattern rule: build/bench/% <- examples/bench/%.cu
        src=$(awk -F "$TAB" -v p="$1" '$1 == "source" && index($2, "%") {
                  pre = substr($2, 1, index($2, "%") - 1); suf = substr($2, index($2, "%") + 1)
                  if (index(p, pre) == 1 && length(p) > length(pre) + length(suf) &&
                      substr(p, length(p) - length(suf) + 1) == suf) {
                      stem = substr(p, length(pre) + 1, length(p) - length(pre) - length(suf))
                      s = $3; sub(/%/, stem, s); print s; exit } }' "$O/make.tsv")
    fi
    if [ -z "$src" ] || [ ! -f "$src" ]; then
        echo "no Makefile rule builds $1 (or its source ${src:-?} is missing)" >&2; return 1
    fi
    echo "$src"
}

# The C programs of build/: built once here (-O0) from their sources, so that
# what the docs run is the tree's code, whatever build/ holds.
prog_of() { # build/X -> path of the program
    p=${1#./}
    bin="$O/bin/$(echo "$p" | tr '/' '_')"
    [ -x "$bin" ] && { echo "$bin"; return 0; }
    src=$(src_of "$p") || return 1
    case $src in
    *.c) ;;
    *) echo "$p is built by nvcc from $src: it does not run here" >&2; return 1 ;;
    esac
    if ! $CC -std=c11 -O0 -I. -o "$bin" "$src" -lm -lpthread > "$bin.build" 2>&1; then
        cat "$bin.build" >&2; echo "$p: its source $src does not build" >&2; return 1
    fi
    echo "$bin"
}

# Asked for --help once.
help_of() { # build/X -> path of a file holding its help (or its sources' text)
    p=${1#./}
    h="$O/help/$(echo "$p" | tr '/' '_').txt"
    [ -f "$h" ] && { echo "$h"; return 0; }
    src=$(src_of "$p") || return 1
    case $src in
    *.c)
        bin=$(prog_of "$p") || return 1
        timeout 20 "$bin" --help > "$h" 2>&1 < /dev/null ;;
    *) # CUDA: the usage text in its sources (the program and the headers beside it)
        cat "$src" $(ls "$(dirname "$src")"/*.h "$(dirname "$src")"/*.cuh 2>/dev/null) > "$h" ;;
    esac
    echo "$h"
}

has_flag() { # FLAG FILE: the flag as a whole word in the text
    grep -Eq -- "(^|[^A-Za-z0-9_-])$1([^A-Za-z0-9_-]|\$)" "$2"
}

# The options of one of our programs: every -x / --xy in its help.
check_flags() { # WHAT HELPFILE ARGS...
    what=$1; hf=$2; shift 2
    cfok=0
    for a in "$@"; do
        case $a in
        --) break ;;
        -[0-9]*|-.*|-) ;;
        -*) fl=${a%%=*}
            has_flag "$fl" "$hf" || { echo "$what: $fl is not in its --help"; cfok=1; } ;;
        esac
    done
    return $cfok
}

check_make() { # ARGS after make
    mok=0
    case " $* " in *" -C "*|*" -f "*|*" --file"*|*" --directory"*) return 0 ;; esac
    for a in "$@"; do
        case $a in
        --*) fl=${a%%=*}
             grep -q -- "$fl" Makefile || make --help 2>/dev/null | grep -q -- "$fl" ||
                 { echo "make: $fl is neither make's nor in the Makefile"; mok=1; } ;;
        -*) ;;
        *=*) v=${a%%=*}
             grep -Eq "(^|[^A-Za-z0-9_])$v([^A-Za-z0-9_]|\$)" Makefile ||
                 { echo "make: the Makefile has no variable $v"; mok=1; } ;;
        *) awk -F "$TAB" -v t="$a" '$1 == "target" && $2 == t { f = 1 } END { exit !f }' "$O/make.tsv" ||
               help_of "$a" > /dev/null 2>&1 ||
               { echo "make: no target $a in the Makefile"; mok=1; } ;;
        esac
    done
    return $mok
}

check_paths() { # ARGS: examples/ and tests/ paths must exist
    pok=0
    for a in "$@"; do
        case $a in
        *'...'*|*'*'*|*'?'*|*'$'*|*'<'*|*'['*) ;;
        examples/*|./examples/*|tests/*|./tests/*|docs/*|./docs/*)
            [ -e "${a#./}" ] || { echo "$a does not exist"; pok=1; } ;;
        esac
    done
    return $pok
}

check_ours() { # build/X ARGS...
    hf=$(help_of "$1") || return 1
    check_flags "$1" "$hf" "$@"
}

check_script() { # examples/x.sh ARGS...
    s=${1#./}
    [ -f "$s" ] || { echo "$s does not exist"; return 1; }
    shift
    sok=0
    for a in "$@"; do
        case $a in
        --*) fl=${a%%=*}; has_flag "$fl" "$s" || { echo "$s: $fl does not appear in it"; sok=1; } ;;
        esac
    done
    return $sok
}

check_command() { # MDLINE WORDS...
    L=$1; shift
    while [ $# -gt 0 ]; do case $1 in [A-Za-z_]*=*) shift ;; *) break ;; esac; done
    [ $# -gt 0 ] || return 0
    cmr=0
    case $1 in
    make|gmake) shift; check_make "$@" || cmr=1 ;;
    build/*|./build/*) check_ours "$@" || cmr=1 ;;
    examples/*|./examples/*|tests/*|./tests/*) check_script "$@" || cmr=1 ;;
    sh|bash|python|python3)
        shift
        while [ $# -gt 0 ]; do case $1 in -*) shift ;; *) break ;; esac; done
        case ${1:-} in
        examples/*|./examples/*|tests/*|./tests/*) check_script "$@" || cmr=1 ;;
        esac ;;
    torchrun|srun|mpirun|mpiexec|env|time|nice|nohup|sudo|timeout|taskset|numactl|compute-sanitizer|nsys|ncu|valgrind|gdb|xargs)
        shift
        while [ $# -gt 0 ]; do case $1 in build/*|./build/*) break ;; *) shift ;; esac; done
        [ $# -gt 0 ] && { check_ours "$@" || cmr=1; } ;;
    *) check_paths "$@" || cmr=1 ;;
    esac
    [ $cmr -eq 0 ] || echo "  (line $L)"
    return $cmr
}

# Commands of a shell block, one simple command per line: MDLINE TAB word TAB word ...
shell_commands() { # BLOCK LANG FIRSTLINE
    awk -v lang="$2" -v first="$3" '
        function flushw() { if (inw) { wd[nw++] = w; w = ""; inw = 0 } }
        function endc(   s, k, a, skip) {
            flushw()
            s = ""; a = 0; skip = 0
            for (k = 0; k < nw; k++) {
                if (skip) { skip = 0; continue }
                if (wd[k] ~ /^[0-9]*(>>?|<)$/) { skip = 1; continue }               # > file
                if (wd[k] ~ /^[0-9]*(>>?|<)/) continue                              # >file, 2>&1
                if (a == 0 && wd[k] ~ /^(then|else|elif|do|if|while|until|!|\{|\}|fi|done|esac)$/) continue
                if (a == 0 && wd[k] ~ /^(for|case|function)$/) { nw = 0; return }
                s = s "\t" wd[k]; a++
            }
            if (a) print L s
            nw = 0
        }
        function words(t, L0,   i, c, d) {
            L = L0; nw = 0; w = ""; inw = 0; q = ""
            for (i = 1; i <= length(t); i++) {
                c = substr(t, i, 1)
                if (q == "\047") { if (c == "\047") q = ""; else w = w c; continue }
                if (q == "\"") {
                    if (c == "\\") { i++; w = w substr(t, i, 1); continue }
                    if (c == "\"") q = ""; else w = w c
                    continue
                }
                if (c == "\\") { i++; w = w substr(t, i, 1); inw = 1; continue }
                if (c == "\047" || c == "\"") { q = c; inw = 1; continue }
                if (c == " " || c == "\t") { flushw(); continue }
                if (c == "#" && !inw) break
                if (c == "$" && substr(t, i + 1, 1) == "(") {          # $( ... ) kept in the word
                    d = 0
                    for (; i <= length(t); i++) {
                        c = substr(t, i, 1); w = w c
                        if (c == "(") d++
                        if (c == ")" && --d == 0) break
                    }
                    inw = 1; continue
                }
                if (c == "`") { w = w c; i++; while (i <= length(t) && substr(t, i, 1) != "`") { w = w substr(t, i, 1); i++ } w = w "`"; inw = 1; continue }
                if (c == ">" || c == "<") {
                    w = w c; inw = 1
                    if (substr(t, i + 1, 1) == c) { i++; w = w c }
                    if (substr(t, i + 1, 1) == "&") { i++; w = w "&"; while (substr(t, i + 1, 1) ~ /[0-9-]/) { i++; w = w substr(t, i, 1) } }
                    flushw(); continue
                }
                if (c == ";" || c == "|" || c == "&" || c == "(" || c == ")") { endc(); continue }
                w = w c; inw = 1
            }
            endc()
        }
        {
            line = $0; n = FNR + first - 1
            if (heredoc != "") { t = line; sub(/^[ \t]+/, "", t); if (t == heredoc) heredoc = ""; next }
            if (lang == "console") {
                if (cont) { buf = buf " " line }
                else if (line ~ /^\$ /) { buf = substr(line, 3); at = n }
                else next
            } else {
                if (cont) buf = buf " " line; else { buf = line; at = n }
            }
            cont = (buf ~ /\\$/)
            if (cont) { sub(/\\$/, "", buf); next }
            if (match(buf, /<<-?[ \t]*[\047"]?[A-Za-z_]+/)) {
                heredoc = substr(buf, RSTART, RLENGTH); sub(/^<<-?[ \t]*[\047"]?/, "", heredoc)
            }
            print buf > "/dev/stderr"
            words(buf, at)
        }
    ' "$1"
}

check_shell() { # LANG BLOCK MDFILE FIRSTLINE ID
    lang=$1; blk=$2; md=$3; first=$4; id=$5
    echo "$md:$first: \`\`\`$lang"
    shell_commands "$blk" "$lang" "$first" > "$O/src/$id.cmds" 2> "$O/src/$id.sh"
    if [ "$lang" = console ] && [ ! -s "$O/src/$id.sh" ]; then
        echo "a console block without a \"\$ \" command line: use text for output alone"; return 1
    fi
    shc=sh; [ "$lang" = bash ] && shc=bash
    syn="$O/src/$id.sh"; [ "$lang" = console ] || syn=$blk   # sh, bash: the block as it is
    if ! $shc -n "$syn"; then echo "$shc -n: syntax error in the commands"; return 1; fi
    shr=0
    while IFS="$TAB" read -r L rest; do
        set -f; oifs=$IFS; IFS=$TAB
        # shellcheck disable=SC2086
        set -- $rest
        IFS=$oifs; set +f
        check_command "$L" "$@" || shr=1
    done < "$O/src/$id.cmds"
    return $shr
}

check_json() { # BLOCK MDFILE FIRSTLINE OPTS ID
    blk=$1; md=$2; first=$3; opts=$4; id=$5
    args="--world 1 --hidden 1024 --mbs 1 --supply-hf"
    case " $opts" in *" --"*) args="--${opts#*--}" ;; esac
    zc=$(help_of build/zero_config) || return 1
    cp "$blk" "$O/src/$id.json"
    echo "$md:$first: build/zero_config check $O/src/$id.json $args"
    # shellcheck disable=SC2086
    "$O/bin/build_zero_config" check "$O/src/$id.json" $args > "$O/src/$id.out" 2>&1
    rc=$?
    grep -v '^{' "$O/src/$id.out"
    [ $rc -eq 0 ] || { echo "rejected (exit $rc); <!-- snippet: --world N ... --> before the block sets the arguments"; return 1; }
    if grep -q 'unknown key' "$O/src/$id.out"; then echo "an unknown key (a typo?)"; return 1; fi
    return 0
}

# docs/api.md is the reference of every public function: each ZERO_API
# declaration of the three headers needs its "### name" entry there.
api_coverage() { # APIMD
    grep -h 'ZERO_API' zero.h zero_offload.h zero_cuda.cuh | grep -v 'define ZERO_API\|ifndef ZERO_API' |
        sed -n 's/.*[ *]\(zero_[a-z0-9_]*\)(.*/\1/p' | sort -u > "$O/api_functions.txt"
    sed -n 's/^### \(zero_[a-z0-9_]*\)[ \t]*$/\1/p' "$1" | sort -u > "$O/api_documented.txt"
    missing=$(comm -23 "$O/api_functions.txt" "$O/api_documented.txt")
    stale=$(comm -13 "$O/api_functions.txt" "$O/api_documented.txt")
    echo "$1: $(wc -l < "$O/api_documented.txt" | tr -d ' ') entries for $(wc -l < "$O/api_functions.txt" | tr -d ' ') ZERO_API functions"
    [ -z "$missing" ] || echo "no entry in $1 for:" $missing
    [ -z "$stale" ] || echo "entries in $1 for functions the headers no longer declare:" $stale
    [ -z "$missing" ] && [ -z "$stale" ]
}

# ---- output blocks: rerun and compared ----
# Output commands run in a scratch directory per markdown file, $O/run/NAME,
# in the order of the file (a later command may use what an earlier one
# wrote): it holds the headers, Makefile, docs, examples and tests (links to
# the tree), the blocks marked <!-- file: NAME -->, and build/ with the
# programs the commands name (prog_of: built here from their sources).
scratch_of() { # MDFILE
    d="$O/run/$(basename "$1" .md)"
    if [ ! -d "$d" ]; then
        mkdir -p "$d/build"
        for e in zero.h zero_offload.h zero_cuda.cuh Makefile README.md docs examples tests; do
            [ -e "$e" ] && ln -s "$PWD/$e" "$d/$e"
        done
    fi
    echo "$d"
}

abs_path() { case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac; }

# Lines compared: trailing blanks of each line and trailing blank lines cut,
# then each match of the mask (an ERE) replaced by <masked>.
normalize() { # FILE MASK
    sed -e 's/[ 	]*$//' "$1" | awk '{ l[NR] = $0 } $0 != "" { last = NR } END { for (i = 1; i <= last; i++) print l[i] }' |
        if [ -n "$2" ]; then sed -E "s/$2/<masked>/g"; else cat; fi
}

# Run one command in the scratch directory and compare what it prints with
# the expected text.
output_one() { # SCRATCH CMDFILE WANTFILE EXCERPT MASK
    d=$1; cmdf=$(abs_path "$2"); want=$3
    got="${cmdf%.cmd}.got"
    echo "\$ $(cat "$cmdf")"
    case $(head -n 1 "$cmdf") in
    make\ *|gmake\ *) : > "$got"; echo "(make is not run: the check builds the programs itself)" ;;
    *)  for p in $(grep -o '\(^\|[^A-Za-z0-9_./-]\)\(\./\)\{0,1\}build/[A-Za-z0-9_./-]*' "$cmdf" | sed 's/^[^b.]*//; s/^\.\///' | sort -u); do
            bin=$(prog_of "$p") || return 1
            mkdir -p "$d/$(dirname "$p")" && ln -sf "$(abs_path "$bin")" "$d/$p"
        done
        (cd "$d" && LC_ALL=C timeout 120 sh "$cmdf" < /dev/null > "$got" 2>&1)
        rc=$?
        [ $rc -eq 124 ] && { echo "timed out after 120 s"; return 1; } ;;
    esac
    normalize "$want" "$5" > "$want.n"; normalize "$got" "$5" > "$got.n"
    if [ "$4" = 1 ]; then   # an excerpt: the block's lines, in order, among the output's
        awk 'NR == FNR { if ($0 != "" && $0 != "...") w[++nw] = $0; next }
             k < nw && $0 == w[k + 1] { k++ }
             END { if (k < nw) { print "this line of the block is not in the output (in this order):"; print w[k + 1]; exit 1 } }' \
            "$want.n" "$got.n" && return 0
        echo "the output:"; head -n 60 "$got.n"; return 1
    fi
    diff -u "$want.n" "$got.n" > "$got.diff" && return 0
    echo "the block (-) differs from what the command prints now (+): update the block from the output"
    head -n 80 "$got.diff"
    return 1
}

# A block marked <!-- output ... -->: its commands run, their output compared.
check_output() { # BLOCK MDFILE FIRSTLINE LANG SPEC ID
    blk=$1; md=$2; first=$3; lang=$4; spec=$5; id=$6
    oopts=${spec%%"$US"*}; cmd=${spec#*"$US"}
    excerpt=0; rendered=0; mask=""
    oifs=$IFS; IFS=,
    for w in $oopts; do
        w=$(echo "$w" | sed 's/^[ 	]*//; s/[ 	]*$//')
        case $w in
        excerpt) excerpt=1 ;;
        rendered) rendered=1 ;;
        mask\ *) mask=${w#mask } ;;
        "") ;;
        *) IFS=$oifs; echo "$md:$first: unknown output option '$w' (excerpt, rendered, mask ERE)"; return 1 ;;
        esac
    done
    IFS=$oifs
    d=$(scratch_of "$md")
    pre="$O/out/$id"; mkdir -p "$O/out"
    rm -f "$pre".*
    if [ -n "$cmd" ]; then
        printf '%s\n' "$cmd" > "$pre.1.cmd"; cp "$blk" "$pre.1.want"
    elif [ "$lang" = console ]; then # "$ " lines (and their \ continuations) and the output after each
        awk -v pre="$pre" '
            !cont && /^\$ / { n++; cf = pre "." n ".cmd"; wf = pre "." n ".want"; printf "" > wf
                              c = substr($0, 3); print c > cf; cont = (c ~ /\\$/); next }
            cont { print > cf; cont = ($0 ~ /\\$/); next }
            n { print > wf }
        ' "$blk"
    else
        echo "$md:$first: <!-- output --> without a command needs a console block (\"\$ \" lines); else <!-- output: COMMAND -->"
        return 1
    fi
    last=$(ls "$pre".*.cmd 2>/dev/null | wc -l | tr -d ' ')
    [ "$last" -gt 0 ] || { echo "$md:$first: no command"; return 1; }
    if [ "$rendered" = 1 ]; then # the output goes on in the Markdown after the block, to <!-- output ends -->
        close=$((first + $(wc -l < "$blk")))
        awk -v from="$close" 'FNR <= from { next }
            /<!--[ \t]*output ends[ \t]*-->/ { found = 1; exit }
            /^[ \t]*(```|~~~)/ { next }
            { print }
            END { exit !found }' "$md" >> "$pre.$last.want" ||
            { echo "$md:$first: rendered: no <!-- output ends --> after the block"; return 1; }
    fi
    echo "$md:$first: \`\`\`$lang, the output of $last command(s), rerun in $d"
    ook=0
    k=0
    while [ $k -lt "$last" ]; do
        k=$((k + 1))
        output_one "$d" "$pre.$k.cmd" "$pre.$k.want" "$excerpt" "$mask" || ook=1
    done
    return $ook
}

# A console block shows output: rerun (<!-- output -->) or a recorded run.
console_marked() { # BLOCK MDFILE FENCE
    awk '!cont && /^\$ / { cont = /\\$/; next } cont { cont = /\\$/; next } /[^ \t]/ { out = 1 } END { exit out }' "$1" && return 0
    echo "$2:$3: a console block that shows output needs <!-- output --> before it (the check reruns its"
    echo "commands and compares), or a line \"Recorded YYYY-MM-DD on MACHINE ...\" before it (a past run:"
    echo "GPUs, timings), or <!-- not checked: REASON -->"
    return 1
}

# ---- numbers that prose repeats ----
# GPT-2 XL's parameter count, from its shape (48 layers, width C = 1600, 1024
# positions, the head tied to the token embedding): P(V) = V C + 1024 C +
# 48 (12 C^2 + 13 C) + 2 C. With GPT-2's 50257 tokens that is 1.5576e9 (what
# `make run` plans); examples/gpt's byte vocabulary (V = 256) makes 1.4776e9.
# Every "GPT-2 XL (N" count in the docs and the Makefile must be one of the
# two at the digits it gives, the Makefile's estimator command must plan
# P(50257) with the embedding as its largest layer, and README must give that
# count too (it may give both).
gpt2_xl() { # MDFILES...
    awk 'BEGIN { C = 1600; b = 1024 * C + 48 * (12 * C * C + 13 * C) + 2 * C
                 printf "%.0f %.0f %.0f\n", 50257 * C + b, 256 * C + b, 50257 * C }' > "$O/gpt2xl.txt"
    read -r p_gpt2 p_bytes p_emb < "$O/gpt2xl.txt"
    echo "GPT-2 XL: $p_gpt2 parameters with GPT-2's vocabulary, $p_bytes with 256 tokens (largest layer $p_emb)"
    gok=0
    for f in "$@" Makefile; do
        tr '\n' ' ' < "$f" | tr -s ' ' | grep -oE 'GPT-2 XL[^0-9]{0,16}[0-9]+\.[0-9]+e9' |
            sed -E 's/.*[^0-9.]([0-9]+\.[0-9]+e9)$/\1/' > "$O/gpt2xl.$$.txt"
        while read -r v; do
            if same_count "$v" "$p_gpt2" || same_count "$v" "$p_bytes"; then echo "$f: GPT-2 XL $v: ok"
            else echo "$f: GPT-2 XL $v is neither $p_gpt2 (GPT-2's 50257 tokens) nor $p_bytes (256)"; gok=1; fi
        done < "$O/gpt2xl.$$.txt"
    done
    line=$(grep -E '^[[:space:]]+\$\(BUILD\)/zero_estimate --params' Makefile | head -n 1)
    mp=$(echo "$line" | sed -n 's/.*--params \([^ ]*\).*/\1/p'); ml=$(echo "$line" | sed -n 's/.*--largest-layer \([^ ]*\).*/\1/p')
    if same_count "$mp" "$p_gpt2" && same_count "$ml" "$p_emb"; then echo "Makefile: make run plans --params $mp --largest-layer $ml: ok"
    else echo "Makefile: make run's estimator plans --params ${mp:-?} --largest-layer ${ml:-?}, not GPT-2 XL's $p_gpt2 and $p_emb"; gok=1; fi
    if [ -f README.md ]; then
        r3=$(awk -v p="$p_gpt2" 'BEGIN { printf "%.2fe9", p / 1e9 }')
        if tr '\n' ' ' < README.md | grep -q "GPT-2 XL.*$r3"; then echo "README.md: gives $r3, the count make run prints"
        else echo "README.md: does not give GPT-2 XL's $r3 parameters, the count make run plans and prints"; gok=1; fi
    fi
    return $gok
}
same_count() { # "1.48e9" 1477609600: equal at the digits given
    awk -v v="$1" -v p="$2" 'BEGIN {
        if (v !~ /^[0-9]+(\.[0-9]+)?e[0-9]+$/) exit 1
        m = v; sub(/e.*/, "", m); e = v; sub(/.*e/, "", e)
        d = index(m, ".") ? length(m) - index(m, ".") : 0
        exit !(sprintf("%." d "f", p / (10 ^ e)) == m) }'
}

# What README says of `make run` against the Makefile: the host ranks and
# GPUs it names, and the closing line it quotes; and docs/estimator.md, which
# shows the output of make run's estimator commands, must show those commands.
make_run_docs() {
    world=$(grep -o 'train_mlp --world [0-9]*' Makefile | head -n 1 | sed 's/.* //')
    gpus=$(grep -E '^[[:space:]]+\$\(BUILD\)/zero_estimate --params' Makefile | sed -n 's/.*--gpus \([0-9]*\).*/\1/p' | head -n 1)
    mok=0
    readme=$(tr '\n' ' ' < README.md | tr -s ' ')
    case $readme in *"on $world host ranks"*) echo "README.md: make run on $world host ranks: ok" ;;
        *) echo "README.md: does not say make run trains on $world host ranks (the Makefile's --world $world)"; mok=1 ;; esac
    case $readme in *"GPT-2 XL on $gpus GPUs"*) echo "README.md: GPT-2 XL on $gpus GPUs: ok" ;;
        *) echo "README.md: does not say make run plans GPT-2 XL on $gpus GPUs (the Makefile's --gpus $gpus)"; mok=1 ;; esac
    tr '\n' ' ' < README.md | grep -o '`zero: make run done:[^`]*`' | tr -d '`' | sed 's/[ .]*$//' > "$O/run_line.txt"
    [ -s "$O/run_line.txt" ] || { echo "README.md: quotes no \`zero: make run done: ...\` line"; mok=1; }
    # the closing line's format: the recipe's lines joined, awk's "..." "..." concatenations too
    sed -e ':a' -e '/\\$/N; s/\\\n//; ta' Makefile | sed 's/"[[:space:]]*"//g' |
        sed -n 's/.*printf "\(zero: make run done: [^"]*\)".*/\1/p' | head -n 1 > "$O/run_format.txt"
    fmt=$(cat "$O/run_format.txt")
    echo "Makefile: the closing line: $fmt"
    case $fmt in
    *" on $gpus GPUs"*) ;;
    *) echo "Makefile: the closing line does not say GPT-2 XL was planned on $gpus GPUs (--gpus $gpus)"; mok=1 ;;
    esac
    fixed=${fmt%%%*} # up to its first %s
    while read -r q; do
        case $q in
        "$fixed"*) echo "README.md: \"$q\": how the Makefile's closing line begins (\"$fixed\")" ;;
        *) echo "README.md: \"$q\" is not how the Makefile's closing line begins (\"${fixed:-?}\")"; mok=1 ;;
        esac
    done < "$O/run_line.txt"
    grep -E '^[[:space:]]+\$\(BUILD\)/zero_estimate ' Makefile | sed 's/^[[:space:]]*\$(BUILD)/$ build/' > "$O/run_estimate.txt"
    while read -r c; do
        if grep -qxF "$c" docs/estimator.md; then echo "docs/estimator.md: shows $c"
        else echo "docs/estimator.md: does not show make run's \"$c\""; mok=1; fi
    done < "$O/run_estimate.txt"
    return $mok
}

no_language() { # MDFILE LINE
    echo "$1:$2: a fenced block without a language: choose one (c, sh, console, json, text for output and pseudo-code)"
    return 1
}
bad_file_name() { echo "$1:$2: <!-- file: $3 -->: give a plain file name (no directory)"; return 1; }
same_source() { # MDFILE LINE BLOCK PATH
    [ -f "$4" ] || { echo "$1:$2: <!-- source: $4 -->: no such file in the repository"; return 1; }
    cmp -s "$3" "$4" && return 0
    echo "$1:$2: the block differs from $4 (the file is what examples/ ships; make them the same):"
    diff "$4" "$3" | head -20
    return 1
}
unclosed() { echo "$1:$2: the fence is never closed"; return 1; }

# ---- 4. run them --------------------------------------------------------
# nvcc and NCCL, for cu blocks
HAVE_NVCC=""; command -v "$NVCC" > /dev/null 2>&1 && HAVE_NVCC=1
NCCL_FLAGS=""
if [ -n "$HAVE_NVCC" ]; then
    nvcc_inc="$(dirname "$(dirname "$(command -v "$NVCC")")")/include"
    if [ -n "$NCCL_HOME" ] && [ -f "$NCCL_HOME/include/nccl.h" ]; then NCCL_FLAGS="-I$NCCL_HOME/include"
    elif [ -f "$nvcc_inc/nccl.h" ] || [ -f /usr/include/nccl.h ] || [ -f /usr/local/include/nccl.h ]; then :
    else NCCL_FLAGS="-DZERO_NO_NCCL"; echo "docs_check: no nccl.h found: cu blocks compile with -DZERO_NO_NCCL"
    fi
fi
impl_built=""
: > "$O/skipped.txt"; : > "$O/langs.txt"; : > "$O/rerun.txt"; : > "$O/recorded.txt"

while IFS="$TAB" read -r id md first fence lang mark; do
    name="docs-$(basename "$md" .md)-$fence-$lang"
    echo "$lang" >> "$O/langs.txt"
    blk="$O/blocks/$id.txt"
    opts=""; skip=""; outspec=""; save=""; rec=""; srcfile=""
    rest=$mark
    while [ -n "$rest" ]; do # the markers, stacked
        part=${rest%%"$RS"*}
        case $rest in *"$RS"*) rest=${rest#*"$RS"} ;; *) rest="" ;; esac
        case $part in
        skip:*) skip=${part#skip:} ;;
        opts:*) opts=$(echo "${part#opts:}" | tr ',' ' ') ;;
        out:*) outspec=${part#out:} ;;
        file:*) save=${part#file:} ;;
        rec:*) rec=${part#rec:} ;;
        src:*) srcfile=${part#src:} ;;
        esac
    done
    [ -n "$srcfile" ] && step "$name-source" same_source "$md" "$fence" "$blk" "$srcfile"
    if [ -n "$save" ]; then
        case $save in
        */*|.*|"") step "$name-file" bad_file_name "$md" "$fence" "$save" ;;
        *) cp "$blk" "$(scratch_of "$md")/$save" ;;
        esac
    fi
    if [ -n "$skip" ]; then
        echo "skip  $md:$fence \`\`\`$lang: $skip"
        echo "$md:$fence ($lang): $skip" >> "$O/skipped.txt"; continue
    fi
    if [ -n "$outspec" ]; then
        echo "$md:$fence" >> "$O/rerun.txt"
        step "$name-output" check_output "$blk" "$md" "$first" "$lang" "$outspec" "$id"
    elif [ -n "$rec" ]; then
        echo "$md:$fence: $rec" >> "$O/recorded.txt"
    elif [ "$lang" = console ] || [ "$lang" = shell-session ]; then
        step "$name-output" console_marked "$blk" "$md" "$fence"
    fi
    name="docs-$(basename "$md" .md)-$fence-$lang" # (step set it)
    case $lang in
    -) step "$name" no_language "$md" "$fence" ;;
    !unclosed) step "$name" unclosed "$md" "$fence" ;;
    c|cpp|cu|c++|cuda)
        l=$lang; [ "$l" = c++ ] && l=cpp; [ "$l" = cuda ] && l=cu
        if [ "$l" = cu ] && [ -z "$HAVE_NVCC" ]; then
            echo "skip  $md:$fence \`\`\`cu: no nvcc"; echo "$md:$fence (cu): no nvcc here" >> "$O/skipped.txt"; continue
        fi
        if [ "$l" = c ] && [ -z "$impl_built" ] && grep -Eq '(^|[ \t*])main[ \t]*\(' "$blk" &&
           ! grep -Eq '^[ \t]*#[ \t]*define[ \t]+ZERO_IMPLEMENTATION' "$blk"; then
            printf '#define ZERO_IMPLEMENTATION\n#include "zero.h"\n#include "zero_offload.h"\n' > "$O/impl.c"
            $CC -std=c11 -O0 -I. -c "$O/impl.c" -o "$O/impl.o" && impl_built=1
        fi
        if [ "$(block_mode "$blk" "$opts")" = fragment ]; then # compiled together, below
            printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$id" "$md" "$first" "$opts" >> "$O/batch.$l.${id%%-*}"
        else
            pbuild "$name" check_code "$l" "$blk" "$md" "$first" "$opts" "$id"
        fi ;;
    json) step "$name" check_json "$blk" "$md" "$first" "$opts" "$id" ;;
    sh|bash|shell|console|shell-session|zsh)
        l=$lang; [ "$l" = shell ] || [ "$l" = zsh ] && l=sh; [ "$l" = shell-session ] && l=console
        step "$name" check_shell "$l" "$blk" "$md" "$first" "$id" ;;
    *) [ -n "$outspec" ] || echo "-     $md:$fence \`\`\`$lang: not checked (by language)" ;;
    esac
done < "$O/manifest.tsv"
# The fragments of one file and language compile as one translation unit
# (each in its own function); when that fails, each on its own, so that the
# failure names its block.
for list in "$O"/batch.*; do
    [ -f "$list" ] || continue
    key=${list##*/batch.}; l=${key%%.*}; src="$O/src/batch-$key.$l"
    cp "$O/prelude.$l" "$src"
    k=0
    while IFS="$TAB" read -r name id md first opts; do
        k=$((k + 1))
        gen_source "$O/blocks/$id.txt" "$md" "$first" part "$l" "$src" "$(wc -l < "$src")" "_$k" >> "$src"
    done < "$list"
    if compile_src "$l" fragment "$src" "$src.o" > "$B/log/docs-batch-$key.log" 2>&1; then
        while IFS="$TAB" read -r name id md first opts; do
            pass=$((pass + 1)); echo "ok    $name"
        done < "$list"
    else
        echo "      the $k $l fragments of $(head -n 1 "$list" | cut -f 3) fail together: each on its own"
        while IFS="$TAB" read -r name id md first opts; do
            pbuild "$name" check_code "$l" "$O/blocks/$id.txt" "$md" "$first" "$opts" "$id"
        done < "$list"
    fi
done
for f in "$@"; do
    [ "$f" = docs/api.md ] && step "docs-api-coverage" api_coverage docs/api.md
    if [ "$f" = README.md ]; then step "docs-gpt2-xl-count" gpt2_xl "$@"; step "docs-make-run" make_run_docs; fi
done
pdone

# ---- 5. summary ---------------------------------------------------------
nb=$(wc -l < "$O/manifest.tsv" | tr -d ' ')
echo "blocks by language: $(sort "$O/langs.txt" | uniq -c | awk '{ printf "%s%s %d", s, ($2 == "-" ? "(none)" : $2), $1; s = ", " }')"
echo "checked: c, cpp, cu, json, sh, bash, console; not checked by design: text, cmake and other languages"
ns=$(wc -l < "$O/skipped.txt" | tr -d ' ')
echo "$ns of $nb blocks skipped:"
sed 's/^/  /' "$O/skipped.txt"
echo "$(wc -l < "$O/rerun.txt" | tr -d ' ') blocks of output rerun and compared; $(wc -l < "$O/recorded.txt" | tr -d ' ') recorded (a past run, not rerun):"
sed 's/^/  /' "$O/recorded.txt"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
