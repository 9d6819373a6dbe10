//===- OnnxNodeTest.cpp - Kernels against the ONNX backend node tests -----===//
//
// The ONNX node tests (libonnx-testdata) hold inputs and expected outputs
// computed by ONNX's reference implementation. Each case here names a test
// directory and builds the KernelDesc the importer would produce for that
// node (ONNX attributes and constant inputs become cgc_op attributes). The
// .pb tensors are read with a minimal protobuf reader (TensorProto only).
// Cases whose data is not installed are skipped, not passed.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

using namespace cgc;
using namespace cgc::cpu;
using namespace cgc::cpu::test;

namespace {

//===----------------------------------------------------------------------===//
// TensorProto reader
//===----------------------------------------------------------------------===//

struct Proto {
  cgc_dtype_t dtype = CGC_DTYPE_INVALID;
  std::vector<int64_t> dims;
  std::vector<double> values;
};

class Reader {
public:
  Reader(const uint8_t *p, size_t n) : p_(p), end_(p + n) {}
  bool done() const { return p_ >= end_; }
  uint64_t varint() {
    uint64_t v = 0;
    int shift = 0;
    while (p_ < end_) {
      uint8_t b = *p_++;
      v |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80))
        break;
      shift += 7;
    }
    return v;
  }
  template <class T> T fixed() {
    T v{};
    if (size_t(end_ - p_) >= sizeof(T))
      std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  Reader sub() {
    size_t n = size_t(varint());
    Reader r(p_, std::min<size_t>(n, size_t(end_ - p_)));
    p_ += n;
    return r;
  }
  const uint8_t *ptr() const { return p_; }
  size_t left() const { return size_t(end_ - p_); }
  void skip(int wire) {
    if (wire == 0)
      varint();
    else if (wire == 1)
      p_ += 8;
    else if (wire == 2)
      sub();
    else if (wire == 5)
      p_ += 4;
  }

private:
  const uint8_t *p_, *end_;
};

double fromRaw(cgc_dtype_t dt, const uint8_t *p) {
  Tensor t(dt, {1});
  std::memcpy(t.data(), p, cgc_dtype_size(dt));
  return t.get(0);
}

bool readProto(const std::string &path, Proto &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return false;
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Reader r(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
  std::string raw;
  std::vector<double> typed;
  auto packedOrOne = [&](Reader &rr, int wire, auto readOne) {
    if (wire == 2) {
      Reader s = rr.sub();
      while (!s.done())
        typed.push_back(readOne(s));
    } else {
      typed.push_back(readOne(rr));
    }
  };
  while (!r.done()) {
    uint64_t key = r.varint();
    int field = int(key >> 3), wire = int(key & 7);
    switch (field) {
    case 1: // dims
      if (wire == 2) {
        Reader s = r.sub();
        while (!s.done())
          out.dims.push_back(int64_t(s.varint()));
      } else {
        out.dims.push_back(int64_t(r.varint()));
      }
      break;
    case 2:
      out.dtype = cgc_dtype_t(r.varint());
      break;
    case 4: // float_data
      packedOrOne(r, wire, [](Reader &s) { return double(s.fixed<float>()); });
      break;
    case 5: // int32_data (also int8/16, uint8/16, bool, float16 bits)
      packedOrOne(r, wire, [](Reader &s) { return double(int32_t(s.varint())); });
      break;
    case 7: // int64_data
      packedOrOne(r, wire, [](Reader &s) { return double(int64_t(s.varint())); });
      break;
    case 9: { // raw_data
      Reader s = r.sub();
      raw.assign(reinterpret_cast<const char *>(s.ptr()), s.left());
      break;
    }
    case 10: // double_data
      packedOrOne(r, wire, [](Reader &s) { return s.fixed<double>(); });
      break;
    case 11: // uint64_data
      packedOrOne(r, wire, [](Reader &s) { return double(s.varint()); });
      break;
    default:
      r.skip(wire);
    }
  }
  size_t elem = cgc_dtype_size(out.dtype);
  if (elem == 0)
    return false;
  if (!raw.empty()) {
    for (size_t i = 0; i + elem <= raw.size(); i += elem)
      out.values.push_back(fromRaw(out.dtype, reinterpret_cast<const uint8_t *>(raw.data()) + i));
  } else if (out.dtype == CGC_DTYPE_FLOAT16 || out.dtype == CGC_DTYPE_BFLOAT16) {
    for (double bits : typed) {
      uint16_t b = uint16_t(int32_t(bits));
      out.values.push_back(fromRaw(out.dtype, reinterpret_cast<const uint8_t *>(&b)));
    }
  } else {
    out.values = typed;
  }
  return int64_t(out.values.size()) == count(out.dims);
}

Tensor toTensor(const Proto &p) {
  Tensor t(p.dtype, p.dims);
  t.setValues(p.values);
  return t;
}

std::vector<int64_t> ints(const Proto &p) {
  return std::vector<int64_t>(p.values.begin(), p.values.end());
}

bool exists(const std::string &path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

//===----------------------------------------------------------------------===//
// Cases
//===----------------------------------------------------------------------===//

struct Ctx {
  std::vector<Proto> in;
  Proto out;               // output 0
  std::vector<Proto> outs; // every output
};

/// Builds the descriptor and the kernel inputs for a case.
using Builder = std::function<void(const Ctx &, Desc &, std::vector<Tensor> &)>;

struct Case {
  const char *dir;
  Builder build;
  double tol = 1e-5;
};

/// Explicit pads for ONNX auto_pad SAME_UPPER / SAME_LOWER.
void samePads(const std::vector<int64_t> &in, const std::vector<int64_t> &k,
              const std::vector<int64_t> &s, bool upper, std::vector<int64_t> &b,
              std::vector<int64_t> &e) {
  b.clear();
  e.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t out = (in[i] + s[i] - 1) / s[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * s[i] + k[i] - in[i]);
    int64_t small = total / 2, big = total - small;
    b.push_back(upper ? small : big);
    e.push_back(upper ? big : small);
  }
}

Builder pool(const char *op, std::vector<int64_t> k, std::vector<int64_t> strides = {},
             std::vector<int64_t> pads = {}, bool ceil = false, bool includePad = false,
             std::vector<int64_t> dil = {}, int autoPad = 0 /* 1 upper, 2 lower */) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    size_t sp = k.size();
    std::vector<int64_t> s = strides.empty() ? std::vector<int64_t>(sp, 1) : strides;
    std::vector<int64_t> dl = dil.empty() ? std::vector<int64_t>(sp, 1) : dil;
    std::vector<int64_t> b(sp, 0), e(sp, 0);
    if (!pads.empty()) {
      b.assign(pads.begin(), pads.begin() + sp);
      e.assign(pads.begin() + sp, pads.end());
    }
    if (autoPad) {
      std::vector<int64_t> in(c.in[0].dims.begin() + 2, c.in[0].dims.end());
      samePads(in, k, s, autoPad == 1, b, e);
    }
    ins.push_back(toTensor(c.in[0]));
    d.in(ins[0]).ints("kernel_shape", k).ints("strides", s).ints("dilations", dl)
        .ints("start_padding", b).ints("end_padding", e);
    if (ceil)
      d.b("ceil_mode", true);
    if (includePad)
      d.b("count_include_pad", true);
    (void)op;
  };
}

Builder conv(std::vector<int64_t> strides, std::vector<int64_t> pads, int autoPad = 0) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    ins.push_back(toTensor(c.in[0]));
    ins.push_back(toTensor(c.in[1]));
    size_t sp = c.in[0].dims.size() - 2;
    std::vector<int64_t> k(c.in[1].dims.begin() + 2, c.in[1].dims.end());
    std::vector<int64_t> b(pads.begin(), pads.begin() + long(sp)), e(pads.begin() + long(sp), pads.end());
    if (autoPad) {
      std::vector<int64_t> in(c.in[0].dims.begin() + 2, c.in[0].dims.end());
      samePads(in, k, strides, autoPad == 1, b, e);
    }
    d.in(ins[0]).in(ins[1]).ints("strides", strides).ints("dilations", std::vector<int64_t>(sp, 1))
        .ints("start_padding", b).ints("end_padding", e);
  };
}

Builder convT(std::vector<int64_t> strides, std::vector<int64_t> pads, std::vector<int64_t> outPad,
              std::vector<int64_t> dil) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    ins.push_back(toTensor(c.in[0]));
    ins.push_back(toTensor(c.in[1]));
    size_t sp = c.in[0].dims.size() - 2;
    auto orOnes = [&](const std::vector<int64_t> &v, int64_t fill) {
      return v.empty() ? std::vector<int64_t>(sp, fill) : v;
    };
    std::vector<int64_t> p = pads.empty() ? std::vector<int64_t>(2 * sp, 0) : pads;
    d.in(ins[0]).in(ins[1]).ints("strides", orOnes(strides, 1)).ints("dilations", orOnes(dil, 1))
        .ints("start_padding", std::vector<int64_t>(p.begin(), p.begin() + long(sp)))
        .ints("end_padding", std::vector<int64_t>(p.begin() + long(sp), p.end()))
        .ints("output_padding", orOnes(outPad, 0));
  };
}

Builder inputs(size_t n) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    for (size_t i = 0; i < n; ++i)
      ins.push_back(toTensor(c.in[i]));
    for (const Tensor &t : ins)
      d.in(t);
  };
}

/// Resize: input 1 is scales (scalesInput) or sizes; roi optional first.
Builder resize(bool scalesInput, bool roi, std::vector<std::pair<std::string, AttrValue>> attrs) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    ins.push_back(toTensor(c.in[0]));
    d.in(ins[0]).ints("sizes", c.out.dims);
    std::vector<double> scales;
    if (scalesInput) {
      scales = c.in[1].values;
    } else {
      for (size_t i = 0; i < c.out.dims.size(); ++i)
        scales.push_back(double(float(double(c.out.dims[i]) / double(c.in[0].dims[i]))));
    }
    d.floats("scales", scales);
    if (roi)
      d.floats("roi", c.in[1].values);
    for (const auto &[k, v] : attrs)
      d.attr(k, v);
  };
}

AttrValue S(const char *s) { return AttrValue::ofString(s); }

Builder cumsum(bool exclusive, bool reverse) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    inputs(1)(c, d, ins);
    int64_t axis = int64_t(c.in[1].values[0]);
    if (axis < 0)
      axis += int64_t(c.in[0].dims.size());
    d.i("axis", axis).b("exclusive", exclusive).b("reverse", reverse);
  };
}

Builder gridSample(const char *mode, const char *pad, bool align) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    inputs(2)(c, d, ins);
    d.s("mode", mode).s("padding_mode", pad).b("align_corners", align);
  };
}

Builder scatter(int64_t axis, const char *reduction) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    inputs(3)(c, d, ins);
    d.i("axis", axis).s("reduction", reduction);
  };
}

Builder scatterNd(const char *reduction) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    inputs(3)(c, d, ins);
    d.s("reduction", reduction);
  };
}

Builder topK(int64_t axis, bool largest) {
  return [=](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
    inputs(1)(c, d, ins);
    d.i("k", int64_t(c.in[1].values[0])).i("axis", axis).b("largest", largest);
  };
}

std::vector<Case> cases() {
  return {
      {"test_averagepool_1d_default", pool("avg", {2})},
      {"test_averagepool_2d_ceil", pool("avg", {3, 3}, {2, 2}, {}, true)},
      {"test_averagepool_2d_default", pool("avg", {2, 2})},
      {"test_averagepool_2d_pads", pool("avg", {3, 3}, {}, {2, 2, 2, 2})},
      {"test_averagepool_2d_pads_count_include_pad", pool("avg", {3, 3}, {}, {2, 2, 2, 2}, false, true)},
      {"test_averagepool_2d_precomputed_pads", pool("avg", {5, 5}, {}, {2, 2, 2, 2})},
      {"test_averagepool_2d_precomputed_pads_count_include_pad",
       pool("avg", {5, 5}, {}, {2, 2, 2, 2}, false, true)},
      {"test_averagepool_2d_precomputed_same_upper", pool("avg", {3, 3}, {2, 2}, {}, false, false, {}, 1)},
      {"test_averagepool_2d_precomputed_strides", pool("avg", {2, 2}, {2, 2})},
      {"test_averagepool_2d_same_lower", pool("avg", {2, 2}, {}, {}, false, false, {}, 2)},
      {"test_averagepool_2d_same_upper", pool("avg", {2, 2}, {}, {}, false, false, {}, 1)},
      {"test_averagepool_2d_strides", pool("avg", {5, 5}, {3, 3})},
      {"test_averagepool_3d_default", pool("avg", {2, 2, 2})},
      {"test_maxpool_1d_default", pool("max", {2})},
      {"test_maxpool_2d_ceil", pool("max", {3, 3}, {2, 2}, {}, true)},
      {"test_maxpool_2d_default", pool("max", {2, 2})},
      {"test_maxpool_2d_dilations", pool("max", {2, 2}, {1, 1}, {}, false, false, {2, 2})},
      {"test_maxpool_2d_pads", pool("max", {3, 3}, {}, {2, 2, 2, 2})},
      {"test_maxpool_2d_precomputed_pads", pool("max", {5, 5}, {}, {2, 2, 2, 2})},
      {"test_maxpool_2d_precomputed_same_upper", pool("max", {3, 3}, {2, 2}, {}, false, false, {}, 1)},
      {"test_maxpool_2d_precomputed_strides", pool("max", {2, 2}, {2, 2})},
      {"test_maxpool_2d_same_lower", pool("max", {2, 2}, {}, {}, false, false, {}, 2)},
      {"test_maxpool_2d_same_upper", pool("max", {2, 2}, {}, {}, false, false, {}, 1)},
      {"test_maxpool_2d_strides", pool("max", {5, 5}, {3, 3})},
      {"test_maxpool_2d_uint8", pool("max", {5, 5}, {}, {2, 2, 2, 2})},
      {"test_maxpool_3d_default", pool("max", {2, 2, 2})},
      {"test_basic_conv_with_padding", conv({1, 1}, {1, 1, 1, 1})},
      {"test_basic_conv_without_padding", conv({1, 1}, {0, 0, 0, 0})},
      {"test_conv_with_autopad_same", conv({2, 2}, {0, 0, 0, 0}, 2)},
      {"test_conv_with_strides_and_asymmetric_padding", conv({2, 2}, {1, 0, 1, 0})},
      {"test_conv_with_strides_no_padding", conv({2, 2}, {0, 0, 0, 0})},
      {"test_conv_with_strides_padding", conv({2, 2}, {1, 1, 1, 1})},
      {"test_convtranspose", convT({}, {}, {}, {})},
      {"test_convtranspose_1d", convT({}, {}, {}, {})},
      {"test_convtranspose_3d", convT({}, {}, {}, {})},
      {"test_convtranspose_autopad_same", convT({2, 2}, {0, 0, 1, 1}, {}, {})},
      {"test_convtranspose_dilations", convT({}, {}, {}, {2, 2})},
      {"test_convtranspose_pad", convT({3, 2}, {}, {1, 1}, {})},
      {"test_convtranspose_pads", convT({3, 2}, {1, 2, 1, 2}, {}, {})},
      {"test_depthtospace_crd_mode", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2).s("mode", "CRD");
       }},
      {"test_depthtospace_crd_mode_example", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2).s("mode", "CRD");
       }},
      {"test_depthtospace_dcr_mode", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2);
       }},
      {"test_depthtospace_example", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2).s("mode", "DCR");
       }},
      {"test_spacetodepth", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2);
       }},
      {"test_spacetodepth_example", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.i("blocksize", 2);
       }},
      {"test_constant_pad", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.ints("pads", ints(c.in[1])).s("mode", "constant").f("value", c.in[2].values[0]);
       }},
      {"test_edge_pad", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.ints("pads", ints(c.in[1])).s("mode", "edge");
       }},
      {"test_reflect_pad", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.ints("pads", ints(c.in[1])).s("mode", "reflect");
       }},
      {"test_gather_0", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.i("axis", 0);
       }},
      {"test_gather_1", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.i("axis", 1);
       }},
      {"test_gather_2d_indices", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.i("axis", 1);
       }},
      {"test_gather_negative_indices", inputs(2)},
      {"test_gather_elements_0", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.i("axis", 1);
       }},
      {"test_gather_elements_1", inputs(2)},
      {"test_gather_elements_negative_indices", inputs(2)},
      {"test_globalaveragepool", inputs(1)},
      {"test_globalaveragepool_precomputed", inputs(1)},
      {"test_globalmaxpool", inputs(1)},
      {"test_globalmaxpool_precomputed", inputs(1)},
      {"test_round", inputs(1), 0},
      {"test_mod_broadcast", inputs(2), 0},
      {"test_mod_int64_fmod", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.b("fmod", true);
       }, 0},
      {"test_mod_mixed_sign_float16", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.b("fmod", true);
       }, 1e-3},
      {"test_mod_mixed_sign_float32", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.b("fmod", true);
       }},
      {"test_mod_mixed_sign_float64", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(2)(c, d, ins);
         d.b("fmod", true);
       }},
      {"test_mod_mixed_sign_int16", inputs(2), 0},
      {"test_mod_mixed_sign_int32", inputs(2), 0},
      {"test_mod_mixed_sign_int64", inputs(2), 0},
      {"test_mod_mixed_sign_int8", inputs(2), 0},
      {"test_mod_uint16", inputs(2), 0},
      {"test_mod_uint32", inputs(2), 0},
      {"test_mod_uint64", inputs(2), 0},
      {"test_mod_uint8", inputs(2), 0},
      {"test_upsample_nearest", [](const Ctx &c, Desc &d, std::vector<Tensor> &ins) {
         inputs(1)(c, d, ins);
         d.ints("scale_size", {2, 3});
       }},
      {"test_cumsum_1d", cumsum(false, false)},
      {"test_cumsum_1d_exclusive", cumsum(true, false)},
      {"test_cumsum_1d_reverse", cumsum(false, true)},
      {"test_cumsum_1d_reverse_exclusive", cumsum(true, true)},
      {"test_cumsum_2d_axis_0", cumsum(false, false)},
      {"test_cumsum_2d_axis_1", cumsum(false, false)},
      {"test_cumsum_2d_negative_axis", cumsum(false, false)},
      {"test_gridsample", gridSample("bilinear", "zeros", false)},
      {"test_gridsample_aligncorners_true", gridSample("bilinear", "zeros", true)},
      // The expected values of this case are rounded to 4 decimals.
      {"test_gridsample_bicubic", gridSample("bicubic", "zeros", false), 1e-4},
      {"test_gridsample_bilinear", gridSample("bilinear", "zeros", false)},
      {"test_gridsample_border_padding", gridSample("bilinear", "border", false)},
      {"test_gridsample_nearest", gridSample("nearest", "zeros", false)},
      {"test_gridsample_reflection_padding", gridSample("bilinear", "reflection", false)},
      {"test_gridsample_zeros_padding", gridSample("bilinear", "zeros", false)},
      {"test_scatter_elements_with_axis", scatter(1, "none")},
      {"test_scatter_elements_with_duplicate_indices", scatter(1, "add")},
      {"test_scatter_elements_with_negative_indices", scatter(1, "none")},
      {"test_scatter_elements_without_axis", scatter(0, "none")},
      {"test_scatter_with_axis", scatter(1, "none")},
      {"test_scatter_without_axis", scatter(0, "none")},
      {"test_scatternd", scatterNd("none")},
      {"test_scatternd_add", scatterNd("add")},
      {"test_scatternd_multiply", scatterNd("mul")},
      {"test_top_k", topK(1, true)},
      {"test_top_k_negative_axis", topK(1, true)},
      {"test_top_k_smallest", topK(1, false)},
      {"test_resize_downsample_scales_cubic", resize(true, false, {{"mode", S("cubic")}})},
      {"test_resize_downsample_scales_cubic_A_n0p5_exclude_outside",
       resize(true, false, {{"mode", S("cubic")}, {"cubic_coeff_a", AttrValue::ofFloat(-0.5)},
                            {"exclude_outside", AttrValue::ofBool(true)}})},
      {"test_resize_downsample_scales_cubic_align_corners",
       resize(true, false, {{"mode", S("cubic")}, {"coordinate_transformation_mode", S("align_corners")}})},
      {"test_resize_downsample_scales_linear", resize(true, false, {{"mode", S("linear")}})},
      {"test_resize_downsample_scales_linear_align_corners",
       resize(true, false, {{"mode", S("linear")}, {"coordinate_transformation_mode", S("align_corners")}})},
      {"test_resize_downsample_scales_nearest", resize(true, false, {{"mode", S("nearest")}})},
      {"test_resize_downsample_sizes_cubic", resize(false, false, {{"mode", S("cubic")}})},
      {"test_resize_downsample_sizes_linear_pytorch_half_pixel",
       resize(false, false, {{"mode", S("linear")}, {"coordinate_transformation_mode", S("pytorch_half_pixel")}})},
      {"test_resize_downsample_sizes_nearest", resize(false, false, {{"mode", S("nearest")}})},
      {"test_resize_downsample_sizes_nearest_tf_half_pixel_for_nn",
       resize(false, false, {{"mode", S("nearest")},
                             {"coordinate_transformation_mode", S("tf_half_pixel_for_nn")}})},
      {"test_resize_tf_crop_and_resize",
       resize(false, true, {{"mode", S("linear")}, {"coordinate_transformation_mode", S("tf_crop_and_resize")},
                            {"extrapolation_value", AttrValue::ofFloat(10.0)}})},
      {"test_resize_upsample_scales_cubic", resize(true, false, {{"mode", S("cubic")}})},
      {"test_resize_upsample_scales_cubic_A_n0p5_exclude_outside",
       resize(true, false, {{"mode", S("cubic")}, {"cubic_coeff_a", AttrValue::ofFloat(-0.5)},
                            {"exclude_outside", AttrValue::ofBool(true)}})},
      {"test_resize_upsample_scales_cubic_align_corners",
       resize(true, false, {{"mode", S("cubic")}, {"coordinate_transformation_mode", S("align_corners")}})},
      {"test_resize_upsample_scales_cubic_asymmetric",
       resize(true, false, {{"mode", S("cubic")}, {"coordinate_transformation_mode", S("asymmetric")}})},
      {"test_resize_upsample_scales_linear", resize(true, false, {{"mode", S("linear")}})},
      {"test_resize_upsample_scales_linear_align_corners",
       resize(true, false, {{"mode", S("linear")}, {"coordinate_transformation_mode", S("align_corners")}})},
      {"test_resize_upsample_scales_nearest", resize(true, false, {{"mode", S("nearest")}})},
      {"test_resize_upsample_sizes_cubic", resize(false, false, {{"mode", S("cubic")}})},
      {"test_resize_upsample_sizes_nearest", resize(false, false, {{"mode", S("nearest")}})},
      {"test_resize_upsample_sizes_nearest_ceil_half_pixel",
       resize(false, false, {{"mode", S("nearest")}, {"nearest_mode", S("ceil")}})},
      {"test_resize_upsample_sizes_nearest_floor_align_corners",
       resize(false, false, {{"mode", S("nearest")}, {"coordinate_transformation_mode", S("align_corners")},
                             {"nearest_mode", S("floor")}})},
      {"test_resize_upsample_sizes_nearest_round_prefer_ceil_asymmetric",
       resize(false, false, {{"mode", S("nearest")}, {"coordinate_transformation_mode", S("asymmetric")},
                             {"nearest_mode", S("round_prefer_ceil")}})},
  };
}

/// The cgc_op name for a node test directory.
std::string opFor(const std::string &dir) {
  struct M {
    const char *prefix, *op;
  } map[] = {{"test_averagepool", "cgc_op.avg_pool"},   {"test_maxpool", "cgc_op.max_pool"},
             {"test_basic_conv", "cgc_op.convolution"}, {"test_conv_", "cgc_op.convolution"},
             {"test_convtranspose", "cgc_op.conv_transpose"},
             {"test_depthtospace", "cgc_op.depth_to_space"},
             {"test_spacetodepth", "cgc_op.space_to_depth"},
             {"test_constant_pad", "cgc_op.pad"},       {"test_edge_pad", "cgc_op.pad"},
             {"test_reflect_pad", "cgc_op.pad"},        {"test_gather_elements", "cgc_op.gather_elements"},
             {"test_gather", "cgc_op.gather"},          {"test_globalaveragepool", "cgc_op.global_avg_pool"},
             {"test_globalmaxpool", "cgc_op.global_max_pool"},
             {"test_round", "cgc_op.round"},            {"test_mod", "cgc_op.mod"},
             {"test_upsample", "cgc_op.upsample"},      {"test_resize", "cgc_op.resize"},
             {"test_cumsum", "cgc_op.cumsum"},          {"test_gridsample", "cgc_op.grid_sample"},
             {"test_scatternd", "cgc_op.scatter_nd"},   {"test_scatter", "cgc_op.scatter_elements"},
             {"test_top_k", "cgc_op.top_k"}};
  for (const M &m : map)
    if (dir.rfind(m.prefix, 0) == 0)
      return m.op;
  return "";
}

TEST(OnnxNodeTests, KernelsMatchTheCpuOutputs) {
  int ran = 0, missing = 0;
  for (const Case &c : cases()) {
    std::string dir = std::string(CGC_ONNX_NODE_DATA) + "/" + c.dir + "/test_data_set_0/";
    if (!exists(dir)) {
      ++missing;
      continue;
    }
    Ctx ctx;
    for (int i = 0;; ++i) {
      Proto p;
      if (!readProto(dir + "input_" + std::to_string(i) + ".pb", p))
        break;
      ctx.in.push_back(p);
    }
    for (int i = 0;; ++i) {
      Proto p;
      if (!readProto(dir + "output_" + std::to_string(i) + ".pb", p))
        break;
      ctx.outs.push_back(p);
    }
    ASSERT_FALSE(ctx.outs.empty()) << c.dir;
    ctx.out = ctx.outs[0];
    Desc d(opFor(c.dir));
    std::vector<Tensor> ins;
    ins.reserve(4);
    c.build(ctx, d, ins);
    std::vector<Tensor> outs;
    for (const Proto &p : ctx.outs)
      outs.emplace_back(p.dtype, p.dims);
    for (const Tensor &o : outs)
      d.out(o);
    auto k = make(d);
    if (!k) {
      ADD_FAILURE() << c.dir;
      continue;
    }
    std::vector<const Tensor *> in;
    for (const Tensor &t : ins)
      in.push_back(&t);
    std::vector<Tensor *> outPtrs;
    for (Tensor &o : outs)
      outPtrs.push_back(&o);
    runKernel(*k, in, outPtrs, pool3());
    for (size_t i = 0; i < outs.size(); ++i)
      EXPECT_TRUE(closeTo(outs[i], ctx.outs[i].values, c.tol, c.tol,
                          std::string(c.dir) + " output " + std::to_string(i) + " [" +
                              k->describe() + "]"));
    ++ran;
  }
  if (ran == 0)
    GTEST_SKIP() << "ONNX node test data not installed at " << CGC_ONNX_NODE_DATA;
  EXPECT_EQ(missing, 0) << "some listed node tests are not installed";
}

} // namespace
