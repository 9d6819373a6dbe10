//===- guids.cpp - Definitions of the DXCGC interface GUIDs ---------------===//
//
// The DEFINE_GUIDs of cgc/d3d12_mlir.h, defined once here (as dxguid.lib
// does on Windows) and exported from libcgc_d3d12.

#define INITGUID
#pragma GCC visibility push(default)
#include "cgc/d3d12_mlir.h"
#pragma GCC visibility pop
