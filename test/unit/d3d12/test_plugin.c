/*===- test_plugin.c - A second compiler plugin, written against the DDI -===*
 *
 * A TEST plugin proving that a vendor can write a compiler plugin from the
 * public headers alone (cgc/d3d12ddi_compiler.h and the DX container layout
 * documented in cgc/container.h), in plain C, without cgc's libraries. It
 * compiles for the TEST DOUBLE driver (test_driver.cpp), adapter family
 * "cgc-test-copy": the double executes a program by copying bind point 0
 * into the last one, and needs the program's bind points; this plugin's
 * "object code" for a program is
 *
 *   'TCPY'  uint32 magic
 *   uint64  FNV-1a of the whole program container (what it was made from)
 *   bytes   the container's 'CGBP' part (the bind points), as found
 *
 * stored under the value key "cgc-test-copy/<16 hex digits of that FNV>",
 * which the double derives at CreateStateObject.
 *
 * TEST-ONLY knob: CGC_TEST_PLUGIN_DDI_VERSION (hex) makes it report that
 * plugin DDI version instead of its own, for the negotiation tests.
 *
 *===----------------------------------------------------------------------===*/

#include "cgc/d3d12ddi_compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAMILY "cgc-test-copy"
#define ABI_VERSION 1u
#define COMPILER_VERSION 0x0001000000000000ull

typedef struct Plugin {
  int selected;
  D3D12DDI_COMPILER_CACHE_CALLBACKS cache;
  int haveCache;
} Plugin;

static Plugin *gLastOpened;

typedef struct Compiler {
  Plugin *plugin;
} Compiler;

static UINT64 reportedVersion(void) {
  const char *knob = getenv("CGC_TEST_PLUGIN_DDI_VERSION");
  return knob && *knob ? strtoull(knob, NULL, 16) : CGC_COMPILER_PLUGIN_DDI_VERSION;
}

static UINT64 fnv1a(const unsigned char *p, SIZE_T n) {
  UINT64 h = 0xcbf29ce484222325ull;
  for (SIZE_T i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static UINT32 le32(const unsigned char *p) {
  return (UINT32)p[0] | (UINT32)p[1] << 8 | (UINT32)p[2] << 16 | (UINT32)p[3] << 24;
}

/* The 'CGBP' part of a DX container (cgc/container.h's layout), or NULL. */
static const unsigned char *findPart(const unsigned char *c, SIZE_T size, const char *fourcc,
                                     UINT32 *partSize) {
  if (size < 32 || memcmp(c, "DXBC", 4) || le32(c + 24) != size)
    return NULL;
  UINT32 count = le32(c + 28);
  if (count > (size - 32) / 4)
    return NULL;
  for (UINT32 i = 0; i < count; ++i) {
    UINT32 offset = le32(c + 32 + 4 * i);
    if (offset > size || size - offset < 8)
      return NULL;
    UINT32 n = le32(c + offset + 4);
    if (n > size - offset - 8)
      return NULL;
    if (!memcmp(c + offset, fourcc, 4)) {
      *partSize = n;
      return c + offset + 8;
    }
  }
  return NULL;
}

static void APIENTRY destroyDDI(D3D12DDI_HCOMPILERDDI h) {
  if (gLastOpened == h.pDrvPrivate)
    gLastOpened = NULL;
  free(h.pDrvPrivate);
}

static HRESULT APIENTRY getSupportedVersions(D3D12DDI_HCOMPILERDDI h, UINT32 *count,
                                             UINT64 *versions) {
  (void)h;
  if (!count)
    return E_INVALIDARG;
  if (versions) {
    if (*count < 1)
      return DXGI_ERROR_MORE_DATA;
    versions[0] = reportedVersion();
  }
  *count = 1;
  return S_OK;
}

static HRESULT APIENTRY setSelectedVersion(D3D12DDI_HCOMPILERDDI h, UINT64 version,
                                           UINT64 usermode) {
  Plugin *plugin = (Plugin *)h.pDrvPrivate;
  if (version != reportedVersion() || version >> 32 != CGC_COMPILER_PLUGIN_DDI_VERSION >> 32 ||
      (usermode >> 16) != CGC_D3D12DDI_VERSION_MAJOR)
    return E_INVALIDARG;
  plugin->selected = 1;
  return S_OK;
}

static HRESULT APIENTRY getCaps(D3D12DDI_HCOMPILERDDI h, const D3D12DDI_COMPILER_TARGET *target,
                                const D3D12DDI_APPLICATION_DESC *app,
                                const D3D12DDIARG_GETCAPS *caps) {
  (void)h, (void)target, (void)app, (void)caps;
  return DXGI_ERROR_UNSUPPORTED; /* no MLIR exchange: the double declares nothing */
}

static HRESULT APIENTRY enumerateFamilies(D3D12DDI_HCOMPILERDDI h, UINT index,
                                          D3D12DDI_COMPILER_ADAPTER_FAMILY *family) {
  (void)h;
  if (!family)
    return E_INVALIDARG;
  if (index)
    return DXGI_ERROR_NOT_FOUND;
  memset(family, 0, sizeof(*family));
  for (size_t i = 0; FAMILY[i]; ++i)
    family->szAdapterFamily[i] = (WCHAR)FAMILY[i];
  return S_OK;
}

static HRESULT APIENTRY abiVersions(D3D12DDI_HCOMPILERDDI h, UINT index, UINT *count,
                                    UINT64 *versions) {
  (void)h;
  if (index)
    return DXGI_ERROR_NOT_FOUND;
  if (!count)
    return E_INVALIDARG;
  if (versions) {
    if (*count < 1)
      return DXGI_ERROR_MORE_DATA;
    versions[0] = ABI_VERSION;
  }
  *count = 1;
  return S_OK;
}

static HRESULT APIENTRY compilerVersion(D3D12DDI_HCOMPILERDDI h, UINT index, UINT64 *version) {
  (void)h;
  if (index)
    return DXGI_ERROR_NOT_FOUND;
  *version = COMPILER_VERSION;
  return S_OK;
}

static HRESULT APIENTRY profileVersion(D3D12DDI_HCOMPILERDDI h,
                                       const D3D12DDI_COMPILER_TARGET *target,
                                       const D3D12DDI_APPLICATION_DESC *app, UINT64 *version) {
  (void)h, (void)target, (void)app;
  *version = 0;
  return S_OK;
}

static SIZE_T APIENTRY compilerSize(const D3D12DDI_COMPILER_TARGET *t,
                                    const D3D12DDI_APPLICATION_DESC *a) {
  (void)t, (void)a;
  return sizeof(Compiler);
}

static HRESULT APIENTRY createCompiler(const D3D12DDI_COMPILER_TARGET *target,
                                       const D3D12DDI_APPLICATION_DESC *app, D3D12DDI_HCOMPILER h,
                                       D3D12DDI_HRTCOMPILER rt) {
  (void)app, (void)rt;
  if (!target || target->AdapterFamilyIndex != 0 || target->ABIVersion != ABI_VERSION ||
      !gLastOpened || !gLastOpened->haveCache)
    return E_INVALIDARG;
  ((Compiler *)h.pDrvPrivate)->plugin = gLastOpened;
  return S_OK;
}

static void APIENTRY destroyCompiler(D3D12DDI_HCOMPILER h) { (void)h; }

static SIZE_T APIENTRY stateObjectSize(D3D12DDI_HCOMPILER h,
                                       const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args) {
  (void)h, (void)args;
  return 1;
}

static HRESULT APIENTRY compileStateObject(D3D12DDI_HCOMPILER h,
                                           D3D12DDI_HRTCOMPILERCACHESESSION session,
                                           D3D12DDI_COMPILER_VALUE_TYPE_FLAGS flags,
                                           const D3D12DDIARG_CREATE_STATE_OBJECT_0054 *args,
                                           D3D12DDI_HCOMPILERSTATEOBJECT so) {
  (void)so;
  const D3D12DDI_COMPILER_CACHE_CALLBACKS *cache = &((Compiler *)h.pDrvPrivate)->plugin->cache;
  char keys[64][48];
  D3D12DDI_COMPILER_CACHE_VALUE_KEY valueKeys[64];
  UINT n = 0;
  if (!args || args->NumSubobjects > 64)
    return E_INVALIDARG;
  for (UINT i = 0; i < args->NumSubobjects; ++i) {
    const D3D12DDI_MLIR_PROGRAM_DESC_0119 *desc =
        (const D3D12DDI_MLIR_PROGRAM_DESC_0119 *)args->pSubobjects[i].pDesc;
    const unsigned char *container = NULL;
    const unsigned char *bp = NULL;
    UINT32 bpSize = 0;
    if (args->pSubobjects[i].Type == D3D12DDI_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM && desc &&
        desc->pBytecode) {
      container = (const unsigned char *)desc->pBytecode;
      bp = findPart(container, desc->BytecodeSizeInBytes, "CGBP", &bpSize);
    }
    if (!bp) {
      if (cache->pfnCompilerCacheMessageCgc)
        cache->pfnCompilerCacheMessageCgc(session, "test plugin: not an MLIR program container "
                                                   "with a 'CGBP' part");
      return E_INVALIDARG;
    }
    UINT64 hash = fnv1a(container, desc->BytecodeSizeInBytes);
    snprintf(keys[n], sizeof keys[n], FAMILY "/%016llx", (unsigned long long)hash);
    valueKeys[n].pKey = keys[n];
    valueKeys[n].KeySize = (UINT)strlen(keys[n]);
    if (flags & D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE) {
      SIZE_T size = 12 + bpSize;
      unsigned char *code = (unsigned char *)malloc(size);
      if (!code)
        return E_OUTOFMEMORY;
      memcpy(code, "TCPY", 4);
      memcpy(code + 4, &hash, 8);
      memcpy(code + 12, bp, bpSize);
      D3D12DDI_COMPILER_CACHE_TYPED_CONST_VALUE value = {
          D3D12DDI_COMPILER_CACHE_VALUE_TYPE_OBJECT_CODE, {code, size}};
      HRESULT hr = cache->pfnCompilerCacheStoreValue(session, &valueKeys[n], &value, 1);
      free(code);
      if (FAILED(hr) && hr != DXGI_ERROR_ALREADY_EXISTS)
        return hr;
    }
    ++n;
  }
  return cache->pfnCompilerCacheSetObjectValueKeys(session, valueKeys, n);
}

static void APIENTRY destroyStateObject(D3D12DDI_HCOMPILER h, D3D12DDI_HCOMPILERSTATEOBJECT so) {
  (void)h, (void)so;
}

static HRESULT APIENTRY fillTable(D3D12DDI_HCOMPILERDDI h, D3D12DDI_COMPILER_TABLE_TYPE type,
                                  void *table, SIZE_T size) {
  Plugin *plugin = (Plugin *)h.pDrvPrivate;
  if (!plugin->selected || !table)
    return E_INVALIDARG;
  if (type == D3D12DDI_COMPILER_TABLE_TYPE_CAPABILITIES &&
      size == sizeof(D3D12DDI_COMPILER_CAPABILITIES_FUNCS)) {
    D3D12DDI_COMPILER_CAPABILITIES_FUNCS caps = {getCaps, enumerateFamilies, abiVersions,
                                                 compilerVersion, profileVersion};
    memcpy(table, &caps, sizeof caps);
    return S_OK;
  }
  if (type == D3D12DDI_COMPILER_TABLE_TYPE_COMPILER && size == sizeof(D3D12DDI_COMPILER_FUNCS)) {
    D3D12DDI_COMPILER_FUNCS funcs = {compilerSize,    createCompiler,     destroyCompiler,
                                     stateObjectSize, compileStateObject, destroyStateObject};
    memcpy(table, &funcs, sizeof funcs);
    return S_OK;
  }
  return E_INVALIDARG;
}

static HRESULT APIENTRY setCallbacks(D3D12DDI_HCOMPILERDDI h,
                                     D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE type,
                                     const void *table, SIZE_T size) {
  Plugin *plugin = (Plugin *)h.pDrvPrivate;
  if (type != D3D12DDI_COMPILER_CALLBACK_TABLE_TYPE_CACHE || !table ||
      size != sizeof(D3D12DDI_COMPILER_CACHE_CALLBACKS))
    return E_INVALIDARG;
  memcpy(&plugin->cache, table, size);
  plugin->haveCache = 1;
  return S_OK;
}

static const D3D12DDI_COMPILER_DDI_FUNCS kFuncs = {destroyDDI, getSupportedVersions,
                                                   setSelectedVersion, fillTable, setCallbacks};

__attribute__((visibility("default"))) HRESULT APIENTRY
D3D12OpenCompilerDDI(D3D12DDIARG_COMPILER_OPEN_DDI *args) {
  Plugin *plugin = (Plugin *)calloc(1, sizeof(Plugin));
  if (!args || !plugin) {
    free(plugin);
    return E_INVALIDARG;
  }
  gLastOpened = plugin;
  args->hCompilerDDI.pDrvPrivate = plugin;
  args->pDDIFuncs = &kFuncs;
  return S_OK;
}
