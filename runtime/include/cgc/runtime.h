/*===- cgc/runtime.h - The DXCGC runtime: C API -----------------------------===*
 *
 * Loads a compiled model (`cgc-compile model.onnx -o model.cgc`), compiles
 * each of its partitions into a D3D12 state object (or compute pipeline) in
 * parallel, maps its constants in place, records the command list once and
 * replays it on every run; imports application buffers and timeline
 * semaphores shared as file descriptors (zero copy). No MLIR is needed.
 *
 * Conventions (docs/runtime.md):
 *   - Every fallible function returns a cgc_status_t: NULL means success;
 *     otherwise the caller owns the status and frees it with
 *     cgc_status_free. Messages name the thing (file, input, bind point).
 *   - Objects are created by `cgc_<type>_create` / `_load` / `_allocate` /
 *     `_import` and released by `cgc_<type>_release`, which drops the
 *     caller's reference. Objects keep what they depend on alive (a context
 *     its model, a model its device), so they may be released in any order.
 *     Release functions accept NULL.
 *   - Threading: a device, model, importer or stream may be used from many
 *     threads at once; one context is used by one thread at a time (make one
 *     context per concurrent run: each has its own scratch memory).
 *   - Bad input never crashes: a truncated or corrupt file, a newer major
 *     version, a wrong shape, dtype or count, a buffer too small are errors.
 *   - Linux: external handles are file descriptors.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_RUNTIME_H
#define CGC_RUNTIME_H

#include "cgc/dtype.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define CGC_RUNTIME_API __attribute__((visibility("default")))
#else
#define CGC_RUNTIME_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===*
 * Status
 *===----------------------------------------------------------------------===*/

typedef enum cgc_status_code_t {
  CGC_STATUS_OK = 0,
  /* A bad argument: a null pointer, a wrong shape, dtype or count. */
  CGC_STATUS_INVALID_ARGUMENT = 1,
  /* A file, an input or output name that does not exist. */
  CGC_STATUS_NOT_FOUND = 2,
  /* An index out of range, a buffer too small for a tensor. */
  CGC_STATUS_OUT_OF_RANGE = 3,
  /* A truncated or corrupt compiled model. */
  CGC_STATUS_DATA_LOSS = 4,
  /* A compiled model from a newer major version (of the container or IR). */
  CGC_STATUS_INCOMPATIBLE = 5,
  /* A capability this runtime or device does not have (a handle type). */
  CGC_STATUS_UNIMPLEMENTED = 6,
  /* The object is not in a state for the call (read-only memory bound as an
   * output). */
  CGC_STATUS_FAILED_PRECONDITION = 7,
  CGC_STATUS_RESOURCE_EXHAUSTED = 8,
  /* A wait timed out. */
  CGC_STATUS_DEADLINE_EXCEEDED = 9,
  /* The device failed while executing (its removed reason is in the
   * message). */
  CGC_STATUS_DEVICE_LOST = 10,
  /* The driver refused a partition or a command list. */
  CGC_STATUS_INTERNAL = 11,
} cgc_status_code_t;

typedef struct cgc_status_s *cgc_status_t;

CGC_RUNTIME_API cgc_status_code_t cgc_status_code(cgc_status_t status);
/* The message ("" for NULL); valid until the status is freed. */
CGC_RUNTIME_API const char *cgc_status_message(cgc_status_t status);
/* "OK", "INVALID_ARGUMENT", ... */
CGC_RUNTIME_API const char *cgc_status_code_name(cgc_status_code_t code);
CGC_RUNTIME_API void cgc_status_free(cgc_status_t status);

/* The runtime's version, "0.1.0". */
CGC_RUNTIME_API const char *cgc_runtime_version(void);

/*===----------------------------------------------------------------------===*
 * Devices
 *===----------------------------------------------------------------------===*/

typedef struct cgc_device_s cgc_device_t;

typedef struct cgc_device_options_t {
  /* The D3D12 driver: a name ("cpu") or a path; NULL: the default
   * ($CGC_D3D12_DRIVER, else "cpu"). */
  const char *driver;
  /* Validate every dispatch with the D3D12 debug layer. */
  bool debug_layer;
  /* Threads compiling partitions while a model loads; 0: one per core. At
   * most 1024 (cgc::kMaxThreads): more is CGC_STATUS_INVALID_ARGUMENT. */
  uint32_t compile_threads;
  /* Worker threads of the CPU driver; 0: its default (one per core,
   * or $CGC_CPU_THREADS). At most 1024, as compile_threads. Passed
   * to the driver as "threads=N" before driver_options. */
  uint32_t device_threads;
  /* The driver's configuration of this device, the driver's own text; for
   * the CPU driver "name=value,..." of its kernel and scheduling
   * choices (docs/runtime.md, "Driver options"), e.g. "winograd=0,spin-us=0".
   * NULL or empty: its defaults. A setting the driver does not know fails
   * cgc_device_create with the driver's message. */
  const char *driver_options;
} cgc_device_options_t;

CGC_RUNTIME_API void cgc_device_options_init(cgc_device_options_t *options);

/* Registers, for the process, a state object database and the precompiled
 * databases compiled from it (cgc-soc; docs/precompilation.md): models
 * loaded afterwards on devices whose driver matches a database create their
 * MLIR programs from it instead of compiling them (cgc_model_stats_t::
 * database_programs). CGC_STATUS_INVALID_ARGUMENT naming the file for one
 * that cannot be opened or is not such a database. The environment
 * variable CGC_D3D12_PRECOMPILED_DATABASES="SODB=PSDB[,PSDB][;...]" does the
 * same when the first device is created. */
CGC_RUNTIME_API cgc_status_t cgc_register_precompiled_databases(
    const char *state_object_database, size_t count, const char *const *precompiled_databases);
/* options may be NULL for the defaults. */
CGC_RUNTIME_API cgc_status_t cgc_device_create(const cgc_device_options_t *options,
                                               cgc_device_t **out_device);
CGC_RUNTIME_API void cgc_device_release(cgc_device_t *device);
/* The ID3D12Device the runtime uses (borrowed), to share memory and fences
 * with D3D12 code of the application. */
CGC_RUNTIME_API void *cgc_device_d3d12(cgc_device_t *device);
/* Whether the device was removed (a run failed: docs/runtime.md, "Run
 * errors"); runs on it fail from then on. */
CGC_RUNTIME_API bool cgc_device_lost(cgc_device_t *device);

/*===----------------------------------------------------------------------===*
 * Streams: an in-order queue of runs, waits and signals (a D3D12 command
 * queue). Work on different streams may run concurrently.
 *===----------------------------------------------------------------------===*/

typedef struct cgc_stream_s cgc_stream_t;

CGC_RUNTIME_API cgc_status_t cgc_stream_create(cgc_device_t *device, cgc_stream_t **out_stream);
CGC_RUNTIME_API void cgc_stream_release(cgc_stream_t *stream);
/* Blocks until everything submitted so far has executed; timeout in
 * milliseconds (UINT32_MAX: forever). */
CGC_RUNTIME_API cgc_status_t cgc_stream_synchronize(cgc_stream_t *stream, uint32_t timeout_ms);

/*===----------------------------------------------------------------------===*
 * Models
 *===----------------------------------------------------------------------===*/

typedef struct cgc_model_s cgc_model_t;

typedef struct cgc_model_options_t {
  /* Called after each partition is compiled (from the compiling threads,
   * one call at a time): `done` of `total`, and the partition's name. */
  void (*progress)(void *user_data, uint32_t done, uint32_t total, const char *program);
  void *progress_user_data;
  /* Do not give the driver the model's precompiled programs: it compiles
   * every MLIR program from its bytecode (for testing and debugging; the
   * environment variable CGC_NO_PRECOMPILED=1 does the same). */
  bool ignore_precompiled;
} cgc_model_options_t;

/* Maps the file, validates it (digest, versions, plan), creates every
 * partition in parallel and maps the constants in place. An MLIR program
 * that the compiler precompiled is handed to the driver with its precompiled
 * program (a cached blob, docs/d3d12.md), which the driver uses instead of
 * compiling the bytecode when it was made by its own compiler;
 * cgc_model_stats says how many were. options may be NULL. */
CGC_RUNTIME_API cgc_status_t cgc_model_load_file(cgc_device_t *device, const char *path,
                                                 const cgc_model_options_t *options,
                                                 cgc_model_t **out_model);
/* The same from bytes in memory (copied once into page-aligned memory, which
 * the constants are then used from). */
CGC_RUNTIME_API cgc_status_t cgc_model_load_memory(cgc_device_t *device, const void *data,
                                                   size_t size,
                                                   const cgc_model_options_t *options,
                                                   cgc_model_t **out_model);
CGC_RUNTIME_API void cgc_model_release(cgc_model_t *model);

/*===----------------------------------------------------------------------===*
 * Compiling ONNX models for a device (the spec's JIT-only DXCGC inside an
 * application). The compiler asks the device for its MLIR programs tier and
 * MLIR interfaces, takes its driver's declared patterns through
 * MLIR_EXCHANGE, sends the specialization requests through it, and gives the
 * rest to the fallback target (all of it when the device declares nothing).
 * The compiler is a module the runtime loads on first use
 * (libcgc_compiler.so beside libcgc_runtime.so): applications that only
 * load compiled models never map MLIR. Without it, compiling fails with
 * CGC_STATUS_UNIMPLEMENTED naming the missing file.
 *===----------------------------------------------------------------------===*/

typedef struct cgc_compile_options_t {
  /* "NAME=D0xD1x..." static shapes for symbolic inputs. */
  const char *const *input_shapes;
  size_t input_shape_count;
  /* "NAME=FILE.pb": inputs that determine shapes, bound to constants. */
  const char *const *freeze_inputs;
  size_t freeze_input_count;
  /* More compilation targets (cgc-compile's --target values), in priority
   * order after the device's own; the fallback target is always last. */
  const char *const *targets;
  size_t target_count;
  /* Do not ask the device for its patterns: compile for `targets` and the
   * fallback target only. */
  bool no_device_patterns;
  /* Called with messages for the user: the device and its target, what each
   * target claimed ("targets claimed:\n  cpu: 53 subgraphs, ..."). */
  void (*message)(void *user_data, const char *text);
  /* Called when a stage starts: "importing", "lowering", "packaging". */
  void (*progress)(void *user_data, const char *stage);
  void *message_user_data; /* passed to all three */
  /* When compiling fails: called once with the name of each ONNX node an
   * error points at (what an integration needs to leave those nodes to
   * another executor, e.g. the ONNX Runtime execution provider). */
  void (*error_node)(void *user_data, const char *node);
  /* Allow outputs whose number of rows depends on the values
   * (NonMaxSuppression's selected indices; without this such a model does
   * not compile, naming the node). Such an output has its upper bound of
   * rows; cgc_model_output_rows_from names the extra output holding the
   * count, and cgc_context_output_rows gives it after a run. */
  bool data_dependent_rows;
  /* Iterations a Loop whose trip count or condition is computed at run time
   * is compiled for (each predicated on the run's values); a run that needs
   * more fails naming the Loop. 0: the default (64). At most 4096. */
  int64_t max_loop_iterations;
} cgc_compile_options_t;

CGC_RUNTIME_API void cgc_compile_options_init(cgc_compile_options_t *options);

/* A compiled model's bytes (for cgc_model_load_memory or a .cgc file). */
typedef struct cgc_blob_s cgc_blob_t;
CGC_RUNTIME_API const void *cgc_blob_data(const cgc_blob_t *blob);
CGC_RUNTIME_API size_t cgc_blob_size(const cgc_blob_t *blob);
CGC_RUNTIME_API void cgc_blob_release(cgc_blob_t *blob);

/* Compiles the binary ONNX model in `data` (`size` bytes) for `device`.
 * `name` labels it in messages and gives the directory of its external data
 * (NULL: "model.onnx", no external data). options may be NULL. Errors name
 * the ONNX node (CGC_STATUS_INVALID_ARGUMENT). */
CGC_RUNTIME_API cgc_status_t cgc_model_compile_onnx(cgc_device_t *device, const void *data,
                                                    size_t size, const char *name,
                                                    const cgc_compile_options_t *options,
                                                    cgc_blob_t **out_compiled);
/* The same for a file (binary ONNX, or ONNX/protobuf text by extension). */
CGC_RUNTIME_API cgc_status_t cgc_model_compile_onnx_file(cgc_device_t *device, const char *path,
                                                         const cgc_compile_options_t *options,
                                                         cgc_blob_t **out_compiled);
/* Models compiled per set of input shapes. An ONNX model whose inputs have
 * symbolic dimensions is compiled for concrete shapes; a shape cache keeps
 * the ONNX bytes and options and compiles and loads the model on the first
 * request for each set of shapes, keeping the last `capacity` models (0: 8;
 * at most 1024), the least recently used evicted first. `options` as for
 * cgc_model_compile_onnx (its input_shapes apply to inputs a request does
 * not name), `model_options` as for cgc_model_load_memory; both are copied
 * (the callbacks and user data they point at must outlive the cache). */
typedef struct cgc_shape_cache_s cgc_shape_cache_t;
CGC_RUNTIME_API cgc_status_t cgc_shape_cache_create(cgc_device_t *device, const void *data,
                                                    size_t size, const char *name,
                                                    const cgc_compile_options_t *options,
                                                    const cgc_model_options_t *model_options,
                                                    size_t capacity,
                                                    cgc_shape_cache_t **out_cache);
/* Models it returned stay valid after it is released. */
CGC_RUNTIME_API void cgc_shape_cache_release(cgc_shape_cache_t *cache);
/* The model for these input shapes ("NAME=D0xD1x...", e.g. "ids=1x128"),
 * compiled and loaded on the first request for them: a new reference,
 * released with cgc_model_release. The key is the set of shapes, so a
 * request naming all inputs and one naming only the symbolic ones are
 * different entries. Thread-safe; one compilation at a time per cache.
 * Compilation errors as cgc_model_compile_onnx's. */
CGC_RUNTIME_API cgc_status_t cgc_shape_cache_model(cgc_shape_cache_t *cache,
                                                   const char *const *input_shapes, size_t count,
                                                   cgc_model_t **out_model);
/* How many models it compiled so far and how many it holds. */
CGC_RUNTIME_API void cgc_shape_cache_stats(cgc_shape_cache_t *cache, size_t *out_compilations,
                                           size_t *out_held);

/* What a device offers the compiler: its MLIR programs tier, the target its
 * driver's declaration names and the patterns in it (asked through
 * MLIR_EXCHANGE by the compiler module, so CGC_STATUS_UNIMPLEMENTED without
 * it). Strings are valid while the device lives. */
typedef struct cgc_device_info_t {
  const char *driver;      /* as named at creation, or "default" */
  const char *mlir_tier;   /* "2.0", "1.0" or "NOT_SUPPORTED" */
  const char *target;      /* NULL when the driver declares no pattern */
  size_t pattern_count;
  const char *const *patterns;
  const char *unavailable; /* why its patterns cannot be used; "" if they can */
} cgc_device_info_t;
CGC_RUNTIME_API cgc_status_t cgc_device_info(cgc_device_t *device, cgc_device_info_t *out_info);

/* The D3D12 drivers found (libcgc_driver_*.so beside the D3D12 layer, and
 * $CGC_D3D12_DRIVER): their count and paths (valid for the process). */
CGC_RUNTIME_API size_t cgc_driver_count(void);
CGC_RUNTIME_API const char *cgc_driver_path(size_t index);

/* The compiler module this runtime loads (its path), whether or not it
 * exists. */
CGC_RUNTIME_API const char *cgc_compiler_module_path(void);

/* A model input or output. Pointers are valid while the model lives. */
typedef struct cgc_tensor_info_t {
  const char *name;
  cgc_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
  uint64_t bytes;
} cgc_tensor_info_t;

CGC_RUNTIME_API size_t cgc_model_input_count(const cgc_model_t *model);
CGC_RUNTIME_API size_t cgc_model_output_count(const cgc_model_t *model);
CGC_RUNTIME_API cgc_status_t cgc_model_input_info(const cgc_model_t *model, size_t index,
                                                  cgc_tensor_info_t *out_info);
CGC_RUNTIME_API cgc_status_t cgc_model_output_info(const cgc_model_t *model, size_t index,
                                                   cgc_tensor_info_t *out_info);
CGC_RUNTIME_API cgc_status_t cgc_model_find_input(const cgc_model_t *model, const char *name,
                                                  size_t *out_index);
CGC_RUNTIME_API cgc_status_t cgc_model_find_output(const cgc_model_t *model, const char *name,
                                                   size_t *out_index);
/* Data-dependent rows (a model compiled with data_dependent_rows): output
 * `index`, whose dimension 0 is then an upper bound, has only as many valid
 * rows as the one int64 of output *out_output holds after a run. Sets
 * *out_output to -1 for an output whose rows are all valid. */
CGC_RUNTIME_API cgc_status_t cgc_model_output_rows_from(const cgc_model_t *model, size_t index,
                                                        int64_t *out_output);

typedef struct cgc_model_stats_t {
  uint64_t load_ns;     /* the whole cgc_model_load_* call */
  uint64_t compile_ns;  /* compiling the partitions (wall clock) */
  uint32_t mlir_programs;   /* state objects (CreateStateObject) */
  uint32_t kernel_programs; /* compute pipelines (fallback kernels) */
  /* Of the MLIR programs: created from their precompiled program (the
   * driver's cached blob matched; nothing compiled), and compiled by the
   * driver at load. precompiled_rejected counts the compiled ones that had
   * a precompiled program the driver did not accept (made by another
   * compiler or driver build: docs/d3d12.md). */
  uint32_t precompiled_programs;
  uint32_t compiled_programs;
  uint32_t precompiled_rejected;
  /* True when the precompiled programs were not given to the driver
   * (cgc_model_options_t::ignore_precompiled, CGC_NO_PRECOMPILED=1). */
  bool precompiled_ignored;
  uint32_t dispatches;
  uint32_t barriers;
  uint64_t scratch_bytes;   /* per context */
  uint64_t constants_bytes;
  /* True when the constants are used in place from the mapped file
   * (OpenExistingHeapFromAddress), without a copy. */
  bool constants_in_place;
  uint64_t constants_address; /* GPU virtual address of the constants */
  /* Of the MLIR programs without a precompiled program in the model: created
   * from a registered precompiled database (nothing compiled), and those a
   * database held a stale value for (another compiler or bytecode: compiled;
   * counted in compiled_programs too). */
  uint32_t database_programs;
  uint32_t database_stale;
  /* The constants' preparation at load (weights transformed into the
   * driver's layouts, CGCD3D12PrepareMlirProgramConstantsWithDigests):
   * blocks mapped from a registered precompiled database (made offline by
   * cgc-soc prepare; nothing transformed) and computed at load, with their
   * bytes, and the time it took. */
  uint64_t prepared_blocks_mapped;
  uint64_t prepared_bytes_mapped;
  uint64_t prepared_blocks_computed;
  uint64_t prepared_bytes_computed;
  uint64_t prepare_ns;
} cgc_model_stats_t;

CGC_RUNTIME_API void cgc_model_stats(const cgc_model_t *model, cgc_model_stats_t *out_stats);

/*===----------------------------------------------------------------------===*
 * Tensors: typed views of device memory (runtime-allocated, application
 * memory, a D3D12 resource, or imported external memory).
 *===----------------------------------------------------------------------===*/

typedef struct cgc_tensor_s cgc_tensor_t;

typedef struct cgc_tensor_desc_t {
  cgc_dtype_t dtype;
  size_t rank;
  const int64_t *shape;
} cgc_tensor_desc_t;

/* Zeroed device memory the CPU can access (the device is cache-coherent
 * UMA). */
CGC_RUNTIME_API cgc_status_t cgc_tensor_allocate(cgc_device_t *device,
                                                 const cgc_tensor_desc_t *desc,
                                                 cgc_tensor_t **out_tensor);
/* A view of application memory (no copy); `data` must stay valid while the
 * tensor (and any run using it) lives. `size` must hold the tensor. */
CGC_RUNTIME_API cgc_status_t cgc_tensor_wrap_host(cgc_device_t *device,
                                                  const cgc_tensor_desc_t *desc, void *data,
                                                  size_t size, cgc_tensor_t **out_tensor);
/* A view of a buffer the application created on cgc_device_d3d12(device)
 * (an ID3D12Resource*), at a byte offset. */
CGC_RUNTIME_API cgc_status_t cgc_tensor_wrap_d3d12_resource(cgc_device_t *device,
                                                            const cgc_tensor_desc_t *desc,
                                                            void *resource, uint64_t offset,
                                                            cgc_tensor_t **out_tensor);
CGC_RUNTIME_API void cgc_tensor_release(cgc_tensor_t *tensor);

CGC_RUNTIME_API cgc_dtype_t cgc_tensor_dtype(const cgc_tensor_t *tensor);
CGC_RUNTIME_API size_t cgc_tensor_rank(const cgc_tensor_t *tensor);
CGC_RUNTIME_API const int64_t *cgc_tensor_shape(const cgc_tensor_t *tensor);
CGC_RUNTIME_API uint64_t cgc_tensor_bytes(const cgc_tensor_t *tensor);
/* The CPU address of the first element (NULL if the CPU cannot access it). */
CGC_RUNTIME_API void *cgc_tensor_data(cgc_tensor_t *tensor);
/* The GPU virtual address of the first element: what runs bind. */
CGC_RUNTIME_API uint64_t cgc_tensor_gpu_address(const cgc_tensor_t *tensor);

/*===----------------------------------------------------------------------===*
 * Contexts: one model's bindings, scratch memory and recorded command list.
 * One run of a context executes at a time (runs submitted to its stream
 * execute in order); make several contexts for concurrent runs.
 *===----------------------------------------------------------------------===*/

typedef struct cgc_context_s cgc_context_t;

/* stream: where runs are submitted; NULL: a stream of the context's own. */
CGC_RUNTIME_API cgc_status_t cgc_context_create(cgc_model_t *model, cgc_stream_t *stream,
                                                cgc_context_t **out_context);
/* Waits for the context's runs, then releases it. */
CGC_RUNTIME_API void cgc_context_release(cgc_context_t *context);
/* The stream runs are submitted to (borrowed). */
CGC_RUNTIME_API cgc_stream_t *cgc_context_stream(cgc_context_t *context);

/* Binds application memory to an input or output: runs read (write) it in
 * place. Its dtype and shape must equal the model's. NULL restores the
 * context's own buffer. The command list is recorded again on the next run
 * only if a bound address changed. */
CGC_RUNTIME_API cgc_status_t cgc_context_bind_input(cgc_context_t *context, size_t index,
                                                    cgc_tensor_t *tensor);
CGC_RUNTIME_API cgc_status_t cgc_context_bind_output(cgc_context_t *context, size_t index,
                                                     cgc_tensor_t *tensor);
/* The tensor an input or output is bound to (the context's own buffer if the
 * application bound none); borrowed. */
CGC_RUNTIME_API cgc_status_t cgc_context_input(cgc_context_t *context, size_t index,
                                               cgc_tensor_t **out_tensor);
CGC_RUNTIME_API cgc_status_t cgc_context_output(cgc_context_t *context, size_t index,
                                                cgc_tensor_t **out_tensor);
/* Copies into an input (out of an output), after the context's runs are
 * done. `size` must equal the tensor's bytes. These copies are counted in
 * cgc_context_stats_t::bytes_copied. */
CGC_RUNTIME_API cgc_status_t cgc_context_set_input_data(cgc_context_t *context, size_t index,
                                                        const void *data, size_t size);
CGC_RUNTIME_API cgc_status_t cgc_context_get_output_data(cgc_context_t *context, size_t index,
                                                         void *data, size_t size);
/* The valid rows of output `index` after the context's runs are done: its
 * dimension 0, or for data-dependent rows the count the run wrote (the
 * rows past it hold no result). DATA_LOSS if the count is outside [0,
 * dimension 0]; FAILED_PRECONDITION if the count's tensor is not
 * CPU-visible. */
CGC_RUNTIME_API cgc_status_t cgc_context_output_rows(cgc_context_t *context, size_t index,
                                                     int64_t *out_rows);

/* Submits a run to the context's stream (after the waits already queued
 * there) and returns. */
CGC_RUNTIME_API cgc_status_t cgc_context_submit(cgc_context_t *context);
/* Blocks until the context's submitted runs are done; DEVICE_LOST if one
 * failed, DEADLINE_EXCEEDED after timeout_ms (UINT32_MAX: forever). */
CGC_RUNTIME_API cgc_status_t cgc_context_wait(cgc_context_t *context, uint32_t timeout_ms);
/* submit + wait. */
CGC_RUNTIME_API cgc_status_t cgc_context_run(cgc_context_t *context);

typedef struct cgc_context_stats_t {
  uint64_t runs;         /* submitted */
  uint64_t recordings;   /* times the command list was recorded */
  uint64_t bytes_copied; /* tensor bytes the runtime copied (set/get data) */
  uint64_t last_run_ns;  /* submit to completion of the last waited run */
} cgc_context_stats_t;

CGC_RUNTIME_API void cgc_context_stats(const cgc_context_t *context,
                                       cgc_context_stats_t *out_stats);

/*===----------------------------------------------------------------------===*
 * External resources: the capability-object design of ONNX Runtime's D3D12
 * interop proposal (OrtExternalResourceImporter), on Linux file descriptors.
 * Imported memory is used in place: tensors over it are bound by address and
 * a run that reads and writes them copies no tensor bytes.
 *===----------------------------------------------------------------------===*/

typedef struct cgc_importer_s cgc_importer_t;
typedef struct cgc_external_memory_s cgc_external_memory_t;
typedef struct cgc_external_semaphore_s cgc_external_semaphore_t;

typedef enum cgc_external_memory_handle_type_t {
  /* A HANDLE from ID3D12Device::CreateSharedHandle on a heap created with
   * D3D12_HEAP_FLAG_SHARED (native_handle). */
  CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP = 0,
  /* The same for a committed resource (native_handle). */
  CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_RESOURCE = 1,
  /* A mappable file descriptor: a memfd, a /dev/shm file (fd). */
  CGC_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD = 2,
  /* A dma-buf file descriptor (fd). */
  CGC_EXTERNAL_MEMORY_HANDLE_TYPE_DMA_BUF = 3,
} cgc_external_memory_handle_type_t;

typedef enum cgc_external_memory_access_mode_t {
  CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE = 0,
  CGC_EXTERNAL_MEMORY_ACCESS_READ_ONLY = 1, /* inputs only: mapped read-only */
  CGC_EXTERNAL_MEMORY_ACCESS_WRITE_ONLY = 2,
} cgc_external_memory_access_mode_t;

#define CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION 1
typedef struct cgc_external_memory_descriptor_t {
  uint32_t version; /* CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION */
  cgc_external_memory_handle_type_t handle_type;
  void *native_handle; /* D3D12 handle types: the shared HANDLE */
  int fd;              /* OPAQUE_FD, DMA_BUF */
  uint64_t size_bytes;   /* bytes of the allocation to import */
  uint64_t offset_bytes; /* where they start in the allocation */
  cgc_external_memory_access_mode_t access_mode;
} cgc_external_memory_descriptor_t;

typedef enum cgc_external_semaphore_type_t {
  /* A HANDLE from CreateSharedHandle on a fence created with
   * D3D12_FENCE_FLAG_SHARED: a 64-bit timeline. */
  CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE = 0,
  /* A sync_file descriptor (a binary payload, not a timeline). */
  CGC_EXTERNAL_SEMAPHORE_TYPE_SYNC_FD = 1,
} cgc_external_semaphore_type_t;

#define CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION 1
typedef struct cgc_external_semaphore_descriptor_t {
  uint32_t version; /* CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION */
  cgc_external_semaphore_type_t type;
  void *native_handle;
} cgc_external_semaphore_descriptor_t;

#define CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION 1
typedef struct cgc_external_tensor_descriptor_t {
  uint32_t version; /* CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION */
  cgc_dtype_t dtype;
  const int64_t *shape;
  size_t rank;
  uint64_t offset_bytes; /* view offset within the imported memory */
} cgc_external_tensor_descriptor_t;

CGC_RUNTIME_API cgc_status_t cgc_importer_create(cgc_device_t *device,
                                                 cgc_importer_t **out_importer);
CGC_RUNTIME_API void cgc_importer_release(cgc_importer_t *importer);

CGC_RUNTIME_API cgc_status_t cgc_importer_can_import_memory(
    const cgc_importer_t *importer, cgc_external_memory_handle_type_t handle_type,
    bool *out_supported);
/* Maps the allocation's [offset, offset + size) (the caller keeps its
 * handle: the import holds a descriptor of its own). UNIMPLEMENTED for a
 * handle type the importer cannot import. */
CGC_RUNTIME_API cgc_status_t cgc_importer_import_memory(
    cgc_importer_t *importer, const cgc_external_memory_descriptor_t *desc,
    cgc_external_memory_t **out_memory);
CGC_RUNTIME_API void cgc_external_memory_release(cgc_external_memory_t *memory);
CGC_RUNTIME_API uint64_t cgc_external_memory_size(const cgc_external_memory_t *memory);
/* Where the imported bytes are mapped in this process (CPU = GPU virtual
 * address on this device). */
CGC_RUNTIME_API void *cgc_external_memory_data(cgc_external_memory_t *memory);

/* A tensor aliasing imported memory (no copy). OUT_OF_RANGE if the tensor
 * does not fit. The tensor keeps the memory alive. */
CGC_RUNTIME_API cgc_status_t cgc_importer_create_tensor(
    cgc_importer_t *importer, cgc_external_memory_t *memory,
    const cgc_external_tensor_descriptor_t *desc, cgc_tensor_t **out_tensor);

CGC_RUNTIME_API cgc_status_t cgc_importer_can_import_semaphore(
    const cgc_importer_t *importer, cgc_external_semaphore_type_t type, bool *out_supported);
CGC_RUNTIME_API cgc_status_t cgc_importer_import_semaphore(
    cgc_importer_t *importer, const cgc_external_semaphore_descriptor_t *desc,
    cgc_external_semaphore_t **out_semaphore);
CGC_RUNTIME_API void cgc_external_semaphore_release(cgc_external_semaphore_t *semaphore);
/* Queues on `stream` a wait until the semaphore reaches `value` (later work
 * on the stream starts after it), or a signal of `value` once the work
 * submitted before it is done. */
CGC_RUNTIME_API cgc_status_t cgc_importer_wait_semaphore(cgc_importer_t *importer,
                                                         cgc_external_semaphore_t *semaphore,
                                                         cgc_stream_t *stream, uint64_t value);
CGC_RUNTIME_API cgc_status_t cgc_importer_signal_semaphore(cgc_importer_t *importer,
                                                           cgc_external_semaphore_t *semaphore,
                                                           cgc_stream_t *stream, uint64_t value);
/* The semaphore's current value, read on the CPU. */
CGC_RUNTIME_API uint64_t cgc_external_semaphore_value(const cgc_external_semaphore_t *semaphore);

#ifdef __cplusplus
}
#endif

#endif /* CGC_RUNTIME_H */
