# proflink — see README.md. `make` builds everything into build/, `make check` runs every test,
# `make demo` runs the main job end to end, `make bench` prints the speed ratios.
BUILD     := build
CC        ?= gcc
# The target is the compiler's, not the build host's: `make CC=aarch64-linux-gnu-gcc` builds for
# 64-bit Arm, with the binutils and the musl compiler of that target (make cross, cross.mk).
TARGET    := $(shell $(CC) -dumpmachine)
ARCH      := $(firstword $(subst -, ,$(TARGET)))
HOST_ARCH := $(shell uname -m)
ifeq ($(ARCH),$(HOST_ARCH))
MUSL_CC   := $(shell command -v musl-gcc 2>/dev/null)
OBJCOPY   ?= objcopy
else
MUSL_CC   := $(shell command -v $(ARCH)-linux-musl-gcc 2>/dev/null)
OBJCOPY   := $(shell command -v $(TARGET)-objcopy 2>/dev/null || echo objcopy)
endif

ifeq ($(ARCH),x86_64)
TLS_DIALECT := -mtls-dialect=gnu2
else ifeq ($(ARCH),aarch64)
TLS_DIALECT := -mtls-dialect=desc
# gcc's aarch64 default calls libgcc helpers for atomics that test the CPU through __getauxval:
# Debian's libgcc is glibc-built, so the musl library would keep it undefined and fail to load.
MUSL_EXTRA  := -mno-outline-atomics
else
$(error proflink supports x86_64 and aarch64 only, not $(ARCH))
endif

# The profiler finds the TLS pointer only through an R_*_TLSDESC relocation that names it, so the
# library is built global-dynamic with the TLS descriptor dialect and every symbol bound at load
# time (-z now). No -Bsymbolic, --gc-sections or `local: *` version script: each could relax or
# drop that relocation. Exports are chosen by -fvisibility=hidden plus PROFLINK_EXPORT.
#
# Hardening: stack protector and fortified libc calls, full RELRO (-z relro + -z now), a
# non-executable stack. -z nodelete: a late dlopen'ed copy must never be unmapped by dlclose,
# since thread-exit destructors (thread records) and the reader thread still point into it.
WARN      := -Wall -Wextra -Werror
HARDEN    := -fstack-protector-strong -D_FORTIFY_SOURCE=2
LIB_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) $(HARDEN) -fPIC -fvisibility=hidden \
              -ftls-model=global-dynamic $(TLS_DIALECT) -fno-strict-aliasing -fdata-sections \
              -Iinclude -Ipreload -Ihooks \
              $(EXTRA_CFLAGS)
# what a start that is not served touches is kept together (preload/leaves/start_path.h)
START_PATH_LD := preload/leaves/start_path.ld
# Pages touched: every program that loads the library pays a page fault (microseconds on a
# virtual machine) for each page of its zero-initialised data it touches at start. Each
# variable in its own section (-fdata-sections) and the sections sorted by alignment put the
# small state of every module together at the end, instead of between the large buffers.
#
# Mappings: each one the loader makes costs every start that loads the library, served or not
# (7-9 us a mapping here, measured with empty libraries side by side; docs/speed.md):
# - two segments, not the linker's four (-z noseparate-code): the headers, read-only data and
#   code share one read+execute mapping. What separate-code buys is fewer bytes an attacker who
#   already controls a jump could use as code: 40 KB here, next to the 1.4 MB of libc's code
#   in every process anyway. Writable data stays out of it, and is read-only after relocation
#   (full RELRO).
# - the zero-initialised data keeps its own anonymous mapping: stored in the file as zeros instead
#   (one mapping less), a served start took 25-30 us longer (its writes copy file pages instead
#   of taking zeroed ones) and one not served gained nothing (bench/process_start, shuffled
#   rounds).
LIB_LDFLAGS := -shared -Wl,-z,now -Wl,-z,relro -Wl,-z,noexecstack -Wl,-z,nodelete -pthread \
               -Wl,-z,noseparate-code -Wl,--sort-section=alignment -Wl,-T,$(START_PATH_LD)

# One library per libc, but either may end up in front of a program of the other libc (LD_PRELOAD
# inherited by a child, /etc/ld.so.preload): it must then load, notice (libc_check.c) and stay
# inactive. So neither may need a symbol only its own libc defines: the glibc build's fortified
# calls (__*_chk, absent from musl) are weak references (never called when inactive), and the
# musl build names no libc in DT_NEEDED (glibc's "libc.so" is a linker script; the libc is in the
# global scope of every program anyway). tests/variants.bats checks the symbol sets.
GLIBC_ONLY_WEAK := --wildcard --weaken-symbol='__*_chk'
MUSL_LIBS       := -nodefaultlibs -lgcc

# one folder per layer of the library (docs/source-layout.md), then what is interposed
LIB_SRCS  := $(sort $(wildcard preload/*/*.c) $(wildcard hooks/*.c))
SONAME    := elastic-jvmti-linux-proflink-$(ARCH).so
LIB       := $(BUILD)/$(SONAME)

MUSL_SONAME := elastic-jvmti-linux-proflink-musl-$(ARCH).so
MUSL_LIB    := $(BUILD)/musl/$(MUSL_SONAME)

TOOL_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) -Iinclude -Itools
TOOL_COMMON := $(sort $(wildcard tools/common/*.c))
AGENT_SRCS  := $(sort $(wildcard tools/agent/agent_*.c))

ALL := $(LIB) $(BUILD)/libproflink.so $(BUILD)/libproflink.a
ifneq ($(wildcard tools/inspect/proflink-inspect.c),)
ALL += $(BUILD)/proflink-inspect
endif
# the agent links the host's libunwind: built for the host's architecture only, and only when
# libunwind-dev is installed (make demo installs it)
HAVE_LIBUNWIND := $(shell $(CC) -E -include libunwind-ptrace.h -x c /dev/null >/dev/null 2>&1 && echo yes)
ifneq ($(wildcard tools/agent/proflink-agent.c),)
ifeq ($(ARCH),$(HOST_ARCH))
ifeq ($(HAVE_LIBUNWIND),yes)
ALL += $(BUILD)/proflink-agent
else
$(info proflink-agent skipped: libunwind-dev is not installed (make demo installs it))
endif
endif
endif
ifneq ($(MUSL_CC),)
ALL += $(MUSL_LIB) $(BUILD)/musl/libproflink.a
endif
# The Node.js package as a registry would serve it (npm pack): installed from the tarball, npm
# copies it into node_modules and resolves its dependency (koffi) there; installed from the
# folder it makes a symlink, and koffi resolves from this checkout only (broken in an image).
NODE_PKG := $(BUILD)/proflink-otel-$(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' integrations/node/package.json).tgz
ifneq ($(shell command -v npm 2>/dev/null),)
ALL += $(NODE_PKG)
endif

.PHONY: all check test demo bench clean install uninstall asan fuzz lint
all: $(ALL)

# the Java agent extension where a JDK and Maven are found (adds itself to all)
include integrations/java/java.mk

# Every compile writes its header dependencies next to its output (-MMD -MP; read back below),
# so an edited header rebuilds exactly what includes it, and nothing else.
DEPFLAGS  := -MMD -MP

$(BUILD)/obj/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"; $(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(LIB): $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(START_PATH_LD) Makefile
	$(CC) -r -nostdlib -o $(BUILD)/obj/proflink-all.o $(filter %.o,$^)
	$(OBJCOPY) $(GLIBC_ONLY_WEAK) $(BUILD)/obj/proflink-all.o
	$(CC) $(LIB_LDFLAGS) -Wl,-soname,$(SONAME) -o $@ $(BUILD)/obj/proflink-all.o -ldl

$(BUILD)/libproflink.so: $(LIB)
	ln -sf $(SONAME) $@

# Static variant: the same objects with the static flag set, so the constructor knows it is not a
# preload (only the OTel protocols can see a statically linked program).
$(BUILD)/static/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  CC    $<"; $(CC) $(LIB_CFLAGS) $(DEPFLAGS) -DPROFLINK_STATIC -c $< -o $@

# One relocatable object with every hidden symbol made local, so that a program's own log_msg or
# config_load cannot collide with proflink's internals; pthread_wrap.o stays a separate member,
# pulled in only by programs linked with -Wl,--wrap=pthread_create.
define static_archive
	$(1) -r -nostdlib -o $(dir $@)static/proflink-all.o $(filter-out %/pthread_wrap.o,$^)
	$(OBJCOPY) --localize-hidden $(dir $@)static/proflink-all.o
	rm -f $@ && ar rcs $@ $(dir $@)static/proflink-all.o $(filter %/pthread_wrap.o,$^)
endef

$(BUILD)/libproflink.a: $(patsubst %.c,$(BUILD)/static/%.o,$(LIB_SRCS))
	$(call static_archive,$(CC))

$(BUILD)/musl/obj/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  MUSL  $<"; $(MUSL_CC) $(LIB_CFLAGS) $(MUSL_EXTRA) $(DEPFLAGS) -c $< -o $@

$(MUSL_LIB): $(patsubst %.c,$(BUILD)/musl/obj/%.o,$(LIB_SRCS)) $(START_PATH_LD) Makefile
	$(MUSL_CC) $(LIB_LDFLAGS) -Wl,-soname,$(MUSL_SONAME) -o $@ $(filter %.o,$^) $(MUSL_LIBS)

$(BUILD)/musl/static/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  MUSL  $<"; $(MUSL_CC) $(LIB_CFLAGS) $(MUSL_EXTRA) $(DEPFLAGS) -DPROFLINK_STATIC -c $< -o $@

$(BUILD)/musl/libproflink.a: $(patsubst %.c,$(BUILD)/musl/static/%.o,$(LIB_SRCS))
	$(call static_archive,$(MUSL_CC))

# the tools include only tools/*/*.h and include/*.h (one link of several sources: listed, not -MMD)
TOOL_HDRS   := $(wildcard tools/*/*.h include/*.h)
INSPECT_SRCS := $(sort $(wildcard tools/inspect/inspect_*.c))

$(BUILD)/proflink-inspect: tools/inspect/proflink-inspect.c $(TOOL_COMMON) $(INSPECT_SRCS) $(TOOL_HDRS) | $(BUILD)
	$(CC) $(TOOL_CFLAGS) -o $@ tools/inspect/proflink-inspect.c $(TOOL_COMMON) $(INSPECT_SRCS)

$(BUILD)/proflink-agent: tools/agent/proflink-agent.c $(TOOL_COMMON) $(AGENT_SRCS) $(TOOL_HDRS) | $(BUILD)
	$(CC) $(TOOL_CFLAGS) -o $@ tools/agent/proflink-agent.c $(TOOL_COMMON) $(AGENT_SRCS) -lunwind-ptrace -lunwind-generic -lunwind

$(BUILD):
	@mkdir -p $@

$(NODE_PKG): integrations/node/package.json $(wildcard integrations/node/lib/*.js) | $(BUILD)
	@echo "  NPM   $@"; cd integrations/node && npm pack --silent --pack-destination $(abspath $(BUILD)) >/dev/null || \
	    echo "proflink-otel tarball not built: npm pack failed (the library and tools are built)" >&2

# Test helpers (C programs that know nothing of proflink, senders, readers); built with
# ASan/UBSan where they do not run under the preload itself.
include tests/helpers.mk
include tests/fixtures.mk
include tests/static.mk
include tests/fuzz.mk
include tests/asan.mk
include tests/cross.mk
include tests/cpp.mk
include bench/bench.mk
include tests/e2e/e2e.mk

# `make check` and `make demo` first install (as root) or name the packages they need.
check:
	@bash scripts/deps.sh check
	@$(MAKE) -s all test-helpers $(CHECK_EXTRA_BINS)
	$(if $(GO),,@echo "# $(E2E_SUITE): not run, Go is not installed (make e2e builds the real profiler with it)")
	bash tests/run.sh $(CHECK_SUITES)

test: check

demo:
	@bash scripts/deps.sh demo
	@$(MAKE) -s all >/dev/null
	@bash scripts/demo.sh

bench: all bench-bins
	bash bench/run.sh

# Every shell file: bats suites and their helpers (bash, no #! line), then the scripts and CI,
# each in the dialect of its #! line (.shellcheckrc says what is off and why); then the checks
# of a bats suite that errexit would ignore (`a && b` or `! cmd` before a test's last line),
# which ShellCheck does not see. Then the floors of the source tree (tests/module_layers.py): no
# include runs up, and no reference of the built objects, shared and static, weak ones included
# (tests/module_calls.py), runs up or closes a circle; and the HPACK Huffman tables are those of
# their code lengths (tests/hpack_huffman.py).
lint: $(LIB) $(BUILD)/libproflink.a
	python3 tests/module_layers.py
	python3 tests/module_calls.py $(BUILD)/obj
	python3 tests/module_calls.py $(BUILD)/static
	python3 tests/hpack_huffman.py --check
	shellcheck -x -s bash $(wildcard tests/*.bats tests/*.bash tests/e2e/*.bats)
	python3 tests/lint_bats.py $(wildcard tests/*.bats tests/e2e/*.bats)
	python3 tests/module_tests.py
	shellcheck -x $(wildcard tests/*.sh bench/*.sh scripts/*.sh packaging/deb/*.sh) scripts/proflink-run scripts/proflink-system scripts/proflink-fifo-cat .ci/run

clean:
	rm -rf $(BUILD)

# the header dependencies written by the compiles above (none before the first build); files
# only: the package stage and the test chroot hold directories named *.d (sysctl.d, rc2.d)
-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)

include scripts/install.mk
