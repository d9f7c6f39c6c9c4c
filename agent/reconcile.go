package agent

import (
	"context"
	"time"

	"github.com/fos-dev/fos/store"
)

// The reconciler: every row that waits on a workflow can be settled
// without it. A pending action past its expiry (its workflow's timer did
// not fire: the run was terminated or lost) is expired here, through the
// same statement that settles the race with an approval; a turn left
// processing far longer than any turn takes (its run ended mid-turn) is
// marked failed, so the conversation can be used again.

// StuckTurnAfter is how long a turn may stay processing before the
// reconciler calls it failed (a turn's model calls are bounded well
// below it).
const StuckTurnAfter = time.Hour

// ReconcileResult counts what the reconciler settled.
type ReconcileResult struct {
	Expired     int `json:"expired"`
	FailedTurns int `json:"failedTurns"`
	// StandingStarted counts standing order runs whose start was lost,
	// started now.
	StandingStarted int `json:"standingStarted"`
}

// Reconcile settles overdue pending actions and stuck turns, up to limit
// of each.
func (s *Service) Reconcile(ctx context.Context, limit int) (ReconcileResult, error) {
	var out ReconcileResult
	now := s.now()
	overdue, err := store.OverdueAgentActions(ctx, s.store.Pool, now.Add(-time.Minute), limit)
	if err != nil {
		return out, err
	}
	for _, a := range overdue {
		r, err := s.ResolveAction(ctx, a.OrganizationID, Resolve{ActionID: a.ID, Status: ActionExpired})
		if err != nil {
			return out, err
		}
		if r.Status == ActionExpired {
			out.Expired++
		}
	}
	stuck, err := store.StuckAgentTurns(ctx, s.store.Pool, now.Add(-StuckTurnAfter), limit)
	if err != nil {
		return out, err
	}
	for _, c := range stuck {
		if err := s.EndTurn(ctx, c.OrganizationID, c.ID, StatusFailed, "the turn was interrupted; send the message again"); err != nil {
			return out, err
		}
		out.FailedTurns++
	}
	n, err := s.standing.Restart(ctx, now.Add(-time.Minute), limit)
	out.StandingStarted = n
	return out, err
}
