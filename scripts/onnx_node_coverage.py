#!/usr/bin/python3
"""Imports every ONNX backend node test with cgc-compile and reports coverage.

For each test directory (model.onnx, test_data_set_0/input_N.pb and
output_N.pb) the script runs

    cgc-compile model.onnx --emit=input-ir

and counts the test as imported and verified when the import succeeds (the
importer verifies the module), cgc-opt parses and verifies the printed IR
again, and the entry point's results have the element types and shapes of
the expected outputs in test_data_set_0.

Inputs that determine shapes (Reshape's `shape`, Slice's `starts`, ...) are
graph inputs in many node tests. When the importer asks for one to be known at
compile time ("... bind it with --freeze-input NAME=FILE.pb"), the script
binds it to the test's own input tensor and imports again, as a user would.

Usage:
    scripts/onnx_node_coverage.py [--build build] [--data DIR] [--jobs N]
                                  [--filter REGEX] [--list-failures]
Prints the number of tests that import and verify, the unsupported ops
ranked by how many tests they block, and the other failures grouped by
message. Exits 0 (a coverage report, not a test), or 1 if nothing ran.
"""

import argparse
import collections
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"

FREEZE_RE = re.compile(r"--freeze-input (\S+)=FILE\.pb")
UNSUPPORTED_RE = re.compile(r"that cgc cannot import \(\d+ nodes?\): (.*)$")
TYPE_RE = re.compile(r"!cgc\.tensor<((?:\d+x)*)!cgc\.(\w+)>")

ONNX_DTYPES = {
    1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
    7: "int64", 8: "string", 9: "bool", 10: "float16", 11: "float64",
    12: "uint32", 13: "uint64", 14: "complex64", 15: "complex128",
    16: "bfloat16",
}


def read_tensor_header(path):
    """(dtype name, dims) of a serialized TensorProto, read with onnx."""
    import onnx  # Debian's python3-onnx

    tensor = onnx.TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return ONNX_DTYPES.get(tensor.data_type, str(tensor.data_type)), list(tensor.dims)


def graph_inputs(model_path):
    """Names of the model's graph inputs that are not initializers, in order."""
    import onnx

    model = onnx.load(model_path, load_external_data=False)
    initializers = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def result_types(ir_text):
    """[(dtype, dims)] of the entry point's results, from the printed IR."""
    for line in ir_text.splitlines():
        if "cgc.entry_point @main" not in line:
            continue
        _, _, results = line.partition(") -> ")
        types = []
        for dims, dtype in TYPE_RE.findall(results):
            types.append((dtype, [int(d) for d in dims.split("x") if d]))
        return types
    return None


def first_error(stderr):
    for line in stderr.splitlines():
        if ": error: " in line:
            return line.split(": error: ", 1)[1].strip()
    lines = [l for l in stderr.splitlines() if l.strip()]
    return lines[0].strip() if lines else "no error message"


def normalize(message):
    """Groups similar messages: quoted names and numbers become placeholders."""
    message = re.sub(r"'[^']*'", "'…'", message)
    message = re.sub(r"\d+", "N", message)
    return message[:160]


def run_test(test_dir, build):
    name = os.path.basename(test_dir)
    model = os.path.join(test_dir, "model.onnx")
    data = os.path.join(test_dir, "test_data_set_0")
    compile_bin = os.path.join(build, "bin", "cgc-compile")
    opt_bin = os.path.join(build, "bin", "cgc-opt")
    frozen = {}
    try:
        inputs = graph_inputs(model)
    except Exception as e:  # noqa: BLE001 - a broken test model
        return name, False, "python onnx cannot load the model: %s" % e, None, frozen
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.mlir")
        for _ in range(len(inputs) + 1):
            cmd = [compile_bin, model, "--emit=input-ir", "-o", out]
            for key, path in frozen.items():
                cmd.append("--freeze-input=%s=%s" % (key, path))
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode == 0:
                break
            wanted = [n for n in FREEZE_RE.findall(proc.stderr) if n not in frozen]
            if not wanted:
                break
            for key in wanted:
                if key not in inputs:
                    break
                frozen[key] = os.path.join(data, "input_%d.pb" % inputs.index(key))
        if proc.returncode != 0:
            if proc.returncode < 0 or "Assertion" in proc.stderr or "Stack dump" in proc.stderr:
                return name, False, "CRASH: " + first_error(proc.stderr), None, frozen
            unsupported = UNSUPPORTED_RE.search(proc.stderr)
            ops = None
            if unsupported:
                ops = [part.split(" (")[0] for part in unsupported.group(1).split("; ")]
            return name, False, first_error(proc.stderr), ops, frozen
        opt = subprocess.run([opt_bin, out, "-o", os.devnull], capture_output=True, text=True)
        if opt.returncode != 0:
            return name, False, "cgc-opt rejects the printed IR: " + first_error(opt.stderr), None, frozen
        with open(out) as f:
            results = result_types(f.read())
    expected = []
    index = 0
    while os.path.exists(os.path.join(data, "output_%d.pb" % index)):
        expected.append(read_tensor_header(os.path.join(data, "output_%d.pb" % index)))
        index += 1
    if results is None or len(results) != len(expected):
        return name, False, "the entry point has %s results, the test expects %d" % (
            "no" if results is None else len(results), len(expected)), None, frozen
    for i, (got, want) in enumerate(zip(results, expected)):
        # ONNX 1.12's test data stores bfloat16 outputs as uint16 tensors.
        same_type = got[0] == want[0] or (got[0], want[0]) == ("bfloat16", "uint16")
        if not same_type or list(got[1]) != list(want[1]):
            return name, False, "output %d is %s%s, the test expects %s%s" % (
                i, got[0], got[1], want[0], want[1]), None, frozen
    return name, True, "", None, frozen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"),
                        help="build directory holding bin/cgc-compile and bin/cgc-opt")
    parser.add_argument("--data", default=DEFAULT_DATA, help="directory of node tests")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--filter", default="", help="only tests whose name matches")
    parser.add_argument("--list-failures", action="store_true",
                        help="print every failing test with its message")
    args = parser.parse_args()

    tests = sorted(
        os.path.join(args.data, d) for d in os.listdir(args.data)
        if os.path.exists(os.path.join(args.data, d, "model.onnx"))
        and re.search(args.filter, d))
    if not tests:
        print("no node tests found under %s" % args.data, file=sys.stderr)
        return 1
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        outcomes = list(pool.map(lambda t: run_test(t, args.build), tests))

    passed = [o for o in outcomes if o[1]]
    failed = [o for o in outcomes if not o[1]]
    frozen_count = sum(1 for o in passed if o[4])
    blocked = collections.Counter()
    examples = collections.defaultdict(list)
    other = collections.Counter()
    other_examples = collections.defaultdict(list)
    for name, _, message, ops, _ in failed:
        if ops:
            for op in ops:
                blocked[op] += 1
                examples[op].append(name)
        else:
            key = normalize(message)
            other[key] += 1
            other_examples[key].append(name)

    total = len(outcomes)
    print("ONNX node tests: %d of %d import and verify (%.1f%%); %d of them "
          "with --freeze-input" % (len(passed), total, 100.0 * len(passed) / total,
                                   frozen_count))
    if blocked:
        print("\nUnsupported ops, by tests blocked:")
        for op, count in blocked.most_common():
            print("  %4d  %-28s e.g. %s" % (count, op, examples[op][0]))
    if other:
        print("\nOther failures, by message:")
        for message, count in other.most_common():
            print("  %4d  %s\n        e.g. %s" % (count, message, other_examples[message][0]))
    if args.list_failures:
        print("\nFailures:")
        for name, _, message, _, _ in failed:
            print("  %s: %s" % (name, message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
