"""numpy in and out on the model zoo matches cgc-run (run by
`ninja check-cgc-models`, which exports the models and sets CGC_MODELS;
skipped elsewhere: the models take minutes to export)."""

import importlib.util
import os
import subprocess

import numpy as np
import pytest

import cgc
from conftest import BUILD, ROOT

MODELS_DIR = os.environ.get("CGC_MODELS")
pytestmark = pytest.mark.skipif(not MODELS_DIR, reason="CGC_MODELS is not set "
                                "(ninja check-cgc-models sets it)")


def zoo():
    spec = importlib.util.spec_from_file_location(
        "run_zoo", os.path.join(ROOT, "test", "models", "run_zoo.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2", "efficientnet_b0", "bert_encoder"])
def test_zoo_model_matches_cgc_run(name, tmp_path):
    run_zoo = zoo()
    model = os.path.join(MODELS_DIR, name + ".onnx")
    assert os.path.exists(model), model
    inputs = run_zoo.make_inputs(name, str(tmp_path / "in"))
    shapes = {}
    for flag in run_zoo.MODELS[name]:
        key, dims = flag.split("=")
        shapes[key] = tuple(int(d) for d in dims.split("x"))
    subprocess.run([os.path.join(BUILD, "bin", "cgc-run"), model, *inputs, "--threads", "1",
                    "--output-dir", str(tmp_path / "out"), "-q"] +
                   sum([["--input-shape", f] for f in run_zoo.MODELS[name]], []), check=True)
    session = cgc.Session(model, threads=1, input_shapes=shapes)
    feeds = {p.split("=")[0]: np.load(p.split("=")[1]) for p in inputs}
    for output, value in session.run(feeds).items():
        expected = np.load(tmp_path / "out" / (output + ".npy"))
        np.testing.assert_array_equal(value, expected)
