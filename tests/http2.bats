#!/usr/bin/env bats
# HTTP/2 reading against libnghttp2, the reference: the HPACK decoder of header blocks
# (preload/http/hpack.c; tests/helpers/unit_hpack.c, hpack_compare.h): blocks of two encoders
# decode to the same fields, and changed blocks are never decoded otherwise; the frame reader
# (preload/http/h2_frames.c; tests/helpers/unit_h2.c) on real sessions' bytes.
# modules: preload/http/hpack.c preload/http/h2_frames.c
load helpers

# unit DRIVER ARGS… — runs build/tests/DRIVER; skips where libnghttp2-dev is missing (exit 77)
unit() {
    run "$ROOT/build/tests/$1" "${@:2}"
    echo "$output"
    [ "$status" -ne 77 ] || skip "$output"
}

@test "hpack: libnghttp2's blocks (dynamic table, size updates, never-indexed) decode alike" {
    unit unit_hpack random 4947 4000
    [ "$status" -eq 0 ]
    [ "$output" = "4000 same, 0 refused by both, 0 refused by proflink only" ]
}

@test "hpack: changed or cut blocks are refused, or decoded exactly as the reference does" {
    unit unit_hpack corrupt 7541 20000
    [ "$status" -eq 0 ]
    [[ "$output" == *" same, "*" refused by both, "* ]]
}

@test "hpack: a second encoder's Huffman-coded blocks, every byte value, decode alike" {
    [ -x "$ROOT/build/pyenv/bin/python" ] || skip "the virtualenv build/pyenv is missing: run integrations/python/venv.sh"
    "$ROOT/build/pyenv/bin/python" -c 'import hpack' 2>/dev/null ||
        skip "the hpack package is not in build/pyenv: run integrations/python/venv.sh"
    "$ROOT/build/pyenv/bin/python" "$ROOT/tests/hpack_vectors.py" "$BATS_TEST_TMPDIR/blocks"
    unit unit_hpack blocks "$BATS_TEST_TMPDIR/blocks"
    [ "$status" -eq 0 ]
    [ "$output" = "400 same" ]
}

@test "hpack: the Huffman tables are those of the code lengths of RFC 7541 (tests/hpack_huffman.py)" {
    run "$PY" "$ROOT/tests/hpack_huffman.py" --check
    echo "$output"
    [ "$status" -eq 0 ]
}

@test "h2 frames: real sessions cut anywhere: every request once with its traceparent, every response end and reset" {
    unit unit_h2 sessions 4719 120
    [ "$status" -eq 0 ]
    [[ "$output" == *" requests, "*" response ends, "*" resets, 0 differences" ]]
}

@test "h2 frames: a header block across HEADERS (padded or not) and CONTINUATION frames; a CONTINUATION out of place fails the reader" {
    unit unit_h2 continuation 4947 300
    [ "$status" -eq 0 ]
    [ "$output" = "1200 requests, 0 differences" ]
}
