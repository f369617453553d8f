# make fuzz — fuzzes the datagram parser, the JSON records and the id table
# (tests/fuzz/fuzz_messages.c), then the OTel thread record's attribute writer
# (tests/fuzz/fuzz_attrs.c), for FUZZ_TIME seconds each. With clang's libFuzzer when it works
# here, else with a standalone driver that feeds a seeded random corpus (ASan/UBSan both ways).
FUZZ_CC     ?= clang
FUZZ_TIME   ?= 20
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -Ipreload \
               -fno-omit-frame-pointer
FUZZ_DEPS   := tests/fuzz/fuzz_messages.c preload/accum.c preload/accum.h preload/base64url.c \
               preload/base64url.h preload/json.c preload/json.h preload/messages.c \
               preload/messages.h preload/records.c preload/records.h include/proflink.h \
               tests/fuzz/fuzz_attrs.c preload/otel_attrs.c preload/otel_attrs.h

# fuzz_one NAME MAX_LEN STANDALONE_RUNS_PER_SECOND — one target, libFuzzer when the probe built.
define fuzz_one
	@mkdir -p $(BUILD)/fuzz/corpus_$(1)
	@if test -x $(BUILD)/fuzz/probe; then \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/$(1) tests/fuzz/$(1).c && \
	  { $(BUILD)/fuzz/$(1) -max_total_time=$(FUZZ_TIME) -max_len=$(2) \
	    $(BUILD)/fuzz/corpus_$(1) >$(BUILD)/fuzz/log_$(1) 2>&1; rc=$$?; \
	    grep -E '^(Done|==|SUMMARY|$(1))' $(BUILD)/fuzz/log_$(1); \
	    test $$rc -eq 0 || { tail -40 $(BUILD)/fuzz/log_$(1); exit 1; }; }; \
	else \
	  $(CC) $(FUZZ_CFLAGS) -DFUZZ_STANDALONE -fsanitize=address,undefined \
	    -o $(BUILD)/fuzz/$(1) tests/fuzz/$(1).c && \
	  $(BUILD)/fuzz/$(1) -runs=$$(( $(FUZZ_TIME) * $(3) )); \
	fi
endef

.PHONY: fuzz
fuzz: $(FUZZ_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz
	@rm -f $(BUILD)/fuzz/probe
	@if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	    | $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz/probe 2>/dev/null; then \
	  echo "fuzz: libFuzzer ($(FUZZ_CC)), $(FUZZ_TIME) s per target"; \
	else \
	  echo "fuzz: libFuzzer unavailable with $(FUZZ_CC); standalone random drivers"; \
	fi
	$(call fuzz_one,fuzz_messages,1200,100000)
	$(call fuzz_one,fuzz_attrs,4096,5000)
