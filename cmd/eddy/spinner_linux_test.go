//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: its master and its slave (the end a
// program writes to as its terminal).
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("no /dev/ptmx: this machine has no pseudo-terminals")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// TestHistorySpinnerOnATerminal: while history pages past short filtered
// pages, a spinner on a terminal's stderr says it is scanning (one line
// rewritten in place, cleared before the table); /dev/null and pipes get
// none.
func TestHistorySpinnerOnATerminal(t *testing.T) {
	t.Parallel()
	master, slave := openPTY(t)
	_, base := newFakeWatch(t, 9,
		page([]int64{9}, `,"cursor":8`),
		page(nil, `,"cursor":5`),
		page([]int64{4, 3}, `,"cursor":3`),
	)
	var stdout syncBuffer
	a := &app{stdout: &stdout, stderr: slave, stdin: strings.NewReader(""), getenv: hermeticEnv(nil)}
	if code := a.run(context.Background(), []string{"--server", base, "--token", "tok", "history", "--types", "note", "--limit", "3"}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	slave.Close()
	out, err := io.ReadAll(master)
	if len(out) == 0 && err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, want := range []string{"⠋ scanning history: 1 rows shown, at seq 8", "⠙ scanning history: 1 rows shown, at seq 5", "\r\x1b[K", "more: next page with --before 3"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, got)
		}
	}
	if rows := tableRows(stdout.String()); len(rows) != 3 {
		t.Errorf("rows:\n%s", stdout.String())
	}

	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	if isTerminal(devNull) {
		t.Errorf("%s is taken for a terminal", os.DevNull)
	}
	if !isTerminal(master) {
		t.Errorf("a pseudo-terminal is not taken for a terminal")
	}
}
