//===- fence.h - Shared D3D12 fences for the Python package -----*- C++ -*-===//
//
// The one file of the extension that includes the D3D12 headers (their
// macros clash with Python's and pybind11's).
//
//===----------------------------------------------------------------------===//

#ifndef CGC_PYTHON_FENCE_H
#define CGC_PYTHON_FENCE_H

#include <cstdint>
#include <string>

namespace cgc::python {

/// Creates a fence with D3D12_FENCE_FLAG_SHARED on `d3d12Device` (an
/// ID3D12Device *) at `initial` and returns a file descriptor of it
/// (CreateSharedHandle): a 64-bit timeline semaphore other processes and
/// devices import. -1 with `error` set on failure.
int createSharedFence(void *d3d12Device, uint64_t initial, std::string &error);

/// The HANDLE a descriptor is on this platform (CGCHandleFromFd), for
/// descriptors that the runtime's D3D12 handle types take.
void *handleFromFd(int fd);

} // namespace cgc::python

#endif // CGC_PYTHON_FENCE_H
