package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// rollbackTimeout bounds the ROLLBACK sent when releasing a connection
// left inside a transaction.
var rollbackTimeout = 5 * time.Second

// release returns conn to the pool outside any transaction: a connection
// still in one gets a ROLLBACK, and is closed if that fails, so the pool
// destroys it instead of reusing it.
func release(ctx context.Context, conn *pgxpool.Conn) {
	pc := conn.Conn().PgConn()
	if !pc.IsClosed() && (pc.IsBusy() || pc.TxStatus() != 'I') {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		if pc.IsBusy() {
			_ = conn.Conn().Close(rctx)
		} else if _, err := conn.Exec(rctx, "ROLLBACK"); err != nil {
			_ = conn.Conn().Close(rctx)
		}
		cancel()
	}
	conn.Release()
}
