package main

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeReleaseStopsAtAFailedBuild: `make release` fails as soon as one
// platform's build fails, leaving no SHA256SUMS, instead of going on to
// the next platform and ending green with a binary missing.
func TestMakeReleaseStopsAtAFailedBuild(t *testing.T) {
	t.Parallel()
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Fatalf("make release needs make: %v", err)
	}
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.Command(mk, "-C", docsRoot, "release", "RELEASE_PLATFORMS=bogus/bogus linux/amd64", "DIST="+dist, "VERSION=vtest")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("make release with a bogus platform succeeded:\n%s", out)
	}
	if !strings.Contains(string(out), "bogus") {
		t.Errorf("the failure does not name the platform:\n%s", out)
	}
	for _, name := range []string{"SHA256SUMS", "eddy-vtest-linux-amd64"} {
		if _, err := os.Stat(filepath.Join(dist, name)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left in dist after the failed build (stat: %v)", name, err)
		}
	}
}
