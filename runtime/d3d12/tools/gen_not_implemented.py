#!/usr/bin/python3
"""Generates the out-of-scope methods of cgc's D3D12 COM classes.

A COM class must override every method of every interface it implements.
cgc implements the compute / MLIR-program subset by hand; this script writes,
for each class, the remaining methods of its interface chain (as declared in
DirectX-Headers and in cgc/d3d12_mlir.h) into src/generated/<Class>.inc, each
reporting "not implemented" through the class's notImplemented() hook:
HRESULT methods return E_NOTIMPL, a command list records the error so that
Close() fails, other methods return a zero value. docs/d3d12.md lists them.

Run after changing the set of hand-written methods below:
  /usr/bin/python3 runtime/d3d12/tools/gen_not_implemented.py
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADERS = [
    "/usr/include/directx/d3d12.h",
    "/usr/include/directx/d3d12sdklayers.h",
    os.path.join(ROOT, "include", "cgc", "d3d12_mlir.h"),
]

# class -> (interfaces in inheritance order, methods written by hand)
CLASSES = {
    "Device": (
        ["ID3D12Device"] + ["ID3D12Device%d" % i for i in range(1, 15)],
        {
            "GetNodeCount", "CreateCommandQueue", "CreateCommandAllocator",
            "CreateComputePipelineState", "CreateCommandList",
            "CheckFeatureSupport", "GetResourceAllocationInfo",
            "CreateCommittedResource", "CreateHeap", "CreatePlacedResource",
            "CreateFence", "GetDeviceRemovedReason", "GetAdapterLuid",
            "GetCustomHeapProperties",
            "SetEventOnMultipleFenceCompletion", "OpenExistingHeapFromAddress",
            "CreateCommandList1", "CreateCommittedResource1", "CreateHeap1",
            "CreateStateObject", "AddToStateObject",
            "OpenExistingHeapFromAddress1", "CreateSharedHandle",
            "OpenSharedHandle",
        },
    ),
    "CommandList": (
        ["ID3D12CommandList", "ID3D12GraphicsCommandList"]
        + ["ID3D12GraphicsCommandList%d" % i for i in range(1, 11)],
        {
            "GetType", "Close", "Reset", "Dispatch",
            "CopyBufferRegion", "SetPipelineState", "ResourceBarrier",
            "SetComputeRootSignature", "SetComputeRootUnorderedAccessView",
            "SetMarker", "BeginEvent", "EndEvent", "Barrier", "SetProgram",
            "DispatchGraph",
        },
    ),
    "CommandQueue": (
        ["ID3D12CommandQueue"],
        {"ExecuteCommandLists", "Signal", "Wait", "GetDesc", "SetMarker",
         "BeginEvent", "EndEvent"},
    ),
    "CommandAllocator": (["ID3D12CommandAllocator"], {"Reset"}),
    "Fence": (
        ["ID3D12Fence", "ID3D12Fence1"],
        {"GetCompletedValue", "SetEventOnCompletion", "Signal",
         "GetCreationFlags"},
    ),
    "Heap": (["ID3D12Heap", "ID3D12Heap1"], {"GetDesc"}),
    "Resource": (
        ["ID3D12Resource", "ID3D12Resource1", "ID3D12Resource2"],
        {"Map", "Unmap", "GetDesc", "GetGPUVirtualAddress",
         "GetHeapProperties", "GetDesc1"},
    ),
    "PipelineState": (["ID3D12PipelineState"], set()),
    "StateObject": (
        ["ID3D12StateObject", "ID3D12StateObjectProperties",
         "ID3D12StateObjectProperties1"],
        {"GetProgramIdentifier"},
    ),
    "InfoQueue": (
        ["ID3D12InfoQueue", "ID3D12InfoQueue1"],
        {"SetMessageCountLimit", "ClearStoredMessages", "GetMessage",
         "GetNumStoredMessages", "GetNumStoredMessagesAllowedByRetrievalFilter",
         "GetNumMessagesDiscardedByMessageCountLimit", "GetMessageCountLimit",
         "AddMessage", "AddApplicationMessage", "SetMuteDebugOutput",
         "GetMuteDebugOutput", "RegisterMessageCallback",
         "UnregisterMessageCallback"},
    ),
    "Debug": (["ID3D12Debug"], {"EnableDebugLayer"}),
}

INTERFACE_RE = re.compile(
    r'MIDL_INTERFACE\("[^"]+"\)\s*\n\s*(\w+)\s*:\s*public\s+(\w+)\s*\{\s*public:(.*?)\n\s*\};',
    re.S)
METHOD_RE = re.compile(
    r"virtual\s+(.*?)\s*STDMETHODCALLTYPE\s+(\w+)\s*\((.*?)\)\s*(const)?\s*=\s*0\s*;",
    re.S)


def strip_alternatives(body):
    """Keeps the first branch of `#if defined(_MSC_VER) || !defined(_WIN32)`."""
    out, skipping, depth = [], False, 0
    for line in body.split("\n"):
        s = line.strip()
        if s.startswith("#if"):
            depth += 1
            continue
        if s.startswith("#else"):
            skipping = True
            continue
        if s.startswith("#endif"):
            depth -= 1
            skipping = False
            continue
        if not skipping:
            out.append(line)
    return "\n".join(out)


def parse():
    interfaces = {}
    for path in HEADERS:
        text = open(path).read()
        # Only the C++ declarations (the C vtables follow "#else /* C style").
        for m in INTERFACE_RE.finditer(text):
            name, base, body = m.group(1), m.group(2), strip_alternatives(m.group(3))
            if name in interfaces:
                continue
            methods = []
            for mm in METHOD_RE.finditer(body):
                ret = " ".join(mm.group(1).split())
                params = " ".join(mm.group(3).split())
                methods.append((ret, mm.group(2), params, mm.group(4) or ""))
            interfaces[name] = methods
    return interfaces


def body_for(ret, qualified):
    call = 'notImplemented("%s")' % qualified
    if ret == "HRESULT":
        return "{ %s; return E_NOTIMPL; }" % call
    if ret == "void":
        return "{ %s; }" % call
    if ret.endswith("*"):
        return "{ %s; return nullptr; }" % call
    return "{ %s; return {}; }" % call


def main():
    interfaces = parse()
    outdir = os.path.join(ROOT, "src", "generated")
    os.makedirs(outdir, exist_ok=True)
    listing = []
    for cls, (chain, handwritten) in CLASSES.items():
        lines = [
            "// Generated by runtime/d3d12/tools/gen_not_implemented.py; do not edit.",
            "// Methods of %s's interfaces that cgc does not implement." % cls,
        ]
        seen = set()
        for iface in chain:
            if iface not in interfaces:
                sys.exit("interface %s not found" % iface)
            for ret, name, params, const in interfaces[iface]:
                if name in handwritten or name in seen:
                    continue
                seen.add(name)
                q = "%s::%s" % (iface, name)
                listing.append(q)
                lines.append("%s STDMETHODCALLTYPE %s(%s)%s override %s" % (
                    ret, name, params, (" " + const) if const else "",
                    body_for(ret, q)))
        missing = handwritten - {n for i in chain for _, n, _, _ in interfaces[i]}
        if missing:
            sys.exit("%s: hand-written methods not in its interfaces: %s" % (cls, sorted(missing)))
        with open(os.path.join(outdir, cls + ".inc"), "w") as f:
            f.write("\n".join(lines) + "\n")
    with open(os.path.join(outdir, "not_implemented.txt"), "w") as f:
        f.write("\n".join(listing) + "\n")
    print("%d methods not implemented" % len(listing))


if __name__ == "__main__":
    main()
