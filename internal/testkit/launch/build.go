package launch

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Questiond is the package Build builds by default.
const Questiond = "github.com/questiond/questiond/cmd/questiond"

// BuildOptions says what to build. The zero value is cmd/questiond as
// `go build` builds it.
type BuildOptions struct {
	Package string   // "" means Questiond
	Flags   []string // added to go build, e.g. -trimpath
	Env     []string // added to go build's environment, e.g. CGO_ENABLED=0
}

// DefaultBuildTimeout bounds a build on a busy machine.
const DefaultBuildTimeout = 5 * time.Minute

// keepBuilt is how long an unused binary stays in the cache.
const keepBuilt = 24 * time.Hour

var (
	builtMu sync.Mutex
	built   = map[string]string{} // key: options; value: binary, for this process
)

// Build returns a binary of opts.Package built from the source tree as it
// is now. Binaries are cached under os.UserCacheDir()/questiond-testkit (or
// the temporary directory), keyed by a hash of every source file the
// package is built from (its module's, with the other modules' versions),
// the Go version and opts; a file lock makes concurrent test processes
// build each key once. Binaries unused for a day are removed.
func Build(ctx context.Context, opts BuildOptions) (string, error) {
	if opts.Package == "" {
		opts.Package = Questiond
	}
	memo := strings.Join(append(append([]string{opts.Package}, opts.Flags...), opts.Env...), "\x00")
	builtMu.Lock()
	defer builtMu.Unlock()
	if bin, ok := built[memo]; ok {
		return bin, nil
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", ErrNoGo
	}
	key, err := sourceKey(ctx, gobin, opts)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, key)
	bin := filepath.Join(dir, filepath.Base(opts.Package))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lock(filepath.Join(dir, "lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(bin); err != nil {
		if err := goBuild(ctx, gobin, opts, bin); err != nil {
			return "", err
		}
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	removeStale(root, key)
	built[memo] = bin
	return bin, nil
}

// goBuild builds into a temporary name beside bin and renames it, so bin
// is always whole.
func goBuild(ctx context.Context, gobin string, opts BuildOptions, bin string) error {
	ctx, cancel := context.WithTimeout(ctx, DefaultBuildTimeout)
	defer cancel()
	tmp := bin + ".tmp"
	args := append(append([]string{"build"}, opts.Flags...), "-o", tmp, opts.Package)
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Env = append(os.Environ(), opts.Env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return os.Rename(tmp, bin)
}

// sourceKey hashes what a build of opts depends on: go list names every
// package the binary is built from; files of the main module are hashed by
// content, other modules by version.
func sourceKey(ctx context.Context, gobin string, opts BuildOptions) (string, error) {
	const format = `{{.ImportPath}}{{if .Module}} {{.Module.Path}}@{{.Module.Version}}{{if .Module.Main}} {{.Dir}}` +
		`{{range .GoFiles}} {{.}}{{end}}{{range .CgoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}{{end}}`
	cmd := exec.CommandContext(ctx, gobin, append(append([]string{"list", "-deps", "-f", format}, opts.Flags...), opts.Package)...)
	cmd.Env = append(os.Environ(), opts.Env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %v\n%s", opts.Package, err, &stderr)
	}
	version, err := exec.CommandContext(ctx, gobin, "env", "GOVERSION", "GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS").Output()
	if err != nil {
		return "", fmt.Errorf("go env: %w", err)
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%q\x00%q\x00%s\n", version, opts.Flags, opts.Env, opts.Package)
	lines := bufio.NewScanner(bytes.NewReader(out))
	for lines.Scan() {
		fmt.Fprintln(h, lines.Text())
		fields := strings.Fields(lines.Text())
		if len(fields) < 3 {
			continue
		}
		for _, name := range fields[3:] {
			if err := hashFile(h, filepath.Join(fields[2], name)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

func hashFile(h io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

func cacheRoot() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil || os.MkdirAll(base, 0o755) != nil {
		base = os.TempDir()
	}
	root := filepath.Join(base, "questiond-testkit")
	return root, os.MkdirAll(root, 0o755)
}

// lock takes an exclusive lock on path, waiting for it.
func lock(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// removeStale removes the cached builds other than keep not used for
// keepBuilt, each under its lock (a build under way keeps its directory
// new).
func removeStale(root, keep string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if e.Name() == keep || err != nil || !e.IsDir() || time.Since(info.ModTime()) < keepBuilt {
			continue
		}
		dir := filepath.Join(root, e.Name())
		if unlock, err := lock(filepath.Join(dir, "lock")); err == nil {
			_ = os.RemoveAll(dir)
			unlock()
		}
	}
}
