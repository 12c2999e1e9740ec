package harness

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/version"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// EtcdVersion is the embedded etcd server's version.
var EtcdVersion = "etcd " + version.Version

// Etcd is an embedded single-member etcd server on loopback.
type Etcd struct {
	Server *embed.Etcd
	// Endpoint is its client URL.
	Endpoint string
	dir      string
}

// StartEtcd starts etcd with its data in a fresh directory of c.Dir,
// its default settings otherwise (fsync on), logging nothing.
func StartEtcd(c Config) (*Etcd, error) {
	dir, err := os.MkdirTemp(c.Dir, "etcd-")
	if err != nil {
		return nil, fmt.Errorf("etcd: data dir: %w", err)
	}
	client, err := loopbackURL()
	if err != nil {
		return nil, err
	}
	peer, err := loopbackURL()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("etcd: start: %w", err), os.RemoveAll(dir))
	}
	x := &Etcd{Server: e, Endpoint: client.String(), dir: dir}
	select {
	case <-e.Server.ReadyNotify():
		return x, nil
	case <-time.After(60 * time.Second):
		return nil, errors.Join(errors.New("etcd: not ready after 60s"), x.Close())
	}
}

// Close stops etcd and removes its data.
func (x *Etcd) Close() error {
	x.Server.Close()
	return os.RemoveAll(x.dir)
}

// loopbackURL returns http://127.0.0.1:<a port free right now>.
func loopbackURL() (*url.URL, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // held for an instant, to pick a free port
	if err != nil {
		return nil, fmt.Errorf("etcd: pick a port: %w", err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, fmt.Errorf("etcd: pick a port: %w", err)
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}
