#!/usr/bin/env bash
# Process start with proflink loaded, against bare, in one run (called by bench/run.sh):
# fork+exec+wait of /bin/true under each environment, rounds in shuffled order, each figure the
# median over the rounds of (its start - bare's start in the same round). Then what stays
# steady on a noisy machine: instructions (callgrind, ld.so and library included), page faults
# (perf stat) and system calls (strace -c) of one start.
# usage: bench/process_start.sh LIB [BASE_LIB]   (BASE_LIB: the same figures for another build)
set -eu
cd "$(dirname "$0")/.."
B=build/bench
LIB=$1 BASE_LIB=${2:-}
ROUNDS=${BENCH_START_ROUNDS:-300}
val() { sed -n "s/^$1 //p"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

# The floor: any preloaded library, even an empty one, costs its open, mappings and loader work.
echo 'int proflink_bench_empty;' | ${CC:-gcc} -shared -fPIC -x c - -o $B/libempty.so
# Socket directories on the build's file system: an empty one, and one crowded with 100,000
# look-alike names (half regular files, half another user's sockets, dead pids), as another
# user can make in a shared /tmp.
empty=$PWD/$B/sockdir-empty crowded=$PWD/$B/sockdir-crowded
rm -rf "$empty" && mkdir -p "$empty"
if [ "$(find "$crowded" -maxdepth 1 -name 'proflink-*' 2>/dev/null | wc -l)" != 100000 ]; then
    rm -rf "$crowded" && mkdir -p "$crowded"
    python3 - "$crowded" <<'EOF'
import os, random, stat, sys
d, rng = sys.argv[1], random.Random(26)
for i in range(100000):
    p = "%s/proflink-%d-%08x.sock" % (d, rng.randrange(2, 4194304), rng.getrandbits(32))
    if i % 2:
        os.mknod(p, stat.S_IFSOCK | 0o600)
        os.chown(p, 65534, 65534)
    else:
        os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600))
EOF
fi

envs=(-- bare -- empty "LD_PRELOAD=$PWD/$B/libempty.so"
      -- unselected "LD_PRELOAD=$LIB" PROFLINK_INCLUDE=/nothing/matches
      -- disabled "LD_PRELOAD=$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false
      -- served "LD_PRELOAD=$LIB" "TMPDIR=$empty"
      -- crowded "LD_PRELOAD=$LIB" "TMPDIR=$crowded")
if [ -n "$BASE_LIB" ]; then
    envs+=(-- base_unselected "LD_PRELOAD=$BASE_LIB" PROFLINK_INCLUDE=/nothing/matches
           -- base_disabled "LD_PRELOAD=$BASE_LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false
           -- base_served "LD_PRELOAD=$BASE_LIB" "TMPDIR=$empty"
           -- base_crowded "LD_PRELOAD=$BASE_LIB" "TMPDIR=$crowded")
fi
echo "== process start of /bin/true (fork+exec+wait, $ROUNDS rounds in shuffled order; added = median of per-round differences to bare) =="
out=$(PROFLINK_LOG=off $B/process_start "$ROUNDS" /bin/true "${envs[@]}")
bare=$(echo "$out" | val bare_us)
add() { echo "$out" | val "$1_added_us"; }
echo "bare:                                           ${bare} us"
echo "an empty library preloaded (floor of any preload): +$(add empty) us"
echo "not served (PROFLINK_INCLUDE does not match):   +$(add unselected) us   (target <= +30)"
echo "not served (ENABLED=false):                     +$(add disabled) us   (target <= +30)"
echo "served (socket, storage, OTel context, records): +$(add served) us   (target <= +100)"
se=$((bare + $(add served))) sc=$((bare + $(add crowded)))
echo "served, 100,000 look-alikes in the socket dir:  +$(add crowded) us   start $(ratio "$sc" "$se")x the empty dir's (target <= 1.2)"
if [ -n "$BASE_LIB" ]; then
    be=$((bare + $(add base_served))) bc=$((bare + $(add base_crowded)))
    echo "BENCH_BASE: not served +$(add base_unselected) us (ENABLED=false +$(add base_disabled) us), served +$(add base_served) us, crowded +$(add base_crowded) us (start $(ratio "$bc" "$be")x)"
fi
# The other C library's program: the glibc build preloaded into a musl program (an inherited
# LD_PRELOAD) stays inactive after one check that makes no system call.
if command -v musl-gcc >/dev/null; then
    echo 'int main(void) { return 0; }' | musl-gcc -O2 -x c - -o $B/true-musl
    envs=(-- bare -- other_libc "LD_PRELOAD=$LIB")
    [ -z "$BASE_LIB" ] || envs+=(-- base_other_libc "LD_PRELOAD=$BASE_LIB")
    out=$($B/process_start "$ROUNDS" $B/true-musl "${envs[@]}" 2>/dev/null)
    echo "not served (a musl program):                    +$(add other_libc) us   (target <= +30; its bare start: $(echo "$out" | val bare_us) us)${BASE_LIB:+   BENCH_BASE: +$(add base_other_libc) us}"
fi
# What the socket file costs here: bind creates an inode, whose price is the file system's.
ctime=$(python3 - "$empty" /tmp <<'EOF'
import os, sys, time
out = []
for d in sys.argv[1:]:
    t = []
    for i in range(100):
        p = "%s/bench-create-%d-%d" % (d, os.getpid(), i)
        t0 = time.perf_counter(); os.close(os.open(p, os.O_CREAT | os.O_WRONLY, 0o600)); t.append(time.perf_counter() - t0)
        os.unlink(p)
    out.append("%s %.0f us" % (d, sorted(t)[50] * 1e6))
print(", ".join(out))
EOF
)
echo "creating one file (what bind pays for the socket's inode): $ctime"

# The tools below run /bin/true under the same environment: PROFLINK_INCLUDE keeps proflink
# from serving the tool itself (its socket would sit in the directory the start sweeps).
# Under valgrind /proc/self/exe is valgrind's tool, hence the second glob.
SERVE_TRUE='PROFLINK_INCLUDE=/usr/bin/true,/bin/true,/usr/libexec/valgrind/*'
rm -f "$empty"/proflink-*
if command -v valgrind >/dev/null; then
    echo "== one start of /bin/true, instructions (callgrind: the loader, libc and proflink together) =="
    cg() { # NAME ENV...
        local name=$1 n
        shift
        n=$(env "$@" PROFLINK_LOG=off valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2>&1 |
            sed -n 's/.*Collected : //p')
        echo "$name $n"
    }
    ir=$(cg bare
         cg empty "LD_PRELOAD=$PWD/$B/libempty.so"
         cg unselected "LD_PRELOAD=$LIB" PROFLINK_INCLUDE=/nothing/matches
         cg served "LD_PRELOAD=$LIB" "TMPDIR=$empty" "$SERVE_TRUE"
         if [ -n "$BASE_LIB" ]; then
             cg base_unselected "LD_PRELOAD=$BASE_LIB" PROFLINK_INCLUDE=/nothing/matches
             cg base_served "LD_PRELOAD=$BASE_LIB" "TMPDIR=$empty" "$SERVE_TRUE"
         fi)
    i0=$(echo "$ir" | val bare)
    echo "$ir" | while read -r name n; do
        [ "$name" = bare ] && { echo "bare: $n"; continue; }
        echo "$name: $n (+$((n - i0)))"
    done
fi
if command -v perf >/dev/null && perf stat -e page-faults true >/dev/null 2>&1; then
    echo "== page faults of one start (perf stat, mean of 200) =="
    pf() {
        env "$@" PROFLINK_LOG=off perf stat -x, -r 200 -e page-faults /bin/true 2>&1 >/dev/null | cut -d, -f1
    }
    echo "bare $(pf)  empty $(pf "LD_PRELOAD=$PWD/$B/libempty.so")  not served $(pf "LD_PRELOAD=$LIB" PROFLINK_INCLUDE=/nothing/matches)  served $(pf "LD_PRELOAD=$LIB" "TMPDIR=$empty" "$SERVE_TRUE")${BASE_LIB:+  BENCH_BASE: not served $(pf "LD_PRELOAD=$BASE_LIB" PROFLINK_INCLUDE=/nothing/matches) served $(pf "LD_PRELOAD=$BASE_LIB" "TMPDIR=$empty" "$SERVE_TRUE")}"
fi
if command -v strace >/dev/null; then
    echo "== system calls of one start once the loader is done (strace, from its munmap of the library cache on) =="
    calls() {
        env "$@" PROFLINK_LOG=off strace -qq -o "$B/strace.out" /bin/true
        # what runs after the loader: from libc's prlimit64/munmap of the cache on
        local list
        list=$(sed -n '/^munmap(/,$p' "$B/strace.out" | grep -v '^exit_group\|^+++' | sed 's/(.*//')
        echo "$(echo "$list" | wc -l) calls: $(echo "$list" | tr '\n' ' ')"
    }
    echo "not served:  $(calls "LD_PRELOAD=$LIB" PROFLINK_INCLUDE=/nothing/matches)"
    echo "disabled:    $(calls "LD_PRELOAD=$LIB" ELASTIC_OTEL_UNIVERSAL_PROFILING_INTEGRATION_ENABLED=false)"
    echo "served:      $(calls "LD_PRELOAD=$LIB" "TMPDIR=$empty" "$SERVE_TRUE")"
    echo "crowded:     $(calls "LD_PRELOAD=$LIB" "TMPDIR=$crowded" "$SERVE_TRUE")"
    if [ -n "$BASE_LIB" ]; then
        echo "BENCH_BASE not served: $(calls "LD_PRELOAD=$BASE_LIB" PROFLINK_INCLUDE=/nothing/matches)"
        echo "BENCH_BASE served:     $(calls "LD_PRELOAD=$BASE_LIB" "TMPDIR=$empty" "$SERVE_TRUE" | cut -d: -f1)"
        echo "BENCH_BASE crowded:    $(calls "LD_PRELOAD=$BASE_LIB" "TMPDIR=$crowded" "$SERVE_TRUE" | cut -d: -f1)"
    fi
fi
