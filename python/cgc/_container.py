"""Reading a compiled model's container without the runtime: the execution
plan (part 'CGPL', JSON) holds its inputs, outputs and memory plan.

The layout is DXIL's (docs/architecture.md): 'DXBC', a 16-byte digest, a
version, the total size, the part count and part offsets, then parts of
{FourCC, size, bytes}. The runtime checks the digest and everything else when
the model is loaded; this reader only needs the plan and refuses anything
that is not plainly a container.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Dict

HEADER = 32


def read_plan(data: bytes) -> Dict[str, Any]:
    """Returns the execution plan of the compiled model in `data`."""
    if len(data) < HEADER or data[:4] != b"DXBC":
        raise ValueError("not a compiled model: it does not start with a DX container header")
    total, count = struct.unpack_from("<II", data, 24)
    if total != len(data):
        raise ValueError("not a valid compiled model: the container says %d bytes, it has %d"
                         % (total, len(data)))
    if HEADER + 4 * count > len(data):
        raise ValueError("not a valid compiled model: %d part offsets do not fit" % count)
    for i in range(count):
        (offset,) = struct.unpack_from("<I", data, HEADER + 4 * i)
        if offset + 8 > len(data):
            raise ValueError("not a valid compiled model: part %d lies outside the file" % i)
        fourcc, size = struct.unpack_from("<4sI", data, offset)
        if offset + 8 + size > len(data):
            raise ValueError("not a valid compiled model: part %d lies outside the file" % i)
        if fourcc == b"CGPL":
            return json.loads(data[offset + 8:offset + 8 + size].decode("utf-8"))
    raise ValueError("not a valid compiled model: it has no execution plan ('CGPL' part)")
