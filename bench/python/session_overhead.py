#!/usr/bin/env python3
"""Per-run overhead of cgc.Session.run over the C API (not a test).

Compiles bench/runtime/add4.onnxtxt (one tiny dispatch: the run's work is
negligible), times cgc-runtime-bench (cgc_context_run from C) and
Session.run from Python on the same model in the same process tree, one
after the other, and prints both medians, the difference (what Python adds)
against the 30 us goal, and whether Session.run copied any bytes.

    PYTHONPATH=build/python /usr/bin/python3 bench/python/session_overhead.py --build build
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--runs", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import cgc

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    work = tempfile.mkdtemp(prefix="cgc-session-bench-")
    model = os.path.join(work, "add4.cgc")
    cgc.compile(os.path.join(root, "bench", "runtime", "add4.onnxtxt"),
                targets=["cpu"]).save(model)
    session = cgc.Session(model, threads=1)
    feeds = {}
    for info in session.inputs:
        raw = np.empty(info.nbytes + 64, np.uint8)
        start = (-raw.ctypes.data) % 64
        feeds[info.name] = raw[start:start + info.nbytes].view(info.dtype).reshape(info.shape)
        feeds[info.name][...] = 1
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    print("%-6s %12s %12s %12s" % ("round", "C API us", "Python us", "added us"))
    added = []
    for r in range(args.rounds):
        report = os.path.join(work, "c.json")
        subprocess.run([os.path.join(args.build, "bin", "cgc-runtime-bench"), model, "--threads",
                        "1", "--runs", str(args.runs), "--json", report], check=True,
                       stdout=subprocess.DEVNULL)
        with open(report) as f:
            c_us = json.load(f)["models"][0]["median_us"]
        for _ in range(1000):
            session.run(feeds)
        times = []
        for _ in range(args.runs):
            t0 = time.perf_counter_ns()
            session.run(feeds)
            times.append(time.perf_counter_ns() - t0)
        py_us = statistics.median(times) / 1000
        added.append(py_us - c_us)
        print("%-6d %12.2f %12.2f %12.2f" % (r, c_us, py_us, py_us - c_us))
    stats = session.stats()
    print("Session.run overhead over the C API (median of rounds): %.2f us (goal < 30 us): %s"
          % (statistics.median(added), "met" if statistics.median(added) < 30 else "MISSED"))
    print("bytes copied by the runtime over %d runs: %d" % (stats["runs"], stats["bytes_copied"]))
    print("command-list recordings: %d" % stats["recordings"])


if __name__ == "__main__":
    sys.exit(main())
