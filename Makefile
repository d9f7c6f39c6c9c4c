# fos: `make run` starts everything on this machine, `make test` runs the tests.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO ?= go
# The machine has 2 cores: 2 packages at a time keeps the build and the
# tests (PostgreSQL, the embedded Temporal server) from starving each other.
GO_TEST_FLAGS ?= -count=1 -p 2 -timeout 20m
PKGS ?= ./...

.PHONY: help run test build lint vet fmt tidy clean reset

help:
	@echo "make run    - fos dev --seed: API, worker, embedded Temporal (+ UI), private PostgreSQL under .fos/"
	@echo "make test   - go test $(PKGS) against a PostgreSQL server (see scripts/test-postgres.sh)"
	@echo "make build  - build bin/fos"
	@echo "make lint   - go vet and gofmt"
	@echo "make reset  - remove .fos/ (local data, keys) and its PostgreSQL cluster, wherever it lives"

# e.g. make run RUN_FLAGS="--temporal-addr 127.0.0.1:17233 --ui-addr 127.0.0.1:18233"
# (with FOS_HTTP_ADDR / FOS_SANDBOX_ADDR) to run beside another stack.
RUN_FLAGS ?=

run:
	./scripts/ensure-postgres.sh
	$(GO) run ./cmd/fos dev --seed $(RUN_FLAGS)

test:
	./scripts/ensure-chromium.sh
	./scripts/test-postgres.sh $(GO) test $(GO_TEST_FLAGS) $(PKGS)

build:
	$(GO) build -o bin/fos ./cmd/fos

GO_FILES_CMD = find . -name '*.go' -not -path './.fos/*' -not -path './vendor/*' -not -path './.git/*' -print0

lint: vet
	@unformatted=$$($(GO_FILES_CMD) | xargs -0 -r gofmt -l); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

fmt:
	$(GO_FILES_CMD) | xargs -0 -r gofmt -w

tidy:
	$(GO) mod tidy

clean:
	rm -rf bin

# As root in a 0700 home the private cluster lives in the temporary area;
# .fos/pg/location names it. (fos dev also removes it once .fos/ is gone.)
reset:
	@if [[ -f .fos/pg/location ]]; then loc=$$(cat .fos/pg/location); \
		case "$$loc" in */fos-pg-*) echo "removing $$loc"; rm -rf -- "$$loc";; esac; fi
	rm -rf .fos
