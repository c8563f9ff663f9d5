SWIFT ?= swift

.PHONY: hub hub-test hub-bench hub-deps deps build demo test format lint sanitize clean docs bench bench-check bench-thresholds bench-compare bench-observe bench-queries bench-sync bench-deps

deps:
	@./scripts/install-lmdb.sh

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) run strata demo

# Lints first (see lint below). Every test is Swift Testing's: without
# --disable-xctest, XCTest's runner would print "Executed 0 tests" first.
test: deps lint
	$(SWIFT) test --disable-xctest

# The sync hub (Hub/, docs/Hub.md) on a throw-away PostgreSQL cluster:
# `make hub` serves one and prints its URL and a device token; `make
# hub-test` runs the hub's tests on a cluster of their own, removed after.
hub-deps:
	@./scripts/install-postgresql.sh

hub: deps hub-deps
	./scripts/hub.sh

hub-test: deps hub-deps
	./scripts/hub-test.sh

# The hub's benchmarks (docs/Benchmarks.md, "Hub"), release builds on a
# cluster of their own; HUB_BENCH_ARGS="--seconds 10" shortens the load test.
hub-bench: deps hub-deps
	./scripts/hub-bench.sh

# swift-format (part of the toolchain) with the checked-in .swift-format:
# `make format` rewrites the files in place, `make lint` fails on anything
# it would change or any rule broken, then checks the layer rule of
# DESIGN.md §1 (scripts/check-layers.sh). Neither needs the network.
FORMAT_PATHS = Sources Tests Benchmarks/Sources Benchmarks/Benchmarks Package.swift Benchmarks/Package.swift Benchmarks/EngineCost/Sources Benchmarks/EngineCost/Package.swift Hub/Sources Hub/Tests Hub/Package.swift
format:
	$(SWIFT) format format --in-place --recursive --parallel $(FORMAT_PATHS)

lint:
	$(SWIFT) format lint --strict --recursive --parallel $(FORMAT_PATHS)
	./scripts/check-layers.sh

# The test suite under ThreadSanitizer, then under AddressSanitizer and its
# LeakSanitizer, each in a scratch folder of its own. Tests/Sanitizers holds
# the suppressions, each a documented false positive in a library Strata
# does not own. Crash tests kill SANITIZE_CRASH_TRIALS children each instead
# of 25: the sanitizers watch the processes that check the files, and a few
# kills give them every path.
SANITIZE_CRASH_TRIALS ?= 4
sanitize: deps
	STRATA_CRASH_TRIALS=$(SANITIZE_CRASH_TRIALS) $(SWIFT) test --sanitize=thread --scratch-path .build-tsan
	STRATA_CRASH_TRIALS=$(SANITIZE_CRASH_TRIALS) LSAN_OPTIONS=suppressions=$(CURDIR)/Tests/Sanitizers/lsan.supp \
		$(SWIFT) test --sanitize=address --scratch-path .build-asan

clean:
	rm -rf .build

# The DocC documentation of the Strata library (Sources/Strata/Strata.docc
# and every `///` comment), built with swift-docc-plugin as a static site in
# DOCS_OUTPUT. It builds in its own scratch folder, so it never waits for or
# disturbs the one `make build` and `make test` use. Serve the folder over
# HTTP to read it: cd .build-docs/site && python3 -m http.server, then open
# http://localhost:8000/documentation/strata/
DOCS_OUTPUT ?= .build-docs/site
docs: deps
	$(SWIFT) package --scratch-path .build-docs --allow-writing-to-directory $(DOCS_OUTPUT) \
		generate-documentation --target Strata --output-path $(DOCS_OUTPUT) \
		--disable-indexing --transform-for-static-hosting

bench-deps:
	@./scripts/install-bench-deps.sh

# package-benchmark's suite: wall clock, malloc count and peak memory of every
# scenario, Strata and raw LMDB, at 100k and 1M objects (STRATA_BENCH_LARGE=1
# adds 10M). `make bench-check` fails when the malloc counts of the migration
# and typed-model scenarios exceed the thresholds checked in under Benchmarks/Thresholds;
# `make bench-thresholds` records new ones.
bench: bench-deps
	cd Benchmarks && $(SWIFT) package benchmark

bench-check: bench-deps
	cd Benchmarks && $(SWIFT) package benchmark thresholds check --filter '.*(migration|typed)_strata.*'

bench-thresholds: bench-deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update --filter '.*(migration|typed)_strata.*'
	# Keep the malloc counts only: wall clock and memory vary too much here.
	cd Benchmarks/Thresholds && for f in *.json; do python3 -c 'import json,sys; f=sys.argv[1]; d=json.load(open(f)); json.dump({"mallocCountTotal": d["mallocCountTotal"]}, open(f, "w"), indent=2, sort_keys=True)' "$$f"; done

# Strata, the C floor, raw LMDB from Swift and GRDB side by side,
# interleaved: medians and ratios, then each trial's peak memory measured in
# a child process of its own; also written to .benchmarks/compare-N.json.
# N objects, ROUNDS rounds; COMPARE_FLAGS passes more options (--only a,b,
# --memory no, --drop-files yes for small disks).
N ?= 1000000
ROUNDS ?= 3
COMPARE_FLAGS ?=
bench-compare: bench-deps
	cd Benchmarks && $(SWIFT) run -c release StrataCompare --objects $(N) --rounds $(ROUNDS) \
		--json ../.benchmarks/compare-$(N).json $(COMPARE_FLAGS)

# Each query kind of issue 25 at N objects (docs/Benchmarks.md, "Each query
# kind against GRDB"): Strata's typed API against GRDB's query interface on
# the same data and indexes, interleaved, best of QUERY_ROUNDS trials.
QUERY_ROUNDS ?= 5
bench-queries: bench-deps
	cd Benchmarks && $(SWIFT) build -c release --product QueryCompare
	cd Benchmarks && ROUNDS=$(QUERY_ROUNDS) $$($(SWIFT) build -c release --show-bin-path)/QueryCompare $(N)

# Sync (docs/Benchmarks.md, "Sync"): capture overhead, bytes at rest and on
# the wire, apply speed and the upgrade of a file holding learned fields,
# at N objects, with and without sync, best of SYNC_ROUNDS.
SYNC_ROUNDS ?= 3
bench-sync: bench-deps
	cd Benchmarks && $(SWIFT) build -c release --product SyncBench
	cd Benchmarks && ROUNDS=$(SYNC_ROUNDS) $$($(SWIFT) build -c release --show-bin-path)/SyncBench $(N)

# Observation (docs/Benchmarks.md, "Observation"): commit-to-element latency
# of each kind of observation at 100k and 1M objects, 100 observations
# reached by one write, the poll for other processes' commits, GRDB's
# ValueObservation beside them; then the cost of a write no one observes,
# against OBSERVE_BASELINE (the revision before observation), in wall clock
# and, with valgrind, in exact instruction counts. OBSERVE_ROUNDS writes per
# scenario; OBSERVE_LARGE=0 skips the 1M objects.
OBSERVE_ROUNDS ?= 200
OBSERVE_LARGE ?= 1
OBSERVE_BASELINE ?= dd07614
bench-observe: bench-deps
	cd Benchmarks && $(SWIFT) build -c release --product ObservationBench
	cd Benchmarks && OBSBENCH_ROUNDS=$(OBSERVE_ROUNDS) OBSBENCH_LARGE=$(OBSERVE_LARGE) \
		$$($(SWIFT) build -c release --show-bin-path)/ObservationBench all
	BASELINE=$(OBSERVE_BASELINE) SWIFT=$(SWIFT) ./Benchmarks/scripts/observe-write-cost.sh
