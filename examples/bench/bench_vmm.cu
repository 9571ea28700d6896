// bench_vmm.cu - what the driver's virtual memory management costs per call on
// this GPU, the figures behind the CUDA backend's vm_back / vm_unback design
// (docs/PERF.md 5i): 1024 granules (2 GiB at 2 MiB) mapped as handles of 1, 8
// and 32 granules, cuMemMap per handle, cuMemSetAccess once over the range or
// once per handle, cuMemUnmap per handle (three rounds each); then an unmap and
// a map of an idle granule while a stream is busy. Wall-clock per call (host).
//   make build/bench/bench_vmm && build/bench/bench_vmm     (GPU machine)
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <time.h>
#include <vector>
static double now() { timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { printf("%s -> %d line %d\n", #x, (int)r_, __LINE__); return 1; } } while (0)
__global__ void touch(char *p, size_t n) { size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; for (; i < n; i += (size_t)gridDim.x * blockDim.x) p[i] = 1; }
int main() {
    cudaFree(0);
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED; prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE; prop.location.id = 0;
    size_t g; CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    const int N = 1024; size_t total = (size_t)N * g;
    CUdeviceptr base; CK(cuMemAddressReserve(&base, total, 0, 0, 0));
    CUmemAccessDesc d = {}; d.location = prop.location; d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (int k : {1, 8, 32}) {
        int nh = N / k; std::vector<CUmemGenericAllocationHandle> h(nh);
        for (int i = 0; i < nh; i++) CK(cuMemCreate(&h[i], k * g, &prop, 0));
        for (int rep = 0; rep < 3; rep++) {
            double t0 = now();
            for (int i = 0; i < nh; i++) CK(cuMemMap(base + (size_t)i * k * g, k * g, 0, h[i], 0));
            double t1 = now();
            CK(cuMemSetAccess(base, total, &d, 1));
            double t2 = now();
            touch<<<1024, 256>>>((char *)base, total); cudaDeviceSynchronize();
            double t3 = now();
            for (int i = 0; i < nh; i++) CK(cuMemUnmap(base + (size_t)i * k * g, k * g));
            double t4 = now();
            // per-handle setAccess variant
            for (int i = 0; i < nh; i++) { CK(cuMemMap(base + (size_t)i * k * g, k * g, 0, h[i], 0)); CK(cuMemSetAccess(base + (size_t)i * k * g, k * g, &d, 1)); }
            double t5 = now();
            for (int i = 0; i < nh; i++) CK(cuMemUnmap(base + (size_t)i * k * g, k * g));
            double t6 = now();
            printf("granule %zu KiB, handles of %d granules x %d: map %.1f us/handle, one setAccess over %zu MiB %.1f us, "
                   "unmap %.1f us/handle; map+setAccess each %.1f us/handle, unmap %.1f us/handle\n",
                   g >> 10, k, nh, (t1 - t0) / nh * 1e6, total >> 20, (t2 - t1) * 1e6, (t4 - t3) / nh * 1e6,
                   (t5 - t4) / nh * 1e6, (t6 - t5) / nh * 1e6);
        }
        for (int i = 0; i < nh; i++) CK(cuMemRelease(h[i]));
    }
    // does cuMemUnmap wait for the GPU? a long kernel on another range, then unmap
    {
        CUmemGenericAllocationHandle h1, h2; CK(cuMemCreate(&h1, 64 * g, &prop, 0)); CK(cuMemCreate(&h2, g, &prop, 0));
        CK(cuMemMap(base, 64 * g, 0, h1, 0)); CK(cuMemSetAccess(base, 64 * g, &d, 1));
        CK(cuMemMap(base + 100 * g, g, 0, h2, 0)); CK(cuMemSetAccess(base + 100 * g, g, &d, 1));
        cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
        for (int i = 0; i < 200; i++) touch<<<132, 256, 0, s>>>((char *)base, 64 * g);
        double t0 = now();
        cudaEvent_t ev; cudaEventCreate(&ev); cudaEventRecord(ev, s);
        double t1 = now();
        CK(cuMemUnmap(base + 100 * g, g));
        double t2 = now();
        CK(cuMemMap(base + 100 * g, g, 0, h2, 0)); CK(cuMemSetAccess(base + 100 * g, g, &d, 1));
        double t3 = now();
        cudaEventSynchronize(ev);
        double t4 = now();
        printf("unmap of an idle granule while a stream runs: unmap %.1f us, map+access %.1f us, the stream's rest %.1f ms (queue %.1f us)\n",
               (t2 - t1) * 1e6, (t3 - t2) * 1e6, (t4 - t3) * 1e3, (t1 - t0) * 1e6);
    }
    return 0;
}
