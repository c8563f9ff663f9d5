SWIFT ?= swift

.PHONY: deps build demo test clean docs bench bench-check bench-thresholds bench-compare bench-deps

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
