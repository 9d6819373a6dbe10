#!/usr/bin/python3
"""ONNX backend node tests through cgc: compile, run, compare.

Every test directory (model.onnx + test_data_set_0/{input_N.pb,output_N.pb})
is run with `cgc-run model.onnx NAME=input_N.pb ... --expected-dir
test_data_set_0`: the compiler imports and lowers the model, the runtime
loads and runs it on the CPU driver, and every output is compared with
the expected one (numpy.allclose semantics, ONNX's backend-test tolerances
rtol=1e-3, atol=1e-7 unless --rtol/--atol). When the importer says an input
must be known at compile time ("--freeze-input NAME=FILE.pb"), the test is
run again with that input frozen from test_data_set_0.

expected-failures.txt names each test expected to fail and why:
    test_name: stage: reason
The run fails if a test outside that list fails; tests on the list that pass
are reported (XPASS) so the list can shrink. --update-xfail rewrites the list
from this run's failures.

Prints one line per unexpected result, a summary by failure reason, and
"N passed, N failed, N skipped" (expected failures count as skipped).
"""

import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import time

DEFAULT_DATA = "/usr/share/libonnx-testdata/data/node"


def graph_inputs(model_path):
    """Names of the graph inputs that are not initializers, in order."""
    import onnx  # Debian's python3-onnx

    model = onnx.load(model_path, load_external_data=False)
    initializers = {i.name for i in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


def tensor_name(pb_path):
    import onnx

    t = onnx.TensorProto()
    with open(pb_path, "rb") as f:
        try:
            t.ParseFromString(f.read())
        except Exception:
            return ""
    return t.name


def classify(output):
    """(stage, reason) from cgc-run's stderr."""
    text = output.strip()
    if not text:
        return "run", "no output"
    lines = [l for l in text.splitlines() if l.strip()]
    for l in lines:
        if l.startswith("MISMATCH"):
            m = re.search(r"max abs error ([^,]+), max rel error ([^ ]+)", l)
            detail = "got " + l.split(": ", 1)[1] if ": " in l else l
            if m:
                detail = "outputs differ (max abs error %s, max rel error %s)" % (
                    m.group(1), m.group(2))
            return "compare", detail
    first = lines[0]
    stage = "run"
    if "import failed" in text:
        stage = "import"
    elif "lowering failed" in text:
        stage = "lower"
    elif "packaging failed" in text:
        stage = "package"
    elif "CreateStateObject" in text or "CreateComputePipelineState" in text:
        stage = "load"
    elif "not a valid" in text or "expected" in first and "got" in first:
        stage = "data"
    # The most specific message: the first diagnostic ("error: ...").
    reason = first
    for l in lines:
        if "error:" in l:
            reason = l.split("error:", 1)[1].strip()
            if reason and not reason.endswith("failed:") and not reason.endswith("failed"):
                break
    reason = re.sub(r"/[^ :']*/", "", reason)  # no paths
    reason = re.sub(r"\s+", " ", reason)
    return stage, reason[:240]


def run_one(test_dir, args):
    name = os.path.basename(test_dir)
    model = os.path.join(test_dir, "model.onnx")
    data = os.path.join(test_dir, "test_data_set_0")
    start = time.time()
    try:
        names = graph_inputs(model)
    except Exception as e:  # an unreadable model
        return name, "FAIL", "import", "onnx cannot load the model: %s" % e, 0.0
    files = sorted(
        (f for f in os.listdir(data) if re.fullmatch(r"input_\d+\.pb", f)),
        key=lambda f: int(f[6:-3]),
    )
    by_name = {}
    for position, f in enumerate(files):
        path = os.path.join(data, f)
        stored = tensor_name(path)
        key = stored if stored in names else (names[position] if position < len(names) else stored)
        by_name[key] = path
    frozen = []
    output = ""
    for attempt in range(len(by_name) + 1):
        cmd = [args.cgc_run, model, "-q", "--expected-dir", data,
               "--rtol", str(args.rtol), "--atol", str(args.atol),
               # ONNX's tolerances exactly: no floor relative to the
               # output's scale on top of its fixed atol.
               "--stol", "0",
               "--threads", "1", "--compile-threads", "1"]
        if args.target:
            cmd += ["--target", args.target]
        if args.driver:
            cmd += ["--driver", args.driver]
        for n, path in by_name.items():
            if n in frozen:
                cmd += ["--freeze-input", "%s=%s" % (n, path)]
            else:
                cmd.append("%s=%s" % (n, path))
        try:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=args.timeout, text=True, errors="replace")
        except subprocess.TimeoutExpired:
            return name, "FAIL", "timeout", "more than %d s" % args.timeout, time.time() - start
        output = proc.stdout
        if proc.returncode == 0:
            return name, "PASS", "", "", time.time() - start
        if proc.returncode < 0:
            return name, "FAIL", "crash", "cgc-run died with signal %d" % -proc.returncode, \
                time.time() - start
        wanted = [n for n in re.findall(r"--freeze-input ([^= ]+)=FILE\.pb", output)
                  if n in by_name and n not in frozen]
        if not wanted:
            break
        frozen += wanted
    stage, reason = classify(output)
    return name, "FAIL", stage, reason, time.time() - start


def read_xfail(path):
    expected = {}
    if not os.path.exists(path):
        return expected
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            test, _, reason = line.partition(":")
            expected[test.strip()] = reason.strip()
    return expected


def write_xfail(path, failures, total, previous):
    """Writes the list; a test still failing at the same stage keeps the reason
    the list gave (hand-written explanations survive an update)."""
    with open(path, "w") as f:
        f.write("# ONNX backend node tests expected to fail through cgc, with the stage that\n"
                "# fails (import, lower, package, load, run, compare, data, timeout) and the\n"
                "# reason. Written by `run_conformance.py --update-xfail`; %d of %d tests.\n"
                "# Format: test_name: stage: reason\n" % (len(failures), total))
        for name, stage, reason in sorted(failures):
            kept = previous.get(name, "")
            if kept.startswith(stage + ":"):
                f.write("%s: %s\n" % (name, kept))
            else:
                f.write("%s: %s: %s\n" % (name, stage, reason))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cgc-run", default="cgc-run")
    parser.add_argument("--data", default=DEFAULT_DATA)
    parser.add_argument("--xfail", default=os.path.join(here, "expected-failures.txt"))
    parser.add_argument("--subset", help="a file naming the tests to run, one per line")
    parser.add_argument("--filter", help="a regular expression on test names")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=int, default=300)
    parser.add_argument("--rtol", type=float, default=1e-3)
    parser.add_argument("--atol", type=float, default=1e-7)
    parser.add_argument("--target", default="",
                        help="cgc-run --target values (the fallback target is always "
                             "appended): 'fallback' for the fallback target alone, "
                             "'cpu' for the in-process cpu target; by default "
                             "none, so cgc-run compiles for the device's declared patterns "
                             "(MLIR_EXCHANGE through the CPU driver)")
    parser.add_argument("--driver", default="",
                        help="cgc-run --driver: 'reference' runs every op alone on the "
                             "reference evaluator (runtime/drivers/reference); default: the "
                             "CPU driver")
    parser.add_argument("--update-xfail", action="store_true")
    parser.add_argument("--report", help="write every result as JSON here")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()

    if not os.path.isdir(args.data):
        print("error: %s does not exist (Debian package libonnx-testdata)" % args.data,
              file=sys.stderr)
        return 2
    tests = sorted(d for d in os.listdir(args.data)
                   if os.path.isfile(os.path.join(args.data, d, "model.onnx")))
    if args.subset:
        with open(args.subset) as f:
            wanted = [l.split("#")[0].strip() for l in f]
        wanted = [w for w in wanted if w]
        missing = [w for w in wanted if w not in tests]
        if missing:
            print("error: the subset names tests that do not exist: %s" % ", ".join(missing),
                  file=sys.stderr)
            return 2
        tests = wanted
    if args.filter:
        tests = [t for t in tests if re.search(args.filter, t)]
    expected = read_xfail(args.xfail)

    results = []
    started = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(run_one, os.path.join(args.data, t), args) for t in tests]
        for i, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name, status, stage, reason, seconds = future.result()
            results.append((name, status, stage, reason, seconds))
            unexpected = (status == "FAIL") != (name in expected)
            if args.verbose or (unexpected and status == "FAIL"):
                print("%s %s%s" % ("FAIL" if status == "FAIL" else "PASS", name,
                                   (": %s: %s" % (stage, reason)) if reason else ""),
                      flush=True)
            if sys.stderr.isatty():
                print("\r%d/%d" % (i, len(tests)), end="", file=sys.stderr, flush=True)
    if sys.stderr.isatty():
        print(file=sys.stderr)

    results.sort()
    passed = [r for r in results if r[1] == "PASS"]
    failed = [r for r in results if r[1] == "FAIL"]
    unexpected_failures = [r for r in failed if r[0] not in expected]
    expected_failures = [r for r in failed if r[0] in expected]
    unexpected_passes = [r for r in passed if r[0] in expected]

    by_reason = {}
    for name, _, stage, reason, _ in failed:
        key = "%s: %s" % (stage, re.sub(r"'[^']*'", "'…'", reason)[:120])
        by_reason.setdefault(key, []).append(name)
    print("\nFailures by reason (%d):" % len(failed))
    for key, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1]))[:40]:
        print("  %4d  %s   e.g. %s" % (len(names), key, names[0]))
    if unexpected_passes:
        print("\nExpected failures that now pass (remove them from %s):" % args.xfail)
        for r in unexpected_passes:
            print("  XPASS " + r[0])
    if unexpected_failures:
        print("\nUnexpected failures (%d):" % len(unexpected_failures))
        for name, _, stage, reason, _ in unexpected_failures:
            print("  FAIL %s: %s: %s" % (name, stage, reason))

    total = len(results)
    print("\nONNX node tests: %d of %d pass (%.1f%%); %d expected failures, %d unexpected "
          "failures, %d unexpected passes; %.0f s"
          % (len(passed), total, 100.0 * len(passed) / max(total, 1), len(expected_failures),
             len(unexpected_failures), len(unexpected_passes), time.time() - started))
    if args.report:
        with open(args.report, "w") as f:
            json.dump([{"test": n, "status": s, "stage": st, "reason": r, "seconds": round(t, 3)}
                       for n, s, st, r, t in results], f, indent=1)
    if args.update_xfail:
        write_xfail(args.xfail, [(n, st, r) for n, _, st, r, _ in failed], total, expected)
        print("wrote %s" % args.xfail)
        return 0
    # Expected failures are reported as skipped: they are neither passes nor
    # regressions.
    print("%d passed, %d failed, %d skipped" % (len(passed), len(unexpected_failures),
                                                 len(expected_failures)))
    return 1 if unexpected_failures else 0


if __name__ == "__main__":
    sys.exit(main())
