#!/usr/bin/python3
"""The model zoo through ONNX Runtime with cgc's plugin EP, against ONNX
Runtime's CPU EP and cgc-run, measured in the same run (not a test).

For each model and thread count, --repeat rounds, each running the three
one after the other (interleaved, so a load spike on the shared machine hits
all three):
  cpu  cgc-ort-run MODEL --threads T --benchmark          (ONNX Runtime alone)
  ep   cgc-ort-run MODEL --threads T --benchmark --ep cgc --all-on-ep
  cgc  cgc-run MODEL --threads T --benchmark              (cgc's own runtime)
and prints, from the fastest run of each over all rounds (noise on a shared
machine only ever adds time), the latencies, the ratios ep/cpu and cgc/cpu,
and ep/cgc: the EP's ratio over cgc-run's (goal: at most 1.05: the EP adds
at most 5% to what cgc does alone), with the ratio of the medians beside
it. Across processes both move with the machine's load; "in the same runs"
is decisive: what ONNX Runtime and the EP add around cgc's own runs inside
the EP's timed runs (per Run: its time minus the time in cgc_context_run;
the median over runs, relative to cgc's part of the median Run). Then the per-Run overhead of the EP on a tiny model (Relu of
float[1,16]): ep - cgc, in microseconds (goal: < 20).

  bench/onnxruntime/ep_vs_cpu.py --build build [--models resnet50 ...]
        [--threads 1,2] [--runs 30] [--repeat 2]

Check the load average first: the machine is shared; the script prints it.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
from run_zoo import MODELS, make_inputs  # noqa: E402


def timings(cmd, report):
    """(min, median, in-run overhead) of one --benchmark invocation: the
    overhead is what ONNX Runtime and the EP add around cgc's own runs, as a
    fraction of them, measured in the same runs (cgc-ort-run --ep: the median
    over runs of Run time minus time in cgc_context_run); None for the
    others."""
    proc = subprocess.run(cmd + ["--report-json", report], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, errors="replace")
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), proc.stdout[-2000:]))
    with open(report) as f:
        r = json.load(f)
    overhead = None
    if r.get("ep_added_ms", -1) >= 0:
        overhead = r["ep_added_ms"] / (r["median_ms"] - r["ep_added_ms"])
    return r["min_ms"], r["median_ms"], overhead


def tiny_model(path):
    import onnx
    from onnx import TensorProto, helper
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "tiny",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", nargs="*", default=sorted(MODELS))
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="write the table as JSON here")
    args = parser.parse_args()
    bin_dir = os.path.join(args.build, "bin")
    ort_run, cgc_run = os.path.join(bin_dir, "cgc-ort-run"), os.path.join(bin_dir, "cgc-run")
    print("load average: %.2f %.2f %.2f" % os.getloadavg(), flush=True)
    timing = ["--benchmark", "--warmup", str(args.warmup), "--runs", str(args.runs)]
    rows = []
    with tempfile.TemporaryDirectory() as work:
        jobs = []
        for name in args.models:
            model = os.path.join(args.build, "models", name + ".onnx")
            if not os.path.exists(model):
                print("skipping %s: %s is missing (scripts/export_models.py)" % (name, model))
                continue
            inputs = make_inputs(name, os.path.join(work, name))
            shapes = [a for s in MODELS.get(name, []) for a in ("--input-shape", s)]
            jobs.append((name, model, inputs, shapes))
        tiny = os.path.join(work, "tiny.onnx")
        tiny_model(tiny)
        jobs.append(("tiny (Relu 1x16)", tiny, [], []))
        for name, model, inputs, shapes in jobs:
            for threads in [int(t) for t in args.threads.split(",")]:
                t = ["--threads", str(threads)]
                cmds = {
                    "cpu": [ort_run, model] + inputs + t + timing + ["-q"],
                    "ep": [ort_run, model] + inputs + t + timing +
                          ["-q", "--ep", "cgc", "--all-on-ep"],
                    "cgc": [cgc_run, model] + inputs + shapes + t + timing + ["-q"],
                }
                mins = {k: [] for k in cmds}
                medians = {k: [] for k in cmds}
                overheads = []
                for _ in range(args.repeat):
                    for key, cmd in cmds.items():
                        low, mid, overhead = timings(cmd, os.path.join(work, "r.json"))
                        mins[key].append(low)
                        medians[key].append(mid)
                        if key == "ep" and overhead is not None:
                            overheads.append(overhead)
                best = {k: min(v) for k, v in mins.items()}
                typical = {k: sorted(v)[len(v) // 2] for k, v in medians.items()}
                row = {"model": name, "threads": threads, **best,
                       "median": typical,
                       "ep/cpu": best["ep"] / best["cpu"], "cgc/cpu": best["cgc"] / best["cpu"],
                       "ep/cgc": best["ep"] / best["cgc"],
                       "median ep/cgc": typical["ep"] / typical["cgc"],
                       "ep_overhead_us": (best["ep"] - best["cgc"]) * 1000,
                       "in_run_overhead": sorted(overheads)[len(overheads) // 2]}
                rows.append(row)
                print("%-18s t=%d  ORT CPU %8.3f ms  ORT+cgc EP %8.3f ms  cgc-run %8.3f ms  "
                      "ep/cpu %.3f  cgc/cpu %.3f  ep/cgc %.3f (medians: %.3f; in the same "
                      "runs: +%.2f%%)%s" % (
                          name, threads, best["cpu"], best["ep"], best["cgc"], row["ep/cpu"],
                          row["cgc/cpu"], row["ep/cgc"], row["median ep/cgc"],
                          100 * row["in_run_overhead"],
                          "  (EP overhead %.1f us per Run)" % row["ep_overhead_us"]
                          if name.startswith("tiny") else ""), flush=True)
    print("load average: %.2f %.2f %.2f" % os.getloadavg())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
