package operations

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/internal/oncemap"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// Transformation trigger points of an item's execution.
const (
	TriggerBeforeOperation = "before_operation"
	TriggerAfterOperation  = "after_operation"
)

// ErrNoRun is a run that does not exist (Runs.Pause, Resume, Cancel).
var ErrNoRun = errors.New("the operation has no run")

// ErrWorkflowsUnavailable answers what needs a workflow when none can run.
var ErrWorkflowsUnavailable = domain.WorkflowsUnavailable(nil)

// Execute moves a draft or pending operation to executing and starts its
// OperationExecute run (202 in the API). Another status is Conflict.
func (s *Service) Execute(ctx context.Context, actor domain.Actor, id uuid.UUID) (Operation, error) {
	if err := actor.RequireScope(ScopeExecute); err != nil {
		return Operation{}, err
	}
	op, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	if op.Status != store.OperationDraft && op.Status != store.OperationPending {
		return Operation{}, domain.Conflict("an operation that is " + op.Status + " cannot be executed")
	}
	if s.runs == nil {
		return Operation{}, ErrWorkflowsUnavailable
	}
	if err := s.runs.Execute(ctx, ExecuteRun{OrganizationID: actor.OrganizationID, OperationID: id, Actor: actor}); err != nil {
		return Operation{}, err
	}
	op, err = store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return op, storeErr(err, "operation")
}

// runControl sends pause, resume or cancel to the run: the operation must
// be in one of from.
func (s *Service) runControl(ctx context.Context, actor domain.Actor, id uuid.UUID, verb string, from []string,
	send func(ctx context.Context, orgID, opID uuid.UUID) error) (Operation, error) {
	if err := actor.RequireScope(ScopeExecute); err != nil {
		return Operation{}, err
	}
	op, err := store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	ok := false
	for _, f := range from {
		ok = ok || op.Status == f
	}
	if !ok {
		return Operation{}, domain.Conflict("an operation that is " + op.Status + " cannot be " + verb)
	}
	if s.runs == nil {
		return Operation{}, ErrWorkflowsUnavailable
	}
	if err := send(ctx, actor.OrganizationID, id); err != nil {
		if errors.Is(err, ErrNoRun) {
			return Operation{}, domain.Conflict("the operation has no run going; it is being reconciled")
		}
		return Operation{}, err
	}
	op, err = store.OperationByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return op, storeErr(err, "operation")
}

// Pause stops an executing operation from starting items (items in flight
// finish).
func (s *Service) Pause(ctx context.Context, actor domain.Actor, id uuid.UUID) (Operation, error) {
	return s.runControl(ctx, actor, id, "paused", []string{store.OperationExecuting}, func(ctx context.Context, o, i uuid.UUID) error { return s.runs.Pause(ctx, o, i) })
}

// Resume continues a paused operation.
func (s *Service) Resume(ctx context.Context, actor domain.Actor, id uuid.UUID) (Operation, error) {
	return s.runControl(ctx, actor, id, "resumed", []string{store.OperationPaused}, func(ctx context.Context, o, i uuid.UUID) error { return s.runs.Resume(ctx, o, i) })
}

// Cancel cancels an operation: items not yet started become skipped. A
// draft or pending operation has no run: it is cancelled at once; an
// executing or paused one through its run. Another status is Conflict.
func (s *Service) Cancel(ctx context.Context, actor domain.Actor, id uuid.UUID) (Operation, error) {
	if err := actor.RequireScope(ScopeExecute); err != nil {
		return Operation{}, err
	}
	orgID := actor.OrganizationID
	var running bool
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		st, err := store.LockOperation(ctx, tx, orgID, id)
		if err != nil {
			return err
		}
		switch st {
		case store.OperationExecuting, store.OperationPaused:
			running = true
			return nil
		case store.OperationDraft, store.OperationPending:
		default:
			return domain.Conflict("an operation that is " + st + " cannot be cancelled")
		}
		if _, err := store.SkipPendingItems(ctx, tx, id, "the operation was cancelled"); err != nil {
			return err
		}
		_, err = store.SetOperationStatus(ctx, tx, orgID, id, []string{st}, store.OperationCancelled, nil)
		return err
	})
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	if running {
		return s.runControl(ctx, actor, id, "cancelled", []string{store.OperationExecuting, store.OperationPaused},
			func(ctx context.Context, o, i uuid.UUID) error { return s.runs.Cancel(ctx, o, i) })
	}
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, id)
	return op, storeErr(err, "operation")
}

// --- the steps of the OperationExecute run (called by its activities) ---

// BeginExecution moves the operation from draft or pending to executing
// and records the executed history entry (historyID, stable per run). An
// operation already executing is answered as it is (a step run again);
// another status is Conflict.
func (s *Service) BeginExecution(ctx context.Context, actor domain.Actor, opID, historyID uuid.UUID) (Operation, error) {
	orgID := actor.OrganizationID
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		st, err := store.LockOperation(ctx, tx, orgID, opID)
		if err != nil {
			return err
		}
		switch st {
		case store.OperationExecuting:
			return nil
		case store.OperationDraft, store.OperationPending:
		default:
			return domain.Conflict("an operation that is " + st + " cannot be executed")
		}
		if _, err := store.SetOperationStatus(ctx, tx, orgID, opID, []string{st}, store.OperationExecuting, nil); err != nil {
			return err
		}
		prev, _ := json.Marshal(map[string]any{"status": st})
		next, _ := json.Marshal(map[string]any{"status": store.OperationExecuting})
		return store.InsertHistory(ctx, tx, store.HistoryEntry{ID: historyID, OrganizationID: orgID, OperationID: opID, Action: store.HistoryExecuted,
			PreviousState: prev, NewState: next, IsUndoable: true, PerformedBy: performer(actor)})
	})
	if err != nil {
		return Operation{}, storeErr(err, "operation")
	}
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, opID)
	return op, storeErr(err, "operation")
}

// SetRunStatus moves a running operation between executing and paused, or
// to cancelled (pending items skipped). It reports the status after.
func (s *Service) SetRunStatus(ctx context.Context, orgID, opID uuid.UUID, to string) (string, error) {
	var from []string
	switch to {
	case store.OperationPaused:
		from = []string{store.OperationExecuting}
	case store.OperationExecuting:
		from = []string{store.OperationPaused}
	case store.OperationCancelled, store.OperationFailed:
		from = []string{store.OperationExecuting, store.OperationPaused}
	default:
		return "", fmt.Errorf("no run status %q", to)
	}
	var st string
	err := pgx.BeginFunc(ctx, s.store.Pool, func(tx pgx.Tx) error {
		var err error
		if st, err = store.LockOperation(ctx, tx, orgID, opID); err != nil {
			return err
		}
		if to == store.OperationCancelled && (st == store.OperationExecuting || st == store.OperationPaused) {
			if _, err := store.SkipPendingItems(ctx, tx, opID, "the operation was cancelled"); err != nil {
				return err
			}
		}
		moved, err := store.SetOperationStatus(ctx, tx, orgID, opID, from, to, nil)
		if moved {
			st = to
		}
		return err
	})
	return st, storeErr(err, "operation")
}

// FinishExecution ends an executing operation with no item left pending
// or processing: failed when every item that was not skipped failed, else
// completed. It reports the status after (unchanged while items remain, or
// when the operation is no longer executing).
func (s *Service) FinishExecution(ctx context.Context, orgID, opID uuid.UUID) (Operation, error) {
	op, err := store.OperationByID(ctx, s.store.Pool, orgID, opID)
	if err != nil {
		return op, storeErr(err, "operation")
	}
	if op.Status != store.OperationExecuting || op.PendingCount > 0 || op.ProcessingCount > 0 {
		return op, nil
	}
	to, msg := store.OperationCompleted, (*string)(nil)
	if op.FailedCount > 0 && op.CompletedCount == 0 {
		to = store.OperationFailed
		m := fmt.Sprintf("all %d items that were not skipped failed", op.FailedCount)
		msg = &m
	}
	if _, err := store.SetOperationStatus(ctx, s.store.Pool, orgID, opID, []string{store.OperationExecuting}, to, msg); err != nil {
		return op, err
	}
	op, err = store.OperationByID(ctx, s.store.Pool, orgID, opID)
	return op, storeErr(err, "operation")
}

// BatchInput is one batch of an execution.
type BatchInput struct {
	Actor       domain.Actor
	OperationID uuid.UUID
	// Owner is the run's workflow id (the purchases' owner).
	Owner string
	// Claim names the batch: the same claim is the same batch.
	Claim string
	Limit int
	// Parallelism is how many items run at once (default 8).
	Parallelism int
	// Heartbeat, when not nil, is called after each item.
	Heartbeat func(done int)
}

// BatchResult is what a batch did.
type BatchResult struct {
	// Items is how many items the batch held (claimed and resumed).
	Items     int `json:"items"`
	Resumed   int `json:"resumed"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
	// Status is the operation's status after the batch, Total its items
	// and Processed those settled.
	Status    string `json:"status"`
	Total     int64  `json:"total"`
	Processed int64  `json:"processed"`
}

// ProcessBatch executes up to Limit items of the executing operation
// under the batch's claim, Parallelism at a time, and settles each with
// its result. It claims the items as it goes (pending → processing, a
// chunk of Parallelism items when the previous chunk is under way), so
// that every batch keeps its Parallelism items going until no item is
// pending, and at most one chunk waits claimed behind those in flight. Run again (the worker
// died), it settles first the items it claimed and left processing,
// without repeating their effect: a label is resolved
// (ResolveLabelPurchase: recorded, voided or left unknown), bought afresh
// only when the carrier was provably never asked.
//
// The items of a batch share what they read (carrier accounts, origins,
// rate snapshots, transformations: once per batch), and their results are
// settled in chunks (one statement per settleChunk items, or per
// settleEvery): an item's status moves with its result (shipment, cost,
// error) in one statement. A result not yet settled when the worker dies
// is found again by the batch's next attempt (the item is still
// processing under the claim) and resolved from what was recorded.
func (s *Service) ProcessBatch(ctx context.Context, in BatchInput) (BatchResult, error) {
	orgID := in.Actor.OrganizationID
	resumed, held, err := store.ClaimHeld(ctx, s.store.Pool, in.OperationID, in.Claim)
	if err != nil {
		return BatchResult{}, err
	}
	par := in.Parallelism
	if par <= 0 {
		par = 8
	}
	actor := domain.Actor{Kind: domain.ActorOperation, ID: in.OperationID, OrganizationID: orgID, Name: "operation " + in.OperationID.String(), OnBehalfOf: &in.Actor}
	b := s.newBatchRun(in.OperationID)
	res := BatchResult{Resumed: len(resumed)}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		firstEr error
		done    int
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if err != nil && firstEr == nil {
			firstEr = err
		}
	}
	type job struct {
		item    Item
		resumed bool
	}
	jobs := make(chan job)
	for range par {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				// An item started runs to its end even when the batch is
				// being stopped (a graceful shutdown): a purchase cut off
				// mid-call would leave its outcome unknown.
				r := s.executeItem(context.WithoutCancel(ctx), b, actor, in.Owner, j.item, j.resumed)
				// The result is written even when the activity is being
				// cancelled: the effect happened.
				fail(b.settle(context.WithoutCancel(ctx), r))
				mu.Lock()
				switch r.Status {
				case store.ItemCompleted:
					res.Completed++
				case store.ItemFailed:
					res.Failed++
				default:
					res.Skipped++
				}
				done++
				if in.Heartbeat != nil {
					in.Heartbeat(done)
				}
				mu.Unlock()
			}
		}()
	}
	// feed hands an item to a free worker; false when the batch is being
	// stopped (its worker going away): it starts no more items, those it
	// holds stay processing for its next attempt.
	feed := func(j job) bool {
		if ctx.Err() != nil {
			return false
		}
		select {
		case jobs <- j:
			res.Items++
			return true
		case <-ctx.Done():
			return false
		}
	}
	stopped := false
	for _, it := range resumed {
		if stopped = !feed(job{it, true}); stopped {
			break
		}
	}
	for !stopped && held < in.Limit {
		claimed, err := store.ClaimMoreItems(ctx, s.store.Pool, in.OperationID, in.Claim, min(par, in.Limit-held))
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			break
		}
		if len(claimed) == 0 {
			break // none pending, or the operation is no longer executing
		}
		held += len(claimed)
		for _, it := range claimed {
			if stopped = !feed(job{it, false}); stopped {
				break
			}
		}
	}
	close(jobs)
	wg.Wait()
	fail(b.flush(context.WithoutCancel(ctx)))
	if firstEr != nil {
		return res, firstEr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	// The batch that settles the last item ends the operation at once
	// (FinishExecution: completed, or failed); the run's own
	// FinishExecution then finds it ended.
	op, err := s.FinishExecution(ctx, orgID, in.OperationID)
	if err != nil {
		return res, err
	}
	res.Status, res.Total, res.Processed = op.Status, op.ItemCount, op.CompletedCount+op.FailedCount+op.SkippedCount
	return res, nil
}

// Settling a batch's results: a chunk is written when it holds settleChunk
// results or settleEvery after its first result was queued, whether more
// results arrive or not (the rest at the batch's end).
const (
	settleChunk = 32
	settleEvery = 500 * time.Millisecond
)

// batchRun is what the items of one batch share: the label purchases'
// accounts and origins, the rate snapshots and transformations read once,
// and the results waiting to be settled.
type batchRun struct {
	s          *Service
	opID       uuid.UUID
	purchases  *shipping.PurchaseBatch
	transforms Transforms

	// snaps are the rate snapshots read (a failed read is not kept, a
	// snapshot that is gone is).
	snaps oncemap.Map[uuid.UUID, store.RateSnapshot]

	settleMu sync.Mutex
	results  []store.ItemResult
	// due writes the results queued settleEvery after the first; gen
	// names the chunk it was set for (a chunk written sooner, or the
	// batch's end, moves it on and the timer does nothing).
	due *time.Timer
	gen int
	// ended is set by flush: no timer is set after it, and flush waits
	// for the writes of the timers that went off before (dueWrites),
	// whose first error is dueErr.
	ended     bool
	dueWrites sync.WaitGroup
	dueErr    error
}

func (s *Service) newBatchRun(opID uuid.UUID) *batchRun {
	b := &batchRun{s: s, opID: opID, purchases: new(shipping.PurchaseBatch), transforms: s.transforms}
	b.snaps.Keep = func(err error) bool { return errors.Is(err, store.ErrNotFound) }
	if bt, ok := s.transforms.(BatchTransforms); ok {
		b.transforms = bt.Batch()
	}
	return b
}

// snapshot reads a rate snapshot once per batch (an error is not kept,
// but for ErrNotFound).
func (b *batchRun) snapshot(ctx context.Context, orgID, id uuid.UUID) (store.RateSnapshot, error) {
	return b.snaps.Get(id, func() (store.RateSnapshot, error) { return store.RateSnapshotByID(ctx, b.s.store.Pool, orgID, id) })
}

// settle queues an item's result and writes the chunk when it holds
// settleChunk results; the first result of a chunk sets the timer that
// writes it settleEvery later.
func (b *batchRun) settle(ctx context.Context, r store.ItemResult) error {
	b.settleMu.Lock()
	b.results = append(b.results, r)
	var chunk []store.ItemResult
	switch {
	case len(b.results) >= settleChunk:
		chunk = b.take()
	case len(b.results) == 1 && !b.ended:
		gen := b.gen
		b.due = time.AfterFunc(settleEvery, func() { b.settleDue(ctx, gen) })
	}
	b.settleMu.Unlock()
	return b.write(ctx, chunk)
}

// settleDue writes the chunk of generation gen when it is still queued.
func (b *batchRun) settleDue(ctx context.Context, gen int) {
	b.settleMu.Lock()
	if gen != b.gen || b.ended {
		b.settleMu.Unlock()
		return
	}
	chunk := b.take()
	b.dueWrites.Add(1)
	b.settleMu.Unlock()
	defer b.dueWrites.Done()
	if err := b.write(ctx, chunk); err != nil {
		b.settleMu.Lock()
		b.dueErr = cmp.Or(b.dueErr, err)
		b.settleMu.Unlock()
	}
}

// take takes the queued results and moves the timer's generation on
// (settleMu held).
func (b *batchRun) take() []store.ItemResult {
	chunk := b.results
	b.results = nil
	b.gen++
	if b.due != nil {
		b.due.Stop()
		b.due = nil
	}
	return chunk
}

// write settles a chunk of results.
func (b *batchRun) write(ctx context.Context, chunk []store.ItemResult) error {
	_, err := store.SettleItems(ctx, b.s.store.Pool, b.opID, chunk)
	return err
}

// flush writes the results still queued once the batch's items have
// ended, after the writes its timers started; the first error of those is
// its own.
func (b *batchRun) flush(ctx context.Context) error {
	b.settleMu.Lock()
	b.ended = true
	chunk := b.take()
	b.settleMu.Unlock()
	err := b.write(ctx, chunk)
	b.dueWrites.Wait()
	return cmp.Or(b.dueErr, err)
}

// executeItem runs one item's steps (CONTRACT 10) and says how it ended.
func (s *Service) executeItem(ctx context.Context, b *batchRun, actor domain.Actor, owner string, it Item, resumed bool) store.ItemResult {
	orgID := actor.OrganizationID
	fail := func(msg string) store.ItemResult {
		m := domain.TenantText(msg)
		return store.ItemResult{ID: it.ID, Status: store.ItemFailed, ErrorMessage: &m}
	}
	did := false
	// (1) before_operation, not again for an item resumed (it ran).
	if b.transforms != nil && !resumed {
		if err := b.transforms.TransformOrder(ctx, orgID, it.OrderID, it.ID, TriggerBeforeOperation); err != nil {
			return fail("before_operation transformation failed: " + errText(err))
		}
	}
	out := store.ItemResult{ID: it.ID, Status: store.ItemCompleted}
	// (2) a label.
	if it.RateSnapshotID != nil || it.OverrideCarrierAccountID != nil {
		if s.labels == nil {
			return fail("labels cannot be bought: the shipping service is not configured")
		}
		lp, err := s.buyLabel(ctx, b, actor, owner, it, resumed)
		if err != nil {
			return fail(errText(err))
		}
		did = true
		id := lp.Shipment.ID
		if id == uuid.Nil {
			id = it.ID
		}
		out.ShipmentID = &id
		if lp.Shipment.RateAmount != nil {
			c := *lp.Shipment.RateAmount
			out.Cost = &c
		}
	}
	// (3) a dispatch.
	if it.OverrideDispatchBridgeID != nil {
		if s.dispatches == nil {
			return withShipment(fail("the order cannot be dispatched: dispatch is not configured"), out)
		}
		aid, err := s.dispatches.DispatchToBridge(ctx, actor, DispatchInput{OrderID: it.OrderID, BridgeID: *it.OverrideDispatchBridgeID, Key: it.ID})
		if err != nil {
			return withShipment(fail("dispatch failed: "+errText(err)), out)
		}
		did = true
		if aid != uuid.Nil { // uuid.Nil: the order was already assigned to the bridge, not by this item
			out.DispatchAssignmentID = &aid
		}
	}
	// (4) after_operation.
	if b.transforms != nil {
		if err := b.transforms.TransformOrder(ctx, orgID, it.OrderID, it.ID, TriggerAfterOperation); err != nil {
			return withShipment(fail("after_operation transformation failed: "+errText(err)), out)
		}
	}
	if !did {
		msg := "nothing to do: the item has no rate, carrier or dispatcher"
		return store.ItemResult{ID: it.ID, Status: store.ItemSkipped, ErrorMessage: &msg}
	}
	return out
}

// withShipment keeps the label bought on a failed item (undo voids it).
func withShipment(failed, done store.ItemResult) store.ItemResult {
	failed.ShipmentID, failed.Cost = done.ShipmentID, done.Cost
	return failed
}

// errText is an error as a tenant may read it.
func errText(err error) string {
	var de *domain.Error
	if errors.As(err, &de) {
		msg := de.Message
		for _, f := range de.Fields {
			msg += "; " + f.Field + " " + f.Message
		}
		return msg
	}
	return "internal error"
}

// buyLabel buys the item's label (its shipment's id is the item's id, so
// the same item never buys two labels); an item resumed is resolved first.
func (s *Service) buyLabel(ctx context.Context, b *batchRun, actor domain.Actor, owner string, it Item, resumed bool) (shipping.LabelPurchase, error) {
	if resumed {
		lp, err := s.labels.ResolveLabelPurchase(ctx, actor, it.ID)
		switch {
		case err == nil:
			return lp, nil
		case lp.Result.Outcome == shipping.PurchaseRefused:
			// Nothing was bought: buy afresh.
		default:
			return lp, err
		}
	}
	in, err := s.shipmentFor(ctx, b, actor, it)
	if err != nil {
		return shipping.LabelPurchase{}, err
	}
	return s.labels.PurchaseLabel(ctx, actor, shipping.PurchaseLabelInput{Owner: owner, Shipment: in, Batch: b.purchases})
}

// Default box of a package whose size is not known (inches).
const defaultLength, defaultWidth, defaultHeight = 12.0, 10.0, 6.0

// shipmentFor is the shipment an item buys: with its snapshot's account,
// service and packages, else with its carrier account's cheapest quote.
func (s *Service) shipmentFor(ctx context.Context, b *batchRun, actor domain.Actor, it Item) (shipping.CreateShipmentInput, error) {
	in := shipping.CreateShipmentInput{ID: it.ID, OrderID: it.OrderID,
		Metadata: json.RawMessage(fmt.Sprintf(`{"operationId":%q,"operationItemId":%q}`, it.OperationID, it.ID))}
	var pkgs []shipping.RatePackage
	if it.RateSnapshotID != nil {
		snap, err := b.snapshot(ctx, actor.OrganizationID, *it.RateSnapshotID)
		if errors.Is(err, store.ErrNotFound) {
			return in, domain.InvalidField("rateSnapshotId", "the rate snapshot no longer exists")
		}
		if err != nil {
			return in, err
		}
		in.CarrierAccountID, in.Service = snap.CarrierAccountID, snap.ServiceType
		_ = json.Unmarshal(snap.Packages, &pkgs)
	} else {
		acct := *it.OverrideCarrierAccountID
		q, err := s.labels.QuoteOrder(ctx, actor, it.OrderID, shipping.RateOptions{CarrierAccountID: &acct})
		if err != nil {
			return in, err
		}
		best := math.Inf(1)
		for _, r := range q.Results {
			for _, quote := range r.Quotes {
				if r.Err == nil && quote.TotalPrice < best {
					best, in.Service = quote.TotalPrice, quote.ServiceType
				}
			}
		}
		if in.Service == "" {
			return in, domain.Upstream("carrier_error", "the carrier account gave no quote for the order", nil)
		}
		in.CarrierAccountID, pkgs = acct, q.Packages
	}
	for _, p := range pkgs {
		in.Parcels = append(in.Parcels, parcelOf(p))
	}
	if len(in.Parcels) == 0 {
		return in, domain.InvalidField("packages", "the rate has no package to ship")
	}
	return in, nil
}

func parcelOf(p shipping.RatePackage) shipping.Parcel {
	dim := func(v *float64, def float64) float64 {
		if v != nil && *v > 0 {
			return *v
		}
		if p.DimensionUnit == carriers.UnitCM {
			return def * 2.54
		}
		return def
	}
	return shipping.Parcel{Length: dim(p.Length, defaultLength), Width: dim(p.Width, defaultWidth), Height: dim(p.Height, defaultHeight),
		Weight: p.Weight.Value, Unit: p.Weight.Unit}
}
