/* The C API's weights and gpu backend from C99: expert and router weights
 * passed to forward, the API 1.0 argument size, device weights, and the gpu
 * backend's loading, refusal and fallback with their reasons, through a stub
 * backend library (tests/capi/gpu_stub.c) on a machine without a GPU.
 *
 *   tdmsim_capi_weights_test FP16_SCENARIO BF16_SCENARIO STUB_LIBRARY
 *   (examples/c/tiny-moe.yaml, examples/c/tiny-moe-h200-bf16.yaml) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdmsim/tdmsim_moe.h"
#include "tests/capi/capi_check.h"


enum { T = 16 };

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

static tdmsim_moe_t make(const char *scenario, tdmsim_stream_t *stream) {
  tdmsim_moe_descriptor d;
  tdmsim_moe_descriptor_init(&d);
  d.scenario = scenario;
  tdmsim_moe_t h = NULL;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_OK);
  CHECK(tdmsim_stream_create(stream) == TDMSIM_OK);
  CHECK(tdmsim_stream_bind_moe_descriptor(*stream, h) == TDMSIM_OK);
  return h;
}

static tdmsim_forward_args args_for(const float *x, uint32_t backend) {
  tdmsim_forward_args a;
  tdmsim_forward_args_init(&a);
  a.tokens = T;
  a.x = x;
  a.backend = backend;
  return a;
}

static tdmsim_status run(tdmsim_moe_t h, const tdmsim_forward_args *a, float *y, size_t n,
                         tdmsim_forward_result *r) {
  tdmsim_forward_result_init(r);
  return tdmsim_moe_forward(h, a, y, n, r);
}

static int same_row(const float *a, const float *b, uint32_t t, uint32_t hidden) {
  return memcmp(a + (size_t)t * hidden, b + (size_t)t * hidden, sizeof(float) * hidden) == 0;
}

static uint32_t gpu_bit(void) {
  tdmsim_capabilities caps;
  tdmsim_capabilities_init(&caps);
  CHECK(tdmsim_get_capabilities(&caps) == TDMSIM_OK);
  return caps.backends & (1u << TDMSIM_BACKEND_GPU);
}

int main(int argc, char **argv) {
  if (argc != 4) return 2;
  const char *fp16 = argv[1], *bf16 = argv[2], *stub = argv[3];
  tdmsim_stream_t s = NULL;
  tdmsim_moe_t h = make(fp16, &s);
  tdmsim_moe_info info;
  tdmsim_moe_info_init(&info);
  CHECK(tdmsim_moe_get_info(h, &info) == TDMSIM_OK);
  const uint32_t H = info.hidden_size, I = info.intermediate_size, E = info.num_experts;
  const size_t n = (size_t)T * H, gu = (size_t)2 * I * H, dn = (size_t)H * I;
  float *x = malloc(sizeof(float) * n), *y0 = malloc(sizeof(float) * n),
        *y1 = malloc(sizeof(float) * n), *y2 = malloc(sizeof(float) * n);
  float *w13 = malloc(sizeof(float) * gu * E), *w2 = malloc(sizeof(float) * dn * E);
  for (size_t i = 0; i < n; ++i) x[i] = (float)((i * 37u) % 101u) / 101.0f - 0.5f;
  for (uint32_t e = 0; e < E; ++e) {
    CHECK(tdmsim_moe_expert_weights(h, e, w13 + e * gu, w2 + e * dn) == TDMSIM_OK);
  }
  /* routing fixed for the whole test: token t to experts t % E and (t + 3) % E */
  uint32_t ids[2 * T];
  float rw[2 * T];
  for (uint32_t t = 0; t < T; ++t) {
    ids[2 * t] = t % E, ids[2 * t + 1] = (t + 3) % E;
    rw[2 * t] = 0.625f, rw[2 * t + 1] = 0.375f;
  }
  tdmsim_forward_result r;

  /* 1. the seed's weights passed in (the layer's fp16 values) give the seeded output */
  tdmsim_forward_args a = args_for(x, TDMSIM_BACKEND_EMULATE);
  a.topk_ids = ids, a.topk_weights = rw;
  CHECK(run(h, &a, y0, n, &r) == TDMSIM_OK);
  a.expert_w13 = w13, a.expert_w2 = w2;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK);
  CHECK(memcmp(y0, y1, sizeof(float) * n) == 0);
  /* an API 1.0 caller's shorter struct reads as no weights */
  a.struct_size = (uint32_t)TDMSIM_FORWARD_ARGS_SIZE_V1;
  a.expert_w13 = NULL, a.expert_w2 = NULL;
  CHECK(run(h, &a, y2, n, &r) == TDMSIM_OK);
  CHECK(memcmp(y0, y2, sizeof(float) * n) == 0);
  a.struct_size = sizeof a;

  /* 2. one expert's down weights changed: only the tokens routed to it change */
  const uint32_t target = 3;
  for (size_t i = 0; i < dn; ++i) w2[target * dn + i] *= 1.5f;
  a.expert_w13 = w13, a.expert_w2 = w2;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK);
  uint32_t changed = 0;
  for (uint32_t t = 0; t < T; ++t) {
    const int routed = ids[2 * t] == target || ids[2 * t + 1] == target;
    CHECK(same_row(y0, y1, t, H) == !routed);
    changed += !same_row(y0, y1, t, H);
  }
  CHECK(changed == 4); /* t = 0, 3, 8, 11 */
  for (size_t i = 0; i < dn; ++i) w2[target * dn + i] /= 1.5f; /* exact: back to the fp16 values */

  /* 3. router weights: W = identity on the first E columns, so each token goes
   * to its two largest x[t][0..E), weighted by the renormalised softmax */
  float *router = calloc((size_t)E * H, sizeof(float));
  for (uint32_t e = 0; e < E; ++e) router[(size_t)e * H + e] = 1.0f;
  uint32_t mine[2 * T];
  float mine_w[2 * T];
  for (uint32_t t = 0; t < T; ++t) {
    const float *l = x + (size_t)t * H;
    uint32_t b0 = 0, b1 = 1;
    if (l[b1] > l[b0]) b0 = 1, b1 = 0;
    for (uint32_t e = 2; e < E; ++e) {
      if (l[e] > l[b0]) b1 = b0, b0 = e;
      else if (l[e] > l[b1]) b1 = e;
    }
    mine[2 * t] = b0, mine[2 * t + 1] = b1;
    mine_w[2 * t] = (float)(1.0 / (1.0 + exp((double)l[b1] - l[b0])));
    mine_w[2 * t + 1] = 1.0f - mine_w[2 * t];
  }
  tdmsim_forward_args ra = args_for(x, TDMSIM_BACKEND_EMULATE);
  ra.router_weights = router;
  CHECK(run(h, &ra, y1, n, &r) == TDMSIM_OK);
  a.topk_ids = mine, a.topk_weights = mine_w, a.expert_w13 = NULL, a.expert_w2 = NULL;
  CHECK(run(h, &a, y2, n, &r) == TDMSIM_OK);
  double worst = 0;
  for (size_t i = 0; i < n; ++i) worst = fmax(worst, fabs((double)y1[i] - y2[i]));
  CHECK(worst < 1e-5);
  ra.router_weights = NULL;
  ra.router_bias = router;
  CHECK(run(h, &ra, y1, n, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "router_weights"));
  free(router);

  /* 4. device weights are for the gpu backend: alone they are refused, with
   * the host copy beside them another backend runs on that */
  a = args_for(x, TDMSIM_BACKEND_EMULATE);
  a.topk_ids = ids, a.topk_weights = rw;
  a.d_expert_w13 = w13; /* never dereferenced here */
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "device weights need the gpu backend"));
  a.expert_w13 = w13;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK);
  CHECK(memcmp(y0, y1, sizeof(float) * n) == 0);
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);

  /* 5. the gpu backend without its library: refused or fallen back, saying why */
  setenv("TDMSIM_GPU_LIBRARY", "/nonexistent/libtdmsim_gpu.so", 1);
  CHECK(gpu_bit() == 0);
  h = make(fp16, &s);
  a = args_for(x, TDMSIM_BACKEND_GPU);
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_ERR_BACKEND_UNAVAILABLE);
  CHECK(contains(tdmsim_last_error(), "no GPU backend library: /nonexistent/libtdmsim_gpu.so"));
  a.allow_fallback = 1;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK);
  CHECK(r.ran == TDMSIM_BACKEND_EMULATE && r.fell_back == 1);
  CHECK(contains(r.message, "/nonexistent/libtdmsim_gpu.so") && contains(r.message, "fell back to emulate"));
  printf("gpu without its library: %s\n", r.message);
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);
  setenv("TDMSIM_GPU_LIBRARY", "none", 1);
  h = make(fp16, &s);
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK && contains(r.message, "disabled by TDMSIM_GPU_LIBRARY=none"));
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);

  /* 6. a library that finds no GPU */
  setenv("TDMSIM_GPU_LIBRARY", stub, 1);
  setenv("TDMSIM_GPU_STUB", "nodevice", 1);
  CHECK(gpu_bit() == 0);
  h = make(fp16, &s);
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK && r.fell_back == 1);
  CHECK(contains(r.message, "no GPU device (stub)"));
  printf("gpu without a device: %s\n", r.message);
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);

  /* 7. a library with a "GPU": the call path, the plan as a case, the weights */
  setenv("TDMSIM_GPU_STUB", "copy", 1);
  CHECK(gpu_bit() != 0);
  h = make(fp16, &s); /* fp16: a format the kernels do not run */
  a.allow_fallback = 1;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_ERR_BACKEND_FAILED);
  CHECK(contains(tdmsim_last_error(), "emulator and timing model only"));
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);
  h = make(bf16, &s);
  a.expert_w13 = w13, a.expert_w2 = w2;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK);
  CHECK(r.ran == TDMSIM_BACKEND_GPU && r.fell_back == 0);
  CHECK(contains(r.message, "ran on Stub GPU") && contains(r.message, "1.50 us"));
  int copied = 1;
  for (size_t i = 0; i < n; ++i) copied &= y1[i] == x[i] + w13[0];
  CHECK(copied);
  a.expert_w13 = NULL, a.expert_w2 = NULL;
  a.d_expert_w13 = w2; /* the stub reads "device" pointers from host memory */
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_OK && y1[0] == x[0] + w2[0]);
  printf("gpu through the stub: %s\n", r.message);
  setenv("TDMSIM_GPU_STUB", "fail", 1);
  a.d_expert_w13 = NULL;
  CHECK(run(h, &a, y1, n, &r) == TDMSIM_ERR_BACKEND_FAILED);
  CHECK(contains(tdmsim_last_error(), "stub: refused a case of 16 tokens"));
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);

  free(x), free(y0), free(y1), free(y2), free(w13), free(w2);
  if (failures == 0) printf("capi weights: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
