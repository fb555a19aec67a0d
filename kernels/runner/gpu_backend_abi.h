/* The interface between libtdmsim (capi/gpu_backend.cpp, which loads it at
 * run time) and libtdmsim_gpu.so, the C API's gpu backend built from the HIP
 * kernels by scripts/build-gpu-runner.sh (docs/api.md "The gpu backend").
 * Plain C: the two sides are built by different compilers. */
#ifndef TDMSIM_GPU_BACKEND_ABI_H
#define TDMSIM_GPU_BACKEND_ABI_H

#include <stddef.h>
#include <stdint.h>

#define TDMSIM_GPU_BACKEND_ABI 1

typedef struct tdmsim_gpu_forward_call {
  uint32_t abi;          /* TDMSIM_GPU_BACKEND_ABI */
  const char *case_dir;  /* a GPU case (docs/gpu-kernels.md "Case files"): the plan */
  const float *x;        /* [T][H] host fp32 activations */
  const float *w13;      /* host fp32 [E_local][2I][H], or NULL */
  const float *w2;       /* host fp32 [E_local][H][I], or NULL */
  const void *d_w13;     /* the same on the device (read in place), or NULL */
  const void *d_w2;
  float *y;              /* out: [T][H] host fp32 */
  double kernels_s;      /* out: the layer's kernels (zero y, sort, expert stages), one run */
  char device[128];      /* out: the device's name */
  char error[1024];      /* out: why, when the call returns nonzero */
} tdmsim_gpu_forward_call;

/* TDMSIM_GPU_BACKEND_ABI of the library. */
typedef int (*tdmsim_gpu_backend_abi_fn)(void);
/* 0 when a GPU is usable; `message` (n bytes) gets its name, or why not. */
typedef int (*tdmsim_gpu_backend_probe_fn)(char *message, size_t n);
/* Runs the layer; 0 on success, else call->error says why. */
typedef int (*tdmsim_gpu_backend_forward_fn)(tdmsim_gpu_forward_call *call);

#endif /* TDMSIM_GPU_BACKEND_ABI_H */
