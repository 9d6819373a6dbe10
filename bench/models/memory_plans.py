#!/usr/bin/python3
"""Scratch memory plans of real models against the op-level lower bound.

For each model of the zoo (build/models, scripts/export_models.py) and of
the wider set (build/models/wide, scripts/export_models.py --set wide), on
the path cgc-run takes (no --target: the default device's patterns, or the
one given with --target), runs `cgc-compile --memory-report -` and prints:

  footprint      the scratch bytes the plan needs;
  op-level LB    the peak of live intermediate bytes over the executed order
                 of subgraph invocations (no plan of that order can be
                 smaller);
  ratio          footprint / op-level LB (issue 23's goal: <= 1.05);
  partition view the footprint when every intermediate of a partition lives
                 for its whole dispatch (how cgc planned before), and its
                 ratio to the lower bound.

A report, not a test: the exit code is 0 unless no model could be measured.

    bench/models/memory_plans.py [--cgc-compile build/bin/cgc-compile]
                                 [--models build/models] [--target NAME]
"""

import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import run_zoo  # noqa: E402  (the zoo's --input-shape flags)

GOAL = 1.05


def measure(compiler, path, shapes, target):
    with tempfile.TemporaryDirectory() as work:
        cmd = [compiler, path, "--memory-report", "-", "-o", os.path.join(work, "m.cgc")]
        for shape in shapes:
            cmd += ["--input-shape", shape]
        if target:
            cmd += ["--target", target]
        result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        lines = [l for l in result.stderr.splitlines() if "error" in l] or result.stderr.splitlines()
        return None, (lines[0] if lines else "exit %d" % result.returncode)[:160]
    values = {}
    for key, pattern in (("footprint", r"^footprint\s+(\d+) B"),
                         ("lower", r"^lower bound\s+(\d+) B"),
                         ("partition", r"^partition view\s+(\d+) B")):
        match = re.search(pattern, result.stdout, re.M)
        values[key] = int(match.group(1)) if match else None
    if values["footprint"] is None or values["lower"] is None:
        return None, "no memory report in cgc-compile's output"
    return values, None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cgc-compile", default=os.path.join(ROOT, "build", "bin", "cgc-compile"))
    parser.add_argument("--models", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--target", default=None,
                        help="compile for this target instead of the default device")
    args = parser.parse_args()

    models = []
    for name, shapes in sorted(run_zoo.MODELS.items()):
        path = os.path.join(args.models, name + ".onnx")
        if os.path.exists(path):
            models.append(("zoo", name, path, shapes))
    for path in sorted(glob.glob(os.path.join(args.models, "wide", "*.onnx"))):
        models.append(("wide", os.path.basename(path)[:-5], path, []))
    if not models:
        print("no models in %s; make them with scripts/export_models.py [--set wide]" % args.models)
        return 1

    mib = lambda b: "%.2f" % (b / 1048576.0)
    print("%-5s %-30s %12s %12s %7s %14s %7s" % ("set", "model", "footprint", "op-level LB",
                                                  "ratio", "partition view", "ratio"))
    print("%-5s %-30s %12s %12s %7s %14s %7s" % ("", "", "MiB", "MiB", "", "MiB", ""))
    measured = met = 0
    worst = 0.0
    failures = []
    for group, name, path, shapes in models:
        values, error = measure(args.cgc_compile, path, shapes, args.target)
        if error:
            failures.append((name, error))
            continue
        lower = max(values["lower"], 1)
        ratio = values["footprint"] / lower
        partition = values["partition"]
        measured += 1
        met += ratio <= GOAL
        worst = max(worst, ratio)
        print("%-5s %-30s %12s %12s %7.4f %14s %7s" % (
            group, name, mib(values["footprint"]), mib(values["lower"]), ratio,
            mib(partition) if partition else "-",
            "%.2f" % (partition / lower) if partition else "-"))
    print()
    print("footprint / op-level lower bound <= %.2f: %d of %d models (worst %.4f): %s" % (
        GOAL, met, measured, worst, "met" if measured and met == measured else "missed"))
    for name, error in failures:
        print("not measured: %s: %s" % (name, error))
    return 0 if measured else 1


if __name__ == "__main__":
    sys.exit(main())
