//===- PrecompilationTest.cpp - SODB/PSDB, plugins, registration ----------===//
//
// The databases on their own (round trip, versions, untrusted files), the
// plugin host's version negotiation, and the second plugin (test_plugin.c,
// plain C against the DDI headers) compiling a partition that the test
// double then creates from the registered database and runs through the
// runtime. The CPU driver's plugin and the stale-key cases are in
// test/runtime/precompiled-databases.test (lit, with sqlite3).
//
//===----------------------------------------------------------------------===//

#include "TestUtil.h"

#include "plugin_host.h"
#include "cgc/databases.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

using namespace cgc;
using namespace cgc::test;
namespace fs = std::filesystem;

namespace {

/// A fresh folder per test.
struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("cgc-precompilation-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string operator/(const std::string &name) const { return (path / name).string(); }
};

db::Bytes bytes(const std::string &s) { return db::Bytes(s.begin(), s.end()); }

db::StateObject copyProgram(const std::string &key, uint64_t bytesPerBinding) {
  db::StateObject object;
  object.key = bytes(key);
  object.programs.push_back(
      {"partition0", partitionContainer({bindPoint("in", BindPointKind::Argument, bytesPerBinding),
                                         bindPoint("out", BindPointKind::Output,
                                                   bytesPerBinding)})});
  return object;
}

std::string errorOf(const std::function<void()> &body) {
  try {
    body();
  } catch (const std::exception &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Databases, StateObjectRoundTripAndVersions) {
  TempDir dir;
  auto sodb = db::StateObjectDatabase::open(dir / "a.sodb", true, true);
  EXPECT_FALSE(sodb->applicationDesc());
  db::ApplicationDesc app{"demo", "Demo", 0x0001000200000000ull, std::string("engine"), 7};
  sodb->setApplicationDesc(app);
  EXPECT_EQ(*sodb->applicationDesc(), app);

  db::StateObject object = copyProgram("model/partition0", 64);
  EXPECT_EQ(sodb->storeStateObject(object), 1u);
  auto found = sodb->findStateObject(object.key);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->programs.size(), 1u);
  EXPECT_EQ(found->programs[0].name, "partition0");
  EXPECT_EQ(found->programs[0].bytecode, object.programs[0].bytecode);
  EXPECT_EQ(found->type, 4u);
  // The same content keeps its version; other content is the next one.
  EXPECT_EQ(sodb->storeStateObject(object), 1u);
  EXPECT_EQ(sodb->storeStateObject(copyProgram("model/partition0", 128)), 2u);
  EXPECT_EQ(*sodb->findObjectVersion(object.key), 2u);
  EXPECT_EQ(sodb->findStateObject(object.key)->programs[0].bytecode,
            copyProgram("x", 128).programs[0].bytecode);
  EXPECT_FALSE(sodb->findStateObject(bytes("nope")));
  EXPECT_EQ(sodb->stateObjectKeys().size(), 1u);
  // Reopened read-only, the same.
  sodb.reset();
  auto again = db::StateObjectDatabase::open(dir / "a.sodb", false);
  EXPECT_EQ(*again->findObjectVersion(object.key), 2u);
}

TEST(Databases, PrecompiledValuesAndGroups) {
  TempDir dir;
  db::CompilerTarget target{"family", 3, 0x0001000000000000ull, 0, 3, "plugin.so"};
  auto psdb = db::PrecompiledDatabase::create(dir / "a.psdb", target, std::nullopt);
  EXPECT_TRUE(psdb->storeValue(bytes("k"), db::ValueType::ObjectCode, bytes("code")));
  EXPECT_FALSE(psdb->storeValue(bytes("k"), db::ValueType::ObjectCode, bytes("other")));
  EXPECT_TRUE(psdb->storeValue(bytes("k"), db::ValueType::Metadata, bytes("{}")));
  psdb->storeGroup(bytes("so"), 4, {bytes("k")});
  psdb.reset();
  auto read = db::PrecompiledDatabase::open(dir / "a.psdb", false);
  EXPECT_EQ(read->target().adapterFamily, "family");
  EXPECT_EQ(read->target().abiVersion, 3u);
  EXPECT_EQ(*read->findValue(bytes("k"), db::ValueType::ObjectCode), bytes("code"));
  EXPECT_FALSE(read->findValue(bytes("k"), db::ValueType::DebugPdb));
  auto group = read->findGroup(bytes("so"));
  ASSERT_TRUE(group);
  EXPECT_EQ(group->version, 4u);
  EXPECT_EQ(group->valueKeys, std::vector<db::Bytes>{bytes("k")});
  // A new PSDB is never written over an existing one.
  EXPECT_NE(errorOf([&] { db::PrecompiledDatabase::create(dir / "a.psdb", target, {}); })
                .find("already holds a database"),
            std::string::npos);
}

TEST(Databases, UntrustedFilesAreClearErrors) {
  TempDir dir;
  db::StateObjectDatabase::open(dir / "a.sodb", true, true);
  // One kind of database for the other.
  EXPECT_NE(errorOf([&] { db::PrecompiledDatabase::open(dir / "a.sodb", false); })
                .find("not a precompiled database (PSDB) (its application_id is 0xD3D50DB"),
            std::string::npos);
  // Not a database at all.
  std::ofstream(dir / "junk.psdb") << std::string(8192, 'x');
  std::string error = errorOf([&] { db::PrecompiledDatabase::open(dir / "junk.psdb", false); });
  EXPECT_NE(error.find("junk.psdb"), std::string::npos) << error;
  EXPECT_NE(error.find("not a database"), std::string::npos) << error;
  // A database cut short.
  db::CompilerTarget target{"family", 1, 1, 0, 1, "p"};
  {
    auto psdb = db::PrecompiledDatabase::create(dir / "cut.psdb", target, std::nullopt);
    for (int i = 0; i < 64; ++i)
      psdb->storeValue(bytes("key" + std::to_string(i)), db::ValueType::ObjectCode,
                       db::Bytes(4096, uint8_t(i)));
  }
  fs::resize_file(dir / "cut.psdb", fs::file_size(dir / "cut.psdb") / 2);
  error = errorOf([&] {
    auto psdb = db::PrecompiledDatabase::open(dir / "cut.psdb", false);
    for (int i = 0; i < 64; ++i)
      psdb->findValue(bytes("key" + std::to_string(i)), db::ValueType::ObjectCode);
  });
  EXPECT_NE(error.find("cut.psdb"), std::string::npos) << error;
  EXPECT_NE(error.find("malformed"), std::string::npos) << error;
  // The runtime refuses to register them, naming the file.
  std::string junk = dir / "junk.psdb";
  const char *paths[] = {junk.c_str()};
  EXPECT_EQ(CGCD3D12RegisterPrecompiledDatabases((dir / "a.sodb").c_str(), 1, paths),
            E_INVALIDARG);
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("junk.psdb"), std::string::npos);
  EXPECT_EQ(CGCD3D12RegisterPrecompiledDatabases((dir / "missing.sodb").c_str(), 1, paths),
            E_INVALIDARG);
  EXPECT_NE(std::string(CGCD3D12GetLastError()).find("missing.sodb"), std::string::npos);
}

TEST(Plugins, NegotiationFailsCleanly) {
  EXPECT_NE(errorOf([] { soc::Plugin plugin("/nonexistent/plugin.so"); }).find("cannot load it"),
            std::string::npos);
  EXPECT_NE(errorOf([] { soc::Plugin plugin(testDriverPath()); })
                .find("does not export D3D12OpenCompilerDDI"),
            std::string::npos);
  // A plugin of another interface version (the test plugin's knob).
  ::setenv("CGC_TEST_PLUGIN_DDI_VERSION", "0002000000000000", 1);
  std::string error = errorOf([] { soc::Plugin plugin(CGC_TEST_PLUGIN_PATH); });
  ::unsetenv("CGC_TEST_PLUGIN_DDI_VERSION");
  EXPECT_NE(error.find("supports plugin DDI version 2.0; this host needs 1.0"), std::string::npos)
      << error;
  // Its own version negotiates.
  soc::Plugin plugin(CGC_TEST_PLUGIN_PATH);
  auto families = plugin.adapterFamilies();
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].name, "cgc-test-copy");
  EXPECT_EQ(families[0].abiVersions, std::vector<uint64_t>{1});
  EXPECT_NE(errorOf([&] { plugin.familyIndex("gpu"); }).find("has no adapter family 'gpu'"),
            std::string::npos);
}

// The MLIR exchange without a device: the CPU plugin answers a pattern
// declaration request through GetCaps with exactly what a CPU-driver
// device answers to CheckFeatureSupport, so an offline toolchain can lower
// Input IR for that adapter family with no driver loaded.
TEST(Plugins, TheCpuPluginAnswersTheMlirExchangeLikeItsDriver) {
  const std::string path = CGC_CPU_PLUGIN_PATH;
  if (!fs::exists(path))
    GTEST_SKIP() << "this build has no compiler: no CPU plugin";
  soc::Plugin plugin(path);
  UINT family = plugin.familyIndex("cgc-cpu-x86-64");
  std::vector<uint8_t> offline = plugin.exchange(
      family, plugin.adapterFamilies()[family].abiVersions[0], CGC_SUBGRAPH_DECLARATION_REQUEST,
      nullptr, 0);
  ASSERT_GT(offline.size(), kContainerHeaderSize);

  ComPtr<ID3D12Device14> device = makeDevice(nullptr);
  ASSERT_TRUE(device);
  SIZE_T size = 0;
  D3D12_FEATURE_DATA_MLIR_EXCHANGE ex = {CGC_SUBGRAPH_DECLARATION_REQUEST, nullptr, 0, nullptr,
                                         &size};
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)), S_OK);
  std::vector<uint8_t> online(size);
  ex.pOutputData = online.data();
  ASSERT_EQ(device->CheckFeatureSupport(D3D12_FEATURE_MLIR_EXCHANGE, &ex, sizeof(ex)), S_OK);
  online.resize(size);
  EXPECT_EQ(offline, online);
}

TEST(Plugins, SecondPluginRunsAPartitionThroughTheRuntime) {
  TempDir dir;
  constexpr uint64_t kBytes = 64;
  {
    auto sodb = db::StateObjectDatabase::open(dir / "app.sodb", true, true);
    sodb->storeStateObject(copyProgram("app/partition0", kBytes));
    soc::Plugin plugin(CGC_TEST_PLUGIN_PATH);
    UINT family = plugin.familyIndex("cgc-test-copy");
    db::CompilerTarget target{"cgc-test-copy", 1, plugin.adapterFamilies()[0].compilerVersion,
                              0, 1, "test plugin"};
    auto psdb = db::PrecompiledDatabase::create(dir / "app.psdb", target, std::nullopt);
    auto result = plugin.compile(*sodb, *psdb, family, 1, 1, std::nullopt);
    EXPECT_EQ(result.stateObjects, 1u);
    EXPECT_EQ(result.valuesStored, 1u);
  }
  CGCD3D12ClearPrecompiledDatabases();
  std::string psdbPath = dir / "app.psdb";
  const char *paths[] = {psdbPath.c_str()};
  ASSERT_EQ(CGCD3D12RegisterPrecompiledDatabases((dir / "app.sodb").c_str(), 1, paths), S_OK)
      << CGCD3D12GetLastError();

  ComPtr<ID3D12Device14> device = makeDevice(testDriverPath());
  ASSERT_TRUE(device);
  int hitsBefore = testDriverCounters()->databaseHits.load();
  auto container = copyProgram("", kBytes).programs[0].bytecode;
  D3D12_MLIR_PROGRAM_DESC p = {L"partition0", container.data(), container.size()};
  D3D12_STATE_SUBOBJECT sub = {D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &p};
  D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE_EXECUTABLE, 1, &sub};
  ComPtr<ID3D12StateObject> stateObject;
  ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&stateObject)), S_OK);
  EXPECT_EQ(testDriverCounters()->databaseHits.load(), hitsBefore + 1);
  CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS stats = {};
  ASSERT_EQ(CGCD3D12GetPrecompiledDatabaseStatistics(device.Get(), &stats), S_OK);
  EXPECT_EQ(stats.RegisteredDatabases, 1u);
  EXPECT_EQ(stats.MatchingDatabases, 1u);
  EXPECT_EQ(stats.Lookups, 1u);
  EXPECT_EQ(stats.Hits, 1u);

  // It runs: the double copies bind point 0 into bind point 1, with the
  // sizes it took from the database's value.
  ComPtr<ID3D12StateObjectProperties1> props;
  ASSERT_EQ(stateObject.As(&props), S_OK);
  auto in = makeBuffer(device.Get(), kBytes), out = makeBuffer(device.Get(), kBytes);
  auto *src = mapped<uint8_t>(in.Get());
  for (uint64_t i = 0; i < kBytes; ++i)
    src[i] = uint8_t(3 * i + 1);
  Recorder recorder(device.Get());
  D3D12_SET_PROGRAM_DESC set = {};
  set.Type = D3D12_PROGRAM_TYPE_MLIR_PROGRAM;
  set.MlirProgram.ProgramIdentifier = props->GetProgramIdentifier(L"partition0");
  recorder.list->SetProgram(&set);
  D3D12_MLIR_PROGRAM_BINDING b[2] = {};
  for (UINT i = 0; i < 2; ++i) {
    b[i].BindPointIndex = i;
    b[i].Type = D3D12_MLIR_PROGRAM_BINDING_TYPE_GPU;
  }
  b[0].GpuBinding = in->GetGPUVirtualAddress();
  b[1].GpuBinding = out->GetGPUVirtualAddress();
  D3D12_DISPATCH_GRAPH_DESC d = {};
  d.Mode = D3D12_DISPATCH_MODE_MLIR_PROGRAM;
  d.MlirProgramBindings = {2, b};
  recorder.list->DispatchGraph(&d);
  ASSERT_EQ(recorder.list->Close(), S_OK);
  Queue queue(device.Get());
  queue.run({recorder.list.Get()});
  EXPECT_EQ(std::memcmp(mapped<uint8_t>(out.Get()), src, kBytes), 0);

  // The SODB entry changes (version 2): the PSDB's group (version 1) is
  // stale and no longer used, though its value is still there.
  {
    auto sodb = db::StateObjectDatabase::open(dir / "app.sodb", true);
    db::StateObject changed = copyProgram("app/partition0", kBytes);
    changed.flags = 1;
    EXPECT_EQ(sodb->storeStateObject(changed), 2u);
  }
  CGCD3D12ClearPrecompiledDatabases();
  ASSERT_EQ(CGCD3D12RegisterPrecompiledDatabases((dir / "app.sodb").c_str(), 1, paths), S_OK);
  ComPtr<ID3D12StateObject> again;
  ASSERT_EQ(device->CreateStateObject(&desc, IID_PPV_ARGS(&again)), S_OK);
  EXPECT_EQ(testDriverCounters()->databaseHits.load(), hitsBefore + 1);
  ASSERT_EQ(CGCD3D12GetPrecompiledDatabaseStatistics(device.Get(), &stats), S_OK);
  EXPECT_EQ(stats.Lookups, 2u);
  EXPECT_EQ(stats.Hits, 1u);

  // On a driver of another adapter family the database is not offered, and
  // the device says why.
  ComPtr<ID3D12Device14> cpu = makeDevice(nullptr);
  ASSERT_TRUE(cpu);
  ASSERT_EQ(CGCD3D12GetPrecompiledDatabaseStatistics(cpu.Get(), &stats), S_OK);
  EXPECT_EQ(stats.RegisteredDatabases, 1u);
  EXPECT_EQ(stats.MatchingDatabases, 0u);
  CGCD3D12ClearPrecompiledDatabases();
}
