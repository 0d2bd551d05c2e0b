#!/usr/bin/env bash
# Measures what porting cilium/statedb v0.9.4's own reconciler tests, its
# reconciler example and its hive script tests to Strata costs (issue 31;
# MIGRATING.md, "What a port costs"). README.md beside this file says how.
#
#   bench/compare/port/measure.sh          # measure, then run the hand port's tests
#   bench/compare/port/measure.sh -keep    # leave the temporary module (its path is printed)
#   bench/compare/port/measure.sh -errors  # also print each compile error
#
# statedb's files are read from the Go module cache (bench/compare's
# go.mod requires statedb v0.9.4), never committed here. Steps:
#  1. copy them into a temporary module and apply MIGRATING.md's step 1:
#     the imports, then the hive names;
#  2. count the compile errors after each, one per file:line:col;
#  3. drop the tests of statedb's internals, apply port.patch, the hand
#     port, and count its edits (each run of changed lines of `diff -U0`
#     is one); check that edits.tsv classifies each edit, and no more, by
#     a heading of MIGRATING.md;
#  4. vet the ported module and run its tests.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
keep=0 show=0
for a in "$@"; do
	case $a in
	-keep) keep=1 ;;
	-errors) show=1 ;;
	*) echo "usage: $0 [-keep] [-errors]" >&2; exit 2 ;;
	esac
done

src=$(cd "$repo/bench/compare" && go mod download -json github.com/cilium/statedb@v0.9.4 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || { echo "statedb v0.9.4 not in the module cache" >&2; exit 1; }

tmp=$(mktemp -d)
if [ $keep = 0 ]; then trap 'chmod -R u+w "$tmp"; rm -rf "$tmp"' EXIT; else echo "keeping $tmp (imports: the import change only; orig: all of step 1; port: the hand port)"; fi
imports=$tmp/imports
orig=$tmp/orig
work=$tmp/port

# 1. The input, as statedb has it.
mkdir -p "$orig/statedb/testdata" "$orig/reconciler/testdata" "$orig/example"
cp "$src"/reconciler/*_test.go "$orig/reconciler/"
cp "$src"/reconciler/testdata/*.txtar "$orig/reconciler/testdata/"
cp "$src"/reconciler/example/*.go "$orig/example/"
cp "$src/script_test.go" "$orig/statedb/"
cp "$src"/testdata/*.txtar "$orig/statedb/testdata/"
# script_test.go's fixtures (testObject, its indexes, newTestObjectTable,
# newTestDB, expvarInt) are in db_test.go, whose other 1700 lines test
# statedb's internals: take the fixtures' lines, with the imports they use.
{
	sed -n '1,5p' "$src/db_test.go"
	cat <<'IMPORTS'
import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"iter"
	"log/slog"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cilium/hive"
	"github.com/cilium/hive/cell"
	"github.com/cilium/hive/hivetest"
	"github.com/cilium/statedb/index"
	"github.com/cilium/statedb/part"
)
IMPORTS
	sed -n '42,176p' "$src/db_test.go"
	sed -n '1721,1728p' "$src/db_test.go"
} >"$orig/statedb/fixtures_test.go"
chmod -R u+w "$orig"

# The import change, MIGRATING.md's step 1: statedb's packages by
# Strata's of the same names. A file keeps calling the root package
# `statedb` (it is imported under that name), and a test inside statedb's
# own package, which names the package's identifiers bare, imports
# Strata's package, and stratahive for the hive bits, with a dot.
rewrite() {
	local f=$1 dot=$2
	sed -i \
		-e 's#^\(\s*\)"github.com/cilium/statedb"$#\1statedb "github.com/strata-db/strata"#' \
		-e 's#"github.com/cilium/statedb/\(index\|part\|reconciler\)"#"github.com/strata-db/strata/\1"#' \
		"$f"
	if [ -n "$dot" ]; then
		# After the line `import (`.
		awk -v dot="$dot" '{print} !done && /^import \($/{print dot; done=1}' "$f" >"$f.new"
		mv "$f.new" "$f"
	fi
}
for f in "$orig"/statedb/*_test.go; do
	rewrite "$f" $'\t. "github.com/strata-db/strata"'
done
for f in "$orig"/reconciler/*_test.go; do
	if grep -q '^package reconciler$' "$f"; then
		rewrite "$f" $'\t. "github.com/strata-db/strata/reconciler"'
	else
		rewrite "$f" ""
	fi
done
for f in "$orig"/example/*.go; do rewrite "$f" ""; done

gomod() {
	cat >"$1/go.mod" <<EOF2
module strataport

go 1.25.0

replace github.com/strata-db/strata => $repo

replace github.com/strata-db/strata/persist => $repo/persist

replace github.com/strata-db/strata/stratahive => $repo/stratahive
EOF2
	# Versions as the repository pins them: hive, testify, yaml from
	# stratahive's and bench/compare's go.sum; cobra and x/time from
	# statedb's.
	cat "$repo/stratahive/go.sum" "$repo/bench/compare/go.sum" "$src/go.sum" | sort -u >"$1/go.sum"
	(cd "$1" && go mod edit \
		-require=github.com/strata-db/strata@v0.0.0-00010101000000-000000000000 \
		-require=github.com/strata-db/strata/stratahive@v0.0.0-00010101000000-000000000000 \
		-require=github.com/cilium/hive@v1.0.4 \
		-require=github.com/stretchr/testify@v1.11.1 \
		-require=go.yaml.in/yaml/v3@v3.0.4 \
		-require=golang.org/x/time@v0.15.0 \
		-require=github.com/spf13/cobra@v1.10.2 &&
		GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
}

# 2. The compile errors: every error of every package (-gcflags=-e), one
# per position.
errors() {
	(cd "$1" && go build -gcflags=-e ./... 2>&1; go test -count=1 -run '^$' -gcflags=-e ./... 2>&1) |
		sed -n 's#^\(\./\)\?\([a-z]*/[a-z_]*\.go:[0-9]*:[0-9]*\): \(.*\)$#\2: \3#p' | sort -u -t: -k1,3
}
cp -r "$orig" "$imports"
gomod "$imports"
errors "$imports" >"$tmp/errors-imports.txt" || true
nimp=$(wc -l <"$tmp/errors-imports.txt")

# The rest of step 1: the hive bits by stratahive's names (MIGRATING.md's
# sed, and the stratahive import where they appear; inside statedb's own
# package, the bare Cell and ...Cmd constructors).
for f in "$orig"/*/*.go; do
	sed -i \
		-e 's/\bstatedb\.\(Cell\b\|Derive\|[A-Za-z]*Cmd\b\)/stratahive.\1/g' \
		-e 's/\breconciler\.Params\b/stratahive.ReconcilerParams/g' \
		-e 's/\breconciler\.Register(/stratahive.RegisterReconciler(/g' \
		"$f"
	if grep -q '^package statedb$' "$f"; then
		sed -i -e 's/^\(\s*\)\(Cell\|Derive\),/\1stratahive.\2,/' \
			-e 's/\([^.A-Za-z]\)\([A-Z][A-Za-z]*Cmd\)(/\1stratahive.\2(/g' "$f"
	fi
	if grep -q 'stratahive\.' "$f"; then
		awk '{print} !done && /^import \($/{print "\t\"github.com/strata-db/strata/stratahive\""; done=1}' "$f" >"$f.new"
		mv "$f.new" "$f"
		gofmt -w "$f"
	fi
done
gomod "$orig"
errors "$orig" >"$tmp/errors.txt" || true
nerr=$(wc -l <"$tmp/errors.txt")
if [ $show = 1 ]; then
	echo "after the import change:"
	cat "$tmp/errors-imports.txt"
	echo "after step 1 (the hive names too):"
	cat "$tmp/errors.txt"
fi

# 3. The hand port: first drop the tests of statedb's unexported code,
# which have nothing to port to (retries_test.go; script_test.go's
# TestHeaderLine and TestSortedFlags, its last two functions), then apply
# port.patch. Its edits are counted: each run of changed lines of
# `diff -U0` is one, and edits.tsv classifies each. (The patch is
# `diff -rN -U1 dropped port`, paths a/ and b/.)
drop() {
	cp -r "$1" "$2"
	rm "$2/reconciler/retries_test.go"
	awk '/^func TestHeaderLine/{exit} NF{for(; n>0; n--) print ""; print; next} {n++}' \
		"$1/statedb/script_test.go" >"$2/statedb/script_test.go"
}
dropped=$tmp/dropped
drop "$orig" "$dropped"
drop "$imports" "$tmp/imports-dropped"
cp -r "$dropped" "$work"
if [ -s "$here/port.patch" ]; then (cd "$work" && git apply --whitespace=nowarn "$here/port.patch"); fi
(cd "$work" && GOFLAGS=-mod=mod go mod tidy -e >/dev/null 2>&1 || true)
(cd "$tmp" && diff -rN -U0 -x go.sum -x go.mod dropped port >"$tmp/edits.diff" || true)
nedit=$(grep -c '^@@' "$tmp/edits.diff" || true)
# The same port from the import change alone: the hive names of step 1
# are edits too.
(cd "$tmp" && diff -rN -U0 -x go.sum -x go.mod imports-dropped port >"$tmp/edits-imports.diff" || true)
nedit_imp=$(grep -c '^@@' "$tmp/edits-imports.diff" || true)
# Each edit's file and first line in the port, as edits.tsv names them.
awk '/^\+\+\+ /{f=$2; sub(/^port\//, "", f); sub(/\t.*/, "", f)}
     /^@@/{split($3, a, ","); l=substr(a[1], 2); if (a[2]=="0") l++; print f ":" l}' \
	"$tmp/edits.diff" | sort >"$tmp/sites.txt"
awk '!/^#/' "$here/edits.tsv" | cut -f1 | sort >"$tmp/classified.txt"
if ! diff -u "$tmp/classified.txt" "$tmp/sites.txt" >"$tmp/class.diff"; then
	echo "edits.tsv does not classify exactly the port's edits (- classified, + edited):" >&2
	cat "$tmp/class.diff" >&2
	exit 1
fi

# Each class but "internal" is a heading of MIGRATING.md.
awk -F'\t' '!/^#/ && $2 != "internal" {print $2}' "$here/edits.tsv" | sort -u | while read -r class; do
	if ! grep -qxF -e "## $class" -e "### $class" -e "#### $class" "$repo/MIGRATING.md"; then
		echo "edits.tsv: no heading \"$class\" in MIGRATING.md" >&2
		exit 1
	fi
done
internal=$(awk -F'\t' '!/^#/ && $2 == "internal"' "$here/edits.tsv" | wc -l)
named=$(awk -F'\t' '!/^#/ && $2 != "internal" && $2 != "none"' "$here/edits.tsv" | wc -l)
# (A class "none" would have failed the heading check: every edit is named.)
echo "compile errors (one per position): $nimp after the import change, $nerr after all of step 1 (the hive names too)"
echo "edits after step 1: $nedit, of which $internal in tests of statedb's internals; of the other $((nedit - internal)), $named named by MIGRATING.md"
echo "  (from the import change alone: $nedit_imp edits; retries_test.go, TestHeaderLine and TestSortedFlags dropped: they test statedb's unexported code)"
awk -F'\t' '!/^#/ {print $2}' "$here/edits.tsv" | sort | uniq -c | sort -rn | sed 's/^/  /'

# 4. The port compiles, vets and passes.
(cd "$work" && go vet ./... && go test -count=1 ./...)
