package leader

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// AskHandler takes a wake ask for an app on the leader: the reaper's job, which
// looks at the app at once. Ask must not block for long; its error, if any, is
// the caller's to log.
type AskHandler interface {
	Ask(ctx context.Context, appID string) error
}

// Asker sends wake asks to Local when this node leads, to the leader's internal
// API (POST /internal/asks/{app}) otherwise. The ask is already stored when it
// gets here: if no leader is known, the next leader's first pass handles it.
type Asker struct {
	Node  *Node
	Local AskHandler
}

var _ AskHandler = Asker{}

// Ask passes the ask on. It blocks for one internal call at most (bounded by
// ctx and by Forward's timeout). It returns ErrNoLeader when no leader is known,
// and an error when the leader cannot be reached or does not accept the ask.
func (a Asker) Ask(ctx context.Context, appID string) error {
	if a.Node.IsLeader() {
		return a.Local.Ask(ctx, appID)
	}
	code, body, err := a.Node.Forward(ctx, http.MethodPost, "/internal/asks/"+url.PathEscape(appID), nil)
	if err != nil {
		return err
	}
	if code != http.StatusAccepted {
		return fmt.Errorf("the leader answered %d: %s", code, strings.TrimSpace(string(body)))
	}
	return nil
}
