"""cgc.compile, cgc.Session, cgc.InferenceSession and cgc.devices."""

import gc
import os
import re
import subprocess
import sys
import time

import numpy as np
import onnx
import onnx.numpy_helper
import pytest

import cgc
from conftest import BUILD, ROOT, aligned, normwise


def test_session_matches_numpy(mlp):
    path, x, y = mlp
    session = cgc.Session(path)
    out = session.run({"x": x})
    assert list(out) == ["y"]
    assert out["y"].dtype == np.float32 and out["y"].shape == (4, 8)
    assert normwise(out["y"], y) < 1e-6
    np.testing.assert_allclose(out["y"], y, rtol=1e-5, atol=1e-7)
    assert "target 'cpu'" in session.compiled.messages


def test_compile_from_path_bytes_and_modelproto_agree(mlp, tmp_path):
    path, x, y = mlp
    with open(path, "rb") as f:
        data = f.read()
    results = []
    for source in (path, data, onnx.load(path)):
        compiled = cgc.compile(source)
        assert [i.name for i in compiled.inputs] == ["x"]
        assert compiled.inputs[0].dtype == np.float32 and compiled.inputs[0].shape == (4, 16)
        assert compiled.outputs[0].shape == (4, 8)
        memory = compiled.memory
        assert memory["lower_bound"] <= memory["footprint"] <= memory["naive"]
        results.append(cgc.Session(compiled).run({"x": x})["y"])
    for r in results[1:]:
        np.testing.assert_array_equal(r, results[0])

    saved = tmp_path / "mlp.cgc"
    compiled.save(saved)
    loaded = cgc.load(saved)
    assert loaded.data == compiled.data
    np.testing.assert_array_equal(cgc.Session(str(saved)).run({"x": x})["y"], results[0])


def test_matches_cgc_run(mlp, tmp_path):
    path, x, _ = mlp
    np.save(tmp_path / "x.npy", x)
    subprocess.run([os.path.join(BUILD, "bin", "cgc-run"), path, "x=%s" % (tmp_path / "x.npy"),
                    "--output-dir", str(tmp_path / "out"), "-q"], check=True)
    expected = np.load(tmp_path / "out" / "y.npy")
    np.testing.assert_array_equal(cgc.Session(path).run({"x": x})["y"], expected)


def test_targets_skip_the_device(mlp):
    path, x, y = mlp
    compiled = cgc.compile(path, targets=["fallback"])
    assert "compiling for" not in compiled.messages
    assert "fallback: 7 subgraphs" in compiled.messages
    assert normwise(cgc.Session(compiled).run({"x": x})["y"], y) < 1e-6


def test_inference_session_is_ort_shaped(mlp):
    path, x, y = mlp
    sess = cgc.InferenceSession(path, providers=["CPUExecutionProvider"])
    (inp,) = sess.get_inputs()
    assert (inp.name, inp.shape, inp.type) == ("x", [4, 16], "tensor(float)")
    assert sess.get_outputs()[0].name == "y"
    (out,) = sess.run(None, {"x": x})
    assert normwise(out, y) < 1e-6
    (out2,) = sess.run(["y"], {"x": x})
    np.testing.assert_array_equal(out, out2)


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "bin", "cgc-ort-run")),
                    reason="ONNX Runtime is not installed (scripts/setup_ort.sh)")
def test_inference_session_matches_onnx_runtime(mlp, tmp_path):
    path, x, _ = mlp
    np.save(tmp_path / "x.npy", x)
    subprocess.run([os.path.join(BUILD, "bin", "cgc-ort-run"), path,
                    "x=%s" % (tmp_path / "x.npy"), "--output-dir", str(tmp_path / "ort")],
                   check=True, stdout=subprocess.DEVNULL)
    ort = np.load(tmp_path / "ort" / "y.npy")
    (out,) = cgc.InferenceSession(path).run(None, {"x": x})
    assert normwise(out, ort) < 1e-6


def test_aligned_inputs_are_not_copied(mlp):
    path, x, y = mlp
    session = cgc.Session(path)
    session.run({"x": aligned(x)})
    assert session.stats()["bytes_copied"] == 0
    out = session.run({"x": aligned(x)})["y"]
    assert out.ctypes.data % 64 == 0 and out.flags.c_contiguous and out.flags.writeable
    assert session.stats()["bytes_copied"] == 0
    assert normwise(out, y) < 1e-6


def test_bad_inputs_raise_clear_errors(mlp):
    path, x, _ = mlp
    session = cgc.Session(path)
    with pytest.raises(TypeError, match="input 'x' is float64; the model expects float32"):
        session.run({"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match=r"input 'x' has shape \(2, 16\)"):
        session.run({"x": x[:2]})
    with pytest.raises(KeyError, match="unknown input 'z'"):
        session.run({"x": x, "z": x})
    with pytest.raises(KeyError, match="missing input 'x'"):
        session.run({})
    with pytest.raises(KeyError, match="unknown output 'w'"):
        session.run({"x": x}, outputs=["w"])
    session.close()
    with pytest.raises(ValueError, match="the session is closed"):
        session.run({"x": x})


def test_bad_models_raise_cgc_errors(tmp_path):
    with pytest.raises(cgc.Error) as info:
        cgc.compile(b"\x0f\x0f\x0f not onnx")
    assert info.value.code == "INVALID_ARGUMENT"
    assert "not a valid ONNX model" in info.value.message
    with pytest.raises(FileNotFoundError):
        cgc.compile(tmp_path / "missing.onnx")
    bad = tmp_path / "bad.cgc"
    bad.write_bytes(b"DXBC" + b"\0" * 40)
    with pytest.raises(ValueError, match="not a valid compiled model"):
        cgc.load(bad)
    with pytest.raises(TypeError, match="model must be a path, bytes or an onnx.ModelProto"):
        cgc.compile(42)
    with pytest.raises(cgc.Error, match="cannot use the D3D12 driver"):
        cgc.Session(b"", device="/nonexistent/libcgc_driver_x.so")


def test_lifetimes(mlp):
    path, x, y = mlp
    compiled = cgc.compile(path)
    session = cgc.Session(compiled)
    del compiled
    gc.collect()
    out = session.run({"x": x})["y"]  # the session outlives the CompiledModel object
    session.close()
    del session
    gc.collect()
    assert normwise(out, y) < 1e-6  # arrays outlive the session


def test_devices_report_the_cpu_driver():
    found = {os.path.basename(d.driver): d for d in cgc.devices()}
    ref = found["libcgc_driver_cpu.so"]
    assert ref.mlir_tier == "2.0" and ref.target == "cpu"
    assert "anchorEpilogue" in ref.patterns and ref.unavailable == ""


GEMM = os.path.join(BUILD, "examples", "gemm-driver", "libcgc_driver_gemm.so")


@pytest.mark.skipif(not os.path.exists(GEMM), reason="the example driver is not built")
def test_a_third_party_driver(mlp):
    path, x, y = mlp
    session = cgc.Session(path, device=GEMM)
    assert "target 'gemm'" in session.compiled.messages
    assert normwise(session.run({"x": x})["y"], y) < 1e-6


def test_module_cli(mlp, tmp_path):
    path, x, _ = mlp
    env = dict(os.environ)
    run = lambda *a: subprocess.run([sys.executable, "-m", "cgc", *a], env=env,
                                    capture_output=True, text=True)
    r = run("devices")
    assert r.returncode == 0 and "target cpu" in r.stdout
    r = run("compile", path, "-o", str(tmp_path / "m.cgc"))
    assert r.returncode == 0 and "targets claimed" in r.stderr
    np.save(tmp_path / "x.npy", x)
    r = run("run", str(tmp_path / "m.cgc"), "x=%s" % (tmp_path / "x.npy"), "--output-dir",
            str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    np.testing.assert_array_equal(np.load(tmp_path / "out" / "y.npy"),
                                  cgc.Session(path).run({"x": x})["y"])
    r = run("run", str(tmp_path / "missing.onnx"))
    assert r.returncode == 1 and "no such file" in r.stderr


def test_dlpack_round_trip_with_torch_without_copies(mlp):
    torch = pytest.importorskip("torch")
    path, x, y = mlp
    t = torch.from_numpy(aligned(x))
    view = cgc.from_dlpack(t)
    assert view.ctypes.data == t.data_ptr()  # no copy in
    session = cgc.Session(path)
    out = session.run({"x": t})["y"]
    assert session.stats()["bytes_copied"] == 0
    back = torch.from_dlpack(out)
    assert back.data_ptr() == out.ctypes.data  # no copy out
    assert normwise(back.numpy(), y) < 1e-6


def test_imported_memory_and_semaphores(mlp):
    """A buffer and a timeline semaphore shared as file descriptors: the run
    waits for the producer's value, reads and writes the shared memory in
    place, then signals."""
    path, x, y = mlp
    fd = os.memfd_create("cgc-test")
    os.ftruncate(fd, 4096)
    fence_fd = cgc.create_shared_semaphore(0)
    try:
        memory = cgc.import_memory(fd, 4096)
        semaphore = cgc.import_semaphore(fence_fd)
        session = cgc.Session(path)
        session.bind("x", memory, offset=0)
        session.bind("y", memory, offset=1024)
        session.wait_for(semaphore, 1)
        session.submit()
        session.signal(semaphore, 2)
        # The producer writes the input through its own mapping of the file.
        shared = np.memmap("/proc/self/fd/%d" % fd, dtype=np.uint8, mode="r+", shape=(4096,))
        shared[:x.nbytes] = np.frombuffer(x.tobytes(), np.uint8)
        assert semaphore.value == 0
        assert not shared[1024:1024 + y.nbytes].any()  # the run waits for the value 1
        # The producer signals on a stream of its own (another session: no
        # work is queued before the signal there).
        producer = cgc.Session(path)
        producer.signal(cgc.import_semaphore(fence_fd), 1)
        session.wait()
        # The signal is queued after the run: it follows the run's end, not
        # the wait's return.
        deadline = time.monotonic() + 5
        while semaphore.value != 2 and time.monotonic() < deadline:
            time.sleep(0.001)
        assert semaphore.value == 2
        out = memory.array(np.float32, (4, 8), offset=1024)
        assert normwise(out, y) < 1e-6
        assert session.stats()["bytes_copied"] == 0
        np.testing.assert_array_equal(
            np.frombuffer(bytes(shared[1024:1024 + y.nbytes]), np.float32).reshape(4, 8), out)
        with pytest.raises(KeyError, match="no input or output 'z'"):
            session.bind("z", memory)
        with pytest.raises(cgc.Error, match="OUT_OF_RANGE"):
            session.bind("y", memory, offset=4090)
    finally:
        os.close(fd)
        os.close(fence_fd)


def _resize_conv_model():
    """Resize (linear, x2) then a 32->32 3x3 convolution: two ops whose
    kernels the CPU driver's configuration chooses (separable resize,
    Winograd)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(7)
    inits = [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales"),
             numpy_helper.from_array((rng.standard_normal((32, 32, 3, 3)) * 0.1)
                                     .astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal(32).astype(np.float32), "b")]
    nodes = [helper.make_node("Resize", ["x", "", "scales"], ["r"], mode="linear"),
             helper.make_node("Conv", ["r", "w", "b"], ["y"], pads=[1, 1, 1, 1])]
    graph = helper.make_graph(
        nodes, "resize_conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32, 16, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 32, 32, 32])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])


def test_driver_options_choose_the_kernels(tmp_path):
    """Two devices of one process with two configurations: different kernels
    for the same model (the profiles name them), the same outputs."""
    model = _resize_conv_model()
    x = np.random.default_rng(3).standard_normal((1, 32, 16, 16)).astype(np.float32)
    fast, plain = tmp_path / "fast.txt", tmp_path / "plain.txt"
    a = cgc.Session(model, driver_options="profile=%s" % fast)
    b = cgc.Session(model, driver_options="profile=%s,separable-resize=0,winograd=0,"
                                          "winograd-gemm=0" % plain)
    ya, yb = a.run({"x": x})["y"], b.run({"x": x})["y"]
    assert normwise(ya, yb) < 1e-5
    assert np.abs(ya).max() > 1.0  # outputs of a real scale
    del a, b
    gc.collect()
    fast_text, plain_text = fast.read_text(), plain.read_text()
    assert "configuration: profile=" in fast_text
    assert "configuration: winograd=0,winograd-gemm=0,separable-resize=0,profile=" in plain_text
    # Each step's line names its kernel, then the implementations the
    # selection passed over and why: the configuration's is among them.
    assert "packed-GEMM Winograd: off (winograd-gemm=0)" in plain_text
    fast_text, plain_text = (re.sub(r" \(passed over [^\n]*\)", "", t)
                             for t in (fast_text, plain_text))
    assert "separable taps" in fast_text and "separable taps" not in plain_text
    assert "Winograd" in fast_text and "Winograd" not in plain_text


def test_bad_driver_options_are_clear_errors():
    with pytest.raises(cgc.Error, match="unknown setting 'winogrd'"):
        cgc.Session(_resize_conv_model(), driver_options="winogrd=0")
    with pytest.raises(TypeError, match="driver_options must be a string"):
        cgc.Session(_resize_conv_model(), driver_options=1)


def test_symbolic_dimensions_compile_per_shape(tmp_path):
    """A model with symbolic dimensions runs without input_shapes: each new
    set of input shapes is compiled on first use and kept (bounded)."""
    script = os.path.join(ROOT, "test", "runtime", "Inputs", "make_symbolic.py")
    subprocess.run([sys.executable, script, str(tmp_path)], check=True)
    model = str(tmp_path / "model.onnx")
    x, m = np.load(tmp_path / "x.npy"), np.load(tmp_path / "m.npy")
    session = cgc.Session(model, shape_cache=2)
    assert session.compiled is None
    assert [i.shape for i in session.inputs] == [(None, 16), (None, None)]
    out = session.run({"x": x, "m": m})
    assert normwise(out["y"], np.load(tmp_path / "y.npy")) < 1e-6
    assert normwise(out["s"], np.load(tmp_path / "s.npy")) < 1e-6
    w = onnx.numpy_helper.to_array(onnx.load(model).graph.initializer[0])
    for batch, seq in ((1, 7), (5, 2), (3, 5), (1, 7)):
        xb = np.random.default_rng(batch).standard_normal((batch, 16)).astype(np.float32)
        mb = np.random.default_rng(seq).standard_normal((batch, seq)).astype(np.float32)
        out = session.run({"x": xb, "m": mb})
        assert out["y"].shape == (batch, 8) and out["s"].shape == (batch,)
        assert normwise(out["y"], np.maximum(xb.astype(np.float64) @ w, 0)) < 1e-6
        assert normwise(out["s"], mb.astype(np.float64).sum(axis=1)) < 1e-6
    assert len(session._per_shape) == 2  # the bound: the two most recent shapes
    with pytest.raises(ValueError, match="the model declares \\(None, 16\\)"):
        session.run({"x": np.zeros((2, 15), np.float32), "m": m})
    with pytest.raises(cgc.Error, match="symbolic dimensions: pass input_shapes"):
        session.stats()
    session.close()
    with pytest.raises(ValueError, match="closed"):
        session.run({"x": x, "m": m})
    # With input_shapes the model is compiled at once for them.
    fixed = cgc.Session(model, input_shapes={"x": (3, 16), "m": (3, 5)})
    assert fixed.compiled is not None


def test_data_dependent_rows_come_back_at_each_runs_size(tmp_path):
    # A detector head ending in NonMaxSuppression (test/runtime/Inputs/make_nms.py):
    # one compiled model, three inputs selecting different numbers of boxes,
    # each result exactly numpy's NMS.
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "runtime", "Inputs", "make_nms.py"),
                    str(tmp_path)], check=True, stdout=subprocess.DEVNULL)
    session = cgc.Session(str(tmp_path / "nms.onnx"))
    sizes = []
    for k in range(3):
        feeds = {name: np.load(tmp_path / ("%s_%d.npy" % (name, k)))
                 for name in ("boxes", "logits", "iou")}
        selected = session.run(feeds)["selected"]
        want = np.load(tmp_path / ("selected_%d.npy" % k))
        assert selected.shape == want.shape
        np.testing.assert_array_equal(selected, want)
        sizes.append(len(selected))
    assert sizes == [13, 24, 27]


def test_a_loop_steered_at_run_time_returns_each_runs_iterations(tmp_path):
    # test/runtime/Inputs/make_runtime_loop.py: an ONNX Loop whose trip count
    # is an input and whose scan output holds every state; the reference is
    # numpy. One compiled model per session, any number of iterations up to
    # max_loop_iterations; past it the run fails naming the Loop.
    pytest.importorskip("torch")
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "runtime", "Inputs",
                                                 "make_runtime_loop.py"), str(tmp_path)],
                   check=True, stdout=subprocess.DEVNULL)
    session = cgc.Session(str(tmp_path / "states.onnx"), max_loop_iterations=9)
    rows = []
    for k in range(3):
        folder = tmp_path / ("states_in%d" % k)
        feeds = {name: np.load(folder / (name + ".npy")) for name in ("x", "steps", "h0")}
        out = session.run(feeds)
        for name in ("h", "states"):
            want = np.load(tmp_path / ("states_out%d" % k) / (name + ".npy"))
            assert out[name].shape == want.shape
            assert normwise(out[name], want) < 1e-5
        rows.append(len(out["states"]))
    assert rows == [1, 4, 9]
    feeds["steps"] = np.array(10, np.int64)
    with pytest.raises(cgc.Error, match="needs more than 9 iterations on this run"):
        session.run(feeds)
    # The failed run lost its device; a new session gets a new one (default
    # bound 64).
    out = cgc.Session(str(tmp_path / "states.onnx")).run(feeds)
    assert len(out["states"]) == 10


def _sequence_file(path):
    sequence = onnx.SequenceProto()
    with open(path, "rb") as f:
        sequence.ParseFromString(f.read())
    return [onnx.numpy_helper.to_array(t) for t in sequence.tensor_values]


def test_sequences_and_optionals_as_lists_and_none(tmp_path):
    """Sequence inputs and outputs are lists of arrays, an optional holding
    nothing is None; the session compiles per sequence length and presence
    (test/compiler/Import/Inputs/make_sequences.py, numpy's results)."""
    script = os.path.join(ROOT, "test", "compiler", "Import", "Inputs", "make_sequences.py")
    subprocess.run([sys.executable, script, str(tmp_path)], check=True)
    session = cgc.Session(str(tmp_path / "sequence_ops.onnx"))
    seq = _sequence_file(tmp_path / "sequence_ops_seq.pb")
    t = np.load(tmp_path / "sequence_ops_t.npy")
    out = session.run({"seq": seq, "t": t})
    mapped = _sequence_file(tmp_path / "sequence_ops_mapped.pb")
    assert isinstance(out["mapped"], list) and len(out["mapped"]) == len(mapped) == 3
    for got, want in zip(out["mapped"], mapped):
        assert got.shape == want.shape and normwise(got, want) < 1e-6
    assert [s.shape for s in out["sums"]] == [(1,)] * 3
    assert int(out["length"]) == 3
    assert normwise(out["stacked"], np.load(tmp_path / "sequence_ops_stacked.npy")) < 1e-6
    # A tensor fewer: another compiled model (its own lengths), the same ops;
    # t is inserted before the last and the first erased: [t, seq[1]].
    out = session.run({"seq": seq[:2], "t": t}, outputs=["mapped", "length"])
    assert set(out) == {"mapped", "length"} and int(out["length"]) == 2
    assert normwise(out["mapped"][0], np.maximum(t, 0) * 1.5) < 1e-6
    assert normwise(out["mapped"][1], np.maximum(seq[1], 0) * 1.5) < 1e-6
    assert len(session._per_shape) == 2
    with pytest.raises(TypeError, match="input 'seq' is a sequence: pass a list of arrays"):
        session.run({"seq": t, "t": t})

    optionals = cgc.Session(str(tmp_path / "optionals.onnx"))
    x = np.random.default_rng(1).standard_normal((2, 3)).astype(np.float32)
    parts = [np.full((1, 3), float(i), np.float32) for i in range(3)]
    out = optionals.run({"opt": x, "optseq": parts})
    assert bool(out["has"]) and normwise(out["plus"], x + 1) < 1e-6
    assert normwise(out["joined"], np.concatenate(parts)) < 1e-6
    empty = cgc.Session(str(tmp_path / "optional_empty.onnx"))
    assert not bool(empty.run({"opt": None})["has"])
