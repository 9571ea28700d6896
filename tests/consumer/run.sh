#!/bin/sh
# tests/consumer/run.sh [DIR] - zero used the way other projects use it (docs/install.md):
# `make install` into DIR/prefix, then this directory's project (main.c, train.c: 2 host
# ranks, ZeRO stage 2) built and run three ways:
#   (a) with the flags of `pkg-config --cflags --libs zero` (Makefile here),
#   (b) with CMake's find_package(zero CONFIG REQUIRED) of that install (CMakeLists.txt here),
#   (c) with CMake's add_subdirectory of this checkout;
# with nvcc, cuda_check.cu (zero_cuda.cuh) compiled and linked with pkg-config's flags
# alone; a DESTDIR install; `make uninstall` leaving nothing. cmake and pkg-config must be
# there: a missing one fails. Ends with "N passed, N failed". DIR (default: a temporary
# directory, removed at the end) keeps the builds and logs (DIR/log) for a look.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
src=$root/tests/consumer
if [ $# -gt 0 ]; then W=$1; keep=1; else W=$(mktemp -d) || exit 1; keep=0; fi
mkdir -p "$W" && W=$(cd "$W" && pwd) || exit 1
rm -rf "$W/log" "$W/prefix" "$W/stage" "$W/pc" "$W/cm-find" "$W/cm-sub"
mkdir -p "$W/log" "$W/pc"
B=$W; pass=0; fail=0
. "$root/tests/lib.sh" # step, run, pbuild, pdone

MAKE=${MAKE:-make}; CMAKE=${CMAKE:-cmake}; PKG_CONFIG=${PKG_CONFIG:-pkg-config}; NVCC=${NVCC:-nvcc}
P=$W/prefix
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
part() { sed -n "s/^#define ZERO_VERSION_$1  *\([0-9][0-9]*\).*/\1/p" "$root/zero.h"; }
version=$(part MAJOR).$(part MINOR).$(part PATCH)
echo "zero $version; make install into $P"

step "have-cmake" command -v "$CMAKE"
step "have-pkg-config" command -v "$PKG_CONFIG"
step "make-install" $MAKE -C "$root" --no-print-directory install PREFIX="$P"
step "installed-files" sh -c 'cd "$1" && for f in zero.h zero_offload.h zero_cuda.cuh; do
        cmp "$f" "$2/include/$f" || exit 1; done &&
    for f in lib/pkgconfig/zero.pc lib/cmake/zero/zeroConfig.cmake lib/cmake/zero/zeroConfigVersion.cmake \
             lib/cmake/zero/zeroTargets.cmake lib/cmake/zero/zeroCudaTargets.cmake; do
        [ -f "$2/$f" ] || { echo "missing: $2/$f"; exit 1; }; done' sh "$root" "$P"
step "pkg-config-version" sh -c 'v=$("$1" --modversion zero) && echo "$v" && [ "$v" = "$2" ]' sh "$PKG_CONFIG" "$version"
flags=$("$PKG_CONFIG" --cflags --libs zero 2>/dev/null)
echo "pkg-config --cflags --libs zero: $flags"

# nvcc builds in the background while the C builds run (2 cores)
if command -v "$NVCC" >/dev/null 2>&1; then
    pbuild "nvcc-pkg-config" "$NVCC" -o "$W/cuda_check" "$src/cuda_check.cu" $flags
fi

# (a) pkg-config
step "pkg-config-build" $MAKE -C "$W/pc" --no-print-directory -f "$src/Makefile" SRC="$src"
[ -x "$W/pc/consumer" ] && run "pkg-config-consumer" "$W/pc/consumer"

# (b) find_package, and (c) add_subdirectory: zero::cuda is required where zero.pc has NCCL
cuda=OFF
case " $flags " in *" -lnccl "*) cuda=ON ;; esac
step "cmake-find_package-configure" "$CMAKE" -S "$src" -B "$W/cm-find" -DCMAKE_PREFIX_PATH="$P" \
    -DZERO_EXPECT_CUDA=$cuda ${CUDA_HOME:+"-DCUDAToolkit_ROOT=$CUDA_HOME"}
step "cmake-find_package-is-the-install" \
    grep -q "consumer: zero $version from $P/lib/cmake/zero" "$W/log/cmake-find_package-configure.log"
step "cmake-find_package-build" "$CMAKE" --build "$W/cm-find"
[ -x "$W/cm-find/consumer" ] && run "cmake-find_package-consumer" "$W/cm-find/consumer"
step "cmake-add_subdirectory-configure" "$CMAKE" -S "$src" -B "$W/cm-sub" -DZERO_SOURCE_DIR="$root" \
    -DZERO_EXPECT_CUDA=$cuda ${CUDA_HOME:+"-DCUDAToolkit_ROOT=$CUDA_HOME"}
step "cmake-add_subdirectory-build" "$CMAKE" --build "$W/cm-sub"
[ -x "$W/cm-sub/consumer" ] && run "cmake-add_subdirectory-consumer" "$W/cm-sub/consumer"

# DESTDIR stages the files; what they say names PREFIX
step "destdir-install" $MAKE -C "$root" --no-print-directory install PREFIX=/opt/zero-staged DESTDIR="$W/stage"
step "destdir-files" sh -c 'd=$1/opt/zero-staged && [ -f "$d/include/zero.h" ] &&
    [ -f "$d/lib/cmake/zero/zeroConfig.cmake" ] && grep -qx "prefix=/opt/zero-staged" "$d/lib/pkgconfig/zero.pc"' sh "$W/stage"
step "destdir-uninstall" sh -c '$1 -C "$2" --no-print-directory uninstall PREFIX=/opt/zero-staged DESTDIR="$3" &&
    left=$(find "$3" -type f) && echo "$left" && [ -z "$left" ]' sh "$MAKE" "$root" "$W/stage"

pdone
step "make-uninstall" sh -c '$1 -C "$2" --no-print-directory uninstall PREFIX="$3" && [ ! -e "$3" ]' sh "$MAKE" "$root" "$P"

echo "$pass passed, $fail failed"
[ "$keep" -eq 1 ] || rm -rf "$W"
[ "$fail" -eq 0 ]
