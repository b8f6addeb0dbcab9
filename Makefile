# The two commands a newcomer needs: `make run` and `make test` (SPEC §1).
# Both install the dependencies from package-lock.json when they are missing.

TESTS := $(sort $(wildcard test/*.test.ts))
# node-test-reporter for people; under CI also the spec reporter, whose
# closing lines ("ℹ tests N", "ℹ pass N", "ℹ fail N") CI reads.
REPORTERS := --test-reporter=node-test-reporter --test-reporter-destination=stdout
ifneq ($(CI),)
REPORTERS := --test-reporter=spec --test-reporter-destination=stdout
endif

.PHONY: run build test typecheck clean bench

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

# From the sources, through tsx (production runs the build, below).
run: node_modules/.package-lock.json
	node --import tsx src/main.ts

# The service compiled once into plain JavaScript, dist/orders.mjs, as
# production runs it: nothing transpiled at start-up (docs/operations.md).
build: node_modules/.package-lock.json
	node scripts/build.mjs

typecheck: node_modules/.package-lock.json
	node_modules/.bin/tsc --noEmit -p .

test: typecheck
	node_modules/.bin/c8 node --import tsx --test --test-concurrency=2 $(REPORTERS) $(TESTS)

clean:
	rm -rf coverage dist

# The benchmark (SPEC §14): on DATABASE_URL, or the embedded database when unset
# (then without the peer, which needs a server two processes can reach). The
# server runs with every feature on; load from wrk when installed, else autocannon.
bench: build
	node --import tsx bench/run.ts
