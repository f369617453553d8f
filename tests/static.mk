# Statically linked test programs (tests/static/NAME.c), linked with the static archives the way
# users do: `cc -static prog.c libproflink.a -pthread`, and once more with
# -Wl,--wrap=pthread_create (the optional link flag that gives eager thread records).
#   build/tests/static/NAME, NAME-wrap          glibc
#   build/tests/static/musl/NAME, NAME-wrap     musl (when musl-gcc is installed)
STATIC_SRCS   := $(sort $(wildcard tests/static/*.c))
STATIC_NAMES  := $(patsubst tests/static/%.c,%,$(STATIC_SRCS))
STATIC_BINS   := $(foreach n,$(STATIC_NAMES),$(BUILD)/tests/static/$(n) $(BUILD)/tests/static/$(n)-wrap)
STATIC_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -pthread -static
STATIC_WRAP   := -Wl,--wrap=pthread_create

.PHONY: test-static-helpers
test-helpers: test-static-helpers
test-static-helpers: $(STATIC_BINS)

$(BUILD)/tests/static/%-wrap: tests/static/%.c $(BUILD)/libproflink.a include/proflink.h
	@mkdir -p $(dir $@)
	$(CC) $(STATIC_CFLAGS) -o $@ $< $(BUILD)/libproflink.a $(STATIC_WRAP)

$(BUILD)/tests/static/%: tests/static/%.c $(BUILD)/libproflink.a include/proflink.h
	@mkdir -p $(dir $@)
	$(CC) $(STATIC_CFLAGS) -o $@ $< $(BUILD)/libproflink.a

ifneq ($(MUSL_CC),)
STATIC_MUSL_BINS := $(foreach n,$(STATIC_NAMES),$(BUILD)/tests/static/musl/$(n) $(BUILD)/tests/static/musl/$(n)-wrap)
test-static-helpers: $(STATIC_MUSL_BINS)

$(BUILD)/tests/static/musl/%-wrap: tests/static/%.c $(BUILD)/musl/libproflink.a include/proflink.h
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(STATIC_CFLAGS) -o $@ $< $(BUILD)/musl/libproflink.a $(STATIC_WRAP)

$(BUILD)/tests/static/musl/%: tests/static/%.c $(BUILD)/musl/libproflink.a include/proflink.h
	@mkdir -p $(dir $@)
	$(MUSL_CC) $(STATIC_CFLAGS) -o $@ $< $(BUILD)/musl/libproflink.a
endif
