//===- cgc/d3d12_mlir.h - D3D12 with the MLIR-programs extension -*- C++ -*-===//
//
// The one header applications include to use cgc's D3D12 on Linux. It brings
// in DirectX-Headers (<wsl/winadapter.h>, <directx/d3d12.h>,
// <directx/d3d12sdklayers.h>, <dxguids/dxguids.h>) and defines, once, what the
// "MLIR programs" spec (DXCGC v0.11) adds and what DirectX-Headers 1.606
// predates: the new feature values and structs, the MLIR program subobject,
// program identifiers, SetProgram / DispatchGraph with MLIR program bindings,
// ID3D12Device12..14, ID3D12GraphicsCommandList9..10,
// ID3D12StateObjectProperties1 and the DXCGC interface GUIDs. Names, values
// and layouts follow the spec and the newer DirectX-Headers, so code written
// against this header ports to real D3D12.
//
// Values the spec adds to existing enums are constants of the enum type
// (D3D12_FEATURE_D3D12_OPTIONS_MLIR is a `D3D12_FEATURE`), so
// `CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, ...)` compiles as
// the spec writes it.
//
// cgc-specific entry points (choosing a driver, developer mode, the debug
// callback) are at the end, prefixed `CGC`.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_D3D12_MLIR_H
#define CGC_D3D12_MLIR_H

// clang-format off
#include <wsl/winadapter.h>
#include <directx/d3d12.h>
#include <directx/d3d12sdklayers.h>
#include <dxguids/dxguids.h>
// clang-format on

#include <cstdint>

#if defined(__GNUC__)
#define CGC_D3D12_API extern "C" __attribute__((visibility("default")))
#else
#define CGC_D3D12_API extern "C"
#endif

//===----------------------------------------------------------------------===//
// Values added to existing enums
//===----------------------------------------------------------------------===//

// DirectX-Headers' enums have no fixed underlying type and their ranges end
// below these values, so these are `inline const` rather than `constexpr`
// (a constant expression may not leave the range); clang and GCC store and
// compare them as plain ints (no -fstrict-enums). Switch on `int(value)`.
inline const D3D12_FEATURE D3D12_FEATURE_D3D12_OPTIONS_MLIR = static_cast<D3D12_FEATURE>(68);
inline const D3D12_FEATURE D3D12_FEATURE_MLIR_EXCHANGE = static_cast<D3D12_FEATURE>(69);
inline const D3D12_FEATURE D3D12_FEATURE_MLIR_INTERFACE_SUPPORT = static_cast<D3D12_FEATURE>(70);

// Work graphs introduced executable state objects; 1.606 predates them.
inline const D3D12_STATE_OBJECT_TYPE D3D12_STATE_OBJECT_TYPE_EXECUTABLE =
    static_cast<D3D12_STATE_OBJECT_TYPE>(4);

inline const D3D12_STATE_SUBOBJECT_TYPE D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM =
    static_cast<D3D12_STATE_SUBOBJECT_TYPE>(31);

//===----------------------------------------------------------------------===//
// Feature data
//===----------------------------------------------------------------------===//

enum D3D12_MLIR_PROGRAMS_TIER {
  D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED = 0,
  D3D12_MLIR_PROGRAMS_TIER_1_0 = 10,
  D3D12_MLIR_PROGRAMS_TIER_2_0 = 20,
};

struct D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR {
  D3D12_MLIR_PROGRAMS_TIER MlirProgramsTier;
};

/// HRESULT_FROM_WIN32(ERROR_INSUFFICIENT_BUFFER), as in winerror.h (which
/// DirectX-Headers' winadapter.h does not provide): MLIR_EXCHANGE with a
/// non-null pOutputData smaller than the answer. *OutputDataSizeInBytes then
/// holds the size needed and nothing is written.
#ifndef E_NOT_SUFFICIENT_BUFFER
#define E_NOT_SUFFICIENT_BUFFER ((HRESULT)0x8007007AL)
#endif

struct D3D12_FEATURE_DATA_MLIR_EXCHANGE {
  GUID MlirInterface;
  const void *pInputData;
  SIZE_T InputDataSizeInBytes;
  void *pOutputData;
  SIZE_T *OutputDataSizeInBytes;
};

struct D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT {
  UINT NumMlirInterfaces;
  const GUID *pMlirInterfacesRequested;
  BOOL *pMlirInterfacesSupported;
};

//===----------------------------------------------------------------------===//
// State objects
//===----------------------------------------------------------------------===//

struct D3D12_MLIR_PROGRAM_DESC {
  LPCWSTR ProgramName;
  const void *pBytecode;
  SIZE_T BytecodeSizeInBytes;
};

struct D3D12_PROGRAM_IDENTIFIER {
  UINT64 OpaqueData[4];
};

//===----------------------------------------------------------------------===//
// SetProgram
//===----------------------------------------------------------------------===//

enum D3D12_PROGRAM_TYPE {
  D3D12_PROGRAM_TYPE_GENERIC_PIPELINE = 1,
  D3D12_PROGRAM_TYPE_RAYTRACING_PIPELINE = 4,
  D3D12_PROGRAM_TYPE_WORK_GRAPH = 5,
  D3D12_PROGRAM_TYPE_MLIR_PROGRAM = 6,
};

enum D3D12_SET_WORK_GRAPH_FLAGS {
  D3D12_SET_WORK_GRAPH_FLAG_NONE = 0,
  D3D12_SET_WORK_GRAPH_FLAG_INITIALIZE = 0x1,
};

struct D3D12_SET_GENERIC_PIPELINE_DESC {
  D3D12_PROGRAM_IDENTIFIER ProgramIdentifier;
};

struct D3D12_SET_RAYTRACING_PIPELINE_DESC {
  D3D12_PROGRAM_IDENTIFIER ProgramIdentifier;
};

struct D3D12_SET_WORK_GRAPH_DESC {
  D3D12_PROGRAM_IDENTIFIER ProgramIdentifier;
  D3D12_SET_WORK_GRAPH_FLAGS Flags;
  D3D12_GPU_VIRTUAL_ADDRESS_RANGE BackingMemory;
  D3D12_GPU_VIRTUAL_ADDRESS_RANGE_AND_STRIDE NodeLocalRootArgumentsTable;
};

enum D3D12_SET_MLIR_PROGRAM_FLAGS {
  D3D12_SET_MLIR_PROGRAM_FLAG_NONE = 0,
};

struct D3D12_SET_MLIR_PROGRAM_DESC {
  D3D12_PROGRAM_IDENTIFIER ProgramIdentifier;
  D3D12_SET_MLIR_PROGRAM_FLAGS Flags;
};

struct D3D12_SET_PROGRAM_DESC {
  D3D12_PROGRAM_TYPE Type;
  union {
    D3D12_SET_GENERIC_PIPELINE_DESC GenericPipeline;
    D3D12_SET_RAYTRACING_PIPELINE_DESC RaytracingPipeline;
    D3D12_SET_WORK_GRAPH_DESC WorkGraph;
    D3D12_SET_MLIR_PROGRAM_DESC MlirProgram;
  };
};

//===----------------------------------------------------------------------===//
// DispatchGraph
//===----------------------------------------------------------------------===//

enum D3D12_DISPATCH_MODE {
  D3D12_DISPATCH_MODE_NODE_CPU_INPUT = 0,
  D3D12_DISPATCH_MODE_NODE_GPU_INPUT = 1,
  D3D12_DISPATCH_MODE_MULTI_NODE_CPU_INPUT = 2,
  D3D12_DISPATCH_MODE_MULTI_NODE_GPU_INPUT = 3,
  D3D12_DISPATCH_MODE_MLIR_PROGRAM = 4,
};
// The spec's struct listing names the mode's type this way.
typedef D3D12_DISPATCH_MODE D3D12_DISPATCH_GRAPH_MODE;

struct D3D12_NODE_CPU_INPUT {
  UINT EntrypointIndex;
  UINT NumRecords;
  const void *pRecords;
  UINT64 RecordStrideInBytes;
};

struct D3D12_MULTI_NODE_CPU_INPUT {
  UINT NumNodeInputs;
  const D3D12_NODE_CPU_INPUT *pNodeInputs;
  UINT64 NodeInputStrideInBytes;
};

enum D3D12_MLIR_PROGRAM_BINDING_FLAGS {
  D3D12_MLIR_PROGRAM_BINDING_FLAG_NONE = 0,
};

enum D3D12_MLIR_PROGRAM_BINDING_TYPE {
  D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU = 0,
  D3D12_MLIR_PROGRAM_BINDING_TYPE_CPU = 1,
};

struct D3D12_MLIR_PROGRAM_CPU_BINDING {
  const void *pData;
  UINT64 DataSizeInBytes;
};

/// A D3D12_GPU_VIRTUAL_ADDRESS_RANGE that can also be assigned a bare GPU
/// virtual address, as the spec's "Executing an MLIR program" example does
/// (`bindings[i].GpuBinding = resource->GetGPUVirtualAddress();`). Assigning
/// an address sets SizeInBytes to 0, which cgc defines as "from StartAddress
/// to the end of the resource that contains it". Same layout as the range.
struct D3D12_MLIR_PROGRAM_GPU_BINDING : D3D12_GPU_VIRTUAL_ADDRESS_RANGE {
  D3D12_MLIR_PROGRAM_GPU_BINDING &operator=(D3D12_GPU_VIRTUAL_ADDRESS address) {
    StartAddress = address;
    SizeInBytes = 0;
    return *this;
  }
  D3D12_MLIR_PROGRAM_GPU_BINDING &operator=(const D3D12_GPU_VIRTUAL_ADDRESS_RANGE &range) {
    StartAddress = range.StartAddress;
    SizeInBytes = range.SizeInBytes;
    return *this;
  }
};
static_assert(sizeof(D3D12_MLIR_PROGRAM_GPU_BINDING) == sizeof(D3D12_GPU_VIRTUAL_ADDRESS_RANGE),
              "GPU binding must keep the range's layout");

struct D3D12_MLIR_PROGRAM_BINDING {
  UINT BindPointIndex;
  D3D12_MLIR_PROGRAM_BINDING_FLAGS Flags;
  D3D12_MLIR_PROGRAM_BINDING_TYPE Type;
  union {
    D3D12_MLIR_PROGRAM_GPU_BINDING GpuBinding;
    D3D12_MLIR_PROGRAM_CPU_BINDING CpuBinding;
  };
};

struct D3D12_MLIR_PROGRAM_BINDINGS {
  UINT NumBindings;
  const D3D12_MLIR_PROGRAM_BINDING *pBindings;
};

struct D3D12_DISPATCH_GRAPH_DESC {
  D3D12_DISPATCH_MODE Mode;
  union {
    D3D12_NODE_CPU_INPUT NodeCPUInput;
    D3D12_GPU_VIRTUAL_ADDRESS NodeGPUInput;
    D3D12_MULTI_NODE_CPU_INPUT MultiNodeCPUInput;
    D3D12_GPU_VIRTUAL_ADDRESS MultiNodeGPUInput;
    D3D12_MLIR_PROGRAM_BINDINGS MlirProgramBindings;
  };
};

//===----------------------------------------------------------------------===//
// Interfaces newer than DirectX-Headers 1.606 (declared as the newer headers
// do; the generator in runtime/d3d12/tools reads this block too).
//===----------------------------------------------------------------------===//

// clang-format off
    MIDL_INTERFACE("460caac7-1d24-446a-a184-ca67db494138")
    ID3D12StateObjectProperties1 : public ID3D12StateObjectProperties
    {
    public:
        virtual D3D12_PROGRAM_IDENTIFIER STDMETHODCALLTYPE GetProgramIdentifier( 
            LPCWSTR pProgramName) = 0;
        
    };

    MIDL_INTERFACE("5af5c532-4c91-4cd0-b541-15a405395fc5")
    ID3D12Device12 : public ID3D12Device11
    {
    public:
        virtual D3D12_RESOURCE_ALLOCATION_INFO STDMETHODCALLTYPE GetResourceAllocationInfo3( 
            UINT visibleMask,
            UINT numResourceDescs,
            const D3D12_RESOURCE_DESC1 *pResourceDescs,
            const UINT32 *pNumCastableFormats,
            const DXGI_FORMAT *const *ppCastableFormats,
            D3D12_RESOURCE_ALLOCATION_INFO1 *pResourceAllocationInfo1) = 0;
        
    };

    MIDL_INTERFACE("14eecffc-4df8-40f7-a118-5c816f45695e")
    ID3D12Device13 : public ID3D12Device12
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE OpenExistingHeapFromAddress1( 
            const void *pAddress,
            SIZE_T size,
            REFIID riid,
            void **ppvHeap) = 0;
        
    };

    MIDL_INTERFACE("5f6e592d-d895-44c2-8e4a-88ad4926d323")
    ID3D12Device14 : public ID3D12Device13
    {
    public:
        virtual HRESULT STDMETHODCALLTYPE CreateRootSignatureFromSubobjectInStateObject( 
            ID3D12StateObject *pStateObject,
            LPCWSTR pRootSignatureSubobjectName,
            REFIID riid,
            void **ppvRootSignature) = 0;
        
    };

    MIDL_INTERFACE("34ed2808-ffe6-4c2b-b11a-cabd2b0c59e1")
    ID3D12GraphicsCommandList9 : public ID3D12GraphicsCommandList8
    {
    public:
        virtual void STDMETHODCALLTYPE RSSetDepthBias( 
            FLOAT DepthBias,
            FLOAT DepthBiasClamp,
            FLOAT SlopeScaledDepthBias) = 0;
        
        virtual void STDMETHODCALLTYPE IASetIndexBufferStripCutValue( 
            D3D12_INDEX_BUFFER_STRIP_CUT_VALUE IBStripCutValue) = 0;
        
    };

    MIDL_INTERFACE("7013c015-d161-4b63-a08c-238552dd8acc")
    ID3D12GraphicsCommandList10 : public ID3D12GraphicsCommandList9
    {
    public:
        virtual void STDMETHODCALLTYPE SetProgram( 
            const D3D12_SET_PROGRAM_DESC *pDesc) = 0;
        
        virtual void STDMETHODCALLTYPE DispatchGraph( 
            const D3D12_DISPATCH_GRAPH_DESC *pDesc) = 0;
        
    };
// clang-format on

WINADAPTER_IID(ID3D12StateObjectProperties1, 0x460caac7, 0x1d24, 0x446a, 0xa1, 0x84, 0xca, 0x67, 0xdb, 0x49, 0x41, 0x38);
WINADAPTER_IID(ID3D12Device12, 0x5af5c532, 0x4c91, 0x4cd0, 0xb5, 0x41, 0x15, 0xa4, 0x05, 0x39, 0x5f, 0xc5);
WINADAPTER_IID(ID3D12Device13, 0x14eecffc, 0x4df8, 0x40f7, 0xa1, 0x18, 0x5c, 0x81, 0x6f, 0x45, 0x69, 0x5e);
WINADAPTER_IID(ID3D12Device14, 0x5f6e592d, 0xd895, 0x44c2, 0x8e, 0x4a, 0x88, 0xad, 0x49, 0x26, 0xd3, 0x23);
WINADAPTER_IID(ID3D12GraphicsCommandList9, 0x34ed2808, 0xffe6, 0x4c2b, 0xb1, 0x1a, 0xca, 0xbd, 0x2b, 0x0c, 0x59, 0xe1);
WINADAPTER_IID(ID3D12GraphicsCommandList10, 0x7013c015, 0xd161, 0x4b63, 0xa0, 0x8c, 0x23, 0x85, 0x52, 0xdd, 0x8a, 0xcc);

//===----------------------------------------------------------------------===//
// DXCGC MLIR interfaces (spec appendix). Defined in libcgc_d3d12; a
// translation unit that defines INITGUID before including this header gets
// its own definitions, as with dxguid.lib.
//===----------------------------------------------------------------------===//

DEFINE_GUID(CGC_INPUT,
0x7fc4f23f, 0x2474, 0x4ae8, 0xae, 0x7a, 0x27, 0x22, 0x11, 0x8b, 0x35, 0xe);
DEFINE_GUID(CGC_OUTPUT,
0xf53e923f, 0x5300, 0x4eef, 0x8f, 0x1e, 0xad, 0xa0, 0x3f, 0xff, 0x26, 0x5);
DEFINE_GUID(CGC_SUBGRAPH_PARTITION,
0xeaa277c3, 0x190d, 0x4049, 0xa7, 0xb0, 0xa6, 0x11, 0xb1, 0x17, 0x1, 0xb6);
DEFINE_GUID(CGC_SUBGRAPH_DECLARATION_REQUEST,
0xeb53032a, 0x1116, 0x4e71, 0x83, 0x9, 0x54, 0x34, 0x7c, 0x1e, 0x5a, 0x26);
DEFINE_GUID(CGC_SUBGRAPH_DECLARATION,
0xbe441609, 0x6ab8, 0x4fa8, 0xb5, 0x51, 0x1, 0x9e, 0xd9, 0x38, 0xc2, 0x98);
DEFINE_GUID(CGC_SUBGRAPH_SPECIALIZATION_REQUEST,
0xebed5ed6, 0x2206, 0x457b, 0x8b, 0xd0, 0xab, 0xfc, 0xc6, 0x77, 0x19, 0x5b);
DEFINE_GUID(CGC_SUBGRAPH_SPECIALIZATION,
0xf90a981e, 0xfcd, 0x46d8, 0x8a, 0xa1, 0x16, 0x69, 0x94, 0xc4, 0xde, 0x2);

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

/// Creates a device on the selected driver (see CGCD3D12SelectDriver; by
/// default $CGC_D3D12_DRIVER, else the CPU driver next to
/// libcgc_d3d12.so). pAdapter must be null. MinimumFeatureLevel is checked
/// against D3D_FEATURE_LEVEL_12_0 (the level drivers report); ppDevice may be
/// null to test for support.
CGC_D3D12_API HRESULT D3D12CreateDevice(IUnknown *pAdapter,
                                        D3D_FEATURE_LEVEL MinimumFeatureLevel,
                                        REFIID riid, void **ppDevice);

/// ID3D12Debug (and ID3D12Debug1/3 for EnableDebugLayer): enabling it makes
/// devices created afterwards validate with the debug layer.
CGC_D3D12_API HRESULT D3D12GetDebugInterface(REFIID riid, void **ppvDebug);

//===----------------------------------------------------------------------===//
// cgc extensions
//===----------------------------------------------------------------------===//

/// Flags of CGCD3D12SetDeviceCreationFlags, applied to devices created after
/// the call (and OR'ed with the environment: CGC_D3D12_DEBUG=1,
/// CGC_D3D12_DEVELOPER_MODE=1).
enum CGC_D3D12_DEVICE_FLAGS {
  CGC_D3D12_DEVICE_FLAG_NONE = 0,
  /// Validate with the debug layer (same as ID3D12Debug::EnableDebugLayer).
  CGC_D3D12_DEVICE_FLAG_DEBUG = 0x1,
  /// Windows "developer mode": MLIR interface GUIDs the runtime does not know
  /// are passed to the driver instead of failing with E_INVALIDARG.
  CGC_D3D12_DEVICE_FLAG_DEVELOPER_MODE = 0x2,
};
CGC_D3D12_API void CGCD3D12SetDeviceCreationFlags(UINT Flags);

/// Selects the driver devices are created on: a shared-library path, or a
/// registered name ("cpu" is the library libcgc_driver_cpu.so
/// next to libcgc_d3d12.so). Null restores the default ($CGC_D3D12_DRIVER,
/// else "cpu"). Fails with E_INVALIDARG if the library cannot be loaded
/// or does not export a compatible DDI (the message goes to stderr and to
/// CGCD3D12GetLastError).
CGC_D3D12_API HRESULT CGCD3D12SelectDriver(const char *pDriverPathOrName);

/// Creates a device on the driver `pDriverPathOrName` (a name or a path, as
/// for CGCD3D12SelectDriver; null or empty: the default), leaving the
/// selection of D3D12CreateDevice untouched, so threads may create devices on
/// different drivers at once. Fails like CGCD3D12SelectDriver for a driver
/// that cannot be loaded, and like D3D12CreateDevice otherwise.
CGC_D3D12_API HRESULT CGCD3D12CreateDeviceOnDriver(const char *pDriverPathOrName, REFIID riid,
                                                   void **ppDevice);

/// CGCD3D12CreateDeviceOnDriver with the driver's configuration for this
/// device: `pDriverOptions` is the driver's own text (the CPU driver
/// driver's: "name=value,...", docs/runtime.md; null or empty: defaults).
/// A driver that refuses it fails creation with its reason in
/// CGCD3D12GetLastError.
CGC_D3D12_API HRESULT CGCD3D12CreateDeviceWithOptions(const char *pDriverPathOrName,
                                                      const char *pDriverOptions, REFIID riid,
                                                      void **ppDevice);

/// Lists the drivers found: writes up to *pCount NUL-separated paths into
/// pBuffer (may be null to query sizes). *pCount receives the number of
/// drivers, *pBufferSize the bytes needed.
CGC_D3D12_API HRESULT CGCD3D12EnumerateDrivers(char *pBuffer, SIZE_T *pBufferSize,
                                               UINT *pCount);

/// The last error message of a failed entry point on this thread (device
/// creation, driver loading), or "" if none.
CGC_D3D12_API const char *CGCD3D12GetLastError();

/// Debug-layer and driver messages are stored in the device's
/// ID3D12InfoQueue / ID3D12InfoQueue1 (QueryInterface on the device; register
/// a callback with ID3D12InfoQueue1::RegisterMessageCallback) and printed to
/// stderr unless CGC_D3D12_DEBUG_QUIET=1.

//===----------------------------------------------------------------------===//
// cgc extension: precompiled MLIR programs (cached blobs)
//===----------------------------------------------------------------------===//

/// The spec's "Program Precompilation" (PSDB) as D3D12 does cached pipeline
/// state: next to an MLIR program subobject, a state object description may
/// hold a D3D12_CACHED_MLIR_PROGRAM_CGC subobject naming that program and
/// giving a cached blob (D3D12_CACHED_PIPELINE_STATE, as in
/// D3D12_COMPUTE_PIPELINE_STATE_DESC::CachedPSO): the program's precompiled
/// form, made offline by the driver's compiler (cgc-compile stores one per
/// MLIR program of the cpu target in a compiled model; the format is
/// cgc/precompiled_program.h). The bytecode is still required: the driver
/// skips compiling it if the blob was made by its own compiler from exactly
/// that bytecode, and compiles it otherwise. Unlike a cached PSO, a blob
/// that does not match is not an error (D3D12_ERROR_DRIVER_VERSION_MISMATCH)
/// but a cache miss, reported by CGCD3D12GetCachedMlirProgramStatus; a blob
/// that matches but is malformed fails the creation with E_INVALIDARG.
///
/// Rules (E_INVALIDARG otherwise): ProgramName names an MLIR program
/// subobject of the same description; at most one per program;
/// pCachedBlob is null exactly when CachedBlobSizeInBytes is 0 (an empty
/// blob is ignored, as with CachedPSO). The blob is read during the call
/// only.
inline const D3D12_STATE_SUBOBJECT_TYPE D3D12_STATE_SUBOBJECT_TYPE_CACHED_MLIR_PROGRAM_CGC =
    static_cast<D3D12_STATE_SUBOBJECT_TYPE>(0x10000);

struct D3D12_CACHED_MLIR_PROGRAM_CGC {
  LPCWSTR ProgramName;
  D3D12_CACHED_PIPELINE_STATE CachedBlob;
};

enum CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS {
  /// No cached blob was given for the program: its bytecode was compiled.
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE = 0,
  /// The program was created from its cached blob; nothing was compiled.
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT = 1,
  /// The blob was made by another compiler (another driver, another build),
  /// from other bytecode or in another format: the bytecode was compiled.
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_MISMATCH = 2,
  /// No cached blob was given; the program was created from the object code
  /// a registered precompiled database holds for it; nothing was compiled.
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT = 3,
  /// A registered precompiled database holds a value under the program's
  /// key, made by another compiler or from other bytecode: the bytecode was
  /// compiled.
  CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_STALE = 4,
};

/// How the MLIR program pProgramName of pStateObject was created.
/// E_INVALIDARG if the state object (of this runtime) has no such program.
CGC_D3D12_API HRESULT CGCD3D12GetCachedMlirProgramStatus(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName,
    CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS *pStatus);

/// Registers, for the process, a state object database (SODB) and the
/// precompiled databases (PSDBs) compiled from it (cgc-soc compile): the
/// shader cache registration API's component, docs/precompilation.md.
/// Devices then offer their drivers the values of every registered PSDB that
/// matches the driver's compiler (adapter family, ABI, compiler version,
/// application profile), through groups whose version is the SODB's; a
/// driver creates an MLIR program from such a value instead of compiling
/// its bytecode (CGCD3D12GetCachedMlirProgramStatus: DATABASE_HIT). The
/// files are opened and checked now (which groups are current is decided
/// now, from the SODB); the PSDBs stay open and are queried at each lookup
/// and their ".values" files stay mapped: keep them in place. E_INVALIDARG (CGCD3D12GetLastError) for
/// a file that cannot be opened or is not such a database, a PSDB for
/// another application, or no PSDB. The environment variable
/// CGC_D3D12_PRECOMPILED_DATABASES="SODB=PSDB[,PSDB...][;SODB=...]" registers
/// the same way when the first device is created; a failure fails that
/// creation and every later one, naming the variable (the pairs before the
/// bad one stay registered).
CGC_D3D12_API HRESULT CGCD3D12RegisterPrecompiledDatabases(
    const char *pStateObjectDatabase, UINT NumPrecompiledDatabases,
    const char *const *ppPrecompiledDatabases);
/// Forgets every registered database (the environment's included).
CGC_D3D12_API void CGCD3D12ClearPrecompiledDatabases();

struct CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS {
  UINT RegisteredDatabases; ///< PSDBs registered in the process
  UINT MatchingDatabases;   ///< of them, those this device's driver can use
  UINT64 Lookups;           ///< programs the driver looked up
  UINT64 Hits;              ///< lookups a database answered
};
/// What pDevice's driver found in the registered databases so far: a miss
/// (Lookups - Hits) is compiled by the driver. Each registered database the
/// driver cannot use is reported once as a warning (debug output), with
/// the reason.
CGC_D3D12_API HRESULT CGCD3D12GetPrecompiledDatabaseStatistics(
    ID3D12Device *pDevice, CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS *pStatistics);

/// Declares that the constant bind points of the MLIR program pProgramName
/// of pStateObject are bound at the GPU addresses of pBindings (GPU
/// bindings, one per constant bind point, every constant bind point once)
/// and hold their final bytes, which will not change while bound there: the
/// driver may prepare what it derives from them (packed or transformed
/// weights) now rather than on the program's first run. Nothing the
/// application can see is written. S_OK when the driver prepared, S_FALSE
/// when it does not implement the call (it prepares on the first run),
/// E_INVALIDARG for an unknown program, a bind point that is not constant, a
/// constant one missing or repeated, or a null address.
CGC_D3D12_API HRESULT CGCD3D12PrepareMlirProgramConstants(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName, UINT NumBindings,
    const D3D12_MLIR_PROGRAM_BINDING *pBindings);

/// The content identity of a constant binding's bytes (the application's
/// choice of digest: equal bytes, equal digest; a compiled model's runtime
/// derives it from the file's verified digest, the binding's offset and
/// size).
struct CGC_D3D12_CONSTANT_DIGEST {
  UINT8 Digest[16];
};
/// What the driver did with the program's constants: prepared blocks
/// mapped from a registered precompiled database (made offline by
/// `cgc-soc prepare`; nothing transformed) and computed now.
struct CGC_D3D12_PREPARED_CONSTANTS_STATISTICS {
  UINT64 BlocksMapped;
  UINT64 BytesMapped;
  UINT64 BlocksComputed;
  UINT64 BytesComputed;
};
/// CGCD3D12PrepareMlirProgramConstants with the content digest of each
/// binding's bytes (pDigests[i] for pBindings[i]): the driver may map the
/// prepared constants from a registered precompiled database that holds
/// them for exactly these contents (docs/precompilation.md) instead of
/// transforming the weights. pStatistics may be null. Return values as
/// CGCD3D12PrepareMlirProgramConstants; a driver without the digest entry
/// point prepares as that does (statistics zero).
CGC_D3D12_API HRESULT CGCD3D12PrepareMlirProgramConstantsWithDigests(
    ID3D12StateObject *pStateObject, LPCWSTR pProgramName, UINT NumBindings,
    const D3D12_MLIR_PROGRAM_BINDING *pBindings, const CGC_D3D12_CONSTANT_DIGEST *pDigests,
    CGC_D3D12_PREPARED_CONSTANTS_STATISTICS *pStatistics);

/// Creates an event a fence can signal (SetEventOnCompletion). On Linux an
/// event is an eventfd; CGCWaitForEvent blocks until it is signaled (and
/// resets it), with a timeout in milliseconds (UINT32_MAX: forever). Returns
/// S_OK, or S_FALSE on timeout.
CGC_D3D12_API HANDLE CGCCreateEvent();
CGC_D3D12_API HRESULT CGCWaitForEvent(HANDLE hEvent, UINT32 Milliseconds);
CGC_D3D12_API void CGCCloseEvent(HANDLE hEvent);

/// On Linux a HANDLE is a file descriptor. CreateSharedHandle returns a new
/// descriptor for a heap or committed resource created with
/// D3D12_HEAP_FLAG_SHARED (a memfd), or for a fence created with
/// D3D12_FENCE_FLAG_SHARED (a cross-process timeline: its value lives in a
/// shared page, waits sleep on a futex). The descriptor is close-on-exec
/// unless SECURITY_ATTRIBUTES::bInheritHandle is TRUE; send it to another
/// process (inheritance, SCM_RIGHTS) and OpenSharedHandle it there as
/// ID3D12Heap, ID3D12Resource or ID3D12Fence. OpenSharedHandle also opens any
/// mappable file (a memfd or /dev/shm file the application made) as a heap.
/// The caller owns handles and closes them with CGCCloseHandle; objects opened
/// from a handle keep their own descriptor.
CGC_D3D12_API HANDLE CGCHandleFromFd(int fd);
/// The descriptor of a handle (not duplicated), or -1 for a null handle.
CGC_D3D12_API int CGCFdFromHandle(HANDLE handle);
CGC_D3D12_API void CGCCloseHandle(HANDLE handle);

#endif // CGC_D3D12_MLIR_H
