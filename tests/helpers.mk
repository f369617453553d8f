# Test helpers: every tests/helpers/NAME.c becomes build/tests/NAME. They are ordinary programs
# that know nothing of proflink unless their name starts with api_ (those call the API through
# dlsym or link -lproflink). Built with ASan/UBSan unless they run under the preload (ASan must
# be the first preloaded object, so those are built plain): names in HELPERS_PLAIN.
HELPER_SRCS   := $(sort $(wildcard tests/helpers/*.c))
HELPER_BINS   := $(patsubst tests/helpers/%.c,$(BUILD)/tests/%,$(HELPER_SRCS))
HELPER_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -Ipreload -pthread
SANITIZE      := -fsanitize=address,undefined -fno-omit-frame-pointer

.PHONY: test-helpers
test-helpers: $(HELPER_BINS)

# Helpers that run as the target of a preload test are built without sanitizers (see above);
# the others (senders, readers, unit drivers) with them.
# Plain helpers: the targets of preload tests, and the seccomp wrappers (the sanitizer runtime's
# own system calls would meet the filter it installs).
HELPERS_PLAIN := target_% api_% fail_syscall seccomp_exec

# -MMD: a helper that #includes library sources is rebuilt when any of them changes
$(BUILD)/tests/%: tests/helpers/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) $(HELPER_CFLAGS) $(DEPFLAGS) -MF $@.d $(if $(filter $(HELPERS_PLAIN),$*),,$(SANITIZE)) \
	    -o $@ $< $(HELPER_LIBS_$*) -ldl

# The same target programs linked against musl, for the musl variant of the behavioural suites
# (and the OTel process-context driver, which runs the publisher in-process).
MUSL_TARGETS := $(patsubst tests/helpers/%.c,$(BUILD)/tests/musl/%,$(filter tests/helpers/target_% tests/helpers/api_% tests/helpers/otel_ctx_driver.c,$(HELPER_SRCS)))
ifneq ($(MUSL_CC),)
test-helpers: $(MUSL_TARGETS)
endif

$(BUILD)/tests/musl/%: tests/helpers/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(HELPER_CFLAGS) $(MUSL_EXTRA) $(DEPFLAGS) -MF $@.d -o $@ $< $(HELPER_LIBS_$*)

# An exec target no preload can enter.
HELPER_LIBS_target_static_true := -static

# The HPACK decoder's reference, libnghttp2 (libnghttp2-dev, tests only): without it the
# helper says so and exits 77, and its suite skips.
ifeq ($(shell pkg-config --exists libnghttp2 2>/dev/null && echo yes),yes)
HELPER_LIBS_unit_hpack := -lnghttp2
else
HELPER_LIBS_unit_hpack := -DPROFLINK_NO_NGHTTP2
endif
HELPER_LIBS_unit_h2 := $(HELPER_LIBS_unit_hpack)
