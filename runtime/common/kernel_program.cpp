//===- kernel_program.cpp - Kernel programs and bind points as JSON -------===//

#include "cgc/bind_points.h"
#include "cgc/kernel_program.h"
#include "json_int.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace cgc {

using json = nlohmann::json;

//===----------------------------------------------------------------------===//
// Operands and attributes
//===----------------------------------------------------------------------===//

bool AttrValue::operator==(const AttrValue &o) const {
  if (kind != o.kind)
    return false;
  switch (kind) {
  case Kind::Int: return i == o.i;
  case Kind::Float: return f == o.f;
  case Kind::Bool: return b == o.b;
  case Kind::String: return s == o.s;
  case Kind::Ints: return ints == o.ints;
  case Kind::Floats: return floats == o.floats;
  case Kind::DType: return dtype == o.dtype;
  }
  return false;
}

int64_t KernelOperand::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::vector<int64_t> KernelOperand::effectiveStrides() const {
  if (!strides.empty())
    return strides;
  std::vector<int64_t> result(shape.size(), 1);
  for (int64_t i = int64_t(shape.size()) - 2; i >= 0; --i)
    result[i] = result[i + 1] * std::max<int64_t>(shape[i + 1], 1);
  return result;
}

bool KernelOperand::isContiguous() const {
  if (strides.empty())
    return true;
  KernelOperand contiguous = *this;
  contiguous.strides.clear();
  return contiguous.effectiveStrides() == strides;
}

uint64_t KernelOperand::byteSpan() const {
  if (numElements() == 0)
    return 0;
  int64_t last = 0;
  std::vector<int64_t> s = effectiveStrides();
  for (size_t i = 0; i < shape.size(); ++i)
    last += (shape[i] - 1) * s[i];
  return uint64_t(last + 1) * cgc_dtype_size(dtype);
}

bool KernelOperand::operator==(const KernelOperand &o) const {
  return dtype == o.dtype && shape == o.shape && strides == o.strides &&
         storage == o.storage && index == o.index && offset == o.offset;
}

const AttrValue *KernelDesc::attr(std::string_view name) const {
  for (const auto &[key, value] : attrs)
    if (key == name)
      return &value;
  return nullptr;
}

int64_t KernelDesc::getInt(std::string_view name, int64_t fallback) const {
  const AttrValue *a = attr(name);
  if (!a)
    return fallback;
  if (a->kind == AttrValue::Kind::Bool)
    return a->b;
  return a->kind == AttrValue::Kind::Int ? a->i : fallback;
}

double KernelDesc::getFloat(std::string_view name, double fallback) const {
  const AttrValue *a = attr(name);
  if (!a)
    return fallback;
  if (a->kind == AttrValue::Kind::Int)
    return double(a->i);
  return a->kind == AttrValue::Kind::Float ? a->f : fallback;
}

bool KernelDesc::getBool(std::string_view name, bool fallback) const {
  const AttrValue *a = attr(name);
  if (!a)
    return fallback;
  if (a->kind == AttrValue::Kind::Int)
    return a->i != 0;
  return a->kind == AttrValue::Kind::Bool ? a->b : fallback;
}

std::string KernelDesc::getString(std::string_view name,
                                  std::string fallback) const {
  const AttrValue *a = attr(name);
  return a && a->kind == AttrValue::Kind::String ? a->s : fallback;
}

std::vector<int64_t> KernelDesc::getInts(std::string_view name) const {
  const AttrValue *a = attr(name);
  return a && a->kind == AttrValue::Kind::Ints ? a->ints
                                               : std::vector<int64_t>();
}

std::vector<double> KernelDesc::getFloats(std::string_view name) const {
  const AttrValue *a = attr(name);
  if (a && a->kind == AttrValue::Kind::Ints)
    return std::vector<double>(a->ints.begin(), a->ints.end());
  return a && a->kind == AttrValue::Kind::Floats ? a->floats
                                                 : std::vector<double>();
}

void KernelDesc::setAttr(std::string name, AttrValue value) {
  auto it = std::lower_bound(
      attrs.begin(), attrs.end(), name,
      [](const auto &entry, const std::string &key) { return entry.first < key; });
  if (it != attrs.end() && it->first == name)
    it->second = std::move(value);
  else
    attrs.insert(it, {std::move(name), std::move(value)});
}

bool KernelDesc::operator==(const KernelDesc &o) const {
  return op == o.op && attrs == o.attrs && inputs == o.inputs &&
         outputs == o.outputs;
}

bool KernelProgram::operator==(const KernelProgram &o) const {
  auto sameBindings = [&] {
    if (bindings.size() != o.bindings.size())
      return false;
    for (size_t i = 0; i < bindings.size(); ++i)
      if (bindings[i].name != o.bindings[i].name ||
          bindings[i].bytes != o.bindings[i].bytes ||
          bindings[i].constant != o.bindings[i].constant ||
          bindings[i].internal != o.bindings[i].internal ||
          bindings[i].dtype != o.bindings[i].dtype)
        return false;
    return true;
  };
  auto sameTemporaries = [&] {
    if (temporaries.size() != o.temporaries.size())
      return false;
    for (size_t i = 0; i < temporaries.size(); ++i)
      if (temporaries[i].bytes != o.temporaries[i].bytes ||
          temporaries[i].alignment != o.temporaries[i].alignment ||
          temporaries[i].binding != o.temporaries[i].binding)
        return false;
    return true;
  };
  return sameBindings() && sameTemporaries() && kernels == o.kernels;
}

bool KernelProgram::validate(std::string &error) const {
  auto check = [&](const KernelOperand &operand, size_t kernel,
                   const char *what, size_t index) {
    std::string where = "kernel " + std::to_string(kernel) + " (" +
                        kernels[kernel].op + ") " + what + " #" +
                        std::to_string(index);
    if (cgc_dtype_size(operand.dtype) == 0) {
      error = where + " has an unknown dtype";
      return false;
    }
    for (int64_t d : operand.shape)
      if (d < 0) {
        error = where + " has a negative dimension";
        return false;
      }
    if (!operand.strides.empty() && operand.strides.size() != operand.shape.size()) {
      error = where + " has " + std::to_string(operand.strides.size()) +
              " strides for rank " + std::to_string(operand.shape.size());
      return false;
    }
    for (int64_t s : operand.strides)
      if (s < 0) {
        error = where + " has a negative stride";
        return false;
      }
    bool isBinding = operand.storage == KernelOperand::Storage::Binding;
    size_t limit = isBinding ? bindings.size() : temporaries.size();
    if (operand.index >= limit) {
      error = where + " refers to " + (isBinding ? "binding " : "temporary ") +
              std::to_string(operand.index) + " of " + std::to_string(limit);
      return false;
    }
    uint64_t bytes = isBinding ? bindings[operand.index].bytes
                               : temporaries[operand.index].bytes;
    uint64_t span = operand.byteSpan();
    if (operand.offset > bytes || span > bytes - operand.offset) {
      error = where + " spans bytes [" + std::to_string(operand.offset) +
              ", " + std::to_string(operand.offset + span) + ") of a " +
              std::to_string(bytes) + "-byte " +
              (isBinding ? "binding" : "temporary");
      return false;
    }
    return true;
  };
  std::vector<bool> backs(bindings.size(), false);
  for (size_t t = 0; t < temporaries.size(); ++t) {
    int64_t b = temporaries[t].binding;
    if (b == -1)
      continue;
    std::string where = "temporary " + std::to_string(t);
    if (b < 0 || uint64_t(b) >= bindings.size()) {
      error = where + " lives in binding " + std::to_string(b) + " of " +
              std::to_string(bindings.size());
      return false;
    }
    if (!bindings[size_t(b)].internal) {
      error = where + " lives in binding " + std::to_string(b) + " ('" +
              bindings[size_t(b)].name + "'), which is not internal";
      return false;
    }
    if (bindings[size_t(b)].bytes != temporaries[t].bytes) {
      error = where + " has " + std::to_string(temporaries[t].bytes) +
              " bytes but lives in binding " + std::to_string(b) + " of " +
              std::to_string(bindings[size_t(b)].bytes);
      return false;
    }
    if (backs[size_t(b)]) {
      error = where + " lives in binding " + std::to_string(b) +
              ", which another temporary lives in";
      return false;
    }
    backs[size_t(b)] = true;
  }
  for (size_t k = 0; k < kernels.size(); ++k) {
    if (kernels[k].op.empty()) {
      error = "kernel " + std::to_string(k) + " has no op name";
      return false;
    }
    for (size_t i = 0; i < kernels[k].inputs.size(); ++i)
      if (kernels[k].inputs[i] && !check(*kernels[k].inputs[i], k, "input", i))
        return false;
    for (size_t i = 0; i < kernels[k].outputs.size(); ++i)
      if (!check(kernels[k].outputs[i], k, "output", i))
        return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// JSON
//===----------------------------------------------------------------------===//

// JSON has no infinities or NaN (nlohmann writes them as null): those are
// written as the strings "inf", "-inf" and "nan" (a pad value of -inf for a
// max pool's window, a clip bound of +inf).
static json floatToJson(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value > 0 ? "inf" : "-inf";
  return value;
}

static double floatFromJson(const json &value) {
  if (value.is_number())
    return value.get<double>();
  if (value.is_string()) {
    const std::string &text = value.get_ref<const std::string &>();
    if (text == "inf")
      return std::numeric_limits<double>::infinity();
    if (text == "-inf")
      return -std::numeric_limits<double>::infinity();
    if (text == "nan")
      return std::numeric_limits<double>::quiet_NaN();
  }
  throw std::runtime_error("a float must be a number, \"inf\", \"-inf\" or "
                           "\"nan\", not " + value.dump());
}

static json attrToJson(const AttrValue &a) {
  switch (a.kind) {
  case AttrValue::Kind::Int: return json{{"int", a.i}};
  case AttrValue::Kind::Float: return json{{"float", floatToJson(a.f)}};
  case AttrValue::Kind::Bool: return json{{"bool", a.b}};
  case AttrValue::Kind::String: return json{{"string", a.s}};
  case AttrValue::Kind::Ints: return json{{"ints", a.ints}};
  case AttrValue::Kind::Floats: {
    json values = json::array();
    for (double value : a.floats)
      values.push_back(floatToJson(value));
    return json{{"floats", values}};
  }
  case AttrValue::Kind::DType: return json{{"dtype", cgc_dtype_name(a.dtype)}};
  }
  return json();
}

static AttrValue attrFromJson(const json &j) {
  if (!j.is_object() || j.size() != 1)
    throw std::runtime_error("attribute must be an object with one key");
  auto it = j.begin();
  const std::string key = it.key();
  const json &value = it.value();
  if (key == "int")
    return AttrValue::ofInt(value.get<JsonInt<int64_t>>());
  if (key == "float")
    return AttrValue::ofFloat(floatFromJson(value));
  if (key == "bool")
    return AttrValue::ofBool(value.get<bool>());
  if (key == "string")
    return AttrValue::ofString(value.get<std::string>());
  if (key == "ints")
    return AttrValue::ofInts(jsonInts<int64_t>(value));
  if (key == "floats") {
    if (!value.is_array())
      throw std::runtime_error("\"floats\" must be an array");
    std::vector<double> values;
    for (const json &element : value)
      values.push_back(floatFromJson(element));
    return AttrValue::ofFloats(std::move(values));
  }
  if (key == "dtype") {
    cgc_dtype_t dtype = cgc_dtype_from_name(value.get<std::string>().c_str());
    if (dtype == CGC_DTYPE_INVALID)
      throw std::runtime_error("unknown dtype '" + value.get<std::string>() + "'");
    return AttrValue::ofDType(dtype);
  }
  throw std::runtime_error("unknown attribute kind '" + key + "'");
}

static json operandToJson(const KernelOperand &o) {
  json j = {{"dtype", cgc_dtype_name(o.dtype)},
            {"shape", o.shape},
            {o.storage == KernelOperand::Storage::Binding ? "binding" : "temporary",
             o.index},
            {"offset", o.offset}};
  if (!o.strides.empty())
    j["strides"] = o.strides;
  return j;
}

static KernelOperand operandFromJson(const json &j) {
  KernelOperand o;
  std::string dtype = j.at("dtype").get<std::string>();
  o.dtype = cgc_dtype_from_name(dtype.c_str());
  if (o.dtype == CGC_DTYPE_INVALID)
    throw std::runtime_error("unknown dtype '" + dtype + "'");
  o.shape = jsonInts<int64_t>(j.at("shape"));
  if (j.contains("strides"))
    o.strides = jsonInts<int64_t>(j.at("strides"));
  if (j.contains("binding")) {
    o.storage = KernelOperand::Storage::Binding;
    o.index = j.at("binding").get<JsonInt<uint32_t>>();
  } else {
    o.storage = KernelOperand::Storage::Temporary;
    o.index = j.at("temporary").get<JsonInt<uint32_t>>();
  }
  o.offset = j.at("offset").get<JsonInt<uint64_t>>();
  return o;
}

std::string serializeKernelProgram(const KernelProgram &program) {
  json j;
  j["version"] = KernelProgram::kVersion;
  j["bindings"] = json::array();
  for (const auto &b : program.bindings) {
    json bj = {{"name", b.name}, {"bytes", b.bytes}};
    if (b.constant)
      bj["constant"] = true;
    if (b.internal)
      bj["internal"] = true;
    if (b.dtype != CGC_DTYPE_INVALID && cgc_dtype_name(b.dtype))
      bj["dtype"] = cgc_dtype_name(b.dtype);
    j["bindings"].push_back(std::move(bj));
  }
  j["temporaries"] = json::array();
  for (const auto &t : program.temporaries) {
    json tj = {{"bytes", t.bytes}, {"alignment", t.alignment}};
    if (t.binding >= 0)
      tj["binding"] = t.binding;
    j["temporaries"].push_back(std::move(tj));
  }
  j["kernels"] = json::array();
  for (const KernelDesc &k : program.kernels) {
    json kj;
    kj["op"] = k.op;
    kj["attrs"] = json::object();
    for (const auto &[name, value] : k.attrs)
      kj["attrs"][name] = attrToJson(value);
    kj["inputs"] = json::array();
    for (const auto &in : k.inputs)
      kj["inputs"].push_back(in ? operandToJson(*in) : json());
    kj["outputs"] = json::array();
    for (const auto &out : k.outputs)
      kj["outputs"].push_back(operandToJson(out));
    j["kernels"].push_back(std::move(kj));
  }
  return j.dump();
}

bool deserializeKernelProgram(std::string_view text, KernelProgram &program,
                              std::string &error) {
  try {
    json j = json::parse(text);
    uint32_t version = j.at("version").get<JsonInt<uint32_t>>();
    if (version != KernelProgram::kVersion)
      throw std::runtime_error("unsupported kernel program version " +
                               std::to_string(version));
    program = KernelProgram();
    for (const json &b : j.at("bindings")) {
      cgc_dtype_t dtype = CGC_DTYPE_INVALID;
      if (b.contains("dtype")) {
        std::string name = b.at("dtype").get<std::string>();
        dtype = cgc_dtype_from_name(name.c_str());
        if (dtype == CGC_DTYPE_INVALID)
          throw std::runtime_error("binding '" + b.at("name").get<std::string>() +
                                   "' has an unknown dtype '" + name + "'");
      }
      program.bindings.push_back(
          {b.at("name").get<std::string>(), b.at("bytes").get<JsonInt<uint64_t>>(),
           b.contains("constant") && b.at("constant").get<bool>(),
           b.contains("internal") && b.at("internal").get<bool>(), dtype});
    }
    for (const json &t : j.at("temporaries"))
      program.temporaries.push_back(
          {t.at("bytes").get<JsonInt<uint64_t>>(), t.at("alignment").get<JsonInt<uint64_t>>(),
           t.contains("binding") ? int64_t(t.at("binding").get<JsonInt<uint32_t>>()) : -1});
    for (const json &kj : j.at("kernels")) {
      KernelDesc k;
      k.op = kj.at("op").get<std::string>();
      const json &attrs = kj.at("attrs");
      if (!attrs.is_object())
        throw std::runtime_error("'attrs' must be an object");
      for (auto it = attrs.begin(); it != attrs.end(); ++it)
        k.setAttr(it.key(), attrFromJson(it.value()));
      for (const json &in : kj.at("inputs"))
        k.inputs.push_back(in.is_null() ? std::nullopt
                                        : std::optional(operandFromJson(in)));
      for (const json &out : kj.at("outputs"))
        k.outputs.push_back(operandFromJson(out));
      program.kernels.push_back(std::move(k));
    }
  } catch (const std::exception &e) {
    error = std::string("malformed kernel program: ") + e.what();
    return false;
  }
  return program.validate(error);
}

//===----------------------------------------------------------------------===//
// Bind points
//===----------------------------------------------------------------------===//

const char *bindPointKindName(BindPointKind kind) {
  switch (kind) {
  case BindPointKind::Argument: return "argument";
  case BindPointKind::Output: return "output";
  case BindPointKind::Scratch: return "scratch";
  case BindPointKind::Constant: return "constant";
  }
  return "?";
}

bool BindPoint::operator==(const BindPoint &o) const {
  return name == o.name && kind == o.kind && bytes == o.bytes &&
         alignment == o.alignment && dtype == o.dtype && shape == o.shape;
}

std::string serializeBindPoints(const std::vector<BindPoint> &bindPoints) {
  json j = json::array();
  for (const BindPoint &bp : bindPoints)
    j.push_back({{"name", bp.name},
                 {"kind", bindPointKindName(bp.kind)},
                 {"bytes", bp.bytes},
                 {"alignment", bp.alignment},
                 {"dtype", cgc_dtype_name(bp.dtype) ? cgc_dtype_name(bp.dtype) : ""},
                 {"shape", bp.shape}});
  return j.dump();
}

bool deserializeBindPoints(std::string_view text,
                           std::vector<BindPoint> &bindPoints,
                           std::string &error) {
  try {
    bindPoints.clear();
    for (const json &j : json::parse(text)) {
      BindPoint bp;
      bp.name = j.at("name").get<std::string>();
      std::string kind = j.at("kind").get<std::string>();
      if (kind == "argument")
        bp.kind = BindPointKind::Argument;
      else if (kind == "output")
        bp.kind = BindPointKind::Output;
      else if (kind == "scratch")
        bp.kind = BindPointKind::Scratch;
      else if (kind == "constant")
        bp.kind = BindPointKind::Constant;
      else
        throw std::runtime_error("unknown bind point kind '" + kind + "'");
      bp.bytes = j.at("bytes").get<JsonInt<uint64_t>>();
      bp.alignment = j.at("alignment").get<JsonInt<uint64_t>>();
      if (bp.alignment == 0 || (bp.alignment & (bp.alignment - 1)))
        throw std::runtime_error("alignment of bind point '" + bp.name +
                                 "' is not a power of two");
      bp.dtype = cgc_dtype_from_name(j.at("dtype").get<std::string>().c_str());
      bp.shape = jsonInts<int64_t>(j.at("shape"));
      bindPoints.push_back(std::move(bp));
    }
  } catch (const std::exception &e) {
    error = std::string("malformed bind-point metadata: ") + e.what();
    return false;
  }
  return true;
}

} // namespace cgc
