#!/bin/sh
# tests/headers.sh - the measure of the three headers (make test runs it):
#   1. no function is longer than 160 lines (the line of its opening brace
#      to its closing one): a function that grows past a screen or three is
#      split where it has parts;
#   2. each header's map (its opening comment, from "search for >>") names
#      every section the file has (the "/* ---- >>name" headings), and no
#      section the file does not have;
#   3. zero.h's placements are parts: where a unit's state lives and which
#      optimizer strategy runs is read from the engine's placement flags
#      (offload_param.device, offload_optimizer.device, plan.ext / gext /
#      pvm, nvme.on, opt.cpu / early / trail, dpu.on, param_kind) in the
#      sections of the placements (engine-state, engine-tiles, engine-pvm,
#      engine-program), the strategies (opt-*) and the CPU thread; outside
#      them (the declarations and the config's own sections aside) at most
#      PLACE_LIMIT (15) reads in code, assignments not counted.
# Prints what is wrong, ends with "N functions over 160 lines, M map
# mismatches, K placement-flag reads outside their sections", exits 1 on
# any. With -v, every function over 100 lines and every read counted too.
#   sh tests/headers.sh [-v]
LIMIT=160
PLACE_LIMIT=15
show=$LIMIT
[ "${1:-}" = -v ] && show=100
awk -v limit=$LIMIT -v show=$show -v place_limit=$PLACE_LIMIT '
    FNR == 1 { depth = 0; start = 0; inmap = 0; sec = ""; incom = 0 }
    /search for >>/ && !done[FILENAME] { inmap = 1 }
    inmap && /\*\// { inmap = 0; done[FILENAME] = 1 }
    inmap && /^     [a-z][a-z0-9-]+ +[^ ]/ { mapped[FILENAME, $1] = 1 }
    /^\/\* ---- >>[a-z0-9-]+/ { name = $0; sub(/^\/\* ---- >>/, "", name); sub(/[^a-z0-9-].*/, "", name); has[FILENAME, name] = 1; sec = name }
    FILENAME == "zero.h" {
        code = $0   # the line without its comments
        if (incom) { if (index(code, "*/")) { code = substr(code, index(code, "*/") + 2); incom = 0 } else code = "" }
        while (match(code, /\/\*/)) {
            rest = substr(code, RSTART + 2)
            if (index(rest, "*/")) code = substr(code, 1, RSTART - 1) " " substr(rest, index(rest, "*/") + 2)
            else { code = substr(code, 1, RSTART - 1); incom = 1 }
        }
        placed = sec ~ /^(engine-state|engine-tiles|engine-pvm|engine-program|engine-thread|opt-.*|api-.*|config-.*)$/
        while (!placed && match(code, /(e|z|c|cfg)(->|\.)(zero_optimization\.)?(offload_param\.device|offload_optimizer\.device|plan\.ext|plan\.gext|plan\.pvm|nvme\.on|opt\.cpu|opt\.early|opt\.trail|dpu\.on|offload_param\.param_kind)/)) {
            after = substr(code, RSTART + RLENGTH)
            code = after
            if (after ~ /^[A-Za-z0-9_]/ || after ~ /^ *=[^=]/) continue   # a longer name, or an assignment
            reads++
            if (show < limit) printf "zero.h:%d: >>%s: %s\n", FNR, sec, substr($0, 1, 110)
        }
    }
    {
        line = $0
        gsub(/"([^"\\]|\\.)*"/, "", line)   # strings and character constants hold no braces that count
        gsub(/\047([^\047\\]|\\.)*\047/, "", line)
        sub(/\/\/.*/, "", line)
        n = gsub(/\{/, "{", line); m = gsub(/\}/, "}", line)
        if (depth == 0 && n > m && line ~ /\)[^;]*\{ *$/) { start = FNR; fname = $0 }
        depth += n - m
        if (depth == 0 && start) {
            len = FNR - start + 1
            if (len > show) printf "%s:%d: %d lines: %s\n", FILENAME, start, len, substr(fname, 1, 90)
            if (len > limit) over++
            start = 0
        }
    }
    END {
        for (k in has) if (!(k in mapped)) { split(k, p, SUBSEP); printf "%s: section >>%s is not in the map\n", p[1], p[2]; bad++ }
        for (k in mapped) if (!(k in has)) { split(k, p, SUBSEP); printf "%s: the map names %s, which has no section\n", p[1], p[2]; bad++ }
        printf "%d functions over %d lines, %d map mismatches, %d placement-flag reads outside their sections (at most %d)\n", over, limit, bad, reads, place_limit
        exit over + bad > 0 || reads > place_limit
    }' zero.h zero_cuda.cuh zero_offload.h
