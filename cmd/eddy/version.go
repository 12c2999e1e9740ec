package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// init fills in version when the build did not stamp it, so every user
// of version (eddy version, the server's discovery answer) agrees.
func init() { version = buildVersion() }

// buildVersion is the version of this binary: the one stamped with
// -ldflags "-X main.version=..." (make build uses git describe), else
// the module version Go recorded (go install ...@v1.2.3), else the VCS
// revision of a source build, else "dev".
func buildVersion() string {
	if version != "dev" && version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	return versionOf(bi)
}

// versionOf reads a version from build information.
func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return "dev"
	}
	return "dev-" + rev + dirty
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this eddy binary",
		Long: `Print the version of this binary (stamped at build time from git describe,
else the Go module version), the Go version and the platform. -o json prints
them as an object. 'eddy --version' prints the version alone.`,
		Args: noArgs,
		RunE: action(func(_ *cobra.Command, _ []string) error {
			info := map[string]string{"version": buildVersion(), "go": runtime.Version(), "platform": runtime.GOOS + "/" + runtime.GOARCH}
			if a.formatted() {
				return a.show(view{value: info, names: []string{info["version"]}}, false)
			}
			_, err := fmt.Fprintf(a.stdout, "eddy %s (%s, %s)\n", info["version"], info["go"], info["platform"])
			return err
		}),
	}
}
