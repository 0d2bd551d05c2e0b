package stratacli

import (
	"encoding/json"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: the version line names the module's version, the VCS
// revision, its time and state, and the Go release; an application that
// embeds the command comes first, with the command's module version from
// its dependencies.
func TestVersionOf(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs.revision", Value: "4215f2e0"}, {Key: "vcs.time", Value: "2026-12-07T06:00:00Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, c := range []struct {
		info debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: modulePath, Version: "v1.2.0"}},
			modulePath + " v1.2.0, go1.25.1"},
		{debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: modulePath, Version: "(devel)"}, Settings: vcs},
			modulePath + " (devel), revision 4215f2e0 of 2026-12-07T06:00:00Z (modified), go1.25.1"},
		{debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "example.com/app", Version: "v0.3.0"},
			Deps: []*debug.Module{{Path: "example.com/other", Version: "v9"}, {Path: modulePath, Version: "v1.2.0"}}},
			"example.com/app v0.3.0, " + modulePath + " v1.2.0, go1.25.1"},
		{debug.BuildInfo{GoVersion: "go1.25.1", Main: debug.Module{Path: "example.com/app", Version: "(devel)"},
			Deps: []*debug.Module{{Path: modulePath, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "../strata/cmd/strata"}}}},
			"example.com/app (devel), " + modulePath + " (devel, replaced by ../strata/cmd/strata), go1.25.1"},
	} {
		if got := versionOf(&c.info).String(); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestVersionCommand: version and --version print the same line, and
// version its fields as JSON with -o json.
func TestVersionCommand(t *testing.T) {
	out, _, code := runCmd(t, nil, "version")
	flag, _, flagCode := runCmd(t, nil, "--version")
	if code != 0 || flagCode != 0 || out != flag || !strings.HasPrefix(out, modulePath+" ") || strings.Count(out, "\n") != 1 {
		t.Errorf("version %q (%d), --version %q (%d)", out, code, flag, flagCode)
	}
	out, _, _ = runCmd(t, nil, "version", "-o", "json")
	var v buildVersion
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Module != modulePath || v.Version == "" || v.Go == "" {
		t.Errorf("version -o json: %v %s", err, out)
	}
	if _, errOut, code := runCmd(t, nil, "version", "x"); code != ExitUsage || !strings.Contains(errOut, "takes no arguments, got 1") {
		t.Errorf("version x: %d %q", code, errOut)
	}
}

// TestCount: counts in messages agree with their numbers.
func TestCount(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{count(0, "table"), "0 tables"}, {count(1, "table"), "1 table"}, {count(uint64(2), "object"), "2 objects"},
		{count(int64(-1), "byte"), "-1 bytes"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	if _, errOut, _ := runCmd(t, nil, "dump"); !strings.Contains(errOut, "takes 1 argument (TABLE), got 0") {
		t.Errorf("dump without a table: %q", errOut)
	}
}
