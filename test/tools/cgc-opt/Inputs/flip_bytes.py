"""Runs cgc-opt on copies of a bytecode file with one byte flipped each.

usage: flip_bytes.py CGC_OPT FILE.mlirbc FIRST LAST MASK

For every offset in [FIRST, LAST] the byte there is XORed with MASK and
cgc-opt parses the result (20 s limit each). Prints how many runs read the
file, failed with an error, ran out of time (a hang) or died on a signal (a
crash), and how many errors named a cycle between attribute/type entries.
"""

import os
import subprocess
import sys
import tempfile


def main():
    cgc_opt, path, first, last, mask = sys.argv[1:6]
    data = open(path, "rb").read()
    first, last, mask = int(first), min(int(last), len(data) - 1), int(mask, 0)
    counts = {"read": 0, "error": 0, "hang": 0, "crash": 0, "cycle": 0}
    with tempfile.TemporaryDirectory() as tmp:
        bad = os.path.join(tmp, "bad.mlirbc")
        for offset in range(first, last + 1):
            flipped = bytearray(data)
            flipped[offset] ^= mask
            with open(bad, "wb") as f:
                f.write(flipped)
            try:
                run = subprocess.run([cgc_opt, bad, "-o", os.devnull],
                                     capture_output=True, text=True, timeout=20)
            except subprocess.TimeoutExpired:
                counts["hang"] += 1
                print("hang at byte %d" % offset)
                continue
            if run.returncode == 0:
                counts["read"] += 1
            elif run.returncode < 0 or "error" not in run.stderr:
                counts["crash"] += 1
                print("crash at byte %d (exit %d): %s" % (offset, run.returncode, run.stderr[-300:]))
            else:
                counts["error"] += 1
                if "cycle" in run.stderr:
                    counts["cycle"] += 1
    print("runs: %d read: %d errors: %d hangs: %d crashes: %d cycles: %d" % (
        last - first + 1, counts["read"], counts["error"], counts["hang"],
        counts["crash"], counts["cycle"]))


if __name__ == "__main__":
    main()
