# The OpenTelemetry Java agent extension (integrations/java): its JNI shim compiled against the
# JDK's jni.h, then the jar built by Maven with the shim inside. Built where a JDK (javac) and
# Maven are found; elsewhere `make` says so in one line and builds the rest.
JAVAC     := $(shell command -v javac 2>/dev/null)
MVN       := $(shell command -v mvn 2>/dev/null)
JDK_HOME  := $(if $(JAVAC),$(patsubst %/bin/javac,%,$(realpath $(JAVAC))))
JAVA_EXT  := $(BUILD)/proflink-otel-javaagent-extension.jar
JAVA_JNI  := $(BUILD)/java/native/proflink/linux-$(ARCH)/libproflink-otel-jni.so
JAVA_AGENT := $(BUILD)/java/opentelemetry-javaagent.jar
JAVA_SRCS := $(shell find integrations/java/src -type f 2>/dev/null) integrations/java/pom.xml

ifeq ($(ARCH),$(HOST_ARCH))
ifneq ($(JAVAC),)
ifneq ($(MVN),)
all: $(JAVA_EXT)
else
$(info proflink-otel-javaagent-extension.jar skipped: Maven (mvn) is not installed)
endif
else
$(info proflink-otel-javaagent-extension.jar skipped: no JDK (javac) is installed)
endif
endif

# the shim is the product's C: the project's warnings, hidden but for its JNI entry points
$(JAVA_JNI): integrations/java/src/main/c/proflink_otel_jni.c include/proflink.h | $(BUILD)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -g $(WARN) $(HARDEN) -fPIC -fvisibility=hidden -Iinclude \
	    -I$(JDK_HOME)/include -I$(JDK_HOME)/include/linux -shared -Wl,-z,now -Wl,-z,relro \
	    -Wl,-z,noexecstack -o $@ $< -ldl

$(JAVA_EXT): $(JAVA_JNI) $(JAVA_SRCS)
	@echo "  MVN   $@"; cd integrations/java && $(MVN) -q -B package \
	    -Dproflink.build=$(abspath $(BUILD))/java >$(abspath $(BUILD))/java/mvn.log 2>&1 || \
	    { tail -30 $(abspath $(BUILD))/java/mvn.log; exit 1; }
	cp $(BUILD)/java/maven/proflink-otel-javaagent-extension.jar $@

# the pinned OpenTelemetry Java agent the tests run under (integrations/java/fetch.sh)
.PHONY: java-agent
java-agent:
	@bash integrations/java/fetch.sh $(JAVA_AGENT)
