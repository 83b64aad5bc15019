package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// openPTY opens a pseudo-terminal: the terminal side, which a program
// writes to as to a terminal, and the side that reads what it wrote.
func openPTY(t *testing.T) (terminal, reader *os.File) {
	t.Helper()
	reader, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	var unlock int32
	var n uint32
	fd := reader.Fd()
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		t.Fatalf("unlocking the pseudo-terminal: %v", e)
	}
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("naming the pseudo-terminal: %v", e)
	}
	terminal, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = terminal.Close() })
	return terminal, reader
}

// On a terminal, console logs keep their coloured levels.
func TestConsoleLogsOnATerminalAreColoured(t *testing.T) {
	t.Parallel()
	terminal, reader := openPTY(t)
	got := make(chan string, 1)
	go func() {
		var seen strings.Builder
		buf := make([]byte, 4096)
		for !strings.Contains(seen.String(), "questiond listening") {
			_ = reader.SetReadDeadline(time.Now().Add(15 * time.Second))
			n, err := reader.Read(buf)
			seen.Write(buf[:n])
			if err != nil {
				break
			}
		}
		got <- seen.String()
	}()
	if err := runLoggingTo(t, terminal, nil, func() {}, "--log-format", "console", "--metrics-addr", "off"); err != nil {
		t.Fatal(err)
	}
	logs := <-got
	if !strings.Contains(logs, "questiond listening") {
		t.Fatalf("the terminal shows no listening line:\n%q", logs)
	}
	if !strings.Contains(logs, "\x1b[34mINFO\x1b[0m") {
		t.Errorf("console logs on a terminal lost their colour:\n%q", logs)
	}
}
