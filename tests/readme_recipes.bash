# readme_recipes.bash — the README's recipes, taken from its text so that a test runs exactly
# what a reader copies. Variables set here are used by the suites that load this file.
# shellcheck shell=bash

# readme_block HEADING N — the Nth (1-based) ```sh block under the README heading that starts
# with HEADING (up to the next heading of the same or a higher level), as it is written.
readme_block() {
    awk -v h="$1" -v n="$2" '
        /^#+ / { if (inside && length($1) <= level) exit
                 if (index($0, h) == length($1) + 2) { inside = 1; level = length($1); next } }
        inside && /^```sh$/ { k++; if (k == n) { grab = 1; next } }
        grab && /^```$/ { exit }
        grab { print }' "$ROOT/README.md"
}
