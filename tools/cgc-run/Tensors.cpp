//===- Tensors.cpp - .npy and TensorProto files, comparison ---------------===//

#include "Tensors.h"
#include "ToolSupport.h"

#include "cgc/checked.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <string_view>

#include <sys/stat.h>

namespace cgc::run {

cgc_dtype_t dtypeFromInt(int64_t value) {
  switch (value) {
  case CGC_DTYPE_FLOAT32: case CGC_DTYPE_UINT8: case CGC_DTYPE_INT8: case CGC_DTYPE_UINT16:
  case CGC_DTYPE_INT16: case CGC_DTYPE_INT32: case CGC_DTYPE_INT64: case CGC_DTYPE_BOOL:
  case CGC_DTYPE_FLOAT16: case CGC_DTYPE_FLOAT64: case CGC_DTYPE_UINT32: case CGC_DTYPE_UINT64:
  case CGC_DTYPE_BFLOAT16:
    return cgc_dtype_t(value);
  default:
    return CGC_DTYPE_INVALID;
  }
}

int64_t HostTensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

static float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h >> 15) << 31, exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while (!(mantissa & 0x400));
      bits = sign | uint32_t(127 - 15 - e) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else if (exponent == 31) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

static uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t sign = (bits >> 16) & 0x8000;
  int32_t exponent = int32_t((bits >> 23) & 0xff) - 127 + 15;
  uint32_t mantissa = bits & 0x7fffff;
  if (((bits >> 23) & 0xff) == 0xff)
    return uint16_t(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  if (exponent >= 31)
    return uint16_t(sign | 0x7c00);
  if (exponent <= 0) {
    if (exponent < -10)
      return uint16_t(sign);
    mantissa |= 0x800000;
    uint32_t shift = uint32_t(14 - exponent);
    uint32_t half = mantissa >> shift;
    if ((mantissa >> (shift - 1)) & 1)
      ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | uint32_t(exponent) << 10 | mantissa >> 13;
  if (mantissa & 0x1000)
    ++half; // round half up (ties away): good enough for random inputs
  return uint16_t(half);
}

double HostTensor::at(int64_t i) const {
  const uint8_t *p = data.data() + size_t(i) * cgc_dtype_size(dtype);
  auto load = [&](auto value) {
    std::memcpy(&value, p, sizeof(value));
    return double(value);
  };
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: return load(float());
  case CGC_DTYPE_FLOAT64: return load(double());
  case CGC_DTYPE_INT8: return load(int8_t());
  case CGC_DTYPE_UINT8: return load(uint8_t());
  case CGC_DTYPE_INT16: return load(int16_t());
  case CGC_DTYPE_UINT16: return load(uint16_t());
  case CGC_DTYPE_INT32: return load(int32_t());
  case CGC_DTYPE_UINT32: return load(uint32_t());
  case CGC_DTYPE_INT64: return load(int64_t());
  case CGC_DTYPE_UINT64: return load(uint64_t());
  case CGC_DTYPE_BOOL: return p[0] ? 1.0 : 0.0;
  case CGC_DTYPE_FLOAT16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return halfToFloat(h);
  }
  case CGC_DTYPE_BFLOAT16: {
    uint16_t h;
    std::memcpy(&h, p, 2);
    uint32_t bits = uint32_t(h) << 16;
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  default: return 0;
  }
}

std::string describe(cgc_dtype_t dtype, const std::vector<int64_t> &shape) {
  const char *name = cgc_dtype_name(dtype);
  std::string text = name ? name : "dtype#" + std::to_string(int(dtype));
  text += "[";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "," : "") + std::to_string(shape[i]);
  return text + "]";
}

static bool readFile(const std::string &path, std::string &bytes, std::string &error) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    error = path + ": cannot read: it is a directory, not a tensor file";
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  bool failed = false;
  try {
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception &) {
    failed = true;
  }
  if (failed || in.bad()) {
    error = path + ": cannot read: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool readTensorFile(const std::string &path, HostTensor &tensor, std::string &error) {
  if (endsWith(path, ".npy"))
    return readNpy(path, tensor, error);
  if (endsWith(path, ".pb"))
    return readTensorProto(path, tensor, error);
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  if (bytes.compare(0, 6, "\x93NUMPY") == 0)
    return readNpy(path, tensor, error);
  return readTensorProto(path, tensor, error);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

static const char *npyDescr(cgc_dtype_t dtype) {
  switch (dtype) {
  case CGC_DTYPE_FLOAT32: return "<f4";
  case CGC_DTYPE_FLOAT64: return "<f8";
  case CGC_DTYPE_FLOAT16: return "<f2";
  case CGC_DTYPE_INT8: return "|i1";
  case CGC_DTYPE_UINT8: return "|u1";
  case CGC_DTYPE_INT16: return "<i2";
  case CGC_DTYPE_UINT16: return "<u2";
  case CGC_DTYPE_INT32: return "<i4";
  case CGC_DTYPE_UINT32: return "<u4";
  case CGC_DTYPE_INT64: return "<i8";
  case CGC_DTYPE_UINT64: return "<u8";
  case CGC_DTYPE_BOOL: return "|b1";
  default: return nullptr;
  }
}

static cgc_dtype_t dtypeOfDescr(std::string descr) {
  if (descr.size() == 3 && descr[0] == '=')
    descr[0] = '<';
  for (cgc_dtype_t d : {CGC_DTYPE_FLOAT32, CGC_DTYPE_FLOAT64, CGC_DTYPE_FLOAT16, CGC_DTYPE_INT8,
                        CGC_DTYPE_UINT8, CGC_DTYPE_INT16, CGC_DTYPE_UINT16, CGC_DTYPE_INT32,
                        CGC_DTYPE_UINT32, CGC_DTYPE_INT64, CGC_DTYPE_UINT64, CGC_DTYPE_BOOL}) {
    const char *want = npyDescr(d);
    if (descr == want || (descr.size() == 3 && descr[0] == '<' && want[0] == '|' &&
                          descr.substr(1) == std::string(want + 1)))
      return d;
  }
  return CGC_DTYPE_INVALID;
}

/// The value after `'key':` in a Python dict literal.
static bool dictValue(const std::string &header, const std::string &key, std::string &value) {
  size_t k = header.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = header.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t start = header.find_first_not_of(" ", colon + 1);
  if (start == std::string::npos)
    return false;
  size_t end;
  if (header[start] == '\'') {
    end = header.find('\'', start + 1);
    if (end == std::string::npos)
      return false;
    value = header.substr(start + 1, end - start - 1);
  } else if (header[start] == '(') {
    end = header.find(')', start);
    if (end == std::string::npos)
      return false;
    value = header.substr(start + 1, end - start - 1);
  } else {
    end = header.find_first_of(",}", start);
    value = header.substr(start, end - start);
  }
  return true;
}

bool readNpy(const std::string &path, HostTensor &tensor, std::string &error) {
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  auto bad = [&](const std::string &why) {
    error = path + ": not a valid .npy file: " + why;
    return false;
  };
  if (bytes.size() < 10 || bytes.compare(0, 6, "\x93NUMPY") != 0)
    return bad("no \\x93NUMPY magic");
  uint8_t major = uint8_t(bytes[6]);
  size_t headerLength, headerStart;
  if (major == 1) {
    headerLength = uint8_t(bytes[8]) | size_t(uint8_t(bytes[9])) << 8;
    headerStart = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return bad("truncated header");
    headerLength = 0;
    for (int i = 0; i < 4; ++i)
      headerLength |= size_t(uint8_t(bytes[8 + i])) << (8 * i);
    headerStart = 12;
  } else {
    return bad("unsupported format version " + std::to_string(major));
  }
  if (headerStart + headerLength > bytes.size())
    return bad("truncated header");
  std::string header = bytes.substr(headerStart, headerLength);
  std::string descr, order, shapeText;
  if (!dictValue(header, "descr", descr) || !dictValue(header, "fortran_order", order) ||
      !dictValue(header, "shape", shapeText))
    return bad("the header lacks descr, fortran_order or shape");
  tensor.dtype = dtypeOfDescr(descr);
  if (tensor.dtype == CGC_DTYPE_INVALID)
    return bad("unsupported dtype '" + descr + "'");
  if (order.find("True") != std::string::npos)
    return bad("Fortran-order arrays are not supported (save with order='C')");
  tensor.shape.clear();
  std::stringstream ss(shapeText);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t a = item.find_first_not_of(" "), b = item.find_last_not_of(" ");
    if (a == std::string::npos)
      continue;
    item = item.substr(a, b - a + 1);
    char *end = nullptr;
    long long d = std::strtoll(item.c_str(), &end, 10);
    if (*end || d < 0)
      return bad("bad shape (" + shapeText + ")");
    tensor.shape.push_back(d);
  }
  std::optional<uint64_t> size = tensorBytes(tensor.shape, cgc_dtype_size(tensor.dtype));
  if (!size)
    return bad(tensorSizeError(tensor.shape, cgc_dtype_size(tensor.dtype)));
  size_t want = size_t(*size);
  size_t dataStart = headerStart + headerLength;
  if (bytes.size() - dataStart != want)
    return bad("holds " + std::to_string(bytes.size() - dataStart) + " data bytes, " +
               describe(tensor.dtype, tensor.shape) + " needs " + std::to_string(want));
  tensor.data.assign(bytes.begin() + long(dataStart), bytes.end());
  return true;
}

bool writeNpy(const std::string &path, const HostTensor &tensor, std::string &error) {
  const char *descr = npyDescr(tensor.dtype);
  std::vector<uint8_t> converted;
  const std::vector<uint8_t> *data = &tensor.data;
  if (!descr && tensor.dtype == CGC_DTYPE_BFLOAT16) {
    // NumPy has no bfloat16: write float32.
    descr = "<f4";
    converted.resize(size_t(tensor.elements()) * 4);
    for (int64_t i = 0; i < tensor.elements(); ++i) {
      float f = float(tensor.at(i));
      std::memcpy(converted.data() + i * 4, &f, 4);
    }
    data = &converted;
  }
  if (!descr) {
    error = path + ": cannot write " + describe(tensor.dtype, tensor.shape) + " as .npy";
    return false;
  }
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    shape += std::to_string(tensor.shape[i]) + (tensor.shape.size() == 1 || i + 1 < tensor.shape.size() ? "," : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary);
  if (!out) {
    error = path + ": cannot write: " + std::strerror(errno);
    return false;
  }
  out.write("\x93NUMPY\x01\x00", 8);
  char length[2] = {char(header.size() & 0xff), char(header.size() >> 8)};
  out.write(length, 2);
  out << header;
  out.write(reinterpret_cast<const char *>(data->data()), std::streamsize(data->size()));
  if (!out) {
    error = path + ": write failed";
    return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// onnx.TensorProto (wire format)
//===----------------------------------------------------------------------===//

namespace {
struct Wire {
  const uint8_t *p, *end;
  bool ok = true;
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) {
        ok = false;
        return 0;
      }
      uint8_t b = *p++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        return v;
    }
    ok = false;
    return 0;
  }
  bool bytes(const uint8_t *&data, size_t &size) {
    uint64_t n = varint();
    if (!ok || n > uint64_t(end - p))
      return ok = false;
    data = p;
    size = size_t(n);
    p += n;
    return true;
  }
  bool skip(uint32_t wireType) {
    switch (wireType) {
    case 0: varint(); return ok;
    case 1: if (end - p < 8) return ok = false; p += 8; return true;
    case 2: { const uint8_t *d; size_t n; return bytes(d, n); }
    case 5: if (end - p < 4) return ok = false; p += 4; return true;
    default: return ok = false;
    }
  }
};
} // namespace

static bool parseTensorProto(const std::string &file, HostTensor &tensor, std::string &error);

/// Whether bytes that failed to read as a TensorProto look like ONNX's
/// other value messages, SequenceProto or OptionalProto (the ONNX node tests
/// keep sequence and optional inputs in .pb files too): a name in field 1
/// (read as a TensorProto, its characters became dims), an elem_type in
/// field 2, values as messages in fields 3-7 and none of a tensor's data
/// fields (raw_data, float_data, double_data, its own name).
static bool looksLikeSequenceOrOptional(const std::string &file) {
  Wire w{reinterpret_cast<const uint8_t *>(file.data()),
         reinterpret_cast<const uint8_t *>(file.data()) + file.size()};
  bool printableName = false, elemType = false, message = false;
  while (w.p < w.end && w.ok) {
    uint64_t key = w.varint();
    uint32_t field = uint32_t(key >> 3), wireType = uint32_t(key & 7);
    if (!w.ok)
      return false;
    if (field == 1 && wireType == 2) {
      const uint8_t *d;
      size_t n;
      if (!w.bytes(d, n))
        return false;
      printableName = std::all_of(d, d + n, [](uint8_t c) { return c >= 32 && c < 127; });
    } else if (field == 2 && wireType == 0) {
      elemType = w.varint() <= 5;
    } else if (field >= 3 && field <= 7 && wireType == 2) {
      message = true;
      w.skip(wireType);
    } else if (field == 4 || field == 8 || field == 9 || field == 10) {
      return false;
    } else {
      w.skip(wireType);
    }
  }
  return w.ok && elemType && (printableName || message);
}

bool readTensorProto(const std::string &path, HostTensor &tensor, std::string &error) {
  std::string file;
  if (!readFile(path, file, error))
    return false;
  if (parseTensorProto(file, tensor, error))
    return true;
  if (looksLikeSequenceOrOptional(file))
    error = path + ": holds a sequence or optional value (an onnx.SequenceProto or "
                   "OptionalProto), not a tensor: cgc-run reads those for the sequence and "
                   "optional inputs and outputs of an .onnx model";
  else
    error = path + ": not a valid onnx.TensorProto: " + error;
  return false;
}

/// Parses a serialized TensorProto; false with the reason in `error`.
static bool parseTensorProto(const std::string &file, HostTensor &tensor, std::string &error) {
  auto bad = [&](const std::string &why) {
    error = why;
    return false;
  };
  Wire w{reinterpret_cast<const uint8_t *>(file.data()),
         reinterpret_cast<const uint8_t *>(file.data()) + file.size()};
  int32_t dataType = 0;
  std::vector<int64_t> dims;
  std::vector<uint64_t> varints; // int32_data, int64_data, uint64_data
  std::vector<float> floats;
  std::vector<double> doubles;
  const uint8_t *raw = nullptr;
  size_t rawSize = 0;
  bool hasRaw = false, hasStrings = false, external = false;
  tensor.name.clear();
  // Repeated scalars may be packed (one length-delimited field) or not.
  auto readVarints = [&](uint32_t wireType, auto &&push) {
    if (wireType == 0) {
      push(w.varint());
      return w.ok;
    }
    const uint8_t *d;
    size_t n;
    if (wireType != 2 || !w.bytes(d, n))
      return false;
    Wire inner{d, d + n};
    while (inner.p < inner.end && inner.ok)
      push(inner.varint());
    return inner.ok;
  };
  auto readFixed = [&](uint32_t wireType, size_t width, auto &out) {
    using T = typename std::decay_t<decltype(out)>::value_type;
    if (wireType == (width == 4 ? 5u : 1u)) {
      if (size_t(w.end - w.p) < width)
        return false;
      T v;
      std::memcpy(&v, w.p, width);
      w.p += width;
      out.push_back(v);
      return true;
    }
    const uint8_t *d;
    size_t n;
    if (wireType != 2 || !w.bytes(d, n) || n % width)
      return false;
    for (size_t i = 0; i < n; i += width) {
      T v;
      std::memcpy(&v, d + i, width);
      out.push_back(v);
    }
    return true;
  };
  while (w.p < w.end) {
    uint64_t key = w.varint();
    if (!w.ok)
      return bad("truncated field key");
    uint32_t field = uint32_t(key >> 3), wireType = uint32_t(key & 7);
    bool ok = true;
    switch (field) {
    case 1: ok = readVarints(wireType, [&](uint64_t v) { dims.push_back(int64_t(v)); }); break;
    case 2: dataType = int32_t(w.varint()); ok = w.ok && wireType == 0; break;
    case 4: ok = readFixed(wireType, 4, floats); break;
    case 5: case 7: case 11:
      ok = readVarints(wireType, [&](uint64_t v) { varints.push_back(v); });
      break;
    case 6: hasStrings = true; ok = w.skip(wireType); break;
    case 8: {
      const uint8_t *d;
      size_t n;
      ok = wireType == 2 && w.bytes(d, n);
      if (ok)
        tensor.name.assign(reinterpret_cast<const char *>(d), n);
      break;
    }
    case 9: ok = wireType == 2 && w.bytes(raw, rawSize); hasRaw = ok; break;
    case 10: ok = readFixed(wireType, 8, doubles); break;
    case 13: external = true; ok = w.skip(wireType); break;
    case 14: {
      uint64_t location = w.varint();
      external = external || location == 1;
      ok = w.ok;
      break;
    }
    default: ok = w.skip(wireType); break;
    }
    if (!ok || !w.ok)
      return bad("malformed field " + std::to_string(field));
  }
  if (external)
    return bad("external data is not supported");
  if (dataType == 8)
    return bad("string tensors are not supported");
  tensor.dtype = dtypeFromInt(dataType);
  if (tensor.dtype == CGC_DTYPE_INVALID)
    return bad("unsupported data_type " + std::to_string(dataType));
  for (int64_t d : dims)
    if (d < 0)
      return bad("negative dimension");
  tensor.shape = dims;
  size_t width = cgc_dtype_size(tensor.dtype);
  std::optional<uint64_t> size = tensorBytes(tensor.shape, width);
  if (!size)
    return bad(tensorSizeError(tensor.shape, width));
  size_t count = size_t(*size / width);
  // The data must be there before anything is allocated for it.
  if (hasRaw && rawSize != count * width)
    return bad("raw_data holds " + std::to_string(rawSize) + " bytes, " +
               describe(tensor.dtype, tensor.shape) + " needs " + std::to_string(count * width));
  if (!hasRaw && count > file.size()) // a value takes at least a byte
    return bad(describe(tensor.dtype, tensor.shape) + " needs " + std::to_string(count) +
               " values; the file is only " + std::to_string(file.size()) + " bytes");
  tensor.data.assign(count * width, 0);
  if (hasRaw) {
    if (rawSize)
      std::memcpy(tensor.data.data(), raw, rawSize);
    return true;
  }
  (void)hasStrings;
  auto need = [&](size_t have) {
    if (have == count)
      return true;
    bad("holds " + std::to_string(have) + " values, " + describe(tensor.dtype, tensor.shape) +
        " needs " + std::to_string(count));
    return false;
  };
  uint8_t *out = tensor.data.data();
  switch (tensor.dtype) {
  case CGC_DTYPE_FLOAT32:
    if (!need(floats.size()))
      return false;
    if (count) // an empty tensor has no buffers at all (memcpy of null)
      std::memcpy(out, floats.data(), count * 4);
    return true;
  case CGC_DTYPE_FLOAT64:
    if (!need(doubles.size()))
      return false;
    if (count)
      std::memcpy(out, doubles.data(), count * 8);
    return true;
  default:
    // int32_data holds every type of 32 bits or less (float16/bfloat16 as
    // their bits); int64_data int64; uint64_data uint32 and uint64.
    if (!need(varints.size()))
      return false;
    for (size_t i = 0; i < count; ++i) {
      uint64_t v = varints[i];
      std::memcpy(out + i * width, &v, width); // little-endian truncation
    }
    return true;
  }
}

//===----------------------------------------------------------------------===//
// Sequence and optional values, and the model's value kinds
//===----------------------------------------------------------------------===//

namespace {
/// The fields of one message: (field number, bytes) for length-delimited
/// ones, viewing the message's own bytes (a model's initializers are not
/// copied to find its graph's inputs), and (field number, value) for
/// varints. False if malformed.
struct Fields {
  std::vector<std::pair<uint32_t, std::string_view>> messages;
  std::vector<std::pair<uint32_t, uint64_t>> varints;
};
bool readFields(const uint8_t *data, size_t size, Fields &fields) {
  Wire w{data, data + size};
  while (w.p < w.end) {
    uint64_t key = w.varint();
    if (!w.ok)
      return false;
    uint32_t field = uint32_t(key >> 3), wireType = uint32_t(key & 7);
    if (wireType == 2) {
      const uint8_t *d;
      size_t n;
      if (!w.bytes(d, n))
        return false;
      fields.messages.push_back({field, std::string_view(reinterpret_cast<const char *>(d), n)});
    } else if (wireType == 0) {
      fields.varints.push_back({field, w.varint()});
    } else if (!w.skip(wireType)) {
      return false;
    }
    if (!w.ok)
      return false;
  }
  return true;
}
bool readFields(std::string_view bytes, Fields &fields) {
  return readFields(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), fields);
}

/// The kind of a serialized onnx.TypeProto.
ValueKind typeKind(std::string_view type) {
  Fields fields;
  if (!readFields(type, fields))
    return ValueKind::Other;
  for (const auto &[field, bytes] : fields.messages) {
    if (field == 1)
      return ValueKind::Tensor;
    if (field == 4)
      return ValueKind::Sequence;
    if (field == 9) { // TypeProto.Optional { elem_type = 1 }
      Fields optional;
      if (!readFields(bytes, optional))
        return ValueKind::Other;
      for (const auto &[inner, held] : optional.messages)
        if (inner == 1)
          return typeKind(held) == ValueKind::Sequence ? ValueKind::OptionalSequence
                                                       : ValueKind::Optional;
      return ValueKind::Other;
    }
  }
  return ValueKind::Other;
}
} // namespace

bool readModelValueKinds(const std::string &path, std::map<std::string, ValueKind> &inputs,
                         std::map<std::string, ValueKind> &outputs, std::string &error) {
  std::string model;
  if (!readFile(path, model, error))
    return false;
  Fields top, graph;
  auto malformed = [&] {
    error = path + ": not a binary ONNX model (cgc-run reads the kinds of its inputs and "
                   "outputs from the graph)";
    return false;
  };
  if (!readFields(model, top))
    return malformed();
  const std::string_view *graphBytes = nullptr;
  for (const auto &[field, bytes] : top.messages)
    if (field == 7)
      graphBytes = &bytes;
  if (!graphBytes || !readFields(*graphBytes, graph))
    return malformed();
  for (const auto &[field, bytes] : graph.messages) {
    if (field != 11 && field != 12)
      continue;
    Fields info; // ValueInfoProto { name = 1; type = 2 }
    if (!readFields(bytes, info))
      return malformed();
    std::string name;
    ValueKind kind = ValueKind::Other;
    for (const auto &[f, b] : info.messages) {
      if (f == 1)
        name = b;
      else if (f == 2)
        kind = typeKind(b);
    }
    (field == 11 ? inputs : outputs)[name] = kind;
  }
  return true;
}

const char *valueKindName(ValueKind kind) {
  switch (kind) {
  case ValueKind::Tensor: return "a tensor";
  case ValueKind::Sequence: return "a sequence";
  case ValueKind::Optional: return "an optional tensor";
  case ValueKind::OptionalSequence: return "an optional sequence";
  case ValueKind::Other: break;
  }
  return "neither a tensor, a sequence nor an optional";
}

std::string storedValueName(const std::string &path) {
  std::string bytes, error;
  Fields fields;
  if (!readFile(path, bytes, error) || !readFields(bytes, fields))
    return "";
  for (const auto &[field, name] : fields.messages)
    if (field == 1)
      return std::all_of(name.begin(), name.end(),
                         [](char c) { return c >= 32 && c < 127; })
                 ? std::string(name)
                 : "";
  return "";
}

/// The tensors of a serialized SequenceProto, named `name[i]`.
static bool parseSequence(std::string_view bytes, const std::string &name, HostValue &value,
                          std::string &error) {
  Fields fields;
  if (!readFields(bytes, fields)) {
    error = "not a valid onnx.SequenceProto";
    return false;
  }
  for (const auto &[field, number] : fields.varints)
    if (field == 2 && number != 1) { // SequenceProto.TENSOR
      error = "a sequence of elem_type " + std::to_string(number) +
              " (cgc's sequences hold tensors)";
      return false;
    }
  for (const auto &[field, tensorBytes] : fields.messages) {
    if (field != 3) {
      if (field != 1) {
        error = "a sequence holding other than tensors (field " + std::to_string(field) + ")";
        return false;
      }
      continue;
    }
    HostTensor tensor;
    if (!parseTensorProto(std::string(tensorBytes), tensor, error)) {
      error = "tensor " + std::to_string(value.tensors.size()) + ": " + error;
      return false;
    }
    tensor.name = name + "[" + std::to_string(value.tensors.size()) + "]";
    value.tensors.push_back(std::move(tensor));
  }
  value.isSequence = true;
  return true;
}

bool readValueFile(const std::string &path, const std::string &name, ValueKind kind,
                   HostValue &value, std::string &error) {
  value = HostValue();
  value.name = name;
  if (kind == ValueKind::Tensor || kind == ValueKind::Other) {
    HostTensor tensor;
    if (!readTensorFile(path, tensor, error))
      return false;
    value.tensors.push_back(std::move(tensor));
    return true;
  }
  std::string bytes;
  if (!readFile(path, bytes, error))
    return false;
  auto bad = [&](const std::string &why) {
    error = path + ": " + name + " is " + valueKindName(kind) + ", but the file holds " + why;
    return false;
  };
  if (kind == ValueKind::Sequence)
    return parseSequence(bytes, name, value, error) || bad(error);
  // OptionalProto { name = 1; elem_type = 2; tensor_value = 3; sequence_value = 5 }
  Fields fields;
  if (!readFields(bytes, fields))
    return bad("no valid onnx.OptionalProto");
  value.isOptional = true;
  value.present = false;
  for (const auto &[field, held] : fields.messages) {
    if (field == 3 && kind == ValueKind::Optional) {
      HostTensor tensor;
      if (!parseTensorProto(std::string(held), tensor, error))
        return bad("a tensor that does not read: " + error);
      tensor.name = name;
      value.tensors.push_back(std::move(tensor));
      value.present = true;
    } else if (field == 5 && kind == ValueKind::OptionalSequence) {
      if (!parseSequence(held, name, value, error))
        return bad(error);
      value.present = true;
    } else if (field != 1) {
      return bad("an optional of another kind (field " + std::to_string(field) + ")");
    }
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Random values, comparison, summaries
//===----------------------------------------------------------------------===//

void fillRandom(HostTensor &tensor, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  size_t width = cgc_dtype_size(tensor.dtype);
  tensor.data.assign(size_t(tensor.elements()) * width, 0);
  for (int64_t i = 0; i < tensor.elements(); ++i) {
    uint8_t *p = tensor.data.data() + i * width;
    switch (tensor.dtype) {
    case CGC_DTYPE_FLOAT32: { float v = real(rng); std::memcpy(p, &v, 4); break; }
    case CGC_DTYPE_FLOAT64: { double v = real(rng); std::memcpy(p, &v, 8); break; }
    case CGC_DTYPE_FLOAT16: { uint16_t v = floatToHalf(real(rng)); std::memcpy(p, &v, 2); break; }
    case CGC_DTYPE_BFLOAT16: {
      float f = real(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      uint16_t v = uint16_t(bits >> 16);
      std::memcpy(p, &v, 2);
      break;
    }
    case CGC_DTYPE_BOOL: p[0] = rng() & 1; break;
    default: {
      uint64_t v = rng() % 10;
      std::memcpy(p, &v, width);
      break;
    }
    }
  }
}

std::string indexString(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    int64_t d = std::max<int64_t>(shape[i], 1);
    index[i] = flat % d;
    flat /= d;
  }
  std::string text = "[";
  for (size_t i = 0; i < index.size(); ++i)
    text += (i ? ", " : "") + std::to_string(index[i]);
  return text + "]";
}

Comparison compare(const HostTensor &got, const HostTensor &want, const Tolerances &tol) {
  Comparison c;
  if (got.dtype != want.dtype || got.shape != want.shape) {
    c.matches = false;
    c.error = "got " + describe(got.dtype, got.shape) + ", expected " +
              describe(want.dtype, want.shape);
    return c;
  }
  bool floating = got.dtype == CGC_DTYPE_FLOAT32 || got.dtype == CGC_DTYPE_FLOAT64 ||
                  got.dtype == CGC_DTYPE_FLOAT16 || got.dtype == CGC_DTYPE_BFLOAT16;
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t n = got.elements();
  for (int64_t i = 0; i < n; ++i) {
    double b = want.at(i);
    if (std::isfinite(b))
      c.scale = std::max(c.scale, std::fabs(b));
  }
  const double floor = tol.atol + tol.stol * c.scale;
  double diffSquares = 0, wantSquares = 0;
  for (int64_t i = 0; i < n; ++i) {
    double a = got.at(i), b = want.at(i);
    bool ok;
    double abs = 0, rel = 0;
    if (std::isnan(a) || std::isnan(b)) {
      ok = std::isnan(a) && std::isnan(b);
      abs = rel = ok ? 0 : inf;
    } else if (std::isinf(a) || std::isinf(b)) {
      ok = a == b;
      abs = rel = ok ? 0 : inf;
    } else {
      abs = std::fabs(a - b);
      rel = b != 0 ? abs / std::fabs(b) : (abs == 0 ? 0 : inf);
      ok = floating ? abs <= floor + tol.rtol * std::fabs(b) : a == b;
      diffSquares += abs * abs;
      wantSquares += b * b;
    }
    c.maxAbsError = std::max(c.maxAbsError, abs);
    c.maxRelError = std::max(c.maxRelError, rel);
    if (!ok) {
      if (c.firstMismatch < 0) {
        c.firstMismatch = i;
        c.got = a;
        c.want = b;
      }
      ++c.mismatches;
      c.matches = false;
    }
  }
  c.normwiseRelError = wantSquares > 0 ? std::sqrt(diffSquares / wantSquares)
                                       : (diffSquares > 0 ? inf : 0);
  return c;
}

std::string summarize(const HostTensor &tensor, int firstValues) {
  std::ostringstream os;
  os << describe(tensor.dtype, tensor.shape);
  int64_t n = tensor.elements();
  if (n == 0)
    return os.str() + " (empty)";
  double lo = std::numeric_limits<double>::infinity(), hi = -lo, sum = 0;
  int64_t argmax = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = tensor.at(i);
    lo = std::min(lo, v);
    if (v > hi) {
      hi = v;
      argmax = i;
    }
    sum += v;
  }
  os.precision(6);
  os << " min " << lo << " max " << hi << " (at " << indexString(argmax, tensor.shape) << ") mean "
     << sum / double(n) << " values [";
  for (int64_t i = 0; i < std::min<int64_t>(n, firstValues); ++i)
    os << (i ? ", " : "") << tensor.at(i);
  os << (n > firstValues ? ", ...]" : "]");
  return os.str();
}

} // namespace cgc::run
