// Command compare runs the same workloads against Strata, cilium/statedb
// v0.9.4 and hashicorp/go-memdb v1.3.5 (and the radix-tree workloads against
// Strata's part, statedb's part and go-immutable-radix/v2) and prints the
// medians side by side with the ratio peer/Strata. See README.md.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

type config struct {
	count     int
	filter    string
	benchtime string
	smoke     bool
	benchstat string // file for Go benchmark format output, or ""
	jsonOut   string // file for JSON output, or ""
	objects   int    // objects of the large workloads, or 0 for fullSizes
	out       io.Writer
	progress  io.Writer
}

func main() {
	testing.Init() // registers -test.benchtime, which testing.Benchmark reads
	var cfg config
	flag.IntVar(&cfg.count, "count", 5, "rounds per workload; the table shows medians")
	flag.StringVar(&cfg.filter, "filter", "", "run only workloads whose name matches this regexp")
	flag.StringVar(&cfg.benchtime, "benchtime", "1s", "time (or Nx iterations) per measurement")
	quick := flag.Bool("quick", false, "shorthand for -benchtime 200ms -count 1 (a first look)")
	flag.BoolVar(&cfg.smoke, "smoke", false, "run every workload once on small data and check results (CI)")
	flag.StringVar(&cfg.benchstat, "benchstat", "", "also write every sample in Go benchmark format to this file (benchstat -col /db)")
	flag.StringVar(&cfg.jsonOut, "json", "", "also write all samples and medians as JSON to this file")
	list := flag.Bool("list", false, "list the workloads and exit")
	flag.IntVar(&cfg.objects, "objects", 0, "objects of the large workloads (And_*, DeleteMatches*, ModifyMatches*, PointGets_Large) instead of 1M: 10000000 for the 10M rows")
	flag.Parse()
	if *quick {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["benchtime"] {
			cfg.benchtime = "200ms"
		}
		if !set["count"] {
			cfg.count = 1
		}
	}
	if *list {
		for _, w := range workloads() {
			fmt.Printf("%-28s %s\n", w.Name, w.Op)
		}
		return
	}
	cfg.out, cfg.progress = os.Stdout, os.Stderr
	if err := run(cfg); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// sample is one measurement: v is ns/op (heap bytes/object for memory).
type sample struct {
	V        float64 `json:"v"`
	Allocs   float64 `json:"allocs_per_op"`
	Bytes    float64 `json:"bytes_per_op"`
	N        int     `json:"n"`
	Round    int     `json:"round"`
	position int
}

type row struct {
	w       Workload
	impls   []string
	samples [][]sample // per impl
}

func implNames(k Kind) []string {
	var names []string
	if k == KindRadix {
		for _, f := range radixTrees {
			names = append(names, f.Name)
		}
		return names
	}
	if k == KindRead {
		for _, f := range readDBs {
			names = append(names, f.Name)
		}
		return names
	}
	if k == KindLPM {
		for _, f := range lpmDBs {
			names = append(names, f.Name)
		}
		return names
	}
	for _, f := range databases {
		names = append(names, f.Name)
	}
	return names
}

func run(cfg config) error {
	start := time.Now()
	if cfg.smoke {
		cfg.benchtime, cfg.count = "1x", 1
		sizes = smokeSizes
	} else {
		sizes = fullSizes
		if n := cfg.objects; n > 0 {
			if n%(10*batchN) != 0 {
				return fmt.Errorf("-objects %d: a multiple of %d", n, 10*batchN)
			}
			sizes.AndN, sizes.DeleteN, sizes.LargeN = n, n, n
		}
	}
	if cfg.count < 1 {
		return errors.New("-count must be at least 1")
	}
	if err := flag.Set("test.benchtime", cfg.benchtime); err != nil {
		return fmt.Errorf("-benchtime: %v", err)
	}
	re, err := regexp.Compile(cfg.filter)
	if err != nil {
		return fmt.Errorf("-filter: %v", err)
	}
	var selected []Workload
	for _, w := range workloads() {
		if re.MatchString(w.Name) {
			selected = append(selected, w)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("no workload matches %q", cfg.filter)
	}

	var rows []*row
	var failed []string
	group := ""
	for k := 0; k < len(selected); k++ {
		// A workload and its baseline (W_Baseline) run their rounds in
		// turn, so that their ratio, the cost of what W adds, compares
		// runs seconds apart rather than minutes (printBaselines).
		unit := []Workload{selected[k]}
		if k+1 < len(selected) && selected[k+1].Name == selected[k].Name+"_Baseline" {
			unit = append(unit, selected[k+1])
			k++
		}
		if w := unit[0]; w.Group != group {
			clearCaches()
			group = w.Group
		}
		var unitRows []*row
		for _, w := range unit {
			rw := &row{w: w, impls: implNames(w.Kind)}
			rw.samples = make([][]sample, len(rw.impls))
			unitRows = append(unitRows, rw)
		}
		rounds := cfg.count
		if unit[0].Kind == KindMemory {
			rounds = min(rounds, 3) // deterministic enough; each round builds 3 x MemN objects
		}
		for round := range rounds {
			for _, rw := range unitRows {
				w := rw.w
				// Interleave the implementations, rotating who goes
				// first, so that drift of the shared machine hits all
				// of them alike.
				for j := range rw.impls {
					i := (round + j) % len(rw.impls)
					if slices.Contains(w.NA, rw.impls[i]) {
						continue
					}
					s, errs := measure(w, i)
					s.Round, s.position = round, j
					if len(errs) > 0 {
						for _, e := range errs {
							failed = append(failed, fmt.Sprintf("%s/%s: %s", w.Name, rw.impls[i], e))
						}
						continue
					}
					rw.samples[i] = append(rw.samples[i], s)
					if cfg.progress != nil {
						fmt.Fprintf(cfg.progress, "%-28s round %d/%d %-13s %s\n", w.Name, round+1, rounds, rw.impls[i], fmtValue(w.Kind, s.V))
					}
				}
			}
		}
		rows = append(rows, unitRows...)
	}
	clearCaches()

	printTables(cfg.out, rows, cfg)
	if cfg.benchstat != "" {
		if err := writeBenchstat(cfg.benchstat, rows); err != nil {
			return err
		}
	}
	if cfg.jsonOut != "" {
		if err := writeJSON(cfg.jsonOut, rows, cfg); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		for _, f := range failed {
			fmt.Fprintln(cfg.out, "FAIL", f)
		}
		return fmt.Errorf("%d check(s) failed", len(failed))
	}
	if cfg.smoke {
		fmt.Fprintf(cfg.out, "smoke: %d workloads x 3 implementations ran and checked their results in %.1fs\n",
			len(selected), time.Since(start).Seconds())
	}
	return nil
}

// measure runs workload w against implementation i once.
func measure(w Workload, i int) (sample, []string) {
	takeFailures()
	if w.Kind == KindMemory {
		v, err := w.Memory(databases[i])
		if err != nil {
			return sample{}, []string{err.Error()}
		}
		return sample{V: v, N: 1}, nil
	}
	var res testing.BenchmarkResult
	if w.Kind == KindRadix {
		f := radixTrees[i]
		res = testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); w.Radix(b, f) })
	} else if w.Kind == KindRead {
		f := readDBs[i]
		res = testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); w.Read(b, f) })
	} else if w.Kind == KindLPM {
		f := lpmDBs[i]
		res = testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); w.LPM(b, f) })
	} else {
		f := databases[i]
		res = testing.Benchmark(func(b *testing.B) { b.ReportAllocs(); w.DB(b, f) })
	}
	errs := takeFailures()
	if len(errs) == 0 && res.N == 0 {
		errs = []string{"benchmark failed without a message"}
	}
	if len(errs) > 0 {
		return sample{}, errs
	}
	n := float64(res.N)
	return sample{
		V:      float64(res.T.Nanoseconds()) / n,
		Allocs: float64(res.MemAllocs) / n,
		Bytes:  float64(res.MemBytes) / n,
		N:      res.N,
	}, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func values(ss []sample, get func(sample) float64) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = get(s)
	}
	return out
}

// spread is the largest deviation from the median, in percent.
func spread(xs []float64) float64 {
	m := median(xs)
	d := 0.0
	for _, x := range xs {
		d = math.Max(d, math.Abs(x-m))
	}
	return 100 * d / m
}

func fmtValue(k Kind, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	if k == KindMemory {
		return fmt.Sprintf("%.0f B", v)
	}
	switch {
	case v < 10:
		return fmt.Sprintf("%.2fns", v)
	case v < 1000:
		return fmt.Sprintf("%.0fns", v)
	case v < 1e6:
		return fmt.Sprintf("%.3gµs", v/1e3)
	case v < 1e9:
		return fmt.Sprintf("%.3gms", v/1e6)
	}
	return fmt.Sprintf("%.3gs", v/1e9)
}

func fmtAllocs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case math.Abs(v-math.Round(v)) >= 0.05 && v < 100:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func fmtRatio(peer, base float64) string {
	if math.IsNaN(peer) || math.IsNaN(base) || base == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", peer/base)
}

func printTables(out io.Writer, rows []*row, cfg config) {
	fmt.Fprintf(out, "compare: medians of %d round(s), benchtime %s, %s %s/%s, GOMAXPROCS=%d\n",
		cfg.count, cfg.benchtime, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Fprintln(out, "ratio = peer/strata: above 1x strata is faster (smaller). ±: largest deviation from the median.")
	for _, kind := range []Kind{KindDB, KindRead, KindLPM, KindRadix, KindMemory} {
		var rs []*row
		for _, r := range rows {
			if r.w.Kind == kind {
				rs = append(rs, r)
			}
		}
		if len(rs) == 0 {
			continue
		}
		names := implNames(kind)
		unit := "time/op"
		if kind == KindMemory {
			unit = "B/object"
		}
		hdr := []string{"workload"}
		for _, n := range names {
			hdr = append(hdr, n+" "+unit)
		}
		for _, n := range names[1:] {
			hdr = append(hdr, n+"/"+names[0])
		}
		if kind != KindMemory {
			for _, n := range names {
				hdr = append(hdr, n+" allocs")
			}
		}
		hdr = append(hdr, "op")
		table := [][]string{hdr}
		for _, r := range rs {
			cols := []string{r.w.Name}
			meds := make([]float64, len(names))
			allocs := make([]float64, len(names))
			na := func(i int) bool { return slices.Contains(r.w.NA, names[i]) }
			for i := range names {
				vs := values(r.samples[i], func(s sample) float64 { return s.V })
				meds[i] = median(vs)
				allocs[i] = median(values(r.samples[i], func(s sample) float64 { return s.Allocs }))
				c := fmtValue(kind, meds[i])
				if len(vs) > 1 {
					c += fmt.Sprintf(" ±%.0f%%", spread(vs))
				}
				if na(i) {
					c = "n/a"
				}
				cols = append(cols, c)
			}
			for i := 1; i < len(names); i++ {
				if na(i) || na(0) {
					cols = append(cols, "n/a")
					continue
				}
				cols = append(cols, fmtRatio(meds[i], meds[0]))
			}
			if kind != KindMemory {
				for i := range names {
					if na(i) {
						cols = append(cols, "n/a")
						continue
					}
					cols = append(cols, fmtAllocs(allocs[i]))
				}
			}
			cols = append(cols, r.w.Op)
			table = append(table, cols)
		}
		fmt.Fprintln(out)
		writeMarkdown(out, table)
		printBaselines(out, rs, names)
	}
}

// printBaselines prints, for each workload W run with W_Baseline (the same
// work without the feature W measures, e.g. Changes without a feed), what
// the feature costs each implementation: the median over rounds of
// W / W_Baseline - 1, each round's two measurements taken one after the
// other (run).
func printBaselines(out io.Writer, rs []*row, names []string) {
	byName := map[string]*row{}
	for _, r := range rs {
		byName[r.w.Name] = r
	}
	for _, r := range rs {
		base, ok := byName[r.w.Name+"_Baseline"]
		if !ok {
			continue
		}
		var parts []string
		for i, n := range names {
			ratios := pairedRatios(r.samples[i], base.samples[i])
			if len(ratios) == 0 {
				parts = append(parts, n+" n/a")
				continue
			}
			parts = append(parts, fmt.Sprintf("%s %+.0f%%", n, 100*(median(ratios)-1)))
		}
		fmt.Fprintf(out, "\n%s over %s_Baseline (time, median of per-round ratios): %s\n", r.w.Name, r.w.Name, strings.Join(parts, ", "))
	}
}

// pairedRatios returns w.V / b.V for each round that has a sample in both.
func pairedRatios(w, b []sample) []float64 {
	byRound := map[int]float64{}
	for _, s := range b {
		byRound[s.Round] = s.V
	}
	var out []float64
	for _, s := range w {
		if v, ok := byRound[s.Round]; ok && v > 0 {
			out = append(out, s.V/v)
		}
	}
	return out
}

// writeMarkdown prints a Markdown table with padded columns: the first and
// last columns (names, descriptions) left-aligned, the figures right-aligned.
func writeMarkdown(out io.Writer, table [][]string) {
	width := make([]int, len(table[0]))
	for _, r := range table {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	left := func(i int) bool { return i == 0 || i == len(width)-1 }
	line := func(r []string) {
		var sb strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if left(i) {
				sb.WriteString("| " + c + pad + " ")
			} else {
				sb.WriteString("| " + pad + c + " ")
			}
		}
		fmt.Fprintln(out, sb.String()+"|")
	}
	line(table[0])
	var sb strings.Builder
	for i, w := range width {
		if left(i) {
			sb.WriteString("|:" + strings.Repeat("-", w+1))
		} else {
			sb.WriteString("|" + strings.Repeat("-", w+1) + ":")
		}
	}
	fmt.Fprintln(out, sb.String()+"|")
	for _, r := range table[1:] {
		line(r)
	}
}

// writeBenchstat writes every sample as a Go benchmark result line, named
// Benchmark<workload>/db=<impl>, so `benchstat -col /db FILE` compares them.
func writeBenchstat(path string, rows []*row) error {
	var sb strings.Builder
	fmt.Fprintf(&sb, "goos: %s\ngoarch: %s\npkg: github.com/strata-db/strata/bench/compare\n", runtime.GOOS, runtime.GOARCH)
	for _, r := range rows {
		for i, name := range r.impls {
			impl := strings.ReplaceAll(name, "/", "-")
			for _, s := range r.samples[i] {
				if r.w.Kind == KindMemory {
					fmt.Fprintf(&sb, "Benchmark%s/db=%s-%d\t1\t%.1f B/object\n", r.w.Name, impl, runtime.GOMAXPROCS(0), s.V)
					continue
				}
				fmt.Fprintf(&sb, "Benchmark%s/db=%s-%d\t%d\t%.2f ns/op\t%.0f B/op\t%.2f allocs/op\n",
					r.w.Name, impl, runtime.GOMAXPROCS(0), s.N, s.V, s.Bytes, s.Allocs)
			}
		}
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func writeJSON(path string, rows []*row, cfg config) error {
	type implOut struct {
		Impl         string   `json:"impl"`
		Median       float64  `json:"median"`
		MedianAllocs float64  `json:"median_allocs_per_op"`
		Samples      []sample `json:"samples"`
	}
	type rowOut struct {
		Workload string    `json:"workload"`
		Op       string    `json:"op"`
		Unit     string    `json:"unit"`
		Impls    []implOut `json:"impls"`
	}
	doc := struct {
		Count     int      `json:"count"`
		Benchtime string   `json:"benchtime"`
		Go        string   `json:"go"`
		Rows      []rowOut `json:"rows"`
	}{Count: cfg.count, Benchtime: cfg.benchtime, Go: runtime.Version()}
	for _, r := range rows {
		ro := rowOut{Workload: r.w.Name, Op: r.w.Op, Unit: "ns/op"}
		if r.w.Kind == KindMemory {
			ro.Unit = "B/object"
		}
		for i, name := range r.impls {
			if len(r.samples[i]) == 0 {
				continue // n/a, or every sample failed
			}
			ro.Impls = append(ro.Impls, implOut{
				Impl:         name,
				Median:       median(values(r.samples[i], func(s sample) float64 { return s.V })),
				MedianAllocs: median(values(r.samples[i], func(s sample) float64 { return s.Allocs })),
				Samples:      r.samples[i],
			})
		}
		doc.Rows = append(doc.Rows, ro)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
