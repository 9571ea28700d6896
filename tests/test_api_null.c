/* test_api_null.c - every public function of zero.h and zero_offload.h
   called with each of its pointer arguments NULL (the others valid): none
   crashes; one that returns a zero_result returns ZERO_ERR_INVALID_ARG with
   item ZERO_MSG_NULL_ARG, and where it has a message (its zero_error, or the
   engine's error) the message reads "<function>: <argument> is NULL"; a
   getter returns its documented "none" value. The CUDA header's functions
   are walked the same way in tests/test_cuda_boot.cu.

   Run alone: make test T=test_api_null */
#ifndef ZERO_TEST_SHARED_IMPL /* (tests/run.sh links tests/zero_impl.c's build instead) */
#define ZERO_IMPLEMENTATION
#endif
#include "zero.h"
#include "zero_offload.h"
#include "zero_test.h"

#include <stdint.h>

static zero_error err;

/* r must be a NULL-argument error whose message names fn and arg */
static void named(zero_result r, const zero_error *e, const char *fn, const char *arg) {
    char want[160];
    snprintf(want, sizeof want, "%s: %s is NULL", fn, arg);
    CHECKF(r == ZERO_ERR_INVALID_ARG, "%s(%s = NULL) returned %s", fn, arg, zero_result_string(r));
    CHECKF(e->item == ZERO_MSG_NULL_ARG, "%s(%s = NULL): item %s", fn, arg, zero_msg_name(e->item));
    CHECKF(strstr(e->msg, want) != NULL, "%s(%s = NULL): message \"%s\" lacks \"%s\"", fn, arg, e->msg, want);
}
#define NAMED(call, fn, arg) \
    do {                     \
        memset(&err, 0, sizeof err); \
        named((call), &err, fn, arg); \
    } while (0)
/* an engine function: the message is the engine's error */
#define ENAMED(e, call, fn, arg) \
    do {                         \
        zero_result r_ = (call); \
        named(r_, zero_engine_error(e), fn, arg); \
    } while (0)

/* ---- configuration, schedules, estimator, layout, host ranks ---- */

static void test_pure(void) {
    zero_config c = zero_config_default();
    zero_layout *l = NULL;
    zero_tensor ts[2];
    zero_layout_args la;
    zero_location loc;
    zero_estimate_args ea;
    zero_memory_estimate me;
    zero_time_model tm;
    zero_time_estimate te;
    zero_loss_scaler s;
    double b1 = -1, b2 = -1, mp = 0;
    char buf[64];
    c.log.level = ZERO_LOG_ERROR;
    NAMED(zero_config_parse_json(NULL, "{}", 2, &err), "zero_config_parse_json", "cfg");
    NAMED(zero_config_parse_json(&c, NULL, 2, &err), "zero_config_parse_json", "text");
    NAMED(zero_config_load(NULL, "x.json", &err), "zero_config_load", "cfg");
    NAMED(zero_config_load(&c, NULL, &err), "zero_config_load", "path");
    NAMED(zero_config_resolve(NULL, 1, &err), "zero_config_resolve", "cfg");
    CHECK(zero_config_to_json(NULL, buf, sizeof buf) == 0 && buf[0] == 0);
    CHECK(zero_config_to_json(&c, NULL, 0) > 100); /* the length it needs */
    CHECK(zero_config_key(-1) == NULL && zero_config_key(zero_config_key_count()) == NULL);
    zero_loss_scaler_init(NULL, &c);
    zero_loss_scaler_init(&s, NULL); /* DeepSpeed's defaults */
    CHECK(isnan(zero_loss_scaler_scale(&s))); /* no config: an invalid scaler */
    CHECK(zero_loss_scaler_update(NULL, 0) == ZERO_ERR_INVALID_ARG);
    CHECK(isnan(zero_loss_scaler_scale(NULL))); /* "none" is NaN for the number getters */
    CHECK(isnan(zero_lr_at(NULL, 3)));
    zero_betas_at(NULL, 3, &b1, &b2);
    CHECK(isnan(b1) && isnan(b2));
    zero_betas_at(&c, 3, NULL, NULL);
    memset(&ea, 0, sizeof ea);
    ea.params = 1e9;
    ea.gpus_per_node = 8, ea.nodes = 1;
    ea.stage = 3;
    NAMED(zero_estimate_memory(NULL, &me, &err), "zero_estimate_memory", "a");
    NAMED(zero_estimate_memory(&ea, NULL, &err), "zero_estimate_memory", "out");
    NAMED(zero_estimate_max_params(NULL, 80e9, 1e12, 0, &mp, &err), "zero_estimate_max_params", "a");
    NAMED(zero_estimate_max_params(&ea, 80e9, 1e12, 0, NULL, &err), "zero_estimate_max_params", "max_params");
    memset(&tm, 0, sizeof tm);
    NAMED(zero_estimate_time(NULL, &te, &err), "zero_estimate_time", "m");
    NAMED(zero_estimate_time(&tm, NULL, &err), "zero_estimate_time", "out");
    memset(ts, 0, sizeof ts);
    ts[0].name = "a", ts[0].numel = 10;
    ts[1].name = "b", ts[1].numel = 20;
    memset(&la, 0, sizeof la);
    la.world = 2, la.bucket_elems = 16;
    NAMED(zero_layout_create(NULL, ts, 2, &la, &err), "zero_layout_create", "out");
    NAMED(zero_layout_create(&l, NULL, 2, &la, &err), "zero_layout_create", "tensors");
    NAMED(zero_layout_create(&l, ts, 2, NULL, &err), "zero_layout_create", "args");
    CHECK(zero_layout_create(&l, ts, 2, &la, &err) == ZERO_OK);
    NAMED(zero_layout_locate(NULL, 0, 0, &loc, &err), "zero_layout_locate", "l");
    NAMED(zero_layout_locate(l, 0, 0, NULL, &err), "zero_layout_locate", "out");
    CHECK(zero_layout_find(l, NULL) == -1 && zero_layout_find(NULL, "a") == -1);
    CHECK(zero_layout_unit_count(NULL) == 0 && zero_layout_tensor_count(NULL) == 0 && zero_layout_world(NULL) == 0);
    CHECK(zero_layout_unit(NULL, 0) == NULL && zero_layout_tensor(NULL, 0) == NULL && zero_layout_tensor_name(NULL, 0) == NULL);
    CHECK(zero_layout_chunk_real(NULL, 0, 0) == 0 && zero_layout_padded_numel(NULL) == 0 && zero_layout_shard_numel(NULL, 0) == 0);
    zero_layout_destroy(l);
    zero_layout_destroy(NULL);
    NAMED(zero_host_run(2, NULL, NULL, &err), "zero_host_run", "fn");
    CHECK(zero_host_allocated_bytes(NULL, ZERO_MEM_DEVICE) == 0);
    CHECK(zero_memory_stats_format(NULL, buf, sizeof buf) == 0 && buf[0] == 0);
}

/* ---- the engine ---- */

static const int64_t SIZES[2] = {40, 24};

static zero_result rank_fn(const zero_backend *b, void *arg) {
    zero_config c = zero_config_default();
    zero_tensor ts[2];
    zero_engine *e = NULL;
    zero_error err;
    zero_step_info in;
    zero_memory_stats ms;
    double v = 1, n = 0;
    float out[4];
    (void)arg;
    memset(ts, 0, sizeof ts);
    ts[0].name = "w", ts[0].numel = SIZES[0];
    ts[1].name = "b", ts[1].numel = SIZES[1];
    c.train_micro_batch_size_per_gpu = 1;
    c.zero_optimization.stage = 2;
    c.log.level = ZERO_LOG_ERROR;
    CHECK(zero_config_resolve(&c, b->world, &err) == ZERO_OK);
    NAMED(zero_engine_create(NULL, &c, ts, 2, b, &err), "zero_engine_create", "out");
    NAMED(zero_engine_create(&e, NULL, ts, 2, b, &err), "zero_engine_create", "cfg");
    NAMED(zero_engine_create(&e, &c, NULL, 2, b, &err), "zero_engine_create", "tensors");
    NAMED(zero_engine_create(&e, &c, ts, 2, NULL, &err), "zero_engine_create", "backend");
    CHECK(e == NULL);
    /* e = NULL everywhere: the result (and the message, where there is an err) */
    CHECK(zero_param(NULL, 0) == NULL && zero_grad(NULL, 0) == NULL);
    CHECK(zero_grad_ready(NULL, 0) == ZERO_ERR_INVALID_ARG && zero_fetch(NULL, 0) == ZERO_ERR_INVALID_ARG &&
          zero_release(NULL, 0) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_fetch_group(NULL, 0) == ZERO_ERR_INVALID_ARG && zero_release_group(NULL, 0) == ZERO_ERR_INVALID_ARG &&
          zero_grad_ready_group(NULL, 0) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_gather_params(NULL) == ZERO_ERR_INVALID_ARG && zero_release_params(NULL) == ZERO_ERR_INVALID_ARG);
    { /* zero_alloc: its NULL arguments named; zero_free(NULL) does nothing */
        void *p = (void *)&v;
        NAMED(zero_alloc(NULL, 64, &p, &err), "zero_alloc", "backend");
        CHECK(p == NULL);
        NAMED(zero_alloc(b, 64, NULL, &err), "zero_alloc", "out");
        zero_free(b, NULL);
    }
    CHECK(isnan(zero_loss_scale(NULL)));
    CHECK(zero_step(NULL, &in) == ZERO_ERR_INVALID_ARG && zero_skip_step(NULL, &in) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_set_lr(NULL, 1e-3) == ZERO_ERR_INVALID_ARG && zero_set_betas(NULL, 0.9, 0.99) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_set_train_batch_size(NULL, 8) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_grad_norm(NULL, &n) == ZERO_ERR_INVALID_ARG && zero_flush(NULL) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_all_reduce_scalars(NULL, &v, 1, ZERO_OP_SUM) == ZERO_ERR_INVALID_ARG);
    {
        zero_bandwidths bw = {1, 1, 0, 1, 0, 0};
        zero_floor fl;
        memset(&in, 0, sizeof in);
        fl.floor_ms = 7;
        CHECK(zero_floor_of(NULL, &in, &bw, &fl) == ZERO_ERR_INVALID_ARG && fl.floor_ms == 0);
    }
    NAMED(zero_save(NULL, "/tmp/x", &err), "zero_save", "e");
    NAMED(zero_load(NULL, "/tmp/x", &err), "zero_load", "e");
    NAMED(zero_export_safetensors(NULL, "/tmp/x.safetensors", ZERO_DTYPE_FP32, &err), "zero_export_safetensors", "e");
    CHECK(zero_memory_report(NULL, &ms) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_read_state(NULL, 0, ZERO_STATE_MASTER, 0, 4, out) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_engine_layout(NULL) == NULL && zero_global_steps(NULL) == -1);
    CHECK(zero_client_put(NULL, "k", &v, sizeof v) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_client_get(NULL, "k", &v, sizeof v, NULL) == ZERO_ERR_INVALID_ARG);
    CHECK(zero_client_count(NULL) == 0 && zero_client_key(NULL, 0, NULL) == NULL);
    CHECK(zero_engine_error(NULL) != NULL && zero_engine_error(NULL)->item == ZERO_MSG_NULL_ARG);
    zero_report_loss(NULL, 1.0);
    zero_engine_destroy(NULL);
    /* a live engine, one pointer NULL at a time */
    CHECK(zero_engine_create(&e, &c, ts, 2, b, &err) == ZERO_OK);
    if (!e) return ZERO_ERR_STATE;
    ENAMED(e, zero_grad_norm(e, NULL), "zero_grad_norm", "norm");
    {
        zero_bandwidths bw = {1, 1, 0, 1, 0, 0};
        zero_floor fl;
        memset(&in, 0, sizeof in);
        ENAMED(e, zero_floor_of(e, NULL, &bw, &fl), "zero_floor_of", "info");
        ENAMED(e, zero_floor_of(e, &in, NULL, &fl), "zero_floor_of", "bw");
        ENAMED(e, zero_floor_of(e, &in, &bw, NULL), "zero_floor_of", "out");
    }
    ENAMED(e, zero_all_reduce_scalars(e, NULL, 1, ZERO_OP_SUM), "zero_all_reduce_scalars", "vals");
    ENAMED(e, zero_read_state(e, 0, ZERO_STATE_MASTER, 0, 4, NULL), "zero_read_state", "out");
    ENAMED(e, zero_client_put(e, NULL, &v, sizeof v), "zero_client_put", "key");
    ENAMED(e, zero_client_put(e, "k", NULL, sizeof v), "zero_client_put", "data");
    ENAMED(e, zero_client_get(e, NULL, &v, sizeof v, NULL), "zero_client_get", "key");
    ENAMED(e, zero_client_get(e, "k", NULL, sizeof v, NULL), "zero_client_get", "out");
    {
        size_t found = 9;
        CHECK(zero_client_get(e, "k", &v, sizeof v, &found) == ZERO_OK && found == 0); /* absent: not an error */
    }
    NAMED(zero_save(e, NULL, &err), "zero_save", "dir");
    NAMED(zero_load(e, NULL, &err), "zero_load", "dir");
    NAMED(zero_export_safetensors(e, NULL, ZERO_DTYPE_FP32, &err), "zero_export_safetensors", "path");
    CHECK(zero_memory_report(e, NULL) == ZERO_ERR_INVALID_ARG);
    /* still usable: a step with every gradient in */
    {
        int t;
        for (t = 1; t >= 0; t--) {
            float *g = (float *)zero_grad(e, t);
            int64_t i;
            CHECK(g != NULL);
            for (i = 0; g && i < SIZES[t]; i++) g[i] = 0.01f * (float)i;
            CHECK(zero_grad_ready(e, t) == ZERO_OK);
        }
        CHECK(zero_step(e, NULL) == ZERO_OK); /* info may be NULL */
        CHECK(zero_read_state(e, 0, ZERO_STATE_MASTER, 0, 4, out) == ZERO_OK);
    }
    zero_engine_destroy(e);
    return ZERO_OK;
}

/* ---- safetensors ---- */

static void test_safetensors(void) {
    static const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    char path[] = "/tmp/zero_test_api_null.safetensors";
    unsigned char len[8];
    float data[2] = {1.5f, -2.0f}, out[2];
    zero_safetensors *st = NULL;
    zero_tensor ts[1];
    FILE *f = fopen(path, "wb");
    uint64_t n = sizeof hdr - 1;
    int i;
    for (i = 0; i < 8; i++) len[i] = (unsigned char)(n >> (8 * i));
    CHECK(f && fwrite(len, 1, 8, f) == 8 && fwrite(hdr, 1, n, f) == n && fwrite(data, 4, 2, f) == 2);
    if (f) fclose(f);
    NAMED(zero_safetensors_open(NULL, path, &err), "zero_safetensors_open", "out");
    NAMED(zero_safetensors_open(&st, NULL, &err), "zero_safetensors_open", "path");
    CHECK(zero_safetensors_open(&st, path, &err) == ZERO_OK);
    CHECK(zero_safetensors_count(NULL) == 0 && zero_safetensors_get(NULL, 0) == NULL);
    CHECK(zero_safetensors_find(NULL, "w") == -1 && zero_safetensors_find(st, NULL) == -1);
    CHECK(zero_safetensors_metadata(NULL, "k") == NULL && zero_safetensors_metadata(st, NULL) == NULL);
    NAMED(zero_safetensors_read(NULL, 0, 0, 2, 0, ZERO_DTYPE_FP32, out, &err), "zero_safetensors_read", "st");
    NAMED(zero_safetensors_read(st, 0, 0, 2, 0, ZERO_DTYPE_FP32, NULL, &err), "zero_safetensors_read", "out");
    memset(ts, 0, sizeof ts);
    ts[0].name = "w", ts[0].numel = 2;
    NAMED(zero_safetensors_bind(NULL, ts, 1, NULL, &err), "zero_safetensors_bind", "st");
    NAMED(zero_safetensors_bind(st, NULL, 1, NULL, &err), "zero_safetensors_bind", "tensors");
    CHECK(zero_safetensors_read(st, 0, 0, 2, 0, ZERO_DTYPE_FP32, out, &err) == ZERO_OK && out[1] == -2.0f);
    zero_safetensors_close(st);
    zero_safetensors_close(NULL);
    remove(path);
}

/* ---- zero_offload.h ---- */

static void noop_task(void *arg, int64_t begin, int64_t end, int thread) {
    (void)arg, (void)begin, (void)end, (void)thread;
}

static void test_offload(void) {
    zero_cpu_pool *pool = NULL;
    zero_nvme *s = NULL;
    zero_nvme_request *req = NULL;
    char dir[] = "/tmp";
    unsigned char buf[64];
    CHECK(zero_cpu_simd_level(NULL) < ZERO_SIMD_COUNT); /* NULL: this CPU, detected */
    NAMED(zero_cpu_pool_create(NULL, 1, NULL, &err), "zero_cpu_pool_create", "out");
    CHECK(zero_cpu_pool_create(&pool, 1, NULL, &err) == ZERO_OK);
    NAMED(zero_cpu_pool_run(pool, NULL, NULL, 10, 64, &err), "zero_cpu_pool_run", "fn");
    CHECK(zero_cpu_pool_run(NULL, noop_task, NULL, 10, 64, &err) == ZERO_OK); /* no pool: on the calling thread */
    CHECK(zero_cpu_pool_threads(NULL) == 1);
    NAMED(zero_cpu_adam(NULL, pool, &err), "zero_cpu_adam", "args");
    NAMED(zero_cpu_adam_at(NULL, ZERO_SIMD_SCALAR, pool, &err), "zero_cpu_adam_at", "args");
    NAMED(zero_cpu_memory_bandwidth(pool, 64, 1, NULL, &err), "zero_cpu_memory_bandwidth", "bytes_per_s");
    zero_cpu_pool_destroy(pool);
    zero_cpu_pool_destroy(NULL);
    NAMED(zero_nvme_open(NULL, dir, "apinull", 0, 64, NULL, &err), "zero_nvme_open", "out");
    NAMED(zero_nvme_open(&s, NULL, "apinull", 0, 64, NULL, &err), "zero_nvme_open", "dir");
    NAMED(zero_nvme_open(&s, dir, NULL, 0, 64, NULL, &err), "zero_nvme_open", "prefix");
    CHECK(zero_nvme_open(&s, dir, "apinull", 0, 64, NULL, &err) == ZERO_OK);
    memset(buf, 7, sizeof buf);
    NAMED(zero_nvme_write(NULL, 0, buf, sizeof buf, &err), "zero_nvme_write", "store");
    NAMED(zero_nvme_write(s, 0, NULL, sizeof buf, &err), "zero_nvme_write", "buf");
    NAMED(zero_nvme_read(NULL, 0, buf, sizeof buf, &err), "zero_nvme_read", "store");
    NAMED(zero_nvme_read(s, 0, NULL, sizeof buf, &err), "zero_nvme_read", "buf");
    NAMED(zero_nvme_write_async(NULL, 0, buf, sizeof buf, &req, &err), "zero_nvme_write_async", "store");
    NAMED(zero_nvme_write_async(s, 0, NULL, sizeof buf, &req, &err), "zero_nvme_write_async", "buf");
    NAMED(zero_nvme_write_async(s, 0, buf, sizeof buf, NULL, &err), "zero_nvme_write_async", "req");
    NAMED(zero_nvme_read_async(NULL, 0, buf, sizeof buf, &req, &err), "zero_nvme_read_async", "store");
    NAMED(zero_nvme_read_async(s, 0, NULL, sizeof buf, &req, &err), "zero_nvme_read_async", "buf");
    NAMED(zero_nvme_read_async(s, 0, buf, sizeof buf, NULL, &err), "zero_nvme_read_async", "req");
    NAMED(zero_nvme_wait(NULL, req, &err), "zero_nvme_wait", "store");
    NAMED(zero_nvme_wait(s, NULL, &err), "zero_nvme_wait", "req");
    {
        double rd, wr;
        NAMED(zero_nvme_bandwidth(NULL, 4096, 1, NULL, &rd, &wr, &err), "zero_nvme_bandwidth", "dir");
        NAMED(zero_nvme_bandwidth(dir, 4096, 1, NULL, NULL, &wr, &err), "zero_nvme_bandwidth", "read_bytes_per_s");
        NAMED(zero_nvme_bandwidth(dir, 4096, 1, NULL, &rd, NULL, &err), "zero_nvme_bandwidth", "write_bytes_per_s");
    }
    CHECK(zero_nvme_write(s, 0, buf, sizeof buf, &err) == ZERO_OK); /* still usable */
    zero_nvme_close(s, 0);
    zero_nvme_close(NULL, 0);
}

int main(void) {
    zero_error herr;
    test_pure();
    CHECK(zero_host_run(1, rank_fn, NULL, &herr) == ZERO_OK); /* one rank: the check counters are not thread safe */
    test_safetensors();
    test_offload();
    return zt_finish();
}
