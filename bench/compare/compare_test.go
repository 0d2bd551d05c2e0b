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
	defer flag.Set("test.benchtime", old)
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
