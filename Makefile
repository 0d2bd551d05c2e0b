# The targets CI and developers run. `make test` is the README's test command
# and what .ci/run calls on a clean checkout.

GO ?= go

.PHONY: test vet fmt-check unit bench-smoke compare port-check persist replicate cli hive e2e commitcheck lint models-long replicate-long cluster-demo

test: vet fmt-check unit bench-smoke compare port-check persist replicate cli hive e2e commitcheck

vet:
	$(GO) vet ./...
	cd bench/compare && $(GO) vet ./...
	cd persist && $(GO) vet ./...
	cd cmd/commitcheck && $(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# All packages of the root module, with the race detector (they all have
# concurrent tests) and the tree's self-checks (every commit validates
# the whole tree and its change log) compiled in. The other modules' race
# runs take the same tags, so that the root module is compiled two ways
# (this, and plain for the benchmarks and the modules' plain runs) rather
# than three: most of a run on a cold build cache is compiling
# (docs/testing.md).
unit:
	$(GO) test -count=1 -race -tags invariants ./...

# Every benchmark once, with small sizes, so that none can rot.
bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x . -strata.memobjects=10000 -strata.deleten=10000
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./part -part.bench.max=1000
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./index/... ./metrics/...
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./reconciler -reconciler.benchn=2000
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./httpapi

# The comparison with cilium/statedb and go-memdb (its own module): a
# smoke run of every workload against every database, and of the
# reconciler benchmarks against statedb's reconciler.
compare:
	cd bench/compare && $(GO) test -count=1 ./...
	cd bench/compare && $(GO) test -count=1 -run '^$$' -bench Reconciler -benchtime=1x . -reconciler.smoke

# What porting statedb v0.9.4's own reconciler tests, reconciler example
# and hive script tests to Strata costs (MIGRATING.md, "What a port
# costs"): statedb's files copied from the module cache into a temporary
# module, the compile errors after the import change counted, the hand
# port (bench/compare/port/port.patch) applied, its edits checked against
# their classification (edits.tsv: each named by a MIGRATING.md section),
# and the ported tests run. About 20 s.
port-check:
	bench/compare/port/measure.sh

# The persistence module (Pebble): its tests (100 crash cycles, power loss,
# injected I/O errors, snapshot corruption, a reconciler killed and
# restarted on a durable table), with and without the race detector, and
# a smoke run of its benchmarks.
persist:
	cd persist && $(GO) test -count=1 ./...
	cd persist && $(GO) test -count=1 -race -tags invariants -short ./...
	cd persist && $(GO) test -count=1 -run '^$$' -bench . -benchtime=1x . \
		-persist.recovery=10000 -snapshot.objects=10000

# The replication module (hashicorp/raft v1.7.2): vet, its tests (the raft
# log store's contract, corruption, SIGKILL crash cycles, power loss,
# in-process clusters, porcupine checks, interleavings, three processes
# on loopback killed with SIGKILL), the race detector
# with fewer cycles, and a smoke run of its benchmarks. Its cluster tests
# mostly wait on raft's timers, so they run in parallel (-parallel 4):
# about 1.5 minutes on two cores.
replicate:
	cd replicate && $(GO) vet ./...
	cd replicate && $(GO) test -count=1 -parallel 4 ./...
	cd replicate && $(GO) test -count=1 -race -tags invariants -short -parallel 4 ./...
	cd replicate && $(GO) test -count=1 -run '^$$' -bench . -benchtime=1x .

# The strata command (its own module: cobra): vet, its tests (which build
# the binary and an application embedding it, and run them on stores and
# snapshots), the race detector on the in-process tests, and a smoke run
# of its benchmarks.
cli:
	cd cmd/strata && $(GO) vet ./...
	cd cmd/strata && $(GO) test -count=1 ./...
	cd cmd/strata && $(GO) test -count=1 -race -tags invariants -short ./stratacli
	cd cmd/strata && $(GO) test -count=1 -run '^$$' -bench . -benchtime=1x ./stratacli -stratacli.benchobjects=2000

# The hive cells (their own module): script tests, durable tables,
# replicated tables (three hives forming raft clusters in-process and over
# TCP), the port check, with and without the race detector; and the
# statedb original of the port, which must keep compiling and passing.
hive:
	cd stratahive && $(GO) vet ./...
	cd stratahive && $(GO) test -count=1 ./...
	cd stratahive && $(GO) test -count=1 -race -tags invariants -short ./...
	cd stratahive/example/statedb && $(GO) vet ./... && $(GO) test -count=1 ./...

# The web inspector in a real browser (its own module: chromedp), against
# a live server while a writer commits: headless Chromium, Debian's
# chromium package, which .ci/run installs when it is missing.
e2e:
	cd e2e && $(GO) vet ./...
	cd e2e && $(GO) test -count=1 ./...

# The analyzer that reports a dropped WriteTxn.Commit error (its own
# module): its tests, then a run over every package of every module,
# tests included, which must stay clean. (stratahive/example/statedb is
# the statedb original of the hive port: it has no strata WriteTxn.)
COMMITCHECK := $(CURDIR)/bin/commitcheck
COMMITCHECK_MODULES := . persist bench/compare stratahive cmd/strata e2e cmd/commitcheck replicate
commitcheck:
	cd cmd/commitcheck && $(GO) test -count=1 ./...
	cd cmd/commitcheck && $(GO) build -o $(COMMITCHECK) .
	@set -e; for m in $(COMMITCHECK_MODULES); do \
		echo "commitcheck $$m"; (cd $$m && $(COMMITCHECK) ./...); \
	done

# staticcheck over every module, which must stay clean; a finding that is
# deliberate carries a //lint:ignore with its reason. Not part of test: it
# installs staticcheck (pinned) through the module proxy into bin/, and a
# run over every module takes minutes on two cores. The invariants tag
# switches files of the root package and part, which are checked both
# ways. stratahive/example/statedb is left out: it is the statedb
# original, text the port must match (the port itself is checked).
#
# Then errcheck (pinned, into bin/ too) over the same modules, tests
# included, so that no code, and no test, drops the error of a table
# write (a test that does can pass while the write failed). The calls
# whose error is not worth checking are in errcheck_excludes.txt, each
# with its reason; a write whose error is deliberately dropped (one
# expected to panic) assigns it to _.
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck
ERRCHECK_VERSION := v1.30.0
ERRCHECK := $(CURDIR)/bin/errcheck -ignoretests=false -exclude $(CURDIR)/errcheck_excludes.txt
LINT_MODULES := . persist replicate bench/compare stratahive cmd/strata e2e cmd/commitcheck
lint:
	GOBIN=$(CURDIR)/bin $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) -tags invariants . ./part/...
	@set -e; for m in $(LINT_MODULES); do \
		echo "staticcheck $$m"; (cd $$m && $(STATICCHECK) ./...); \
	done
	GOBIN=$(CURDIR)/bin $(GO) install github.com/kisielk/errcheck@$(ERRCHECK_VERSION)
	$(ERRCHECK) -tags invariants . ./part/...
	@set -e; for m in $(LINT_MODULES); do \
		echo "errcheck $$m"; (cd $$m && $(ERRCHECK) ./...); \
	done

# The model tests at length, with the race detector: the change feed's
# and the write path's (TestModel, ten times longer), and the
# reconciler's interleavings (TestModel in reconciler/, twenty times the
# seeds); and the commit queue's interleavings, twenty times the seeds,
# with the invariants' checks; and a replica replaying its leader's
# writes (TestApplyWriteReplica), ten times longer. Not part of test:
# about ten minutes on two cores. Run it before sending a change to the
# write path, the change log or the reconciler. docs/interleavings.md
# says what each explores.
models-long:
	$(GO) test -count=1 -race -run 'Model|TestApplyWriteReplica' . -strata.model.long
	$(GO) test -count=1 -race -run 'TestModel$$' ./reconciler -reconciler.model.long
	$(GO) test -count=1 -tags invariants -run 'TestCommitQueueModel' . -strata.cq.long
	cd persist && $(GO) test -count=1 -run 'TestGroupInterleavings' . -persist.interleavings=300

# Three replicate nodes as processes on loopback TCP
# (replicate/example/cluster): writes through every node, the leader
# killed with SIGKILL, a watcher on a follower going on, the killed node
# restarted from its data directory. Not part of test: a demonstration,
# about 10 s once built. BASE=8000 moves its ports (default 7000).
cluster-demo:
	replicate/example/cluster/demo.sh

# replicate/ at length: 500 SIGKILL cycles of each crash test of the raft
# log store, a minute of each fuzz target of the entry format, two
# minutes of random faults under each linearizability test (3 and 5
# nodes, histories checked with porcupine), and 12 leader kills and 10
# kills of a follower installing a snapshot in three-process clusters
# (about 1.5 minutes), the fault measurements (one-way links, bridges, a
# minute of a flapping follower, catch-ups after 10 s down, 100 trials
# of the old leader's divergence under CPU load; BENCH.md). Not part of
# test: about twenty minutes on two
# cores. Run it before changing the log store, the entry format or the
# node.
replicate-long:
	cd replicate && $(GO) test -count=1 -run 'TestCrash' . -replicate.crash.cycles=500
	cd replicate && $(GO) test -count=1 -timeout 30m -run 'TestLinearizable' . -replicate.lin.long=2m
	cd replicate && $(GO) test -count=1 -run 'TestNodeInterleavings' . -replicate.interleavings=2000
	cd replicate && $(GO) test -count=1 -run 'TestProcess' . -replicate.procs.long
	cd replicate && $(GO) test -count=1 -timeout 30m -parallel 1 -run 'TestFault' . -replicate.faults.long -replicate.faults.diverge=100
	cd replicate && $(GO) test -count=1 -run '^$$' -fuzz '^FuzzEntryDecode$$' -fuzztime 60s .
	cd replicate && $(GO) test -count=1 -run '^$$' -fuzz '^FuzzEntryRoundTrip$$' -fuzztime 60s .
