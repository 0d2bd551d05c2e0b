#!/usr/bin/env bash
# demo.sh: three Strata nodes as three processes on loopback TCP. Writes
# go through any node, the leader is killed with SIGKILL, writes succeed
# again, the state and a watcher survive on the others, and the killed
# node restarts from its data directory and catches up.
#
# Run from anywhere: replicate/example/cluster/demo.sh (or make cluster-demo).
# Needs go and curl. BASE (default 7000) picks the ports: BASE+1..3 for
# raft, +101..103 for forwarding, +201..203 for the API.
set -euo pipefail

cd "$(dirname "$0")/../.."   # the replicate module
BASE=${BASE:-7000}
work=$(mktemp -d)
bin=$work/cluster
declare -A pid

cleanup() {
	# SIGTERM: a node shuts down gracefully (a leader hands over first).
	for n in "${!pid[@]}"; do kill "${pid[$n]}" 2>/dev/null || true; done
	[ -n "${watcher:-}" ] && kill "$watcher" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
api() { echo "127.0.0.1:$((BASE + 200 + ${1#n}))"; }
peers="n1=127.0.0.1:$((BASE+1))=127.0.0.1:$((BASE+101))"
peers+=",n2=127.0.0.1:$((BASE+2))=127.0.0.1:$((BASE+102))"
peers+=",n3=127.0.0.1:$((BASE+3))=127.0.0.1:$((BASE+103))"

start() {
	"$bin" -id "$1" -api "$(api "$1")" -dir "$work/$1" -peers "$peers" \
		-timeout 500ms -heartbeat 250ms 2>>"$work/$1.log" &
	pid[$1]=$!
}
status() { curl -sf "$(api "$1")/status" || echo "{\"id\":\"$1\",\"state\":\"down\"}"; }
leader() {
	for n in n1 n2 n3; do
		if status "$n" | grep -q '"state":"Leader"'; then echo "$n"; return; fi
	done
}
wait_leader() {
	for _ in $(seq 100); do
		l=$(leader); [ -n "$l" ] && { echo "$l"; return; }; sleep 0.1
	done
	echo "no leader" >&2; exit 1
}
put() { curl -sf -X PUT --data "$3" "$(api "$1")/objects/$2"; }

say "build"
go build -o "$bin" ./example/cluster
echo "$bin"

say "start n1 n2 n3 (election timeout 500ms, heartbeat timeout 250ms)"
for n in n1 n2 n3; do start "$n"; done
l=$(wait_leader)
echo "leader: $l"

say "write through every node (followers forward to the leader)"
for n in n1 n2 n3; do echo "PUT city-$n via $n: $(put "$n" "city-$n" "written via $n")"; done

f=n1; [ "$l" = n1 ] && f=n2
say "a watcher on follower $f (a change feed, one line a change)"
curl -sN "$(api "$f")/watch" >"$work/watch.log" &
watcher=$!
sleep 0.5; sed 's/^/  watch: /' "$work/watch.log"

say "SIGKILL the leader $l"
kill -9 "${pid[$l]}"; wait "${pid[$l]}" 2>/dev/null || true; unset "pid[$l]"
t0=$(date +%s%N)
until put "$f" after-kill "written after the kill" >/dev/null 2>&1; do sleep 0.05; done
echo "a write through $f succeeded $(( ($(date +%s%N) - t0) / 1000000 )) ms after the kill"
echo "new leader: $(wait_leader)"
for n in n1 n2 n3; do [ "$n" = "$l" ] || echo "$n: $(status "$n")"; done

say "the watcher on $f saw the write after the kill"
sleep 0.3; sed 's/^/  watch: /' "$work/watch.log"

say "linearizable read of every object from $f"
curl -s "$(api "$f")/objects?read=linearizable"; echo

say "restart $l from its data directory: it catches up"
start "$l"
digest() { status "$1" | sed -n 's/.*"digest":"\([0-9a-f]*\)".*/\1/p'; }
caught_up=
for _ in $(seq 100); do
	d=$(digest "$l")
	if [ -n "$d" ] && [ "$d" = "$(digest "$f")" ]; then caught_up=1; break; fi
	sleep 0.1
done
[ -n "$caught_up" ] || { echo "$l did not catch up within 10s" >&2; exit 1; }
for n in n1 n2 n3; do echo "$n: $(status "$n")"; done
echo "after-kill read on $l: $(curl -s "$(api "$l")/objects/after-kill")"

say "done: every node holds the same digest at the same index"
