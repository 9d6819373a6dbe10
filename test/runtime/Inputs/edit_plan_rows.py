"""Points the first output's "rows_from" at itself in a compiled model's
execution plan ('CGPL' part), keeping its size, and re-digests the
container: a tampered .cgc the runtime must refuse.

  edit_plan_rows.py IN OUT
"""
import sys

from edit_precompiled import parts, redigest


def main():
    src, dst = sys.argv[1:3]
    data = bytearray(open(src, "rb").read())
    for fourcc, offset, size in parts(data):
        if fourcc != b"CGPL":
            continue
        payload = bytes(data[offset:offset + size])
        new = payload.replace(b'"rows_from": 1', b'"rows_from": 0', 1)
        if new == payload:
            sys.exit("no rows_from 1 in the plan of " + src)
        data[offset:offset + size] = new
        redigest(data, 0, len(data))
        open(dst, "wb").write(data)
        return
    sys.exit("no plan in " + src)


if __name__ == "__main__":
    main()
