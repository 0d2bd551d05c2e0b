package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestSmoke runs every workload once against every implementation on small
// data and fails if any result check fails. It is what `go test ./...` runs.
func TestSmoke(t *testing.T) {
	old := flag.Lookup("test.benchtime").Value.String()
	defer func() {
		if err := flag.Set("test.benchtime", old); err != nil {
			t.Error(err)
		}
	}()
	var out strings.Builder
	cfg := config{count: 1, smoke: true, out: &out, progress: io.Discard}
	if testing.Verbose() {
		cfg.progress = os.Stderr
	}
	err := run(cfg)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatal(err)
	}
}

// TestBaselineRounds: a workload and its baseline run their rounds in
// turn, and the cost line pairs the two measurements of each round.
func TestBaselineRounds(t *testing.T) {
	old := flag.Lookup("test.benchtime").Value.String()
	defer func() {
		if err := flag.Set("test.benchtime", old); err != nil {
			t.Error(err)
		}
	}()
	var out, progress strings.Builder
	cfg := config{count: 2, benchtime: "1x", filter: "^Changes(_Reused)?(_Baseline)?$", out: &out, progress: &progress}
	if err := run(cfg); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, l := range strings.Split(progress.String(), "\n") {
		if f := strings.Fields(l); len(f) > 0 && (len(order) == 0 || order[len(order)-1] != f[0]) {
			order = append(order, f[0])
		}
	}
	want := []string{
		"Changes", "Changes_Baseline", "Changes", "Changes_Baseline",
		"Changes_Reused", "Changes_Reused_Baseline", "Changes_Reused", "Changes_Reused_Baseline",
	}
	if strings.Join(order, " ") != strings.Join(want, " ") {
		t.Errorf("workloads ran in the order %v, want %v", order, want)
	}
	for _, w := range []string{"Changes", "Changes_Reused"} {
		if line := w + " over " + w + "_Baseline (time, median of per-round ratios): strata "; !strings.Contains(out.String(), line) {
			t.Errorf("no cost line for %s in:\n%s", w, out.String())
		}
	}

	got := pairedRatios(
		[]sample{{V: 110, Round: 0}, {V: 130, Round: 1}, {V: 90, Round: 2}},
		[]sample{{V: 100, Round: 0}, {V: 100, Round: 1}},
	)
	if want := []float64{1.1, 1.3}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("pairedRatios = %v, want %v (round 2 has no baseline)", got, want)
	}
}
