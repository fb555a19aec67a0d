/* tdmsim_moe.h: the MoE descriptor API of tdmsim for C (C99) and C++.
 *
 * What a driver for a hardware TDM MoE descriptor unit would expose, over
 * tdmsim's backends: a descriptor (layer shape and routing policy, read from a
 * scenario YAML), a stream it is bound to, an optional routing callback, and
 * forward() on host activations. Backends:
 *   TDMSIM_BACKEND_EMULATE   the functional emulator (bit-exact, any machine);
 *   TDMSIM_BACKEND_SIMULATE  the emulator's output plus the layer's predicted
 *                            time on the descriptor's machine YAML, software
 *                            path and (machines with a TDM unit) TDM path;
 *   TDMSIM_BACKEND_GPU       tdmsim's HIP kernels on a GPU, through the optional
 *                            libtdmsim_gpu.so (loaded at run time); without it or
 *                            without a GPU: reported unavailable (with why), and
 *                            run as emulate when the caller allows fallback.
 * docs/api.md is the reference; tdmsim/hipext_moe.h offers the hipExt names.
 *
 * Every function returns a tdmsim_status; on failure tdmsim_last_error()
 * says why (a YAML problem names file, line and key, as the tdmsim CLI does).
 * Nothing aborts and no C++ exception leaves the library. Handles may be used
 * from any thread, one thread at a time each. The simulate backend runs each
 * simulation in a forked child process. */
#ifndef TDMSIM_MOE_H
#define TDMSIM_MOE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TDMSIM_API __attribute__((visibility("default")))
#else
#define TDMSIM_API
#endif

/* The descriptor struct layout this header describes. */
#define TDMSIM_MOE_DESCRIPTOR_VERSION 1u

typedef enum tdmsim_status {
  TDMSIM_OK = 0,
  TDMSIM_ERR_INVALID_ARGUMENT = 1,    /* a NULL pointer, a wrong size, a bad field */
  TDMSIM_ERR_VERSION = 2,             /* struct_size or version this library does not know */
  TDMSIM_ERR_CONFIG = 3,              /* a YAML file failed to load or validate */
  TDMSIM_ERR_NOT_BOUND = 4,           /* forward before binding to a stream */
  TDMSIM_ERR_ROUTING_MISSING = 5,     /* policy custom without a routing callback or routing */
  TDMSIM_ERR_BACKEND_UNAVAILABLE = 6, /* backend missing and fallback not allowed */
  TDMSIM_ERR_DESCRIPTOR = 7,          /* the layer cannot be written as a valid MoE descriptor */
  TDMSIM_ERR_BACKEND_FAILED = 8,      /* the backend failed (e.g. a layer the model cannot simulate) */
  TDMSIM_ERR_INTERNAL = 9             /* anything else (out of memory, a bug) */
} tdmsim_status;

typedef enum tdmsim_routing_policy {
  TDMSIM_ROUTE_LOAD_BALANCE = 0,
  TDMSIM_ROUTE_CAPACITY_FIRST = 1,
  TDMSIM_ROUTE_LOW_LATENCY = 2,
  TDMSIM_ROUTE_CUSTOM = 3, /* needs a routing callback or precomputed routing */
  TDMSIM_ROUTE_DYNAMIC = 4 /* tdmsim's own: picks per descriptor (docs/moe-timing.md) */
} tdmsim_routing_policy;

typedef enum tdmsim_backend {
  TDMSIM_BACKEND_EMULATE = 0,
  TDMSIM_BACKEND_SIMULATE = 1,
  TDMSIM_BACKEND_GPU = 2
} tdmsim_backend;

/* The layer and its policy. tdmsim_moe_descriptor_init() (below) zeroes it and
 * sets struct_size and version; then set scenario. Zero in a shape field
 * keeps the scenario model's value. */
typedef struct tdmsim_moe_descriptor {
  uint32_t struct_size;       /* sizeof(tdmsim_moe_descriptor) */
  uint32_t version;           /* TDMSIM_MOE_DESCRIPTOR_VERSION */
  uint32_t num_experts;       /* routed experts (model key experts) */
  uint32_t experts_per_token; /* top-k (model key top_k) */
  uint32_t hidden_size;       /* H (model key hidden_size) */
  uint32_t intermediate_size; /* I per expert (model key intermediate_size) */
  uint64_t expert_base_addr;  /* device address the descriptors give the expert
                                 weights; 0: 0x100000000; else a multiple of 256 */
  uint32_t expert_stride;     /* 0 only: tdmsim packs each expert's weights and
                                 writes that stride into the descriptors */
  uint32_t routing_policy;    /* tdmsim_routing_policy */
  const char *scenario;       /* scenario YAML: path, or a name under the workloads
                                 roots; gives model, dtype, seed, routing, kernel */
  const char *machine;        /* machine YAML (path or name) replacing the
                                 scenario's; NULL keeps it ("" is refused) */
  uint64_t seed;              /* 0: the scenario's seed (expert weights, router) */
  uint32_t reserved[8];       /* must be zero */
} tdmsim_moe_descriptor;

typedef struct tdmsim_moe_s *tdmsim_moe_t;       /* a created descriptor */
typedef struct tdmsim_stream_s *tdmsim_stream_t; /* an ordered launch queue */

/* Routing callback: fill expert_ids[0..top_k) (distinct, < num_experts) and
 * weights[0..top_k) for `token`, whose activations are x_row[0..hidden).
 * Return 0, or nonzero to fail the forward (TDMSIM_ERR_INVALID_ARGUMENT). */
typedef int (*tdmsim_routing_fn)(uint32_t token, const float *x_row, uint32_t hidden,
                                 uint32_t top_k, uint32_t *expert_ids, float *weights,
                                 void *user_data);

/* What this library can do. */
typedef struct tdmsim_capabilities {
  uint32_t struct_size;           /* set by the caller: sizeof(tdmsim_capabilities) */
  uint32_t api_version;           /* TDMSIM_MOE_DESCRIPTOR_VERSION */
  uint32_t backends;              /* bit (1u << tdmsim_backend) per backend available */
  uint32_t policies;              /* bit (1u << tdmsim_routing_policy) per policy */
  uint32_t descriptor_format_version; /* MoE descriptor format written (docs/descriptor-format.md) */
  uint32_t max_experts;           /* per descriptor */
  uint32_t max_experts_per_token;
  uint32_t max_tokens;
  uint32_t max_hidden;
  uint32_t custom_routing;        /* 1: routing callbacks honoured */
  uint32_t precomputed_routing;   /* 1: forward takes top-k ids and weights */
} tdmsim_capabilities;

/* The layer a descriptor runs, after the scenario and overrides. */
typedef struct tdmsim_moe_info {
  uint32_t struct_size; /* set by the caller */
  uint32_t num_experts;
  uint32_t experts_per_token;
  uint32_t hidden_size;
  uint32_t intermediate_size;
  uint32_t shared_experts;
  uint32_t routing_policy;
  uint32_t machine_has_tdm; /* 1: simulate also times the TDM path */
  uint64_t seed;
  char model[64];           /* model name */
  char machine[64];         /* machine name */
  char dtype[32];           /* activation dtype, as in the YAML */
  char activation[32];      /* silu, gelu, swiglu_oai */
} tdmsim_moe_info;

typedef struct tdmsim_forward_args {
  uint32_t struct_size;        /* sizeof(tdmsim_forward_args) */
  uint32_t tokens;             /* T > 0 */
  const float *x;              /* [T][H] host activations, finite; NULL: the scenario's seeded ones */
  const uint32_t *topk_ids;    /* optional [T][top_k] precomputed routing (global ids,
                                  distinct per token) */
  const float *topk_weights;   /* [T][top_k], finite, required with topk_ids */
  uint32_t backend;            /* tdmsim_backend */
  uint32_t allow_fallback;     /* nonzero: run emulate if `backend` is unavailable */
  /* The layer's weights (docs/api.md "Weights"). NULL: generated from the
   * descriptor's seed, as every backend generates them. fp32 host arrays,
   * quantised by tdmsim to the layer's weight dtype and scheme as its own
   * are. A struct_size of TDMSIM_FORWARD_ARGS_SIZE_V1 (a caller built before
   * these fields) reads them all as NULL. */
  const float *router_weights;         /* [E][H] gate (router) weights: logits = x W^T,
                                          then the model's gating; routes when
                                          no precomputed routing or callback does */
  const float *router_bias;            /* [E] added to the logits, or NULL */
  const float *router_correction_bias; /* [E] selection-only bias (DeepSeek-V3), or NULL */
  const float *expert_w13;             /* [E][2I][H]: per routed expert, gate rows
                                          [0, I) then up rows [I, 2I) */
  const float *expert_w2;              /* [E][H][I]: per routed expert, down */
  const void *d_expert_w13;            /* the same two as fp32 device pointers, read
                                          by the gpu backend only (in place of the */
  const void *d_expert_w2;             /* host ones, which a fallback then uses) */
} tdmsim_forward_args;

/* sizeof(tdmsim_forward_args) before the weight fields (API 1.0). */
#define TDMSIM_FORWARD_ARGS_SIZE_V1 offsetof(tdmsim_forward_args, router_weights)

/* One execution path's predicted time (simulate backend). */
typedef struct tdmsim_path_time {
  uint32_t simulated; /* 1 when this path ran */
  double total_s;     /* first launch to the last kernel's end */
  double routing_s;   /* routing stage (router kernels / the unit's routing stage) */
  double sort_s;      /* sort stage (software path) */
  double experts_s;   /* the rest: expert GEMMs, combine, launch gaps */
} tdmsim_path_time;

typedef struct tdmsim_forward_result {
  uint32_t struct_size; /* set by the caller: sizeof(tdmsim_forward_result) */
  uint32_t requested;   /* tdmsim_backend asked for */
  uint32_t ran;         /* tdmsim_backend that ran */
  uint32_t fell_back;   /* 1: ran != requested (message says why) */
  uint32_t tokens;
  uint32_t hidden;
  uint32_t descriptors;      /* MoE descriptors written (1 per kernel stage) */
  uint32_t descriptor_bytes; /* their encoded size, together */
  uint32_t kernel_stages;    /* 1: fused kernel; 2: gate/up then down (the gate/up
                                output is rounded to the layer dtype between them) */
  uint32_t block_m;          /* rows per token block of the sorted layout */
  uint32_t has_timing;       /* 1: the simulate backend ran (software, tdm below) */
  tdmsim_path_time software; /* today's fused-MoE kernels */
  tdmsim_path_time tdm;      /* the TDM MoE descriptor unit (machines with one) */
  double emulate_wall_s;     /* host time the emulator took */
  char message[512];         /* the fallback note (with why the backend is missing),
                                or the gpu backend's device and kernel time, else empty */
} tdmsim_forward_result;

/* Initialisers: each zeroes every field and sets struct_size to the size this
 * header describes (the descriptor's also sets version), which is what the
 * library checks first. Defined here, not in the library, so that struct_size
 * is the size the caller was compiled against. */
static inline void tdmsim_moe_descriptor_init(tdmsim_moe_descriptor *d) {
  memset(d, 0, sizeof *d);
  d->struct_size = (uint32_t)sizeof *d;
  d->version = TDMSIM_MOE_DESCRIPTOR_VERSION;
}
static inline void tdmsim_capabilities_init(tdmsim_capabilities *c) {
  memset(c, 0, sizeof *c);
  c->struct_size = (uint32_t)sizeof *c;
}
static inline void tdmsim_moe_info_init(tdmsim_moe_info *i) {
  memset(i, 0, sizeof *i);
  i->struct_size = (uint32_t)sizeof *i;
}
static inline void tdmsim_forward_args_init(tdmsim_forward_args *a) {
  memset(a, 0, sizeof *a);
  a->struct_size = (uint32_t)sizeof *a;
}
static inline void tdmsim_forward_result_init(tdmsim_forward_result *r) {
  memset(r, 0, sizeof *r);
  r->struct_size = (uint32_t)sizeof *r;
}

/* The last error on this thread ("" if none): valid until the next call. */
TDMSIM_API const char *tdmsim_last_error(void);
/* "TDMSIM_OK", "TDMSIM_ERR_VERSION", ... */
TDMSIM_API const char *tdmsim_status_name(tdmsim_status status);
TDMSIM_API const char *tdmsim_backend_name(tdmsim_backend backend);

TDMSIM_API tdmsim_status tdmsim_get_capabilities(tdmsim_capabilities *caps);

TDMSIM_API tdmsim_status tdmsim_stream_create(tdmsim_stream_t *stream);
TDMSIM_API tdmsim_status tdmsim_stream_destroy(tdmsim_stream_t stream);
/* Launches that ran on the stream. */
TDMSIM_API tdmsim_status tdmsim_stream_launches(tdmsim_stream_t stream, uint64_t *launches);

TDMSIM_API tdmsim_status tdmsim_moe_descriptor_create(const tdmsim_moe_descriptor *desc,
                                                      tdmsim_moe_t *handle);
TDMSIM_API tdmsim_status tdmsim_moe_descriptor_destroy(tdmsim_moe_t handle);
TDMSIM_API tdmsim_status tdmsim_moe_get_info(tdmsim_moe_t handle, tdmsim_moe_info *info);
/* A descriptor is bound to one stream at a time (binding again rebinds); it
 * keeps the stream alive, so either may be destroyed first. */
TDMSIM_API tdmsim_status tdmsim_stream_bind_moe_descriptor(tdmsim_stream_t stream,
                                                           tdmsim_moe_t handle);
/* Replaces the scenario's routing on every forward; fn NULL clears it. Not
 * from inside the callback while tdmsim_moe_forward runs (refused, as are a
 * forward and a destroy of the same descriptor from there). */
TDMSIM_API tdmsim_status tdmsim_moe_set_custom_routing(tdmsim_moe_t handle, tdmsim_routing_fn fn,
                                                       void *user_data);

/* Runs the layer; y receives [tokens][hidden] floats (y_len of them). */
TDMSIM_API tdmsim_status tdmsim_moe_forward(tdmsim_moe_t handle, const tdmsim_forward_args *args,
                                            float *y, size_t y_len,
                                            tdmsim_forward_result *result);

/* The last forward's simulated paths as JSON: an array of tdmsim run's
 * summary.json paths[] entries (stage times, utilization, time by cause;
 * docs/moe-timing.md); "[]" unless it ran the simulate backend. Owned by the
 * handle, valid until its next forward or destroy. */
TDMSIM_API tdmsim_status tdmsim_moe_last_timing_json(tdmsim_moe_t handle, const char **json);

/* Routed expert e's weights as the backends use them (quantised to the layer
 * dtype, as float): gate_up [2I][H] (gate rows, then up rows), down [H][I].
 * Either pointer may be NULL. Lets a caller compute its own reference. */
TDMSIM_API tdmsim_status tdmsim_moe_expert_weights(tdmsim_moe_t handle, uint32_t expert,
                                                   float *gate_up, float *down);

#ifdef __cplusplus
}
#endif

#endif /* TDMSIM_MOE_H */
