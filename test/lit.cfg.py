# -*- Python -*-
# lit configuration of the cgc test suite. Mirrors the source tree:
# test/dialects/<dialect>/, test/compiler/<library>/, test/tools/<tool>/, and
# test/unit/ for the gtest unit tests.

import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "cgc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.cgc_obj_root, "test")

config.environment["FILECHECK_OPTS"] = "-enable-var-scope --allow-unused-prefixes=false"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.cgc_tools_dir, append_path=True)

config.substitutions.append(("%cgc_src_root", config.cgc_src_root))
config.substitutions.append(("%cgc_obj_root", config.cgc_obj_root))
config.substitutions.append(("%python", config.python_executable))

tools = [ToolSubst("cgc-opt", unresolved="fatal"),
         ToolSubst("cgc-compile", unresolved="fatal")]
llvm_config.add_tool_substitutions(tools, [config.cgc_tools_dir])

# A sanitizer build (scripts/sanitize.sh, scripts/tsan.sh): tests that limit
# the address space (ulimit -v) cannot run under ASan, which reserves
# terabytes of shadow memory; they say `UNSUPPORTED: asan`.
# An application linking a sanitized build's libraries links the sanitizer
# runtimes too (test/runtime/install-example.test).
sanitize = getattr(config, "cgc_sanitize", "")
config.substitutions.append(
    ("%cgc_sanitize_link", "-fsanitize=" + sanitize if sanitize else ""))
for sanitizer in getattr(config, "cgc_sanitize", "").split(","):
    if sanitizer == "address":
        config.available_features.add("asan")
    elif sanitizer:
        config.available_features.add(sanitizer)

# The Python package's extension is built (python/CMakeLists.txt).
if os.path.isdir(os.path.join(config.cgc_obj_root, "python", "cgc")):
    config.available_features.add("cgc-python")

# The SQLite shell, for the database tests (scripts/packages.txt installs it).
import shutil
if shutil.which("sqlite3"):
    config.available_features.add("sqlite3")

# PyTorch (python3-torch), for the tests whose models it exports by scripting.
import subprocess
if subprocess.run([config.python_executable, "-c", "import torch"],
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("torch")

# The fuzz targets are built (test/fuzz/CMakeLists.txt: clang with libFuzzer).
if os.path.exists(os.path.join(config.cgc_tools_dir, "cgc-fuzz-compiled-model")):
    config.available_features.add("cgc-fuzz")

# ONNX Runtime (scripts/setup_ort.sh) and cgc's plugin EP for it are built.
if os.path.exists(os.path.join(config.cgc_tools_dir, "cgc-ort-run")) and os.path.exists(
        os.path.join(config.cgc_obj_root, "lib", "libcgc_onnxruntime_ep.so")):
    config.available_features.add("ort-ep")
