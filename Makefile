# Kiln build. `make` builds build/kiln; `make test` installs what is missing,
# builds and runs every test; `make run` serves with ./kiln-data.
# Sources are discovered: every src/<module>/*.c is part of libkiln except
# src/cli/main.c; every tests/unit/<module>/<name>.c is one test program.

CC       ?= cc
BUILD    ?= build
PKGS     := libevent libevent_pthreads libevent_openssl libnghttp2 libcurl sqlite3 libdeflate libzstd jansson libfyaml libxxhash openssl
WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wvla -Wimplicit-fallthrough -Wno-unused-parameter
# CFLAGS is the user's (optimisation, sanitizers); KFLAGS is what Kiln always needs.
CFLAGS   ?= -O2 -g
KFLAGS   := -std=c11 -D_GNU_SOURCE -pthread $(WARN) -Isrc $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
ifeq ($(CI),true)
KFLAGS   += -Werror
endif
LDLIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -pthread

LIB_SRC  := $(filter-out src/cli/main.c,$(wildcard src/*/*.c src/*/*/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/gen/ui_assets.o
UI_FILES := $(shell find src/ui -type f 2>/dev/null)
UNIT_SRC := $(wildcard tests/unit/*/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/unit/%)
FUZZ_SRC := $(filter-out tests/fuzz/replay_main.c,$(wildcard tests/fuzz/*.c))
FUZZ_REPLAY := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/fuzz-replay/%)
BENCH_SRC := $(wildcard bench/*.c)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)

.PHONY: all deps run test test-unit test-fuzz-replay test-blackbox test-asan fuzz bench fmt clean

all: $(BUILD)/kiln

deps:
	@bash scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(KFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/gen/ui_assets.c: $(UI_FILES) scripts/embed-ui.sh
	@mkdir -p $(dir $@)
	bash scripts/embed-ui.sh src/ui > $@

$(BUILD)/obj/gen/ui_assets.o: $(BUILD)/gen/ui_assets.c
	@mkdir -p $(dir $@)
	@echo "CC $<"
	@$(CC) $(CFLAGS) $(KFLAGS) -c $< -o $@

$(BUILD)/libkiln.a: $(LIB_OBJ)
	@rm -f $@
	@echo "AR $@"
	@ar rcs $@ $^

$(BUILD)/kiln: $(BUILD)/obj/src/cli/main.o $(BUILD)/libkiln.a
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(KFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/unit/%: tests/unit/%.c $(BUILD)/libkiln.a tests/unit/testutil.h
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(KFLAGS) -Itests/unit -o $@ $< $(BUILD)/libkiln.a $(LDLIBS) -lcmocka

# Fuzz targets built with a plain main() that replays a corpus (gcc, no libFuzzer).
$(BUILD)/tests/fuzz-replay/%: tests/fuzz/%.c tests/fuzz/replay_main.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(KFLAGS) -o $@ $< tests/fuzz/replay_main.c $(BUILD)/libkiln.a $(LDLIBS)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	@echo "LD $@"
	@$(CC) $(CFLAGS) $(KFLAGS) -o $@ $< $(BUILD)/libkiln.a $(LDLIBS)

run: deps
	$(MAKE) all
	$(BUILD)/kiln serve --data ./kiln-data

test: deps
	$(MAKE) all
	$(MAKE) test-unit test-fuzz-replay test-blackbox

test-unit: $(UNIT_BIN)
	@bash tests/run-unit.sh $(UNIT_BIN)

test-fuzz-replay: $(FUZZ_REPLAY)
	@bash tests/run-fuzz-replay.sh $(BUILD)/tests/fuzz-replay

test-blackbox: $(BUILD)/kiln
	@KILN_BIN=$(abspath $(BUILD)/kiln) bash tests/run-blackbox.sh

# The whole suite again with AddressSanitizer + UndefinedBehaviorSanitizer.
test-asan: deps
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined" \
		all test-unit test-fuzz-replay test-blackbox

# libFuzzer (clang) for a bounded time per target: FUZZ_SECONDS (default 60);
# FUZZ_TARGETS="decompress config" runs only those (default: all).
FUZZ_SECONDS ?= 60
fuzz: deps
	@FUZZ_TARGETS="$(FUZZ_TARGETS)" bash tests/run-fuzz.sh $(FUZZ_SECONDS)

bench: $(BUILD)/kiln $(BENCH_BIN)

fmt:
	clang-format -i $(wildcard src/*/*.c src/*/*.h tests/unit/*/*.c tests/fuzz/*.c bench/*.c)

clean:
	rm -rf build build-asan build-fuzz

-include $(LIB_OBJ:.o=.d)
