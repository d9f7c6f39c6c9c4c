package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// Error types of the bridge task activities (besides the order ones:
// ErrTypePlatformPermanent, ErrTypePlatformUnavailable,
// ErrTypeBridgeUnavailable, ErrTypeInvalidInput).
const (
	// ErrTypeTaskNotSupported: the bridge's connector lacks the task's
	// capability (or the task is unknown).
	ErrTypeTaskNotSupported = "TaskNotSupported"
	// ErrTypeTaskFinished: the execution was already recorded finished.
	ErrTypeTaskFinished = "TaskFinished"
	// ErrTypeTaskNotFound: the execution does not exist.
	ErrTypeTaskNotFound = "TaskNotFound"
)

// PermanentTaskErrorTypes are the non-retryable error types of the bridge
// task activities, for retry policies.
var PermanentTaskErrorTypes = []string{
	ErrTypePlatformPermanent, ErrTypeBridgeUnavailable, ErrTypeInvalidInput,
	ErrTypeTaskNotSupported, ErrTypeTaskFinished, ErrTypeTaskNotFound,
}

// BridgeTaskActorName is the actor of the order activities a sync records.
const BridgeTaskActorName = "bridge task"

// BridgeTaskActivities are the activities of the BridgeTask workflow.
type BridgeTaskActivities struct {
	Store     *store.Store
	Secrets   *secrets.Box
	Platforms *platforms.Registry
	// OrderHooks runs for each order a sync creates (nil: rules.Noop). A
	// page stored by an attempt whose answer was lost calls it again for
	// that page's orders: hooks are idempotent.
	OrderHooks rules.OrderHooks
	// Events hears the orders a page created or changed, a page at a
	// time (the agent's standing orders; nil: nobody listens).
	Events rules.Events
	// Transforms loads the before_sync and after_sync transformations a
	// grab-orders page applies (nil: transforms.Noop).
	Transforms transforms.Loader
	Logger     *slog.Logger
	// Priority is where a sync's pages mark themselves in flight, so the
	// dispatch drainers yield to an import (nil: ProcessPriority).
	Priority *PriorityGate
}

// ---- start and finish ----

// StartBridgeTaskInput is the input of StartBridgeTask.
type StartBridgeTaskInput struct {
	OrganizationID  string `json:"organizationId"`
	TaskExecutionID string `json:"taskExecutionId"`
}

// StartBridgeTaskResult is the result of StartBridgeTask.
type StartBridgeTaskResult struct {
	BridgeID string `json:"bridgeId"`
	TaskName string `json:"taskName"`
}

// StartBridgeTask marks the execution running (idempotent).
func (a *BridgeTaskActivities) StartBridgeTask(ctx context.Context, in StartBridgeTaskInput) (StartBridgeTaskResult, error) {
	orgID, execID, err := parseTaskIDs(in.OrganizationID, in.TaskExecutionID)
	if err != nil {
		return StartBridgeTaskResult{}, err
	}
	e, err := store.StartTaskExecution(ctx, a.Store.Pool, orgID, execID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return StartBridgeTaskResult{}, temporal.NewNonRetryableApplicationError("task execution "+in.TaskExecutionID+" not found", ErrTypeTaskNotFound, nil)
	case errors.Is(err, store.ErrConflict):
		return StartBridgeTaskResult{}, temporal.NewNonRetryableApplicationError("task execution "+in.TaskExecutionID+" already finished", ErrTypeTaskFinished, nil)
	case err != nil:
		return StartBridgeTaskResult{}, fmt.Errorf("start task execution: %w", err)
	}
	return StartBridgeTaskResult{BridgeID: e.BridgeID.String(), TaskName: e.TaskName}, nil
}

// FinishBridgeTaskInput is the input of FinishBridgeTask: Error "" records
// the execution completed with Output, else failed with Error.
type FinishBridgeTaskInput struct {
	OrganizationID  string          `json:"organizationId"`
	TaskExecutionID string          `json:"taskExecutionId"`
	Output          json.RawMessage `json:"output"`
	Error           string          `json:"error"`
}

// FinishBridgeTaskResult is the result of FinishBridgeTask.
type FinishBridgeTaskResult struct {
	// Recorded is false when the execution was already finished.
	Recorded bool `json:"recorded"`
}

// FinishBridgeTask records the execution's outcome once.
func (a *BridgeTaskActivities) FinishBridgeTask(ctx context.Context, in FinishBridgeTaskInput) (FinishBridgeTaskResult, error) {
	orgID, execID, err := parseTaskIDs(in.OrganizationID, in.TaskExecutionID)
	if err != nil {
		return FinishBridgeTaskResult{}, err
	}
	var out any
	if len(in.Output) > 0 {
		out = in.Output // a failed task may record its counts too
	}
	ok, err := store.FinishTaskExecution(ctx, a.Store.Pool, orgID, execID, out, in.Error)
	if err != nil {
		return FinishBridgeTaskResult{}, fmt.Errorf("finish task execution: %w", err)
	}
	return FinishBridgeTaskResult{Recorded: ok}, nil
}

// ---- paged syncs: grab-orders, grab-shipments ----

// BeginSyncInput is the input of BeginSync.
type BeginSyncInput struct {
	OrganizationID string `json:"organizationId"`
	BridgeID       string `json:"bridgeId"`
	TaskName       string `json:"taskName"`
}

// BeginSyncResult is where a sync starts: after the page of an earlier
// sync that stopped midway (Resumed), else from the bridge's high-water
// mark (Since zero: everything).
type BeginSyncResult struct {
	Since   time.Time `json:"since"`
	Cursor  string    `json:"cursor"`
	Resumed bool      `json:"resumed"`
}

// BeginSync reads the bridge's sync cursor for the task.
func (a *BridgeTaskActivities) BeginSync(ctx context.Context, in BeginSyncInput) (BeginSyncResult, error) {
	orgID, bridgeID, err := parseTaskIDs(in.OrganizationID, in.BridgeID)
	if err != nil {
		return BeginSyncResult{}, err
	}
	c, err := store.GetSyncCursor(ctx, a.Store.Pool, orgID, bridgeID, in.TaskName)
	if err != nil {
		return BeginSyncResult{}, fmt.Errorf("read sync cursor: %w", err)
	}
	var out BeginSyncResult
	if c.PageCursor != nil && *c.PageCursor != "" {
		out.Cursor, out.Resumed = *c.PageCursor, true
		if c.RunSince != nil {
			out.Since = *c.RunSince
		}
		return out, nil
	}
	if c.Since != nil {
		out.Since = *c.Since
	}
	return out, nil
}

// SyncPageInput is the input of SyncPage: one page of the task's records
// from the platform, with the since and cursor the sync pages with.
type SyncPageInput struct {
	OrganizationID  string    `json:"organizationId"`
	TaskExecutionID string    `json:"taskExecutionId"`
	BridgeID        string    `json:"bridgeId"`
	TaskName        string    `json:"taskName"`
	Since           time.Time `json:"since"`
	Cursor          string    `json:"cursor"`
}

// SyncCounts are the counts of a sync (its output). The transformation
// fields appear only when a transformation failed or wrote an order back.
type SyncCounts struct {
	Fetched   int `json:"fetched"`
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Failed    int `json:"failed"`
	// AfterSyncWritten counts the orders an after_sync transformation
	// changed (written back).
	AfterSyncWritten int `json:"afterSyncWritten,omitempty"`
	// TransformFailed counts the failed transformation runs (each left
	// its order as it was); TransformErrors names the first
	// MaxTransformErrors of them.
	TransformFailed int              `json:"transformFailed,omitempty"`
	TransformErrors []TransformError `json:"transformErrors,omitempty"`
	// FailingTransformations counts the failures per transformation (all
	// of them, past MaxTransformErrors): one that fails on every order
	// shows here by id.
	FailingTransformations []TransformFailures `json:"failingTransformations,omitempty"`
}

// TransformFailures is how often one transformation failed in a sync.
type TransformFailures struct {
	TransformationID string `json:"transformationId"`
	Name             string `json:"name"`
	Failed           int    `json:"failed"`
}

// addFailures adds n failures of a transformation (kept in first-seen
// order; a slice, not a map, so merging is deterministic).
func (c *SyncCounts) addFailures(f TransformFailures) {
	for i := range c.FailingTransformations {
		if c.FailingTransformations[i].TransformationID == f.TransformationID {
			c.FailingTransformations[i].Failed += f.Failed
			return
		}
	}
	c.FailingTransformations = append(c.FailingTransformations, f)
}

// Add adds o to c (TransformErrors up to MaxTransformErrors).
func (c *SyncCounts) Add(o SyncCounts) {
	c.Fetched += o.Fetched
	c.Created += o.Created
	c.Updated += o.Updated
	c.Unchanged += o.Unchanged
	c.Failed += o.Failed
	c.AfterSyncWritten += o.AfterSyncWritten
	c.TransformFailed += o.TransformFailed
	for _, e := range o.TransformErrors {
		if len(c.TransformErrors) >= MaxTransformErrors {
			break
		}
		c.TransformErrors = append(c.TransformErrors, e)
	}
	for _, f := range o.FailingTransformations {
		c.addFailures(f)
	}
}

// SyncPageResult is the outcome of one page; Next is "" after the last.
type SyncPageResult struct {
	SyncCounts
	Next string `json:"next"`
	// Replayed is true when an earlier attempt had stored the page.
	Replayed bool `json:"replayed"`
}

// pageOutcome is what last_page keeps of a page (store.SyncLastPage.Result):
// the counts of the upsert and of before_sync, the new orders (for the
// hooks) and, when after_sync transformations ran, the page's external
// ids (to find its changed orders again).
type pageOutcome struct {
	SyncCounts
	CreatedIDs  []uuid.UUID `json:"createdIds"`
	UpdatedIDs  []uuid.UUID `json:"updatedIds,omitempty"`
	ExternalIDs []string    `json:"externalIds,omitempty"`
}

// SyncPage fetches one page and stores it with the cursor's advance in one
// transaction (see store.UpsertOrderBatch); new orders go through the
// order-created hook. It heartbeats; platform failures are classified
// (credentials refused: the bridge moves to error, non-retryable; rate
// limited: retried after the wait the platform asked for; 5xx and network:
// retried).
func (a *BridgeTaskActivities) SyncPage(ctx context.Context, in SyncPageInput) (SyncPageResult, error) {
	defer priorityOf(a.Priority).Begin(PriorityImport)()
	orgID, execID, err := parseTaskIDs(in.OrganizationID, in.TaskExecutionID)
	if err != nil {
		return SyncPageResult{}, err
	}
	b, bridge, conn, err := a.openBridge(ctx, orgID, in.BridgeID)
	if err != nil {
		return SyncPageResult{}, err
	}
	pageKey := execID.String() + "/" + in.Cursor
	heartbeat(ctx, in.Cursor)

	// An attempt whose answer was lost may have stored this page already.
	if cur, err := store.GetSyncCursor(ctx, a.Store.Pool, orgID, b.ID, in.TaskName); err != nil {
		return SyncPageResult{}, fmt.Errorf("read sync cursor: %w", err)
	} else if len(cur.LastPage) > 0 {
		var last store.SyncLastPage
		var out pageOutcome
		if json.Unmarshal(cur.LastPage, &last) == nil && last.Key == pageKey && json.Unmarshal(last.Result, &out) == nil {
			counts := out.SyncCounts
			if in.TaskName == platforms.TaskGrabOrders && len(out.ExternalIDs) > 0 {
				after, err := a.afterSyncPage(ctx, orgID, b, a.syncKeys(ctx, execID, in.Cursor), nil, out.ExternalIDs)
				if err != nil {
					return SyncPageResult{}, err
				}
				counts.Add(after)
			}
			a.runHooks(ctx, orgID, out.CreatedIDs)
			a.tellEvents(ctx, orgID, out.CreatedIDs, out.UpdatedIDs)
			return SyncPageResult{SyncCounts: counts, Next: last.Next, Replayed: true}, nil
		}
	}

	advance := &store.SyncPageAdvance{OrganizationID: orgID, BridgeID: b.ID, Task: in.TaskName, RunSince: in.Since, PageKey: pageKey}
	switch in.TaskName {
	case platforms.TaskGrabOrders:
		orders, next, err := conn.ListOrders(ctx, bridge, in.Since, in.Cursor)
		if err != nil {
			return SyncPageResult{}, a.pageError(ctx, b, in, err)
		}
		heartbeat(ctx, in.Cursor)
		advance.Next = next
		for _, o := range orders {
			if o.UpdatedAt.After(advance.HighWater) {
				advance.HighWater = o.UpdatedAt
			}
		}
		keys := a.syncKeys(ctx, execID, in.Cursor)
		// The page's transformations, loaded once: before_sync reshapes
		// each incoming order before it is stored.
		before, err := loadChain(ctx, a.Transforms, orgID, b.ID, transforms.BeforeSync)
		if err != nil {
			return SyncPageResult{}, err
		}
		after, err := loadChain(ctx, a.Transforms, orgID, b.ID, transforms.AfterSync)
		if err != nil {
			return SyncPageResult{}, err
		}
		orders, tfCounts, err := beforeSync(ctx, before, orders)
		if err != nil {
			return SyncPageResult{}, err
		}
		var pageExt []string
		if !after.Empty() {
			pageExt = make([]string, len(orders))
			for i, o := range orders {
				pageExt[i] = o.ExternalID
			}
		}
		res, err := store.UpsertOrderBatch(ctx, a.Store, store.OrderBatch{
			OrganizationID: orgID, BridgeID: b.ID, Orders: orders, BridgeName: b.Name, ActorName: BridgeTaskActorName,
			ActivityID: keys.syncActivityID,
			Metadata:   keys.metadata(b.ID, in.TaskName),
			Cursor:     advance,
			Outcome: func(r store.OrderBatchResult) any {
				return pageOutcome{SyncCounts: batchCounts(r, tfCounts), CreatedIDs: r.CreatedID, UpdatedIDs: r.UpdatedID, ExternalIDs: pageExt}
			},
		})
		if err != nil {
			return SyncPageResult{}, storeError(err, b)
		}
		counts := batchCounts(res, tfCounts)
		if len(res.Problems) > 0 {
			a.log().WarnContext(ctx, "orders refused by a sync", "bridge_id", b.ID, "problems", res.Problems)
		}
		// after_sync: the stored orders the page created or updated.
		if !after.Empty() {
			written, err := a.afterSyncPage(ctx, orgID, b, keys, after, pageExt)
			if err != nil {
				return SyncPageResult{}, err
			}
			counts.Add(written)
		}
		a.runHooks(ctx, orgID, res.CreatedID)
		a.tellEvents(ctx, orgID, res.CreatedID, res.UpdatedID)
		return SyncPageResult{SyncCounts: counts, Next: next}, nil

	case platforms.TaskGrabShipments:
		lister, ok := conn.(platforms.ShipmentLister)
		if !ok {
			return SyncPageResult{}, notSupported(in.TaskName, b.Type)
		}
		list, next, err := lister.ListShipments(ctx, bridge, in.Since, in.Cursor)
		if err != nil {
			return SyncPageResult{}, a.pageError(ctx, b, in, err)
		}
		heartbeat(ctx, in.Cursor)
		advance.Next = next
		for _, s := range list {
			if s.CreatedAt.After(advance.HighWater) {
				advance.HighWater = s.CreatedAt
			}
		}
		res, err := store.UpsertPlatformShipments(ctx, a.Store, orgID, b.ID, list, advance)
		if err != nil {
			return SyncPageResult{}, storeError(err, b)
		}
		rules.Notify(ctx, a.Events, orgID, rules.EventShipmentCreated, res.CreatedIDs)
		return SyncPageResult{Next: next, SyncCounts: SyncCounts{
			Fetched: len(list), Created: res.Created, Updated: res.Updated, Unchanged: res.Unchanged, Failed: res.Failed,
		}}, nil
	}
	return SyncPageResult{}, notSupported(in.TaskName, b.Type)
}

// pageError classifies a failed page fetch. A page cursor the platform
// refuses for good (expired, unknown) is dropped, so that the next sync
// starts again from the high-water mark instead of failing on it forever.
func (a *BridgeTaskActivities) pageError(ctx context.Context, b store.Bridge, in SyncPageInput, err error) error {
	if in.Cursor != "" && !platforms.IsRetryable(err) && !errors.Is(err, platforms.ErrUnauthorized) && !errors.Is(err, platforms.ErrNotAvailable) {
		if rerr := store.ResetSyncPaging(ctx, a.Store.Pool, b.OrganizationID, b.ID, in.TaskName); rerr != nil {
			return fmt.Errorf("reset sync paging: %w", rerr)
		}
	}
	return a.taskPlatformError(ctx, b, err)
}

// ---- warehouse-sync ----

// WarehouseSyncInput is the input of WarehouseSync.
type WarehouseSyncInput struct {
	OrganizationID string `json:"organizationId"`
	BridgeID       string `json:"bridgeId"`
}

// WarehouseSyncResult is the output of warehouse-sync.
type WarehouseSyncResult struct {
	Fetched     int      `json:"fetched"`
	Created     int      `json:"created"`
	Updated     int      `json:"updated"`
	Unchanged   int      `json:"unchanged"`
	Failed      int      `json:"failed"`
	LocationIDs []string `json:"locationIds"`
}

// WarehouseSync reads the platform's locations and upserts them into the
// organization's locations, keyed by (bridge, external id).
func (a *BridgeTaskActivities) WarehouseSync(ctx context.Context, in WarehouseSyncInput) (WarehouseSyncResult, error) {
	orgID, _, err := parseTaskIDs(in.OrganizationID, in.BridgeID)
	if err != nil {
		return WarehouseSyncResult{}, err
	}
	b, bridge, conn, err := a.openBridge(ctx, orgID, in.BridgeID)
	if err != nil {
		return WarehouseSyncResult{}, err
	}
	lister, ok := conn.(platforms.LocationLister)
	if !ok {
		return WarehouseSyncResult{}, notSupported(platforms.TaskWarehouseSync, b.Type)
	}
	list, err := lister.ListLocations(ctx, bridge)
	if err != nil {
		return WarehouseSyncResult{}, a.taskPlatformError(ctx, b, err)
	}
	ids, counts, err := store.UpsertPlatformLocations(ctx, a.Store, orgID, b.ID, list)
	if err != nil {
		return WarehouseSyncResult{}, storeError(err, b)
	}
	out := WarehouseSyncResult{Fetched: len(list), Created: counts.Created, Updated: counts.Updated,
		Unchanged: counts.Unchanged, Failed: counts.Failed, LocationIDs: make([]string, len(ids))}
	for i, id := range ids {
		out.LocationIDs[i] = id.String()
	}
	return out, nil
}

// ---- push-fulfillment ----

// PushFulfillmentsInput is the input of PushFulfillments.
type PushFulfillmentsInput struct {
	OrganizationID string `json:"organizationId"`
	BridgeID       string `json:"bridgeId"`
}

// PushFulfillmentsResult is the output of push-fulfillment: Pushed
// shipments created on the platform, Updated ones whose new tracking
// number moved the fulfillment an earlier push made, AlreadyThere ones the
// platform had, Refused ones it refused for good (left for a later run),
// with the first Problems.
type PushFulfillmentsResult struct {
	Pushed       int      `json:"pushed"`
	Updated      int      `json:"updated"`
	AlreadyThere int      `json:"alreadyThere"`
	Refused      int      `json:"refused"`
	Problems     []string `json:"problems"`
}

// NothingPushed reports a run whose every push the platform refused: it
// ends failed, not completed as if all went well.
func (r PushFulfillmentsResult) NothingPushed() bool {
	return r.Refused > 0 && r.Pushed == 0 && r.Updated == 0 && r.AlreadyThere == 0
}

// Failure is the message of a run that pushed nothing.
func (r PushFulfillmentsResult) Failure() string {
	msg := fmt.Sprintf("the platform refused all %d fulfillment pushes", r.Refused)
	if len(r.Problems) > 0 {
		msg += ": " + strings.Join(r.Problems, "; ")
	}
	return msg
}

// pushBatch is how many shipments PushFulfillments reads at a time.
const pushBatch = 100

// PushFulfillments sends the service's shipments with tracking numbers of
// the bridge's orders that were not pushed yet, records each push (so each
// goes once) and sets the orders' sent_to_fulfillment. The connector
// checks the platform before it creates, so a retried push never
// duplicates. Each connector names the shipment's carrier and service as
// its platform expects (platforms.CarrierName). A shipment the platform
// refuses for good is counted refused and skipped (it is tried again by
// the next run); a bridge config the connector cannot use (carrierNames)
// fails the run. A run that pushed nothing because every push was refused
// ends failed (the BridgeTask workflow). When the platform can change a
// fulfillment's tracking (platforms.FulfillmentTrackingUpdater), a
// shipment whose tracking number changed after its push (a label bought
// again) is sent again with the number and fulfillment id the push
// recorded: that fulfillment moves to the new number (Updated), no second
// one is created.
func (a *BridgeTaskActivities) PushFulfillments(ctx context.Context, in PushFulfillmentsInput) (PushFulfillmentsResult, error) {
	out := PushFulfillmentsResult{Problems: []string{}}
	orgID, _, err := parseTaskIDs(in.OrganizationID, in.BridgeID)
	if err != nil {
		return out, err
	}
	b, bridge, conn, err := a.openBridge(ctx, orgID, in.BridgeID)
	if err != nil {
		return out, err
	}
	pusher, ok := conn.(platforms.FulfillmentPusher)
	if !ok {
		return out, notSupported(platforms.TaskPushFulfillment, b.Type)
	}
	_, retrack := conn.(platforms.FulfillmentTrackingUpdater)
	skip := map[uuid.UUID]bool{}
	for {
		list, err := store.FulfillmentCandidates(ctx, a.Store.Pool, orgID, b.ID, pushBatch+len(skip), retrack)
		if err != nil {
			return out, fmt.Errorf("list shipments to push: %w", err)
		}
		progressed := false
		for _, c := range list {
			if skip[c.ShipmentID] {
				continue
			}
			progressed = true
			heartbeat(ctx, c.ShipmentID.String())
			f := platforms.Fulfillment{OrderExternalID: c.OrderExternalID, TrackingNumber: c.TrackingNumber, Carrier: c.Carrier, Service: c.Service}
			if c.ShipDate != nil {
				f.ShipDate = *c.ShipDate
			}
			if c.PushedTrackingNumber != nil {
				f.ReplacesTrackingNumber = *c.PushedTrackingNumber
			}
			if c.PushedExternalID != nil {
				f.FulfillmentExternalID = *c.PushedExternalID
			}
			res, err := pusher.PushFulfillment(ctx, bridge, f)
			if err != nil {
				if platforms.IsRetryable(err) || errors.Is(err, platforms.ErrUnauthorized) || isConfigError(err) {
					return out, a.taskPlatformError(ctx, b, err)
				}
				out.Refused++
				skip[c.ShipmentID] = true
				if len(out.Problems) < 10 {
					out.Problems = append(out.Problems, fmt.Sprintf("shipment %s (order %s): %s", c.ShipmentID, c.OrderExternalID, TenantMessage(err)))
				}
				continue
			}
			if err := store.RecordFulfillmentPush(ctx, a.Store, orgID, b.ID, c, res.ExternalID, res.Created); err != nil {
				return out, fmt.Errorf("record fulfillment push: %w", err)
			}
			switch {
			case res.Created:
				out.Pushed++
			case res.Updated:
				out.Updated++
			default:
				out.AlreadyThere++
			}
		}
		if !progressed || len(list) < pushBatch+len(skip) {
			return out, nil
		}
	}
}

// isConfigError: the bridge's config cannot work (every push would fail
// the same way).
func isConfigError(err error) bool {
	var pe *platforms.Error
	return errors.As(err, &pe) && pe.Code == platforms.CodeInvalidConfig
}

// ---- reconciliation ----

// TaskExecutionStartBound is how long an execution may stay queued or
// running before the reconciler asks Temporal about its run: longer than
// the API needs to start it (re-sent starts included).
const TaskExecutionStartBound = 5 * time.Minute

// taskExecutionKind: a task execution queued or running. Its run settles
// it before it closes and its id is the execution's own, so a missing run
// (the start never reached Temporal) or a closed one (terminated or reset
// in the Temporal UI, timed out) fails it with the reason; an open run is
// left alone however long it runs.
func (a *MaintenanceActivities) taskExecutionKind() WaitingKind {
	return WaitingKind{
		Name:  "task execution",
		Stale: store.StaleTaskExecutions,
		Table: "task_executions",
		Bound: TaskExecutionStartBound,
		// Mirrors workflows.BridgeTaskWorkflowID.
		WorkflowID: func(row store.WaitingRow) string { return "bridge-task/" + row.ID.String() },
		AnyRun:     true,
		Fail: func(ctx context.Context, row store.WaitingRow, reason string) (bool, error) {
			return store.FinishTaskExecution(ctx, a.Store.Pool, row.OrganizationID, row.ID, nil, "the task did not finish: "+reason)
		},
	}
}

// ---- helpers ----

// openBridge loads an active bridge of the organization with its connector.
func (a *BridgeTaskActivities) openBridge(ctx context.Context, orgID uuid.UUID, bridgeID string) (store.Bridge, platforms.Bridge, platforms.Connector, error) {
	id, err := uuid.Parse(bridgeID)
	if err != nil {
		return store.Bridge{}, platforms.Bridge{}, nil, temporal.NewNonRetryableApplicationError("bridgeId is not a UUID", ErrTypeInvalidInput, nil)
	}
	b, err := store.BridgeByID(ctx, a.Store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return b, platforms.Bridge{}, nil, temporal.NewNonRetryableApplicationError("the bridge was deleted", ErrTypeBridgeUnavailable, nil)
	}
	if err != nil {
		return b, platforms.Bridge{}, nil, fmt.Errorf("read bridge: %w", err)
	}
	if b.Status != store.BridgeActive {
		return b, platforms.Bridge{}, nil, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("bridge %q is %s; only an active bridge runs tasks", b.Name, b.Status), ErrTypeBridgeUnavailable, nil)
	}
	pb, err := store.PlatformBridge(a.Secrets, b)
	if err != nil {
		return b, pb, nil, temporal.NewNonRetryableApplicationError("bridge credentials cannot be opened", ErrTypeBridgeUnavailable, nil)
	}
	conn, err := a.Platforms.Get(b.Type)
	if err != nil {
		return b, pb, nil, temporal.NewNonRetryableApplicationError(fmt.Sprintf("bridge type %s has no connector", b.Type), ErrTypeTaskNotSupported, nil)
	}
	return b, pb, conn, nil
}

// taskPlatformError classifies a connector failure. Refused credentials
// move the bridge to error with the reason.
func (a *BridgeTaskActivities) taskPlatformError(ctx context.Context, b store.Bridge, err error) error {
	name := fmt.Sprintf("bridge %q", b.Name)
	msg := name + " failed: " + TenantMessage(err)
	switch {
	case errors.Is(err, platforms.ErrUnauthorized):
		msg = name + " refused its credentials: " + TenantMessage(err)
		if serr := store.SetBridgeError(ctx, a.Store.Pool, b.OrganizationID, b.ID, "the platform refused the bridge's credentials: "+TenantMessage(err)); serr != nil {
			return fmt.Errorf("record bridge error: %w", serr)
		}
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePlatformPermanent, err)
	case errors.Is(err, platforms.ErrNotAvailable):
		return temporal.NewNonRetryableApplicationError(name+" cannot run tasks: its platform connector is not available", ErrTypePlatformPermanent, err)
	}
	if wait, ok := platforms.RetryAfter(err); ok {
		return temporal.NewApplicationErrorWithOptions(name+" is rate limited by its platform", ErrTypePlatformUnavailable,
			temporal.ApplicationErrorOptions{NextRetryDelay: max(wait, time.Second), Cause: err})
	}
	if !platforms.IsRetryable(err) {
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePlatformPermanent, err)
	}
	return temporal.NewApplicationErrorWithCause(msg, ErrTypePlatformUnavailable, err)
}

func storeError(err error, b store.Bridge) error {
	if errors.Is(err, store.ErrNotFound) {
		return temporal.NewNonRetryableApplicationError(fmt.Sprintf("bridge %q was deleted during the task", b.Name), ErrTypeBridgeUnavailable, nil)
	}
	return fmt.Errorf("store: %w", err)
}

func notSupported(task, bridgeType string) error {
	return temporal.NewNonRetryableApplicationError(
		fmt.Sprintf("%s is not supported by this bridge type (%s)", task, bridgeType), ErrTypeTaskNotSupported, nil)
}

func (a *BridgeTaskActivities) runHooks(ctx context.Context, orgID uuid.UUID, ids []uuid.UUID) {
	hooks := a.OrderHooks
	if hooks == nil || len(ids) == 0 {
		return
	}
	if batch, ok := hooks.(rules.OrderBatchHooks); ok {
		// The page's orders in a few round trips, not a few per order.
		if err := batch.OrdersCreated(ctx, orgID, ids); err != nil {
			a.log().WarnContext(ctx, "order-created hooks failed", "organization_id", orgID, "orders", len(ids), "error", err)
		}
		return
	}
	for _, id := range ids {
		if err := hooks.OrderCreated(ctx, orgID, id); err != nil {
			a.log().WarnContext(ctx, "order-created hook failed", "organization_id", orgID, "order_id", id, "error", err)
		}
	}
}

// tellEvents tells the page's created and changed orders to the events'
// listener, one batch each (after the order hooks: a split's children
// exist then).
func (a *BridgeTaskActivities) tellEvents(ctx context.Context, orgID uuid.UUID, created, updated []uuid.UUID) {
	rules.Notify(ctx, a.Events, orgID, rules.EventOrderCreated, created)
	rules.Notify(ctx, a.Events, orgID, rules.EventOrderUpdated, updated)
}

func heartbeat(ctx context.Context, details ...any) {
	if activity.IsActivity(ctx) {
		activity.RecordHeartbeat(ctx, details...)
	}
}

func parseTaskIDs(orgID, id string) (uuid.UUID, uuid.UUID, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	other, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("id is not a UUID", ErrTypeInvalidInput, nil)
	}
	return org, other, nil
}

func (a *BridgeTaskActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}
