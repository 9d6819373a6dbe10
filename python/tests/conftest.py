"""Fixtures of the cgc package's tests: models written here with onnx and
numpy (expected outputs from numpy, an oracle independent of cgc)."""

import os
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("CGC_BUILD_DIR", os.path.join(ROOT, "build"))


@pytest.fixture(scope="session")
def mlp(tmp_path_factory):
    """The MLP of test/runtime/Inputs/make_mlp.py: (model path, x, y)."""
    out = tmp_path_factory.mktemp("mlp")
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "runtime", "Inputs", "make_mlp.py"),
                    str(out)], check=True)
    from onnx import numpy_helper, TensorProto

    def read(name):
        t = TensorProto()
        with open(os.path.join(out, "test_data_set_0", name), "rb") as f:
            t.ParseFromString(f.read())
        return numpy_helper.to_array(t)

    return str(out / "model.onnx"), read("input_0.pb"), read("output_0.pb")


def normwise(a, b):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def aligned(array, alignment=64):
    """A copy of `array` whose data starts at a multiple of `alignment`."""
    raw = np.empty(array.nbytes + alignment, np.uint8)
    start = (-raw.ctypes.data) % alignment
    view = raw[start:start + array.nbytes].view(array.dtype).reshape(array.shape)
    view[...] = array
    return view
