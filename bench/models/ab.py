#!/usr/bin/python3
"""cgc against cgc: two builds (two commits) on the model zoo, in one run.

For a change that must not make cgc slower or bigger ("no worse than the
previous commit by more than 3%"), builds A and B each compile every model
(cgc-compile --target cpu, as bench/models/run_models.py does) and
run it with cgc-run in processes of their own, alternating A, B, B, A, ...
--rounds times per model and thread count (at 1 thread both runs of a round
on the same core), the rounds' runs pooled. Prints per model and thread
count the median latency of each, B / A, and the peak resident memory
(VmHWM, cgc-run's own report) of each, B / A. The outputs of A and B are
compared too (run_zoo.py's metric).

    bench/models/ab.py --a ../prev/build --b build [--models resnet50 ...]

Models of the wide set (scripts/export_models.py --set wide) are taken from
MODELS_DIR/wide by name (--models text_detector swin_t ...).

A report, not a test: the exit code is 0 unless a tool fails.
"""

import argparse
import json
import os
import shutil
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import run_models  # noqa: E402
import run_zoo  # noqa: E402


def compile_model(build, name, models_dir, work):
    compiled = os.path.join(work, name + ".cgc")
    if os.path.exists(compiled):
        os.remove(compiled)
    # The CPU driver's target is `cpu`; builds before 90d0b52 call it `reference`.
    target = "cpu" if os.path.exists(os.path.join(build, "lib", "libcgc_driver_cpu.so")) \
        else "reference"
    cmd = [os.path.join(build, "bin", "cgc-compile"), model_path(models_dir, name),
           "-o", compiled, "--target", target]
    for shape in run_zoo.MODELS.get(name, []):  # the wide set's shapes are static
        cmd += ["--input-shape", shape]
    code, _, _ = run_models.run_process(cmd, os.path.join(work, "compile.log"))
    if code:
        raise RuntimeError("cgc-compile failed:\n" + run_models.tail(os.path.join(work, "compile.log")))
    return compiled


def model_path(models_dir, name):
    """The zoo's NAME.onnx, else the wide set's (scripts/export_models.py
    --set wide, in MODELS_DIR/wide)."""
    wide = os.path.join(models_dir, "wide", name + ".onnx")
    zoo = os.path.join(models_dir, name + ".onnx")
    return wide if name not in run_zoo.MODELS and os.path.exists(wide) else zoo


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--a", required=True, help="build directory A (the baseline)")
    parser.add_argument("--b", required=True, help="build directory B (the change)")
    parser.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench", "ab"))
    parser.add_argument("--models", nargs="+", default=run_models.MODELS)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()

    cores = sorted(os.sched_getaffinity(0))
    print("cgc A (%s) against cgc B (%s); %d rounds x %d runs after %d warm-up; load average %.2f"
          % (args.a, args.b, args.rounds, args.runs, args.warmup, os.getloadavg()[0]), flush=True)
    rows = []
    for name in args.models:
        path = model_path(args.models_dir, name)
        inputs = run_zoo.make_inputs(name, os.path.join(args.work, name, "inputs"),
                                     None if name in run_zoo.MODELS else path)
        compiled = {}
        for who, build in (("A", args.a), ("B", args.b)):
            work = os.path.join(args.work, name, who)
            os.makedirs(work, exist_ok=True)
            compiled[who] = compile_model(build, name, args.models_dir, work)
        for threads in args.threads:
            runs = {"A": [], "B": []}
            rss = {"A": [], "B": []}
            outputs = {}
            for r in range(args.rounds):
                cpus = {cores[r % len(cores)]} if threads == 1 and len(cores) > 1 else None
                for who in (("A", "B") if r % 2 == 0 else ("B", "A")):
                    build = args.a if who == "A" else args.b
                    work = os.path.join(args.work, name, who)
                    tag = "t%d-r%d" % (threads, r)
                    report = os.path.join(work, tag + ".json")
                    out_dir = os.path.join(work, tag)
                    shutil.rmtree(out_dir, ignore_errors=True)
                    if os.path.exists(report):
                        os.remove(report)
                    cmd = [os.path.join(build, "bin", "cgc-run"), compiled[who]] + inputs + [
                        "--benchmark", "--warmup", str(args.warmup), "--runs", str(args.runs),
                        "--threads", str(threads), "--report-json", report, "--output-dir",
                        out_dir, "-q"]
                    code, _, hwm = run_models.run_process(cmd, os.path.join(work, tag + ".log"), cpus)
                    if code:
                        raise RuntimeError("%s failed:\n%s" % (
                            " ".join(cmd), run_models.tail(os.path.join(work, tag + ".log"))))
                    with open(report) as f:
                        data = json.load(f)
                    runs[who] += data.get("runs_ms") or [data["median_ms"]]
                    rss[who].append((data.get("peak_rss_kib") or hwm) / 1024)
                    outputs[who] = out_dir
            agreement = run_models.compare_outputs(outputs["B"], outputs["A"])
            a, b = statistics.median(runs["A"]), statistics.median(runs["B"])
            ra, rb = max(rss["A"]), max(rss["B"])
            rows.append((name, threads, a, b, ra, rb, agreement))
            print("  %-16s %d thread%s: median A %8.3f ms  B %8.3f ms  B/A %.3f   "
                  "peak RSS A %6.1f MiB  B %6.1f MiB  B/A %.3f   outputs %s (normwise %.1e)" % (
                      name, threads, "s" if threads > 1 else " ", a, b, b / a, ra, rb, rb / ra,
                      "agree" if agreement["matches"] else "DIFFER",
                      agreement["norm_rel_error"]),
                  flush=True)
    ratios = [r[3] / r[2] for r in rows]
    print("geometric mean of B/A latency: %.3f; worst %.3f" % (
        statistics.geometric_mean(ratios), max(ratios)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
