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


M = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9


def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def _round(acc, v):
    return (_rotl((acc + v * P2) & M, 31) * P1) & M


def fast_checksum(data):
    """cgc::fastChecksum (runtime/common/container.cpp), for the 'CGCK' part."""
    n = len(data)
    lanes = [(P1 + P2) & M, P2, 0, (0 - P1) & M]
    i = 0
    while n - i >= 32:
        words = struct.unpack_from("<4Q", data, i)
        for k in range(4):
            lanes[k] = _round(lanes[k], words[k])
        i += 32
    h = (_rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)) & M
    h = (h + n) & M
    while n - i >= 8:
        (v,) = struct.unpack_from("<Q", data, i)
        h = (_rotl(h ^ _round(0, v), 27) * P1 + P3) & M
        i += 8
    while i < n:
        h = (_rotl(h ^ ((data[i] * P3) & M), 11) * P1) & M
        i += 1
    h ^= h >> 33
    h = (h * P2) & M
    h ^= h >> 29
    h = (h * P3) & M
    h ^= h >> 32
    return h


def redigest(data, base, size):
    """Recomputes a container's chunk checksums (a last 'CGCK' part, see
    cgc/container.h), then its MD5 digest."""
    found = parts(data, base)
    if found and found[-1][0] == b"CGCK":
        _, at, length = found[-1]
        version, shift, covered, count = struct.unpack_from("<IIQQ", data, at)
        chunk = 1 << shift
        for c in range(count):
            begin = base + 20 + c * chunk
            end = min(base + covered, begin + chunk)
            struct.pack_into("<Q", data, at + 24 + 8 * c, fast_checksum(bytes(data[begin:end])))
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
