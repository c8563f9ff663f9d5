SWIFT ?= swift

.PHONY: deps build demo test clean bench-quick

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

# An informal comparison with raw LMDB (the floor); N objects, best of RUNS.
N ?= 1000000
RUNS ?= 3
bench-quick: deps
	cd Benchmarks && $(SWIFT) run -c release QuickCompare $(N) $(RUNS)
