//===- tensor_file_fuzzer.cpp - libFuzzer: cgc-run's .npy and .pb readers -===//
//
// Bytes -> cgc-run's tensor-file readers (tools/cgc-run/Tensors.h): the .npy
// reader and the ONNX TensorProto wire-format reader, as cgc-run and
// cgc-ort-run read inputs and expected outputs. The bytes go through a
// memfd, since the readers take a path. Built and run by scripts/fuzz.sh.
//
//===----------------------------------------------------------------------===//

#include "Tensors.h"

#include <cstdint>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int fd = memfd_create("tensor", 0);
  static std::string path = "/proc/self/fd/" + std::to_string(fd);
  if (fd < 0 || ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != ssize_t(size))
    __builtin_trap();
  cgc::run::HostTensor tensor;
  std::string error;
  (void)cgc::run::readNpy(path, tensor, error);
  (void)cgc::run::readTensorProto(path, tensor, error);
  return 0;
}
