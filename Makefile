# The two commands of README.md. Both install missing dependencies first (scripts/install-deps.sh).
#   make demo   build, then run the main job: the seed-000 study (quick suite) over every RAID
#               level on four emulated 2014 SATA SSDs (scripts/demo-bench.sh)
#   make demo-raid10  the end-to-end RAID10 job: ext4 via nbdcopy, fio verify, degraded restart
#   make check  build, then run every test through CTest
BUILD ?= build
JOBS  ?= $(shell nproc)
# Tests run at once: most of them wait (sleeps, timeouts, emulated device latency, member
# flushes) more than they compute, so twice the cores keeps both busy. The timing checks run
# alone all the same (RUN_SERIAL), the Ceph tests one at a time (RESOURCE_LOCK ceph).
CTEST_JOBS ?= $(shell echo $$((2 * $(JOBS))))
MAKEFLAGS += --no-print-directory

.PHONY: all deps build demo demo-raid10 check check-asan format clean bench install install-only

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@bash scripts/demo-bench.sh $(BUILD)/raidkit

demo-raid10: build
	@bash scripts/demo-raid10.sh $(BUILD)/raidkit

check: build
	@cd $(BUILD) && ctest --output-on-failure -j $(CTEST_JOBS)

# Unit and integration tests again under AddressSanitizer + UndefinedBehaviorSanitizer (all but
# the timing checks and the fuzz harnesses, which the sanitized build lists as disabled: README.md
# "Development").
check-asan: deps
	@cmake -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=Debug -DRAIDKIT_SANITIZE=ON >/dev/null
	@cmake --build $(BUILD)-asan -j $(JOBS)
	@cd $(BUILD)-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	  LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --output-on-failure -j $(CTEST_JOBS)

# Install into PREFIX (default /usr/local; DESTDIR=DIR stages it): binary, libraidkit.so/.a,
# headers, raidkit.pc, man pages, bash completion, systemd units, docs. install-only skips the build.
PREFIX ?= /usr/local
install: build
	@$(MAKE) install-only

install-only:
	@cmake --install $(BUILD) --prefix $(PREFIX)

format:
	@bash scripts/check-format.sh

bench: build
	@bash bench/nbd-vs-nbdkit.sh $(BUILD)/raidkit

clean:
	rm -rf $(BUILD) $(BUILD)-asan
