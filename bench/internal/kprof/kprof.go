// Package kprof takes a CPU profile of running processes that sees into
// the kernel, with perf(1) where the machine has it, and sums each
// process's samples by where they were spent: user space, or the kernel
// by system call. A write(2) to a socket is split in three: the system
// call's entry and file lookup, the socket send path, and the delivery
// into the reading socket that the sender's own system call runs on
// loopback (the softirq receive path): for a server writing to many
// local clients, that delivery is a cost of the write, not of the
// reader.
//
// The rusage figures a scenario already reports say how much of a
// process's time was the kernel's; this says which of the kernel's work
// it was, which is the profile issue 15 asks of a target the kernel
// bounds.
package kprof

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Hz is the sampling frequency of every profile.
const Hz = 999

// Where a sample was spent.
const (
	User       = "user space"
	WriteSend  = "write(2): socket send path"
	WriteDeliv = "write(2): loopback delivery to the reader"
	WriteOther = "write(2): entry and file lookup"
	Read       = "read(2)"
	Epoll      = "epoll_wait(2)"
	Futex      = "futex(2)"
	OtherCall  = "other system calls" // a system call perf could not name
	Fault      = "page faults"
	Interrupt  = "interrupts and other kernel work"
)

// Split is one process's samples by where they were spent.
type Split struct {
	Samples int
	ByPlace map[string]int
}

// Share returns the fraction of the samples spent at any of places.
func (s Split) Share(places ...string) float64 {
	if s.Samples == 0 {
		return 0
	}
	n := 0
	for _, p := range places {
		n += s.ByPlace[p]
	}
	return float64(n) / float64(s.Samples)
}

// Kernel returns the fraction of the samples spent in the kernel.
func (s Split) Kernel() float64 { return 1 - s.Share(User) }

// Session is a profile being recorded: perf record attached to the
// processes with its events disabled until Enable.
type Session struct {
	dir  string
	cmd  *exec.Cmd
	ctl  *os.File // perf's control descriptor (commands)
	ack  *bufio.Reader
	acks *os.File
	done chan error
}

// ErrUnavailable reports that no profile can be taken here.
var ErrUnavailable = errors.New("perf not found")

// Start attaches perf record to pids, sampling at Hz with call graphs,
// events disabled until Enable. It fails with ErrUnavailable when perf
// is not installed; any other failure (a kernel that refuses
// perf_event_open, say) is reported as it comes.
func Start(ctx context.Context, pids ...int) (*Session, error) {
	bin, err := exec.LookPath("perf")
	if err != nil {
		return nil, ErrUnavailable
	}
	dir, err := os.MkdirTemp("", "kprof-")
	if err != nil {
		return nil, err
	}
	s := &Session{dir: dir, done: make(chan error, 1)}
	if err := s.start(ctx, bin, pids); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start runs perf record with a control pipe (fd 3) and an
// acknowledgement pipe (fd 4).
func (s *Session) start(ctx context.Context, bin string, pids []int) error {
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return err
	}
	ackR, ackW, err := os.Pipe()
	if err != nil {
		ctlR.Close()
		ctlW.Close()
		return err
	}
	ids := make([]string, len(pids))
	for i, p := range pids {
		ids[i] = strconv.Itoa(p)
	}
	var out strings.Builder
	s.cmd = exec.CommandContext(ctx, bin, "record", "-g", "-F", strconv.Itoa(Hz), "-D", "-1",
		"--control", "fd:3,4", "-p", strings.Join(ids, ","), "-o", filepath.Join(s.dir, "perf.data"))
	s.cmd.ExtraFiles = []*os.File{ctlR, ackW}
	s.cmd.Stdout, s.cmd.Stderr = &out, &out
	err = s.cmd.Start()
	ctlR.Close()
	ackW.Close()
	if err != nil {
		ctlW.Close()
		ackR.Close()
		return fmt.Errorf("perf record: %w", err)
	}
	s.ctl, s.acks, s.ack = ctlW, ackR, bufio.NewReader(ackR)
	go func() {
		err := s.cmd.Wait()
		if err != nil {
			err = fmt.Errorf("perf record: %w: %s", err, firstLine(out.String()))
		}
		s.done <- err
	}()
	return nil
}

// Enable starts sampling and returns once perf has.
func (s *Session) Enable() error { return s.command("enable") }

// Disable stops sampling and returns once perf has.
func (s *Session) Disable() error { return s.command("disable") }

// ackTimeout bounds the wait for perf's acknowledgement of a command.
const ackTimeout = 10 * time.Second

// command sends cmd on the control pipe and waits for perf's "ack".
func (s *Session) command(cmd string) error {
	if _, err := io.WriteString(s.ctl, cmd+"\n"); err != nil {
		return fmt.Errorf("perf %s: %w", cmd, err)
	}
	got := make(chan error, 1)
	go func() {
		// perf writes "ack\n" with its C string's NUL.
		l, err := s.ack.ReadString('\n')
		if err == nil && strings.Trim(l, "\x00\n ") != "ack" {
			err = fmt.Errorf("answered %q", l)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err == nil {
			return nil
		}
		select { // an acknowledgement pipe that ended: perf did, say why
		case derr := <-s.done:
			s.done <- derr
			return fmt.Errorf("perf %s: perf ended: %w", cmd, derr)
		case <-time.After(time.Second):
			return fmt.Errorf("perf %s: %w", cmd, err)
		}
	case err := <-s.done:
		s.done <- err
		return fmt.Errorf("perf %s: perf ended: %w", cmd, err)
	case <-time.After(ackTimeout):
		return fmt.Errorf("perf %s: no acknowledgement in %v", cmd, ackTimeout)
	}
}

// Stop ends the recording and returns each process's split, by pid.
func (s *Session) Stop(ctx context.Context) (map[int]Split, error) {
	defer os.RemoveAll(s.dir)
	_ = s.cmd.Process.Signal(os.Interrupt) // perf record's way to end and write its file
	err := <-s.done
	s.ctl.Close()
	s.acks.Close()
	if err != nil && !interrupted(err) {
		return nil, err
	}
	script := exec.CommandContext(ctx, s.cmd.Path, "script", "-i", filepath.Join(s.dir, "perf.data"), "-F", "pid,ip,sym")
	out, err := script.StdoutPipe()
	if err != nil {
		return nil, err
	}
	var stderr strings.Builder
	script.Stderr = &stderr
	if err := script.Start(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	splits, perr := Parse(out)
	_, _ = io.Copy(io.Discard, out) // what a failed Parse left, so perf script can end
	if err := script.Wait(); err != nil {
		return nil, fmt.Errorf("perf script: %w: %s", err, firstLine(stderr.String()))
	}
	return splits, perr
}

// firstLine returns the first non-blank line of perf's output, which
// says why it failed (the rest advises the reader of a terminal).
func firstLine(s string) string {
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "no output"
}

// interrupted reports whether perf record's exit came from the SIGINT
// that Stop sends (perf exits 0 on it, or dies of it).
func interrupted(err error) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && !ee.Exited()
}

// Parse reads perf script output of the fields pid, ip and sym: a
// sample's line holding its pid, then one line per frame of its call
// chain, leaf first ("\t<ip> <symbol>"), then a blank line. It returns
// each process's split.
func Parse(r io.Reader) (map[int]Split, error) {
	splits := map[int]Split{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	pid, frames := -1, []frame(nil)
	flush := func() {
		if pid >= 0 && len(frames) > 0 {
			s := splits[pid]
			if s.ByPlace == nil {
				s.ByPlace = map[string]int{}
			}
			s.Samples++
			s.ByPlace[place(frames)]++
			splits[pid] = s
		}
		pid, frames = -1, frames[:0]
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case line[0] == '\t':
			if f, ok := parseFrame(line); ok {
				frames = append(frames, f)
			}
		default:
			flush()
			p, err := strconv.Atoi(strings.TrimSpace(line))
			if err != nil {
				return nil, fmt.Errorf("kprof: sample line %q: %w", line, err)
			}
			pid = p
		}
	}
	flush()
	return splits, sc.Err()
}

// frame is one entry of a call chain.
type frame struct {
	kernel bool // the address is the kernel's
	sym    string
}

// parseFrame reads "<ip hex> <symbol>[+off]".
func parseFrame(line string) (frame, bool) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return frame{}, false
	}
	ip, err := strconv.ParseUint(fields[0], 16, 64)
	if err != nil {
		return frame{}, false
	}
	sym := ""
	if len(fields) > 1 {
		sym, _, _ = strings.Cut(fields[1], "+")
	}
	return frame{kernel: ip >= kernelBase, sym: sym}, true
}

// kernelBase is where the x86-64 and arm64 kernels' address space
// starts.
const kernelBase = 0xffff800000000000

// place says where a sample whose call chain is frames (leaf first) was
// spent: user space, the system call it was made in (named by the
// kernel's entry point for it), or other kernel work.
func place(frames []frame) string {
	if len(frames) == 0 || !frames[0].kernel {
		return User
	}
	has := func(names ...string) bool {
		for _, f := range frames {
			if slices.Contains(names, f.sym) {
				return true
			}
		}
		return false
	}
	switch call := syscallOf(frames); call {
	case "write", "writev", "pwrite64", "sendmsg", "sendto":
		switch {
		case has("net_rx_action", "process_backlog", "tcp_v4_rcv", "tcp_v6_rcv"):
			return WriteDeliv
		case has("sock_write_iter", "sock_sendmsg", "inet_sendmsg", "tcp_sendmsg", "tcp_sendmsg_locked"):
			return WriteSend
		}
		return WriteOther
	case "read", "readv", "recvfrom", "recvmsg":
		return Read
	case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		return Epoll
	case "futex":
		return Futex
	case "":
	default:
		return call + "(2)"
	}
	switch {
	case has("entry_SYSCALL_64_after_hwframe", "entry_SYSCALL_64", "do_syscall_64", "el0_svc"):
		return OtherCall
	case has("asm_exc_page_fault", "exc_page_fault", "do_page_fault"):
		return Fault
	}
	return Interrupt
}

// syscallPrefixes name a system call's entry points in the kernel's
// symbols (ksys_write, __x64_sys_close, __arm64_sys_futex, ...).
var syscallPrefixes = []string{"__x64_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "ksys_"}

// syscallOf returns the system call a kernel call chain runs in, by the
// outermost entry point named in it, or "" if none is (an interrupt, a
// fault, or a kernel whose symbols perf could not read). vfs_write and
// vfs_read, which every path into them passes, name write and read when
// the entry point was inlined away.
func syscallOf(frames []frame) string {
	name := ""
	for _, f := range frames {
		if !f.kernel {
			break
		}
		for _, p := range syscallPrefixes {
			if rest, ok := strings.CutPrefix(f.sym, p); ok {
				name = rest
			}
		}
		if name == "" {
			switch f.sym {
			case "vfs_write", "do_writev":
				name = "write"
			case "vfs_read", "do_readv":
				name = "read"
			case "do_epoll_wait":
				name = "epoll_wait"
			case "do_futex":
				name = "futex"
			}
		}
	}
	return name
}

// Summary says in one line where a process's samples went: its kernel
// share, then every place holding at least 1% of them, largest first.
func Summary(s Split) string {
	if s.Samples == 0 {
		return "no samples"
	}
	type kv struct {
		place string
		n     int
	}
	var places []kv
	for p, n := range s.ByPlace {
		if float64(n) >= 0.01*float64(s.Samples) {
			places = append(places, kv{p, n})
		}
	}
	sort.Slice(places, func(i, j int) bool {
		if places[i].n != places[j].n {
			return places[i].n > places[j].n
		}
		return places[i].place < places[j].place
	})
	parts := make([]string, len(places))
	for i, p := range places {
		parts[i] = fmt.Sprintf("%s %.0f%%", p.place, 100*float64(p.n)/float64(s.Samples))
	}
	return fmt.Sprintf("%.0f%% in the kernel (%s; %d samples)", 100*s.Kernel(), strings.Join(parts, ", "), s.Samples)
}
