# make fuzz — fuzzes the datagram parser, the JSON records and the id table
# (tests/fuzz/fuzz_messages.c), the OTel thread record's attribute writer (tests/fuzz/fuzz_attrs.c),
# then the HTTP request and response scanner (tests/fuzz/fuzz_http_scan.c, fuzz_http_resp.c) and the OpenTelemetry process context's
# payload encoder (tests/fuzz/fuzz_otel_payload.c), each for FUZZ_TIME seconds. With clang's libFuzzer when it works
# here, else with a standalone driver that feeds a seeded random corpus (ASan/UBSan both ways).
FUZZ_CC     ?= clang
FUZZ_TIME   ?= 20
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -O1 -g -Wall -Wextra -Werror -Iinclude -Ipreload \
               -fno-omit-frame-pointer
FUZZ_DEPS   := tests/fuzz/standalone.h tests/fuzz/fuzz_messages.c preload/deferral/accum.c preload/deferral/accum.h \
               preload/leaves/base64url.c preload/leaves/base64url.h preload/leaves/json.c preload/leaves/json.h preload/messages/messages.c \
               preload/messages/messages.h preload/messages/json_lines.c preload/messages/json_lines.h include/proflink.h \
               tests/fuzz/fuzz_attrs.c preload/context/otel_attrs.c preload/context/otel_attrs.h preload/leaves/clock.c \
               preload/leaves/clock.h preload/leaves/random.c preload/leaves/random.h preload/leaves/utf8.c preload/leaves/utf8.h

# fuzz_target NAME CORPUS MAX_LEN RUNS_PER_S — builds tests/fuzz/NAME.c and runs it for
# FUZZ_TIME seconds: libFuzzer when $(FUZZ_CC) has it, else the standalone random driver.
define fuzz_target
	@if printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
	    | $(FUZZ_CC) -x c -fsanitize=fuzzer - -o $(BUILD)/fuzz/probe 2>/dev/null; then \
	  echo "$(1): libFuzzer ($(FUZZ_CC)), $(FUZZ_TIME) s"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined \
	    -o $(BUILD)/fuzz/$(1) tests/fuzz/$(1).c $(FUZZ_LIBS_$(1)) && \
	  { $(BUILD)/fuzz/$(1) -max_total_time=$(FUZZ_TIME) -max_len=$(3) \
	    $(2) >$(BUILD)/fuzz/$(1).log 2>&1; rc=$$?; \
	    grep -E '^(Done|==|SUMMARY|$(1))' $(BUILD)/fuzz/$(1).log; \
	    test $$rc -eq 0 || { tail -40 $(BUILD)/fuzz/$(1).log; exit 1; }; }; \
	else \
	  echo "$(1): libFuzzer unavailable with $(FUZZ_CC); standalone random driver"; \
	  $(CC) $(FUZZ_CFLAGS) -DFUZZ_STANDALONE -fsanitize=address,undefined \
	    -o $(BUILD)/fuzz/$(1) tests/fuzz/$(1).c $(FUZZ_LIBS_$(1)) && \
	  $(BUILD)/fuzz/$(1) -runs=$$(( $(FUZZ_TIME) * $(4) )); \
	fi
endef

.PHONY: fuzz fuzz-http
fuzz: $(FUZZ_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/corpus
	$(call fuzz_target,fuzz_messages,$(BUILD)/fuzz/corpus,1200,100000)
	@mkdir -p $(BUILD)/fuzz/attrs_corpus
	$(call fuzz_target,fuzz_attrs,$(BUILD)/fuzz/attrs_corpus,4096,5000)

# The HTTP request scanner (tests/fuzz/fuzz_http_scan.c) and its response side
# (tests/fuzz/fuzz_http_resp.c), the same way, after the parser.
FUZZ_HTTP_DEPS := tests/fuzz/fuzz_http_scan.c tests/fuzz/fuzz_http_resp.c tests/fuzz/http_scan_seed \
                  tests/fuzz/http_resp_seed \
                  preload/http/http_scan.c preload/http/http_request_scan.c \
                  preload/http/http_response_scan.c preload/http/http_scan_machine.h \
                  preload/http/http_scan.h preload/leaves/ids.c preload/leaves/ids.h
fuzz: fuzz-http
fuzz-http: $(FUZZ_HTTP_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/http_corpus && cp tests/fuzz/http_scan_seed $(BUILD)/fuzz/http_corpus/
	$(call fuzz_target,fuzz_http_scan,$(BUILD)/fuzz/http_corpus,12000,20000)
	@mkdir -p $(BUILD)/fuzz/http_resp_corpus && cp tests/fuzz/http_resp_seed $(BUILD)/fuzz/http_resp_corpus/
	$(call fuzz_target,fuzz_http_resp,$(BUILD)/fuzz/http_resp_corpus,12000,20000)

# The OpenTelemetry process context's payload encoder (tests/fuzz/fuzz_otel_payload.c), the same way.
FUZZ_OTEL_DEPS := tests/fuzz/standalone.h tests/fuzz/fuzz_otel_payload.c preload/publish/otel_payload.c \
                  preload/publish/otel_payload.h preload/publish/protobuf_writer.c preload/publish/protobuf_writer.h \
                  preload/config/resource_attrs.c preload/config/resource_attrs.h preload/leaves/utf8.c preload/leaves/utf8.h \
                  preload/leaves/ids.c preload/leaves/ids.h
fuzz: fuzz-otel-payload
.PHONY: fuzz-otel-payload
fuzz-otel-payload: $(FUZZ_OTEL_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/otel_payload_corpus
	$(call fuzz_target,fuzz_otel_payload,$(BUILD)/fuzz/otel_payload_corpus,4096,1000)

# The HPACK decoder (tests/fuzz/fuzz_hpack.c) against libnghttp2's inflater, the same way, where
# libnghttp2-dev is installed (scripts/deps.sh check installs it).
FUZZ_HPACK_DEPS := tests/fuzz/standalone.h tests/fuzz/fuzz_hpack.c tests/helpers/hpack_compare.h \
                   preload/http/hpack.c preload/http/hpack.h preload/http/hpack_huffman.h
FUZZ_LIBS_fuzz_hpack := -lnghttp2
fuzz: fuzz-hpack fuzz-h2-frames
.PHONY: fuzz-hpack fuzz-h2-frames
ifeq ($(shell pkg-config --exists libnghttp2 2>/dev/null && echo yes),yes)
fuzz-hpack: $(FUZZ_HPACK_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/hpack_corpus
	$(call fuzz_target,fuzz_hpack,$(BUILD)/fuzz/hpack_corpus,2048,2000)
else
fuzz-hpack:
	@echo "fuzz_hpack: skipped, libnghttp2-dev is not installed"
endif

# The HTTP/2 frame reader (tests/fuzz/fuzz_h2_frames.c): the same events however the bytes are cut.
FUZZ_H2_DEPS := tests/fuzz/standalone.h tests/fuzz/fuzz_h2_frames.c preload/http/h2_frames.c \
                preload/http/h2_frames.h preload/http/hpack.c preload/http/hpack.h \
                preload/http/hpack_huffman.h preload/leaves/ids.c preload/leaves/ids.h
fuzz-h2-frames: $(FUZZ_H2_DEPS) | $(BUILD)
	@mkdir -p $(BUILD)/fuzz/h2_frames_corpus
	$(call fuzz_target,fuzz_h2_frames,$(BUILD)/fuzz/h2_frames_corpus,4096,2000)

