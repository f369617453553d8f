# make asan — the glibc preload library built with ASan + UBSan (build/asan/), the test helpers,
# and the suites that can run against it (tests/asan.sh: the ASan runtime is preloaded first).
ASAN_DIR := $(BUILD)/asan
ASAN_LIB := $(ASAN_DIR)/$(SONAME)

$(ASAN_DIR)/obj/%.o: %.c | $(BUILD)
	@mkdir -p $(dir $@)
	@echo "  ASAN  $<"; $(CC) $(LIB_CFLAGS) $(SANITIZE) $(DEPFLAGS) -c $< -o $@

$(ASAN_LIB): $(patsubst %.c,$(ASAN_DIR)/obj/%.o,$(LIB_SRCS))
	$(CC) $(LIB_LDFLAGS) $(SANITIZE) -Wl,-soname,$(SONAME) -o $@ $^ -ldl

asan: $(ASAN_LIB) test-helpers
	bash tests/asan.sh $(ASAN_LIB)
