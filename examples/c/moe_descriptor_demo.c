/* moe_descriptor_demo.c: seed 000's flow through tdmsim's C API (docs/api.md).
 *
 * Creates a descriptor for an 8-expert, top-2 MoE layer from a scenario YAML,
 * binds it to a stream, routes tokens with a custom callback (the caller's own
 * softmax gate, as the seed's software path does), runs forward on the emulate
 * backend and checks it against a plain C MoE (the seed's _forward_software)
 * computed from the same expert weights: agreement to 1e-4 or exit 1. Then
 * runs the simulate backend (same output, plus the layer's predicted time on
 * the software and TDM paths) and prints latency and speedup, and asks for the
 * gpu backend with fallback allowed.
 *
 *   moe_descriptor_demo SCENARIO.yaml     (examples/c/tiny-moe.yaml)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tdmsim/hipext_moe.h>
#include <tdmsim/tdmsim_moe.h>

#define TOKENS 32u
#define TOLERANCE 1e-4

/* Round to fp16 (nearest, ties to even), the layer dtype's rounding. */
static float round_fp16(float v) {
  if (fabsf(v) < ldexpf(1.0f, -14)) return ldexpf(rintf(ldexpf(v, 24)), -24); /* subnormal */
  int e = 0;
  const float m = frexpf(v, &e); /* v = m * 2^e, 0.5 <= |m| < 1: 11 significant bits */
  return ldexpf(rintf(ldexpf(m, 11)), e - 11);
}

/* The caller's gate: logits = x . G^T, softmax, top-2, renormalised. */
typedef struct gate {
  uint32_t experts, hidden;
  float *w; /* [experts][hidden] */
} gate;

static int route(uint32_t token, const float *x_row, uint32_t hidden, uint32_t top_k,
                 uint32_t *ids, float *weights, void *user_data) {
  const gate *g = (const gate *)user_data;
  double logit[64], best[2] = {-1e300, -1e300};
  uint32_t pick[2] = {0, 0};
  (void)token;
  if (top_k != 2 || g->experts > 64 || hidden != g->hidden) return 1;
  for (uint32_t e = 0; e < g->experts; ++e) {
    double s = 0;
    for (uint32_t h = 0; h < hidden; ++h) s += (double)x_row[h] * g->w[e * hidden + h];
    logit[e] = s;
    if (s > best[0]) {
      best[1] = best[0], pick[1] = pick[0];
      best[0] = s, pick[0] = e;
    } else if (s > best[1]) {
      best[1] = s, pick[1] = e;
    }
  }
  /* softmax then renormalise over the two picks = softmax over the two */
  const double a = 1.0, b = exp(logit[pick[1]] - logit[pick[0]]);
  ids[0] = pick[0], ids[1] = pick[1];
  weights[0] = (float)(a / (a + b)), weights[1] = (float)(b / (a + b));
  return 0;
}

static int check(tdmsim_status s, const char *what) {
  if (s == TDMSIM_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", what, tdmsim_status_name(s), tdmsim_last_error());
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s SCENARIO.yaml\n", argv[0]);
    return 2;
  }
  tdmsim_capabilities caps;
  tdmsim_capabilities_init(&caps);
  if (check(tdmsim_get_capabilities(&caps), "capabilities")) return 1;
  printf("capabilities: api %u, descriptor format %u, backends:%s%s%s, max experts %u\n",
         caps.api_version, caps.descriptor_format_version,
         caps.backends & (1u << TDMSIM_BACKEND_EMULATE) ? " emulate" : "",
         caps.backends & (1u << TDMSIM_BACKEND_SIMULATE) ? " simulate" : "",
         caps.backends & (1u << TDMSIM_BACKEND_GPU) ? " gpu" : "", caps.max_experts);

  /* 1. the descriptor, in the seed's shape (td_moe_descriptor) */
  td_moe_descriptor desc;
  tdmsim_moe_descriptor_init(&desc);
  desc.num_experts = 8;
  desc.experts_per_token = 2;
  desc.routing_policy = TDM_ROUTE_CUSTOM;
  desc.scenario = argv[1];
  hipMoeDescriptor_t handle = NULL;
  if (check(hipExtMoeDescriptorCreate(&desc, &handle), "create")) return 1;
  tdmsim_moe_info info;
  tdmsim_moe_info_init(&info);
  if (check(tdmsim_moe_get_info(handle, &info), "info")) return 1;
  printf("layer: %s on %s, %u experts, top-%u, H %u, I %u, %s, %s\n", info.model, info.machine,
         info.num_experts, info.experts_per_token, info.hidden_size, info.intermediate_size,
         info.dtype, info.activation);
  const uint32_t E = info.num_experts, K = info.experts_per_token, H = info.hidden_size,
                 I = info.intermediate_size;

  /* 2. a stream, bound */
  hipStream_t stream = NULL;
  if (check(tdmsim_stream_create(&stream), "stream") ||
      check(hipExtStreamBindMoeDescriptor(stream, handle), "bind"))
    return 1;

  /* 3. custom routing: the caller's gate */
  gate g = {E, H, malloc(sizeof(float) * E * H)};
  float *x = malloc(sizeof(float) * TOKENS * H);
  uint32_t lcg = 12345u;
  for (uint32_t i = 0; i < E * H; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    g.w[i] = ((float)(lcg >> 8) / 16777216.0f - 0.5f) * 0.2f;
  }
  for (uint32_t i = 0; i < TOKENS * H; ++i) {
    lcg = lcg * 1664525u + 1013904223u;
    x[i] = round_fp16((float)(lcg >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  if (check(hipExtMoeSetCustomRouting(handle, route, &g), "routing")) return 1;

  /* 4. forward on the emulator: the layer as the TDM descriptors run it */
  float *y_tdm = malloc(sizeof(float) * TOKENS * H);
  tdmsim_forward_args args;
  tdmsim_forward_args_init(&args);
  args.tokens = TOKENS;
  args.x = x;
  args.backend = TDMSIM_BACKEND_EMULATE;
  tdmsim_forward_result res;
  tdmsim_forward_result_init(&res);
  if (check(tdmsim_moe_forward(handle, &args, y_tdm, (size_t)TOKENS * H, &res), "forward emulate"))
    return 1;
  printf("emulate: %u descriptors (%u bytes), %u-stage kernel, block_m %u\n", res.descriptors,
         res.descriptor_bytes, res.kernel_stages, res.block_m);

  /* 5. the software reference: a plain per-token loop over the same weights */
  float *gate_up = malloc(sizeof(float) * (size_t)E * 2 * I * H);
  float *down = malloc(sizeof(float) * (size_t)E * H * I);
  for (uint32_t e = 0; e < E; ++e) {
    if (check(tdmsim_moe_expert_weights(handle, e, gate_up + (size_t)e * 2 * I * H,
                                        down + (size_t)e * H * I), "weights"))
      return 1;
  }
  float *inter = malloc(sizeof(float) * I);
  double max_diff = 0, max_ref = 0;
  for (uint32_t t = 0; t < TOKENS; ++t) {
    uint32_t ids[2];
    float w[2];
    const float *xt = x + (size_t)t * H;
    route(t, xt, H, K, ids, w, &g);
    double acc[4096];
    if (H > 4096) return 1;
    for (uint32_t h = 0; h < H; ++h) acc[h] = 0;
    for (uint32_t k = 0; k < K; ++k) {
      const float *gu = gate_up + (size_t)ids[k] * 2 * I * H;
      const float *dn = down + (size_t)ids[k] * H * I;
      for (uint32_t i = 0; i < I; ++i) {
        double gs = 0, us = 0;
        for (uint32_t h = 0; h < H; ++h) {
          gs += (double)xt[h] * gu[(size_t)i * H + h];
          us += (double)xt[h] * gu[(size_t)(I + i) * H + h];
        }
        float gv = (float)gs, uv = (float)us;
        if (res.kernel_stages == 2) gv = round_fp16(gv), uv = round_fp16(uv);
        inter[i] = round_fp16(gv / (1.0f + expf(-gv)) * uv); /* silu(g) * u */
      }
      for (uint32_t h = 0; h < H; ++h) {
        double s = 0;
        for (uint32_t i = 0; i < I; ++i) s += (double)inter[i] * dn[(size_t)h * I + i];
        acc[h] += round_fp16((float)s * w[k]); /* routed weight, then the store rounding */
      }
    }
    for (uint32_t h = 0; h < H; ++h) {
      const double d = fabs(acc[h] - y_tdm[(size_t)t * H + h]);
      if (d > max_diff) max_diff = d;
      if (fabs(acc[h]) > max_ref) max_ref = fabs(acc[h]);
    }
  }
  const int agree = max_diff <= TOLERANCE;
  printf("TDM vs software: max |diff| %.3g (max |y| %.3g), tolerance %.0e: %s\n", max_diff, max_ref,
         TOLERANCE, agree ? "agree" : "DISAGREE");

  /* 6. the simulate backend: same output, plus predicted time on both paths */
  float *y_sim = malloc(sizeof(float) * TOKENS * H);
  args.backend = TDMSIM_BACKEND_SIMULATE;
  tdmsim_forward_result_init(&res);
  if (check(tdmsim_moe_forward(handle, &args, y_sim, (size_t)TOKENS * H, &res), "forward simulate"))
    return 1;
  const int same = memcmp(y_sim, y_tdm, sizeof(float) * TOKENS * H) == 0;
  printf("simulate on %s: output %s the emulator's\n", info.machine, same ? "identical to" : "DIFFERS from");
  printf("software path: %.2f us (routing %.2f, sort %.2f, experts %.2f)\n", res.software.total_s * 1e6,
         res.software.routing_s * 1e6, res.software.sort_s * 1e6, res.software.experts_s * 1e6);
  if (res.tdm.simulated) {
    printf("TDM path:      %.2f us (routing %.2f, sort %.2f, experts %.2f)\n", res.tdm.total_s * 1e6,
           res.tdm.routing_s * 1e6, res.tdm.sort_s * 1e6, res.tdm.experts_s * 1e6);
    printf("TDM speedup over software: %.2fx (latency %.1f%% lower)\n", res.software.total_s / res.tdm.total_s,
           100.0 * (res.software.total_s - res.tdm.total_s) / res.software.total_s);
  }

  /* 7. the gpu backend: not in this library; fallback reported */
  args.backend = TDMSIM_BACKEND_GPU;
  args.allow_fallback = 1;
  tdmsim_forward_result_init(&res);
  if (check(tdmsim_moe_forward(handle, &args, y_sim, (size_t)TOKENS * H, &res), "forward gpu")) return 1;
  printf("gpu: ran %s, fell back: %s (%s)\n", tdmsim_backend_name((tdmsim_backend)res.ran),
         res.fell_back ? "yes" : "no", res.message);

  uint64_t launches = 0;
  tdmsim_stream_launches(stream, &launches);
  printf("stream launches: %llu\n", (unsigned long long)launches);
  hipExtMoeDescriptorDestroy(handle);
  tdmsim_stream_destroy(stream);
  free(g.w), free(x), free(y_tdm), free(y_sim), free(gate_up), free(down), free(inter);
  return agree && same ? 0 : 1;
}
