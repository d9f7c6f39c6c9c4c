package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Error types of the rate comparison activities. Both are permanent.
const (
	// ErrTypeRateComparisonGone: the comparison was deleted or is no longer
	// processing (cancelled through the API's fallback path); the workflow
	// stops without writing anything more.
	ErrTypeRateComparisonGone = "RateComparisonGone"
	// ErrTypeRateComparisonFatal: the comparison cannot go on: its carrier
	// account is gone, inactive or cannot rate, no account of the source
	// carrier is active, or a carrier refused the credentials. The
	// comparison becomes failed; unfinished items stay pending.
	ErrTypeRateComparisonFatal = "RateComparisonFatal"
	// ErrTypeRateComparisonCarrierUnavailable: a carrier kept failing in a
	// way worth retrying (network, timeouts, 429, 5xx) for some items of a
	// batch. Retryable: those items stay unfinished and the batch is
	// retried, redoing only them. The workflow retries it without an
	// attempt limit, for as long as the batch's schedule-to-close timeout.
	ErrTypeRateComparisonCarrierUnavailable = "RateComparisonCarrierUnavailable"
	// ErrTypeRateComparisonBatchFailed: any other failure of a batch worth
	// retrying (the database, …) that failed MaxOtherAttempts attempts in a
	// row. Permanent: the comparison becomes failed.
	ErrTypeRateComparisonBatchFailed = "RateComparisonBatchFailed"
)

// PermanentRateComparisonErrorTypes are the non-retryable error types of the
// rate comparison activities, for retry policies.
var PermanentRateComparisonErrorTypes = []string{ErrTypeRateComparisonGone, ErrTypeRateComparisonFatal, ErrTypeInvalidInput, ErrTypeRateComparisonBatchFailed}

// Defaults of RateComparisonActivities.
const (
	// DefaultRateComparisonConcurrency bounds the carrier calls in flight
	// inside one batch.
	DefaultRateComparisonConcurrency = 16
	// rcTrackChunk is how many numbers go to one Track call; the adapter
	// batches (carrier_a, 30 a call) or fans out (carrier_b) inside.
	rcTrackChunk = 50
	// rcCallAttempts: a retryable carrier failure (network, 429, 5xx) of
	// one item is tried this many times before the item fails.
	rcCallAttempts = 3
	// DefaultRateComparisonMaxOtherAttempts: a batch failing in a way worth
	// retrying that is not a carrier outage is tried this many times.
	DefaultRateComparisonMaxOtherAttempts = 5
)

// RateComparisonActivities are the activities of the RateComparison
// workflow.
type RateComparisonActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// Concurrency bounds the carrier calls in flight inside one batch
	// (0: DefaultRateComparisonConcurrency).
	Concurrency int
	// RetryBackoff is the first pause before a retried carrier call, doubled
	// each time (0: 100ms).
	RetryBackoff time.Duration
	// MaxOtherAttempts bounds the attempts of a batch that fails in a way
	// worth retrying other than a carrier outage; the last one's error is
	// made non-retryable (0: DefaultRateComparisonMaxOtherAttempts). A
	// carrier outage (ErrTypeRateComparisonCarrierUnavailable) is retried
	// until the activity's schedule-to-close timeout.
	MaxOtherAttempts int
}

// --- prepare ---

// PrepareRateComparisonInput is the input of PrepareRateComparison.
type PrepareRateComparisonInput struct {
	OrganizationID string `json:"organizationId"`
	ComparisonID   string `json:"comparisonId"`
}

// PrepareRateComparisonResult names the accounts a run uses and the item
// range it covers.
type PrepareRateComparisonResult struct {
	// SourceAccountID tracks the items: the comparison's own account when
	// it is of the source carrier, else the organization's oldest active
	// account of the source carrier.
	SourceAccountID string `json:"sourceAccountId"`
	// TargetAccountID rates the items: the comparison's account.
	TargetAccountID string `json:"targetAccountId"`
	SourceCarrier   string `json:"sourceCarrier"`
	TargetCarrier   string `json:"targetCarrier"`
	// MaxSeq is the last item position (items are numbered 1…MaxSeq).
	MaxSeq       int `json:"maxSeq"`
	PendingItems int `json:"pendingItems"`
}

// PrepareRateComparison checks that the comparison is processing and picks
// the accounts that track and rate its items.
func (a *RateComparisonActivities) PrepareRateComparison(ctx context.Context, in PrepareRateComparisonInput) (PrepareRateComparisonResult, error) {
	orgID, compID, err := rcParseIDs(in.OrganizationID, in.ComparisonID)
	if err != nil {
		return PrepareRateComparisonResult{}, err
	}
	c, err := a.processingComparison(ctx, orgID, compID)
	if err != nil {
		return PrepareRateComparisonResult{}, err
	}
	if c.CarrierAccountID == nil {
		return PrepareRateComparisonResult{}, rcFatal("the comparison's carrier account was deleted", nil)
	}
	target, err := a.usableAccount(ctx, orgID, *c.CarrierAccountID, true)
	if err != nil {
		return PrepareRateComparisonResult{}, err
	}
	source := target
	if target.Carrier != c.SourceCarrier {
		list, err := store.ActiveCarrierAccounts(ctx, a.Store.Pool, orgID, c.SourceCarrier)
		if err != nil {
			return PrepareRateComparisonResult{}, fmt.Errorf("list %s accounts: %w", c.SourceCarrier, err)
		}
		if len(list) == 0 {
			return PrepareRateComparisonResult{}, rcFatal("the organization has no active "+c.SourceCarrier+" account to track the source shipments with", nil)
		}
		source = list[0]
	}
	maxSeq, err := store.RateComparisonMaxSeq(ctx, a.Store.Pool, orgID, compID)
	if err != nil {
		return PrepareRateComparisonResult{}, fmt.Errorf("read comparison items: %w", err)
	}
	return PrepareRateComparisonResult{
		SourceAccountID: source.ID.String(), TargetAccountID: target.ID.String(),
		SourceCarrier: source.Carrier, TargetCarrier: target.Carrier,
		MaxSeq: maxSeq, PendingItems: c.PendingItems,
	}, nil
}

// --- batch ---

// RateComparisonBatchInput is one batch: the items with seq in
// [FromSeq, ToSeq].
type RateComparisonBatchInput struct {
	OrganizationID  string `json:"organizationId"`
	ComparisonID    string `json:"comparisonId"`
	SourceAccountID string `json:"sourceAccountId"`
	TargetAccountID string `json:"targetAccountId"`
	FromSeq         int    `json:"fromSeq"`
	ToSeq           int    `json:"toSeq"`
}

// RateComparisonBatchResult is what a batch did.
type RateComparisonBatchResult struct {
	// Claimed items were unfinished when the batch started.
	Claimed   int `json:"claimed"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Counters are the comparison's counters after the batch's write.
	Counters store.RateComparisonCounters `json:"counters"`
}

// ProcessRateComparisonBatch tracks and rates one batch of items: it claims
// the batch's unfinished items (→ tracking, one statement), tracks them with
// the source carrier in chunks, moves the tracked ones to rating (one
// statement), rates each with the target account with at most Concurrency
// calls in flight, and writes every outcome plus the comparison's counters
// in ONE statement. It heartbeats as items finish; when the activity is
// cancelled it stops at the next item, writes what is done and returns the
// cancellation (the rest stays unfinished, for the workflow to skip).
//
// Per item, a carrier failure worth retrying is retried a few times in
// place; if it persists the item stays unfinished and the batch ends with a
// retryable ErrTypeRateComparisonCarrierUnavailable, so Temporal retries it
// later (redoing only those items). Permanent per-item problems (unknown
// number, no route in the tracking, a refused request) fail the item;
// refused credentials stop the comparison (ErrTypeRateComparisonFatal).
//
// A Track call of several numbers that fails permanently (a response the
// adapter cannot read, a refused request) is tried again one number at a
// time, so that only the numbers at fault fail.
func (a *RateComparisonActivities) ProcessRateComparisonBatch(ctx context.Context, in RateComparisonBatchInput) (RateComparisonBatchResult, error) {
	res, err := a.processBatch(ctx, in)
	return res, a.capAttempts(ctx, err)
}

// capAttempts makes the error of a batch's last allowed attempt permanent,
// unless it is a carrier outage (retried as long as the workflow allows),
// already permanent, or a cancellation.
func (a *RateComparisonActivities) capAttempts(ctx context.Context, err error) error {
	if err == nil || ctx.Err() != nil {
		return err
	}
	var appErr *temporal.ApplicationError
	if errors.As(err, &appErr) && (appErr.NonRetryable() || appErr.Type() == ErrTypeRateComparisonCarrierUnavailable) {
		return err
	}
	limit := a.MaxOtherAttempts
	if limit <= 0 {
		limit = DefaultRateComparisonMaxOtherAttempts
	}
	if int(activity.GetInfo(ctx).Attempt) < limit {
		return err
	}
	return temporal.NewNonRetryableApplicationError(TenantMessage(err), ErrTypeRateComparisonBatchFailed, err)
}

func (a *RateComparisonActivities) processBatch(ctx context.Context, in RateComparisonBatchInput) (RateComparisonBatchResult, error) {
	orgID, compID, err := rcParseIDs(in.OrganizationID, in.ComparisonID)
	if err != nil {
		return RateComparisonBatchResult{}, err
	}
	if in.FromSeq < 1 || in.ToSeq < in.FromSeq {
		return RateComparisonBatchResult{}, temporal.NewNonRetryableApplicationError("fromSeq and toSeq must be a range of item positions", ErrTypeInvalidInput, nil)
	}
	if _, err := a.processingComparison(ctx, orgID, compID); err != nil {
		return RateComparisonBatchResult{}, err
	}
	source, sourceAcct, err := a.adapterFor(ctx, orgID, in.SourceAccountID, false)
	if err != nil {
		return RateComparisonBatchResult{}, err
	}
	target, targetAcct, err := a.adapterFor(ctx, orgID, in.TargetAccountID, true)
	if err != nil {
		return RateComparisonBatchResult{}, err
	}

	items, err := store.ClaimRateComparisonBatch(ctx, a.Store.Pool, orgID, compID, in.FromSeq, in.ToSeq)
	if err != nil {
		return RateComparisonBatchResult{}, fmt.Errorf("claim items %d-%d: %w", in.FromSeq, in.ToSeq, err)
	}
	res := RateComparisonBatchResult{Claimed: len(items)}
	if len(items) == 0 {
		return res, nil
	}

	b := &rcBatch{
		a: a, ctx: ctx, source: source, sourceAcct: sourceAcct, target: target, targetAcct: targetAcct,
		items: items, results: make([]*store.RateComparisonItemResult, len(items)),
	}
	// Beat while carrier calls are slow too (a Track chunk finishes no item
	// until it answers); the SDK throttles the beats it sends.
	defer b.beatEvery(time.Second)()
	tracked := b.track()
	if len(tracked) > 0 && ctx.Err() == nil && b.fatalErr() == nil {
		ids := make([]uuid.UUID, 0, len(tracked))
		for _, t := range tracked {
			ids = append(ids, items[t.index].ID)
		}
		if err := store.MarkRateComparisonItemsRating(ctx, a.Store.Pool, orgID, compID, ids); err != nil && ctx.Err() == nil {
			return res, fmt.Errorf("mark items rating: %w", err)
		}
		b.rate(tracked)
	}

	// Write every finished item, even when cancelled or stopped by a fatal
	// error: that work is done and paid for.
	done := make([]store.RateComparisonItemResult, 0, len(items))
	for _, r := range b.results {
		if r == nil {
			continue
		}
		done = append(done, *r)
		if r.Status == store.RateItemCompleted {
			res.Completed++
		} else {
			res.Failed++
		}
	}
	wctx := ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
	}
	if len(done) > 0 {
		res.Counters, err = store.RecordRateComparisonResults(wctx, a.Store.Pool, orgID, compID, done)
		switch {
		case errors.Is(err, store.ErrRateComparisonGone):
			return res, rcGone(in.ComparisonID)
		case errors.Is(err, store.ErrRateComparisonClosed):
			// Cancelled (or closed) meanwhile: nothing was written; stop.
			return res, temporal.NewNonRetryableApplicationError("rate comparison "+in.ComparisonID+" is no longer processing",
				ErrTypeRateComparisonGone, nil)
		case err != nil:
			return res, fmt.Errorf("record results of items %d-%d: %w", in.FromSeq, in.ToSeq, err)
		}
	}
	if err := b.fatalErr(); err != nil {
		return res, err
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if b.hasTransient() {
		// The message counts what is left of the whole comparison.
		pending := res.Counters.PendingItems
		if len(done) == 0 {
			c, err := store.RateComparisonByID(ctx, a.Store.Pool, orgID, compID)
			if err != nil {
				return res, fmt.Errorf("read rate comparison: %w", err)
			}
			pending = c.PendingItems
		}
		return res, b.transientError(pending)
	}
	a.log().DebugContext(ctx, "rate comparison batch", "comparison_id", in.ComparisonID, "from", in.FromSeq, "to", in.ToSeq,
		"completed", res.Completed, "failed", res.Failed)
	return res, nil
}

// rcBatch is one batch in progress.
type rcBatch struct {
	a                      *RateComparisonActivities
	ctx                    context.Context
	source, target         carriers.Carrier
	sourceAcct, targetAcct carriers.Account
	items                  []store.RateComparisonWorkItem

	mu       sync.Mutex
	results  []*store.RateComparisonItemResult // by item index; nil: unfinished
	finished int
	fatal    error
	// transient counts the items left unfinished by a carrier failure worth
	// retrying; transientErr is the last such failure.
	transient    int
	transientErr error
	// hbMu serializes heartbeats (apart from mu: a heartbeat may be an RPC).
	hbMu sync.Mutex
}

// rcTracked is an item whose tracking gave what rating needs.
type rcTracked struct {
	index int
	track carriers.TrackResult
}

func (b *rcBatch) fatalErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fatal
}

// stopped reports whether no new work should start.
func (b *rcBatch) stopped() bool { return b.ctx.Err() != nil || b.fatalErr() != nil }

// finish records an item's outcome and heartbeats the progress.
func (b *rcBatch) finish(i int, r store.RateComparisonItemResult) {
	b.mu.Lock()
	b.results[i] = &r
	b.finished++
	n := b.finished
	b.mu.Unlock()
	b.beat(n)
}

// beatEvery heartbeats the progress every d until the returned stop is called.
func (b *rcBatch) beatEvery(d time.Duration) (stop func()) {
	b.beat(0)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				b.mu.Lock()
				n := b.finished
				b.mu.Unlock()
				b.beat(n)
			case <-done:
				return
			case <-b.ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func (b *rcBatch) beat(finished int) {
	b.hbMu.Lock()
	defer b.hbMu.Unlock()
	activity.RecordHeartbeat(b.ctx, finished)
}

func (b *rcBatch) fail(i int, msg string) {
	b.finish(i, store.RateComparisonItemResult{ID: b.items[i].ID, Status: store.RateItemFailed, Error: msg})
}

// setTransient leaves n items unfinished for a retry of the batch.
func (b *rcBatch) setTransient(n int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.transient += n
	b.transientErr = err
}

// hasTransient reports whether items were left unfinished because a
// carrier was unavailable.
func (b *rcBatch) hasTransient() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.transient > 0
}

// transientError is the retryable error of a batch that left items
// unfinished because a carrier was unavailable; pending is the number of
// the comparison's items not processed yet.
func (b *rcBatch) transientError(pending int) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	carrier := "the carrier"
	if ce, ok := carriers.AsError(b.transientErr); ok && ce.Carrier != "" {
		carrier = ce.Carrier
	}
	return temporal.NewApplicationErrorWithCause(fmt.Sprintf("%s is unavailable: %s (%d items not processed)",
		carrier, rcCarrierMessage(b.transientErr), pending), ErrTypeRateComparisonCarrierUnavailable, b.transientErr)
}

// setFatal records the first fatal error; the batch stops starting work.
func (b *rcBatch) setFatal(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.fatal == nil {
		b.fatal = err
	}
}

// parallel runs fn(0…n-1) with at most the configured concurrency, starting
// nothing new once the batch is stopped.
func (b *rcBatch) parallel(n int, fn func(i int)) {
	sem := make(chan struct{}, b.a.concurrency())
	var wg sync.WaitGroup
	for i := range n {
		if b.stopped() {
			break
		}
		select {
		case sem <- struct{}{}:
		case <-b.ctx.Done():
		}
		if b.stopped() {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}()
	}
	wg.Wait()
}

// track tracks the items with the source carrier, a chunk per Track call,
// and returns the items that can be rated; the others are failed. A chunk
// whose call fails permanently is tracked again one number per call (at
// most the configured concurrency in flight), so that one number the
// adapter cannot handle fails alone.
func (b *rcBatch) track() []rcTracked {
	chunks := (len(b.items) + rcTrackChunk - 1) / rcTrackChunk
	byIndex := make([]*carriers.TrackResult, len(b.items))
	retry := make([]bool, len(b.items)) // left unfinished: the carrier was unavailable
	var (
		mu     sync.Mutex
		singly []int // items of chunks whose call failed permanently
	)
	b.parallel(chunks, func(c int) {
		lo, hi := c*rcTrackChunk, min((c+1)*rcTrackChunk, len(b.items))
		err := b.trackRange(lo, hi, byIndex, retry)
		switch {
		case err == nil:
		case hi-lo > 1:
			mu.Lock()
			for i := lo; i < hi; i++ {
				singly = append(singly, i)
			}
			mu.Unlock()
		default:
			b.fail(lo, b.sourceAcct.Carrier+" tracking failed: "+rcCarrierMessage(err))
		}
	})
	if len(singly) > 0 && !b.stopped() {
		sort.Ints(singly)
		b.a.log().InfoContext(b.ctx, "rate comparison: a tracking call failed; tracking its numbers one by one",
			"carrier", b.sourceAcct.Carrier, "numbers", len(singly))
		b.parallel(len(singly), func(k int) {
			i := singly[k]
			if err := b.trackRange(i, i+1, byIndex, retry); err != nil {
				b.fail(i, b.sourceAcct.Carrier+" tracking failed: "+rcCarrierMessage(err))
			}
		})
	}
	if b.stopped() {
		return nil
	}
	var out []rcTracked
	for i, r := range byIndex {
		if b.results[i] != nil || retry[i] {
			continue
		}
		carrier := b.sourceAcct.Carrier
		switch {
		case r == nil || r.NotFound:
			b.fail(i, "tracking number unknown to "+carrier)
		case r.Error != "":
			b.fail(i, carrier+" tracking error: "+TenantText(r.Error))
		case !rcRatable(r.Origin) || !rcRatable(r.Destination):
			b.fail(i, carrier+" tracking gives no origin or destination postal code and country")
		case r.Weight == nil || r.Weight.Value <= 0:
			b.fail(i, carrier+" tracking gives no weight")
		default:
			out = append(out, rcTracked{index: i, track: *r})
		}
	}
	return out
}

// trackRange tracks items [lo, hi) in one Track call and files the
// results in byIndex. A cancellation, a fatal refusal and a failure worth
// retrying (retry set, the items stay unfinished) are handled here; another
// failure is returned, the items left for the caller to decide.
func (b *rcBatch) trackRange(lo, hi int, byIndex []*carriers.TrackResult, retry []bool) error {
	numbers := make([]string, 0, hi-lo)
	for _, it := range b.items[lo:hi] {
		numbers = append(numbers, it.TrackingNumber)
	}
	var results []carriers.TrackResult
	err := b.a.call(b.ctx, func() error {
		var err error
		results, err = b.source.Track(b.ctx, b.sourceAcct, numbers)
		return err
	})
	switch {
	case b.ctx.Err() != nil:
		return nil // cancelled: these items stay unfinished
	case rcIsFatal(err):
		b.setFatal(rcFatal(b.sourceAcct.Carrier+" refused to track with account "+b.sourceAcct.ID+": "+rcCarrierMessage(err), err))
		return nil
	case err != nil && carriers.IsRetryable(err):
		for i := lo; i < hi; i++ {
			retry[i] = true
		}
		b.setTransient(hi-lo, err)
		return nil
	case err != nil:
		return err
	}
	found := make(map[string]carriers.TrackResult, len(results))
	for _, r := range results {
		found[strings.ToUpper(r.TrackingNumber)] = r
	}
	for i := lo; i < hi; i++ {
		if r, ok := found[strings.ToUpper(strings.TrimSpace(b.items[i].TrackingNumber))]; ok {
			byIndex[i] = &r
		}
	}
	return nil
}

func rcRatable(a *carriers.Address) bool {
	return a != nil && strings.TrimSpace(a.Zip) != "" && len(strings.TrimSpace(a.CountryCode)) == 2
}

// rate rates every tracked item with the target account.
func (b *rcBatch) rate(tracked []rcTracked) {
	b.parallel(len(tracked), func(k int) {
		t := tracked[k]
		it := b.items[t.index]
		r := store.RateComparisonItemResult{
			ID:          it.ID,
			ServiceType: t.track.ServiceType,
			Origin:      rcAddress(t.track.Origin),
			Destination: rcAddress(t.track.Destination),
			WeightValue: &t.track.Weight.Value,
			WeightUnit:  t.track.Weight.Unit,
		}
		// The uploaded service wins over the tracked one when it is known.
		level := ""
		if it.ServiceType != nil {
			level = ServiceLevel(b.sourceAcct.Carrier, *it.ServiceType)
		}
		if level == "" {
			level = ServiceLevel(b.sourceAcct.Carrier, t.track.ServiceType)
		}
		if level == "" {
			level = LevelGround
		}
		r.ServiceLevel = level
		code := ComparableService(b.targetAcct.Carrier, level)
		if code == "" {
			r.Status, r.Error = store.RateItemFailed, b.targetAcct.Carrier+" has no service comparable to "+level
			b.finish(t.index, r)
			return
		}
		var quotes []carriers.Quote
		err := b.a.call(b.ctx, func() error {
			var err error
			quotes, err = b.target.Rate(b.ctx, b.targetAcct, carriers.RateRequest{
				ShipFrom:    rcRateAddress(*t.track.Origin),
				ShipTo:      rcRateAddress(*t.track.Destination),
				Packages:    []carriers.Package{{Weight: *t.track.Weight}},
				ServiceType: code,
			})
			return err
		})
		switch {
		case b.ctx.Err() != nil:
			return // cancelled: the item stays unfinished
		case rcIsFatal(err):
			b.setFatal(rcFatal(b.targetAcct.Carrier+" refused to rate with account "+b.targetAcct.ID+": "+rcCarrierMessage(err), err))
			return
		case err != nil && carriers.IsRetryable(err):
			b.setTransient(1, err) // the item stays unfinished
			return
		case err != nil:
			r.Status, r.Error = store.RateItemFailed, b.targetAcct.Carrier+" rating failed: "+rcCarrierMessage(err)
			b.finish(t.index, r)
			return
		}
		q, ok := rcPickQuote(quotes, code)
		if !ok {
			r.Status, r.Error = store.RateItemFailed, b.targetAcct.Carrier+" quoted no "+code+" service for this route"
			b.finish(t.index, r)
			return
		}
		price := q.TotalPrice
		r.Status = store.RateItemCompleted
		r.Zone, r.QuotedService, r.QuotedServiceName, r.QuotedPrice, r.Currency, r.TransitDays =
			q.Zone, q.ServiceType, q.ServiceName, &price, q.Currency, q.TransitDays
		b.finish(t.index, r)
	})
}

// rcPickQuote is the quote of the service asked for, else the cheapest.
func rcPickQuote(quotes []carriers.Quote, code string) (carriers.Quote, bool) {
	for _, q := range quotes {
		if q.ServiceType == code {
			return q, true
		}
	}
	if len(quotes) == 0 {
		return carriers.Quote{}, false
	}
	best := quotes[0]
	for _, q := range quotes[1:] {
		if q.TotalPrice < best.TotalPrice {
			best = q
		}
	}
	return best, true
}

func rcAddress(a *carriers.Address) *store.RateAddress {
	if a == nil {
		return nil
	}
	return &store.RateAddress{City: a.City, State: rcFirst(a.ProvinceCode, a.Province), Zip: a.Zip, Country: rcFirst(a.CountryCode, a.Country)}
}

// rcRateAddress keeps what a quote depends on: the city, state, postal
// code and country of a tracked address.
func rcRateAddress(a carriers.Address) carriers.Address {
	return carriers.Address{City: a.City, ProvinceCode: a.ProvinceCode, Province: a.Province, Zip: a.Zip,
		CountryCode: strings.ToUpper(strings.TrimSpace(a.CountryCode)), Country: a.Country, Residential: a.Residential}
}

func rcFirst(vals ...string) string {
	for _, v := range vals {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// call runs fn, retrying retryable carrier failures with backoff.
func (a *RateComparisonActivities) call(ctx context.Context, fn func() error) error {
	backoff := a.RetryBackoff
	if backoff <= 0 {
		backoff = 100 * time.Millisecond
	}
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt >= rcCallAttempts || ctx.Err() != nil || !carriers.IsRetryable(err) {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return err
		}
		backoff *= 2
	}
}

// rcIsFatal: no other item of the comparison can succeed with this account.
func rcIsFatal(err error) bool {
	return errors.Is(err, carriers.ErrUnauthorized) || errors.Is(err, carriers.ErrNotConfigured) ||
		errors.Is(err, carriers.ErrUnknownCarrier) || errors.Is(err, carriers.ErrNotSupported)
}

func rcCarrierMessage(err error) string {
	if ce, ok := carriers.AsError(err); ok {
		msg := ce.Message
		if ce.Code != "" {
			msg += " (" + ce.Code + ")"
		}
		return TenantText(msg)
	}
	return TenantMessage(err)
}

// --- finish ---

// FinishRateComparisonInput closes a comparison. Outcome is
// store.FinishCompleted, store.FinishFailed (with Error) or
// store.FinishCancelled.
type FinishRateComparisonInput struct {
	OrganizationID string `json:"organizationId"`
	ComparisonID   string `json:"comparisonId"`
	Outcome        string `json:"outcome"`
	Error          string `json:"error"`
}

// FinishRateComparisonResult is the comparison's final state ("" Status:
// it was deleted).
type FinishRateComparisonResult struct {
	Status         string  `json:"status"`
	CompletedItems int     `json:"completedItems"`
	FailedItems    int     `json:"failedItems"`
	SkippedItems   int     `json:"skippedItems"`
	PendingItems   int     `json:"pendingItems"`
	TotalSavings   float64 `json:"totalSavings"`
}

// FinishRateComparison recounts the comparison from its items and sets its
// final status (cancelled: unfinished items become skipped). A comparison
// that is no longer processing is left as it is; a deleted one is fine.
func (a *RateComparisonActivities) FinishRateComparison(ctx context.Context, in FinishRateComparisonInput) (FinishRateComparisonResult, error) {
	orgID, compID, err := rcParseIDs(in.OrganizationID, in.ComparisonID)
	if err != nil {
		return FinishRateComparisonResult{}, err
	}
	switch in.Outcome {
	case store.FinishCompleted, store.FinishFailed, store.FinishCancelled:
	default:
		return FinishRateComparisonResult{}, temporal.NewNonRetryableApplicationError("unknown outcome "+in.Outcome, ErrTypeInvalidInput, nil)
	}
	c, err := store.FinishRateComparison(ctx, a.Store.Pool, orgID, compID, in.Outcome, TenantText(in.Error))
	if errors.Is(err, store.ErrNotFound) {
		return FinishRateComparisonResult{}, nil
	}
	if err != nil {
		return FinishRateComparisonResult{}, fmt.Errorf("finish rate comparison: %w", err)
	}
	return FinishRateComparisonResult{Status: c.Status, CompletedItems: c.CompletedItems, FailedItems: c.FailedItems,
		SkippedItems: c.SkippedItems, PendingItems: c.PendingItems, TotalSavings: c.TotalSavings}, nil
}

// --- helpers ---

func (a *RateComparisonActivities) concurrency() int {
	if a.Concurrency > 0 {
		return a.Concurrency
	}
	return DefaultRateComparisonConcurrency
}

// processingComparison loads the comparison; gone or not processing is
// ErrTypeRateComparisonGone.
func (a *RateComparisonActivities) processingComparison(ctx context.Context, orgID, id uuid.UUID) (store.RateComparison, error) {
	c, err := store.RateComparisonByID(ctx, a.Store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return c, rcGone(id.String())
	}
	if err != nil {
		return c, fmt.Errorf("read rate comparison: %w", err)
	}
	if c.Status != store.RateComparisonProcessing {
		return c, temporal.NewNonRetryableApplicationError("rate comparison "+id.String()+" is "+c.Status+", not processing", ErrTypeRateComparisonGone, nil)
	}
	return c, nil
}

// usableAccount loads an active account (that supports rating, when
// rating); anything else is fatal.
func (a *RateComparisonActivities) usableAccount(ctx context.Context, orgID, id uuid.UUID, rating bool) (store.CarrierAccount, error) {
	acct, err := store.CarrierAccountByID(ctx, a.Store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return acct, rcFatal("carrier account "+id.String()+" was deleted", nil)
	}
	if err != nil {
		return acct, fmt.Errorf("read carrier account: %w", err)
	}
	if acct.Status != store.CarrierAccountActive {
		return acct, rcFatal("carrier account \""+acct.Name+"\" is "+acct.Status+", not active", nil)
	}
	if rating && !acct.SupportsRating {
		return acct, rcFatal("carrier account \""+acct.Name+"\" does not support rating", nil)
	}
	return acct, nil
}

// adapterFor loads an account and its adapter with opened credentials.
func (a *RateComparisonActivities) adapterFor(ctx context.Context, orgID uuid.UUID, accountID string, rating bool) (carriers.Carrier, carriers.Account, error) {
	id, err := uuid.Parse(accountID)
	if err != nil {
		return nil, carriers.Account{}, temporal.NewNonRetryableApplicationError("account id is not a UUID", ErrTypeInvalidInput, nil)
	}
	acct, err := a.usableAccount(ctx, orgID, id, rating)
	if err != nil {
		return nil, carriers.Account{}, err
	}
	if a.Carriers == nil {
		return nil, carriers.Account{}, rcFatal("no carrier adapters are configured", nil)
	}
	c, err := a.Carriers.Get(acct.Carrier)
	if err != nil {
		return nil, carriers.Account{}, rcFatal("no adapter for "+acct.Carrier, err)
	}
	if a.Secrets == nil {
		return nil, carriers.Account{}, rcFatal("carrier credentials cannot be opened: no encryption key configured", nil)
	}
	ca, err := store.AdapterAccount(a.Secrets, acct)
	if err != nil {
		return nil, carriers.Account{}, rcFatal("the credentials of carrier account \""+acct.Name+"\" cannot be opened", err)
	}
	return c, ca, nil
}

func rcParseIDs(orgID, compID string) (uuid.UUID, uuid.UUID, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	c, err := uuid.Parse(compID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("comparisonId is not a UUID", ErrTypeInvalidInput, nil)
	}
	return org, c, nil
}

func rcGone(id string) error {
	return temporal.NewNonRetryableApplicationError("rate comparison "+id+" was deleted", ErrTypeRateComparisonGone, nil)
}

// rcFatal is a non-retryable ErrTypeRateComparisonFatal; its message is
// shown to the user as the comparison's error, so it never carries a
// credential (carrier messages do not echo them).
func rcFatal(msg string, cause error) error {
	return temporal.NewNonRetryableApplicationError(msg, ErrTypeRateComparisonFatal, cause)
}

func (a *RateComparisonActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}

// --- service levels ---

// Service levels: the comparable classes of service across carriers.
const (
	LevelGround                = "ground"
	Level3Day                  = "3_day"
	Level2Day                  = "2_day"
	LevelOvernight             = "overnight"
	LevelInternationalEconomy  = "international_economy"
	LevelInternationalPriority = "international_priority"
)

// rcLevels maps each carrier's service codes to a level.
var rcLevels = map[string]map[string]string{
	carriers.CarrierA: {
		"FEDEX_GROUND": LevelGround, "GROUND_HOME_DELIVERY": LevelGround, "FEDEX_HOME_DELIVERY": LevelGround, "SMART_POST": LevelGround,
		"FEDEX_EXPRESS_SAVER": Level3Day,
		"FEDEX_2_DAY":         Level2Day, "FEDEX_2_DAY_AM": Level2Day,
		"STANDARD_OVERNIGHT": LevelOvernight, "PRIORITY_OVERNIGHT": LevelOvernight, "FIRST_OVERNIGHT": LevelOvernight,
		"INTERNATIONAL_ECONOMY": LevelInternationalEconomy, "FEDEX_INTERNATIONAL_CONNECT_PLUS": LevelInternationalEconomy,
		"INTERNATIONAL_PRIORITY": LevelInternationalPriority, "FEDEX_INTERNATIONAL_PRIORITY": LevelInternationalPriority, "INTERNATIONAL_FIRST": LevelInternationalPriority,
	},
	carriers.CarrierB: {
		"03": LevelGround, "93": LevelGround,
		"12": Level3Day,
		"02": Level2Day, "59": Level2Day,
		"13": LevelOvernight, "01": LevelOvernight, "14": LevelOvernight,
		"08": LevelInternationalEconomy, "11": LevelInternationalEconomy, "65": LevelInternationalEconomy,
		"07": LevelInternationalPriority, "54": LevelInternationalPriority,
	},
	carriers.CarrierC: {
		"usps_ground_advantage": LevelGround, "usps_parcel_select": LevelGround, "usps_media_mail": LevelGround,
		"usps_priority_mail":                       Level2Day,
		"usps_priority_mail_express":               LevelOvernight,
		"usps_first_class_mail_international":      LevelInternationalEconomy,
		"usps_priority_mail_international":         LevelInternationalEconomy,
		"usps_priority_mail_express_international": LevelInternationalPriority,
	},
}

// rcComparable is each carrier's service for a level.
var rcComparable = map[string]map[string]string{
	carriers.CarrierA: {
		LevelGround: "FEDEX_GROUND", Level3Day: "FEDEX_EXPRESS_SAVER", Level2Day: "FEDEX_2_DAY", LevelOvernight: "STANDARD_OVERNIGHT",
		LevelInternationalEconomy: "INTERNATIONAL_ECONOMY", LevelInternationalPriority: "INTERNATIONAL_PRIORITY",
	},
	carriers.CarrierB: {
		LevelGround: "03", Level3Day: "12", Level2Day: "02", LevelOvernight: "13",
		LevelInternationalEconomy: "08", LevelInternationalPriority: "07",
	},
	carriers.CarrierC: {
		// carrier_c has no 3-day class: Priority Mail (1-3 days) compares.
		LevelGround: "usps_ground_advantage", Level3Day: "usps_priority_mail", Level2Day: "usps_priority_mail", LevelOvernight: "usps_priority_mail_express",
		LevelInternationalEconomy: "usps_priority_mail_international", LevelInternationalPriority: "usps_priority_mail_express_international",
	},
}

// rcLevelAliases are level names a user may upload as serviceType.
var rcLevelAliases = map[string]string{
	"GROUND": LevelGround, "STANDARD": LevelGround, "HOME_DELIVERY": LevelGround,
	"3_DAY": Level3Day, "3DAY": Level3Day, "THREE_DAY": Level3Day, "3_DAY_SELECT": Level3Day, "EXPRESS_SAVER": Level3Day,
	"2_DAY": Level2Day, "2DAY": Level2Day, "TWO_DAY": Level2Day, "2ND_DAY": Level2Day, "2ND_DAY_AIR": Level2Day, "SECOND_DAY": Level2Day,
	"OVERNIGHT": LevelOvernight, "NEXT_DAY": LevelOvernight, "NEXT_DAY_AIR": LevelOvernight, "1_DAY": LevelOvernight, "ONE_DAY": LevelOvernight, "EXPRESS": LevelOvernight,
	"INTERNATIONAL_ECONOMY": LevelInternationalEconomy, "INTERNATIONAL": LevelInternationalEconomy, "WORLDWIDE_EXPEDITED": LevelInternationalEconomy,
	"INTERNATIONAL_PRIORITY": LevelInternationalPriority, "WORLDWIDE_EXPRESS": LevelInternationalPriority,
}

// ServiceLevel maps a service to its level: a service code of the given
// carrier (then of any carrier), a level name or alias ("ground", "2-day",
// "Next Day Air", …), or a service name containing one of the classic words
// (ground, overnight, next day, 2nd day, 3 day, saver). "" when unknown.
func ServiceLevel(carrier, service string) string {
	s := strings.TrimSpace(service)
	if s == "" {
		return ""
	}
	if l, ok := rcLevels[carrier][s]; ok {
		return l
	}
	for _, code := range carriers.Codes() {
		for k, l := range rcLevels[code] {
			if strings.EqualFold(k, s) {
				return l
			}
		}
	}
	norm := strings.ToUpper(s)
	norm = strings.NewReplacer("-", "_", " ", "_", ".", "").Replace(norm)
	norm = strings.TrimPrefix(norm, "FEDEX_")
	norm = strings.TrimPrefix(norm, "UPS_")
	norm = strings.TrimPrefix(norm, "USPS_")
	if l, ok := rcLevelAliases[norm]; ok {
		return l
	}
	switch {
	case strings.Contains(norm, "INTERNATIONAL") || strings.Contains(norm, "WORLDWIDE"):
		if strings.Contains(norm, "ECONOMY") || strings.Contains(norm, "EXPEDITED") || strings.Contains(norm, "STANDARD") {
			return LevelInternationalEconomy
		}
		return LevelInternationalPriority
	case strings.Contains(norm, "GROUND"):
		return LevelGround
	case strings.Contains(norm, "OVERNIGHT") || strings.Contains(norm, "NEXT_DAY") || strings.Contains(norm, "PRIORITY_MAIL_EXPRESS"):
		return LevelOvernight
	case strings.Contains(norm, "2ND_DAY") || strings.Contains(norm, "2_DAY") || strings.Contains(norm, "2DAY") || strings.Contains(norm, "PRIORITY_MAIL"):
		return Level2Day
	case strings.Contains(norm, "3_DAY") || strings.Contains(norm, "3DAY") || strings.Contains(norm, "SAVER"):
		return Level3Day
	}
	return ""
}

// ComparableService is the carrier's service code for a level ("" when
// the carrier has none).
func ComparableService(carrier, level string) string { return rcComparable[carrier][level] }
