#!/usr/bin/env bash
# instr.sh BINARY BENCH N prints the instructions per op of the benchmark
# of a test binary (go test -c) that the -test.bench pattern BENCH selects
# (it must select one), counted by valgrind's cachegrind: Ir(2N) - Ir(N),
# divided by N, which leaves out the process's start, the benchmark's
# setup and its b.N=1 run.
#
# The count does not depend on the load of the machine, as times do, and
# repeats to within about 1%: it runs on one thread (GOMAXPROCS=1) with the
# collector off (GOGC=off), so compare allocs/op, from an ordinary run,
# for what the collector costs. Work a benchmark does with its timer
# stopped is counted too: use it on benchmarks that stop no timer.
set -euo pipefail
if [ $# -ne 3 ]; then
	echo "usage: $0 BINARY BENCH N" >&2
	exit 2
fi
bin=$1 bench=$2 n=$3
ir() {
	GOGC=off GOMAXPROCS=1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
		"$bin" -test.run '^$' -test.bench "$bench" -test.benchtime "$1x" 2>&1 |
		awk '/I *refs/ { gsub(",", "", $4); print $4 }'
}
a=$(ir "$n")
b=$(ir $((2 * n)))
echo "$bench $(((b - a) / n)) instructions/op"
