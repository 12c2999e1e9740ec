package kprof

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"testing"
)

// script is perf script -F pid,ip,sym output as perf 6.1 prints it: a
// write on loopback whose sender runs the reader's receive path, one
// in the send path, a futex wait, a close, a user-space sample and a
// sample of another process with an unresolved kernel frame.
const script = `16150 
	ffffffff82087a10 tcp_v4_rcv+0x40
	ffffffff8203a000 process_backlog
	ffffffff8203b000 net_rx_action
	ffffffff8207db0f __tcp_transmit_skb
	ffffffff82065a60 tcp_sendmsg_locked
	ffffffff816dd250 vfs_write
	ffffffff816dd543 ksys_write
	ffffffff8223df91 do_syscall_64
	            de6e internal/runtime/syscall/linux.Syscall6

16150 
	ffffffff820b08c0 inet_send_prepare
	ffffffff8206652b tcp_sendmsg
	ffffffff81e75eed sock_write_iter
	ffffffff816dd250 vfs_write
	ffffffff816dd543 ksys_write
	ffffffff8223df91 do_syscall_64

16150 
	ffffffff81200000 futex_wait
	ffffffff81200100 do_futex
	ffffffff8223df91 do_syscall_64
	           9e7f0 runtime.futex.abi0

16150 
	ffffffff81400000 filp_close
	ffffffff81400100 __x64_sys_close
	ffffffff8223df91 do_syscall_64
	           9e7f0 syscall.Syscall

16150 
	          e54ab8 github.com/eddy-run/eddy/watch.(*connSink).writeNow
	           982e1 runtime.goexit.abi0

    107 
	ffffffff81300000 [unknown]

`

func TestParse(t *testing.T) {
	got, err := Parse(strings.NewReader(script))
	if err != nil {
		t.Fatal(err)
	}
	srv := got[16150]
	if srv.Samples != 5 {
		t.Fatalf("server samples %d, want 5: %+v", srv.Samples, got)
	}
	for place, want := range map[string]int{WriteDeliv: 1, WriteSend: 1, Futex: 1, "close(2)": 1, User: 1} {
		if srv.ByPlace[place] != want {
			t.Errorf("%s: %d samples, want %d (%v)", place, srv.ByPlace[place], want, srv.ByPlace)
		}
	}
	if k := srv.Kernel(); k != 0.8 {
		t.Errorf("kernel share %v, want 0.8", k)
	}
	if sh := srv.Share(WriteSend, WriteDeliv); sh != 0.4 {
		t.Errorf("write share %v, want 0.4", sh)
	}
	other := got[107]
	if other.Samples != 1 || other.ByPlace[Interrupt] != 1 {
		t.Errorf("pid 107: %+v, want one sample of %s", other, Interrupt)
	}
	if s := Summary(srv); !strings.HasPrefix(s, "80% in the kernel (") || !strings.Contains(s, WriteDeliv+" 20%") {
		t.Errorf("summary %q", s)
	}
}

func TestFirstLine(t *testing.T) {
	for in, want := range map[string]string{
		"": "no output",
		"\n  \nError:\nAccess to performance monitoring is limited.\n": "Error:",
		"one": "one",
	} {
		if got := firstLine(in); got != want {
			t.Errorf("firstLine(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummaryOfNothing(t *testing.T) {
	if s := Summary(Split{}); s != "no samples" {
		t.Errorf("summary of no samples: %q", s)
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	if _, err := Parse(strings.NewReader("not a pid\n\tffff x\n")); err == nil {
		t.Fatal("parsed a sample line that holds no pid")
	}
}

// TestNoSuchProcess checks that a perf that cannot attach is reported,
// not waited for.
func TestNoSuchProcess(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, 1<<30)
	if errors.Is(err, ErrUnavailable) {
		t.Skip("perf is not installed")
	}
	if err != nil {
		return // refused at once: reported
	}
	errEnable := s.Enable()
	_, errStop := s.Stop(ctx)
	if errEnable == nil && errStop == nil {
		t.Fatal("perf attached to no process and reported nothing")
	}
	t.Logf("enable: %v; stop: %v", errEnable, errStop)
}

// TestLive profiles this process writing to a loopback socket, where
// perf can run: most of its samples must be in write(2), split into the
// send path and the delivery to the reader.
func TestLive(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, os.Getpid())
	if errors.Is(err, ErrUnavailable) {
		t.Skip("perf is not installed")
	}
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c) //nolint:errcheck // drains until the writer closes
			c.Close()
		}
	})
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Enable(); err != nil {
		t.Fatal(err)
	}
	msg := []byte(strings.Repeat("x", 64) + "\n")
	for range 100_000 {
		if _, err := c.Write(msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Disable(); err != nil {
		t.Fatal(err)
	}
	c.Close()
	wg.Wait()
	splits, err := s.Stop(ctx)
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	me := splits[os.Getpid()]
	if me.Samples == 0 {
		t.Fatalf("no samples of this process: %+v", splits)
	}
	t.Logf("this process: %s", Summary(me))
	if w := me.Share(WriteSend, WriteDeliv, WriteOther); w < 0.3 {
		t.Errorf("write(2) holds %.0f%% of the samples of a loop of socket writes, want at least 30%%: %s", 100*w, Summary(me))
	}
}
