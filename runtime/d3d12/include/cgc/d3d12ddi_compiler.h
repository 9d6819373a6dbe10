/*===- cgc/d3d12ddi_compiler.h - The compiler plugin DDI ---------*- C -*-===*
 *
 * What a vendor implements so that MLIR programs can be compiled offline,
 * without a device: Advanced Shader Delivery's shader compiler plugin DDI
 * (DirectX-Specs d3d/ShaderCompilerPlugin.md) for cgc's state objects of
 * MLIR programs, extended with what the MLIR programs spec says it lacks
 * ("Program Precompilation"): the MLIR exchange (pattern declarations and
 * specialization answers) through GetCaps, so that an offline toolchain can
 * lower Input IR for the plugin's adapter family with no driver loaded.
 * docs/precompilation.md describes the flow; the CPU driver's compiler is
 * the first plugin (libcgc_compiler_plugin_cpu.so).
 *
 * A plugin is a shared library exporting
 *
 *   HRESULT D3D12OpenCompilerDDI(D3D12DDIARG_COMPILER_OPEN_DDI *pArgs);
 *
 * The host then negotiates (the spec's order, which the host follows and a
 * plugin may rely on):
 *   1. pfnGetSupportedVersions twice (count, then the versions, newest
 *      first): plugin DDI versions (CGC_COMPILER_PLUGIN_DDI_VERSION below);
 *   2. pfnSetSelectedVersion(version, usermode DDI version): the plugin
 *      refuses (E_INVALIDARG) a version it did not list or a usermode DDI
 *      (CGC_D3D12DDI_VERSION) whose major differs from its own;
 *   3. pfnFillDDITable for the CAPABILITIES and COMPILER tables (E_INVALIDARG
 *      before a version is selected, for an unknown table or a table size
 *      other than the selected version's);
 *   4. pfnSetCallbackDDITable(CACHE) before any compiler is created.
 * Pointers passed in are valid during the call only, except a state object
 * description passed to a Compile* function, valid until that state
 * object is destroyed (the spec's rule). Plugins never throw across this
 * boundary.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_D3D12DDI_COMPILER_H
#define CGC_D3D12DDI_COMPILER_H

#include "cgc/d3d12ddi_mlir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The spec's encoding: a 32-bit interface version (major << 16 | minor)
 * above a 32-bit build/revision. */
#define CGC_COMPILER_PLUGIN_INTERFACE_VERSION_MAJOR 1
#define CGC_COMPILER_PLUGIN_INTERFACE_VERSION_MINOR 0
#define CGC_COMPILER_PLUGIN_DDI_VERSION                                                    \
  (((UINT64)((CGC_COMPILER_PLUGIN_INTERFACE_VERSION_MAJOR << 16) |                         \
             CGC_COMPILER_PLUGIN_INTERFACE_VERSION_MINOR))                                 \
   << 32)
#define CGC_COMPILER_PLUGIN_OPEN_NAME "D3D12OpenCompilerDDI"

typedef struct D3D12DDI_HCOMPILERDDI { void *pDrvPrivate; } D3D12DDI_HCOMPILERDDI;
typedef struct D3D12DDI_HRTCOMPILERDDI { void *handle; } D3D12DDI_HRTCOMPILERDDI;
typedef struct D3D12DDI_HCOMPILER { void *pDrvPrivate; } D3D12DDI_HCOMPILER;
typedef struct D3D12DDI_HRTCOMPILER { void *handle; } D3D12DDI_HRTCOMPILER;
typedef struct D3D12DDI_HCOMPILERSTATEOBJECT { void *pDrvPrivate; } D3D12DDI_HCOMPILERSTATEOBJECT;
typedef struct D3D12DDI_HRTCOMPILERCACHESESSION { void *handle; } D3D12DDI_HRTCOMPILERCACHESESSION;

/* D3D12_APPLICATION_DESC. Versions are D3D12_VERSION_NUMBERs. */
typedef struct D3D12DDI_APPLICATION_DESC {
  LPCWSTR pExeFilename;
  LPCWSTR pName;
  UINT64 Version;
  LPCWSTR pEngineName; /* may be null */
  UINT64 EngineVersion;
} D3D12DDI_APPLICATION_DESC;

typedef struct D3D12DDI_COMPILER_ADAPTER_FAMILY {
  WCHAR szAdapterFamily[128];
} D3D12DDI_COMPILER_ADAPTER_FAMILY;

typedef struct D3D12DDI_COMPILER_TARGET {
  UINT AdapterFamilyIndex;
  UINT64 ABIVersion;
} D3D12DDI_COMPILER_TARGET;

/*--- Open and version ------------------------------------------------------*/

typedef void(APIENTRY *PFND3D12DDI_COMPILER_DESTROY_DDI)(D3D12DDI_HCOMPILERDDI);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_GET_SUPPORTED_VERSIONS)(
    D3D12DDI_HCOMPILERDDI, UINT32 *puEntries, UINT64 *pSupportedPluginDDIVersions);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_SET_SELECTED_VERSION)(
    D3D12DDI_HCOMPILERDDI, UINT64 PluginDDIVersion, UINT64 UsermodeDDIVersion);

typedef enum D3D12DDI_COMPILER_TABLE_TYPE {
  D3D12DDI_COMPILER_TABLE_TYPE_CAPABILITIES = 0,
  D3D12DDI_COMPILER_TABLE_TYPE_COMPILER = 1,
} D3D12DDI_COMPILER_TABLE_TYPE;

typedef enum D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE {
  D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE_CACHE = 0,
} D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE;

typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_FILL_DDI_TABLE)(
    D3D12DDI_HCOMPILERDDI, D3D12DDI_COMPILER_TABLE_TYPE, void *pTable, SIZE_T TableSize);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_SET_CALLBACK_DDI_TABLE)(
    D3D12DDI_HCOMPILERDDI, D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE, const void *pTable,
    SIZE_T TableSize);

typedef struct D3D12DDI_COMPILER_DDI_FUNCS {
  PFND3D12DDI_COMPILER_DESTROY_DDI pfnDestroyCompilerDDI;
  PFND3D12DDI_COMPILER_GET_SUPPORTED_VERSIONS pfnGetSupportedVersions;
  PFND3D12DDI_COMPILER_SET_SELECTED_VERSION pfnSetSelectedVersion;
  PFND3D12DDI_COMPILER_FILL_DDI_TABLE pfnFillDDITable;
  PFND3D12DDI_COMPILER_SET_CALLBACK_DDI_TABLE pfnSetCallbackDDITable;
} D3D12DDI_COMPILER_DDI_FUNCS;

typedef struct D3D12DDIARG_COMPILER_OPEN_DDI {
  D3D12DDI_HRTCOMPILERDDI hRTCompilerDDI;  /* in */
  D3D12DDI_HCOMPILERDDI hCompilerDDI;      /* out */
  const D3D12DDI_COMPILER_DDI_FUNCS *pDDIFuncs; /* out */
} D3D12DDIARG_COMPILER_OPEN_DDI;

typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_OPEN_DDI)(D3D12DDIARG_COMPILER_OPEN_DDI *);

/*--- Capabilities (TABLE_TYPE_CAPABILITIES) --------------------------------*/

/* GetCaps answers, for the target, the caps a device of its family would:
 * D3D12DDI_CAPS_TYPE_MLIR (the tier), D3D12DDICAPS_TYPE_MLIR_INTERFACE_SUPPORT_0119
 * and D3D12DDICAPS_TYPE_MLIR_EXCHANGE_0119 (pInfo a D3D12DDI_MLIR_EXCHANGE_0119,
 * the same protocol as the driver's: pattern declarations, specialization
 * answers). DXGI_ERROR_UNSUPPORTED for other caps. */
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_GET_CAPS)(
    D3D12DDI_HCOMPILERDDI, const D3D12DDI_COMPILER_TARGET *pTarget,
    const D3D12DDI_APPLICATION_DESC *pApplicationDesc, const D3D12DDIARG_GETCAPS *pCaps);
/* DXGI_ERROR_NOT_FOUND past the last family (indices are contiguous from 0). */
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_ENUMERATE_ADAPTER_FAMILIES)(
    D3D12DDI_HCOMPILERDDI, UINT AdapterFamilyIndex, D3D12DDI_COMPILER_ADAPTER_FAMILY *);
/* Newest first. A null array asks for the count; a short one receives the
 * newest and DXGI_ERROR_MORE_DATA. */
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_GET_ADAPTER_FAMILY_ABI_VERSIONS)(
    D3D12DDI_HCOMPILERDDI, UINT AdapterFamilyIndex, UINT *pNumABIVersions, UINT64 *pABIVersions);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_GET_COMPILER_VERSION)(
    D3D12DDI_HCOMPILERDDI, UINT AdapterFamilyIndex, UINT64 *pCompilerVersion);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_GET_APPLICATION_PROFILE_VERSION)(
    D3D12DDI_HCOMPILERDDI, const D3D12DDI_COMPILER_TARGET *pTarget,
    const D3D12DDI_APPLICATION_DESC *pApplicationDesc, UINT64 *pApplicationProfileVersion);

typedef struct D3D12DDI_COMPILER_CAPABILITIES_FUNCS {
  PFND3D12DDI_COMPILER_GET_CAPS pfnGetCaps;
  PFND3D12DDI_COMPILER_ENUMERATE_ADAPTER_FAMILIES pfnEnumerateAdapterFamilies;
  PFND3D12DDI_COMPILER_GET_ADAPTER_FAMILY_ABI_VERSIONS pfnGetAdapterFamilyABIVersions;
  PFND3D12DDI_COMPILER_GET_COMPILER_VERSION pfnGetCompilerVersion;
  PFND3D12DDI_COMPILER_GET_APPLICATION_PROFILE_VERSION pfnGetApplicationProfileVersion;
} D3D12DDI_COMPILER_CAPABILITIES_FUNCS;

/*--- Cache session callbacks (CALLBACK_TABLE_TYPE_CACHE) -------------------*/

/* FindValue: as pfnFindPrecompiledValueCgc (cgc/d3d12ddi_mlir.h).
 * StoreValue: each value non-empty, at most one per type;
 * DXGI_ERROR_ALREADY_EXISTS if one of the types is already stored under
 * the key. SetObjectValueKeys: the value keys of the object being compiled,
 * exactly once per Compile* call. The session handle is valid during the
 * Compile* call that received it. */
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_CACHE_FIND_VALUE_CB)(
    D3D12DDI_HRTCOMPILERCACHESESSION, const D3D12DDI_COMPILER_CACHE_VALUE_KEY *pValueKey,
    D3D12DDI_COMPILER_CACHE_TYPED_VALUE *pValues, UINT NumValues);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_CACHE_STORE_VALUE_CB)(
    D3D12DDI_HRTCOMPILERCACHESESSION, const D3D12DDI_COMPILER_CACHE_VALUE_KEY *pValueKey,
    const D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE *pValues, UINT NumValues);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_CACHE_SET_OBJECT_VALUE_KEYS_CB)(
    D3D12DDI_HRTCOMPILERCACHESESSION, const D3D12DDI_COMPILER_CACHE_VALUE_KEY *pValueKeys,
    UINT NumValueKeys);

typedef struct D3D12DDI_COMPILER_CACHE_CALLBACKS {
  PFND3D12DDI_COMPILER_CACHE_FIND_VALUE_CB pfnCompilerCacheFindValue;
  PFND3D12DDI_COMPILER_CACHE_STORE_VALUE_CB pfnCompilerCacheStoreValue;
  PFND3D12DDI_COMPILER_CACHE_SET_OBJECT_VALUE_KEYS_CB pfnCompilerCacheSetObjectValueKeys;
  /* cgc extension: a message for the host's diagnostics (why a program
   * cannot be compiled), during a Compile* call. */
  void(APIENTRY *pfnCompilerCacheMessageCgc)(D3D12DDI_HRTCOMPILERCACHESESSION,
                                             const char *pMessage);
} D3D12DDI_COMPILER_CACHE_CALLBACKS;

/*--- Compiling (TABLE_TYPE_COMPILER) ----------------------------------------*/

/* The host allocates the compiler's and each state object's private memory
 * (CalcPrivate*Size bytes, aligned for any type) and the plugin constructs
 * its object there. CompileCreateStateObject compiles every MLIR program of
 * the description (D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM subobjects,
 * their bytecode the DX container CreateStateObject gets), stores the
 * values ValueTypeFlags asks for under value keys it derives from what
 * decides them -- the same keys its driver derives at CreateStateObject --
 * and calls SetObjectValueKeys once. An error is E_INVALIDARG (with a
 * message through pfnCompilerCacheMessageCgc) for a program it cannot
 * compile. */
typedef SIZE_T(APIENTRY *PFND3D12DDI_COMPILER_CALC_PRIVATE_COMPILER_SIZE)(
    const D3D12DDI_COMPILER_TARGET *pTarget, const D3D12DDI_APPLICATION_DESC *pApplicationDesc);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_CREATE_COMPILER)(
    const D3D12DDI_COMPILER_TARGET *pTarget, const D3D12DDI_APPLICATION_DESC *pApplicationDesc,
    D3D12DDI_HCOMPILER hCompiler, D3D12DDI_HRTCOMPILER hRTCompiler);
typedef void(APIENTRY *PFND3D12DDI_COMPILER_DESTROY_COMPILER)(D3D12DDI_HCOMPILER);
typedef SIZE_T(APIENTRY *PFND3D12DDI_COMPILER_CALC_PRIVATE_STATE_OBJECT_SIZE)(
    D3D12DDI_HCOMPILER, const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *pCreateStateObject);
typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_COMPILE_CREATE_STATE_OBJECT)(
    D3D12DDI_HCOMPILER, D3D12DDI_HRTCOMPILERCACHESESSION,
    D3D12DDI_COMPILER_VALUE_TYPE_FLAGS ValueTypeFlags,
    const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *pCreateStateObject,
    D3D12DDI_HCOMPILERSTATEOBJECT hStateObject);
typedef void(APIENTRY *PFND3D12DDI_COMPILER_DESTROY_STATE_OBJECT)(
    D3D12DDI_HCOMPILER, D3D12DDI_HCOMPILERSTATEOBJECT);

typedef struct D3D12DDI_COMPILER_FUNCS {
  PFND3D12DDI_COMPILER_CALC_PRIVATE_COMPILER_SIZE pfnCalcPrivateCompilerSize;
  PFND3D12DDI_COMPILER_CREATE_COMPILER pfnCreateCompiler;
  PFND3D12DDI_COMPILER_DESTROY_COMPILER pfnDestroyCompiler;
  PFND3D12DDI_COMPILER_CALC_PRIVATE_STATE_OBJECT_SIZE pfnCalcPrivateStateObjectSize;
  PFND3D12DDI_COMPILER_COMPILE_CREATE_STATE_OBJECT pfnCompileCreateStateObject;
  PFND3D12DDI_COMPILER_DESTROY_STATE_OBJECT pfnDestroyStateObject;
} D3D12DDI_COMPILER_FUNCS;

/*--- Constants (TABLE_TYPE_CONSTANTS_CGC, cgc extension) --------------------*/

/* The spec's "constant preprocessing ... offline": a plugin whose driver
 * prepares constants (transforms weights into its kernels' layouts) does it
 * here, for one MLIR program and one set of constant contents, and stores
 * the result as a D3D12DDI_COMPILER_CACHE_VALUE_TYPE_PREPARED_CONSTANTS_CGC
 * value under a key its driver derives again from the same program,
 * digests and its own configuration (pfnMapPrecompiledValueCgc at
 * pfnPrepareMlirProgramConstantsWithDigestsCgc). Threads: the worker
 * threads the driver will run the program on, where layouts depend on it.
 * No SetObjectValueKeys: prepared constants belong to no state object. */
#define D3D12DDI_COMPILER_TABLE_TYPE_CONSTANTS_CGC ((D3D12DDI_COMPILER_TABLE_TYPE)0x10000)

typedef struct D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC {
  UINT BindPointIndex;
  const void *pData;
  UINT64 SizeInBytes;
  D3D12DDI_CONSTANT_DIGEST_CGC Digest;
} D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC;

typedef HRESULT(APIENTRY *PFND3D12DDI_COMPILER_PREPARE_CONSTANTS_CGC)(
    D3D12DDI_HCOMPILER, D3D12DDI_HRTCOMPILERCACHESESSION,
    const D3D12DDI_MLIR_PROGRAM_DESC_0119 *pProgram, UINT NumConstants,
    const D3D12DDI_MLIR_PROGRAM_CONSTANT_CGC *pConstants, UINT Threads);

typedef struct D3D12DDI_COMPILER_CONSTANTS_FUNCS_CGC {
  PFND3D12DDI_COMPILER_PREPARE_CONSTANTS_CGC pfnPrepareMlirProgramConstantsCgc;
} D3D12DDI_COMPILER_CONSTANTS_FUNCS_CGC;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CGC_D3D12DDI_COMPILER_H */
