package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSVersion is the embedded nats-server's version.
const NATSVersion = "nats-server " + natsserver.VERSION

// NATS is an embedded nats-server with JetStream on file storage,
// listening on a random loopback port, and one client connection to it.
type NATS struct {
	Server *natsserver.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	dir    string
}

// StartNATS starts a JetStream server storing under a fresh directory of
// c.Dir. With syncAlways every message is fsynced before its ack
// (sync_interval: always); otherwise the server's default applies (a
// sync every 2 minutes, acks after the write to the OS).
func StartNATS(c Config, syncAlways bool) (*NATS, error) {
	dir, err := os.MkdirTemp(c.Dir, "nats-")
	if err != nil {
		return nil, fmt.Errorf("nats: store dir: %w", err)
	}
	opts := &natsserver.Options{
		Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, SyncAlways: syncAlways,
		NoLog: true, NoSigs: true, DisableJetStreamBanner: true,
	}
	s, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("nats: new server: %w", err)
	}
	go s.Start()
	n := &NATS{Server: s, dir: dir}
	if !s.ReadyForConnections(30 * time.Second) {
		return nil, errors.Join(errors.New("nats: server not ready after 30s"), n.Close())
	}
	if n.Conn, err = nats.Connect(s.ClientURL()); err != nil {
		return nil, errors.Join(fmt.Errorf("nats: connect: %w", err), n.Close())
	}
	if n.JS, err = jetstream.New(n.Conn); err != nil {
		return nil, errors.Join(fmt.Errorf("nats: jetstream: %w", err), n.Close())
	}
	return n, nil
}

// Stream creates the file-storage stream name over subjects.
func (n *NATS) Stream(ctx context.Context, name string, subjects ...string) (jetstream.Stream, error) {
	s, err := n.JS.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: subjects, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("nats: create stream %s: %w", name, err)
	}
	return s, nil
}

// Close closes the connection, shuts the server down and removes its
// files.
func (n *NATS) Close() error {
	if n.Conn != nil {
		n.Conn.Close()
	}
	n.Server.Shutdown()
	n.Server.WaitForShutdown()
	return os.RemoveAll(n.dir)
}
