package fanout

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/metadata"
)

// prefix is the key prefix the etcd watchers watch and the parent writes.
const prefix = "/bench/"

// openEtcd opens one watch on prefix per watcher, each on its own gRPC
// watch stream (distinct outgoing metadata), the streams spread over
// conns client connections, and returns once each is created. stop
// cancels them and closes the clients.
func openEtcd(addr string, conns int, w *watchers) (func(), error) {
	clients := make([]*clientv3.Client, conns)
	for i := range clients {
		cli, err := clientv3.New(clientv3.Config{Endpoints: []string{addr}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
		if err != nil {
			return nil, fmt.Errorf("etcd client: %w", err)
		}
		clients[i] = cli
	}
	ctx, cancel := context.WithCancel(context.Background())
	var ready, wg sync.WaitGroup
	sem := make(chan struct{}, 100)
	ready.Add(len(w.last))
	for i := range w.last {
		sem <- struct{}{}
		wctx := metadata.AppendToOutgoingContext(ctx, "watcher", strconv.Itoa(i))
		wch := clients[i%conns].Watch(wctx, prefix, clientv3.WithPrefix(), clientv3.WithCreatedNotify())
		wg.Go(func() {
			opened := false
			for resp := range wch {
				if resp.Created && !opened {
					opened = true
					<-sem
					ready.Done()
				}
				for _, ev := range resp.Events {
					w.add(i, ev.Kv.ModRevision)
				}
			}
			if !opened {
				<-sem
				ready.Done()
			}
		})
	}
	ready.Wait()
	return func() {
		cancel()
		for _, cli := range clients {
			_ = cli.Close()
		}
		wg.Wait()
	}, nil
}
