"""Builds the cgc Python package from the project's own CMake build.

`pip install --no-build-isolation .` runs this: it builds the CMake target
`cgc_python` (the extension cgc._cgc and the runtime's libraries) in the
build directory ($CGC_BUILD_DIR, else ./build, configured the way ./dev.sh
configures it when it is not yet), then installs the CMake component
"python" into the package: cgc/_cgc*.so and cgc/lib/ (the runtime, the D3D12
layer, the CPU driver and its JIT, the compiler module). The Debian
packages the build needs are those ./dev.sh installs (scripts/packages.txt).
"""

import os
import shutil
import subprocess
import sys
import sysconfig

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def build_dir():
    return os.path.abspath(os.environ.get("CGC_BUILD_DIR", os.path.join(ROOT, "build")))


def run(cmd):
    print("cgc setup.py: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


class CMakeBuildPy(build_py):
    """build_py that also builds and installs the CMake component."""

    def run(self):
        super().run()
        build = build_dir()
        python = getattr(sys, "_base_executable", None) or sys.executable
        cache = os.path.join(build, "CMakeCache.txt")
        if os.path.exists(cache):
            # The extension is built for one interpreter: the build's must be
            # ABI-compatible with this one.
            soabi = sysconfig.get_config_var("SOABI")
            with open(cache) as f:
                configured = [l for l in f if l.startswith("_Python3_INTERPRETER_PROPERTIES")]
            if configured and soabi and soabi not in configured[0]:
                raise SystemExit("cgc setup.py: the build in %s is configured for another Python "
                                 "(%s); this is %s (%s). Set CGC_BUILD_DIR to a new folder."
                                 % (build, configured[0].strip(), sys.executable, soabi))
        if not os.path.exists(os.path.join(build, "build.ninja")):
            run(["cmake", "-G", "Ninja", "-S", ROOT, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
                 "-DPython3_EXECUTABLE=" + python,
                 "-DCMAKE_C_COMPILER=clang-22", "-DCMAKE_CXX_COMPILER=clang++-22",
                 "-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache",
                 "-DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld",
                 "-DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld",
                 "-DCMAKE_MODULE_LINKER_FLAGS=-fuse-ld=lld"])
        jobs = os.environ.get("JOBS", "2")
        run(["cmake", "--build", build, "--target", "cgc_python", "--", "-j", jobs])
        staging = os.path.join(os.path.abspath(self.build_lib), "_cgc_staging")
        shutil.rmtree(staging, ignore_errors=True)
        run(["cmake", "--install", build, "--component", "python", "--prefix", staging])
        package = os.path.join(self.build_lib, "cgc")
        for entry in os.listdir(os.path.join(staging, "cgc")):
            source = os.path.join(staging, "cgc", entry)
            target = os.path.join(package, entry)
            if os.path.isdir(source):
                shutil.rmtree(target, ignore_errors=True)
                shutil.copytree(source, target, symlinks=True)
            else:
                shutil.copy2(source, target)
        shutil.rmtree(staging)


class BinaryDistribution(Distribution):
    """The wheel holds native libraries: a platform wheel."""

    def has_ext_modules(self):
        return True


# setuptools' own staging stays out of the CMake build's lib/ and bin/.
setup(cmdclass={"build_py": CMakeBuildPy}, distclass=BinaryDistribution,
      options={"build": {"build_base": os.path.join(build_dir(), "python-setuptools")},
               "egg_info": {"egg_base": build_dir()}})
