/* A stand-in for libtdmsim_gpu.so (kernels/runner/gpu_backend_abi.h), so the
 * C API's loading, refusal, fallback and call path are tested on a machine
 * without a GPU. $TDMSIM_GPU_STUB picks what it does:
 *   nodevice  the probe reports no GPU (the backend stays unavailable);
 *   fail      forward fails, naming the case's token count;
 *   copy      forward returns y = x + w13[0] (host or "device" weights: the
 *             stub reads both from host memory), reporting 1.5 us. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/runner/gpu_backend_abi.h"

static const char *mode(void) {
  const char *m = getenv("TDMSIM_GPU_STUB");
  return m != NULL ? m : "nodevice";
}

int tdmsim_gpu_backend_abi(void) { return TDMSIM_GPU_BACKEND_ABI; }

int tdmsim_gpu_backend_probe(char *message, size_t n) {
  if (strcmp(mode(), "nodevice") == 0) {
    snprintf(message, n, "no GPU device (stub)");
    return 1;
  }
  snprintf(message, n, "Stub GPU");
  return 0;
}

/* The case's `tokens` and `hidden` (case.txt, docs/gpu-kernels.md). */
static int read_case(const char *dir, unsigned *tokens, unsigned *hidden) {
  char path[4096], line[256];
  snprintf(path, sizeof path, "%s/case.txt", dir);
  FILE *f = fopen(path, "r");
  if (f == NULL) return 0;
  *tokens = *hidden = 0;
  while (fgets(line, sizeof line, f) != NULL) {
    sscanf(line, "tokens %u", tokens);
    sscanf(line, "hidden %u", hidden);
  }
  fclose(f);
  return *tokens > 0 && *hidden > 0;
}

int tdmsim_gpu_backend_forward(tdmsim_gpu_forward_call *call) {
  unsigned tokens = 0, hidden = 0;
  if (call->abi != TDMSIM_GPU_BACKEND_ABI || !read_case(call->case_dir, &tokens, &hidden)) {
    snprintf(call->error, sizeof call->error, "stub: no readable case");
    return 1;
  }
  if (strcmp(mode(), "fail") == 0) {
    snprintf(call->error, sizeof call->error, "stub: refused a case of %u tokens", tokens);
    return 1;
  }
  const float *w13 = call->d_w13 != NULL ? (const float *)call->d_w13 : call->w13;
  const float add = w13 != NULL ? w13[0] : 0.0f;
  for (size_t i = 0; i < (size_t)tokens * hidden; ++i) call->y[i] = call->x[i] + add;
  call->kernels_s = 1.5e-6;
  snprintf(call->device, sizeof call->device, "Stub GPU");
  return 0;
}
