package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// The transformation trigger points of grab-orders: before_sync reshapes
// each platform order (platforms.Order as JSON) before the page is stored;
// after_sync sees each order the page created or updated as the API shows
// it (GET /orders/{id}) and may change AfterSyncFields, written back in
// one statement. A failed transformation leaves its order as it was and
// is named on the task execution's output (SyncCounts.TransformErrors).

// MaxTransformErrors bounds the transformation failures a sync names.
const MaxTransformErrors = 20

// AfterSyncFields are the order fields an after_sync transformation may
// change (those PATCH /orders edits, line items aside), by their API names.
var AfterSyncFields = []string{"status", "tags", "note", "metadata", "shippingAddress"}

// Bounds of the written-back fields (as PATCH /orders).
const (
	afterSyncMaxTags    = 100
	afterSyncMaxTagLen  = 100
	afterSyncMaxNoteLen = 5000
)

// TransformError is one failed transformation run on a sync's output.
type TransformError struct {
	TransformationID string `json:"transformationId"`
	Name             string `json:"name"`
	TriggerPoint     string `json:"triggerPoint"`
	ExternalID       string `json:"externalId"`
	Error            string `json:"error"`
}

// transformFailed records that r (a transformation at trigger) failed on
// the order ext, with msg (r.Error when empty).
func (c *SyncCounts) transformFailed(trigger, ext string, r transforms.Result, msg string) {
	if msg == "" {
		msg = r.Error
	}
	c.TransformFailed++
	c.addFailures(TransformFailures{TransformationID: r.TransformationID.String(), Name: r.Name, Failed: 1})
	if len(c.TransformErrors) < MaxTransformErrors {
		c.TransformErrors = append(c.TransformErrors, TransformError{
			TransformationID: r.TransformationID.String(), Name: r.Name, TriggerPoint: trigger, ExternalID: ext, Error: msg,
		})
	}
}

// batchCounts are a stored page's counts with before_sync's.
func batchCounts(r store.OrderBatchResult, tf SyncCounts) SyncCounts {
	c := SyncCounts{Fetched: r.Fetched, Created: r.Created, Updated: r.Updated, Unchanged: r.Unchanged, Failed: r.Failed}
	c.Add(tf)
	return c
}

// syncKeys names the order activities of one sync page (deterministic, so
// a replayed page records each once).
type syncKeys struct{ workflowID, execID, cursor string }

func (a *BridgeTaskActivities) syncKeys(ctx context.Context, execID uuid.UUID, cursor string) syncKeys {
	wfID := execID.String()
	if activity.IsActivity(ctx) {
		wfID = activity.GetInfo(ctx).WorkflowExecution.ID
	}
	return syncKeys{workflowID: wfID, execID: execID.String(), cursor: cursor}
}

func (k syncKeys) activityID(ext, typ string) uuid.UUID {
	return OrderActivityID(k.workflowID, k.execID+"/"+k.cursor+"/"+ext, typ)
}

// syncActivityID is the id of the "sync" activity of order ext.
func (k syncKeys) syncActivityID(ext string) uuid.UUID {
	return k.activityID(ext, store.OrderSyncActivityType)
}

// metadata goes on the page's order activities.
func (k syncKeys) metadata(bridgeID uuid.UUID, task string) map[string]any {
	return map[string]any{"bridgeId": bridgeID.String(), "taskExecutionId": k.execID, "workflowId": k.workflowID, "task": task}
}

// loadChain loads a trigger point's transformations for the bridge
// through l (nil: transforms.Noop); a failure to read them is retried
// with the activity.
func loadChain(ctx context.Context, l transforms.Loader, orgID, bridgeID uuid.UUID, trigger string) (*transforms.Chain, error) {
	if l == nil {
		l = transforms.Noop{}
	}
	c, err := l.Load(ctx, orgID, &bridgeID, trigger)
	if err != nil {
		return nil, fmt.Errorf("transformations: %w", err)
	}
	return c, nil
}

// transformBatch is how many records go to a sandbox process in one
// request: the per-run cost of the process boundary is paid once per
// batch, and the activity heartbeats between batches (each record may
// take up to its deadline).
const transformBatch = 50

// applyBatches runs chain over ins in batches of transformBatch
// (transforms.Chain.ApplyBatch), heartbeating with the external id of
// each batch's first record.
func applyBatches(ctx context.Context, chain *transforms.Chain, ins [][]byte, ext func(i int) string) ([][]byte, [][]transforms.Result, error) {
	outs := make([][]byte, 0, len(ins))
	results := make([][]transforms.Result, 0, len(ins))
	for from := 0; from < len(ins); from += transformBatch {
		to := min(from+transformBatch, len(ins))
		heartbeat(ctx, chain.Trigger, ext(from))
		o, r, err := chain.ApplyBatch(ctx, ins[from:to])
		if err != nil {
			return nil, nil, err
		}
		outs = append(outs, o...)
		results = append(results, r...)
	}
	return outs, results, nil
}

// beforeSync passes each order through the before_sync chain. An order
// whose transformation fails, or whose result changes its external id or
// could not be stored, stays as it came (recorded in the counts).
func beforeSync(ctx context.Context, chain *transforms.Chain, orders []platforms.Order) ([]platforms.Order, SyncCounts, error) {
	var c SyncCounts
	if chain.Empty() {
		return orders, c, nil
	}
	ins := make([][]byte, len(orders))
	for i, o := range orders {
		raw, err := json.Marshal(o)
		if err != nil {
			return nil, SyncCounts{}, fmt.Errorf("encode before_sync data: %w", err)
		}
		ins[i] = raw
	}
	outs, allResults, err := applyBatches(ctx, chain, ins, func(i int) string { return orders[i].ExternalID })
	if err != nil {
		return nil, SyncCounts{}, fmt.Errorf("before_sync transformations: %w", err)
	}
	out := make([]platforms.Order, len(orders))
	for i, o := range orders {
		out[i] = o
		results := allResults[i]
		if f := transforms.Failed(results); f != nil {
			c.transformFailed(transforms.BeforeSync, o.ExternalID, *f, "")
			continue
		}
		var t platforms.Order
		problem := ""
		if err := json.Unmarshal(outs[i], &t); err != nil {
			problem = "the result does not fit the data's shape: " + err.Error()
		} else {
			switch {
			case t.ExternalID != o.ExternalID:
				problem = "a before_sync transformation may not change externalId"
			case store.OrderBatchProblem(o) == "" && store.OrderBatchProblem(t) != "":
				problem = "the result cannot be stored: " + store.OrderBatchProblem(t)
			}
		}
		if problem != "" {
			c.transformFailed(transforms.BeforeSync, o.ExternalID, results[len(results)-1], problem)
			continue
		}
		out[i] = t
	}
	return out, c, nil
}

// afterSyncPage runs the after_sync chain (loaded when nil) over the
// orders a grab-orders page (its external ids) created or updated.
func (a *BridgeTaskActivities) afterSyncPage(ctx context.Context, orgID uuid.UUID, b store.Bridge, keys syncKeys, chain *transforms.Chain, externalIDs []string) (SyncCounts, error) {
	if chain == nil {
		var err error
		if chain, err = loadChain(ctx, a.Transforms, orgID, b.ID, transforms.AfterSync); err != nil {
			return SyncCounts{}, err
		}
	}
	return afterSyncOrders(ctx, a.Store, orgID, chain, keys.activityID, externalIDs, BridgeTaskActorName, keys.metadata(b.ID, platforms.TaskGrabOrders))
}

// afterSyncOrders runs an after_sync chain over the orders that were just
// created or updated from the platform orders externalIDs: those carrying
// the "sync" activity activityID(ext, store.OrderSyncActivityType). The
// changed ones are written back in one statement, each with the activity
// activityID(ext, store.OrderTransformActivityType) (actorName, meta); an
// order that already has it (a replayed attempt) is counted, not
// transformed again. Failures are in the counts; err only for the
// database or the context (retry).
func afterSyncOrders(ctx context.Context, st *store.Store, orgID uuid.UUID, chain *transforms.Chain,
	activityID func(ext, typ string) uuid.UUID, externalIDs []string, actorName string, meta map[string]any) (SyncCounts, error) {
	var c SyncCounts
	if chain.Empty() || len(externalIDs) == 0 {
		return c, nil
	}
	syncIDs := make([]uuid.UUID, len(externalIDs))
	markerIDs := make([]uuid.UUID, len(externalIDs))
	for i, ext := range externalIDs {
		syncIDs[i] = activityID(ext, store.OrderSyncActivityType)
		markerIDs[i] = activityID(ext, store.OrderTransformActivityType)
	}
	list, err := store.SyncedOrders(ctx, st.Pool, orgID, syncIDs, markerIDs)
	if err != nil {
		return c, fmt.Errorf("read synced orders: %w", err)
	}
	var rewrites []store.OrderRewrite
	// The orders to transform go through each transformation in one
	// request to a sandbox process (transforms.Chain.ApplyBatch).
	var todo []int
	var ins [][]byte
	for i, so := range list {
		if so.Rewritten {
			c.AfterSyncWritten++
			continue
		}
		in, err := json.Marshal(rules.OrderDetailJSONOf(so.Order))
		if err != nil {
			return c, fmt.Errorf("encode order: %w", err)
		}
		todo = append(todo, i)
		ins = append(ins, in)
	}
	outs, allResults, err := applyBatches(ctx, chain, ins, func(j int) string { return list[todo[j]].ExternalID })
	if err != nil {
		return c, fmt.Errorf("after_sync transformations: %w", err)
	}
	for j, i := range todo {
		so, in, out, results := list[i], ins[j], outs[j], allResults[j]
		if f := transforms.Failed(results); f != nil {
			c.transformFailed(transforms.AfterSync, so.ExternalID, *f, "")
			continue
		}
		rw, problem := afterSyncRewrite(so.Order, in, out)
		if problem != "" {
			c.transformFailed(transforms.AfterSync, so.ExternalID, results[len(results)-1], problem)
			continue
		}
		if rw == nil {
			continue
		}
		names := make([]string, len(results))
		for i, r := range results {
			names[i] = r.Name
		}
		rw.ActivityID = activityID(so.ExternalID, store.OrderTransformActivityType)
		rw.Description = fmt.Sprintf("Updated %s by after_sync transformation %s", strings.Join(rw.Fields, ", "), strings.Join(names, ", "))
		rewrites = append(rewrites, *rw)
	}
	written, err := store.RewriteOrders(ctx, st.Pool, orgID, rewrites, actorName, meta)
	if err != nil {
		return c, fmt.Errorf("write back after_sync results: %w", err)
	}
	c.AfterSyncWritten += len(written)
	return c, nil
}

// afterSyncRewrite compares an after_sync result with its input (both
// rules.OrderDetailJSON, as GET /orders/{id} shows the order): nil when no AfterSyncFields changed, else the
// order's new values. A field left out of the result stays as it is; a
// change to any other field, or a value PATCH /orders would refuse, is a
// problem (the order is then left as it is).
func afterSyncRewrite(o store.Order, in, out []byte) (*store.OrderRewrite, string) {
	var before, after map[string]json.RawMessage
	if err := json.Unmarshal(in, &before); err != nil {
		return nil, "the input is not an object"
	}
	if err := json.Unmarshal(out, &after); err != nil {
		return nil, "the result is not an object"
	}
	changed := func(k string) bool {
		v, ok := after[k]
		return ok && !sameJSON(before[k], v)
	}
	var refused []string
	for k := range after {
		if !slices.Contains(AfterSyncFields, k) && changed(k) {
			refused = append(refused, k)
		}
	}
	if len(refused) > 0 {
		slices.Sort(refused)
		return nil, fmt.Sprintf("after_sync may change only %s; the result changes %s",
			strings.Join(AfterSyncFields, ", "), strings.Join(refused, ", "))
	}
	rw := &store.OrderRewrite{OrderID: o.ID, ReadAt: o.UpdatedAt, Status: o.Status, ShippingAddress: o.ShippingAddress,
		Note: o.Note, Metadata: o.Metadata, Tags: o.Tags}
	for _, k := range AfterSyncFields {
		if !changed(k) {
			continue
		}
		v := after[k]
		switch k {
		case "status":
			var st string
			if json.Unmarshal(v, &st) != nil || !slices.Contains(store.OrderStatuses, st) {
				return nil, "status must be one of " + strings.Join(store.OrderStatuses, ", ")
			}
			rw.Status = st
		case "tags":
			var tags []string
			if json.Unmarshal(v, &tags) != nil || tags == nil {
				return nil, "tags must be an array of strings"
			}
			if len(tags) > afterSyncMaxTags {
				return nil, fmt.Sprintf("tags must have at most %d tags", afterSyncMaxTags)
			}
			for i, t := range tags {
				tags[i] = strings.TrimSpace(t)
				if tags[i] == "" || utf8.RuneCountInString(tags[i]) > afterSyncMaxTagLen {
					return nil, fmt.Sprintf("tags[%d] must be 1-%d characters", i, afterSyncMaxTagLen)
				}
			}
			rw.Tags = tags
		case "note":
			var note *string
			if json.Unmarshal(v, &note) != nil {
				return nil, "note must be a string or null"
			}
			if note != nil && utf8.RuneCountInString(*note) > afterSyncMaxNoteLen {
				return nil, fmt.Sprintf("note must be at most %d characters", afterSyncMaxNoteLen)
			}
			if note != nil && strings.TrimSpace(*note) == "" {
				note = nil
			}
			rw.Note = note
		case "metadata":
			if !isJSONObject(v) {
				return nil, "metadata must be an object"
			}
			rw.Metadata = v
		case "shippingAddress":
			if string(v) != "null" && !isJSONObject(v) {
				return nil, "shippingAddress must be an object or null"
			}
			rw.ShippingAddress = v
		}
		rw.Fields = append(rw.Fields, k)
	}
	if len(rw.Fields) == 0 {
		return nil, ""
	}
	return rw, ""
}

// sameJSON compares two JSON texts by value (nil is JSON null).
func sameJSON(a, b json.RawMessage) bool {
	var va, vb any
	if len(a) > 0 && json.Unmarshal(a, &va) != nil {
		return false
	}
	if len(b) > 0 && json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func isJSONObject(v json.RawMessage) bool {
	var m map[string]any
	return json.Unmarshal(v, &m) == nil && m != nil
}
