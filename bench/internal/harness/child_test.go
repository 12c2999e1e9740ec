package harness

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
)

// envEcho makes the test binary a child that answers "echo X" with
// "got X", and "fail X" with "error X".
const envEcho = "EDDYBENCH_TEST_ECHO_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envEcho) != "" {
		echoChild()
		return
	}
	os.Exit(m.Run())
}

// echoChild is the child process of TestChild.
func echoChild() {
	fmt.Println("ready " + os.Getenv(envDir))
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "fail "); ok {
			fmt.Println("noise")
			fmt.Println("error " + rest)
			os.Exit(1)
		}
		fmt.Println("got " + strings.TrimPrefix(sc.Text(), "echo "))
	}
}

func TestChild(t *testing.T) {
	t.Parallel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Self: self, Quick: true, PGAdminURL: "postgres://x"}
	start := func(t *testing.T) *Child {
		t.Helper()
		ch, err := StartChild(context.Background(), c, "echo child", append(c.ChildEnv("/scratch"), envEcho+"=1"))
		if err != nil {
			t.Fatal(err)
		}
		dir, err := ch.Expect("ready ")
		if err != nil || dir != "/scratch" {
			t.Fatalf("ready: dir %q, %v; want the scratch dir passed in its environment", dir, err)
		}
		return ch
	}
	t.Run("answers", func(t *testing.T) {
		ch := start(t)
		for _, s := range []string{"a", "b c"} {
			if err := ch.Send("echo " + s + "\n"); err != nil {
				t.Fatal(err)
			}
			if got, err := ch.Expect("got "); err != nil || got != s {
				t.Fatalf("Expect = %q, %v; want %q", got, err, s)
			}
		}
		if err := ch.Close(); err != nil {
			t.Fatalf("Close after stdin ends: %v", err)
		}
	})
	t.Run("error line", func(t *testing.T) {
		ch := start(t)
		if err := ch.Send("fail no disk\n"); err != nil {
			t.Fatal(err)
		}
		_, err := ch.Expect("got ")
		if err == nil || !strings.Contains(err.Error(), "echo child: no disk") {
			t.Fatalf("Expect = %v; want the child's error", err)
		}
		if err := ch.Close(); err == nil {
			t.Fatal("Close of a child that exited 1 = nil")
		}
	})
}

func TestConfigFromEnv(t *testing.T) {
	c := Config{Quick: true, PGAdminURL: "postgres://h/db", Profile: "/p"}
	for _, kv := range c.ChildEnv("/d") {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	got := ConfigFromEnv()
	if !got.Quick || got.Dir != "/d" || got.PGAdminURL != c.PGAdminURL || got.Profile != c.Profile || got.Self == "" || got.Log == nil {
		t.Fatalf("ConfigFromEnv = %+v; want %+v with dir /d", got, c)
	}
}
