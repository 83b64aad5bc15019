package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// installs remembers, per Debian package, how NeedDebianPackage's one
// attempt to install it went: apt-get runs once per test process.
var installs = struct {
	sync.Mutex
	done map[string]*install
}{done: map[string]*install{}}

type install struct {
	once sync.Once
	err  error
}

// NeedDebianPackage makes sure program (a name looked up in PATH, or an
// absolute path) is here. When it is missing and the tests run as root with
// apt-get (as CI does) it installs the Debian package pkg; when that cannot
// be done the test is Missing: skipped on a workstation, failed under CI.
// It returns the program's path.
func NeedDebianPackage(t testing.TB, pkg, program string) string {
	t.Helper()
	if path, err := exec.LookPath(program); err == nil {
		return path
	}
	installs.Lock()
	in, ok := installs.done[pkg]
	if !ok {
		in = &install{}
		installs.done[pkg] = in
	}
	installs.Unlock()
	in.once.Do(func() { in.err = InstallDebianPackage(pkg) })
	path, err := exec.LookPath(program)
	if in.err != nil || err != nil {
		Missing(t, program, fmt.Sprintf("apt-get install %s (%v)", pkg, errors.Join(in.err, err)))
	}
	return path
}

// InstallDebianPackage installs pkg and what it needs with apt-get, which
// needs root; NeedDebianPackage is the usual way in.
func InstallDebianPackage(pkg string) error {
	if os.Geteuid() != 0 {
		return errors.New("not root, so it cannot be installed here")
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		return errors.New("no apt-get to install it with")
	}
	for _, args := range [][]string{{"update"}, {"install", "-y", pkg}} {
		// Test processes of other packages may be installing too: wait
		// for dpkg's lock rather than fail on it.
		cmd := exec.Command("apt-get", append([]string{"-o", "DPkg::Lock::Timeout=300"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("apt-get %v: %w\n%s", args, err, out)
		}
	}
	return nil
}
