/*===- cgc/onnxruntime_ep.h - cgc's ONNX Runtime execution provider -------===*
 *
 * libcgc_onnxruntime_ep.so is an ONNX Runtime plugin execution provider
 * library (CreateEpFactories / ReleaseEpFactory): register it with
 * OrtApi::RegisterExecutionProviderLibrary, pick the OrtEpDevice whose EP
 * name is CGC_ORT_EP_NAME and append it with
 * SessionOptionsAppendExecutionProvider_V2 (docs/onnxruntime.md).
 *
 * This header holds what an application needs beyond ONNX Runtime's own
 * headers: the EP's name, its option keys, the extra external memory handle
 * types it imports, and the plugin's counters.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_ONNXRUNTIME_EP_H
#define CGC_ONNXRUNTIME_EP_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The EP name (OrtEpDevice, session EP assignment, EPContext "source"). */
#define CGC_ORT_EP_NAME "cgc"

/* EP options (the key/value pairs of SessionOptionsAppendExecutionProvider_V2;
 * ONNX Runtime stores them as "ep.cgc.<key>" session entries). */
/* Worker threads of the device (cgc_device_options_t::device_threads); "0":
 * the driver's default. */
#define CGC_ORT_EP_OPTION_THREADS "threads"
/* The driver's own configuration (cgc_device_options_t::driver_options). */
#define CGC_ORT_EP_OPTION_DRIVER_OPTIONS "driver_options"
/* "1": claim only a whole model: fail session creation naming the first
 * node cgc cannot compile instead of leaving nodes to other EPs. */
#define CGC_ORT_EP_OPTION_REQUIRE_ALL "require_all"
/* "1" (the default): claim subgraphs the compiler can compile only with the
 * values of some of their inputs (a Reshape's shape, a Slice's starts given
 * at run time); they are compiled when they run, per value (8 cached).
 * "0": leave them to other EPs. */
#define CGC_ORT_EP_OPTION_VALUE_SPECIALIZATION "value_specialization"
/* Iterations a Loop steered at run time is compiled for
 * (cgc_compile_options_t::max_loop_iterations); "0": the default (64). */
#define CGC_ORT_EP_OPTION_MAX_LOOP_ITERATIONS "max_loop_iterations"

/* External memory handle types beyond ORT's OrtExternalMemoryHandleType
 * (values outside ORT's own range, which ORT passes through unchanged):
 *   DMA_BUF: native_handle holds a Linux dma-buf file descriptor
 *            ((void *)(intptr_t)fd), imported by mapping it.
 *   HOST_ALLOCATION: native_handle is a host pointer to size_bytes bytes
 *            that stay valid while the import lives (ORT 1.30 names this
 *            value 4; the same value is accepted here). */
#define CGC_ORT_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION 4
#define CGC_ORT_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF 0x43470001

/* What the plugin did in this process, to check zero-copy and EPContext
 * claims from an application or a test. */
typedef struct cgc_ort_ep_stats_t {
  uint64_t compiles;            /* ONNX subgraphs compiled by Compile/Compute */
  uint64_t capability_compiles; /* trial compilations by GetCapability */
  uint64_t context_loads;       /* compiled models loaded from EPContext nodes */
  uint64_t runs;                /* Compute calls */
  uint64_t tensors_copied;      /* tensors the plugin's data transfer copied */
  uint64_t bytes_copied;        /* their bytes */
  uint64_t run_ns;              /* time in cgc_context_run (submit to done) */
} cgc_ort_ep_stats_t;

/* Exported by libcgc_onnxruntime_ep.so (find it with dlsym on the library
 * ONNX Runtime loaded). */
void cgc_ort_ep_stats(cgc_ort_ep_stats_t *out_stats);
typedef void (*cgc_ort_ep_stats_fn)(cgc_ort_ep_stats_t *out_stats);

#ifdef __cplusplus
}
#endif

#endif /* CGC_ONNXRUNTIME_EP_H */
