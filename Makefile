# The targets CI and developers run. `make test` is the README's test command
# and what .ci/run calls on a clean checkout.

GO ?= go

.PHONY: test vet fmt-check unit race

test: vet fmt-check unit race

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# All packages, with the tree's self-checks compiled in.
unit:
	$(GO) test -count=1 -tags invariants ./...

# The race detector over the packages with concurrent code and tests.
race:
	$(GO) test -count=1 -race -short ./...
