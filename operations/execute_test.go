package operations_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/operations"
)

// holdTransforms holds the before_operation of the item hold until
// release is closed.
type holdTransforms struct {
	hold    uuid.UUID
	release chan struct{}
}

func (h *holdTransforms) TransformOrder(_ context.Context, _, _, key uuid.UUID, trigger string) error {
	if key == h.hold && trigger == operations.TriggerBeforeOperation {
		select {
		case <-h.release:
		case <-time.After(time.Minute):
		}
	}
	return nil
}

// A batch's result is settled 500 ms after it arrived even when no other
// result follows: the item that ended first shows settled while the other
// still runs, and the batch's end settles the last one.
func TestProcessBatchSettlesALoneResultOnTime(t *testing.T) {
	tr := &holdTransforms{release: make(chan struct{})}
	release := sync.OnceFunc(func() { close(tr.release) })
	t.Cleanup(release)
	svc, actor, orders := benchOrg(t, 2, operations.Deps{Transforms: tr})
	ctx := t.Context()
	op, err := svc.Create(ctx, actor, operations.CreateInput{Name: "Slow"})
	require.NoError(t, err)
	items, err := svc.AddItems(ctx, actor, op.ID, orders)
	require.NoError(t, err)
	tr.hold = items[1].ID
	_, err = svc.BeginExecution(ctx, actor, op.ID, uuid.New())
	require.NoError(t, err)

	type outcome struct {
		res operations.BatchResult
		err error
	}
	done := make(chan outcome, 1)
	began := time.Now()
	go func() {
		res, err := svc.ProcessBatch(ctx, operations.BatchInput{Actor: actor, OperationID: op.ID, Owner: "operation/" + op.ID.String(),
			Claim: "batch-1", Limit: 10, Parallelism: 2})
		done <- outcome{res, err}
	}()
	status := func(id uuid.UUID) string {
		rows, _, err := svc.ListItems(ctx, actor, op.ID, operations.ListItemsInput{Limit: 10})
		require.NoError(t, err)
		for _, r := range rows {
			if r.ID == id {
				return r.Status
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return status(items[0].ID) == "skipped" }, 5*time.Second, 20*time.Millisecond,
		"the first item's result is written while the batch's other item still runs")
	require.GreaterOrEqual(t, time.Since(began), 400*time.Millisecond, "written by the 500 ms deadline, not at once")
	require.Equal(t, "processing", status(items[1].ID))

	release()
	out := <-done
	require.NoError(t, out.err)
	require.Equal(t, 2, out.res.Skipped)
	require.Equal(t, "skipped", status(items[1].ID))
	require.Equal(t, "completed", out.res.Status)
	require.EqualValues(t, 2, out.res.Processed)
}
