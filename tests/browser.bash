# browser.bash — a real browser for the tests that check what a user would see: Debian's
# Chromium, headless. Only the suites that load this file need it, so it is installed here, when
# missing, rather than by .ci/run for every run.
# shellcheck shell=bash

# chromium_or_skip — Chromium, installed when missing (root, apt reachable); else the test is
# skipped with the reason.
chromium_or_skip() {
    command -v chromium >/dev/null && return 0
    [ "$(id -u)" = 0 ] || skip "chromium is not installed (apt-get install chromium, as root)"
    DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq chromium >/dev/null 2>&1 ||
        { timeout 300 apt-get update -qq >/dev/null 2>&1 &&
            DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq chromium >/dev/null 2>&1; } ||
        skip "chromium is not installed and apt-get install chromium failed"
}

# screenshot_svg SVG PNG — PNG is what a browser window as wide as the graph shows of SVG.
screenshot_svg() {
    local height
    height=$(sed -n 's/.*<svg [^>]* height="\([0-9]*\)".*/\1/p' "$1")
    (cd "$(dirname "$2")" && timeout 60 chromium --headless --no-sandbox --disable-gpu \
        --hide-scrollbars --window-size=1200,"${height:-800}" --screenshot="$2" \
        "file://$1" >/dev/null 2>&1)
    [ -s "$2" ]
}

# flame_on_screen PNG — the screenshot shows a flame graph: the trace, process and transaction
# frames (their colours, tools/agent/agent_flame.c) span the width, each over 1000 x 14 pixels, and
# the stacks and text add many more colours.
flame_on_screen() {
    local out c
    out=$("$PY" "$ROOT/tests/png_pixels.py" "$1" 150,170,200 130,200,150 190,160,220)
    echo "$out"
    for c in 150,170,200 130,200,150 190,160,220; do
        [ "$(sed -n "s/^rgb($c)=//p" <<<"$out")" -gt 14000 ] || return 1
    done
    [ "$(sed -n 's/.* colours=//p' <<<"$out")" -gt 20 ]
}

# zoomed_width SVG NAME — in the browser, clicks the first frame named NAME of the flame graph
# SVG (inline in a page, so its own script runs as when the file is opened) and prints that
# frame's width afterwards, then "hidden=N", the frames the zoom hid.
zoomed_width() {
    local page
    page=$(dirname "$1")/zoom-test.html
    {
        echo '<!DOCTYPE html><html><body>'
        sed 1d "$1" # without the XML declaration
        cat <<JS
<script>
var g = [...document.querySelectorAll('g.f')].find(e => e.dataset.n === '$2');
g.dispatchEvent(new MouseEvent('click', {bubbles: true}));
var hidden = [...document.querySelectorAll('g.f')].filter(e => e.style.display === 'none').length;
document.title = 'zoomed ' + g.querySelector('rect').getAttribute('width') + ' hidden=' + hidden;
</script></body></html>
JS
    } >"$page"
    timeout 60 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$page" 2>/dev/null |
        sed -n 's/.*<title>zoomed \([^<]*\)<\/title>.*/\1/p'
}
