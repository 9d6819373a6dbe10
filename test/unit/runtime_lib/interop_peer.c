/*===- interop_peer.c - The importing process of InteropTest.TwoProcesses --===*
 *
 *   cgc-runtime-interop-peer MODEL.cgc HEAP_FD FENCE_FD
 *
 * Imports the inherited shared heap (input at offset 0, output at 4096) and
 * timeline semaphore through the C API, queues: wait for 1, run, signal 2,
 * and waits for its run. Written in C: the C API is all an application needs.
 * Exits 0 on success; prints the failing status otherwise.
 *
 *===----------------------------------------------------------------------===*/
#include "cgc/runtime.h"

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                            \
  do {                                                                         \
    cgc_status_t s_ = (call);                                                  \
    if (s_) {                                                                  \
      fprintf(stderr, "peer: %s: %s: %s\n", #call,                           \
              cgc_status_code_name(cgc_status_code(s_)), cgc_status_message(s_)); \
      return 1;                                                                \
    }                                                                          \
  } while (0)

/* CGCHandleFromFd, without the D3D12 header: a handle is fd + 1. */
static void *handle(int fd) { return (void *)(intptr_t)(fd + 1); }

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MODEL.cgc HEAP_FD FENCE_FD\n", argv[0]);
    return 2;
  }
  int heapFd = atoi(argv[2]), fenceFd = atoi(argv[3]);
  cgc_device_t *device = NULL;
  CHECK(cgc_device_create(NULL, &device));
  cgc_model_t *model = NULL;
  CHECK(cgc_model_load_file(device, argv[1], NULL, &model));
  cgc_context_t *context = NULL;
  CHECK(cgc_context_create(model, NULL, &context));
  cgc_importer_t *importer = NULL;
  CHECK(cgc_importer_create(device, &importer));

  cgc_external_memory_descriptor_t md = {0};
  md.version = CGC_EXTERNAL_MEMORY_DESCRIPTOR_VERSION;
  md.handle_type = CGC_EXTERNAL_MEMORY_HANDLE_TYPE_D3D12_HEAP;
  md.native_handle = handle(heapFd);
  md.size_bytes = 8192;
  md.access_mode = CGC_EXTERNAL_MEMORY_ACCESS_READ_WRITE;
  cgc_external_memory_t *memory = NULL;
  CHECK(cgc_importer_import_memory(importer, &md, &memory));
  cgc_external_semaphore_descriptor_t sd = {CGC_EXTERNAL_SEMAPHORE_DESCRIPTOR_VERSION,
                                            CGC_EXTERNAL_SEMAPHORE_TYPE_D3D12_FENCE,
                                            handle(fenceFd)};
  cgc_external_semaphore_t *semaphore = NULL;
  CHECK(cgc_importer_import_semaphore(importer, &sd, &semaphore));

  cgc_tensor_info_t in, out;
  CHECK(cgc_model_input_info(model, 0, &in));
  CHECK(cgc_model_output_info(model, 0, &out));
  cgc_external_tensor_descriptor_t td = {CGC_EXTERNAL_TENSOR_DESCRIPTOR_VERSION, in.dtype,
                                         in.shape, in.rank, 0};
  cgc_tensor_t *input = NULL, *output = NULL;
  CHECK(cgc_importer_create_tensor(importer, memory, &td, &input));
  td.dtype = out.dtype;
  td.shape = out.shape;
  td.rank = out.rank;
  td.offset_bytes = 4096;
  CHECK(cgc_importer_create_tensor(importer, memory, &td, &output));
  CHECK(cgc_context_bind_input(context, 0, input));
  CHECK(cgc_context_bind_output(context, 0, output));

  cgc_stream_t *stream = cgc_context_stream(context);
  CHECK(cgc_importer_wait_semaphore(importer, semaphore, stream, 1));
  CHECK(cgc_context_submit(context));
  CHECK(cgc_importer_signal_semaphore(importer, semaphore, stream, 2));
  CHECK(cgc_context_wait(context, 60000));
  CHECK(cgc_stream_synchronize(stream, 60000));

  cgc_context_stats_t stats;
  cgc_context_stats(context, &stats);
  if (stats.bytes_copied != 0) {
    fprintf(stderr, "peer: the runtime copied %llu bytes\n",
            (unsigned long long)stats.bytes_copied);
    return 1;
  }
  cgc_tensor_release(input);
  cgc_tensor_release(output);
  cgc_external_semaphore_release(semaphore);
  cgc_external_memory_release(memory);
  cgc_importer_release(importer);
  cgc_context_release(context);
  cgc_model_release(model);
  cgc_device_release(device);
  return 0;
}
