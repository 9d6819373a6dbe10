//===- winograd.h - 3x3 convolutions as Winograd products -------*- C++ -*-===//
//
// A 3x3, stride-1 convolution computed with Winograd's minimal filtering
// F(4x4, 3x3) (Lavin & Gray, 2015) on the packed GEMM (sgemm.h): every 4x4
// block of output pixels is a 6x6 patch of the input, and in the transform
// domain the 3x3 filter becomes 36 independent products
//
//   M_xi = V_xi x U_xi   (tiles x inC) x (inC x outC), xi = 0..35
//
// where V_xi holds point xi of every tile's transformed patch (B^T d B) and
// U_xi point xi of every transformed filter (G g G^T, computed once in
// double and packed as the GEMM's B). The output transform (A^T M A) then
// gives the 16 pixels of each tile. That is 36 multiply-adds per 16 output
// pixels and filter tap pair instead of 144: 4x fewer than the direct
// convolution, on the same register tiles as the 1x1 convolutions. Planes
// too small for enough 4x4 tiles (7x7, 8x8) use F(2x2,3x3): 4x4 patches,
// 16 products, 2.25x fewer multiply-adds.
//
// Faster than oneDNN 2.6's kernels (its own Winograd ones included) from
// 16 channels up, most of all on large channel counts, where its F(4x4,3x3)
// kernel ran no faster than a direct one (FCN ResNet-50's 2048->512 head at
// 28x28). conv.cpp decides when it runs (winogradConvolutionMismatch, and
// winogradTile: where it pays, and with which tile). Private to
// cgc_cpu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef CGC_CPU_KERNELS_WINOGRAD_H
#define CGC_CPU_KERNELS_WINOGRAD_H

#include "elementwise.h"

namespace cgc::cpu {

/// A 2-D, 3x3, stride-1, ungrouped convolution; the output size implies the
/// end padding. With dilation d (per dimension), the outputs whose row is
/// ph modulo dH and column pw modulo dW (phase (ph, pw)) are an undilated
/// 3x3 convolution of the inputs on the same phase: the kernel tiles each
/// of the dH x dW phases like an image of its own (a segmentation
/// network's dilated convolutions).
struct WinogradGeometry {
  int64_t batch = 0, inC = 0, outC = 0;
  int64_t inH = 0, inW = 0, outH = 0, outW = 0;
  int64_t padTop = 0, padLeft = 0;
  int64_t dilationH = 1, dilationW = 1;
  bool hasBias = false;
  /// Output tile side: 4 for F(4x4,3x3), 2 for F(2x2,3x3).
  int64_t tile = 4;

  /// Output tiles of a phase (of the largest, which starts at row and
  /// column 0): the rows of each product come from batch x dilationH x
  /// dilationW x tilesH() x tilesW() tiles.
  int64_t tilesH() const { return ((outH + dilationH - 1) / dilationH + tile - 1) / tile; }
  int64_t tilesW() const { return ((outW + dilationW - 1) / dilationW + tile - 1) / tile; }
  int64_t tiles() const { return batch * dilationH * dilationW * tilesH() * tilesW(); }
  /// Bands: a phase's row of tiles over every column phase (4 rows of the
  /// phase, dilationH apart in the output).
  int64_t bands() const { return batch * dilationH * tilesH(); }
  int64_t tilesPerBand() const { return dilationW * tilesW(); }
  /// The share of the tiles' pixels that are outputs (phases much smaller
  /// than a tile, as with a dilation near the plane's size, compute
  /// little else).
  double filled() const {
    return double(outH * outW) /
           double(dilationH * tilesH() * dilationW * tilesW() * tile * tile);
  }
};

/// Empty if the kernel can run `anchor` (geometry `g`) writing `out` (the
/// end of its chain), else why not: no AVX-512 for the packed GEMM (or
/// CGC_CPU_WINOGRAD_GEMM=0), not float32, an input or result that is
/// not dense channels-last, a bias that is not a dense vector.
std::string winogradConvolutionMismatch(const WinogradGeometry &g, const KernelDesc &anchor,
                                        const KernelOperand &out);

/// Fewer input or output channels, or fewer tiles (rows of the products),
/// or tiles less filled with output pixels, and oneDNN's kernels keep the
/// convolution.
constexpr int64_t kWinogradGemmMinChannels = 16;
constexpr int64_t kWinogradGemmMinTiles = 16;
constexpr double kWinogradGemmMinFilled = 0.5;

/// The output tile side with which this kernel measured faster than
/// oneDNN's kernels for `g` (whose own `tile` is ignored): 4 (F(4x4,3x3))
/// where enough 4x4 tiles are enough filled, else 2 (F(2x2,3x3)) where 2x2
/// ones are, else 0: oneDNN keeps the convolution. With
/// CGC_CPU_WINOGRAD_GEMM=all never 0.
int64_t winogradTile(const WinogradGeometry &g);

/// The kernel for `anchor` followed by `chain` (elementwise ops that keep
/// the shape and dtype; may be empty: a leading relu or clip is applied
/// before the store, the rest to each band of 4 output rows while it is in
/// cache). Weights are transformed and packed once per address when
/// `constantParams`, else on every run. Throws DescError (naming the op)
/// when an op of the chain cannot be an epilogue.
std::unique_ptr<Kernel> makeWinogradConvolution(const WinogradGeometry &g,
                                                const KernelDesc &anchor,
                                                const std::vector<KernelDesc> &chain,
                                                bool constantParams, const std::string &what);

} // namespace cgc::cpu

#endif // CGC_CPU_KERNELS_WINOGRAD_H
