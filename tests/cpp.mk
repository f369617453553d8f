# The C++ scope header (include/proflink.hpp) in a real program, built the three ways users link:
#   build/tests/cpp/scope_dlsym    nothing at link time (dlsym), runs with or without proflink
#   build/tests/cpp/scope_linked   -lproflink (PROFLINK_HPP_LINKED), found through its rpath
#   build/tests/cpp/scope_static   libproflink.a, statically linked (PROFLINK_HPP_LINKED)
CXX        ?= g++
CPP_FLAGS  := -std=c++11 -O1 -g -Wall -Wextra -Werror -Iinclude -pthread
CPP_BINS   := $(addprefix $(BUILD)/tests/cpp/scope_,dlsym linked static)

.PHONY: test-cpp-helpers
test-helpers: test-cpp-helpers
test-cpp-helpers: $(CPP_BINS)

$(BUILD)/tests/cpp/scope_dlsym: tests/cpp/scope_test.cpp include/proflink.hpp include/proflink.h
	@mkdir -p $(dir $@)
	$(CXX) $(CPP_FLAGS) -o $@ $< -ldl

$(BUILD)/tests/cpp/scope_linked: tests/cpp/scope_test.cpp include/proflink.hpp include/proflink.h $(BUILD)/libproflink.so
	@mkdir -p $(dir $@)
	$(CXX) $(CPP_FLAGS) -DPROFLINK_HPP_LINKED -o $@ $< -L$(BUILD) -lproflink -Wl,-rpath,$(abspath $(BUILD))

$(BUILD)/tests/cpp/scope_static: tests/cpp/scope_test.cpp include/proflink.hpp include/proflink.h $(BUILD)/libproflink.a
	@mkdir -p $(dir $@)
	$(CXX) $(CPP_FLAGS) -DPROFLINK_HPP_LINKED -DPROFLINK_STATIC_ARCHIVE -static -o $@ $< $(BUILD)/libproflink.a
