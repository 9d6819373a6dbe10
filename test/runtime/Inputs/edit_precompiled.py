"""Edits the precompiled programs ('CGPC' parts) of a compiled model in place,
keeping every size and offset, and re-digests the blobs and the container:
what a stale or tampered .cgc looks like to the runtime and the driver.

  edit_precompiled.py IN OUT rekey     the key names another compiler
  edit_precompiled.py IN OUT corrupt   the key matches, the kernel program
                                       inside is malformed
"""
import hashlib
import json
import struct
import sys


def parts(data, base=0):
    """(fourCC, payload offset, payload size) of a DX container at `base`."""
    assert data[base:base + 4] == b"DXBC", "not a DX container"
    count = struct.unpack_from("<I", data, base + 28)[0]
    result = []
    for i in range(count):
        offset = base + struct.unpack_from("<I", data, base + 32 + 4 * i)[0]
        fourcc, size = struct.unpack_from("<4sI", data, offset)
        result.append((fourcc, offset + 8, size))
    return result


def redigest(data, base, size):
    data[base + 4:base + 20] = hashlib.md5(bytes(data[base + 20:base + size])).digest()


def main():
    src, dst, mode = sys.argv[1:4]
    data = bytearray(open(src, "rb").read())
    edited = 0
    for fourcc, offset, size in parts(data):
        if fourcc != b"CGPC":
            continue
        for inner, at, length in parts(data, offset):
            payload = bytes(data[at:at + length])
            if mode == "rekey" and inner == b"CGPK":
                compiler = json.loads(payload)["compiler"]
                other = compiler[:-1] + ("0" if compiler[-1] != "0" else "1")
                new = payload.replace(json.dumps(compiler).encode(), json.dumps(other).encode())
            elif mode == "corrupt" and inner == b"CGKP":
                new = payload.replace(b'"kernels"', b'"kernelz"', 1)
            else:
                continue
            assert len(new) == length and new != payload, "nothing to edit"
            data[at:at + length] = new
            edited += 1
        redigest(data, offset, size)
    if not edited:
        sys.exit("no precompiled program to edit in " + src)
    redigest(data, 0, len(data))
    open(dst, "wb").write(data)


if __name__ == "__main__":
    main()
