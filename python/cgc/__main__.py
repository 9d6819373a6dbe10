"""python -m cgc: the command-line tools' main jobs from Python.

    python -m cgc devices
    python -m cgc compile model.onnx -o model.cgc [--device D] [--target T] [--input-shape x=1x3x224x224]
    python -m cgc run model.onnx|model.cgc [NAME=FILE.npy ...] [--output-dir DIR] [--device D]
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

import numpy as np

from . import Error, Session, compile, devices


def _shapes(values: List[str]) -> dict:
    out = {}
    for value in values:
        name, _, dims = value.partition("=")
        if not name or not _:
            raise SystemExit("--input-shape expects NAME=D0xD1..., got %r" % value)
        try:
            out[name] = tuple(int(d) for d in dims.split("x")) if dims else ()
        except ValueError:
            raise SystemExit("--input-shape %s: dimensions must be integers" % value)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cgc", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list the D3D12 drivers and the patterns they declare")
    c = sub.add_parser("compile", help="compile an ONNX model for a device")
    c.add_argument("model")
    c.add_argument("-o", "--output", required=True)
    r = sub.add_parser("run", help="run a model on random or given inputs")
    r.add_argument("model")
    r.add_argument("inputs", nargs="*", help="NAME=FILE.npy")
    r.add_argument("--output-dir")
    for p in (c, r):
        p.add_argument("--device", help="a driver name or path (default: the default device)")
        p.add_argument("--target", action="append", default=[], help="compilation targets")
        p.add_argument("--input-shape", action="append", default=[], help="NAME=D0xD1...")
    args = parser.parse_args(argv)
    try:
        if args.command == "devices":
            for d in devices():
                print("%s: MLIR programs tier %s, target %s, %d patterns%s" % (
                    d.driver, d.mlir_tier, d.target or "-", len(d.patterns),
                    " (" + d.unavailable + ")" if d.unavailable else ""))
                for name in d.patterns:
                    print("  " + name)
            return 0
        if args.command == "compile":
            compiled = compile(args.model, device=args.device, targets=args.target or None,
                               input_shapes=_shapes(args.input_shape))
            sys.stderr.write(compiled.messages)
            compiled.save(args.output)
            return 0
        session = Session(args.model, device=args.device, targets=args.target or None,
                          input_shapes=_shapes(args.input_shape))
        sys.stderr.write(session.compiled.messages)
        given = {}
        for item in args.inputs:
            name, _, path = item.partition("=")
            given[name] = np.load(path)
        rng = np.random.default_rng(1)
        feeds = {i.name: given[i.name] if i.name in given else
                 rng.standard_normal(i.shape).astype(i.dtype) for i in session.inputs}
        for name, value in session.run(feeds).items():
            print("output %r: %s%s min %g max %g" % (name, value.dtype, list(value.shape),
                                                    value.min(), value.max()))
            if args.output_dir:
                os.makedirs(args.output_dir, exist_ok=True)
                np.save(os.path.join(args.output_dir, name + ".npy"), value)
        return 0
    except (Error, OSError, ValueError, TypeError, KeyError) as e:
        sys.stderr.write("python -m cgc: error: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
