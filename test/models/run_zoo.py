#!/usr/bin/python3
"""The model zoo through cgc, compared with ONNX Runtime.

For each model exported by scripts/export_models.py (ResNet-50, MobileNetV2,
EfficientNet-B0, a BERT-base-sized encoder, ViT-B/16; random weights, nothing
downloaded):

  1. fixed inputs are written as .npy (images: normal(0, 1); BERT: token ids
     in [0, 30522) and a mask with the last quarter padded);
  2. ONNX Runtime 1.30 runs the model (cgc-ort-run, its C API) and writes its
     outputs as .npy;
  3. cgc-run compiles the .onnx on the fly for the CPU driver's target
     (MLIR programs its JIT compiles at load, plus fallback kernel programs),
     runs it and writes its outputs, once per --threads count (default 1 and
     one per core: kernels choose their algorithm and split by the pool, e.g.
     Strassen for large products on one thread with strassen=1);
  4. the outputs are compared. An output matches when every element satisfies
     |cgc - ort| <= 1e-4 * |ort| + 1e-4 * max|ort| (relative error 1e-4, with an
     absolute floor of 1e-4 of the output's scale for elements near zero).
     Reported: the largest absolute error, the largest relative error over
     elements with |ort| >= 1e-3 * max|ort|, and the normwise relative error
     max|cgc - ort| / max|ort|.

Exit code 1 if a model fails to compile or run, or an output does not match.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# name: the --input-shape flags of its symbolic dimensions
MODELS = {
    "resnet50": ["input=1x3x224x224"],
    "mobilenet_v2": ["input=1x3x224x224"],
    "efficientnet_b0": ["input=1x3x224x224"],
    "bert_encoder": ["input_ids=1x128", "attention_mask=1x128"],
    "vit_b_16": ["input=1x3x224x224"],
}


def static_inputs(model_path):
    """name -> (shape, numpy dtype, bound) of a model's graph inputs (static
    shapes: the wider set of scripts/export_models.py --set wide). bound is
    the exclusive upper bound of an integer input's values (token ids: the
    vocabulary size), from the model's metadata cgc.input_high.NAME, else 2."""
    import onnx
    from onnx import mapping
    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    bounds = {p.key[len("cgc.input_high."):]: int(p.value) for p in model.metadata_props
              if p.key.startswith("cgc.input_high.")}
    inputs = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        inputs[value.name] = ([d.dim_value for d in tensor.shape.dim],
                              mapping.TENSOR_TYPE_TO_NP_TYPE[tensor.elem_type],
                              bounds.get(value.name, 2))
    return inputs


def random_input(rng, shape, dtype, bound):
    if np.issubdtype(dtype, np.integer):
        return rng.integers(0, bound, size=shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def make_inputs(name, directory, model_path=None):
    rng = np.random.default_rng(1234)
    os.makedirs(directory, exist_ok=True)
    if model_path is not None:
        arrays = {key: random_input(rng, shape, dtype, bound)
                  for key, (shape, dtype, bound) in static_inputs(model_path).items()}
    elif name == "bert_encoder":
        ids = rng.integers(0, 30522, size=(1, 128), dtype=np.int64)
        mask = np.ones((1, 128), dtype=np.int64)
        mask[:, 96:] = 0
        arrays = {"input_ids": ids, "attention_mask": mask}
    else:
        arrays = {"input": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}
    paths = []
    for key, value in arrays.items():
        path = os.path.join(directory, key + ".npy")
        np.save(path, value)
        paths.append("%s=%s" % (key, path))
    return paths


def compare(cgc, ort):
    cgc = cgc.astype(np.float64)
    ort = ort.astype(np.float64)
    scale = float(np.max(np.abs(ort))) if ort.size else 0.0
    diff = np.abs(cgc - ort)
    max_abs = float(diff.max()) if diff.size else 0.0
    significant = np.abs(ort) >= 1e-3 * scale
    rel = diff[significant] / np.abs(ort[significant]) if significant.any() else np.zeros(1)
    ok = bool(np.all(diff <= 1e-4 * np.abs(ort) + 1e-4 * scale)) and bool(np.all(np.isfinite(cgc)))
    return {
        "matches": ok,
        "max_abs_error": max_abs,
        "max_rel_error": float(rel.max()),
        "norm_rel_error": max_abs / scale if scale else max_abs,
        "scale": scale,
    }


def run(cmd, log):
    start = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          errors="replace")
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n" + proc.stdout)
    return proc.returncode, proc.stdout, time.time() - start


_PREPARED = set()  # models whose databases this run made


def prepare_databases(args, name, model, work):
    """cgc-compile --no-precompile, then cgc-soc add / compile / prepare (for
    every thread count of the run) into WORK/app.sodb, app.psdb (once per
    model). Returns (compiled model, sodb, psdb)."""
    bin_dir = os.path.dirname(os.path.abspath(args.cgc_run))
    compiled = os.path.join(work, "plain.cgc")
    sodb, psdb = os.path.join(work, "app.sodb"), os.path.join(work, "app.psdb")
    if name in _PREPARED:
        return compiled, sodb, psdb
    for f in (compiled, sodb, psdb, psdb + ".values"):
        if os.path.exists(f):
            os.remove(f)
    plugin = os.path.join(os.path.dirname(bin_dir), "lib", "libcgc_compiler_plugin_cpu.so")
    cmd = [os.path.join(bin_dir, "cgc-compile"), model, "--no-precompile", "-o", compiled]
    for shape in MODELS.get(name, []):
        cmd += ["--input-shape", shape]
    threads = ",".join(str(t if t else os.cpu_count()) for t in
                       sorted({int(t) for t in args.threads.split(",") if t != ""}))
    soc = os.path.join(bin_dir, "cgc-soc")
    for step in (cmd, [soc, "add", sodb, compiled],
                 [soc, "compile", sodb, psdb, "--plugin", plugin],
                 [soc, "prepare", psdb, compiled, "--plugin", plugin, "--threads", threads]):
        code, output, _ = run(step, os.path.join(work, "databases.log"))
        if code:
            raise RuntimeError("%s failed:\n%s" % (" ".join(step), output[-3000:]))
    _PREPARED.add(name)
    return compiled, sodb, psdb


def run_cgc(args, name, model, inputs, work, ort_out, threads, results):
    """cgc-run on `model` at `threads` and its outputs against ONNX Runtime's
    in `ort_out`; appends the entry to `results`. Returns 1 on a failure."""
    label = "%s (%s)" % (name, "threads: one per core" if threads == 0 else
                         "%d thread%s" % (threads, "" if threads == 1 else "s"))
    tag = ("ep-t%d" if args.through_ep else "cgc-t%d") % threads
    cgc_out = os.path.join(work, tag)
    report = os.path.join(work, tag + ".json")
    if args.through_ep:
        # ONNX Runtime with cgc's plugin EP running every node (symbolic
        # dimensions are bound by the EP from the inputs' shapes).
        label = "%s through ONNX Runtime + cgc EP" % label
        cmd = [args.ort_run, model] + inputs + ["--ep", "cgc", "--all-on-ep", "--ep-stats",
                                                 "--output-dir", cgc_out, "--report-json",
                                                 report, "--threads", str(threads)]
    elif args.psdb:
        # The model's programs and prepared constants from an SODB/PSDB pair
        # (prepare_databases): nothing compiled or transformed at load.
        label = "%s from a precompiled database" % label
        compiled, sodb, psdb = prepare_databases(args, name, model, work)
        cmd = [args.cgc_run, compiled] + inputs + ["--output-dir", cgc_out, "--report-json",
                                                    report, "--threads", str(threads),
                                                    "--sodb", sodb, "--psdb", psdb]
    else:
        cmd = [args.cgc_run, model] + inputs + ["--output-dir", cgc_out, "--report-json",
                                                 report, "--threads", str(threads)]
        for shape in MODELS.get(name, []):
            cmd += ["--input-shape", shape]
    if args.target and not args.through_ep:
        cmd += ["--target", args.target]
    code, output, _ = run(cmd, os.path.join(work, tag + ".log"))
    if code:
        print("FAIL %s: %s failed (exit %d):\n%s" % (label, os.path.basename(cmd[0]), code,
                                                 output[-3000:]))
        results.append({"model": name, "threads": threads, "status": "FAIL",
                        "error": output[-3000:]})
        return 1
    entry = {"model": name, "threads": threads, "status": "PASS", "outputs": {}}
    for f in sorted(os.listdir(ort_out)):
        expected = np.load(os.path.join(ort_out, f))
        got_path = os.path.join(cgc_out, f)
        if not os.path.exists(got_path):
            entry["status"] = "FAIL"
            entry["outputs"][f[:-4]] = {"matches": False, "error": "cgc wrote no " + f}
            continue
        got = np.load(got_path)
        if got.shape != expected.shape:
            entry["status"] = "FAIL"
            entry["outputs"][f[:-4]] = {"matches": False, "error": "shape %s, ONNX Runtime %s"
                                        % (got.shape, expected.shape)}
            continue
        c = compare(got, expected)
        entry["outputs"][f[:-4]] = c
        if not c["matches"]:
            entry["status"] = "FAIL"
    with open(report) as f:
        timing = json.load(f)
    if args.psdb and (timing.get("compiled_programs") or timing.get("prepared_blocks_computed")
                      or not timing.get("database_programs")):
        entry["status"] = "FAIL"
        entry["outputs"]["(database)"] = {
            "matches": False,
            "error": "%s programs compiled, %s prepared blocks transformed at load, %s from the "
                     "database: the precompiled database did not serve the model" % (
                         timing.get("compiled_programs"), timing.get("prepared_blocks_computed"),
                         timing.get("database_programs"))}
    entry["cgc_compile_ms"] = timing.get("compile_ms", 0)
    entry["cgc_load_ms"] = timing.get("load_ms")
    entry["cgc_run_ms"] = timing.get("min_ms")
    results.append(entry)
    for out, c in entry["outputs"].items():
        if "error" in c:
            print("%s %s/%s: %s" % (entry["status"], label, out, c["error"]))
        else:
            print("%s %s/%s: max abs error %.3g, max rel error %.3g, normwise rel error "
                  "%.3g (output scale %.3g)" % ("PASS" if c["matches"] else "FAIL", label, out,
                                                c["max_abs_error"], c["max_rel_error"],
                                                c["norm_rel_error"], c["scale"]), flush=True)
    print("     %s: cgc compile %.0f ms, load %.0f ms, run %.1f ms" % (
        label, entry["cgc_compile_ms"] or 0, entry["cgc_load_ms"] or 0,
        entry["cgc_run_ms"] or 0), flush=True)
    return int(entry["status"] != "PASS")


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgc-run", required=True)
    parser.add_argument("--ort-run", required=True)
    parser.add_argument("--models", default=os.path.join(ROOT, "build", "models"),
                        help="where scripts/export_models.py writes the models")
    parser.add_argument("--work", required=True, help="scratch directory")
    parser.add_argument("--only", nargs="*", choices=sorted(MODELS), default=sorted(MODELS))
    parser.add_argument("--report", help="write the results as JSON here")
    parser.add_argument("--wide", action="store_true",
                        help="also every model of MODELS/wide (scripts/export_models.py "
                             "--set wide: 29 more networks, static shapes)")
    parser.add_argument("--target", default="",
                        help="cgc-run --target values; by default none, so cgc-run compiles "
                             "for the patterns the device's driver declares through "
                             "MLIR_EXCHANGE (the CPU driver: MLIR programs its JIT "
                             "compiles); 'fallback' for the fallback target's kernel "
                             "programs alone, 'cpu' for the in-process target")
    parser.add_argument("--psdb", action="store_true",
                        help="run each model from an SODB/PSDB pair made by cgc-soc (add, "
                             "compile, prepare for the thread counts): a round trip through "
                             "the precompiled databases, which must serve every program and "
                             "prepared constant (docs/precompilation.md)")
    parser.add_argument("--through-ep", action="store_true",
                        help="run cgc through ONNX Runtime with cgc's plugin execution "
                             "provider (cgc-ort-run --ep cgc --all-on-ep) instead of cgc-run")
    parser.add_argument("--threads", default="1,0",
                        help="comma-separated cgc-run --threads counts to run each model at "
                             "(0: one per core)")
    args = parser.parse_args()
    thread_counts = [int(t) for t in args.threads.split(",") if t != ""]

    missing = [m for m in args.only if not os.path.exists(os.path.join(args.models, m + ".onnx"))]
    if missing:
        print("exporting %s with scripts/export_models.py" % ", ".join(missing), flush=True)
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "scripts", "export_models.py"),
                        "--out", args.models, "--only"] + missing, check=True)

    models = [(name, os.path.join(args.models, name + ".onnx"), False) for name in args.only]
    if args.wide:
        wide = os.path.join(args.models, "wide")
        models += [(f[:-5], os.path.join(wide, f), True)
                   for f in sorted(os.listdir(wide)) if f.endswith(".onnx")]
    results, failures = [], 0
    for name, model, static in models:
        work = os.path.join(args.work, name)
        inputs = make_inputs(name, os.path.join(work, "inputs"), model if static else None)
        ort_out = os.path.join(work, "ort")
        code, output, ort_s = run([args.ort_run, model] + inputs + ["--output-dir", ort_out],
                                  os.path.join(work, "ort.log"))
        if code:
            print("FAIL %s: ONNX Runtime failed:\n%s" % (name, output))
            failures += len(thread_counts)
            continue
        for threads in thread_counts:
            failures += run_cgc(args, name, model, inputs, work, ort_out, threads, results)

    if args.report:
        with open(args.report, "w") as f:
            json.dump(results, f, indent=1)
    runs = len(models) * len(thread_counts)
    print("%d passed, %d failed" % (runs - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
