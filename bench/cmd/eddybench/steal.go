package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// cpuTimes are the machine's CPU times from /proc/stat, in clock ticks:
// all of them, and those the hypervisor stole (time a virtual CPU was
// ready to run but the host ran something else).
type cpuTimes struct{ total, steal int64 }

// readCPUTimes reads the aggregate "cpu" line of /proc/stat; ok is false
// where there is none (not Linux).
func readCPUTimes() (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return cpuTimes{}, false
	}
	var t cpuTimes
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return cpuTimes{}, false
		}
		if i < 8 { // user nice system idle iowait irq softirq steal; guest is inside user
			t.total += n
		}
		if i == 7 {
			t.steal = n
		}
	}
	return t, true
}

// stealNote describes the CPU time stolen between two readings, as a
// share of the machine's CPU time; "" when it cannot tell.
func stealNote(from, to cpuTimes, ok bool) string {
	total := to.total - from.total
	if !ok || total <= 0 {
		return ""
	}
	return fmt.Sprintf("CPU time stolen by the hypervisor during this scenario (steal in /proc/stat): %.1f%% of the machine's CPU time.",
		100*float64(to.steal-from.steal)/float64(total))
}
