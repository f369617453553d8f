"""hpack_vectors.py OUT — header blocks from the Python `hpack` encoder, a second encoder beside
libnghttp2's, for tests/helpers/unit_hpack.c (`blocks` mode): every string Huffman-coded (every
byte value in some value, so every code of the Huffman table is used), fields indexed, not
indexed and never indexed, and size updates of the dynamic table. OUT gets each block as a
little-endian u32 length and its bytes."""
import random
import struct
import sys

from hpack import Encoder, HeaderTuple, NeverIndexedHeaderTuple


def main():
    rng = random.Random(4719)
    enc = Encoder()
    blocks = []
    every_byte = bytes(range(256))
    for i in range(400):
        if i % 37 == 5:
            enc.header_table_size = rng.choice([0, 256, 1024, 4096])
        headers = [(b':method', rng.choice([b'GET', b'POST', b'PUT'])),
                   (b':path', b'/api/v1/items/%d?q=%d' % (rng.randrange(10**6), i)),
                   (b'traceparent', b'00-%032x-%016x-01' % (rng.getrandbits(128), rng.getrandbits(64)))]
        for _ in range(rng.randrange(6)):
            value = bytes(rng.randrange(256) for _ in range(rng.randrange(60)))
            headers.append((b'x-%d' % rng.randrange(20), value))
        start = (i * 37) % 256
        headers.append((b'x-bytes', every_byte[start:] + every_byte[:start]))
        if i % 3 == 0:
            headers.append(NeverIndexedHeaderTuple(b'authorization', b'secret %d' % i))
        if i % 5 == 0:
            headers.append(HeaderTuple(b'x-repeat', b'same'))
            headers.append(HeaderTuple(b'x-repeat', b'same'))
        blocks.append(enc.encode(headers, huffman=True))
    with open(sys.argv[1], 'wb') as f:
        for b in blocks:
            f.write(struct.pack('<I', len(b)) + b)
    return 0


if __name__ == '__main__':
    sys.exit(main())
