#!/usr/bin/python3
"""ONNX backend node tests through ONNX Runtime with cgc's plugin EP.

Runs every node test that cgc passes on its own (those not named in
test/onnx/expected-failures.txt) with

    cgc-ort-run model.onnx NAME=input_N.pb ... --ep cgc --output-dir DIR

and compares each output with test_data_set_0/output_N.pb (numpy.allclose,
ONNX's tolerances rtol=1e-3, atol=1e-7). A test PASSes when its outputs
match and cgc ran every node; it FALLS BACK when the outputs match but ONNX
Runtime ran some nodes itself (cgc could not compile them as a subgraph: an
input cgc needs at compile time, an op the subgraph lacks context for); it
FAILs when an output differs or the run fails, unless ONNX Runtime cannot run
the model without cgc either (the preview training ops: SKIP). The reasons
are summarized.

Exit status: 1 if a test FAILs or fewer than --min-ratio of the tests run
PASS (default 0.95, the EP's goal against cgc's own pass count).
"""

import argparse
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"
HERE = os.path.dirname(os.path.abspath(__file__))
XFAIL = os.path.join(HERE, "..", "..", "onnx", "expected-failures.txt")


def read_tensor(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t.name, numpy_helper.to_array(t)


def file_name(name):
    return re.sub(r"[^A-Za-z0-9._-]", "_", name) or "output"


def run_one(test_dir, args):
    import numpy as np
    import onnx

    name = os.path.basename(test_dir)
    data = os.path.join(test_dir, "test_data_set_0")
    model = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    # Sequence and optional values at the graph boundary: cgc-ort-run binds
    # and writes tensors only (inside a model, ONNX Runtime runs the
    # sequence ops and cgc the tensor nodes around them).
    boundary = [v.name for v in list(model.graph.input) + list(model.graph.output)
                if not v.type.HasField("tensor_type") and v.name not in initializers]
    if boundary:
        return name, "HARNESS", ("sequence or optional graph inputs/outputs (%s): cgc-ort-run "
                                 "binds tensors only" % ", ".join(boundary))
    inputs = [i.name for i in model.graph.input if i.name not in initializers]
    outputs = [o.name for o in model.graph.output]
    files = sorted((f for f in os.listdir(data) if re.fullmatch(r"input_\d+\.pb", f)),
                   key=lambda f: int(f[6:-3]))
    with tempfile.TemporaryDirectory() as out:
        cmd = [args.cgc_ort_run, os.path.join(test_dir, "model.onnx"), "--ep", "cgc",
               "--threads", "1", "--output-dir", out, "-q" if args.quiet_runs else "--ep-stats"]
        for position, f in enumerate(files):
            stored, _ = read_tensor(os.path.join(data, f))
            key = stored if stored in inputs else (inputs[position] if position < len(inputs)
                                                   else stored)
            cmd.append("%s=%s" % (key, os.path.join(data, f)))
        cmd += ["--log-level", "warning"]
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=args.timeout, text=True, errors="replace")
        except subprocess.TimeoutExpired:
            return name, "FAIL", "timeout"
        text = proc.stdout
        if proc.returncode != 0:
            lines = [l for l in text.splitlines() if "error" in l] or text.splitlines() or [""]
            reason = re.sub(r"/[^ :']*/", "", lines[-1])[:200]
            # A model ONNX Runtime cannot run without cgc either (the
            # preview training ops are not in its inference build) is not
            # the EP's failure.
            alone = [c for c in cmd if c not in ("--ep", "cgc", "--ep-stats")]
            try:
                cpu = subprocess.run(alone, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     timeout=args.timeout)
                if cpu.returncode != 0:
                    return name, "ORT", "ONNX Runtime alone fails too: " + reason
            except subprocess.TimeoutExpired:
                pass
            return name, "FAIL", "run: " + reason
        for index, oname in enumerate(outputs):
            expected_path = os.path.join(data, "output_%d.pb" % index)
            if not os.path.exists(expected_path):
                continue
            _, expected = read_tensor(expected_path)
            path = os.path.join(out, file_name(oname) + ".npy")
            if not os.path.exists(path):
                return name, "FAIL", "output '%s' was not written" % oname
            actual = np.load(path)
            if actual.shape != expected.shape:
                return name, "FAIL", "output '%s': shape %s, expected %s" % (
                    oname, actual.shape, expected.shape)
            if expected.dtype.kind in "fc":
                ok = np.allclose(actual.astype(np.float64), expected.astype(np.float64),
                                 rtol=args.rtol, atol=args.atol, equal_nan=True)
            else:
                ok = np.array_equal(actual.astype(expected.dtype), expected)
            if not ok:
                return name, "FAIL", "output '%s' differs" % oname
        elsewhere = re.findall(r"not on cgc: (\S+)", text)
        if elsewhere:
            why = re.findall(r"cgc leaves .*? to other execution providers: (.*)", text)
            reason = why[0] if why else "ONNX Runtime kept " + ", ".join(sorted(set(elsewhere)))
            reason = re.sub(r"\x1b\[[0-9;]*m", "", reason)
            reason = re.sub(r"/[^ :']*/", "", reason)
            return name, "FALLBACK", reason[:200]
        return name, "PASS", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgc-ort-run", default="cgc-ort-run")
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--xfail", default=XFAIL)
    parser.add_argument("--subset", help="a file naming the tests to run, one per line")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument("--min-ratio", type=float, default=0.95)
    parser.add_argument("--quiet-runs", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    xfail = set()
    with open(args.xfail) as f:
        for line in f:
            if line.strip() and not line.startswith("#"):
                xfail.add(line.split(":", 1)[0].strip())
    tests = sorted(d for d in os.listdir(args.data)
                   if os.path.isfile(os.path.join(args.data, d, "model.onnx")))
    if args.subset:
        with open(args.subset) as f:
            wanted = {l.strip() for l in f if l.strip() and not l.startswith("#")}
        tests = [t for t in tests if t in wanted]
    skipped = [t for t in tests if t in xfail]
    tests = [t for t in tests if t not in xfail]

    results = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_one, os.path.join(args.data, t), args) for t in tests]
        for fut in concurrent.futures.as_completed(futures):
            name, status, reason = fut.result()
            results.append((name, status, reason))
            if status != "PASS" and (args.verbose or status == "FAIL"):
                print("%s: %s: %s" % (status, name, reason), flush=True)

    counts = {s: sum(1 for r in results if r[1] == s)
              for s in ("PASS", "FALLBACK", "FAIL", "ORT", "HARNESS")}
    for name, status, reason in sorted(results):
        if status in ("ORT", "HARNESS"):
            print("SKIP: %s: %s" % (name, reason))
    results = [r for r in results if r[1] not in ("ORT", "HARNESS")]
    reasons = {}
    for name, status, reason in results:
        if status == "FALLBACK":
            key = re.sub(r"'[^']*'", "'…'", reason)[:120]
            reasons.setdefault(key, []).append(name)
    if reasons:
        print("Fell back to ONNX Runtime's CPU EP (outputs match):")
        for key, names in sorted(reasons.items(), key=lambda kv: -len(kv[1])):
            print("  %3d  %s  (%s%s)" % (len(names), key, ", ".join(sorted(names)[:4]),
                                          ", ..." if len(names) > 4 else ""))
    total = len(results)
    ratio = counts["PASS"] / total if total else 1.0
    print("%d of %d tests cgc passes on its own: %d passed through ONNX Runtime + cgc EP "
          "with every node on cgc (%.1f%%), %d fell back in part, %d failed; %d skipped "
          "(expected failures of cgc itself), %d that ONNX Runtime cannot run alone, %d with "
          "sequence or optional values at the graph boundary (cgc-ort-run binds tensors)"
          % (total, total, counts["PASS"], 100 * ratio, counts["FALLBACK"], counts["FAIL"],
             len(skipped), counts["ORT"], counts["HARNESS"]))
    if counts["FAIL"] or ratio < args.min_ratio:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
