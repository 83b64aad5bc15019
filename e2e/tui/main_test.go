package tui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildOnce sync.Once
	buildDir  string
	daemonBin string
	buildErr  error
)

// daemonBinary builds cmd/questiond once per package run, on first use, so
// that `go test -short` and `go test -list` build nothing.
func daemonBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "questiond-e2e-tui-")
		if buildErr != nil {
			return
		}
		daemonBin = filepath.Join(buildDir, "questiond")
		build := exec.Command("go", "build", "-o", daemonBin, "github.com/questiond/questiond/cmd/questiond")
		if out, err := build.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build cmd/questiond: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return daemonBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}
