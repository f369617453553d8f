# make fuzz — fuzzes the datagram parser, the JSON records and the id table
# (tests/fuzz/fuzz_messages.c) for FUZZ_TIME seconds. With clang's libFuzzer when it works
# here, else with a standalone driver that feeds a seeded random corpus (ASan/UBSan both ways).
FUZZ_CC     ?= clang
FUZZ_TIME   ?= 20
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -Ipreload \
               -fno-omit-frame-pointer
FUZZ_DEPS   := tests/fuzz/fuzz_messages.c preload/accum.c preload/accum.h preload/base64url.c \
               preload/base64url.h preload/json.c preload/json.h preload/messages.c \
               preload/messages.h preload/records.c preload/records.h include/proflink.h

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

# The HTTP request scanner (tests/fuzz/fuzz_http_scan.c), the same way, after the parser.
FUZZ_HTTP_DEPS := tests/fuzz/fuzz_http_scan.c tests/fuzz/http_scan_seed preload/http_scan.c \
                  preload/http_scan.h preload/ids.c preload/ids.h
.PHONY: fuzz-http
fuzz: fuzz-http
fuzz-http: $(FUZZ_HTTP_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/http_corpus && cp tests/fuzz/http_scan_seed $(BUILD)/fuzz/http_corpus/
	@if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	    | $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz/probe 2>/dev/null; then \
	  echo "fuzz-http: libFuzzer ($(FUZZ_CC)), $(FUZZ_TIME) s"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/fuzz_http_scan tests/fuzz/fuzz_http_scan.c && \
	  { $(BUILD)/fuzz/fuzz_http_scan -max_total_time=$(FUZZ_TIME) -max_len=12000 \
	    $(BUILD)/fuzz/http_corpus >$(BUILD)/fuzz/http_log 2>&1; rc=$$?; \
	    grep -E '^(Done|==|SUMMARY|fuzz_http_scan)' $(BUILD)/fuzz/http_log; \
	    test $$rc -eq 0 || { tail -40 $(BUILD)/fuzz/http_log; exit 1; }; }; \
	else \
	  echo "fuzz-http: libFuzzer unavailable with $(FUZZ_CC); standalone random driver"; \
	  $(CC) $(FUZZ_CFLAGS) -DFUZZ_STANDALONE -fsanitize=address,undefined \
	    -o $(BUILD)/fuzz/fuzz_http_scan tests/fuzz/fuzz_http_scan.c && \
	  $(BUILD)/fuzz/fuzz_http_scan -runs=$$(( $(FUZZ_TIME) * 20000 )); \
	fi
