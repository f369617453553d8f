# make e2e — the real OpenTelemetry eBPF profiler reads proflink, end to end (tests/e2e/profiler.bats).
#
# The profiler is built from the Go module proxy at the version tests/e2e/go.mod pins (go.sum pins
# every module), once per version: build/e2e/ebpf-profiler-<version> stays until `make clean`.
# Its eBPF objects are committed in the module: no clang. Also built here: the OTLP receiver
# (tests/e2e/receiver), the memlock wrapper the profiler needs where root lacks CAP_SYS_RESOURCE,
# and the suite's C programs (also for musl).
#
# Go is looked up on PATH, then in /usr/local/go (where the official tarball puts it). The module
# proxy only (go.opentelemetry.io is a vanity path that `direct` would have to resolve through
# the web), modules read-only (a build that needs anything go.sum does not pin fails), and the
# local toolchain (no download of another one).
GO          ?= $(or $(shell command -v go 2>/dev/null),$(wildcard /usr/local/go/bin/go))
E2E_GOENV   := GOPROXY=https://proxy.golang.org GOFLAGS=-mod=readonly GOTOOLCHAIN=local
E2E_PROFILER_VERSION := $(shell sed -n 's/^[[:space:]]*go\.opentelemetry\.io\/ebpf-profiler \(v[^ ]*\).*/\1/p' tests/e2e/go.mod)
E2E_PROFILER := $(BUILD)/e2e/ebpf-profiler-$(E2E_PROFILER_VERSION)
E2E_C_BINS   := $(BUILD)/e2e/memlock_exec $(BUILD)/e2e/switcher $(BUILD)/e2e/spinner
E2E_BINS     := $(E2E_PROFILER) $(BUILD)/e2e/receiver $(E2E_C_BINS) $(BUILD)/e2e/slow_start.so \
                $(BUILD)/e2e/stats_probe.so
ifneq ($(MUSL_CC),)
E2E_BINS     += $(BUILD)/e2e/musl/spinner $(BUILD)/e2e/musl/stats_probe.so
endif
E2E_SUITE    := tests/e2e/profiler.bats

.PHONY: e2e e2e-bins e2e-go
e2e-go:
	@[ -n "$(GO)" ] || { echo "make e2e needs Go (1.25 or later) to build the profiler: https://go.dev/dl/" >&2; exit 1; }

e2e-bins: $(E2E_BINS)

$(E2E_PROFILER): tests/e2e/go.mod tests/e2e/go.sum | e2e-go $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  GO    go.opentelemetry.io/ebpf-profiler@$(E2E_PROFILER_VERSION) (module download and build: minutes, once)"
	cd tests/e2e && $(E2E_GOENV) $(GO) build -o $(abspath $@).tmp go.opentelemetry.io/ebpf-profiler
	mv $@.tmp $@

$(BUILD)/e2e/receiver: tests/e2e/receiver/main.go tests/e2e/go.mod tests/e2e/go.sum | e2e-go $(BUILD)
	@mkdir -p $(dir $@)
	cd tests/e2e && $(E2E_GOENV) $(GO) build -o $(abspath $@) ./receiver

$(BUILD)/e2e/%: tests/e2e/%.c include/proflink.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -Iinclude -pthread -o $@ $< -ldl

$(BUILD)/e2e/%.so: tests/e2e/%.c include/proflink.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) -Iinclude -shared -fPIC -pthread -o $@ $< -ldl

# no libc in DT_NEEDED (as the musl library, MUSL_LIBS): proflink-run, a glibc shell, inherits
# the LD_PRELOAD that names it and must be able to load it (it finds no proflink there, does nothing)
$(BUILD)/e2e/musl/stats_probe.so: tests/e2e/stats_probe.c include/proflink.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) $(MUSL_EXTRA) -Iinclude -shared -fPIC -o $@ $< $(MUSL_LIBS)

$(BUILD)/e2e/musl/spinner: tests/e2e/spinner.c | $(BUILD)
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -D_GNU_SOURCE -O1 -g $(WARN) $(MUSL_EXTRA) -pthread -o $@ $<

# the suite's figures (samples, linked, per trace; datagrams) are printed after the run
e2e: all test-helpers e2e-bins
	@rm -f $(BUILD)/e2e/figures.txt
	@bash tests/run.sh $(E2E_SUITE); rc=$$?; cat $(BUILD)/e2e/figures.txt 2>/dev/null; exit $$rc

# `make check` runs the suite too wherever Go is found (CI always: .ci/run builds e2e-bins)
ifneq ($(GO),)
CHECK_EXTRA_BINS := e2e-bins
CHECK_SUITES     := tests/*.bats $(E2E_SUITE)
else
CHECK_EXTRA_BINS :=
CHECK_SUITES     :=
endif
