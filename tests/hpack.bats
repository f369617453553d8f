#!/usr/bin/env bats
# The HPACK decoder of HTTP/2 header blocks (preload/http/hpack.c) against libnghttp2's inflater,
# the reference (tests/helpers/unit_hpack.c, tests/helpers/hpack_compare.h): blocks of two
# encoders decode to the same fields, and changed blocks are never decoded otherwise.
load helpers

# unit_hpack ARGS… — runs the driver; skips where libnghttp2-dev is missing (exit 77)
unit_hpack() {
    run "$ROOT/build/tests/unit_hpack" "$@"
    echo "$output"
    [ "$status" -ne 77 ] || skip "$output"
}

@test "hpack: libnghttp2's blocks (dynamic table, size updates, never-indexed) decode alike" {
    unit_hpack random 4947 4000
    [ "$status" -eq 0 ]
    [ "$output" = "4000 same, 0 refused by both, 0 refused by proflink only" ]
}

@test "hpack: changed or cut blocks are refused, or decoded exactly as the reference does" {
    unit_hpack corrupt 7541 20000
    [ "$status" -eq 0 ]
    [[ "$output" == *" same, "*" refused by both, "* ]]
}

@test "hpack: a second encoder's Huffman-coded blocks, every byte value, decode alike" {
    [ -x "$ROOT/build/pyenv/bin/python" ] || skip "the virtualenv build/pyenv is missing: run integrations/python/venv.sh"
    "$ROOT/build/pyenv/bin/python" -c 'import hpack' 2>/dev/null ||
        skip "the hpack package is not in build/pyenv: run integrations/python/venv.sh"
    "$ROOT/build/pyenv/bin/python" "$ROOT/tests/hpack_vectors.py" "$BATS_TEST_TMPDIR/blocks"
    unit_hpack blocks "$BATS_TEST_TMPDIR/blocks"
    [ "$status" -eq 0 ]
    [ "$output" = "400 same" ]
}

@test "hpack: the Huffman tables are those of the code lengths of RFC 7541 (tests/hpack_huffman.py)" {
    run "$PY" "$ROOT/tests/hpack_huffman.py" --check
    echo "$output"
    [ "$status" -eq 0 ]
}
