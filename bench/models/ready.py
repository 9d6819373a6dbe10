#!/usr/bin/python3
"""Ready-to-first-result: process start -> model loaded -> first run done.

For each model and thread count, side by side in one run (alternating the
configurations, --rounds times each, fresh processes):

  today       the baseline build (--baseline, e.g. a worktree at the commit
              before precompiled databases) on its own default .cgc: the
              precompiled program in the file, constants prepared at load,
              the file's MD5 digest checked
  default     this build on its default .cgc (precompiled program in the
              file, constants prepared at load, chunk checksums checked)
  psdb        this build on a .cgc without precompiled programs, with an
              SODB/PSDB pair registered (cgc-soc add / compile / prepare):
              programs and prepared constants mapped from the database

The time is wall clock from spawning cgc-run until it prints its first line
(line-buffered stdout: the run is over), so it includes exec, the dynamic
loader, the load and the first run, not the process's teardown. Each
configuration also runs once with --runs 10 for its steady-state median
(first run / steady), and once under LD_DEBUG=files to say whether the
compiler library (libMLIR) was mapped. Prints a table and the ratios to
`today`; --json writes the figures. A report, not a test.

    bench/models/ready.py --build build --baseline ../prev/build \\
        [--models resnet50 bert_encoder] [--threads 1 2] [--rounds 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "models"))
import run_zoo  # noqa: E402

PLUGIN = os.path.join("lib", "libcgc_compiler_plugin_cpu.so")


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    if check and p.returncode:
        raise RuntimeError("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stdout[-3000:]))
    return p.stdout


def compile_model(build, name, models_dir, out, extra=()):
    if os.path.exists(out):
        os.remove(out)
    target = "cpu" if os.path.exists(os.path.join(build, "lib", "libcgc_driver_cpu.so")) \
        else "reference"
    cmd = [os.path.join(build, "bin", "cgc-compile"), os.path.join(models_dir, name + ".onnx"),
           "-o", out, "--target", target] + list(extra)
    for shape in run_zoo.MODELS[name]:
        cmd += ["--input-shape", shape]
    run(cmd)


def ready_ms(cmd, env):
    """Wall ms from spawning `cmd` to its first line of output."""
    start = time.perf_counter()
    p = subprocess.Popen(["stdbuf", "-oL"] + cmd, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    first = p.stdout.readline()
    ready = (time.perf_counter() - start) * 1000
    rest = p.stdout.read()
    if p.wait():
        raise RuntimeError("failed: %s\n%s%s" % (" ".join(cmd), first, rest[-2000:]))
    return ready


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--baseline", help="the baseline build directory ('today')")
    parser.add_argument("--models-dir", default=os.path.join(ROOT, "build", "models"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench", "ready"))
    parser.add_argument("--models", nargs="+", default=["resnet50", "bert_encoder"])
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    env = dict(os.environ, CGC_D3D12_DEBUG_QUIET="1")
    env.pop("CGC_D3D12_PRECOMPILED_DATABASES", None)
    build = os.path.abspath(args.build)
    soc = os.path.join(build, "bin", "cgc-soc")
    plugin = os.path.join(build, PLUGIN)
    results = []
    for name in args.models:
        w = os.path.join(args.work, name)
        os.makedirs(w, exist_ok=True)
        configs = {}
        if args.baseline:
            base = os.path.abspath(args.baseline)
            compile_model(base, name, args.models_dir, os.path.join(w, "today.cgc"))
            configs["today"] = (os.path.join(base, "bin", "cgc-run"),
                                [os.path.join(w, "today.cgc")])
        compile_model(build, name, args.models_dir, os.path.join(w, "default.cgc"))
        configs["default"] = (os.path.join(build, "bin", "cgc-run"),
                              [os.path.join(w, "default.cgc")])
        plain = os.path.join(w, "plain.cgc")
        compile_model(build, name, args.models_dir, plain, ["--no-precompile"])
        sodb, psdb = os.path.join(w, "app.sodb"), os.path.join(w, "app.psdb")
        for f in (sodb, psdb, psdb + ".values"):
            if os.path.exists(f):
                os.remove(f)
        run([soc, "add", sodb, plain])
        run([soc, "compile", sodb, psdb, "--plugin", plugin])
        run([soc, "prepare", psdb, plain, "--plugin", plugin, "--threads",
             ",".join(str(t) for t in args.threads)])
        configs["psdb"] = (os.path.join(build, "bin", "cgc-run"),
                           [plain, "--sodb", sodb, "--psdb", psdb])
        for threads in args.threads:
            times = {c: [] for c in configs}
            for r in range(args.rounds):
                order = list(configs) if r % 2 == 0 else list(reversed(list(configs)))
                for c in order:
                    tool, rest = configs[c]
                    times[c].append(ready_ms([tool] + rest + [
                        "--threads", str(threads), "--benchmark", "--runs", "1", "--warmup", "0",
                        "-q"], env))
            for c, (tool, rest) in configs.items():
                report = os.path.join(w, "%s-%d.json" % (c, threads))
                run([tool] + rest + ["--threads", str(threads), "--benchmark", "--runs", "10",
                                     "--warmup", "2", "-q", "--report-json", report], env)
                steady = json.load(open(report))
                first = os.path.join(w, "%s-%d-first.json" % (c, threads))
                run([tool] + rest + ["--threads", str(threads), "--benchmark", "--runs", "1",
                                     "--warmup", "0", "-q", "--report-json", first], env)
                once = json.load(open(first))
                libs = run([tool] + rest + ["--threads", str(threads), "-q"],
                           dict(env, LD_DEBUG="files"))
                results.append({
                    "model": name, "threads": threads, "config": c,
                    "ready_ms": statistics.median(times[c]), "ready_all_ms": times[c],
                    "load_ms": once.get("load_ms"), "first_run_ms": once.get("first_run_ms"),
                    "steady_median_ms": steady.get("median_ms"),
                    "prepared_blocks_mapped": once.get("prepared_blocks_mapped"),
                    "prepared_blocks_computed": once.get("prepared_blocks_computed"),
                    "prepared_bytes_computed": once.get("prepared_bytes_computed"),
                    "compiler_mapped": "libMLIR" in libs,
                })
    print("%-13s %3s %-8s %9s %8s %9s %9s %7s %12s %8s" %
          ("model", "thr", "config", "ready ms", "/today", "load ms", "first ms", "first/",
           "transformed", "libMLIR"))
    print("%-13s %3s %-8s %9s %8s %9s %9s %7s %12s %8s" %
          ("", "", "", "(median)", "", "", "", "steady", "blocks", "mapped"))
    for r in results:
        today = next((x for x in results if x["model"] == r["model"] and
                      x["threads"] == r["threads"] and x["config"] == "today"), None)
        ratio = r["ready_ms"] / today["ready_ms"] if today else float("nan")
        first = (r["first_run_ms"] or 0) / (r["steady_median_ms"] or 1)
        computed = r["prepared_blocks_computed"]
        print("%-13s %3d %-8s %9.0f %8.2f %9.0f %9.1f %7.2f %12s %8s" %
              (r["model"], r["threads"], r["config"], r["ready_ms"], ratio, r["load_ms"] or 0,
               r["first_run_ms"] or 0, first, "-" if computed is None else computed,
               "yes" if r["compiler_mapped"] else "no"))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
