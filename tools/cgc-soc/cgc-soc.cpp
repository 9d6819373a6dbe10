//===- cgc-soc.cpp - The state object compiler ----------------------------===//
//
// cgc's counterpart of the spec family's D3D12StateObjectCompiler
// (docs/precompilation.md):
//
//   cgc-soc add SODB MODEL.cgc...   every MLIR program of the models, one
//                                   state object each, into an SODB
//   cgc-soc compile SODB PSDB --plugin P [--adapter-family F] [--abi N]
//                                   the SODB's state objects through a
//                                   compiler plugin into a new PSDB
//   cgc-soc prepare PSDB MODEL.cgc... --plugin P [--threads 1,2]
//                                   the models' constants prepared offline
//                                   in the driver's layouts, beside the PSDB
//   cgc-soc replay SODB [--psdb PSDB...] [--driver D]
//                                   creates every state object on a device
//                                   with the databases registered; says how
//                                   each program was created
//   cgc-soc list (--plugin P | --sodb S | --psdb P)
//
//===----------------------------------------------------------------------===//

#include "cgc/compiled_model.h"
#include "cgc/databases.h"

#include "plugin_host.h"
#include "ToolSupport.h"

#include "cgc/d3d12_mlir.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <wrl/client.h>

using namespace cgc;
using Microsoft::WRL::ComPtr;

namespace {

struct AppOptions {
  std::string exe, name, engine;
  uint64_t version = 0, engineVersion = 0;
  void add(CLI::App *cmd) {
    cmd->add_option("--exe-filename", exe, "the application's executable name");
    cmd->add_option("--name", name, "the application's title");
    cmd->add_option("--app-version", version, "its version (a D3D12_VERSION_NUMBER)");
    cmd->add_option("--engine", engine, "its engine's name");
    cmd->add_option("--engine-version", engineVersion, "its engine's version");
  }
  std::optional<db::ApplicationDesc> desc() const {
    if (exe.empty() && name.empty())
      return std::nullopt;
    if (exe.empty() || name.empty())
      throw db::Error("--exe-filename and --name go together (both are required fields of "
                      "D3D12_APPLICATION_DESC)");
    db::ApplicationDesc d{exe, name, version, std::nullopt, engineVersion};
    if (!engine.empty())
      d.engineName = engine;
    return d;
  }
};

db::Bytes bytes(const std::string &s) { return db::Bytes(s.begin(), s.end()); }

std::wstring widen(const std::string &s) { return std::wstring(s.begin(), s.end()); }

int add(const std::string &sodbPath, const std::vector<std::string> &models,
        const AppOptions &appOptions) {
  auto sodb = db::StateObjectDatabase::open(sodbPath, true, /*create=*/true);
  if (auto app = appOptions.desc()) {
    auto stored = sodb->applicationDesc();
    if (stored && !(*stored == *app))
      throw db::Error(sodbPath + ": it is for application '" + stored->name + "' (" +
                      stored->exeFilename + "); all of an application's SODBs carry the same "
                      "description");
    sodb->setApplicationDesc(*app);
  }
  for (const std::string &path : models) {
    CompiledModel model;
    std::string error;
    if (!model.openFile(path, error))
      throw db::Error(error);
    std::string stem = std::filesystem::path(path).stem().string();
    const ExecutionPlan &plan = model.getPlan();
    size_t added = 0, updated = 0;
    for (size_t i = 0; i < plan.programs.size(); ++i) {
      if (plan.programs[i].kind != PlanProgram::Kind::Mlir)
        continue;
      db::StateObject object;
      object.key = bytes(stem + "/" + plan.programs[i].name);
      object.programs.push_back({plan.programs[i].name, model.buildProgramContainer(i)});
      auto before = sodb->findObjectVersion(object.key);
      uint32_t version = sodb->storeStateObject(object);
      added += !before;
      updated += before && *before != version;
    }
    std::printf("%s: %zu state objects added, %zu updated (keys '%s/<program>')\n", path.c_str(),
                added, updated, stem.c_str());
  }
  return 0;
}

int compile(const std::string &sodbPath, const std::string &psdbPath,
            const std::string &pluginPath, const std::string &familyName, uint64_t abi,
            bool metadata, const std::string &key) {
  auto sodb = db::StateObjectDatabase::open(sodbPath, false);
  soc::Plugin plugin(pluginPath);
  UINT family = plugin.familyIndex(familyName);
  soc::AdapterFamily info = plugin.adapterFamilies().at(family);
  if (abi == 0)
    abi = info.abiVersions.front(); // the newest, as the spec's 0 means
  else if (std::find(info.abiVersions.begin(), info.abiVersions.end(), abi) ==
           info.abiVersions.end())
    throw soc::PluginError("adapter family '" + info.name + "' has no ABI version " +
                           std::to_string(abi));
  auto app = sodb->applicationDesc();
  db::CompilerTarget target;
  target.adapterFamily = info.name;
  target.abiVersion = abi;
  target.compilerVersion = info.compilerVersion;
  target.applicationProfileVersion = plugin.applicationProfileVersion(family, abi, app);
  target.valueTypes = D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_OBJECT_CODE |
                      (metadata ? D3D12DDI_COMPILER_VALUE_TYPE_FLAGS_METADATA : 0);
  target.plugin = std::filesystem::path(pluginPath).filename().string();
  if (std::filesystem::exists(psdbPath))
    throw db::Error(psdbPath + ": exists; a precompiled database is written to a new file");
  std::unique_ptr<db::PrecompiledDatabase> psdb;
  soc::Plugin::Result result;
  try {
    psdb = db::PrecompiledDatabase::create(psdbPath, target, app);
    result = plugin.compile(*sodb, *psdb, family, abi, target.valueTypes,
                            key.empty() ? std::nullopt : std::optional<db::Bytes>(bytes(key)));
  } catch (...) {
    psdb.reset();
    std::filesystem::remove(psdbPath); // no half-written database
    throw;
  }
  std::printf("%s: %zu state objects (%zu programs) compiled for '%s' ABI %llu, compiler %s: "
              "%zu values stored, %zu shared\n",
              psdbPath.c_str(), result.stateObjects, result.programs, info.name.c_str(),
              (unsigned long long)abi, soc::versionText(info.compilerVersion).c_str(),
              result.valuesStored, result.valuesShared);
  return 0;
}

int prepare(const std::string &psdbPath, const std::vector<std::string> &models,
            const std::string &pluginPath, const std::vector<unsigned> &threadCounts) {
  auto psdb = db::PrecompiledDatabase::open(psdbPath, true);
  soc::Plugin plugin(pluginPath);
  if (!plugin.preparesConstants())
    throw soc::PluginError("compiler plugin '" + pluginPath + "' does not prepare constants");
  const db::CompilerTarget &target = psdb->target();
  UINT family = plugin.familyIndex(target.adapterFamily);
  if (plugin.adapterFamilies().at(family).compilerVersion != target.compilerVersion)
    throw soc::PluginError(psdbPath + " was compiled by compiler " +
                           soc::versionText(target.compilerVersion) + "; this plugin is " +
                           soc::versionText(plugin.adapterFamilies().at(family).compilerVersion));
  for (const std::string &path : models) {
    CompiledModel model;
    std::string error;
    if (!model.openFile(path, error))
      throw db::Error(error);
    const ExecutionPlan &plan = model.getPlan();
    const ByteView constants = model.getConstants();
    const auto digest = model.getDigest();
    size_t prepared = 0, dispatches = 0;
    uint64_t before = psdb->externalValuesEnd();
    for (const PlanCommand &command : plan.commands) {
      if (command.kind != PlanCommand::Kind::Dispatch ||
          plan.programs.at(command.program).kind != PlanProgram::Kind::Mlir)
        continue;
      std::vector<soc::Plugin::Constant> given;
      for (size_t i = 0; i < command.ranges.size(); ++i) {
        const PlanRange &range = command.ranges[i];
        if (range.buffer != PlanBuffer::Constants)
          continue;
        if (range.offset > constants.size || range.bytes > constants.size - range.offset)
          throw db::Error(path + ": a constant binding lies outside the constants");
        given.push_back({uint32_t(i), constants.data + range.offset, range.bytes,
                         constantDigest(digest, range.offset, range.bytes)});
      }
      if (given.empty())
        continue;
      ++dispatches;
      std::vector<uint8_t> container = model.buildProgramContainer(command.program);
      for (unsigned threads : threadCounts)
        prepared += plugin.prepareConstants(*psdb, family, target.abiVersion,
                                            plan.programs[command.program].name, container,
                                            given, threads);
    }
    std::printf("%s: %zu dispatches with constants, %zu prepared-constants values stored "
                "(%.2f MiB beside %s)\n",
                path.c_str(), dispatches, prepared,
                double(psdb->externalValuesEnd() - before) / (1 << 20), psdbPath.c_str());
  }
  return 0;
}

const char *statusName(CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status) {
  switch (status) {
  case CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE:
    return "compiled";
  case CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_HIT:
    return "cached blob";
  case CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_MISMATCH:
    return "compiled (cached blob not used)";
  case CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT:
    return "precompiled database";
  case CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_STALE:
    return "compiled (database entry stale)";
  }
  return "?";
}

int replay(const std::string &sodbPath, const std::vector<std::string> &psdbs,
           const std::string &driver, const std::string &key, bool requireHits) {
  if (!psdbs.empty()) {
    std::vector<const char *> paths;
    for (const auto &p : psdbs)
      paths.push_back(p.c_str());
    if (FAILED(CGCD3D12RegisterPrecompiledDatabases(sodbPath.c_str(), UINT(paths.size()),
                                                    paths.data())))
      throw db::Error(CGCD3D12GetLastError());
  }
  auto sodb = db::StateObjectDatabase::open(sodbPath, false);
  ComPtr<ID3D12Device> device;
  if (FAILED(CGCD3D12CreateDeviceOnDriver(driver.empty() ? nullptr : driver.c_str(),
                                          IID_PPV_ARGS(&device))))
    throw db::Error(std::string("cannot create a device: ") + CGCD3D12GetLastError());
  ComPtr<ID3D12Device14> device14;
  if (FAILED(device.As(&device14)))
    throw db::Error("the device has no ID3D12Device14");
  std::vector<db::Bytes> keys = key.empty() ? sodb->stateObjectKeys()
                                            : std::vector<db::Bytes>{bytes(key)};
  size_t programs = 0, fromDatabase = 0, failed = 0;
  for (const db::Bytes &k : keys) {
    auto object = sodb->findStateObject(k);
    if (!object)
      throw db::Error(sodbPath + ": no state object has key '" + db::keyText(k) + "'");
    std::vector<std::wstring> names;
    std::vector<D3D12_MLIR_PROGRAM_DESC> descs;
    names.reserve(object->programs.size());
    for (const auto &p : object->programs) {
      names.push_back(widen(p.name));
      descs.push_back({names.back().c_str(), p.bytecode.data(), p.bytecode.size()});
    }
    std::vector<D3D12_STATE_SUBOBJECT> subs;
    for (const auto &d : descs)
      subs.push_back({D3D12_STATE_SUBOBJECT_TYPE_MLIR_PROGRAM, &d});
    D3D12_STATE_OBJECT_DESC desc = {D3D12_STATE_OBJECT_TYPE(object->type), UINT(subs.size()),
                                    subs.data()};
    ComPtr<ID3D12StateObject> so;
    if (FAILED(device14->CreateStateObject(&desc, IID_PPV_ARGS(&so)))) {
      std::printf("%s: CreateStateObject failed: %s\n", db::keyText(k).c_str(),
                  CGCD3D12GetLastError());
      ++failed;
      continue;
    }
    for (size_t i = 0; i < object->programs.size(); ++i) {
      CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS status = CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_NONE;
      CGCD3D12GetCachedMlirProgramStatus(so.Get(), names[i].c_str(), &status);
      std::printf("%s: program '%s': %s\n", db::keyText(k).c_str(),
                  object->programs[i].name.c_str(), statusName(status));
      ++programs;
      fromDatabase += status == CGC_D3D12_CACHED_MLIR_PROGRAM_STATUS_DATABASE_HIT;
    }
  }
  CGC_D3D12_PRECOMPILED_DATABASE_STATISTICS stats = {};
  CGCD3D12GetPrecompiledDatabaseStatistics(device.Get(), &stats);
  std::printf("%zu programs: %zu from a precompiled database, %zu compiled; %u of %u databases "
              "match the driver; %llu lookups, %llu hits\n",
              programs, fromDatabase, programs - fromDatabase, stats.MatchingDatabases,
              stats.RegisteredDatabases, (unsigned long long)stats.Lookups,
              (unsigned long long)stats.Hits);
  if (failed)
    return 1;
  if (requireHits && fromDatabase != programs) {
    std::fflush(stdout);
    std::fprintf(stderr, "cgc-soc: error: %zu of %zu programs were compiled "
                         "(--require-hits)\n",
                 programs - fromDatabase, programs);
    return 1;
  }
  return 0;
}

int list(const std::string &pluginPath, const std::string &sodbPath, const std::string &psdbPath,
         const AppOptions &appOptions) {
  if (!pluginPath.empty()) {
    soc::Plugin plugin(pluginPath);
    std::printf("plugin %s (plugin DDI %llu.%llu)\n", pluginPath.c_str(),
                (unsigned long long)(plugin.selectedVersion() >> 48),
                (unsigned long long)((plugin.selectedVersion() >> 32) & 0xFFFF));
    auto families = plugin.adapterFamilies();
    for (size_t i = 0; i < families.size(); ++i) {
      std::string abis;
      for (uint64_t abi : families[i].abiVersions)
        abis += (abis.empty() ? "" : ", ") + std::to_string(abi);
      std::printf("  adapter family #%zu '%s': ABI %s, compiler %s", i,
                  families[i].name.c_str(), abis.c_str(),
                  soc::versionText(families[i].compilerVersion).c_str());
      if (auto app = appOptions.desc())
        std::printf(", application profile %s",
                    soc::versionText(plugin.applicationProfileVersion(
                                         UINT(i), families[i].abiVersions.front(), app))
                        .c_str());
      std::printf("\n");
    }
  }
  if (!sodbPath.empty()) {
    auto sodb = db::StateObjectDatabase::open(sodbPath, false);
    std::printf("state object database %s\n", sodbPath.c_str());
    if (auto app = sodb->applicationDesc())
      std::printf("  application '%s' (%s) %s\n", app->name.c_str(), app->exeFilename.c_str(),
                  soc::versionText(app->version).c_str());
    for (const auto &key : sodb->stateObjectKeys()) {
      auto object = sodb->findStateObject(key);
      size_t bytes = 0;
      for (const auto &p : object->programs)
        bytes += p.bytecode.size();
      std::printf("  %s v%u: %zu MLIR program%s, %zu bytes of bytecode\n",
                  db::keyText(key).c_str(), object->version, object->programs.size(),
                  object->programs.size() == 1 ? "" : "s", bytes);
    }
  }
  if (!psdbPath.empty()) {
    auto psdb = db::PrecompiledDatabase::open(psdbPath, false);
    const db::CompilerTarget &t = psdb->target();
    std::printf("precompiled database %s: adapter family '%s', ABI %llu, compiler %s, "
                "application profile %s, plugin %s\n",
                psdbPath.c_str(), t.adapterFamily.c_str(), (unsigned long long)t.abiVersion,
                soc::versionText(t.compilerVersion).c_str(),
                soc::versionText(t.applicationProfileVersion).c_str(), t.plugin.c_str());
    for (const auto &group : psdb->groups()) {
      std::printf("  %s v%u:", db::keyText(group.key).c_str(), group.version);
      for (const auto &valueKey : group.valueKeys) {
        std::printf(" %s", db::keyText(valueKey).c_str());
        for (uint32_t type = 0; type < db::kValueTypeCount; ++type)
          if (auto value = psdb->findValue(valueKey, db::ValueType(type)))
            std::printf(" [%s %zu bytes]", db::valueTypeName(db::ValueType(type)), value->size());
      }
      std::printf("\n");
    }
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  CLI::App app{"cgc-soc: the state object compiler. Builds state object databases (SODB) from "
               "compiled models, compiles them through a compiler plugin into precompiled "
               "databases (PSDB), and replays them on a device (docs/precompilation.md)."};
  app.set_version_flag("--version", run::versionText("cgc-soc"));
  app.require_subcommand(1);

  AppOptions addApp, listApp;
  std::string sodb, psdb, plugin, family, key, driver;
  std::vector<std::string> models, psdbs;
  uint64_t abi = 0;
  bool noMetadata = false, requireHits = false;

  CLI::App *addCmd = app.add_subcommand("add", "add every MLIR program of compiled models to an "
                                               "SODB (created if missing), one state object "
                                               "each, keyed '<model stem>/<program>'");
  addCmd->add_option("sodb", sodb, "the state object database")->required();
  addCmd->add_option("models", models, "compiled models (.cgc)")->required();
  addApp.add(addCmd);

  CLI::App *compileCmd =
      app.add_subcommand("compile", "compile an SODB's state objects into a new PSDB");
  compileCmd->add_option("sodb", sodb, "the state object database")->required();
  compileCmd->add_option("output", psdb, "the precompiled database to create")->required();
  compileCmd->add_option("--plugin", plugin, "the compiler plugin (a shared library)")->required();
  compileCmd->add_option("--adapter-family", family, "its adapter family: a name or an index "
                                                     "(default: the first)");
  compileCmd->add_option("--abi", abi, "the ABI version (0, the default: the newest)");
  compileCmd->add_option("--key", key, "compile only the state object with this key");
  compileCmd->add_flag("--no-metadata", noMetadata, "store object code only");

  std::vector<unsigned> threadCounts = {1};
  CLI::App *prepareCmd = app.add_subcommand(
      "prepare", "prepare compiled models' constants offline, in the driver's layouts, beside "
                 "a PSDB (its plugin must prepare constants; the layouts are those of this "
                 "machine's instruction sets)");
  prepareCmd->add_option("psdb", psdb, "the precompiled database (from cgc-soc compile)")
      ->required();
  prepareCmd->add_option("models", models, "compiled models (.cgc)")->required();
  prepareCmd->add_option("--plugin", plugin, "the compiler plugin that compiled the PSDB")
      ->required();
  prepareCmd->add_option("--threads", threadCounts,
                         "the driver's worker threads to prepare for (layouts may depend on "
                         "them; default 1)")
      ->delimiter(',')
      ->check(CLI::Range(1u, 1024u));

  CLI::App *replayCmd = app.add_subcommand(
      "replay", "create every state object of an SODB on a device, with PSDBs registered");
  replayCmd->add_option("sodb", sodb, "the state object database")->required();
  replayCmd->add_option("--psdb", psdbs, "precompiled databases to register");
  replayCmd->add_option("--driver", driver, "the driver (name or path; default: cpu)");
  replayCmd->add_option("--key", key, "replay only the state object with this key");
  replayCmd->add_flag("--require-hits", requireHits,
                      "fail unless every program came from a precompiled database");

  CLI::App *listCmd = app.add_subcommand("list", "describe a plugin, an SODB or a PSDB");
  listCmd->add_option("--plugin", plugin, "a compiler plugin: its adapter families");
  listCmd->add_option("--sodb", sodb, "a state object database: its state objects");
  listCmd->add_option("--psdb", psdb, "a precompiled database: its target and groups");
  listApp.add(listCmd);

  CLI11_PARSE(app, argc, argv);
  try {
    if (addCmd->parsed())
      return add(sodb, models, addApp);
    if (compileCmd->parsed())
      return compile(sodb, psdb, plugin, family, abi, !noMetadata, key);
    if (prepareCmd->parsed())
      return prepare(psdb, models, plugin, threadCounts);
    if (replayCmd->parsed())
      return replay(sodb, psdbs, driver, key, requireHits);
    if (plugin.empty() && sodb.empty() && psdb.empty()) {
      std::fprintf(stderr, "cgc-soc: error: list needs --plugin, --sodb or --psdb\n");
      return 2;
    }
    return list(plugin, sodb, psdb, listApp);
  } catch (const std::exception &e) {
    std::fflush(stdout);
    std::fprintf(stderr, "cgc-soc: error: %s\n", e.what());
    return 1;
  }
}
