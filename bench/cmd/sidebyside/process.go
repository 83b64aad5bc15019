package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/questiond/questiond/internal/testkit/launch"
)

const (
	startTimeout = 90 * time.Second // OpenCode takes seconds to start on a busy machine
	stopTimeout  = 15 * time.Second // from SIGTERM until it exits, then SIGKILL
)

// process is one server under test running as a process of its own, so that
// its resident memory is its alone and not the load generator's.
type process struct {
	*launch.Process
	name string
	log  string // file holding its stdout and stderr
}

// startProcess starts cmd with its output going to logPath and, when
// addrIn is not nil, waits until addrIn finds the address it listens on in
// a line of it (launch.Start). The kernel kills the process if this one
// dies first.
func startProcess(name string, cmd *exec.Cmd, logPath string, addrIn func(line string) string) (*process, string, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, "", err
	}
	p, err := launch.Start(cmd, launch.Options{Name: name, AddrIn: addrIn, NoAddr: addrIn == nil, Log: logFile,
		StartTimeout: startTimeout, StopTimeout: stopTimeout})
	if err != nil {
		logFile.Close()
		return nil, "", fmt.Errorf("%w\n(all of it in %s)", err, logPath)
	}
	go func() {
		<-p.Exited()
		logFile.Close()
	}()
	return &process{Process: p, name: name, log: logPath}, p.Addr, nil
}

func (p *process) pid() int { return p.Pid() }

// stop ends the process with SIGTERM, or SIGKILL after stopTimeout, and
// says why it did not exit cleanly (it had died on its own before, say).
func (p *process) stop() error { return p.Stop() }

// waitHTTP polls url until it answers 200, the process exits or the
// start timeout is over. Each try gets a few seconds: OpenCode accepts
// connections before it is ready, and never answers a request sent then.
func waitHTTP(p *process, url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	client := &http.Client{Timeout: 5 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if res, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.Exited():
			return fmt.Errorf("%s exited before answering (%v); see %s", p.name, p.Err(), p.log)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer %s within %v; see %s", p.name, url, startTimeout, p.log)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// environWithout is this process's environment minus the variables whose
// names start with one of prefixes.
func environWithout(prefixes ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// residentKiB is the resident set (VmRSS) of pid and all its descendants,
// in KiB: OpenCode may run helpers, and their memory is its cost too.
func residentKiB(pid int) (int64, error) {
	total := int64(0)
	for _, p := range processTree(pid) {
		kib, err := vmRSS(p)
		if err != nil {
			if p == pid {
				return 0, err
			}
			continue // a child that just exited
		}
		total += kib
	}
	return total, nil
}

func processTree(pid int) []int {
	pids := []int{pid}
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		children, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, c := range strings.Fields(string(children)) {
			if child, err := strconv.Atoi(c); err == nil {
				pids = append(pids, processTree(child)...)
			}
		}
	}
	return pids
}

func vmRSS(pid int) (int64, error) {
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(status)) {
		if value, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		}
	}
	return 0, errors.New("no VmRSS in /proc/" + strconv.Itoa(pid) + "/status")
}
