package stratahive

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/cilium/hive/script"
	"github.com/spf13/pflag"

	"github.com/strata-db/strata"
)

func cmpCmd(db *strata.DB) script.Cmd {
	return script.Command(
		script.CmdUsage{
			Summary: "Wait until a table matches an expected listing",
			Args:    "table file",
			Flags: func(fs *pflag.FlagSet) {
				timeoutFlag(fs)
				fs.String("grep", "", "Compare only the rows that match this regular expression")
			},
			Detail: []string{
				"The file is a listing as db/show writes it: a header line of column",
				"names (any subset of the table's columns, in any order), then one",
				"line per object, in primary key order, each value starting at its",
				"column's position in the header. Blank lines are ignored; tabs",
				"stand for spaces to the next multiple of 8.",
				"",
				"The comparison is repeated on every change of the table until it",
				"matches, or fails after the timeout, showing the difference. With",
				"the script engine's update mode (-scripttest.update), a file that",
				"still differs at the timeout is rewritten with the table's rows.",
			},
			AutocompleteArgs: completeTables(db),
		},
		func(s *script.State, args ...string) (script.WaitFunc, error) {
			if len(args) != 2 {
				return nil, fmt.Errorf("%w: db/cmp takes a table and a file", ErrBadInput)
			}
			timeout, err := s.Flags.GetDuration("timeout")
			if err != nil {
				return nil, err
			}
			grep, err := s.Flags.GetString("grep")
			if err != nil {
				return nil, err
			}
			var grepRe *regexp.Regexp
			if grep != "" {
				if grepRe, err = regexp.Compile(grep); err != nil {
					return nil, fmt.Errorf("%w: --grep: %w", ErrBadInput, err)
				}
			}
			t, err := lookupTable(db, args[0])
			if err != nil {
				return nil, err
			}
			header, err := tableHeader(t)
			if err != nil {
				return nil, err
			}
			data, err := os.ReadFile(s.Path(args[1]))
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
			}
			want, err := parseListing(s.ExpandEnv(string(data), false))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", args[1], err)
			}
			cols, err := newColumnPicker(header, want.names)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", args[1], err)
			}
			deadline := time.NewTimer(timeout)
			defer deadline.Stop()
			for {
				objs, watch := t.AllWatch(db.ReadTxn())
				var got [][]string
				for obj := range objs {
					row, err := tableRow(t, obj, len(header))
					if err != nil {
						return nil, err
					}
					row = cols.take(row)
					if grepRe != nil && !grepRe.MatchString(strings.Join(row, " ")) {
						continue
					}
					got = append(got, row)
				}
				diff, equal := diffRows(want.names, want.rows, got)
				if equal {
					return nil, nil
				}
				select {
				case <-watch:
				case <-deadline.C:
					if s.DoUpdate {
						s.FileUpdates[args[1]] = formatListing(want.names, got)
						return nil, nil
					}
					return nil, fmt.Errorf("table %q does not match %s after %s (- expected, + actual):\n%s",
						t.Name(), args[1], timeout, diff)
				case <-s.Context().Done():
					return nil, s.Context().Err()
				}
			}
		},
	)
}

// listing is an expected table: column names and rows of values.
type listing struct {
	names []string
	rows  [][]string
}

// parseListing reads a header line and rows aligned to it.
func parseListing(text string) (listing, error) {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		l = expandTabs(strings.TrimRight(l, " \t\r"))
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return listing{}, fmt.Errorf("%w: no header line", ErrBadInput)
	}
	var ls listing
	var starts []int
	h := lines[0]
	for i := 0; i < len(h); {
		if h[i] == ' ' {
			i++
			continue
		}
		j := i
		for j < len(h) && h[j] != ' ' {
			j++
		}
		ls.names = append(ls.names, h[i:j])
		starts = append(starts, i)
		i = j
	}
	for _, l := range lines[1:] {
		row := make([]string, len(starts))
		for c, start := range starts {
			end := len(l)
			if c+1 < len(starts) {
				end = min(end, starts[c+1])
			}
			if start < end {
				row[c] = strings.TrimSpace(l[start:end])
			}
		}
		ls.rows = append(ls.rows, row)
	}
	return ls, nil
}

// expandTabs replaces tabs by spaces to the next multiple of 8.
func expandTabs(l string) string {
	if !strings.Contains(l, "\t") {
		return l
	}
	var b strings.Builder
	for _, r := range l {
		if r == '\t' {
			b.WriteString(strings.Repeat(" ", 8-b.Len()%8))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// diffRows compares expected and actual rows in order, and renders the
// difference: rows of both unmarked, expected ones missing with "-",
// actual ones not expected with "+".
func diffRows(names []string, want, got [][]string) (string, bool) {
	var b strings.Builder
	tw := newTabWriter(&b)
	fmt.Fprintf(tw, "  %s\n", strings.Join(names, "\t"))
	equal := len(want) == len(got)
	for i := range max(len(want), len(got)) {
		switch {
		case i < len(want) && i < len(got) && slices.Equal(want[i], got[i]):
			fmt.Fprintf(tw, "  %s\n", strings.Join(got[i], "\t"))
			continue
		}
		equal = false
		if i < len(want) {
			fmt.Fprintf(tw, "- %s\n", strings.Join(want[i], "\t"))
		}
		if i < len(got) {
			fmt.Fprintf(tw, "+ %s\n", strings.Join(got[i], "\t"))
		}
	}
	tw.Flush()
	return string(trimLines([]byte(b.String()))), equal
}

// formatListing writes rows under the header, aligned, as -update stores
// them.
func formatListing(names []string, rows [][]string) string {
	var b strings.Builder
	tw := newTabWriter(&b)
	fmt.Fprintln(tw, strings.Join(names, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
	return string(trimLines([]byte(b.String())))
}
