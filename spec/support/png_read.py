#!/usr/bin/env python3
"""Decodes a PNG file with Python's standard library only (zlib), for the
specs: checks the signature and every chunk's CRC, reads IHDR, inflates the
IDAT stream and undoes the five row filters. Prints one JSON object:
{"width", "height", "bit_depth", "color_type", "channels", "pixels": [rows of
byte values]}. Handles what a PNG writer may choose for 8-bit grey, RGB and
RGBA images without interlacing; anything else is an error."""
import json
import struct
import sys
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def main(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("not a PNG signature")
    pos, idat, ihdr, ended = 8, b"", None, False
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) & 0xffffffff != crc:
            raise SystemExit("bad CRC in chunk %r" % kind)
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            ended = True
        pos += 12 + n
    if not ihdr or not ended:
        raise SystemExit("missing IHDR or IEND")
    w, h, depth, ctype, _, _, interlace = ihdr
    channels = {0: 1, 2: 3, 6: 4}.get(ctype)
    if depth != 8 or channels is None or interlace != 0:
        raise SystemExit("unsupported PNG: depth %d, colour type %d, interlace %d" % (depth, ctype, interlace))
    raw = zlib.decompress(idat)
    stride = w * channels
    rows, prev = [], [0] * stride
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = list(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                line[i] = (line[i] + paeth(a, b, c)) & 255
            elif f != 0:
                raise SystemExit("bad filter %d" % f)
        rows.append(line)
        prev = line
    print(json.dumps({"width": w, "height": h, "bit_depth": depth, "color_type": ctype,
                      "channels": channels, "pixels": rows}))


if __name__ == "__main__":
    main(sys.argv[1])
