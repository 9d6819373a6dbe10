//===- tensor_file_fuzzer.cpp - cgc-run's .npy and .pb readers -------------===//
//
// readNpy and readTensorProto (cgc-run's inputs and expected outputs), the
// sequence and optional value reader (SequenceProto, OptionalProto) for each
// kind, and the reader of a model's input and output kinds, on any bytes,
// through a memfd so the readers see a real file.
//
//===----------------------------------------------------------------------===//

#include "Tensors.h"

#include <sys/mman.h>
#include <unistd.h>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int fd = memfd_create("cgc-fuzz", 0);
  if (fd < 0)
    return 0;
  size_t written = 0;
  while (written < size) {
    ssize_t n = write(fd, data + written, size - written);
    if (n <= 0)
      break;
    written += size_t(n);
  }
  std::string path = "/proc/self/fd/" + std::to_string(fd);
  cgc::run::HostTensor tensor;
  std::string error;
  (void)cgc::run::readNpy(path, tensor, error);
  (void)cgc::run::readTensorProto(path, tensor, error);
  for (cgc::run::ValueKind kind :
       {cgc::run::ValueKind::Sequence, cgc::run::ValueKind::Optional,
        cgc::run::ValueKind::OptionalSequence}) {
    cgc::run::HostValue value;
    (void)cgc::run::readValueFile(path, "x", kind, value, error);
  }
  (void)cgc::run::storedValueName(path);
  std::map<std::string, cgc::run::ValueKind> inputs, outputs;
  (void)cgc::run::readModelValueKinds(path, inputs, outputs, error);
  close(fd);
  return 0;
}
