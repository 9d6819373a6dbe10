#!/usr/bin/python3
"""Who is closer to the exact answer: cgc or ONNX Runtime?

Rebuilds one network of scripts/export_models.py --set wide exactly as it
was exported (same seed, same BatchNorm calibration), runs it in float64
with PyTorch on the input run_zoo.py --wide wrote, and prints the normwise
error (max |y - ref| / max |ref|) of ONNX Runtime's and cgc's outputs in
run_zoo.py's work folder.

    test/models/float64_reference.py WORK MODEL   # e.g. /tmp/zoo resnet101
"""
import os
import sys

import numpy as np
import torch
import torchvision

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import export_models  # noqa: E402


def main():
    work, name = sys.argv[1], sys.argv[2]
    constructor, size = export_models.WIDE[name]
    torch.manual_seed(0)
    model = getattr(torchvision.models, constructor)(weights=None)
    export_models.calibrate(model, size)
    model = model.double().eval()
    x = np.load(os.path.join(work, name, "inputs", "input.npy"))
    with torch.no_grad():
        ref = model(torch.from_numpy(x).double()).numpy()
    scale = np.abs(ref).max()
    for label, folder in (("ONNX Runtime", "ort"), ("cgc", "cgc-t0")):
        y = np.load(os.path.join(work, name, folder, "output.npy"))
        print("%s %s: normwise error against float64 %.3g" % (name, label,
                                                             np.abs(y - ref).max() / scale))
    return 0


if __name__ == "__main__":
    sys.exit(main())
