# Test fixtures built once by make rather than by the suites' setup_file (tests/fixtures/*.c →
# build/tests/fixtures/): programs and libraries made in several variants.
FIX      := $(BUILD)/tests/fixtures
FIX_CC   := gcc -std=c11 -D_GNU_SOURCE -O1 -Wall -Wextra -Werror
FAKE_SO  := elastic-jvmti-linux-fake.so
FAKE_CC  := $(FIX_CC) -shared -fPIC -Wl,-z,now
FAKE_GD  := -ftls-model=global-dynamic $(TLS_DIALECT)
# the dialect the profiler cannot read: module/offset pairs instead of TLS descriptors
ifeq ($(ARCH),x86_64)
TRAD_DIALECT := -mtls-dialect=gnu
else
TRAD_DIALECT := -mtls-dialect=trad
endif

# proflink-inspect's stand-in agents, one folder each (the file name is part of what is checked)
FAKES := good trad ie hidden size sysv nosh name
FIXTURES := $(foreach v,$(filter-out name,$(FAKES)),$(FIX)/fakes/$(v)/$(FAKE_SO)) \
            $(FIX)/fakes/name/libfake-apm-agent.so $(FIX)/late_dlopen_host \
            $(FIX)/showenv_glibc $(FIX)/libother.so $(FIX)/libfailmalloc.so
ifneq ($(MUSL_CC),)
FIXTURES += $(FIX)/showenv_musl $(FIX)/hello_musl
endif
# a static program needs Debian's libc.a (libc6-dev): without it the tests that want one skip
HAVE_LIBC_A := $(shell gcc -print-file-name=libc.a | grep -q / && echo yes)
ifeq ($(HAVE_LIBC_A),yes)
FIXTURES += $(FIX)/hello_static $(FIX)/showenv_static $(FIX)/sleeper_static
endif

.PHONY: test-fixtures
test-helpers: test-fixtures
test-fixtures: $(FIXTURES)

FAKE_SRC := tests/fixtures/fake_agent.c
$(FIX)/fakes/good/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) $(FAKE_GD) -o $@ $<
$(FIX)/fakes/trad/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) -ftls-model=global-dynamic $(TRAD_DIALECT) -o $@ $<
$(FIX)/fakes/ie/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) -ftls-model=initial-exec -o $@ $<
$(FIX)/fakes/hidden/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) $(FAKE_GD) -DFAKE_HIDDEN_TLS -o $@ $<
$(FIX)/fakes/size/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) $(FAKE_GD) -DFAKE_BAD_SIZE -o $@ $<
$(FIX)/fakes/sysv/$(FAKE_SO): $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) $(FAKE_GD) -Wl,--hash-style=sysv -o $@ $<
$(FIX)/fakes/name/libfake-apm-agent.so: $(FAKE_SRC)
	@mkdir -p $(dir $@)
	$(FAKE_CC) $(FAKE_GD) -o $@ $<
# No section headers (what `strip --strip-section-headers` makes): the loader does not need them,
# the profiler does. e_shoff, e_shnum and e_shstrndx set to zero (ELF64 offsets 0x28, 0x3c, 0x3e).
$(FIX)/fakes/nosh/$(FAKE_SO): $(FIX)/fakes/good/$(FAKE_SO)
	@mkdir -p $(dir $@)
	cp $< $@.tmp
	printf '\0\0\0\0\0\0\0\0' | dd of=$@.tmp bs=1 seek=40 conv=notrunc status=none
	printf '\0\0\0\0' | dd of=$@.tmp bs=1 seek=60 conv=notrunc status=none
	mv $@.tmp $@

$(FIX)/late_dlopen_host: tests/fixtures/late_dlopen_host.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -pthread -o $@ $< -ldl

$(FIX)/showenv_glibc: tests/fixtures/showenv.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -o $@ $<
$(FIX)/showenv_musl: tests/fixtures/showenv.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -O1 -o $@ $<
$(FIX)/showenv_static: tests/fixtures/showenv.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -static -o $@ $<
$(FIX)/libother.so: tests/fixtures/other_preload.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -shared -fPIC -o $@ $<
$(FIX)/hello_musl: tests/fixtures/hello.c
	@mkdir -p $(dir $@)
	$(MUSL_CC) -std=c11 -O1 -o $@ $<
$(FIX)/hello_static: tests/fixtures/hello.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -static -o $@ $<
$(FIX)/sleeper_static: tests/fixtures/sleeper.c
	@mkdir -p $(dir $@)
	$(FIX_CC) -static -o $@ $<
# malloc that fails inside proflink (a shim preloaded before the library)
$(FIX)/libfailmalloc.so: tests/helpers/failmalloc.c
	@mkdir -p $(dir $@)
	gcc -std=c11 -O1 -Wall -Wextra -Werror -shared -fPIC -DFAILMALLOC_SO -o $@ $< -ldl
