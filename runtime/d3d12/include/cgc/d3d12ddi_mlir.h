/*===- cgc/d3d12ddi_mlir.h - The driver interface (DDI) of cgc's D3D12 -----===*
 *
 * What a driver implements to run under cgc's D3D12 runtime (libcgc_d3d12).
 * Modelled on the D3D12 DDI of the "MLIR programs" spec: the caps types
 * D3D12DDI_CAPS_TYPE_MLIR / _MLIR_EXCHANGE_0119 / _MLIR_INTERFACE_SUPPORT_0119
 * with their structs, state objects with MLIR-program subobjects, program
 * identifiers, SetProgram / DispatchGraph with MLIR program bindings; plus the
 * compute pipeline, barrier, command-list, queue and memory functions this
 * runtime needs. Types carry the spec's DDI names where the spec names them.
 *
 * A driver is a shared library exporting
 *
 *   HRESULT CgcD3D12DDIOpenAdapter(UINT32 RuntimeVersion,
 *                                  const D3D12DDI_ADAPTER_FUNCS_CGC **ppFuncs,
 *                                  D3D12DDI_HADAPTER *phAdapter);
 *
 * The runtime passes CGC_D3D12DDI_VERSION; a driver that cannot serve that
 * major version returns E_NOINTERFACE. The runtime checks the returned
 * table's Version (same major, minor >= the runtime's) and TableSize.
 * Versioning: the major changes when a function or struct changes; the minor
 * when functions are appended at the end of a table (older runtimes ignore
 * them; a newer runtime checks the minor before calling them).
 *
 * Ownership and threading:
 *   - Pointers passed into a DDI call are valid only during the call (the
 *     spec's rule for bytecode, bindings and CPU binding data): a driver
 *     copies what it keeps.
 *   - Device functions may be called from many threads at once. One command
 *     list is recorded by one thread at a time. The runtime owns the queue
 *     timeline (like the OS scheduler on Windows): it calls
 *     pfnExecuteCommandLists from one thread per queue, in submission order,
 *     and fences are runtime objects signaled after the call returns. A
 *     driver executes a submission to completion before returning.
 *   - A command-list function that detects an error reports it through
 *     D3D12DDI_RUNTIME_CALLBACKS_CGC::pfnSetCommandListErrorCb; the runtime
 *     then fails Close() with that HRESULT. Drivers never throw across this
 *     boundary and never crash on bad input.
 *   - GPU virtual addresses are what the driver returned for heaps; for a CPU
 *     driver they are host addresses.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_D3D12DDI_MLIR_H
#define CGC_D3D12DDI_MLIR_H

#include <wsl/winadapter.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CGC_D3D12DDI_VERSION_MAJOR 1
#define CGC_D3D12DDI_VERSION_MINOR 4
#define CGC_D3D12DDI_VERSION ((CGC_D3D12DDI_VERSION_MAJOR << 16) | CGC_D3D12DDI_VERSION_MINOR)
#define CGC_D3D12DDI_OPEN_ADAPTER_NAME "CgcD3D12DDIOpenAdapter"

typedef uint64_t D3D12DDI_GPU_VIRTUAL_ADDRESS;

typedef struct D3D12DDI_GPU_VIRTUAL_ADDRESS_RANGE {
  D3D12DDI_GPU_VIRTUAL_ADDRESS StartAddress;
  uint64_t SizeInBytes;
} D3D12DDI_GPU_VIRTUAL_ADDRESS_RANGE;

/* Driver handles (driver-private pointers) and runtime handles (passed back
 * in callbacks). */
typedef struct D3D12DDI_HADAPTER { void *pDrvPrivate; } D3D12DDI_HADAPTER;
typedef struct D3D12DDI_HDEVICE { void *pDrvPrivate; } D3D12DDI_HDEVICE;
typedef struct D3D12DDI_HHEAP { void *pDrvPrivate; } D3D12DDI_HHEAP;
typedef struct D3D12DDI_HSTATEOBJECT { void *pDrvPrivate; } D3D12DDI_HSTATEOBJECT;
typedef struct D3D12DDI_HPIPELINESTATE { void *pDrvPrivate; } D3D12DDI_HPIPELINESTATE;
typedef struct D3D12DDI_HCOMMANDLIST { void *pDrvPrivate; } D3D12DDI_HCOMMANDLIST;
typedef struct D3D12DDI_HCOMMANDQUEUE { void *pDrvPrivate; } D3D12DDI_HCOMMANDQUEUE;
typedef struct D3D12DDI_HRTDEVICE { void *handle; } D3D12DDI_HRTDEVICE;
typedef struct D3D12DDI_HRTCOMMANDLIST { void *handle; } D3D12DDI_HRTCOMMANDLIST;
/* The immutable commands of one closed recording of a command list. */
typedef struct D3D12DDI_HRECORDING_CGC { void *pDrvPrivate; } D3D12DDI_HRECORDING_CGC;

/*===----------------------------------------------------------------------===*
 * Caps (PFND3D12DDI_GETCAPS)
 *===----------------------------------------------------------------------===*/

typedef enum D3D12DDICAPS_TYPE {
  D3D12DDI_CAPS_TYPE_MLIR = 1100,
  D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119 = 1101,
  D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119 = 1102,
} D3D12DDICAPS_TYPE;

typedef enum D3D12DDI_MLIR_PROGRAMS_TIER {
  D3D12DDI_MLIR_PROGRAMS_TIER_NOT_SUPPORTED = 0,
  D3D12DDI_MLIR_PROGRAMS_TIER_1_0 = 10,
  D3D12DDI_MLIR_PROGRAMS_TIER_2_0 = 20,
} D3D12DDI_MLIR_PROGRAMS_TIER;

typedef struct D3D12DDI_OPTIONS_DATA_MLIR {
  D3D12DDI_MLIR_PROGRAMS_TIER MlirProgramsTier;
} D3D12DDI_OPTIONS_DATA_MLIR;

/* HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER) (winerror.h): the answer to an
   exchange whose non-null pOutputData is smaller than the answer, with
   *OutputDataSizeInBytes set to the size needed and nothing written. A null
   pOutputData is the size query: S_OK and the size. */
#ifndef E_NOT_SUFFICIENT_BUFFER
#define E_NOT_SUFFICIENT_BUFFER ((HRESULT)0x8007007AL)
#endif

#ifndef DXGI_ERROR_ALREADY_EXISTS
#define DXGI_ERROR_ALREADY_EXISTS ((HRESULT)0x887A0036L)
#endif

typedef struct D3D12DDI_MLIR_EXCHANGE_0119 {
  GUID MlirInterface;
  const void *pInputData;
  SIZE_T InputDataSizeInBytes;
  void *pOutputData;
  SIZE_T *OutputDataSizeInBytes;
} D3D12DDI_MLIR_EXCHANGE_0119;

typedef struct D3D12DDI_MLIR_INTERFACE_SUPPORT_0119 {
  UINT NumMlirInterfaces;
  const GUID *pMlirInterfacesRequested;
  BOOL *pMlirInterfacesSupported;
} D3D12DDI_MLIR_INTERFACE_SUPPORT_0119;

typedef struct D3D12DDIARG_GETCAPS {
  D3D12DDICAPS_TYPE Type;
  UINT NodeIndex;
  const void *pInfo;
  void *pData;
  UINT DataSize;
} D3D12DDIARG_GETCAPS;

/*===----------------------------------------------------------------------===*
 * State objects
 *===----------------------------------------------------------------------===*/

typedef enum D3D12DDI_STATE_OBJECT_TYPE {
  D3D12DDI_STATE_OBJECT_TYPE_COLLECTION = 0,
  D3D12DDI_STATE_OBJECT_TYPE_RAYTRACING_PIPELINE = 3,
  D3D12DDI_STATE_OBJECT_TYPE_EXECUTABLE = 4,
} D3D12DDI_STATE_OBJECT_TYPE;

typedef enum D3D12DDI_STATE_SUBOBJECT_TYPE {
  D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM = 34,
  /* cgc extension (DDI 1.1): a cached blob for an MLIR program of the same
   * state object (D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC). */
  D3D12DDI_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC = 0x10000,
} D3D12DDI_STATE_SUBOBJECT_TYPE;

typedef struct D3D12DDI_MLIR_PROGRAM_DESC_0119 {
  LPCWSTR ProgramName;
  const void *pBytecode;
  SIZE_T BytecodeSizeInBytes;
} D3D12DDI_MLIR_PROGRAM_DESC_0119;

/* cgc extension (DDI 1.1), modelled on D3D12_CACHED_PIPELINE_STATE: a
 * precompiled form of the MLIR program subobject named ProgramName (the
 * spec's PSDB entry; cgc's blob format is cgc/precompiled_program.h). The
 * runtime passes at most one per program, only for programs of the same
 * call, never an empty one. The driver uses it only if it recognizes it as
 * made by its own compiler from exactly that program's bytecode, and
 * otherwise compiles the bytecode as if there were no blob (the spec: "the
 * client still passes the creation args for fallback"); a blob that claims
 * to match but is malformed fails the creation (E_INVALIDARG). Which
 * happened is reported by pfnGetCachedMlirProgramStatusCgc; a driver that
 * leaves that function null is given no cached blobs. */
typedef struct D3D12DDI_CACHED_MLIR_PROGRAM_CGC {
  LPCWSTR ProgramName;
  const void *pCachedBlob;
  SIZE_T CachedBlobSizeInBytes;
} D3D12DDI_CACHED_MLIR_PROGRAM_CGC;

typedef enum D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC {
  /* No cached blob was given: the bytecode was compiled. */
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_NONE_CGC = 0,
  /* Created from the cached blob; the bytecode was not compiled. */
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_HIT_CGC = 1,
  /* A cached blob was given but is for another compiler, another bytecode
   * or another blob format: the bytecode was compiled. */
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_MISMATCH_CGC = 2,
  /* DDI 1.4: no cached blob was given; created from the object code a
   * registered precompiled database holds under the program's value key
   * (pfnFindPrecompiledValueCgc); the bytecode was not compiled. */
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT_CGC = 3,
  /* DDI 1.4: a registered precompiled database holds a value under the
   * program's key, but for another compiler, bytecode or format: the
   * bytecode was compiled. */
  D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_DATABASE_STALE_CGC = 4,
} D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC;

/*===----------------------------------------------------------------------===*
 * Precompiled databases (DDI 1.4, cgc extension; docs/precompilation.md)
 *
 * Advanced Shader Delivery's cache value types (the shader compiler
 * plugin's D3D12DDI_COMPILER_CACHE_*), shared by the compiler plugin DDI
 * (cgc/d3d12ddi_compiler.h) and this one: a driver derives the value key of
 * each MLIR program it is asked to create (as the plugin for its adapter
 * family did when it compiled the program offline) and asks the runtime
 * for the value with pfnFindPrecompiledValueCgc; the runtime answers from
 * the precompiled databases the application registered whose target
 * matches the driver's pfnGetCompilerPropertiesCgc.
 *===----------------------------------------------------------------------===*/

typedef enum D3D12DDI_COMPILER_CACHE_VALUE_TYPE {
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE = 0,
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_METADATA = 1,
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_DEBUG_PDB = 2,
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PERFORMANCE_DATA = 3,
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_MAX_VALID = 4,
  /* cgc extension: a program's constants prepared offline in its driver's
   * layouts for one set of constant contents (docs/precompilation.md).
   * Stored beside the PSDB and mapped, not copied, by the runtime. */
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC = 0x100,
} D3D12DDI_COMPILER_CACHE_VALUE_TYPE;

typedef enum D3D12DDI_COMPILER_VALUE_TYPE_FLAGS {
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_NONE = 0,
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE = 1 << 0,
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_METADATA = 1 << 1,
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_DEBUG_PDB = 1 << 2,
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_PERFORMANCE_DATA = 1 << 3,
  D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_PREPARED_CONSTANTS_CGC = 1 << 16,
} D3D12DDI_COMPILER_VALUE_TYPE_FLAGS;

/* The content identity of a constant binding: a digest the runtime
 * derives from the bytes it binds there (for a compiled model: the file's
 * verified digest, the binding's offset and size), the same for the offline
 * preparation and at load. */
typedef struct D3D12DDI_CONSTANT_DIGEST_CGC {
  UINT8 Digest[16];
} D3D12DDI_CONSTANT_DIGEST_CGC;

/* What a driver did with a program's constants at
 * pfnPrepareMlirProgramConstantsWithDigestsCgc: prepared blocks taken from a
 * precompiled database (mapped, nothing transformed) and computed. */
typedef struct D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC {
  UINT64 BlocksMapped;
  UINT64 BytesMapped;
  UINT64 BlocksComputed;
  UINT64 BytesComputed;
} D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC;

typedef struct D3D12DDI_COMPILER_CACHE_VALUE_KEY {
  const void *pKey;
  UINT KeySize;
} D3D12DDI_COMPILER_CACHE_VALUE_KEY;

typedef struct D3D12DDI_COMPILER_CACHE_VALUE {
  void *pValue;
  SIZE_T ValueSize;
} D3D12DDI_COMPILER_CACHE_VALUE;

typedef struct D3D12DDI_COMPILER_CACHE_TYPED_VALUE {
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE Type;
  D3D12DDI_COMPILER_CACHE_VALUE Value;
} D3D12DDI_COMPILER_CACHE_TYPED_VALUE;

typedef struct D3D12DDI_COMPILER_CACHE_CONST_VALUE {
  const void *pValue;
  SIZE_T ValueSize;
} D3D12DDI_COMPILER_CACHE_CONST_VALUE;

typedef struct D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE {
  D3D12DDI_COMPILER_CACHE_VALUE_TYPE Type;
  D3D12DDI_COMPILER_CACHE_CONST_VALUE Value;
} D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE;

/* What a driver's compiler produces (D3D_SHADER_CACHE_COMPILER_PROPERTIES of
 * the shader cache registration API): a precompiled database is used only
 * if it was compiled for this adapter family, an ABI version in
 * [Minimum, Maximum]ABISupportVersion, this CompilerVersion and an
 * application profile version with the same upper 32 bits. Versions are
 * D3D12_VERSION_NUMBERs; ABI versions 0 and UINT64_MAX are reserved. */
typedef struct D3D12DDI_COMPILER_PROPERTIES_CGC {
  WCHAR szAdapterFamily[128];
  UINT64 MinimumABISupportVersion;
  UINT64 MaximumABISupportVersion;
  UINT64 CompilerVersion;
  UINT64 ApplicationProfileVersion;
} D3D12DDI_COMPILER_PROPERTIES_CGC;

typedef struct D3D12DDI_STATE_SUBOBJECT_0054 {
  D3D12DDI_STATE_SUBOBJECT_TYPE Type;
  const void *pDesc;
} D3D12DDI_STATE_SUBOBJECT_0054;

/* Only the subobjects a driver needs: the runtime validates and consumes the
 * others (state object config). */
typedef struct D3D12DDIARG_CREATE_STATE_OBJECT_0054 {
  D3D12DDI_STATE_OBJECT_TYPE Type;
  UINT NumSubobjects;
  const D3D12DDI_STATE_SUBOBJECT_0054 *pSubobjects;
} D3D12DDIARG_CREATE_STATE_OBJECT_0054;

typedef struct D3D12DDI_PROGRAM_IDENTIFIER_0108 {
  UINT64 OpaqueData[4];
} D3D12DDI_PROGRAM_IDENTIFIER_0108;

/*===----------------------------------------------------------------------===*
 * SetProgram / DispatchGraph
 *===----------------------------------------------------------------------===*/

typedef enum D3D12DDI_PROGRAM_TYPE_0108 {
  D3D12DDI_PROGRAM_TYPE_GENERIC_PIPELINE_0108 = 1,
  D3D12DDI_PROGRAM_TYPE_RAYTRACING_PIPELINE_0108 = 4,
  D3D12DDI_PROGRAM_TYPE_WORK_GRAPH_0108 = 5,
  D3D12DDI_PROGRAM_TYPE_MLIR_PROGRAM_0119 = 6,
} D3D12DDI_PROGRAM_TYPE_0108;

typedef enum D3D12DDI_SET_MLIR_PROGRAM_FLAGS_0119 {
  D3D12DDI_SET_MLIR_PROGRAM_FLAG_NONE_0119 = 0x0,
} D3D12DDI_SET_MLIR_PROGRAM_FLAGS_0119;

typedef struct D3D12DDI_SET_MLIR_PROGRAM_DESC_0119 {
  D3D12DDI_PROGRAM_IDENTIFIER_0108 ProgramIdentifier;
  D3D12DDI_SET_MLIR_PROGRAM_FLAGS_0119 Flags;
} D3D12DDI_SET_MLIR_PROGRAM_DESC_0119;

/* Only the MLIR member of the spec's union is used by this runtime. */
typedef struct D3D12DDI_SET_PROGRAM_DESC_0108 {
  D3D12DDI_PROGRAM_TYPE_0108 Type;
  union {
    D3D12DDI_SET_MLIR_PROGRAM_DESC_0119 MlirProgram;
  };
} D3D12DDI_SET_PROGRAM_DESC_0108;

typedef enum D3D12DDI_DISPATCH_MODE_0108 {
  D3D12DDI_DISPATCH_MODE_NODE_CPU_INPUT_0108 = 0,
  D3D12DDI_DISPATCH_MODE_NODE_GPU_INPUT_0108 = 1,
  D3D12DDI_DISPATCH_MODE_MULTI_NODE_CPU_INPUT_0108 = 2,
  D3D12DDI_DISPATCH_MODE_MULTI_NODE_GPU_INPUT_0108 = 3,
  D3D12DDI_DISPATCH_MODE_MLIR_PROGRAM = 4,
} D3D12DDI_DISPATCH_MODE_0108;

typedef enum D3D12DDI_MLIR_PROGRAM_BINDING_FLAGS_0119 {
  D3D12DDI_MLIR_PROGRAM_BINDING_FLAG_NONE_0119 = 0,
} D3D12DDI_MLIR_PROGRAM_BINDING_FLAGS_0119;

typedef enum D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_0119 {
  D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_GPU_0119 = 0,
  D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_CPU_0119 = 1,
} D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_0119;

typedef struct D3D12DDI_MLIR_PROGRAM_CPU_BINDING_0119 {
  const void *pData;
  UINT64 DataSizeInBytes;
} D3D12DDI_MLIR_PROGRAM_CPU_BINDING_0119;

/* GpuBinding.SizeInBytes is the bound range's size; 0 means "from
 * StartAddress to the end of the resource" (what the spec's example binds). */
typedef struct D3D12DDI_MLIR_PROGRAM_BINDING_0119 {
  UINT BindPointIndex;
  D3D12DDI_MLIR_PROGRAM_BINDING_FLAGS_0119 Flags;
  D3D12DDI_MLIR_PROGRAM_BINDING_TYPE_0119 Type;
  union {
    D3D12DDI_GPU_VIRTUAL_ADDRESS_RANGE GpuBinding;
    D3D12DDI_MLIR_PROGRAM_CPU_BINDING_0119 CpuBinding;
  };
} D3D12DDI_MLIR_PROGRAM_BINDING_0119;

typedef struct D3D12DDI_MLIR_PROGRAM_BINDINGS_0119 {
  UINT NumBindings;
  const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *pBindings;
} D3D12DDI_MLIR_PROGRAM_BINDINGS_0119;

/* Only the MLIR member of the spec's union is used by this runtime. */
typedef struct D3D12DDI_DISPATCH_GRAPH_DESC_0108 {
  D3D12DDI_DISPATCH_MODE_0108 Mode;
  union {
    D3D12DDI_MLIR_PROGRAM_BINDINGS_0119 MlirProgramBindings;
  };
} D3D12DDI_DISPATCH_GRAPH_DESC_0108;

/*===----------------------------------------------------------------------===*
 * Barriers: the runtime lowers legacy (transition, UAV, aliasing) and enhanced
 * (global, buffer) barriers to ranges of GPU virtual addresses.
 *===----------------------------------------------------------------------===*/

typedef enum D3D12DDI_BARRIER_SCOPE_CGC {
  /* All memory: work after the barrier waits for all work before it. */
  D3D12DDI_BARRIER_SCOPE_GLOBAL_CGC = 0,
  /* [Range.StartAddress, +SizeInBytes): work after the barrier that accesses
   * the range waits for work before it that accesses the range. */
  D3D12DDI_BARRIER_SCOPE_RANGE_CGC = 1,
} D3D12DDI_BARRIER_SCOPE_CGC;

typedef struct D3D12DDI_BARRIER_CGC {
  D3D12DDI_BARRIER_SCOPE_CGC Scope;
  D3D12DDI_GPU_VIRTUAL_ADDRESS_RANGE Range;
} D3D12DDI_BARRIER_CGC;

/*===----------------------------------------------------------------------===*
 * Creation arguments
 *===----------------------------------------------------------------------===*/

typedef struct D3D12DDIARG_CREATEHEAP_CGC {
  UINT64 SizeInBytes;
  UINT64 Alignment;
  /* Non-null: wrap this existing host memory (OpenExistingHeapFromAddress);
   * the driver must not free it. */
  const void *pExistingAddress;
} D3D12DDIARG_CREATEHEAP_CGC;

typedef struct D3D12DDI_HEAP_MEMORY_CGC {
  void *pCPUAddress;                              /* for Map */
  D3D12DDI_GPU_VIRTUAL_ADDRESS GPUVirtualAddress; /* of the first byte */
} D3D12DDI_HEAP_MEMORY_CGC;

typedef struct D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC {
  /* A DX container with a 'CGKP' kernel-program part (docs/architecture.md). */
  const void *pComputeShader;
  SIZE_T ComputeShaderSizeInBytes;
} D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC;

typedef enum D3D12DDI_MESSAGE_SEVERITY_CGC {
  D3D12DDI_MESSAGE_SEVERITY_ERROR_CGC = 1,
  D3D12DDI_MESSAGE_SEVERITY_WARNING_CGC = 2,
  D3D12DDI_MESSAGE_SEVERITY_INFO_CGC = 3,
} D3D12DDI_MESSAGE_SEVERITY_CGC;

/* Calls from the driver into the runtime. */
typedef struct D3D12DDI_RUNTIME_CALLBACKS_CGC {
  /* A recording error: Close() of that command list fails with hr. */
  void (*pfnSetCommandListErrorCb)(D3D12DDI_HRTCOMMANDLIST hRTCommandList,
                                   HRESULT hr, const char *pMessage);
  /* A message for the debug output (info queue, stderr), e.g. why a state
   * object or pipeline could not be created. */
  void (*pfnMessageCb)(D3D12DDI_HRTDEVICE hRTDevice,
                       D3D12DDI_MESSAGE_SEVERITY_CGC Severity,
                       const char *pMessage);
  /* DDI 1.4 (present when the runtime's version is 1.4 or later): the value
   * of the given types stored under *pValueKey in the registered precompiled
   * databases that match the driver's compiler properties, with the
   * shader compiler plugin's FindValue semantics (no allocator): for each
   * entry, ValueSize 0 asks for the size (written back); a buffer at least
   * that large receives the value. S_OK when every type was found,
   * DXGI_ERROR_NOT_FOUND when the key (or one of the types) is not stored
   * or no database is registered, DXGI_ERROR_MORE_DATA when a buffer is too
   * small (the size needed written back). The runtime counts the lookups it
   * answers for the application (CGCD3D12GetPrecompiledDatabaseStatistics). */
  HRESULT (*pfnFindPrecompiledValueCgc)(D3D12DDI_HRTDEVICE hRTDevice,
                                        const D3D12DDI_COMPILER_CACHE_VALUE_KEY *pValueKey,
                                        D3D12DDI_COMPILER_CACHE_TYPED_VALUE *pValues,
                                        UINT NumValues);
  /* DDI 1.4: a value stored beside a matching registered PSDB (type
   * PREPARED_CONSTANTS_CGC), mapped read-only: *ppData stays valid for the
   * life of the process, page-aligned. The runtime checks the value's
   * checksum on its first use (a mismatch is E_FAIL with a message: a
   * corrupted database). S_OK, DXGI_ERROR_NOT_FOUND. */
  HRESULT (*pfnMapPrecompiledValueCgc)(D3D12DDI_HRTDEVICE hRTDevice,
                                       const D3D12DDI_COMPILER_CACHE_VALUE_KEY *pValueKey,
                                       D3D12DDI_COMPILER_CACHE_VALUE_TYPE Type,
                                       const void **ppData, SIZE_T *pSize);
} D3D12DDI_RUNTIME_CALLBACKS_CGC;

typedef struct D3D12DDIARG_CREATEDEVICE_CGC {
  D3D12DDI_HRTDEVICE hRTDevice;
  const D3D12DDI_RUNTIME_CALLBACKS_CGC *pCallbacks;
  /* cgc extension: the application's configuration of the driver for this
   * device, driver-defined text ("name=value,..." for the CPU
   * driver); null or empty for its defaults. A driver that does not
   * understand it fails CreateDevice with a message naming the setting. */
  const char *pDriverOptions;
} D3D12DDIARG_CREATEDEVICE_CGC;

/* DDI 1.2 (cgc extension): one bind point of an MLIR program as the driver
 * compiled it -- its own reading of the Partition IR's arguments, not the
 * container's 'CGBP' metadata, which the runtime checks against it. */
typedef struct D3D12DDI_PROGRAM_BIND_POINT_CGC {
  UINT64 SizeInBytes; /* the bytes the program accesses through it */
  BOOL Constant;      /* a constant memref (the 'CGBP' kind "constant") */
  UINT DType;         /* its element type (cgc_dtype_t); 0 if unknown */
} D3D12DDI_PROGRAM_BIND_POINT_CGC;

/*===----------------------------------------------------------------------===*
 * Function tables
 *===----------------------------------------------------------------------===*/

typedef struct D3D12DDI_DEVICE_FUNCS_CORE_CGC {
  void (*pfnDestroyDevice)(D3D12DDI_HDEVICE);

  HRESULT (*pfnCreateHeap)(D3D12DDI_HDEVICE, const D3D12DDIARG_CREATEHEAP_CGC *,
                           D3D12DDI_HHEAP *, D3D12DDI_HEAP_MEMORY_CGC *);
  void (*pfnDestroyHeap)(D3D12DDI_HDEVICE, D3D12DDI_HHEAP);

  /* for MLIR Program Creation */
  HRESULT (*pfnCreateStateObject)(D3D12DDI_HDEVICE,
                                  const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *,
                                  D3D12DDI_HSTATEOBJECT *);
  /* for MLIR Program Addition: a new state object holding the existing one's
   * programs (same identifiers) and the added ones. */
  HRESULT (*pfnAddToStateObject)(D3D12DDI_HDEVICE,
                                 const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *pAddition,
                                 D3D12DDI_HSTATEOBJECT hExisting,
                                 D3D12DDI_HSTATEOBJECT *phNew);
  void (*pfnDestroyStateObject)(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT);
  /* for MLIR Program Execution: E_INVALIDARG if no program has that name. */
  HRESULT (*pfnGetProgramIdentifier)(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT,
                                     LPCWSTR pProgramName,
                                     D3D12DDI_PROGRAM_IDENTIFIER_0108 *);

  HRESULT (*pfnCreateComputePipelineState)(
      D3D12DDI_HDEVICE, const D3D12DDIARG_CREATE_COMPUTE_PIPELINE_STATE_CGC *,
      D3D12DDI_HPIPELINESTATE *);
  void (*pfnDestroyPipelineState)(D3D12DDI_HDEVICE, D3D12DDI_HPIPELINESTATE);

  HRESULT (*pfnCreateCommandList)(D3D12DDI_HDEVICE, D3D12DDI_HRTCOMMANDLIST,
                                  D3D12DDI_HCOMMANDLIST *);
  void (*pfnDestroyCommandList)(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDLIST);

  HRESULT (*pfnCreateCommandQueue)(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE *);
  void (*pfnDestroyCommandQueue)(D3D12DDI_HDEVICE, D3D12DDI_HCOMMANDQUEUE);

  /* DDI 1.1 (cgc extension): how the MLIR program pProgramName of a state
   * object was created (from its cached blob or compiled).
   * E_INVALIDARG if the state object has no program of that name. */
  HRESULT (*pfnGetCachedMlirProgramStatusCgc)(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT,
                                              LPCWSTR pProgramName,
                                              D3D12DDI_CACHED_MLIR_PROGRAM_STATUS_CGC *pStatus);

  /* DDI 1.2 (cgc extension): the bind points of the MLIR program
   * pProgramName as the driver compiled it, so that the runtime can check
   * the container's 'CGBP' metadata (which its debug layer trusts) against
   * the program itself. With pBindPoints null, stores their number in
   * *pNumBindPoints; else writes *pNumBindPoints of them (E_INVALIDARG if
   * that is not their number). E_INVALIDARG for an unknown name. A driver
   * may leave it null: the runtime then cannot check (the debug layer
   * warns). */
  HRESULT (*pfnGetProgramBindPointsCgc)(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT,
                                        LPCWSTR pProgramName, UINT *pNumBindPoints,
                                        D3D12DDI_PROGRAM_BIND_POINT_CGC *pBindPoints);

  /* DDI 1.3 (cgc extension): the runtime binds the constant bind points of
   * the MLIR program pProgramName at these GPU addresses (one GPU binding
   * per constant bind point, every constant bind point once) and their
   * bytes are final: they will not change while bound there. The driver
   * may prepare now what it derives from them (weights packed or
   * transformed into its kernels' layouts) instead of on the program's
   * first run. Nothing the runtime or the application can see may be
   * written. E_INVALIDARG for an unknown name, a bind point that is not a
   * constant one, a constant bind point missing or given twice, or a null
   * address. A driver may leave it null (it prepares on the first run). */
  HRESULT (*pfnPrepareMlirProgramConstantsCgc)(D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT,
                                               LPCWSTR pProgramName, UINT NumBindings,
                                               const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *pBindings);

  /* DDI 1.4 (cgc extension): pfnPrepareMlirProgramConstantsCgc with the
   * content digest of each binding (pDigests[i] for pBindings[i]): the
   * driver may take the prepared constants from a registered precompiled
   * database (pfnMapPrecompiledValueCgc) instead of transforming the
   * weights, and reports what it did in *pStatistics (may be null). A
   * driver may leave it null. */
  HRESULT (*pfnPrepareMlirProgramConstantsWithDigestsCgc)(
      D3D12DDI_HDEVICE, D3D12DDI_HSTATEOBJECT, LPCWSTR pProgramName, UINT NumBindings,
      const D3D12DDI_MLIR_PROGRAM_BINDING_0119 *pBindings,
      const D3D12DDI_CONSTANT_DIGEST_CGC *pDigests,
      D3D12DDI_PREPARED_CONSTANTS_STATISTICS_CGC *pStatistics);
} D3D12DDI_DEVICE_FUNCS_CORE_CGC;

typedef struct D3D12DDI_COMMAND_LIST_FUNCS_CGC {
  /* Starts recording again (after Close or at creation). */
  void (*pfnReset)(D3D12DDI_HCOMMANDLIST);
  /* Ends recording. On success *phRecording owns the recorded commands: they
   * stay valid (and executable any number of times) after the list is reset
   * or destroyed, until pfnDestroyRecording. */
  HRESULT (*pfnClose)(D3D12DDI_HCOMMANDLIST, D3D12DDI_HRECORDING_CGC *phRecording);
  void (*pfnDestroyRecording)(D3D12DDI_HRECORDING_CGC);
  /* for MLIR Program Execution */
  void (*pfnSetProgram)(D3D12DDI_HCOMMANDLIST, const D3D12DDI_SET_PROGRAM_DESC_0108 *);
  void (*pfnDispatchGraph)(D3D12DDI_HCOMMANDLIST, const D3D12DDI_DISPATCH_GRAPH_DESC_0108 *);
  /* compute path (the fallback target's kernel programs) */
  void (*pfnSetPipelineState)(D3D12DDI_HCOMMANDLIST, D3D12DDI_HPIPELINESTATE);
  void (*pfnSetComputeRootUnorderedAccessView)(D3D12DDI_HCOMMANDLIST, UINT RootParameterIndex,
                                               D3D12DDI_GPU_VIRTUAL_ADDRESS);
  void (*pfnDispatch)(D3D12DDI_HCOMMANDLIST, UINT X, UINT Y, UINT Z);
  void (*pfnBarrier)(D3D12DDI_HCOMMANDLIST, UINT NumBarriers, const D3D12DDI_BARRIER_CGC *);
  void (*pfnCopyBufferRegion)(D3D12DDI_HCOMMANDLIST, D3D12DDI_GPU_VIRTUAL_ADDRESS Dst,
                              D3D12DDI_GPU_VIRTUAL_ADDRESS Src, UINT64 NumBytes);
} D3D12DDI_COMMAND_LIST_FUNCS_CGC;

typedef struct D3D12DDI_COMMAND_QUEUE_FUNCS_CGC {
  /* Runs the recordings in order, each to completion before the next. A
   * failure is reported as the result (the runtime removes the device). */
  HRESULT (*pfnExecuteCommandLists)(D3D12DDI_HCOMMANDQUEUE, UINT NumRecordings,
                                    const D3D12DDI_HRECORDING_CGC *);
} D3D12DDI_COMMAND_QUEUE_FUNCS_CGC;

typedef struct D3D12DDI_ADAPTER_FUNCS_CGC {
  UINT32 Version;   /* CGC_D3D12DDI_VERSION the driver was built with */
  UINT32 TableSize; /* sizeof(D3D12DDI_ADAPTER_FUNCS_CGC) */
  const char *pDescription;
  HRESULT (*pfnGetCaps)(D3D12DDI_HADAPTER, const D3D12DDIARG_GETCAPS *);
  HRESULT (*pfnCreateDevice)(D3D12DDI_HADAPTER, const D3D12DDIARG_CREATEDEVICE_CGC *,
                             D3D12DDI_HDEVICE *);
  void (*pfnCloseAdapter)(D3D12DDI_HADAPTER);
  const D3D12DDI_DEVICE_FUNCS_CORE_CGC *pDeviceFuncs;
  const D3D12DDI_COMMAND_LIST_FUNCS_CGC *pCommandListFuncs;
  const D3D12DDI_COMMAND_QUEUE_FUNCS_CGC *pCommandQueueFuncs;
  /* DDI 1.4 (cgc extension): what the adapter's compiler produces, which
   * decides the precompiled databases the runtime offers the driver. A
   * driver may leave it null: it then gets no database values. */
  HRESULT (*pfnGetCompilerPropertiesCgc)(D3D12DDI_HADAPTER,
                                         D3D12DDI_COMPILER_PROPERTIES_CGC *pProperties);
} D3D12DDI_ADAPTER_FUNCS_CGC;

typedef HRESULT (*PFND3D12DDI_OPEN_ADAPTER_CGC)(UINT32 RuntimeVersion,
                                                const D3D12DDI_ADAPTER_FUNCS_CGC **ppFuncs,
                                                D3D12DDI_HADAPTER *phAdapter);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CGC_D3D12DDI_MLIR_H */
