/* tests/zero_report_fake_driver.c - a stand-in for the NVIDIA driver
   (libcuda.so.1) and NVML (libnvidia-ml.so.1), for tests/tools.sh to run
   zero_report's GPU sections on a machine without a GPU. tools.sh builds it
   as both libraries and puts their directory on LD_LIBRARY_PATH.

   Three GPUs: 0 compute capability 9.0, 1 at 10.0, 2 at 8.0. 0 and 1 are
   joined by NVLink, 0 and 2 share a PCIe switch with peer access, 1 and 2
   have no peer access and meet across NUMA nodes. FAKE_CUINIT=N makes cuInit
   return N (100: no device). Only what zero_report calls is here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct { const char *name; int major, minor; size_t mem; const char *bus; } gpus[3] = {
    {"Fake H200", 9, 0, (size_t)143771 << 20, "0000:19:00.0"},
    {"Fake B200", 10, 0, (size_t)183359 << 20, "0000:3B:00.0"},
    {"Fake A100", 8, 0, (size_t)81920 << 20, "0000:4C:00.0"},
};

int cuInit(unsigned flags) {
    const char *r = getenv("FAKE_CUINIT");
    (void)flags;
    return r ? atoi(r) : 0;
}
int cuDriverGetVersion(int *v) { *v = 12080; return 0; }
int cuDeviceGetCount(int *n) { *n = 3; return 0; }
int cuDeviceGet(int *d, int i) { *d = i; return i >= 0 && i < 3 ? 0 : 101; }
int cuDeviceGetName(char *s, int len, int d) { snprintf(s, (size_t)len, "%s", gpus[d].name); return 0; }
int cuDeviceTotalMem_v2(size_t *b, int d) { *b = gpus[d].mem; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
    *v = attr == 75 ? gpus[d].major : attr == 76 ? gpus[d].minor : attr == 16 ? 132 : 0;
    return 0;
}
int cuDeviceCanAccessPeer(int *p, int a, int b) { *p = !((a == 1 && b == 2) || (a == 2 && b == 1)); return 0; }
int cuDeviceGetPCIBusId(char *s, int len, int d) { snprintf(s, (size_t)len, "%s", gpus[d].bus); return 0; }
int cuGetErrorName(int r, const char **s) { *s = r == 100 ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN"; return 0; }

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlSystemGetDriverVersion(char *s, unsigned len) { snprintf(s, len, "570.00.fake"); return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **h) {
    int i;
    for (i = 0; i < 3; i++)
        if (!strcmp(bus, gpus[i].bus)) {
            *h = (void *)&gpus[i];
            return 0;
        }
    return 6; /* NVML_ERROR_NOT_FOUND */
}
static int idx(void *h) { return (int)((const char *)h - (const char *)gpus) / (int)sizeof gpus[0]; }
int nvmlDeviceGetTopologyCommonAncestor(void *a, void *b, int *level) {
    int i = idx(a) + idx(b);
    *level = i == 1 ? 0 : i == 2 ? 10 : 50; /* 0-1 one board, 0-2 one switch, 1-2 across NUMA nodes */
    return 0;
}
int nvmlDeviceGetP2PStatus(void *a, void *b, int cap, int *st) {
    *st = cap == 2 && idx(a) + idx(b) == 1 ? 0 : 5;
    return 0;
}
int nvmlDeviceGetNvLinkState(void *h, unsigned link, int *on) {
    *on = idx(h) < 2 && link < 18;
    return idx(h) < 2 ? 0 : 3; /* NVML_ERROR_NOT_SUPPORTED */
}
