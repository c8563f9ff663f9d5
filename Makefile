SWIFT ?= swift

.PHONY: deps build demo test clean bench bench-check bench-thresholds bench-compare bench-deps

deps:
	@./scripts/install-lmdb.sh

build: deps
	$(SWIFT) build

demo: deps
	$(SWIFT) run strata demo

test: deps
	$(SWIFT) test

clean:
	rm -rf .build

bench-deps:
	@./scripts/install-bench-deps.sh

# package-benchmark's suite: wall clock, malloc count and peak memory of every
# scenario, Strata and raw LMDB, at 100k and 1M objects (STRATA_BENCH_LARGE=1
# adds 10M). `make bench-check` fails when the malloc counts of the migration
# scenarios exceed the thresholds checked in under Benchmarks/Thresholds;
# `make bench-thresholds` records new ones.
bench: bench-deps
	cd Benchmarks && $(SWIFT) package benchmark

bench-check: bench-deps
	cd Benchmarks && $(SWIFT) package benchmark thresholds check --filter 'migration'

bench-thresholds: bench-deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update --filter 'migration'

# Strata, raw LMDB and GRDB side by side, interleaved: medians and ratios,
# also written to .benchmarks/compare.json. N objects, ROUNDS rounds.
N ?= 1000000
ROUNDS ?= 3
bench-compare: bench-deps
	cd Benchmarks && $(SWIFT) run -c release StrataCompare --objects $(N) --rounds $(ROUNDS) --json ../.benchmarks/compare.json
