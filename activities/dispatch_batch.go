package activities

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"golang.org/x/time/rate"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
)

// The per-destination dispatch drainer's page (workflows.DispatchBatch):
// claim a page of the bridge's pending assignments, push them with bounded
// concurrency at the bridge's rate, record the outcomes.

// Bounds of a drainer page.
const (
	// DispatchPageMax is the most assignments one page claims.
	DispatchPageMax = 500
	// DispatchPageSeconds: a page claims at most what the bridge's rate
	// pushes in about this long, so a slow destination's page still ends
	// (and heartbeats) well inside its activity timeout.
	DispatchPageSeconds = 30
	// dispatchSubPages: a page of a fast destination claims up to this
	// many pages of DispatchPageMax, each while pushing the one before.
	dispatchSubPages = 8
	// DispatchConcurrency bounds the pushes in flight of one page.
	DispatchConcurrency = 8
	// DispatchClaimLease is how long a page's claim holds its rows; past it
	// (the page's run crashed or was terminated) the next page of any run
	// of the drainer claims them again. Longer than the page activity's
	// start-to-close timeout, so a live attempt never loses its rows.
	DispatchClaimLease = 15 * time.Minute
	// dispatchFlushEvery: outcomes are recorded in batches of this size.
	dispatchFlushEvery = 100
	// dispatchPushAttempts bounds one push's attempts within a page
	// (transient failures, with backoff); a rate-limited push waits what
	// the platform asked for and counts an attempt of dispatchRateAttempts.
	dispatchPushAttempts = 4
	dispatchRateAttempts = 8
)

// DispatchRateConfigKey is the bridge config key that overrides the
// drainer's push rate (pushes per second) for a destination, e.g. a store
// on a plan with higher limits.
const DispatchRateConfigKey = "dispatchRatePerSecond"

// dispatchRates are the default push rates (per second) of each platform,
// from its published limits (../shared/vendors/platforms/*/README.md),
// with a margin for the bridge's other calls: storefront_a's leaky bucket
// leaks 2/s, shipping_hub_a allows 40 requests a minute, storefront_c 150
// per 30 s, marketplace_a's order operations a fraction of one per second.
// A type not listed (storefront_b documents none) is bounded only by
// DispatchConcurrency.
var dispatchRates = map[string]float64{
	platforms.TypeStorefrontA:  1.8,
	platforms.TypeShippingHubA: 0.6,
	"storefront_c":             4.5,
	"marketplace_a":            0.5,
}

// DispatchRate is the push rate for a destination bridge of type typ with
// config: the config's dispatchRatePerSecond when it is a positive number,
// else the platform's default; 0 means unbounded.
func DispatchRate(typ string, config map[string]any) float64 {
	switch v := config[DispatchRateConfigKey].(type) {
	case float64:
		if v > 0 {
			return v
		}
	case int:
		if v > 0 {
			return float64(v)
		}
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
			return f
		}
	}
	return dispatchRates[typ]
}

// DrainPageInput names a drainer page: the destination, the claim's token
// (stable across the activity's retries, so a retry takes its own rows
// back) and the workflow id recorded on the push's task executions.
type DrainPageInput struct {
	OrganizationID uuid.UUID `json:"organizationId"`
	BridgeID       uuid.UUID `json:"bridgeId"`
	Token          string    `json:"token"`
	WorkflowID     string    `json:"workflowId"`
	// PageSize and Concurrency override DispatchPageMax and
	// DispatchConcurrency (0: default).
	PageSize    int `json:"pageSize,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
}

// DrainPageResult counts a page: claimed, and how they ended.
type DrainPageResult struct {
	Claimed   int `json:"claimed"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// LastError is the last failure's tenant-safe message.
	LastError string `json:"lastError,omitempty"`
}

// DrainDispatchPage claims a page of the destination's pending
// assignments (store.ClaimAssignments: short statement, SKIP LOCKED) —
// for a destination fast enough, up to dispatchSubPages pages, each
// claimed (store.ClaimMoreAssignments) while the one before is pushed —,
// pushes each order through the connector's OrderPusher — at most
// Concurrency at once, at the bridge's DispatchRate, a 429 pausing every
// push of the page for the wait the platform asked for — and records the
// outcomes in batches (store.FinishClaimedAssignments). No transaction is
// open during a push. A push is keyed by the order, so one repeated after
// a crash updates what the first made. It heartbeats its counts.
func (a *DispatchActivities) DrainDispatchPage(ctx context.Context, in DrainPageInput) (DrainPageResult, error) {
	var out DrainPageResult
	began := time.Now()
	bt := &BridgeTaskActivities{Store: a.Store, Secrets: a.Secrets, Platforms: a.Platforms}
	b, pb, conn, err := bt.openBridge(ctx, in.OrganizationID, in.BridgeID.String())
	if err != nil {
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || !appErr.NonRetryable() {
			return out, err
		}
		// The destination cannot take pushes (deleted, inactive): the
		// claimed rows fail with the reason.
		return a.failPage(ctx, in, appErr.Message())
	}
	pusher, ok := conn.(platforms.OrderPusher)
	if !ok {
		return a.failPage(ctx, in, fmt.Sprintf("the destination bridge %q (%s) cannot accept orders", b.Name, b.Type))
	}
	perSecond := DispatchRate(b.Type, pb.Config)
	size := in.PageSize
	if size <= 0 {
		size = DispatchPageMax
	}
	if perSecond > 0 {
		size = min(size, max(1, int(perSecond*DispatchPageSeconds)))
	}
	// A destination fast enough to push several pages in
	// DispatchPageSeconds gets them in one activity, each claimed while
	// the one before is pushed (no pause between pages). A retry takes
	// back every row its attempts hold (at most subPages pages) in one
	// claim, and claims nothing more.
	subPages := dispatchSubPages
	if perSecond > 0 {
		subPages = min(subPages, max(1, int(perSecond*DispatchPageSeconds)/size))
	}
	first := size
	if activity.GetInfo(ctx).Attempt > 1 {
		// As many as any earlier attempt could hold (its rate estimate,
		// hence its sub-pages, may have been other than this one's).
		first, subPages = size*dispatchSubPages, 1
	}
	claimed, err := store.ClaimAssignments(ctx, a.Store.Pool, in.OrganizationID, in.BridgeID, in.Token, first, DispatchClaimLease)
	if err != nil {
		return out, fmt.Errorf("claim assignments: %w", err)
	}
	out.Claimed = len(claimed)
	if len(claimed) == 0 {
		return out, nil
	}
	orders, err := a.claimedOrders(ctx, in.OrganizationID, claimed)
	if err != nil {
		return out, err
	}

	conc := in.Concurrency
	if conc <= 0 {
		conc = DispatchConcurrency
	}
	var limiter *rate.Limiter
	if perSecond > 0 {
		limiter = rate.NewLimiter(rate.Limit(perSecond), max(1, min(conc, int(perSecond))))
	}
	gate := priorityOf(a.Priority)
	p := &pagePusher{a: a, in: in, out: &out, pause: newPause()}
	work := make(chan claimedOrder)
	var wg sync.WaitGroup
	for range min(conc, max(len(claimed), (subPages-1)*size)) {
		wg.Go(func() {
			for w := range work {
				// The drainer's pace: every assignment takes a token,
				// slower while work with priority is in flight.
				if err := gate.Wait(ctx, 1); err != nil {
					continue // interrupted: left claimed for a retry
				}
				if !w.found { // deleted: its assignment went with it
					continue
				}
				if w.order.Status == "cancelled" {
					p.record(ctx, store.BatchOutcome{ID: w.ID, Status: store.AssignmentSkipped, ErrorMessage: "the order is cancelled"})
					continue
				}
				p.record(ctx, p.push(ctx, bt, b, pusher, pb, limiter, w.ClaimedAssignment, w.order))
			}
		})
	}
	hbDone := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-t.C:
				heartbeat(ctx, p.counts())
			}
		}
	}()
	// The pages: the first, then each next one claimed while the one
	// before is fed to the pushers (unbuffered: one page ahead at most).
	pages := make(chan []claimedOrder)
	var claimErr error
	var claimer sync.WaitGroup
	claimer.Go(func() {
		defer close(pages)
		page := orders
		for k := 1; ; k++ {
			select {
			case pages <- page:
			case <-ctx.Done():
				return
			}
			if k >= subPages || time.Since(began) >= DispatchPageSeconds*time.Second {
				return
			}
			more, err := store.ClaimMoreAssignments(ctx, a.Store.Pool, in.OrganizationID, in.BridgeID, in.Token, size, DispatchClaimLease)
			if err != nil || len(more) == 0 {
				// Nothing claimed: the next page claims again.
				return
			}
			p.mu.Lock()
			out.Claimed += len(more)
			p.mu.Unlock()
			if page, err = a.claimedOrders(ctx, in.OrganizationID, more); err != nil {
				// Claimed but not pushed: the attempt fails, its retry
				// takes them back.
				claimErr = err
				return
			}
		}
	})
feed:
	for page := range pages {
		for _, w := range page {
			select {
			case work <- w:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(work)
	wg.Wait()
	claimer.Wait()
	close(hbDone)
	// What was pushed is recorded even when the attempt is cancelled; the
	// rest stays claimed for a retry (or, past the lease, any page).
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.flush(fctx); err != nil {
		return p.counts(), err
	}
	if err := ctx.Err(); err != nil {
		return p.counts(), err
	}
	if claimErr != nil {
		return p.counts(), claimErr
	}
	return p.counts(), nil
}

// claimedOrder is a claimed assignment with its order (found false: the
// order is gone).
type claimedOrder struct {
	store.ClaimedAssignment
	order store.Order
	found bool
}

// claimedOrders reads the orders of claimed assignments, in the claim's
// order.
func (a *DispatchActivities) claimedOrders(ctx context.Context, orgID uuid.UUID, claimed []store.ClaimedAssignment) ([]claimedOrder, error) {
	ids := make([]uuid.UUID, len(claimed))
	for i, c := range claimed {
		ids[i] = c.OrderID
	}
	list, err := store.OrdersToDispatch(ctx, a.Store.Pool, orgID, ids, false) // a push does not read the source data
	if err != nil {
		return nil, fmt.Errorf("read orders: %w", err)
	}
	byID := make(map[uuid.UUID]store.Order, len(list))
	for _, o := range list {
		byID[o.ID] = o
	}
	out := make([]claimedOrder, len(claimed))
	for i, c := range claimed {
		o, ok := byID[c.OrderID]
		out[i] = claimedOrder{ClaimedAssignment: c, order: o, found: ok}
	}
	return out, nil
}

// failPage claims a page and fails every row with msg (the destination
// cannot take pushes).
func (a *DispatchActivities) failPage(ctx context.Context, in DrainPageInput, msg string) (DrainPageResult, error) {
	size := in.PageSize
	if size <= 0 {
		size = DispatchPageMax
	}
	claimed, err := store.ClaimAssignments(ctx, a.Store.Pool, in.OrganizationID, in.BridgeID, in.Token, size, DispatchClaimLease)
	if err != nil {
		return DrainPageResult{}, fmt.Errorf("claim assignments: %w", err)
	}
	outs := make([]store.BatchOutcome, len(claimed))
	for i, c := range claimed {
		outs[i] = store.BatchOutcome{ID: c.ID, Status: store.AssignmentFailed, ErrorMessage: msg}
	}
	n, err := store.FinishClaimedAssignments(ctx, a.Store.Pool, in.OrganizationID, in.Token, DispatchPushTask, in.WorkflowID, outs)
	if err != nil {
		return DrainPageResult{}, fmt.Errorf("record outcomes: %w", err)
	}
	res := DrainPageResult{Claimed: len(claimed), Failed: n}
	if n > 0 {
		res.LastError = msg
	}
	return res, nil
}

// pagePusher pushes a page's orders and records their outcomes.
type pagePusher struct {
	a     *DispatchActivities
	in    DrainPageInput
	pause *pause

	mu      sync.Mutex
	out     *DrainPageResult
	pending []store.BatchOutcome
	flushMu sync.Mutex
}

// push sends one order, retrying transient failures a few times and
// waiting out rate limits (every push of the page waits).
func (p *pagePusher) push(ctx context.Context, bt *BridgeTaskActivities, b store.Bridge, pusher platforms.OrderPusher, pb platforms.Bridge,
	limiter *rate.Limiter, c store.ClaimedAssignment, o store.Order) store.BatchOutcome {
	fail := func(msg string) store.BatchOutcome {
		return store.BatchOutcome{ID: c.ID, Status: store.AssignmentFailed, ErrorMessage: msg}
	}
	attempts, limited := 0, 0
	backoff := time.Second
	for {
		if err := p.pause.wait(ctx); err != nil {
			return fail("the dispatch was interrupted")
		}
		if limiter != nil {
			if err := limiter.Wait(ctx); err != nil {
				return fail("the dispatch was interrupted")
			}
		}
		res, err := pusher.PushOrder(ctx, pb, PlatformOrder(o),
			platforms.PushRef{Key: "fos-" + o.ID.String(), Since: c.CreatedAt.Add(-time.Minute)})
		if err == nil {
			return store.BatchOutcome{ID: c.ID, Status: store.AssignmentCompleted, ExternalID: res.ExternalID, Kind: res.Kind}
		}
		if errors.Is(err, platforms.ErrOrdersNotAccepted) {
			return fail(fmt.Sprintf("the destination bridge %q (%s) cannot accept orders", b.Name, b.Type))
		}
		if ctx.Err() != nil {
			return fail("the dispatch was interrupted")
		}
		if wait, ok := platforms.RetryAfter(err); ok && limited < dispatchRateAttempts {
			limited++
			p.pause.until(time.Now().Add(max(wait, time.Second)))
			continue
		}
		classified := bt.taskPlatformError(ctx, b, err)
		var appErr *temporal.ApplicationError
		msg := TenantMessage(err)
		if errors.As(classified, &appErr) {
			msg = appErr.Message()
			if appErr.NonRetryable() {
				return fail(msg)
			}
		}
		attempts++
		if attempts >= dispatchPushAttempts {
			return fail(msg)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return fail("the dispatch was interrupted")
		}
		backoff *= 2
	}
}

// record counts an outcome and records the pending ones once there are
// dispatchFlushEvery of them. An interrupted push is left claimed (not
// recorded): a retry of the page pushes it again.
func (p *pagePusher) record(ctx context.Context, o store.BatchOutcome) {
	if ctx.Err() != nil && o.Status == store.AssignmentFailed && o.ErrorMessage == "the dispatch was interrupted" {
		return
	}
	p.mu.Lock()
	p.pending = append(p.pending, o)
	full := len(p.pending) >= dispatchFlushEvery
	p.mu.Unlock()
	if full {
		if err := p.flush(ctx); err != nil {
			activity.GetLogger(ctx).Warn("record dispatch outcomes; the page records them at its end", "error", err)
		}
	}
}

// flush records the pending outcomes.
func (p *pagePusher) flush(ctx context.Context) error {
	p.flushMu.Lock()
	defer p.flushMu.Unlock()
	p.mu.Lock()
	batch := p.pending
	p.pending = nil
	p.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	n, err := store.FinishClaimedAssignments(ctx, p.a.Store.Pool, p.in.OrganizationID, p.in.Token, DispatchPushTask, p.in.WorkflowID, batch)
	if err != nil {
		p.mu.Lock()
		p.pending = append(batch, p.pending...)
		p.mu.Unlock()
		return fmt.Errorf("record dispatch outcomes: %w", err)
	}
	p.a.Store.NoteBulkWrite(ctx, "task_executions", n)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, o := range batch {
		switch o.Status {
		case store.AssignmentCompleted:
			p.out.Completed++
		case store.AssignmentSkipped:
			p.out.Skipped++
		case store.AssignmentFailed:
			p.out.Failed++
			p.out.LastError = o.ErrorMessage
		}
	}
	return nil
}

func (p *pagePusher) counts() DrainPageResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.out
}

// pause holds every push of a page until the time a rate-limited answer
// asked for.
type pause struct {
	mu sync.Mutex
	at time.Time
}

func newPause() *pause { return &pause{} }

func (p *pause) until(t time.Time) {
	p.mu.Lock()
	if t.After(p.at) {
		p.at = t
	}
	p.mu.Unlock()
}

func (p *pause) wait(ctx context.Context) error {
	p.mu.Lock()
	d := time.Until(p.at)
	p.mu.Unlock()
	if d <= 0 {
		return nil
	}
	select {
	case <-time.After(d):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
