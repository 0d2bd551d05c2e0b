package stratacli

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// modulePath is the module of this package, whose version an
// application that embeds the command finds among its dependencies.
const modulePath = "github.com/strata-db/strata/cmd/strata"

// buildVersion is what version tells of the binary, from the build
// information Go records in it (runtime/debug.ReadBuildInfo).
type buildVersion struct {
	// Module is the module of the command (this package's), and Version
	// its version: a tag such as "v1.2.0", a pseudo-version, or "(devel)"
	// when built in its own repository.
	Module  string `json:"module"`
	Version string `json:"version"`
	// Main and MainVersion are the binary's main module, when it is not
	// Module: an application that embeds the command.
	Main        string `json:"main,omitempty"`
	MainVersion string `json:"main_version,omitempty"`
	// Revision, Time and Modified are the version control state the
	// binary was built from (vcs.revision, vcs.time, vcs.modified), if
	// the build recorded it ("go build" in a git checkout does).
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// Go is the Go release that built the binary.
	Go string `json:"go"`
}

// readVersion reads the binary's build information; a binary without
// any (built without module support) gives "unknown".
func readVersion() buildVersion {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion{Module: modulePath, Version: "unknown"}
	}
	return versionOf(info)
}

// versionOf returns what info tells of the command's version.
func versionOf(info *debug.BuildInfo) buildVersion {
	v := buildVersion{Module: modulePath}
	v.Go = info.GoVersion
	if info.Main.Path == modulePath || info.Main.Path == "" {
		v.Version = info.Main.Version
	} else {
		v.Main, v.MainVersion = info.Main.Path, info.Main.Version
		for _, dep := range info.Deps {
			if dep.Path == modulePath {
				if dep.Replace != nil && dep.Replace.Version == "" {
					dep = dep.Replace
					v.Version = "(devel, replaced by " + dep.Path + ")"
					break
				}
				v.Version = dep.Version
			}
		}
	}
	if v.Version == "" {
		v.Version = "(devel)"
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is the version on one line: "v1.2.0, revision 4215f2e… of
// 2026-12-07T06:00:00Z (modified), go1.25.1", and the application's
// module first when one embeds the command.
func (v buildVersion) String() string {
	var b strings.Builder
	if v.Main != "" {
		fmt.Fprintf(&b, "%s %s, ", v.Main, v.MainVersion)
	}
	fmt.Fprintf(&b, "%s %s", v.Module, v.Version)
	if v.Revision != "" {
		fmt.Fprintf(&b, ", revision %s", v.Revision)
		if v.Time != "" {
			fmt.Fprintf(&b, " of %s", v.Time)
		}
		if v.Modified {
			b.WriteString(" (modified)")
		}
	}
	if v.Go != "" {
		fmt.Fprintf(&b, ", %s", v.Go)
	}
	return b.String()
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the command's version: module version, VCS revision, Go release",
		Long: `Print the version of the command's module, the version control revision
the binary was built from (with its time, and whether the checkout had
changes), and the Go release that built it, as the binary's build
information records them. --version prints the same line.`,
		Args: maxArgs(0, ""),
		RunE: func(cmd *cobra.Command, args []string) error {
			v := readVersion()
			return writeDoc(a.out, a.format, v, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, v.String())
				return err
			})
		},
	}
}
