package client

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/eddy-run/eddy/views"
)

// ViewBacktestResult answers View.Backtest: what entered, left, changed
// in and was deleted from the view over the commits (From, To], with
// samples and, when asked, its size at both ends.
type ViewBacktestResult = views.BacktestResult

// ViewBacktestParams bound a view backtest; zero fields take the
// server's defaults.
type ViewBacktestParams struct {
	From       int64 `json:"from"`
	To         int64 `json:"to,omitempty"`
	Samples    int   `json:"samples,omitempty"`
	MaxCommits int   `json:"maxCommits,omitempty"`
	// Sizes asks for the view's size at From (nil: the server's default).
	Sizes *bool `json:"sizes,omitempty"`
	// Definition, if set, is a proposed view definition judged under the
	// view's name without saving it.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// Backtest judges the commits (From, To] against the saved view, or a
// proposed definition (POST .../views/{view}/backtest, admin). It writes
// nothing, so it is retried like a GET.
func (v *View) Backtest(ctx context.Context, p ViewBacktestParams) (ViewBacktestResult, error) {
	cl := send(http.MethodPost, v.path("backtest"), p)
	cl.retry = true
	var r ViewBacktestResult
	_, err := v.sp.c.callJSON(ctx, cl, &r)
	return r, err
}
