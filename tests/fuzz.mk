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

.PHONY: fuzz
fuzz: $(FUZZ_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/corpus
	@if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	    | $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz/probe 2>/dev/null; then \
	  echo "fuzz: libFuzzer ($(FUZZ_CC)), $(FUZZ_TIME) s"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/fuzz_messages tests/fuzz/fuzz_messages.c && \
	  { $(BUILD)/fuzz/fuzz_messages -max_total_time=$(FUZZ_TIME) -max_len=1200 \
	    $(BUILD)/fuzz/corpus >$(BUILD)/fuzz/log 2>&1; rc=$$?; \
	    grep -E '^(Done|==|SUMMARY|fuzz_messages)' $(BUILD)/fuzz/log; \
	    test $$rc -eq 0 || { tail -40 $(BUILD)/fuzz/log; exit 1; }; }; \
	else \
	  echo "fuzz: libFuzzer unavailable with $(FUZZ_CC); standalone random driver"; \
	  $(CC) $(FUZZ_CFLAGS) -DFUZZ_STANDALONE -fsanitize=address,undefined \
	    -o $(BUILD)/fuzz/fuzz_messages tests/fuzz/fuzz_messages.c && \
	  $(BUILD)/fuzz/fuzz_messages -runs=$$(( $(FUZZ_TIME) * 100000 )); \
	fi
	@mkdir -p $(BUILD)/fuzz/corpus_attrs
	@if test -x $(BUILD)/fuzz/probe; then \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/fuzz_attrs tests/fuzz/fuzz_attrs.c && \
	  { $(BUILD)/fuzz/fuzz_attrs -max_total_time=$(FUZZ_TIME) -max_len=4096 \
	    $(BUILD)/fuzz/corpus_attrs >$(BUILD)/fuzz/log_attrs 2>&1; rc=$$?; \
	    grep -E '^(Done|==|SUMMARY|fuzz_attrs)' $(BUILD)/fuzz/log_attrs; \
	    test $$rc -eq 0 || { tail -40 $(BUILD)/fuzz/log_attrs; exit 1; }; }; \
	else \
	  $(CC) $(FUZZ_CFLAGS) -DFUZZ_STANDALONE -fsanitize=address,undefined \
	    -o $(BUILD)/fuzz/fuzz_attrs tests/fuzz/fuzz_attrs.c && \
	  $(BUILD)/fuzz/fuzz_attrs -runs=$$(( $(FUZZ_TIME) * 5000 )); \
	fi
