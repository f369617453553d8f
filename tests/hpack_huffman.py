"""hpack_huffman.py [--check] — writes preload/http/hpack_huffman.h, the decoding tables of
HPACK's Huffman code, from the code length of each of its 257 symbols (RFC 7541 Appendix B).
The code is canonical: codes of one length are consecutive in symbol order and each length's
first code follows the last of the shorter ones, so the lengths alone define it, and a decoder
needs only how many codes each length has and the symbols sorted by (length, symbol). --check
exits 1 when the header differs from what the lengths give (make lint)."""
import os
import sys

# Code length in bits of symbols 0..255 and of EOS (256), RFC 7541 Appendix B.
LENGTHS = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
    28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
    6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
    5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
    13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
    15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
    6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
    20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
    24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
    22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
    21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
    26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
    19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
    20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
    26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
    30,
]
MAX_LEN = 30


def header():
    assert len(LENGTHS) == 257
    # Kraft: a complete prefix code (every bit string of MAX_LEN bits decodes)
    assert sum(1 << (MAX_LEN - n) for n in LENGTHS) == 1 << MAX_LEN
    counts = [sum(1 for n in LENGTHS if n == length) for length in range(MAX_LEN + 1)]
    symbols = sorted(range(257), key=lambda s: (LENGTHS[s], s))
    out = ['/* hpack_huffman.h — HPACK\'s canonical Huffman code as decoding tables, written by',
           ' * tests/hpack_huffman.py from the code lengths of RFC 7541 Appendix B (make lint checks',
           ' * them): how many codes each length has, and the symbols in code order. 256 is EOS. */',
           '#ifndef PROFLINK_HPACK_HUFFMAN_H', '#define PROFLINK_HPACK_HUFFMAN_H', '',
           '#include <stdint.h>', '',
           f'#define HPACK_HUFFMAN_MAX_LEN {MAX_LEN}',
           '#define HPACK_HUFFMAN_EOS 256', '',
           'static const uint16_t hpack_huffman_counts[HPACK_HUFFMAN_MAX_LEN + 1] = {']
    out += wrap([str(c) for c in counts])
    out += ['};', '', 'static const uint16_t hpack_huffman_symbols[257] = {']
    out += wrap([str(s) for s in symbols])
    out += ['};', '', '#endif', '']
    return '\n'.join(out)


def wrap(items):
    lines, line = [], '   '
    for item in items:
        if len(line) + len(item) + 2 > 99:
            lines.append(line.rstrip())
            line = '   '
        line += ' ' + item + ','
    lines.append(line.rstrip())
    return lines


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = os.path.join(root, 'preload', 'http', 'hpack_huffman.h')
    text = header()
    if '--check' in sys.argv:
        with open(path) as f:
            if f.read() != text:
                print(f'{path} differs from tests/hpack_huffman.py: run it')
                return 1
        return 0
    with open(path, 'w') as f:
        f.write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
