/* The C API's gpu backend against its emulate backend, on a GPU host
 * (validation/gpu/capi_gpu_check.sh builds libtdmsim_gpu.so and runs this).
 *
 *   capi_gpu_check SCENARIO [--strict]     (examples/c/tiny-moe-h200-bf16.yaml)
 *
 * With $TDMSIM_GPU_LIBRARY naming libtdmsim_gpu.so. Three runs of the layer,
 * each on the emulator and on the GPU (no fallback), y compared:
 *   seeded    the scenario's weights, generated on each side from the seed;
 *   host      the caller's expert weights (fp32 host arrays);
 *   device    the same weights as device pointers (cudaMalloc through
 *             libcudart, loaded at run time), GPU only, against the emulator.
 * A run passes when the relative Frobenius error of y is within the GPU
 * kernels' tolerance for the layer's dtype (docs/gpu-kernels.md "Numerics
 * against the emulator": 1e-2 for bf16). The largest |diff| is printed against
 * seed 000's 1e-4 too; --strict makes that a condition as well (bf16 stores
 * each expert's output in bf16, whose steps near |y| ~ 0.1 are 2^-11, so
 * summation-order differences can exceed it by one step).
 * Prints one line per run and "capi_gpu_check: PASS" or "capi_gpu_check: FAIL
 * (why)". Exit 0 pass, 1 fail, 3 the gpu backend is not available. */
#define _POSIX_C_SOURCE 200809L
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tdmsim/tdmsim_moe.h"

static const double kTolerance = 1e-2; /* bf16, docs/gpu-kernels.md */
static const double kSeedAtol = 1e-4;  /* seed 000 section 6.2 */

typedef int (*malloc_fn)(void **, size_t);
typedef int (*memcpy_fn)(void *, const void *, size_t, int);
typedef int (*free_fn)(void *);

static int run(tdmsim_moe_t h, tdmsim_backend backend, const float *x, const float *w13,
               const float *w2, const void *dw13, const void *dw2, uint32_t tokens, float *y,
               size_t n, char *message, size_t message_n) {
  tdmsim_forward_args a;
  tdmsim_forward_args_init(&a);
  a.tokens = tokens;
  a.x = x;
  a.backend = backend;
  a.expert_w13 = w13;
  a.expert_w2 = w2;
  a.d_expert_w13 = dw13;
  a.d_expert_w2 = dw2;
  tdmsim_forward_result r;
  tdmsim_forward_result_init(&r);
  const tdmsim_status s = tdmsim_moe_forward(h, &a, y, n, &r);
  if (s != TDMSIM_OK) {
    snprintf(message, message_n, "%s: %s", tdmsim_status_name(s), tdmsim_last_error());
    return 0;
  }
  if (r.ran != (uint32_t)backend) {
    snprintf(message, message_n, "ran %s, not %s", tdmsim_backend_name((tdmsim_backend)r.ran),
             tdmsim_backend_name(backend));
    return 0;
  }
  snprintf(message, message_n, "%s", r.message);
  return 1;
}

/* Compares and prints; returns 1 when within the tolerance(s). */
static int compare(const char *what, const float *ye, const float *yg, size_t n, int strict,
                   const char *note) {
  double num = 0, den = 0, worst = 0, ymax = 0;
  for (size_t i = 0; i < n; ++i) {
    const double d = (double)yg[i] - ye[i];
    num += isfinite(d) ? d * d : 1e300;
    den += (double)ye[i] * ye[i];
    worst = fmax(worst, fabs(d));
    ymax = fmax(ymax, fabs((double)ye[i]));
  }
  const double rel = sqrt(num / (den > 0 ? den : 1));
  const int ok = rel <= kTolerance && (!strict || worst <= kSeedAtol);
  printf("%-7s gpu vs emulate: rel. Frobenius %.3e (tolerance %.0e), max |diff| %.3e (max |y| %.3g; "
         "seed's 1e-4 %s): %s\n  %s\n",
         what, rel, kTolerance, worst, ymax, worst <= kSeedAtol ? "met" : "not met",
         ok ? "ok" : "FAIL", note);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: capi_gpu_check SCENARIO [--strict]\n");
    return 2;
  }
  const int strict = argc > 2 && strcmp(argv[2], "--strict") == 0;
  tdmsim_moe_descriptor d;
  tdmsim_moe_descriptor_init(&d);
  d.scenario = argv[1];
  tdmsim_moe_t h = NULL;
  tdmsim_stream_t s = NULL;
  if (tdmsim_moe_descriptor_create(&d, &h) != TDMSIM_OK || tdmsim_stream_create(&s) != TDMSIM_OK ||
      tdmsim_stream_bind_moe_descriptor(s, h) != TDMSIM_OK) {
    printf("capi_gpu_check: FAIL (%s)\n", tdmsim_last_error());
    return 1;
  }
  tdmsim_moe_info info;
  tdmsim_moe_info_init(&info);
  tdmsim_moe_get_info(h, &info);
  const uint32_t T = 32, H = info.hidden_size, I = info.intermediate_size, E = info.num_experts;
  const size_t n = (size_t)T * H, gu = (size_t)E * 2 * I * H, dn = (size_t)E * H * I;
  printf("layer: %s on %s, %u experts, top-%u, H %u, I %u, %s, %u tokens\n", info.model,
         info.machine, E, info.experts_per_token, H, I, info.dtype, T);
  float *x = malloc(sizeof(float) * n), *ye = malloc(sizeof(float) * n),
        *yg = malloc(sizeof(float) * n), *w13 = malloc(sizeof(float) * gu),
        *w2 = malloc(sizeof(float) * dn);
  unsigned long long state = 88172645463325252ull; /* xorshift: the same on every host */
#define UNIFORM(scale) \
  (state ^= state << 13, state ^= state >> 7, state ^= state << 17, \
   (float)((double)(state >> 11) / 9007199254740992.0 * 2.0 - 1.0) * (scale))
  for (size_t i = 0; i < n; ++i) x[i] = UNIFORM(1.0f);
  for (size_t i = 0; i < gu; ++i) w13[i] = UNIFORM(0.0625f);
  for (size_t i = 0; i < dn; ++i) w2[i] = UNIFORM(0.088f);
  char msg[1024];

  if (!run(h, TDMSIM_BACKEND_GPU, x, NULL, NULL, NULL, NULL, T, yg, n, msg, sizeof msg)) {
    printf("capi_gpu_check: FAIL (the gpu backend did not run: %s)\n", msg);
    return strstr(msg, "BACKEND_UNAVAILABLE") != NULL ? 3 : 1;
  }
  int ok = 1;
  char note[1024];
  snprintf(note, sizeof note, "%s", msg);
  if (!run(h, TDMSIM_BACKEND_EMULATE, x, NULL, NULL, NULL, NULL, T, ye, n, msg, sizeof msg)) {
    printf("capi_gpu_check: FAIL (emulate: %s)\n", msg);
    return 1;
  }
  ok &= compare("seeded", ye, yg, n, strict, note);

  if (!run(h, TDMSIM_BACKEND_GPU, x, w13, w2, NULL, NULL, T, yg, n, msg, sizeof msg) ||
      !run(h, TDMSIM_BACKEND_EMULATE, x, w13, w2, NULL, NULL, T, ye, n, note, sizeof note)) {
    printf("capi_gpu_check: FAIL (host weights: %s)\n", msg);
    return 1;
  }
  ok &= compare("host", ye, yg, n, strict, msg);

  /* device weights: cudaMalloc and cudaMemcpy from the CUDA runtime */
  void *rt = dlopen("libcudart.so", RTLD_NOW);
  if (rt == NULL) rt = dlopen("/usr/local/cuda/lib64/libcudart.so", RTLD_NOW);
  if (rt == NULL) {
    printf("device  FAIL: libcudart.so not found (%s)\n", dlerror());
    ok = 0;
  } else {
    malloc_fn cu_malloc = NULL;
    memcpy_fn cu_memcpy = NULL;
    free_fn cu_free = NULL;
    /* POSIX's way of taking a function from dlsym (C forbids the plain cast) */
    *(void **)&cu_malloc = dlsym(rt, "cudaMalloc");
    *(void **)&cu_memcpy = dlsym(rt, "cudaMemcpy");
    *(void **)&cu_free = dlsym(rt, "cudaFree");
    void *dw13 = NULL, *dw2 = NULL;
    if (cu_malloc == NULL || cu_memcpy == NULL || cu_free == NULL ||
        cu_malloc(&dw13, sizeof(float) * gu) != 0 || cu_malloc(&dw2, sizeof(float) * dn) != 0 ||
        cu_memcpy(dw13, w13, sizeof(float) * gu, 1 /* host to device */) != 0 ||
        cu_memcpy(dw2, w2, sizeof(float) * dn, 1) != 0) {
      printf("device  FAIL: cannot allocate or fill device weights\n");
      ok = 0;
    } else if (!run(h, TDMSIM_BACKEND_GPU, x, NULL, NULL, dw13, dw2, T, yg, n, msg, sizeof msg)) {
      printf("device  FAIL: %s\n", msg);
      ok = 0;
    } else {
      ok &= compare("device", ye, yg, n, strict, msg); /* ye: the host-weights emulation */
    }
    if (dw13 != NULL) cu_free(dw13);
    if (dw2 != NULL) cu_free(dw2);
  }
  tdmsim_moe_descriptor_destroy(h);
  tdmsim_stream_destroy(s);
  free(x), free(ye), free(yg), free(w13), free(w2);
  if (ok) {
    printf("capi_gpu_check: PASS\n");
    return 0;
  }
  printf("capi_gpu_check: FAIL (y outside the tolerance above)\n");
  return 1;
}
