# Benchmarks: bench/NAME.c → build/bench/NAME (optimised, no sanitizers).
BENCH_SRCS := $(sort $(wildcard bench/*.c))
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
.PHONY: bench-bins
bench-bins: $(BENCH_BINS)
$(BUILD)/bench/%: bench/%.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror -Iinclude -pthread -o $@ $< -ldl
