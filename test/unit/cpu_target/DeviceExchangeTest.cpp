//===- DeviceExchangeTest.cpp - The cpu target through a device -----===//
//
// The CPU driver answers MLIR_EXCHANGE with the cpu target:
// CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE) on a device returns the
// same bytes as the JIT table called in-process, and the driver reports the
// subgraph interfaces and an MLIR programs tier.
//
//===----------------------------------------------------------------------===//

// jit.h and container.h name a parameter `interface`: before any DirectX
// header.
#include "jit.h"

#include "cgc/d3dx12_mlir.h"

#include <gtest/gtest.h>
#include <wrl/client.h>

#include <array>
#include <vector>

using Microsoft::WRL::ComPtr;

namespace {

ComPtr<ID3D12Device14> makeCpuDevice() {
  EXPECT_EQ(CGCD3D12SelectDriver(nullptr), S_OK) << CGCD3D12GetLastError();
  ComPtr<ID3D12Device14> device;
  EXPECT_EQ(D3D12CreateDevice(nullptr, D3D_FEATURE_LEVEL_12_0, IID_PPV_ARGS(&device)), S_OK)
      << CGCD3D12GetLastError();
  return device;
}

TEST(CpuDeviceExchange, DeclarationThroughTheDeviceMatchesTheJit) {
  unsetenv("CGC_CPU_PATTERNS");
  ComPtr<ID3D12Device14> device = makeCpuDevice();
  ASSERT_TRUE(device);

  D3D12_FEATURE_DATA_D3D12_OPTIONS_MLIR options = {};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_D3D12_OPTIONS_MLIR, &options,
                                        sizeof(options)),
            S_OK);
  EXPECT_GT(options.MlirProgramsTier, D3D12_MLIR_PROGRAMS_TIER_NOT_SUPPORTED);

  std::array<GUID, 5> requested = {CGC_SUBGRAPH_PARTITION, CGC_SUBGRAPH_DECLARATION_REQUEST,
                                   CGC_SUBGRAPH_DECLARATION,
                                   CGC_SUBGRAPH_SPECIALIZATION_REQUEST,
                                   CGC_SUBGRAPH_SPECIALIZATION};
  std::array<BOOL, 5> supported = {};
  D3D12_FEATURE_DATA_MLIR_INTERFACE_SUPPORT support = {};
  support.NumMlirInterfaces = requested.size();
  support.pMlirInterfacesRequested = requested.data();
  support.pMlirInterfacesSupported = supported.data();
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_INTERFACE_SUPPORT, &support,
                                        sizeof(support)),
            S_OK);
  for (BOOL b : supported)
    EXPECT_TRUE(b);

  // The spec's two-call pattern.
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE exchange = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0,
                                               nullptr, &size};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange,
                                        sizeof(exchange)),
            S_OK);
  ASSERT_GT(size, 0u);
  std::vector<uint8_t> viaDevice(size);
  exchange.pOutputData = viaDevice.data();
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &exchange,
                                        sizeof(exchange)),
            S_OK);
  viaDevice.resize(size);

  size_t jitSize = 0;
  const cgc::cpu::JitInterface *jit = cgc::cpu::getJitInterface();
  ASSERT_EQ(jit->exchange(cgc::interfaces::kSubgraphDeclarationRequest, nullptr, 0, nullptr,
                          &jitSize),
            0);
  std::vector<uint8_t> viaJit(jitSize);
  ASSERT_EQ(jit->exchange(cgc::interfaces::kSubgraphDeclarationRequest, nullptr, 0,
                          viaJit.data(), &jitSize),
            0);
  EXPECT_EQ(viaDevice, viaJit);

  // An interface the driver does not answer.
  SIZE_T unused = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE other = {CGC_SUBGRAPH_PARTITION, nullptr, 0, nullptr,
                                            &unused};
  EXPECT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &other, sizeof(other)),
            DXGI_ERROR_UNSUPPORTED);
}

} // namespace
