/* hipext_moe.h: seed 000's hipExt names for tdmsim's C API (tdmsim_moe.h).
 *
 * Code written against the seed's sketch of a TDM MoE extension compiles with
 * these aliases; docs/api.md lists them and where tdmsim differs (the
 * descriptor carries struct_size and a scenario YAML; calls return
 * tdmsim_status; a stream comes from tdmsim_stream_create, not HIP).
 *
 *   seed name                          tdmsim name
 *   td_moe_descriptor                  tdmsim_moe_descriptor
 *   hipMoeDescriptor_t                 tdmsim_moe_t
 *   hipExtMoeDescriptorCreate          tdmsim_moe_descriptor_create
 *   hipExtMoeDescriptorDestroy         tdmsim_moe_descriptor_destroy
 *   hipExtStreamBindMoeDescriptor      tdmsim_stream_bind_moe_descriptor
 *   hipExtMoeSetCustomRouting          tdmsim_moe_set_custom_routing
 *   custom_routing_fn_t                tdmsim_routing_fn
 *   tdm_routing_policy_t, TDM_ROUTE_*  tdmsim_routing_policy, TDMSIM_ROUTE_*
 *   hipExtMoeGetCapabilities           tdmsim_get_capabilities
 *   hipError_t, hipStream_t            tdmsim_status, tdmsim_stream_t
 *
 * hipError_t and hipStream_t are HIP's own types: define
 * TDMSIM_HIPEXT_NO_HIP_TYPES before including this header in code that also
 * includes hip/hip_runtime.h (the functions then take tdmsim_status /
 * tdmsim_stream_t as usual). */
#ifndef TDMSIM_HIPEXT_MOE_H
#define TDMSIM_HIPEXT_MOE_H

#include "tdmsim/tdmsim_moe.h"

typedef tdmsim_moe_descriptor td_moe_descriptor;
typedef tdmsim_moe_t hipMoeDescriptor_t;
typedef tdmsim_routing_fn custom_routing_fn_t;
typedef tdmsim_routing_policy tdm_routing_policy_t;
#ifndef TDMSIM_HIPEXT_NO_HIP_TYPES
typedef tdmsim_status hipError_t;
typedef tdmsim_stream_t hipStream_t;
#endif

#define TDM_ROUTE_LOAD_BALANCE TDMSIM_ROUTE_LOAD_BALANCE
#define TDM_ROUTE_CAPACITY_FIRST TDMSIM_ROUTE_CAPACITY_FIRST
#define TDM_ROUTE_LOW_LATENCY TDMSIM_ROUTE_LOW_LATENCY
#define TDM_ROUTE_CUSTOM TDMSIM_ROUTE_CUSTOM

#define hipExtMoeDescriptorCreate tdmsim_moe_descriptor_create
#define hipExtMoeDescriptorDestroy tdmsim_moe_descriptor_destroy
#define hipExtStreamBindMoeDescriptor tdmsim_stream_bind_moe_descriptor
#define hipExtMoeSetCustomRouting tdmsim_moe_set_custom_routing
#define hipExtMoeGetCapabilities tdmsim_get_capabilities

#endif /* TDMSIM_HIPEXT_MOE_H */
