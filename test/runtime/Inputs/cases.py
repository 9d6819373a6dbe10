"""Shared by the generators of run-time cases (make_runtime_loop.py,
make_runtime_selection.py): writes one case's inputs and expected
outputs."""
import os

import numpy as np


def write_case(out, name, k, inputs, outputs):
    """OUT/NAME_in{k}/KEY.npy for each input, OUT/NAME_out{k}/KEY.npy for
    each expected output."""
    for kind, values in (("in", inputs), ("out", outputs)):
        folder = os.path.join(out, "%s_%s%d" % (name, kind, k))
        os.makedirs(folder, exist_ok=True)
        for key, value in values.items():
            np.save(os.path.join(folder, key + ".npy"), value)
