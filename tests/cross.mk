# make cross — the whole aarch64 set, built on this machine with Debian's cross toolchain into
# build/aarch64/: both libraries, both archives, proflink-inspect, and the test programs that
# run under the library (glibc and musl); make check-cross checks it under qemu-user
# (docs/architectures.md). Needs gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user musl-dev:arm64.
CROSS_CC    ?= aarch64-linux-gnu-gcc
CROSS_BUILD := $(BUILD)/aarch64
HAVE_CROSS  := $(shell command -v $(CROSS_CC) >/dev/null && command -v qemu-aarch64 >/dev/null && echo yes)

.PHONY: cross check-cross cross-test-helpers
cross:
	@$(MAKE) --no-print-directory CC=$(CROSS_CC) BUILD=$(CROSS_BUILD) all cross-test-helpers
	@$(MAKE) --no-print-directory CC=$(CROSS_CC) BUILD=$(CROSS_BUILD)-trad \
	    EXTRA_CFLAGS=-mtls-dialect=trad $(CROSS_BUILD)-trad/elastic-jvmti-linux-proflink-aarch64.so

# ($(CROSS_BUILD)-trad: the library built with the dialect the reader cannot use, which
#  tests/cross.bats must see fail)
# in a cross build, only the programs that run under the library (plain, no sanitizer runtime
# of the target is installed here); senders, readers and unit drivers stay the host's
cross-test-helpers: $(filter $(BUILD)/tests/target_% $(BUILD)/tests/api_%,$(HELPER_BINS)) \
                    $(if $(MUSL_CC),$(MUSL_TARGETS))

# the host program that runs the target's programs under qemu-user (tests/fixtures/qemu_exec.c)
$(BUILD)/tests/fixtures/qemu_exec: tests/fixtures/qemu_exec.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror -static -o $@ $<

# make check runs the aarch64 variants too wherever the toolchain is installed
ifeq ($(HAVE_CROSS),yes)
ifeq ($(ARCH),$(HOST_ARCH))
test-helpers: $(BUILD)/tests/fixtures/qemu_exec
check: cross
endif
endif

check-cross: all test-helpers $(BUILD)/tests/fixtures/qemu_exec cross
	PROFLINK_TEST_VARIANTS=aarch64-glibc,aarch64-musl bash tests/run.sh tests/cross.bats \
	    tests/messages.bats tests/fifo.bats tests/deferral.bats
