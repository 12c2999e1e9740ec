package main

import (
	"runtime"
	"strings"
	"testing"
)

func TestStealNote(t *testing.T) {
	got := stealNote(cpuTimes{total: 1000, steal: 10}, cpuTimes{total: 3000, steal: 510}, true)
	if !strings.Contains(got, "25.0% of the machine's CPU time") {
		t.Fatalf("stealNote = %q, want 25.0%%", got)
	}
	if got := stealNote(cpuTimes{total: 5}, cpuTimes{total: 5}, true); got != "" {
		t.Fatalf("no CPU time passed, note %q", got)
	}
	if got := stealNote(cpuTimes{}, cpuTimes{total: 5}, false); got != "" {
		t.Fatalf("unreadable times, note %q", got)
	}
}

func TestReadCPUTimes(t *testing.T) {
	c, ok := readCPUTimes()
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	if !ok || c.total <= 0 || c.steal < 0 || c.steal > c.total {
		t.Fatalf("readCPUTimes = %+v, %t", c, ok)
	}
}
