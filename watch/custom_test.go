package watch

import (
	"bufio"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eddy-run/eddy/problem"
)

// TestSubscribe: a subscriber hears its space's commits (and the
// everything-may-have-changed wake-up), not other spaces', and nothing
// after it cancels.
func TestSubscribe(t *testing.T) {
	t.Parallel()
	e := newEnv(t, drivers[0].open(t), Options{})
	ch, cancel := e.hub.Subscribe("s")
	other, cancelOther := e.hub.Subscribe("other")
	defer cancelOther()
	e.write("task", 1)
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up for a commit")
	}
	select {
	case <-other:
		t.Fatal("another space's subscriber woke")
	default:
	}
	e.hub.Notify("", -1)
	for _, c := range []<-chan struct{}{ch, other} {
		select {
		case <-c:
		default:
			t.Fatal("the reconnect wake-up missed a subscriber")
		}
	}
	cancel()
	e.write("task", 1)
	select {
	case <-ch:
		t.Fatal("woke after cancel")
	default:
	}
}

// TestServeFunc: a custom stream's head goes out before any line, its
// lines and terminal frame follow, it counts as a watcher, and a stopping
// hub ends it with unavailable.
func TestServeFunc(t *testing.T) {
	t.Parallel()
	e := newEnv(t, drivers[0].open(t), Options{})
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := e.hub.ServeFunc(w, r, func(ctx context.Context, s *Stream) error {
			switch r.URL.Path {
			case "/fail":
				<-release
				if err := s.Write([]byte("{\"n\":1}\n")); err != nil {
					return err
				}
				return problem.New(problem.ResetRequired, "gone").With("reason", "view_changed")
			default:
				select {
				case <-s.Stopping():
					return ErrStopping
				case <-ctx.Done():
					return ctx.Err()
				}
			}
		})
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)

	res, err := srv.Client().Get(srv.URL + "/fail")
	if err != nil {
		t.Fatal(err) // the head arrived although nothing was written yet
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != ContentType {
		t.Fatalf("head: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if n := e.hub.Watchers(); n != 1 {
		t.Fatalf("watchers = %d, want 1", n)
	}
	close(release)
	br := bufio.NewReader(res.Body)
	for _, want := range []string{"{\"n\":1}\n", `{"error":{"code":"reset_required","message":"gone","details":{"reason":"view_changed"}}}` + "\n"} {
		if l, err := br.ReadString('\n'); err != nil || l != want {
			t.Fatalf("line %q, %v; want %q", l, err, want)
		}
	}
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("the stream went on after its terminal frame")
	}

	idle, err := srv.Client().Get(srv.URL + "/idle")
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Body.Close()
	stopHub(t, e.hub)
	l, err := bufio.NewReader(idle.Body).ReadString('\n')
	if err != nil || l[:34] != `{"error":{"code":"unavailable","me` {
		t.Fatalf("shutdown frame %q, %v", l, err)
	}
	err = e.hub.ServeFunc(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), func(context.Context, *Stream) error {
		t.Error("run called on a stopped hub")
		return nil
	})
	if problem.CodeOf(err) != problem.Unavailable && !errors.Is(err, ErrStopped) {
		t.Fatalf("ServeFunc after stop: %v", err)
	}
}
