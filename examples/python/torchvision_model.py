#!/usr/bin/env python3
"""What a PyTorch user writes: export a torchvision model, compile it with
cgc for the device, run it, and compare with PyTorch's own output.

    pip install --no-build-isolation .        # once, from the repository root
    python3 examples/python/torchvision_model.py --model resnet18

Random weights make degenerate outputs that hide wrong kernels, so the
BatchNorm statistics are calibrated on random batches first (train mode,
no gradients) and the comparison is normwise.
"""

import argparse
import io
import time

import numpy as np
import torch
import torchvision

import cgc


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="resnet18",
                        help="a torchvision.models constructor (resnet18, mobilenet_v2, ...)")
    parser.add_argument("--size", type=int, default=224)
    args = parser.parse_args()

    torch.manual_seed(0)
    model = getattr(torchvision.models, args.model)(weights=None)
    model.train()
    with torch.no_grad():
        for _ in range(4):  # BatchNorm statistics from data, not 0 and 1
            model(torch.randn(8, 3, args.size, args.size))
    model.eval()

    x = torch.randn(1, 3, args.size, args.size)
    buffer = io.BytesIO()
    torch.onnx.export(model, x, buffer, input_names=["input"], output_names=["logits"],
                      opset_version=13)

    start = time.perf_counter()
    compiled = cgc.compile(buffer.getvalue())
    print(compiled.messages, end="")
    print("compiled in %.0f ms; scratch %.1f MiB" % ((time.perf_counter() - start) * 1000,
                                                     compiled.memory["footprint"] / 2**20))
    session = cgc.Session(compiled)
    ours = session.run({"input": x.numpy()})["logits"]
    with torch.no_grad():
        theirs = model(x).numpy()
    error = np.linalg.norm(ours - theirs) / np.linalg.norm(theirs)
    print("logits: scale %.3g, normwise relative error vs PyTorch %.2e, same top-1: %s"
          % (np.abs(theirs).max(), error, ours.argmax() == theirs.argmax()))
    runs = []
    for _ in range(10):
        t0 = time.perf_counter()
        session.run({"input": x.numpy()})
        runs.append(time.perf_counter() - t0)
    print("run: median %.1f ms over 10 runs" % (1000 * float(np.median(runs))))
    return 0 if error < 1e-4 else 1


if __name__ == "__main__":
    raise SystemExit(main())
