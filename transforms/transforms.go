// Package transforms applies an organization's transformations at a
// trigger point: the active ones of the bridge and the global ones, in
// priority order (higher first), each fed the previous one's output. It
// runs tenant JavaScript (package sandbox) and reads the database, so call
// it from an activity, never from workflow code.
//
// How the sync and webhook activities use it (one Service per worker,
// shared; it is safe for concurrent use):
//
//	tf := transforms.New(pool, nil) // nil: sandbox.Limits defaults (1 s)
//	// before_sync: each incoming order, as JSON, before it is stored
//	out, results, err := tf.Apply(ctx, orgID, &bridgeID, transforms.BeforeSync, orderJSON)
//	// err: the transformations could not be loaded (retry the activity);
//	// out is orderJSON itself when one failed: store it as it came and
//	// record the failure:
//	if f := transforms.Failed(results); f != nil { /* execution output/error: f.Name, f.Error */ }
//	// after_sync: the stored order, after the import; write back out if it differs.
//
// transforms.ApplyValue does the same for a Go value (encode, apply,
// decode into the caller's type). transforms.Noop is the Transformer for
// code that has none.
package transforms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/store"
)

// Trigger points (store.TriggerPoints).
const (
	BeforeSync      = store.TriggerBeforeSync
	AfterSync       = store.TriggerAfterSync
	BeforeOperation = store.TriggerBeforeOperation
	AfterOperation  = store.TriggerAfterOperation
)

// Result is what one transformation did, for the caller to record (on the
// task execution's output, an order activity, ...).
type Result struct {
	TransformationID uuid.UUID `json:"transformationId"`
	Name             string    `json:"name"`
	Success          bool      `json:"success"`
	// Error says why it failed (empty on success).
	Error      string  `json:"error,omitempty"`
	DurationMS float64 `json:"durationMs"`
}

// Transformer is what callers depend on (Service, or Noop in tests).
type Transformer interface {
	// Apply runs the trigger point's transformations over data (a JSON
	// object) and returns the result and what each transformation did.
	// When one fails, the chain stops there and the data comes back
	// untouched (the input as given, no partial result) with the failure
	// as the last Result: the caller records it and carries on with the
	// original data. err is only for what prevented running at all (the
	// database, the context); data is then returned untouched as well.
	Apply(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string, data []byte) (out []byte, results []Result, err error)
}

// Service is the Transformer over the database and a sandbox.
type Service struct {
	DB      store.DBTX
	Sandbox *sandbox.Sandbox
}

// New returns a Service; sb nil means a sandbox with the default limits.
func New(db store.DBTX, sb *sandbox.Sandbox) *Service {
	if sb == nil {
		sb = sandbox.New(sandbox.Limits{})
	}
	return &Service{DB: db, Sandbox: sb}
}

var _ Transformer = (*Service)(nil)

// Apply implements Transformer.
func (s *Service) Apply(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string, data []byte) ([]byte, []Result, error) {
	list, err := store.ActiveTransformations(ctx, s.DB, orgID, bridgeID, trigger)
	if err != nil {
		return data, nil, fmt.Errorf("load %s transformations: %w", trigger, err)
	}
	return s.run(ctx, orgID, list, data)
}

// run feeds data through list in order, within the organization's share
// of the sandbox processes.
func (s *Service) run(ctx context.Context, orgID uuid.UUID, list []store.Transformation, data []byte) ([]byte, []Result, error) {
	if len(list) == 0 {
		return data, nil, nil
	}
	results := make([]Result, 0, len(list))
	cur := data
	for _, t := range list {
		start := time.Now()
		out, err := s.Sandbox.RunFor(ctx, orgID.String(), t.Code, cur)
		res := Result{TransformationID: t.ID, Name: t.Name, Success: err == nil, DurationMS: Millis(time.Since(start))}
		if err != nil {
			if sandbox.IsKind(err, sandbox.KindCanceled) || ctx.Err() != nil {
				return data, results, errors.Join(ctx.Err(), err)
			}
			res.Error = err.Error()
			return data, append(results, res), nil
		}
		results = append(results, res)
		cur = out
	}
	return cur, results, nil
}

// ApplyValue is Apply for a Go value: in is encoded as JSON, and the
// result is decoded into out (a pointer) — in's value again when a
// transformation failed.
func ApplyValue(ctx context.Context, t Transformer, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string, in, out any) ([]Result, error) {
	return applyValue(trigger, in, out, func(raw []byte) ([]byte, []Result, error) {
		return t.Apply(ctx, orgID, bridgeID, trigger, raw)
	})
}

// applyValue encodes in, applies apply and decodes the result into out.
func applyValue(trigger string, in, out any, apply func([]byte) ([]byte, []Result, error)) ([]Result, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encode %s data: %w", trigger, err)
	}
	res, results, err := apply(raw)
	if err != nil {
		return results, err
	}
	if err := json.Unmarshal(res, out); err != nil {
		// The script produced JSON the caller's type cannot hold: keep the
		// original and report it as that transformation's failure.
		if len(results) > 0 {
			last := &results[len(results)-1]
			last.Success, last.Error = false, "the result does not fit the data's shape: "+err.Error()
		}
		return results, json.Unmarshal(raw, out)
	}
	return results, nil
}

// Failed returns the failed result, if any (at most one: the chain stops).
func Failed(results []Result) *Result {
	for i := range results {
		if !results[i].Success {
			return &results[i]
		}
	}
	return nil
}

// Millis is a duration in milliseconds with microsecond precision.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Noop is the Transformer that changes nothing.
type Noop struct{}

// Apply returns data as it is.
func (Noop) Apply(_ context.Context, _ uuid.UUID, _ *uuid.UUID, _ string, data []byte) ([]byte, []Result, error) {
	return data, nil, nil
}
