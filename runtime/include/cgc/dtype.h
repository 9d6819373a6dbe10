/*===- cgc/dtype.h - Element types shared by compiler and runtime ----------===*
 *
 * Plain C. The values are ONNX's TensorProto.DataType numbers, and equal to
 * cgc::ElementKind in the dialects.
 *
 *===----------------------------------------------------------------------===*/
#ifndef CGC_DTYPE_H
#define CGC_DTYPE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum cgc_dtype_t {
  CGC_DTYPE_INVALID = 0,
  CGC_DTYPE_FLOAT32 = 1,
  CGC_DTYPE_UINT8 = 2,
  CGC_DTYPE_INT8 = 3,
  CGC_DTYPE_UINT16 = 4,
  CGC_DTYPE_INT16 = 5,
  CGC_DTYPE_INT32 = 6,
  CGC_DTYPE_INT64 = 7,
  CGC_DTYPE_BOOL = 9,
  CGC_DTYPE_FLOAT16 = 10,
  CGC_DTYPE_FLOAT64 = 11,
  CGC_DTYPE_UINT32 = 12,
  CGC_DTYPE_UINT64 = 13,
  CGC_DTYPE_BFLOAT16 = 16,
} cgc_dtype_t;

/* Bytes per element; 0 for CGC_DTYPE_INVALID or unknown values. */
static inline size_t cgc_dtype_size(cgc_dtype_t dtype) {
  switch (dtype) {
  case CGC_DTYPE_BOOL: case CGC_DTYPE_INT8: case CGC_DTYPE_UINT8: return 1;
  case CGC_DTYPE_INT16: case CGC_DTYPE_UINT16: case CGC_DTYPE_FLOAT16:
  case CGC_DTYPE_BFLOAT16: return 2;
  case CGC_DTYPE_INT32: case CGC_DTYPE_UINT32: case CGC_DTYPE_FLOAT32: return 4;
  case CGC_DTYPE_INT64: case CGC_DTYPE_UINT64: case CGC_DTYPE_FLOAT64: return 8;
  default: return 0;
  }
}

/* The name used in the IR (`!cgc.<name>`) and in JSON metadata: "float32",
 * "int8", ...; NULL for unknown values. */
static inline const char *cgc_dtype_name(cgc_dtype_t dtype) {
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: return "float32";
  case CGC_DTYPE_UINT8: return "uint8";
  case CGC_DTYPE_INT8: return "int8";
  case CGC_DTYPE_UINT16: return "uint16";
  case CGC_DTYPE_INT16: return "int16";
  case CGC_DTYPE_INT32: return "int32";
  case CGC_DTYPE_INT64: return "int64";
  case CGC_DTYPE_BOOL: return "bool";
  case CGC_DTYPE_FLOAT16: return "float16";
  case CGC_DTYPE_FLOAT64: return "float64";
  case CGC_DTYPE_UINT32: return "uint32";
  case CGC_DTYPE_UINT64: return "uint64";
  case CGC_DTYPE_BFLOAT16: return "bfloat16";
  default: return NULL;
  }
}

/* Parses a name written by cgc_dtype_name; CGC_DTYPE_INVALID if unknown. */
cgc_dtype_t cgc_dtype_from_name(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* CGC_DTYPE_H */
