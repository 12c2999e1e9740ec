package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// Child is this executable re-run as a child process that a scenario
// talks to in lines: the parent writes commands to its stdin, the child
// answers on its stdout and logs to the parent's stderr. A line "error
// MSG" from the child is its failure.
type Child struct {
	name string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
}

// StartChild re-runs c.Self with env added to this process's environment;
// name says which child it is in errors.
func StartChild(ctx context.Context, c Config, name string, env []string) (*Child, error) {
	cmd := exec.CommandContext(ctx, c.Self)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	return &Child{name: name, cmd: cmd, in: in, out: bufio.NewReader(out)}, nil
}

// Pid returns the child's process id.
func (ch *Child) Pid() int { return ch.cmd.Process.Pid }

// Send writes one command to the child.
func (ch *Child) Send(s string) error {
	if _, err := io.WriteString(ch.in, s); err != nil {
		return fmt.Errorf("%s: %w", ch.name, err)
	}
	return nil
}

// Expect reads the child's lines until one starting with prefix and
// returns the rest of it; it fails on the child's "error" line or if the
// child ends first.
func (ch *Child) Expect(prefix string) (string, error) {
	for {
		l, err := ch.out.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("%s ended before %q: %w", ch.name, prefix, err)
		}
		l = strings.TrimSpace(l)
		if msg, ok := strings.CutPrefix(l, "error "); ok {
			return "", fmt.Errorf("%s: %s", ch.name, msg)
		}
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return rest, nil
		}
	}
}

// Close closes the child's stdin, its signal to finish, and waits for it
// to exit.
func (ch *Child) Close() error {
	errIn := ch.in.Close()
	if err := ch.cmd.Wait(); err != nil {
		return fmt.Errorf("%s: %w", ch.name, errors.Join(err, errIn))
	}
	return nil
}
