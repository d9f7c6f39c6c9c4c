package ratecomparisons

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// Page is one page of comparisons or items and the number of all that
// match.
type Page[T any] struct {
	Items []T
	Total int
}

// List lists the organization's comparisons (of one status when status is
// set). The actor needs rate-compare:read.
func (s *Service) List(ctx context.Context, actor domain.Actor, status string, limit, offset int) (Page[Comparison], error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Page[Comparison]{}, err
	}
	list, total, err := store.ListRateComparisons(ctx, s.store.Pool, actor.OrganizationID,
		store.RateComparisonFilter{Status: status, Limit: limit, Offset: offset})
	return Page[Comparison]{Items: list, Total: total}, err
}

// Get is one comparison of the organization. The actor needs
// rate-compare:read.
func (s *Service) Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (Comparison, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Comparison{}, err
	}
	c, err := store.RateComparisonByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return c, notFound(err)
}

// Items lists a comparison's items. The actor needs rate-compare:read.
func (s *Service) Items(ctx context.Context, actor domain.Actor, id uuid.UUID, f ItemFilter) (Page[Item], error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Page[Item]{}, err
	}
	items, total, err := store.ListRateComparisonItems(ctx, s.store.Pool, c.OrganizationID, c.ID, f)
	return Page[Item]{Items: items, Total: total}, err
}

// Summarize is a comparison's totals, by zone and by service, with the
// comparison. The actor needs rate-compare:read.
func (s *Service) Summarize(ctx context.Context, actor domain.Actor, id uuid.UUID) (Comparison, Summary, error) {
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Comparison{}, Summary{}, err
	}
	sum, err := store.RateComparisonSummary(ctx, s.store.Pool, c.OrganizationID, c.ID)
	return c, sum, err
}

// Process moves a draft or failed comparison to processing and starts its
// workflow, which finishes the items that did not finish. The accounts
// must be usable (no_active_carrier_account otherwise). When nothing runs
// the comparison is put back; when the run may exist it stays processing
// (the reconciler starts a run that does not). The actor needs
// rate-compare:write.
func (s *Service) Process(ctx context.Context, actor domain.Actor, id uuid.UUID) (Comparison, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Comparison{}, err
	}
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Comparison{}, err
	}
	if c.Status != store.RateComparisonDraft && c.Status != store.RateComparisonFailed {
		return Comparison{}, domain.Conflict("the rate comparison is " + c.Status + "; only a draft or failed comparison can be processed")
	}
	if err := s.checkAccounts(ctx, c); err != nil {
		return Comparison{}, err
	}
	if s.runs == nil {
		return Comparison{}, domain.WorkflowsUnavailable(nil)
	}
	wfID := s.runs.WorkflowID(c.ID)
	started, prev, err := store.StartRateComparison(ctx, s.store.Pool, actor.OrganizationID, c.ID, wfID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Comparison{}, domain.NotFound("rate comparison")
	case errors.Is(err, store.ErrConflict):
		return Comparison{}, domain.Conflict("the rate comparison is " + prev + "; only a draft or failed comparison can be processed")
	case err != nil:
		return Comparison{}, err
	}
	err = s.runs.Start(ctx, Run{OrganizationID: actor.OrganizationID, ComparisonID: c.ID, WorkflowID: wfID, RequestedBy: actor})
	if err == nil {
		return started, nil
	}
	if errors.Is(err, domain.ErrRunMayExist) {
		// The run may exist: the comparison stays processing. When it
		// does not, the reconciler (Maintenance) starts it.
		s.log.WarnContext(ctx, "rate comparison start outcome unknown; left to the reconciler", "workflow_id", wfID, "error", err.Error())
		return started, nil
	}
	// Nothing runs: put the comparison back, so that it can be processed
	// again.
	if rerr := store.RevertRateComparisonStart(context.WithoutCancel(ctx), s.store.Pool, actor.OrganizationID, c.ID, prev); rerr != nil {
		s.log.ErrorContext(ctx, "revert rate comparison start", "comparison_id", c.ID, "error", rerr.Error())
	}
	return Comparison{}, err
}

// noAccount is the refusal to process without a usable account.
func noAccount(msg string) error { return domain.InvalidCode("no_active_carrier_account", msg) }

// checkAccounts refuses to process without an active account to rate
// with and one to track the source carrier with.
func (s *Service) checkAccounts(ctx context.Context, c Comparison) error {
	gone := "the comparison's carrier account was deleted; create a new comparison"
	if c.CarrierAccountID == nil {
		return noAccount(gone)
	}
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, c.OrganizationID, *c.CarrierAccountID)
	if errors.Is(err, store.ErrNotFound) {
		return noAccount(gone)
	}
	if err != nil {
		return err
	}
	if acct.Status != store.CarrierAccountActive || !acct.SupportsRating {
		return noAccount("the comparison's carrier account \"" + acct.Name + "\" is " + acct.Status + "; it must be active and support rating")
	}
	if acct.Carrier == c.SourceCarrier {
		return nil
	}
	src, err := store.ActiveCarrierAccounts(ctx, s.store.Pool, c.OrganizationID, c.SourceCarrier)
	if err != nil {
		return err
	}
	if len(src) == 0 {
		return noAccount("the organization has no active " + c.SourceCarrier + " account to track the source shipments with")
	}
	return nil
}

// Cancel cancels a processing comparison: it is closed as cancelled at
// once (unfinished items skipped; a batch still running cannot change them
// any more), then its workflow is cancelled so that running batches stop
// at their next item. When the close fails the workflow is cancelled all
// the same (it then closes the comparison as cancelled itself) and the
// failure is returned. The actor needs rate-compare:write.
func (s *Service) Cancel(ctx context.Context, actor domain.Actor, id uuid.UUID) (Comparison, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Comparison{}, err
	}
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return Comparison{}, err
	}
	if c.Status != store.RateComparisonProcessing {
		return Comparison{}, domain.Conflict("the rate comparison is " + c.Status + "; only a processing comparison can be cancelled")
	}
	done, err := store.FinishRateComparison(ctx, s.store.Pool, c.OrganizationID, c.ID, store.FinishCancelled, "")
	switch {
	case errors.Is(err, store.ErrNotFound):
		return Comparison{}, domain.NotFound("rate comparison")
	case err != nil:
		s.cancelRun(ctx, c.ID)
		return Comparison{}, err
	case done.Status != store.RateComparisonCancelled:
		return Comparison{}, domain.Conflict("the rate comparison is " + done.Status + "; only a processing comparison can be cancelled")
	}
	s.cancelRun(ctx, c.ID)
	return done, nil
}

// Delete deletes a comparison; a processing one's workflow is cancelled
// first (best effort: it also stops at its next batch, finding the
// comparison gone). The actor needs rate-compare:write.
func (s *Service) Delete(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	c, err := s.Get(ctx, actor, id)
	if err != nil {
		return err
	}
	if c.Status == store.RateComparisonProcessing {
		s.cancelRun(ctx, c.ID)
	}
	return notFound(store.DeleteRateComparison(ctx, s.store.Pool, c.OrganizationID, c.ID))
}

// cancelRun asks the comparison's run to stop; best effort: a run that is
// closed is fine, and when Temporal cannot be reached the workflow still
// stops at its next batch, finding the comparison closed or gone.
func (s *Service) cancelRun(ctx context.Context, id uuid.UUID) {
	if s.runs == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.runs.Cancel(cctx, id); err != nil {
		s.log.WarnContext(ctx, "cancel rate comparison workflow", "comparison_id", id, "error", err.Error())
	}
}
