/* The C API from C99 (include/tdmsim/tdmsim_moe.h): version and size checks,
 * YAML errors with the loader's messages, binding, routing (callback and
 * precomputed), backends and fallback, and the simulate backend's timing.
 *
 *   tdmsim_capi_test SCENARIO.yaml SCRATCH_DIR   (examples/c/tiny-moe.yaml) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdmsim/hipext_moe.h"
#include "tdmsim/tdmsim_moe.h"
#include "tests/capi/capi_check.h"


static const char *scenario;

static tdmsim_moe_descriptor base(void) {
  tdmsim_moe_descriptor d;
  tdmsim_moe_descriptor_init(&d);
  d.scenario = scenario;
  return d;
}

static tdmsim_forward_args args_for(const float *x, uint32_t backend) {
  tdmsim_forward_args a;
  tdmsim_forward_args_init(&a);
  a.tokens = 4;
  a.x = x;
  a.backend = backend;
  return a;
}

static tdmsim_forward_result empty_result(void) {
  tdmsim_forward_result r;
  tdmsim_forward_result_init(&r);
  return r;
}

/* Routes token t to experts t % 8 and (t + 3) % 8. */
static int fixed_route(uint32_t token, const float *x_row, uint32_t hidden, uint32_t top_k,
                       uint32_t *ids, float *weights, void *user_data) {
  (void)x_row, (void)hidden;
  ++*(int *)user_data;
  if (top_k != 2) return 1;
  ids[0] = token % 8, ids[1] = (token + 3) % 8;
  weights[0] = 0.75f, weights[1] = 0.25f;
  return 0;
}

static int failing_route(uint32_t token, const float *x_row, uint32_t hidden, uint32_t top_k,
                         uint32_t *ids, float *weights, void *user_data) {
  int ignored = 0;
  (void)user_data;
  return token == 2 ? 42 : fixed_route(token, x_row, hidden, top_k, ids, weights, &ignored);
}

static int contains(const char *text, const char *part) { return strstr(text, part) != NULL; }

/* Tries to clear the routing callback from inside it: refused; routes as fixed_route. */
static tdmsim_moe_t reentrant_handle;
static int reentrant_status;
static int reentrant_forward_status, reentrant_destroy_status;
static int reentrant_route(uint32_t token, const float *x_row, uint32_t hidden, uint32_t top_k,
                           uint32_t *ids, float *weights, void *user_data) {
  reentrant_status = (int)tdmsim_moe_set_custom_routing(reentrant_handle, NULL, NULL);
  /* nor a forward or a destroy of the same descriptor */
  tdmsim_forward_args a;
  tdmsim_forward_args_init(&a);
  a.tokens = 1;
  float y[4096];
  tdmsim_forward_result r;
  tdmsim_forward_result_init(&r);
  reentrant_forward_status = (int)tdmsim_moe_forward(reentrant_handle, &a, y, 4096, &r);
  reentrant_destroy_status = (int)tdmsim_moe_descriptor_destroy(reentrant_handle);
  return fixed_route(token, x_row, hidden, top_k, ids, weights, user_data);
}

int main(int argc, char **argv) {
  if (argc != 3) return 2;
  scenario = argv[1];
  const char *scratch = argv[2];

  /* the header's initialisers */
  {
    tdmsim_moe_descriptor d;
    memset(&d, 0xff, sizeof d);
    tdmsim_moe_descriptor_init(&d);
    CHECK(d.struct_size == sizeof d && d.version == TDMSIM_MOE_DESCRIPTOR_VERSION);
    CHECK(d.num_experts == 0 && d.scenario == NULL && d.seed == 0 && d.reserved[7] == 0);
    tdmsim_forward_args a;
    memset(&a, 0xff, sizeof a);
    tdmsim_forward_args_init(&a);
    CHECK(a.struct_size == sizeof a && a.tokens == 0 && a.x == NULL && a.d_expert_w2 == NULL);
    tdmsim_forward_result r;
    memset(&r, 0xff, sizeof r);
    tdmsim_forward_result_init(&r);
    CHECK(r.struct_size == sizeof r && r.fell_back == 0 && r.message[0] == '\0');
    tdmsim_moe_info i;
    memset(&i, 0xff, sizeof i);
    tdmsim_moe_info_init(&i);
    CHECK(i.struct_size == sizeof i && i.num_experts == 0 && i.model[0] == '\0');
  }

  /* capabilities */
  tdmsim_capabilities caps;
  memset(&caps, 0, sizeof caps);
  CHECK(tdmsim_get_capabilities(&caps) == TDMSIM_ERR_VERSION); /* struct_size 0 */
  memset(&caps, 0xff, sizeof caps);
  tdmsim_capabilities_init(&caps); /* zeroes, then sets struct_size */
  CHECK(caps.struct_size == sizeof caps && caps.backends == 0 && caps.max_experts == 0);
  CHECK(tdmsim_get_capabilities(&caps) == TDMSIM_OK);
  CHECK(caps.backends == ((1u << TDMSIM_BACKEND_EMULATE) | (1u << TDMSIM_BACKEND_SIMULATE)));
  CHECK(caps.policies & (1u << TDMSIM_ROUTE_CUSTOM));
  CHECK(caps.api_version == TDMSIM_MOE_DESCRIPTOR_VERSION);
  CHECK(caps.max_experts >= 8 && caps.custom_routing == 1 && caps.precomputed_routing == 1);

  /* descriptor checks: version, size, reserved, stride, policy, scenario */
  tdmsim_moe_t h = NULL;
  tdmsim_moe_descriptor d = base();
  d.version = 2;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_VERSION && h == NULL);
  CHECK(contains(tdmsim_last_error(), "version is 2"));
  d = base();
  d.struct_size = sizeof d - 8;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_VERSION);
  CHECK(contains(tdmsim_last_error(), "struct_size"));
  d = base();
  d.reserved[3] = 1;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT);
  d = base();
  d.expert_stride = 4096;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT);
  d = base();
  d.routing_policy = 9;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT);
  d = base();
  d.expert_base_addr = 100;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "expert_base_addr"));
  d = base();
  d.scenario = NULL;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(tdmsim_moe_descriptor_create(NULL, &h) == TDMSIM_ERR_INVALID_ARGUMENT);

  /* YAML errors carry the loader's file:line: key: message */
  char bad[1024];
  snprintf(bad, sizeof bad, "%s/bad-scenario.yaml", scratch);
  FILE *f = fopen(bad, "w");
  CHECK(f != NULL);
  if (f) {
    fputs("kind: scenario\nname: bad\nmachine: mi300x\nmodel: qwen3-30b-a3b\ntokens: 0\n", f);
    fclose(f);
  }
  d = base();
  d.scenario = bad;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_CONFIG);
  CHECK(contains(tdmsim_last_error(), "bad-scenario.yaml:5:"));
  CHECK(contains(tdmsim_last_error(), "tokens: must be at least 1"));
  d = base();
  d.machine = ""; /* NULL keeps the scenario's machine; "" is no machine */
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_INVALID_ARGUMENT && h == NULL);
  CHECK(contains(tdmsim_last_error(), "machine is empty"));
  d = base();
  d.machine = "no-such-machine";
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_CONFIG);
  CHECK(contains(tdmsim_last_error(), "no-such-machine"));
  /* shape fields override the model and are checked like it */
  d = base();
  d.experts_per_token = 9;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_ERR_CONFIG);
  CHECK(contains(tdmsim_last_error(), "top_k"));
  d = base();
  d.num_experts = 16;
  d.hidden_size = 128;
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_OK);
  tdmsim_moe_info info;
  tdmsim_moe_info_init(&info);
  CHECK(tdmsim_moe_get_info(h, &info) == TDMSIM_OK);
  CHECK(info.num_experts == 16 && info.hidden_size == 128 && info.experts_per_token == 2);
  CHECK(strcmp(info.machine, "mi500x-tdm") == 0 && info.machine_has_tdm == 1);
  tdmsim_moe_descriptor_destroy(h);
  h = NULL;

  /* a descriptor with policy custom, through the seed's names */
  td_moe_descriptor sd = base();
  sd.routing_policy = TDM_ROUTE_CUSTOM;
  hipMoeDescriptor_t hd = NULL;
  CHECK(hipExtMoeDescriptorCreate(&sd, &hd) == TDMSIM_OK && hd != NULL);
  tdmsim_moe_info_init(&info);
  CHECK(tdmsim_moe_get_info(hd, &info) == TDMSIM_OK);
  const uint32_t H = info.hidden_size;
  float *x = malloc(sizeof(float) * 4 * H), *y = malloc(sizeof(float) * 4 * H),
        *y2 = malloc(sizeof(float) * 4 * H);
  for (uint32_t i = 0; i < 4 * H; ++i) x[i] = (float)((i * 37u) % 101u) / 101.0f - 0.5f;

  tdmsim_forward_args a = args_for(x, TDMSIM_BACKEND_EMULATE);
  tdmsim_forward_result r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y, 4 * H, &r) == TDMSIM_ERR_NOT_BOUND);
  hipStream_t s = NULL;
  CHECK(tdmsim_stream_create(&s) == TDMSIM_OK);
  CHECK(hipExtStreamBindMoeDescriptor(s, hd) == TDMSIM_OK);
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y, 4 * H, &r) == TDMSIM_ERR_ROUTING_MISSING);

  int calls = 0;
  CHECK(hipExtMoeSetCustomRouting(hd, fixed_route, &calls) == TDMSIM_OK);
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y, 4 * H - 1, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  a.struct_size = 4;
  CHECK(tdmsim_moe_forward(hd, &a, y, 4 * H, &r) == TDMSIM_ERR_VERSION);
  a.struct_size = sizeof a;
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y, 4 * H, &r) == TDMSIM_OK);
  CHECK(calls == 4);
  CHECK(r.ran == TDMSIM_BACKEND_EMULATE && r.fell_back == 0 && r.has_timing == 0);
  CHECK(r.tokens == 4 && r.hidden == H && r.descriptors >= 1 && r.descriptor_bytes > 0);

  /* precomputed routing gives the same output as the callback that made it */
  uint32_t ids[8];
  float w[8];
  for (uint32_t t = 0; t < 4; ++t) fixed_route(t, x + t * H, H, 2, ids + 2 * t, w + 2 * t, &calls);
  a.topk_ids = ids;
  a.topk_weights = w;
  r = empty_result();
  calls = 0;
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(calls == 0 && memcmp(y, y2, sizeof(float) * 4 * H) == 0);
  ids[1] = 99; /* an expert the layer does not have: named as the argument it is */
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "args.topk_ids[0, 1] is 99"));
  ids[1] = ids[0];
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "picks expert"));
  for (uint32_t t = 0; t < 4; ++t) fixed_route(t, x + t * H, H, 2, ids + 2 * t, w + 2 * t, &calls);
  w[5] = 0.0f / 0.0f;
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "args.topk_weights[2, 1]"));
  a.topk_ids = NULL;
  a.topk_weights = NULL;
  /* a non-finite activation is the caller's, named with its place */
  const float kept = x[H + 3];
  x[H + 3] = 1.0f / 0.0f;
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "args.x[1, 3] is inf"));
  x[H + 3] = kept;
  /* the callback cannot be replaced from inside itself */
  reentrant_handle = hd;
  reentrant_status = -1;
  CHECK(tdmsim_moe_set_custom_routing(hd, reentrant_route, &calls) == TDMSIM_OK);
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(reentrant_status == TDMSIM_ERR_INVALID_ARGUMENT && memcmp(y, y2, sizeof(float) * 4 * H) == 0);
  CHECK(reentrant_forward_status == TDMSIM_ERR_INVALID_ARGUMENT && reentrant_destroy_status == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(tdmsim_moe_set_custom_routing(hd, fixed_route, &calls) == TDMSIM_OK);

  /* a failing callback fails the forward, naming the token */
  CHECK(tdmsim_moe_set_custom_routing(hd, failing_route, &calls) == TDMSIM_OK);
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);
  CHECK(contains(tdmsim_last_error(), "returned 42 for token 2"));
  CHECK(tdmsim_moe_set_custom_routing(hd, fixed_route, &calls) == TDMSIM_OK);

  /* gpu: unavailable without fallback; with it, emulate runs and says so */
  a.backend = TDMSIM_BACKEND_GPU;
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_BACKEND_UNAVAILABLE);
  CHECK(contains(tdmsim_last_error(), "gpu is not available"));
  a.allow_fallback = 1;
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(r.requested == TDMSIM_BACKEND_GPU && r.ran == TDMSIM_BACKEND_EMULATE && r.fell_back == 1);
  CHECK(contains(r.message, "fell back to emulate"));
  CHECK(memcmp(y, y2, sizeof(float) * 4 * H) == 0);
  a.backend = 7;
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_ERR_INVALID_ARGUMENT);

  /* simulate: the emulator's output plus both paths' time */
  a.backend = TDMSIM_BACKEND_SIMULATE;
  a.allow_fallback = 0;
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(r.ran == TDMSIM_BACKEND_SIMULATE && r.has_timing == 1);
  CHECK(memcmp(y, y2, sizeof(float) * 4 * H) == 0);
  CHECK(r.software.simulated == 1 && r.tdm.simulated == 1);
  CHECK(r.software.total_s > 0 && r.tdm.total_s > 0);
  CHECK(r.software.sort_s > 0 && r.tdm.sort_s == 0); /* the unit sorts in hardware */
  CHECK(r.software.experts_s > 0 &&
        r.software.experts_s + r.software.routing_s + r.software.sort_s <= r.software.total_s * 1.000001);
  const char *json = NULL;
  CHECK(tdmsim_moe_last_timing_json(hd, &json) == TDMSIM_OK);
  CHECK(json != NULL && json[0] == '[' && contains(json, "\"path\"") && contains(json, "tdm"));

  uint64_t launches = 0;
  CHECK(tdmsim_stream_launches(s, &launches) == TDMSIM_OK && launches == 5); /* successful forwards only */
  /* the descriptor keeps its stream alive */
  CHECK(tdmsim_stream_destroy(s) == TDMSIM_OK);
  a.backend = TDMSIM_BACKEND_EMULATE;
  a.x = NULL; /* the scenario's seeded activations */
  r = empty_result();
  CHECK(tdmsim_moe_forward(hd, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(memcmp(y, y2, sizeof(float) * 4 * H) != 0);
  hipExtMoeDescriptorDestroy(hd);

  /* a machine without a TDM unit: simulate times the software path only */
  d = base();
  d.machine = "mi300x";
  CHECK(tdmsim_moe_descriptor_create(&d, &h) == TDMSIM_OK);
  CHECK(tdmsim_stream_create(&s) == TDMSIM_OK);
  CHECK(tdmsim_stream_bind_moe_descriptor(s, h) == TDMSIM_OK);
  a = args_for(x, TDMSIM_BACKEND_SIMULATE);
  r = empty_result();
  CHECK(tdmsim_moe_forward(h, &a, y2, 4 * H, &r) == TDMSIM_OK);
  CHECK(r.software.simulated == 1 && r.tdm.simulated == 0 && r.software.total_s > 0);
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);

  CHECK(strcmp(tdmsim_status_name(TDMSIM_ERR_VERSION), "TDMSIM_ERR_VERSION") == 0);
  free(x), free(y), free(y2);
  if (failures == 0) printf("capi: all checks passed\n");
  return failures == 0 ? 0 : 1;
}
