package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/internal/oncemap"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/transforms"
)

// OperationTransforms implements operations.Transforms: the
// organization's transformations of a trigger point (before_operation,
// after_operation) run on an operation item's order, as GET /orders/{id}
// shows it, and what they change of the fields after_sync may change is
// written back (once per item and trigger: a batch run again writes
// nothing twice).
type OperationTransforms struct {
	Store      *store.Store
	Transforms *transforms.Service
}

var _ operations.BatchTransforms = OperationTransforms{}

// TransformOrder runs trigger's chain on the order; a failing
// transformation, or a result that changes what it may not, is Invalid
// naming it.
func (t OperationTransforms) TransformOrder(ctx context.Context, orgID, orderID, key uuid.UUID, trigger string) error {
	o, err := store.OrderByID(ctx, t.Store.Pool, orgID, orderID)
	if err != nil {
		return err
	}
	chain, err := t.Transforms.Load(ctx, orgID, o.BridgeID, trigger)
	if err != nil || chain.Empty() {
		return err
	}
	return t.apply(ctx, o, chain, key, trigger)
}

// Batch implements operations.BatchTransforms: the Transforms of one
// batch, which reads each trigger point's transformations once (an
// organization without any reads no order either). A transformation
// changed while the batch runs applies from the next batch.
func (t OperationTransforms) Batch() operations.Transforms {
	return &batchTransforms{t: t}
}

type batchTransforms struct {
	t OperationTransforms
	// sets are each organization's and trigger's transformations (a
	// failed read is not kept: the next item reads again).
	sets oncemap.Map[string, *transforms.ChainSet]
}

func (b *batchTransforms) TransformOrder(ctx context.Context, orgID, orderID, key uuid.UUID, trigger string) error {
	set, err := b.sets.Get(orgID.String()+"/"+trigger, func() (*transforms.ChainSet, error) {
		return b.t.Transforms.LoadAll(ctx, orgID, trigger)
	})
	if err != nil {
		return err
	}
	if set.Empty() {
		return nil
	}
	o, err := store.OrderByID(ctx, b.t.Store.Pool, orgID, orderID)
	if err != nil {
		return err
	}
	chain := set.For(o.BridgeID)
	if chain.Empty() {
		return nil
	}
	return b.t.apply(ctx, o, chain, key, trigger)
}

// apply runs chain on the order and writes back what it changed.
func (t OperationTransforms) apply(ctx context.Context, o store.Order, chain *transforms.Chain, key uuid.UUID, trigger string) error {
	orgID := o.OrganizationID
	in, err := json.Marshal(rules.OrderDetailJSONOf(o))
	if err != nil {
		return err
	}
	out, results, err := chain.Apply(ctx, in)
	if err != nil {
		return err
	}
	if f := transforms.Failed(results); f != nil {
		return domain.InvalidField("transformation", fmt.Sprintf("%s failed: %s", f.Name, f.Error))
	}
	rw, problem := afterSyncRewrite(o, in, out)
	if problem != "" {
		return domain.InvalidField("transformation", strings.Replace(problem, "after_sync", trigger, 1))
	}
	if rw == nil {
		return nil
	}
	names := make([]string, len(results))
	for i, r := range results {
		names[i] = r.Name
	}
	rw.ActivityID = uuid.NewSHA1(key, []byte(trigger))
	rw.Description = fmt.Sprintf("Updated %s by %s transformation %s", strings.Join(rw.Fields, ", "), trigger, strings.Join(names, ", "))
	_, err = store.RewriteOrders(ctx, t.Store.Pool, orgID, []store.OrderRewrite{*rw}, "operation", map[string]any{"trigger": trigger})
	return err
}
