#!/usr/bin/env python3
"""Sums an ONNX Runtime profile (cgc-ort-run --profile PREFIX) per node.

    cgc-ort-run MODEL.onnx INPUTS --benchmark --threads 1 --profile /tmp/m
    bench/models/ort_profile.py /tmp/m_DATE.json [--top N]

Prints each node's median time per run (the profile holds one event per node
per run, warm-up runs included: the median over runs drops them), slowest
first, with its op and shapes, and the total: the figures to set beside
cgc-run's per-step profile (CGC_CPU_PROFILE=1). The profiler's own
cost inflates small nodes; the shares are what to compare.
"""

import argparse
import json
import statistics
import sys


def shapes(entries):
    out = []
    for entry in entries or []:
        for dtype, dims in entry.items():
            out.append("%s%s" % (dtype, "x".join(str(d) for d in dims)))
    return " ".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="the JSON that cgc-ort-run --profile wrote")
    parser.add_argument("--top", type=int, default=0, help="print only the N slowest nodes")
    args = parser.parse_args()
    try:
        with open(args.profile) as f:
            events = json.load(f)
    except (OSError, ValueError) as e:
        print("ort_profile.py: error: %s: %s" % (args.profile, e), file=sys.stderr)
        return 1

    times, info, order = {}, {}, []
    for e in events:
        if e.get("cat") != "Node" or not e.get("name", "").endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        if name not in times:
            times[name] = []
            order.append(name)
            a = e.get("args", {})
            info[name] = (a.get("op_name", "?"), shapes(a.get("input_type_shape")),
                          shapes(a.get("output_type_shape")))
        times[name].append(e["dur"])
    if not times:
        print("ort_profile.py: error: %s holds no node events" % args.profile, file=sys.stderr)
        return 1

    medians = {n: statistics.median(t) for n, t in times.items()}
    total = sum(medians.values())
    rows = sorted(order, key=lambda n: -medians[n])
    if args.top:
        rows = rows[: args.top]
    for n in rows:
        op, ins, outs = info[n]
        print("%5.1f%% %8.1f us  #%-3d %-14s %s -> %s" % (
            100 * medians[n] / total, medians[n], order.index(n), op, ins, outs))
    print("%d nodes, %d runs, %.1f us per run (sum of the medians)" % (
        len(times), max(len(t) for t in times.values()), total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
