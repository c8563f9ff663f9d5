SWIFT ?= swift

.PHONY: deps build demo test clean

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
