"""png_pixels.py PNG [R,G,B ...] — what a screenshot shows, without an imaging library: prints
"pixels=N background=N colours=N" and, for each R,G,B given, "rgb(R,G,B)=N" (pixels of exactly
that colour). Reads 8-bit RGB/RGBA, non-interlaced PNG (what Chromium writes)."""
import struct
import sys
import zlib


def rows(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    assert depth == 8 and ctype in (2, 6) and not interlace, ihdr
    bpp = 3 if ctype == 2 else 4
    raw, stride, prev = zlib.decompress(idat), w * bpp, bytearray(w * bpp)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        yield [tuple(line[x * bpp:x * bpp + 3]) for x in range(w)]
        prev = line


counts = {}
for row in rows(sys.argv[1]):
    for px in row:
        counts[px] = counts.get(px, 0) + 1
total = sum(counts.values())
background = max(counts.values())
print(f"pixels={total} background={background} colours={len(counts)}")
for arg in sys.argv[2:]:
    rgb = tuple(int(v) for v in arg.split(","))
    print(f"rgb({arg})={counts.get(rgb, 0)}")
