#!/usr/bin/env python3
"""Writes seed corpora for cgc's fuzz targets (test/fuzz), one folder each,
from ONNX's node tests and models compiled here. Nothing is committed: the
seeds are made from the build and the installed test data.

    scripts/fuzz_corpus.py --build build --out build/fuzz-corpus [--models N]

  onnx-import       node-test models (and their text form is left out: bytes only)
  compiled-model    those models compiled by cgc-compile (the default device
                    and the fallback target alone)
  precompiled       the precompiled programs ('CGPC' parts) of those
  kernel-program    their kernel programs ('CGKP' parts, JSON)
  json-formats      their plans, bind points and kernel programs (JSON parts)
  bytecode          their MLIR parts (bytecode after the interface GUID)
  tensor-file       node-test .pb tensors and .npy files
"""

import argparse
import glob
import hashlib
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

NODE = "/usr/share/libonnx-testdata/data/node"


def parts(data):
    """(FourCC, payload) of each part of a DX container."""
    if data[:4] != b"DXBC" or len(data) < 32:
        return []
    (count,) = struct.unpack_from("<I", data, 28)
    out = []
    for i in range(count):
        (offset,) = struct.unpack_from("<I", data, 32 + 4 * i)
        fourcc, size = struct.unpack_from("<4sI", data, offset)
        out.append((fourcc, data[offset + 8:offset + 8 + size]))
    return out


def save(folder, payload):
    name = hashlib.sha1(payload).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(payload)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", type=int, default=40,
                        help="node tests to take (every k-th, smallest models)")
    args = parser.parse_args()
    folders = {}
    for target in ("onnx-import", "compiled-model", "precompiled", "kernel-program",
                   "json-formats", "bytecode", "tensor-file"):
        folders[target] = os.path.join(args.out, target)
        shutil.rmtree(folders[target], ignore_errors=True)
        os.makedirs(folders[target])

    tests = sorted(d for d in os.listdir(NODE) if os.path.exists(os.path.join(NODE, d, "model.onnx")))
    tests.sort(key=lambda d: os.path.getsize(os.path.join(NODE, d, "model.onnx")))
    step = max(1, len(tests) // args.models)
    chosen = tests[::step][:args.models]
    # Models whose partitions the cpu target claims as MLIR programs,
    # so that precompiled programs and Partition IR are among the seeds.
    for anchor in ("test_conv_with_strides_padding", "test_gemm_default_matrix_bias",
                   "test_matmul_2d"):
        if anchor in tests and anchor not in chosen:
            chosen.append(anchor)
    compile_ = os.path.join(args.build, "bin", "cgc-compile")
    env = dict(os.environ, CGC_D3D12_DEBUG_QUIET="1")
    for test in chosen:
        model = os.path.join(NODE, test, "model.onnx")
        with open(model, "rb") as f:
            save(folders["onnx-import"], f.read())
        for pb in sorted(glob.glob(os.path.join(NODE, test, "test_data_set_0", "*.pb")))[:2]:
            with open(pb, "rb") as f:
                save(folders["tensor-file"], f.read())
        for extra in ([], ["--target", "fallback"], ["--target", "cpu"]):
            out = os.path.join(args.out, "model.cgc")
            proc = subprocess.run([compile_, model, "-o", out] + extra, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if proc.returncode != 0:
                continue  # a model cgc does not compile gives no compiled seeds
            with open(out, "rb") as f:
                data = f.read()
            os.remove(out)
            save(folders["compiled-model"], data)
            for fourcc, payload in parts(data):
                if fourcc == b"CGPC":
                    save(folders["precompiled"], payload)
                    for inner, body in parts(payload):
                        if inner == b"CGKP":
                            save(folders["kernel-program"], body)
                elif fourcc == b"CGKP":
                    save(folders["kernel-program"], payload)
                    save(folders["json-formats"], payload)
                elif fourcc in (b"CGPL", b"CGBP"):
                    save(folders["json-formats"], payload)
                elif fourcc == b"MLIR" and len(payload) > 16:
                    save(folders["bytecode"], payload[16:])
    rng = np.random.default_rng(0)
    for shape, dtype in (((2, 3), np.float32), ((4,), np.int64), ((1, 2, 2), np.float16), ((), np.float64)):
        path = os.path.join(args.out, "seed.npy")
        np.save(path, rng.standard_normal(shape).astype(dtype))
        with open(path, "rb") as f:
            save(folders["tensor-file"], f.read())
        os.remove(path)
    for target, folder in sorted(folders.items()):
        print("%-16s %4d seeds" % (target, len(os.listdir(folder))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
