/* zero_report - the machine as zero sees it, before training: zero's
   counterpart of DeepSpeed's ds_report.

       zero_report                         every section, one line per item:
                                           name, value, what zero does with it
       zero_report --json                  the same as one JSON object
       zero_report --nvme /mnt/nvme        also the file system there: free
                                           space, a timed write and read

   GPUs, the driver, the CUDA runtime, NCCL and NVML are asked through their
   shared libraries, opened at run time (dlopen), so the tool builds and runs
   where none of them is installed and then says what zero does without them.
   The prototypes and constants it needs are declared here, with the values of
   CUDA 13's cuda.h, NCCL 2's nccl.h and NVML's nvml.h (tests/tools.sh checks
   them against the headers where those are installed).

   Build: make build/zero_report (the Makefile passes GPU_ARCH, CUDA_HOME and
   NCCL_HOME in as ZERO_REPORT_GPU_ARCH, _CUDA_HOME, _NCCL_HOME); by hand:
   cc -std=c11 -O2 -I. -o zero_report examples/zero_report/zero_report.c -lm -lpthread -ldl

   Exit status: 0 it ran (with or without a GPU), 1 the --nvme probe failed
   (the path and the reason on stderr), 2 usage. */
#define _GNU_SOURCE /* dladdr, O_DIRECT, posix_memalign, posix_fadvise */
#define ZERO_IMPLEMENTATION
#include "zero.h"
#include "zero_offload.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "../tool_args.h"

#ifndef ZERO_REPORT_GPU_ARCH
#  define ZERO_REPORT_GPU_ARCH "sm_90"
#endif
#ifndef ZERO_REPORT_CUDA_HOME
#  define ZERO_REPORT_CUDA_HOME ""
#endif
#ifndef ZERO_REPORT_NCCL_HOME
#  define ZERO_REPORT_NCCL_HOME ""
#endif

#define MIB 1048576.0
#define GIB 1073741824.0

/* ---- the libraries' declarations (values from cuda.h, nvml.h, nccl.h) ---- */

#define CU_SUCCESS 0
#define CU_ERROR_STUB_LIBRARY 34
#define CU_ERROR_NO_DEVICE 100
#define CU_ATTR_CC_MAJOR 75 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR */
#define CU_ATTR_CC_MINOR 76 /* CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR */
#define CU_ATTR_SM_COUNT 16 /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT */
#define NVML_OK 0
#define NVML_P2P_NVLINK 2 /* NVML_P2P_CAPS_INDEX_NVLINK */
#define NVML_P2P_OK 0     /* NVML_P2P_STATUS_OK */
#define NVML_LINKS_MAX 18 /* NVML_NVLINK_MAX_LINKS */

typedef struct cuda_api {
    int (*cuInit)(unsigned);
    int (*cuDriverGetVersion)(int *);
    int (*cuDeviceGetCount)(int *);
    int (*cuDeviceGet)(int *, int);
    int (*cuDeviceGetName)(char *, int, int);
    int (*cuDeviceTotalMem_v2)(size_t *, int);
    int (*cuDeviceGetAttribute)(int *, int, int);
    int (*cuDeviceCanAccessPeer)(int *, int, int);
    int (*cuDeviceGetPCIBusId)(char *, int, int);
    int (*cuGetErrorName)(int, const char **);
} cuda_api;

typedef struct nvml_api {
    int (*nvmlInit_v2)(void);
    int (*nvmlShutdown)(void);
    int (*nvmlSystemGetDriverVersion)(char *, unsigned);
    int (*nvmlDeviceGetHandleByPciBusId_v2)(const char *, void **);
    int (*nvmlDeviceGetTopologyCommonAncestor)(void *, void *, int *);
    int (*nvmlDeviceGetP2PStatus)(void *, void *, int, int *);
    int (*nvmlDeviceGetNvLinkState)(void *, unsigned, int *);
} nvml_api;

/* ---- the report: items by section, printed as text or JSON ---- */

typedef struct item {
    const char *section;
    char name[32];
    char value[320];  /* for people */
    char json[640];   /* for scripts: a JSON value */
    char note[512];   /* what zero does with it; may be empty */
} item;

#define ITEMS_MAX 400
static item items[ITEMS_MAX];
static int n_items;

static item *add(const char *section, const char *name) {
    static item overflow;
    item *it = n_items < ITEMS_MAX ? &items[n_items++] : &overflow;
    memset(it, 0, sizeof *it);
    it->section = section;
    snprintf(it->name, sizeof it->name, "%s", name);
    snprintf(it->json, sizeof it->json, "null");
    return it;
}

#define FMT(f, a) TOOL_ARGS_PRINTF(f, a)
static void setv(item *it, const char *fmt, ...) FMT(2, 3);
static void setj(item *it, const char *fmt, ...) FMT(2, 3);
static void setn(item *it, const char *fmt, ...) FMT(2, 3);
#define SETTER(fn, field)                                                                                          \
    static void fn(item *it, const char *fmt, ...) {                                                               \
        va_list ap;                                                                                                \
        va_start(ap, fmt);                                                                                         \
        vsnprintf(it->field, sizeof it->field, fmt, ap);                                                           \
        va_end(ap);                                                                                                \
    }
SETTER(setv, value)
SETTER(setj, json)
SETTER(setn, note)
#undef SETTER

/* s as a JSON string, quoted; one of 8 rotating buffers, so that a few may
   stand in one printf */
static const char *js(const char *s) {
    static char buf[8][512];
    static int k;
    char *o = buf[k++ & 7];
    size_t n = 0;
    o[n++] = '"';
    for (; s && *s && n < sizeof buf[0] - 8; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') o[n++] = '\\', o[n++] = (char)c;
        else if (c < 0x20) n += (size_t)snprintf(o + n, 8, "\\u%04x", c);
        else o[n++] = (char)c;
    }
    o[n++] = '"';
    o[n] = 0;
    return o;
}

static const char *const sections[] = {"zero", "cuda", "gpu", "cpu", "memory", "nvme"};
#define N_SECTIONS (int)(sizeof sections / sizeof sections[0])

static void print_text(void) {
    int s, i;
    for (s = 0; s < N_SECTIONS; s++) {
        int shown = 0;
        for (i = 0; i < n_items; i++) {
            if (strcmp(items[i].section, sections[s]) != 0) continue;
            if (!shown++) printf("%s[%s]\n", s ? "\n" : "", sections[s]);
            printf("  %-14s %s\n", items[i].name, items[i].value);
            if (items[i].note[0]) printf("  %-14s   -> %s\n", "", items[i].note);
        }
    }
}

/* {"section": {"name": value, ..., "notes": {"name": "what zero does"}}, ...} */
static void print_json(void) {
    int s, i, shown = 0;
    printf("{");
    for (s = 0; s < N_SECTIONS; s++) {
        int n = 0, notes = 0;
        for (i = 0; i < n_items; i++) {
            if (strcmp(items[i].section, sections[s]) != 0) continue;
            if (!n++) printf("%s\"%s\": {", shown++ ? ",\n " : "", sections[s]);
            else printf(", ");
            printf("%s: %s", js(items[i].name), items[i].json);
        }
        if (!n) continue;
        for (i = 0; i < n_items; i++) {
            if (strcmp(items[i].section, sections[s]) != 0 || !items[i].note[0]) continue;
            printf("%s%s: %s", notes++ ? ", " : ", \"notes\": {", js(items[i].name), js(items[i].note));
        }
        printf("%s}", notes ? "}" : "");
    }
    printf("}\n");
}

/* ---- libraries: the usual names, then the directories given ---- */

typedef struct lib {
    void *h;
    char path[PATH_MAX];  /* the file opened */
    char err[384];        /* why not, when h is NULL */
    int from_home;        /* found only in a directory given (CUDA_HOME, NCCL_HOME) */
} lib;

/* dlopen each of names (NULL-ended), first as they are (the loader's search:
   LD_LIBRARY_PATH, the ld.so cache, the system directories), then in each of
   dirs (NULL-ended; empty ones skipped). `probe` names a symbol whose file is
   reported. */
static int lib_open(lib *l, const char *const *names, const char *const *dirs, const char *probe) {
    const char *const *n, *const *d;
    Dl_info info;
    void *sym;
    memset(l, 0, sizeof *l);
    for (n = names; *n && !l->h; n++) {
        l->h = dlopen(*n, RTLD_NOW | RTLD_LOCAL);
        if (!l->h && !l->err[0]) snprintf(l->err, sizeof l->err, "%s", dlerror());
    }
    for (d = dirs; d && *d && !l->h; d++) {
        for (n = names; **d && *n && !l->h; n++) {
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", *d, *n);
            if ((l->h = dlopen(p, RTLD_NOW | RTLD_LOCAL)) != NULL) l->from_home = 1;
        }
    }
    if (!l->h) return 0;
    sym = dlsym(l->h, probe);
    if (sym && dladdr(sym, &info) && info.dli_fname) snprintf(l->path, sizeof l->path, "%s", info.dli_fname);
    else snprintf(l->path, sizeof l->path, "%s", names[0]);
    return 1;
}

/* Every symbol of a table of function pointers, by the names given in order;
   0 and the missing name in *missing when one is absent. */
static int lib_syms(lib *l, void **table, const char *const *names, int n, const char **missing) {
    int i;
    for (i = 0; i < n; i++) {
        void *p = dlsym(l->h, names[i]);
        if (!p) {
            *missing = names[i];
            return 0;
        }
        memcpy(&table[i], &p, sizeof p); /* object to function pointer, as POSIX allows */
    }
    return 1;
}

static const char *cu_name(const cuda_api *cu, int r) {
    const char *s = NULL;
    if (cu->cuGetErrorName && cu->cuGetErrorName(r, &s) == CU_SUCCESS && s) return s;
    return "an unknown CUDA error";
}

static void version_text(char *out, size_t cap, int v) { /* 12040 -> "12.4" */
    snprintf(out, cap, "%d.%d", v / 1000, (v % 1000) / 10);
}

/* ---- options ---- */

typedef struct options {
    int json;
    const char *nvme;
    double nvme_bytes;
    int nvme_size_given;
    const char *cuda_home, *nccl_home;
} options;

/* ---- zero: the build ---- */

static void report_zero(const options *o) {
    item *it = add("zero", "version");
    setv(it, "%s", zero_version());
    setj(it, "%s", js(zero_version()));
    setn(it, "zero.h's ZERO_VERSION_MAJOR.MINOR.PATCH, the headers this tool was built with");
    it = add("zero", "gpu_arch");
    setv(it, "%s", ZERO_REPORT_GPU_ARCH);
    setj(it, "%s", js(ZERO_REPORT_GPU_ARCH));
    setn(it, "the Makefile's GPU_ARCH: nvcc -arch=%s builds the CUDA programs (make GPU_ARCH=sm_XY to change)",
         ZERO_REPORT_GPU_ARCH);
    it = add("zero", "cuda_home");
    setv(it, "%s", o->cuda_home[0] ? o->cuda_home : "(not set)");
    setj(it, "%s", js(o->cuda_home));
    setn(it, "searched for libcudart when the loader does not find it (--cuda-home, CUDA_HOME, or the Makefile's)");
    it = add("zero", "nccl_home");
    setv(it, "%s", o->nccl_home[0] ? o->nccl_home : "(not set)");
    setj(it, "%s", js(o->nccl_home));
    setn(it, "searched for libnccl when the loader does not find it (--nccl-home, NCCL_HOME, or the Makefile's)");
}

/* ---- cuda: the driver, the runtime, NCCL ---- */

static const char no_driver[] = "no NVIDIA driver: no GPU will be used; zero runs its host backend (tests, tools)";
static const char *no_gpu = no_driver; /* why the GPU count is 0: report_driver's finding */

/* The driver (libcuda.so.1, never the toolkit's link-time stub); 1 when cuInit
   succeeded and GPUs may be asked about. */
static int report_driver(cuda_api *cu, lib *l, int *version) {
    static const char *const names[] = {"libcuda.so.1", NULL};
    static const char *const syms[] = {"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet",
                                       "cuDeviceGetName", "cuDeviceTotalMem_v2", "cuDeviceGetAttribute",
                                       "cuDeviceCanAccessPeer", "cuDeviceGetPCIBusId", "cuGetErrorName"};
    item *it = add("cuda", "driver");
    const char *missing = NULL;
    char ver[32];
    int r, v = 0;
    memset(cu, 0, sizeof *cu);
    if (!lib_open(l, names, NULL, "cuInit")) {
        setv(it, "not found (%s)", l->err);
        setj(it, "{\"found\": false, \"error\": %s}", js(l->err));
        setn(it, "%s", no_driver);
        return 0;
    }
    if (!lib_syms(l, (void **)cu, syms, (int)(sizeof syms / sizeof syms[0]), &missing)) {
        setv(it, "%s lacks %s (a driver older than CUDA 11?)", l->path, missing);
        setj(it, "{\"found\": true, \"library\": %s, \"error\": %s}", js(l->path), js("missing symbol"));
        setn(it, "%s", no_driver);
        return 0;
    }
    r = cu->cuInit(0);
    if (r == CU_SUCCESS) cu->cuDriverGetVersion(&v);
    version_text(ver, sizeof ver, v);
    if (r != CU_SUCCESS) {
        setv(it, "%s: cuInit: %s (%d)", l->path, cu_name(cu, r), r);
        setj(it, "{\"found\": true, \"library\": %s, \"cuinit\": %d, \"error\": %s}", js(l->path), r,
             js(cu_name(cu, r)));
        if (r == CU_ERROR_STUB_LIBRARY)
            setn(it, "this is the toolkit's stub for linking, not a driver: %s", no_driver);
        else if (r == CU_ERROR_NO_DEVICE)
            setn(it, "the driver sees no GPU (CUDA_VISIBLE_DEVICES=%s): zero runs its host backend (tests, tools)",
                 getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
        else setn(it, "the driver does not start: no GPU will be used; zero runs its host backend (nvidia-smi says more)");
        if (r != CU_ERROR_STUB_LIBRARY) no_gpu = it->note;
        return 0;
    }
    *version = v;
    setv(it, "%s, CUDA %s", l->path, ver);
    setj(it, "{\"found\": true, \"library\": %s, \"cuda_version\": %d}", js(l->path), v);
    setn(it, "the newest CUDA runtime this driver runs; zero's CUDA programs need their runtime's major at most this");
    return 1;
}

/* The runtime a program linked with -lcudart loads (zero.pc's Libs); nvcc
   links the runtime statically by default, as make builds the examples. */
static int report_runtime(const options *o, int driver_version) {
    static const char *const names[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", NULL};
    char d1[PATH_MAX], d2[PATH_MAX], d3[PATH_MAX], ver[32], dver[32];
    const char *dirs[4] = {d1, d2, d3, NULL};
    int (*get)(int *) = NULL;
    int v = 0;
    lib l;
    void *p;
    item *it = add("cuda", "runtime");
    snprintf(d1, sizeof d1, "%s%s", o->cuda_home, o->cuda_home[0] ? "/lib64" : "");
    snprintf(d2, sizeof d2, "%s%s", o->cuda_home, o->cuda_home[0] ? "/lib" : "");
    snprintf(d3, sizeof d3, "%s%s", o->cuda_home, !o->cuda_home[0] ? "" :
#if defined(__aarch64__)
             "/targets/sbsa-linux/lib"
#else
             "/targets/x86_64-linux/lib"
#endif
    );
    if (!lib_open(&l, names, dirs, "cudaRuntimeGetVersion")) {
        setv(it, "not found (%s)", l.err);
        setj(it, "{\"found\": false, \"error\": %s}", js(l.err));
        setn(it, "programs built with -lcudart (zero.pc) will not start; make's examples link it statically "
                 "(--cuda-home DIR searches DIR/lib64)");
        return 0;
    }
    p = dlsym(l.h, "cudaRuntimeGetVersion");
    if (p) memcpy(&get, &p, sizeof p);
    if (get) get(&v);
    version_text(ver, sizeof ver, v);
    version_text(dver, sizeof dver, driver_version);
    setv(it, "%s, CUDA %s", l.path, ver);
    setj(it, "{\"found\": true, \"library\": %s, \"version\": %d, \"found_in_home\": %s}", js(l.path), v,
         l.from_home ? "true" : "false");
    if (l.from_home)
        setn(it, "not on the loader's path: a program linked with -lcudart needs LD_LIBRARY_PATH=%s or the rpath "
                 "zero.pc writes", l.path);
    else if (driver_version && driver_version / 1000 < v / 1000)
        setn(it, "needs a driver for CUDA %d.x, this one runs %s: cudaErrorInsufficientDriver; update the driver",
             v / 1000, dver);
    else if (driver_version && driver_version < v)
        setn(it, "newer than the driver's CUDA %s: runs by minor-version compatibility, but PTX JIT (a GPU newer "
                 "than GPU_ARCH) needs a driver for CUDA %s", dver, ver);
    else setn(it, "what programs linked with -lcudart (zero.pc) load; make's examples carry their own (static)");
    dlclose(l.h);
    return 1;
}

static void report_nccl(const options *o) {
    static const char *const names[] = {"libnccl.so.2", "libnccl.so", NULL};
    char d1[PATH_MAX], d2[PATH_MAX], d3[PATH_MAX];
    const char *dirs[4] = {d1, d2, d3, NULL};
    int (*get)(int *) = NULL;
    int v = 0, major, minor, patch;
    lib l;
    void *p;
    item *it = add("cuda", "nccl");
    snprintf(d1, sizeof d1, "%s%s", o->nccl_home, o->nccl_home[0] ? "/lib" : "");
    snprintf(d2, sizeof d2, "%s%s", o->nccl_home, o->nccl_home[0] ? "/lib64" : "");
    snprintf(d3, sizeof d3, "%s%s", o->cuda_home, o->cuda_home[0] ? "/lib64" : "");
    if (!lib_open(&l, names, dirs, "ncclGetVersion")) {
        setv(it, "not found (%s)", l.err);
        setj(it, "{\"found\": false, \"error\": %s}", js(l.err));
        setn(it, "NCCL not found: zero_cuda.cuh programs built with NCCL will not start; -DZERO_NO_NCCL builds "
                 "them for one GPU (--nccl-home DIR searches DIR/lib)");
        return;
    }
    p = dlsym(l.h, "ncclGetVersion");
    if (p) memcpy(&get, &p, sizeof p);
    if (get) get(&v);
    /* NCCL_VERSION(X, Y, Z): X*1000 + Y*100 + Z up to 2.8, X*10000 + Y*100 + Z after */
    major = v >= 10000 ? v / 10000 : v / 1000;
    minor = v >= 10000 ? v % 10000 / 100 : v % 1000 / 100;
    patch = v % 100;
    setv(it, "%s, NCCL %d.%d.%d", l.path, major, minor, patch);
    setj(it, "{\"found\": true, \"library\": %s, \"version\": %d, \"version_text\": \"%d.%d.%d\", "
             "\"found_in_home\": %s}", js(l.path), v, major, minor, patch, l.from_home ? "true" : "false");
    if (l.from_home)
        setn(it, "not on the loader's path: programs linked with -lnccl need LD_LIBRARY_PATH or an rpath");
    else if (v < 21300)
        setn(it, "zero's collectives run on it; older than 2.13, so NCCL errors come without ncclGetLastError's text");
    else setn(it, "zero_cuda.cuh's collectives (reduce-scatter, all-gather, all-reduce) run on it");
    dlclose(l.h);
}

/* ---- gpu: each GPU against GPU_ARCH, the links between them ---- */

/* Whether code built with nvcc -arch=ZERO_REPORT_GPU_ARCH runs on compute
   capability major.minor: "native", "jit", "no" or "unknown", and why in out.
   -arch=sm_XY embeds SASS for X.Y (runs on X.Z, Z >= Y) and PTX for
   compute_XY (the driver compiles it for any newer GPU); sm_XYa runs on X.Y
   only, sm_XYf on X.Z, Z >= Y; compute_XY is PTX alone. */
static const char *arch_verdict(int major, int minor, char *out, size_t cap) {
    const char *a = ZERO_REPORT_GPU_ARCH, *digits;
    char suffix = 0;
    int ptx_only = 0, num = 0, am, an, n = 0;
    if (!strncmp(a, "sm_", 3)) digits = a + 3;
    else if (!strncmp(a, "compute_", 8)) digits = a + 8, ptx_only = 1;
    else digits = NULL;
    if (digits) {
        while (digits[n] >= '0' && digits[n] <= '9') num = num * 10 + (digits[n++] - '0');
        suffix = digits[n];
        if (n < 2 || (suffix && ((suffix != 'a' && suffix != 'f') || digits[n + 1]))) digits = NULL;
    }
    if (!digits) {
        snprintf(out, cap, "GPU_ARCH=%s: cannot tell which GPUs it covers", a);
        return "unknown";
    }
    am = num / 10, an = num % 10;
    if (suffix == 'a' ? (major == am && minor == an)
                      : !ptx_only && major == am && minor >= an) {
        snprintf(out, cap, "runs zero's %s kernels natively", a);
        return "native";
    }
    if (!suffix && (major > am || (major == am && minor > an))) {
        snprintf(out, cap, "%s kernels run through PTX: the driver compiles them at the first start (cached in "
                           "~/.nv/ComputeCache); make GPU_ARCH=sm_%d%d builds for this GPU", a, major, minor);
        return "jit";
    }
    snprintf(out, cap, "%s kernels do NOT run here (no kernel image for %d.%d): make GPU_ARCH=sm_%d%d", a, major,
             minor, major, minor);
    return "no";
}

static int nvml_open(nvml_api *nv, lib *l) {
    static const char *const names[] = {"libnvidia-ml.so.1", NULL};
    static const char *const syms[] = {"nvmlInit_v2", "nvmlShutdown", "nvmlSystemGetDriverVersion",
                                       "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetTopologyCommonAncestor",
                                       "nvmlDeviceGetP2PStatus", "nvmlDeviceGetNvLinkState"};
    const char *missing = NULL;
    char ver[96] = "";
    item *it = add("gpu", "nvml");
    memset(nv, 0, sizeof *nv);
    if (!lib_open(l, names, NULL, "nvmlInit_v2")) {
        setv(it, "not found (%s)", l->err);
        setj(it, "{\"found\": false, \"error\": %s}", js(l->err));
        setn(it, "no NVLink or PCIe topology below; the driver version comes from libcuda alone");
        return 0;
    }
    if (!lib_syms(l, (void **)nv, syms, (int)(sizeof syms / sizeof syms[0]), &missing) || nv->nvmlInit_v2() != NVML_OK) {
        setv(it, "%s: %s", l->path, missing ? missing : "nvmlInit_v2 failed");
        setj(it, "{\"found\": true, \"library\": %s, \"error\": %s}", js(l->path), js(missing ? missing : "init"));
        setn(it, "no NVLink or PCIe topology below");
        return 0;
    }
    nv->nvmlSystemGetDriverVersion(ver, sizeof ver);
    setv(it, "%s, driver %s", l->path, ver);
    setj(it, "{\"found\": true, \"library\": %s, \"driver_version\": %s}", js(l->path), js(ver));
    setn(it, "the links between GPUs below come from it");
    return 1;
}

typedef struct gpu {
    int dev, major, minor, sms, nvlinks;
    size_t mem;
    char name[128], bus[32];
    void *nvml; /* NULL without NVML */
} gpu;

#define GPUS_MAX 64

static void report_gpu(const gpu *g, int i) {
    char why[320], name[16];
    const char *v = arch_verdict(g->major, g->minor, why, sizeof why);
    item *it;
    snprintf(name, sizeof name, "gpu%d", i);
    it = add("gpu", name);
    setv(it, "%s, %.1f GiB, compute capability %d.%d, %d SMs, PCI %s%s", g->name, g->mem / GIB, g->major, g->minor,
         g->sms, g->bus, g->nvlinks > 0 ? ", NVLink" : "");
    setj(it, "{\"name\": %s, \"memory_bytes\": %zu, \"compute_capability\": \"%d.%d\", \"sms\": %d, \"pci\": %s, "
             "\"nvlinks_active\": %d, \"runs_gpu_arch\": %s}", js(g->name), g->mem, g->major, g->minor, g->sms,
         js(g->bus), g->nvlinks, js(v));
    setn(it, "%s; zero_estimate --gpu-mem %.0fGiB plans for it", why, g->mem / GIB);
}

/* nvidia-smi topo's names for the closest common ancestor of two GPUs */
static const char *topo_name(int level) {
    switch (level) {
    case 0: return "same board";
    case 10: return "PIX (one PCIe switch)";
    case 20: return "PXB (several PCIe switches)";
    case 30: return "PHB (a PCIe host bridge)";
    case 40: return "NODE (host bridges of one NUMA node)";
    case 50: return "SYS (across NUMA nodes)";
    default: return "unknown";
    }
}

static void report_link(const cuda_api *cu, const nvml_api *nv, const gpu *a, const gpu *b, int i, int j) {
    char name[24];
    int peer = 0, level = -1, st = -1, nvlink = 0;
    item *it;
    cu->cuDeviceCanAccessPeer(&peer, a->dev, b->dev);
    if (a->nvml && b->nvml) {
        if (nv->nvmlDeviceGetP2PStatus(a->nvml, b->nvml, NVML_P2P_NVLINK, &st) == NVML_OK) nvlink = st == NVML_P2P_OK;
        if (nv->nvmlDeviceGetTopologyCommonAncestor(a->nvml, b->nvml, &level) != NVML_OK) level = -1;
    }
    snprintf(name, sizeof name, "link%d-%d", i, j);
    it = add("gpu", name);
    setv(it, "peer access %s, %s%s%s", peer ? "yes" : "no",
         nvlink ? "NVLink" : a->nvml ? "no NVLink" : "NVLink unknown (no NVML)", level >= 0 ? ", PCIe path " : "",
         level >= 0 ? topo_name(level) : "");
    setj(it, "{\"peer_access\": %s, \"nvlink\": %s, \"pcie_path\": %s}", peer ? "true" : "false",
         a->nvml ? (nvlink ? "true" : "false") : "null", level >= 0 ? js(topo_name(level)) : "null");
    if (nvlink) setn(it, "NCCL runs zero's collectives between these two over NVLink");
    else if (peer) setn(it, "NCCL copies GPU to GPU over PCIe (peer to peer), no NVLink: collectives are bound by PCIe");
    else setn(it, "no peer access: NCCL stages through host memory, the slowest path for zero's collectives");
}

static void report_gpus(cuda_api *cu, int have_driver) {
    static gpu g[GPUS_MAX];
    nvml_api nv;
    lib nl;
    int count = 0, i, j, have_nvml;
    item *it = add("gpu", "count");
    if (!have_driver || cu->cuDeviceGetCount(&count) != CU_SUCCESS) count = 0;
    setv(it, "%d", count);
    setj(it, "%d", count);
    if (!count) {
        setn(it, "%s", no_gpu);
        return;
    }
    setn(it, "one process per GPU (torchrun, mpirun, srun: docs/getting-started.md); CUDA_VISIBLE_DEVICES=%s",
         getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "unset");
    have_nvml = nvml_open(&nv, &nl);
    if (count > GPUS_MAX) count = GPUS_MAX;
    for (i = 0; i < count; i++) {
        gpu *d = &g[i];
        memset(d, 0, sizeof *d);
        cu->cuDeviceGet(&d->dev, i);
        cu->cuDeviceGetName(d->name, sizeof d->name, d->dev);
        cu->cuDeviceTotalMem_v2(&d->mem, d->dev);
        cu->cuDeviceGetAttribute(&d->major, CU_ATTR_CC_MAJOR, d->dev);
        cu->cuDeviceGetAttribute(&d->minor, CU_ATTR_CC_MINOR, d->dev);
        cu->cuDeviceGetAttribute(&d->sms, CU_ATTR_SM_COUNT, d->dev);
        cu->cuDeviceGetPCIBusId(d->bus, sizeof d->bus, d->dev);
        /* by PCI address, not index: NVML ignores CUDA_VISIBLE_DEVICES and CUDA's order */
        if (have_nvml && nv.nvmlDeviceGetHandleByPciBusId_v2(d->bus, &d->nvml) != NVML_OK) d->nvml = NULL;
        for (j = 0; d->nvml && j < NVML_LINKS_MAX; j++) {
            int on = 0;
            if (nv.nvmlDeviceGetNvLinkState(d->nvml, (unsigned)j, &on) == NVML_OK && on) d->nvlinks++;
        }
        report_gpu(d, i);
    }
    for (i = 0; i < count; i++)
        for (j = i + 1; j < count; j++) report_link(cu, &nv, &g[i], &g[j], i, j);
    if (have_nvml) nv.nvmlShutdown();
}

/* ---- cpu: model, cores, SIMD and the CPU Adam's choice ---- */

/* The value of the first "key : value" line of a /proc-style file whose key
   is one of keys (NULL-ended); "" when none. */
static void proc_value(const char *file, const char *const *keys, char *out, size_t cap) {
    char line[1024];
    FILE *f = fopen(file, "r");
    out[0] = 0;
    while (f && !out[0] && fgets(line, sizeof line, f)) {
        const char *const *k;
        for (k = keys; *k; k++) {
            size_t n = strlen(*k);
            char *v;
            if (strncmp(line, *k, n) != 0 || (line[n] != ' ' && line[n] != '\t' && line[n] != ':')) continue;
            if (!(v = strchr(line, ':'))) continue;
            for (v++; *v == ' ' || *v == '\t'; v++) {}
            v[strcspn(v, "\n")] = 0;
            snprintf(out, cap, "%s", v);
            break;
        }
    }
    if (f) fclose(f);
}

/* Physical cores: distinct (physical id, core id) pairs of /proc/cpuinfo; 0 when it does not say. */
static int physical_cores(void) {
    static long seen[4096];
    char line[256];
    long phys = 0;
    int n = 0, i;
    FILE *f = fopen("/proc/cpuinfo", "r");
    while (f && fgets(line, sizeof line, f)) {
        long core, key;
        if (sscanf(line, "physical id : %ld", &phys) == 1) continue;
        if (sscanf(line, "core id : %ld", &core) != 1) continue;
        key = phys * 65536 + core;
        for (i = 0; i < n && seen[i] != key; i++) {}
        if (i == n && n < 4096) seen[n++] = key;
    }
    if (f) fclose(f);
    return n;
}

static void report_cpu(void) {
    static const char *const model_keys[] = {"model name", "Model", "cpu model", "Processor", NULL};
    zero_cpu_features f = zero_cpu_detect();
    zero_simd_level lv = zero_cpu_simd_level(&f);
    const char *no_simd = getenv("ZERO_NO_SIMD");
    char model[256], simd[160] = "", simd_json[256] = "";
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    int phys = physical_cores(), threads = zero_cpu_threads(0, NULL), k;
    const struct { const char *name; int on; } feat[] = {
        {"sse2", f.sse2}, {"avx", f.avx}, {"avx2", f.avx2}, {"fma", f.fma}, {"f16c", f.f16c},
        {"avx512f", f.avx512f}, {"avx512bw", f.avx512bw}, {"avx512vl", f.avx512vl}, {"avx512_bf16", f.avx512_bf16},
    };
    item *it = add("cpu", "model");
    proc_value("/proc/cpuinfo", model_keys, model, sizeof model);
    setv(it, "%s", model[0] ? model : "unknown");
    setj(it, "%s", js(model));
    it = add("cpu", "cores");
    setv(it, "%ld online, %d this process may use, %d physical", online, f.logical_cores, phys);
    setj(it, "{\"online\": %ld, \"usable\": %d, \"physical\": %d, \"adam_threads\": %d}", online, f.logical_cores,
         phys, threads);
    setn(it, "the CPU Adam (offload_optimizer cpu) runs %d threads per rank: ZERO_CPU_THREADS, else the cores "
             "usable; with several ranks per node set ZERO_CPU_THREADS to cores / ranks", threads);
    for (k = 0; k < (int)(sizeof feat / sizeof feat[0]); k++) {
        size_t n = strlen(simd), m = strlen(simd_json);
        if (feat[k].on) snprintf(simd + n, sizeof simd - n, "%s%s", n ? " " : "", feat[k].name);
        snprintf(simd_json + m, sizeof simd_json - m, "%s\"%s\": %s", k ? ", " : "", feat[k].name,
                 feat[k].on ? "true" : "false");
    }
    it = add("cpu", "simd");
    setv(it, "%s", simd[0] ? simd : "none of x86-64's");
    setj(it, "{%s}", simd_json);
    setn(it, "CPUID and the registers the OS saves (zero_cpu_detect)");
    it = add("cpu", "adam_simd");
    setv(it, "%s", zero_simd_level_name(lv));
    setj(it, "%s", js(zero_simd_level_name(lv)));
#ifdef ZERO__CPU_SIMD_X86 /* zero_offload.h's own test for compiling its AVX2 and AVX-512 paths */
    if (no_simd && no_simd[0] && strcmp(no_simd, "0") != 0)
        setn(it, "ZERO_NO_SIMD=%s: the CPU Adam runs its scalar path on this CPU", no_simd);
    else
        setn(it, "the CPU Adam's path here: zero_offload.h compiles scalar, avx2 (+fma, f16c) and avx512 (f, bw, vl) "
                 "paths without -march and picks the best this CPU and OS allow at run time");
#else
    (void)no_simd;
    setn(it, "this build has the CPU Adam's scalar path only (its SIMD paths need x86-64 with GCC or Clang)");
#endif
}

/* ---- memory: host memory, the lock limit, huge pages ---- */

static long long meminfo_kib(const char *key) {
    const char *const keys[] = {key, NULL};
    char v[128];
    proc_value("/proc/meminfo", keys, v, sizeof v);
    return v[0] ? atoll(v) : -1;
}

/* RDMA devices (InfiniBand, RoCE, EFA): the entries of /sys/class/infiniband */
static int infiniband_devices(void) {
    DIR *d = opendir("/sys/class/infiniband");
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

static void report_memory(void) {
    long long total = meminfo_kib("MemTotal"), avail = meminfo_kib("MemAvailable");
    long long huge = meminfo_kib("HugePages_Total"), huge_kib = meminfo_kib("Hugepagesize");
    char thp[128] = "";
    struct rlimit rl;
    int ib = infiniband_devices(), unlimited;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    item *it = add("memory", "host");
    if (f) {
        if (fgets(thp, sizeof thp, f)) thp[strcspn(thp, "\n")] = 0;
        fclose(f);
    }
    setv(it, "%.1f GiB total, %.1f GiB available", total * 1024.0 / GIB, avail * 1024.0 / GIB);
    setj(it, "{\"total_bytes\": %lld, \"available_bytes\": %lld}", total * 1024, avail * 1024);
    setn(it, "offloaded optimizer state and parameters live here: zero_estimate --cpu-mem %.0fGiB plans with it "
             "(every rank of the node shares it)", avail * 1024.0 / GIB);
    it = add("memory", "memlock");
    if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0) rl.rlim_cur = 0;
    unlimited = rl.rlim_cur == RLIM_INFINITY;
    if (unlimited) setv(it, "unlimited (ulimit -l)");
    else setv(it, "%.0f KiB (ulimit -l)", (double)rl.rlim_cur / 1024.0);
    setj(it, "{\"unlimited\": %s, \"bytes\": %.0f, \"infiniband_devices\": %d}", unlimited ? "true" : "false",
         unlimited ? -1.0 : (double)rl.rlim_cur, ib);
    setn(it, "zero pins host memory with cudaMallocHost (pin_memory: true) and never calls mlock, so this limit does not "
             "cap it%s", unlimited ? "" : ib ? "; but NCCL over InfiniBand registers buffers with the NIC, which counts: "
                                               "set ulimit -l unlimited for multi-node runs"
                                             : " (NCCL over InfiniBand would want it unlimited; no IB device here)");
    it = add("memory", "huge_pages");
    setv(it, "%lld reserved of %lld KiB; transparent: %s", huge < 0 ? 0 : huge, huge_kib < 0 ? 0 : huge_kib,
         thp[0] ? thp : "unknown");
    setj(it, "{\"reserved\": %lld, \"page_kib\": %lld, \"transparent\": %s}", huge < 0 ? 0 : huge,
         huge_kib < 0 ? 0 : huge_kib, js(thp));
    setn(it, "zero asks for no huge pages (malloc, cudaMallocHost): for reference only");
}

/* ---- nvme: the file system at --nvme PATH, a timed write and read ---- */

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *fs_name(long type) {
    switch ((unsigned long)type) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x2FC12FC1: return "zfs";
    case 0x01021994: return "tmpfs";
    case 0x794C7630: return "overlay";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    case 0x0BD00BD0: return "lustre";
    case 0x47504653: return "gpfs";
    default: return "other";
    }
}

/* PATH must be a directory (or a link to one) that this user may write into;
   1 with the reason on stderr otherwise. target: where a link leads. */
static int nvme_check(const char *path, char *target, size_t cap) {
    struct stat st;
    char real[PATH_MAX];
    target[0] = 0;
    if (lstat(path, &st) != 0)
        return tool_fail("zero_report", "--nvme", "%s: %s", path,
                         errno == ENOENT ? "does not exist" : strerror(errno));
    if (S_ISLNK(st.st_mode)) {
        ssize_t n = readlink(path, target, cap - 1);
        target[n > 0 ? n : 0] = 0;
        if (stat(path, &st) != 0)
            return tool_fail("zero_report", "--nvme", "%s: a symbolic link to %s, which %s", path, target,
                             errno == ENOENT ? "does not exist" : strerror(errno));
        if (realpath(path, real)) snprintf(target, cap, "%s", real);
    }
    if (!S_ISDIR(st.st_mode))
        return tool_fail("zero_report", "--nvme", "%s: not a directory (%s)", path,
                         S_ISREG(st.st_mode) ? "a regular file" : "a device, FIFO or socket");
    if (access(path, W_OK | X_OK) != 0)
        return tool_fail("zero_report", "--nvme", "%s: not writable by this user (%s)", path, strerror(errno));
    return 0;
}

/* The test file, O_DIRECT where the file system takes it (at open and at the
   first write, as zero's tile store finds out), removed from the directory at
   once so that nothing is left behind however the run ends. -1 with errno. */
static int nvme_open(const char *dir, void *block, int *direct) {
    char tmp[PATH_MAX];
    int pass;
    snprintf(tmp, sizeof tmp, "%s/.zero_report.%ld.tmp", dir, (long)getpid());
    for (pass = 0; pass < 2; pass++) {
        int fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | (pass == 0 ? O_DIRECT : 0), 0600);
        if (fd < 0 && pass == 0 && errno == EINVAL) continue;
        if (fd < 0) return -1;
        unlink(tmp);
        *direct = pass == 0;
        if (pass == 0 && pwrite(fd, block, 4096, 0) != 4096) {
            close(fd);
            if (errno == EINVAL) continue;
            return -1;
        }
        return fd;
    }
    errno = EINVAL;
    return -1;
}

/* bytes written then read back in 4 MiB calls; the seconds of each (the write
   with fdatasync). 0, or 1 with the reason on stderr. */
static int nvme_time(const char *dir, size_t bytes, int *direct, double *wsec, double *rsec) {
    const size_t blk = 4u << 20;
    unsigned char *buf = NULL;
    size_t off, i;
    double t;
    int fd, rc = 0;
    if (posix_memalign((void **)&buf, 4096, blk) != 0)
        return tool_fail("zero_report", "--nvme", "%s: no memory for a 4 MiB buffer", dir);
    for (i = 0; i < blk; i++) buf[i] = (unsigned char)((i * 2654435761u) >> 13); /* not all zeros: no shortcut */
    if ((fd = nvme_open(dir, buf, direct)) < 0) {
        rc = tool_fail("zero_report", "--nvme", "%s: cannot create a file there (%s)", dir, strerror(errno));
        free(buf);
        return rc;
    }
    t = now_s();
    for (off = 0; off < bytes && !rc; off += blk)
        if (pwrite(fd, buf, blk, (off_t)off) != (ssize_t)blk)
            rc = tool_fail("zero_report", "--nvme", "%s: write at %zu MiB: %s", dir, off >> 20, strerror(errno));
    if (!rc && fdatasync(fd) != 0)
        rc = tool_fail("zero_report", "--nvme", "%s: fdatasync: %s", dir, strerror(errno));
    *wsec = now_s() - t;
    if (!*direct) posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); /* read from the device, not the page cache */
    t = now_s();
    for (off = 0; off < bytes && !rc; off += blk)
        if (pread(fd, buf, blk, (off_t)off) != (ssize_t)blk)
            rc = tool_fail("zero_report", "--nvme", "%s: read at %zu MiB: %s", dir, off >> 20, strerror(errno));
    *rsec = now_s() - t;
    close(fd);
    free(buf);
    return rc;
}

static int report_nvme(const options *o) {
    char target[PATH_MAX];
    struct statvfs vs;
    struct statfs fs;
    size_t bytes = (size_t)((o->nvme_bytes + (4 << 20) - 1) / (4 << 20)) * (4u << 20);
    double avail, total, wsec = 0, rsec = 0;
    int direct = 0;
    item *it;
    if (nvme_check(o->nvme, target, sizeof target)) return 1;
    if (statvfs(o->nvme, &vs) != 0 || statfs(o->nvme, &fs) != 0)
        return tool_fail("zero_report", "--nvme", "%s: statvfs: %s", o->nvme, strerror(errno));
    avail = (double)vs.f_bavail * (double)vs.f_frsize;
    total = (double)vs.f_blocks * (double)vs.f_frsize;
    it = add("nvme", "path");
    setv(it, "%s%s%s (%s)", o->nvme, target[0] ? " -> " : "", target, fs_name((long)fs.f_type));
    setj(it, "{\"path\": %s, \"resolved\": %s, \"filesystem\": %s}", js(o->nvme), target[0] ? js(target) : "null",
         js(fs_name((long)fs.f_type)));
    it = add("nvme", "free");
    setv(it, "%.1f GiB of %.1f GiB", avail / GIB, total / GIB);
    setj(it, "{\"free_bytes\": %.0f, \"total_bytes\": %.0f}", avail, total);
    setn(it, "nvme_path for offload_optimizer / offload_param device nvme: zero_estimate --nvme %.0fGiB plans with it",
         avail / GIB);
    if ((double)bytes > avail)
        return tool_fail("zero_report", "--nvme", "%s: %.1f MiB free, less than the %.0f MiB test (--nvme-size)",
                         o->nvme, avail / MIB, bytes / MIB);
    if (nvme_time(o->nvme, bytes, &direct, &wsec, &rsec)) return 1;
    it = add("nvme", "write");
    setv(it, "%.2f GB/s (%.0f MiB in %.3f s, %s, with fdatasync)", bytes / wsec / 1e9, bytes / MIB, wsec,
         direct ? "O_DIRECT" : "buffered");
    setj(it, "{\"bytes\": %zu, \"seconds\": %.6f, \"bytes_per_s\": %.0f, \"direct\": %s}", bytes, wsec, bytes / wsec,
         direct ? "true" : "false");
    setn(it, direct ? "zero's tile store (zero_nvme_open) opens its files here with O_DIRECT, as this test did"
                    : "the file system refuses O_DIRECT: zero's tile store falls back to buffered I/O here, so the "
                      "page cache holds tiles too and takes host memory");
    it = add("nvme", "read");
    setv(it, "%.2f GB/s (%.0f MiB in %.3f s, %s)", bytes / rsec / 1e9, bytes / MIB, rsec,
         direct ? "O_DIRECT" : "buffered, page cache dropped first");
    setj(it, "{\"bytes\": %zu, \"seconds\": %.6f, \"bytes_per_s\": %.0f, \"direct\": %s}", bytes, rsec, bytes / rsec,
         direct ? "true" : "false");
    setn(it, "one stream of 4 MiB calls; the tile store reads ahead on its I/O thread (aio.block_size, queue_depth)");
    return 0;
}

/* ---- main ---- */

static const char usage[] =
    "usage: zero_report [--json] [--nvme PATH [--nvme-size SIZE]] [--cuda-home DIR] [--nccl-home DIR]\n"
    "       zero_report --version\n"
    "       zero_report --help\n";

static const char help[] =
    "\n"
    "What zero finds on this machine and what it does with it: the GPUs against the\n"
    "build's GPU_ARCH and the links between them, the driver, the CUDA runtime, NCCL,\n"
    "the CPU's SIMD and the CPU Adam's choice, host memory and the lock limit.\n"
    "Works without a GPU or driver: the libraries are opened at run time.\n"
    "\n"
    "  --json            one JSON object: {\"zero\": {...}, \"cuda\": {...}, \"gpu\": {...}, \"cpu\":\n"
    "                    {...}, \"memory\": {...}, \"nvme\": {...}}, each section's items plus\n"
    "                    \"notes\": what zero does with them\n"
    "  --nvme PATH       also the file system at PATH (offload's nvme_path): free space, and\n"
    "                    a file of --nvme-size written (with fdatasync) and read back, timed,\n"
    "                    with O_DIRECT where the file system allows it (else buffered, said);\n"
    "                    the file is removed from PATH as soon as it is created\n"
    "  --nvme-size SIZE  the test file (default 256MiB; 1MiB to 1TB, rounded up to 4 MiB)\n"
    "  --cuda-home DIR   where to look for libcudart (DIR/lib64, DIR/lib) when the loader's\n"
    "                    search does not find it; default $CUDA_HOME, else make's CUDA_HOME\n"
    "  --nccl-home DIR   the same for libnccl (DIR/lib, DIR/lib64); default $NCCL_HOME,\n"
    "                    else make's NCCL_HOME\n"
    "  --version         zero's version (zero.h's), and exit\n"
    "\n"
    "Environment read: CUDA_VISIBLE_DEVICES, ZERO_CPU_THREADS and ZERO_NO_SIMD (as zero\n"
    "reads them), CUDA_HOME, NCCL_HOME, LD_LIBRARY_PATH (the loader's).\n"
    "\n"
    "Exit status: 0 it ran, with or without a GPU; 1 --nvme PATH failed (missing, not a\n"
    "directory, not writable, too small, an I/O error: stderr names PATH and why; the\n"
    "rest is still printed); 2 usage: a bad flag or value (one line, then the usage).\n";

/* The flags into *o; 0, else a usage error's status (2). -1: --version printed. */
static int parse(int argc, char **argv, options *o) {
    int i;
    for (i = 1; i < argc; i++) {
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(f, "--version")) {
            tool_version("zero_report");
            return -1;
        }
        if (!strcmp(f, "--nvme-size")) {
            if (tool_size("zero_report", f, v, MIB, 1e12, &o->nvme_bytes)) return tool_usage_error(usage);
            o->nvme_size_given = 1;
        } else if (!strcmp(f, "--nvme") || !strcmp(f, "--cuda-home") || !strcmp(f, "--nccl-home")) {
            if (!v || !*v)
                return tool_usage_fail("zero_report", f, usage, "%s value (a directory)", v ? "empty" : "missing");
            if (!strcmp(f, "--nvme")) o->nvme = v;
            else if (!strcmp(f, "--cuda-home")) o->cuda_home = v;
            else o->nccl_home = v;
        } else {
            static const char *const flags[] = {"--json", "--version", "--nvme", "--nvme-size", "--cuda-home", "--nccl-home",
                                                "--help", NULL};
            char hint[64];
            return tool_usage_fail("zero_report", NULL, usage, "unknown argument '%s'%s", f,
                                   tool_did_you_mean(f, flags, hint, sizeof hint));
        }
        i++;
    }
    return 0;
}

int main(int argc, char **argv) {
    options o;
    cuda_api cu;
    lib driver;
    int i, rc, have_driver, driver_version = 0;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            fputs(help, stdout);
            return 0;
        }
    memset(&o, 0, sizeof o);
    o.nvme_bytes = 256 * MIB;
    o.cuda_home = getenv("CUDA_HOME") && getenv("CUDA_HOME")[0] ? getenv("CUDA_HOME") : ZERO_REPORT_CUDA_HOME;
    o.nccl_home = getenv("NCCL_HOME") && getenv("NCCL_HOME")[0] ? getenv("NCCL_HOME") : ZERO_REPORT_NCCL_HOME;
    if ((rc = parse(argc, argv, &o)) != 0) return rc < 0 ? 0 : rc;
    if (o.nvme_size_given && !o.nvme)
        return tool_usage_fail("zero_report", "--nvme-size", usage, "only with --nvme PATH");
    report_zero(&o);
    have_driver = report_driver(&cu, &driver, &driver_version);
    report_runtime(&o, driver_version);
    report_nccl(&o);
    report_gpus(&cu, have_driver);
    report_cpu();
    report_memory();
    rc = o.nvme ? report_nvme(&o) : 0;
    if (o.json) print_json();
    else print_text();
    return rc;
}

/* tests/tools.sh compiles this file with -DZERO_REPORT_CHECK_HEADERS and the
   toolkit's include directory: the values declared at the top against the
   headers they come from, where those are installed. */
#ifdef ZERO_REPORT_CHECK_HEADERS
#  include <cuda.h>
_Static_assert(CU_SUCCESS == CUDA_SUCCESS, "cuda.h");
_Static_assert(CU_ERROR_STUB_LIBRARY == CUDA_ERROR_STUB_LIBRARY, "cuda.h");
_Static_assert(CU_ERROR_NO_DEVICE == CUDA_ERROR_NO_DEVICE, "cuda.h");
_Static_assert(CU_ATTR_CC_MAJOR == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cuda.h");
_Static_assert(CU_ATTR_CC_MINOR == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cuda.h");
_Static_assert(CU_ATTR_SM_COUNT == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "cuda.h");
#  if defined(__has_include)
#    if __has_include(<nccl.h>)
#      include <nccl.h>
_Static_assert(NCCL_VERSION(2, 13, 0) == 21300 && NCCL_VERSION(2, 8, 4) == 2804, "nccl.h: report_nccl's decoding");
#    endif
#    if __has_include(<nvml.h>)
#      include <nvml.h>
_Static_assert(NVML_OK == NVML_SUCCESS, "nvml.h");
_Static_assert(NVML_P2P_NVLINK == NVML_P2P_CAPS_INDEX_NVLINK, "nvml.h");
_Static_assert(NVML_P2P_OK == NVML_P2P_STATUS_OK, "nvml.h");
_Static_assert(NVML_LINKS_MAX == NVML_NVLINK_MAX_LINKS, "nvml.h");
_Static_assert(NVML_TOPOLOGY_SINGLE == 10 && NVML_TOPOLOGY_SYSTEM == 50, "nvml.h: topo_name's levels");
#    endif
#  endif
#endif
