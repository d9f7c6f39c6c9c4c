package transforms

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/store"
)

// Loader loads a trigger point's transformations once, for a caller that
// applies them to many records (a sync page): Service and Noop implement it.
type Loader interface {
	Load(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string) (*Chain, error)
}

// Chain is the active transformations of one trigger point for one bridge
// (its own and the global ones, in the order they run), loaded once.
// Apply runs them as Service.Apply does. The zero Chain and a nil *Chain
// change nothing. Safe for concurrent use.
type Chain struct {
	Trigger string
	sb      *sandbox.Sandbox
	org     uuid.UUID
	list    []store.Transformation
}

var (
	_ Loader = (*Service)(nil)
	_ Loader = Noop{}
)

// Load implements Loader: one query; err when the transformations could
// not be read (retry).
func (s *Service) Load(ctx context.Context, orgID uuid.UUID, bridgeID *uuid.UUID, trigger string) (*Chain, error) {
	list, err := store.ActiveTransformations(ctx, s.DB, orgID, bridgeID, trigger)
	if err != nil {
		return &Chain{Trigger: trigger}, fmt.Errorf("load %s transformations: %w", trigger, err)
	}
	return &Chain{Trigger: trigger, sb: s.Sandbox, org: orgID, list: list}, nil
}

// ChainSet is a trigger point's active transformations of an organization,
// every bridge's, loaded once (one query) for a caller that applies them
// to records of many bridges (a batch of an operation): For gives the
// chain of one bridge. Safe for concurrent use.
type ChainSet struct {
	Trigger string
	sb      *sandbox.Sandbox
	org     uuid.UUID
	list    []store.Transformation
}

// LoadAll loads the ChainSet of a trigger point; err when the
// transformations could not be read (retry).
func (s *Service) LoadAll(ctx context.Context, orgID uuid.UUID, trigger string) (*ChainSet, error) {
	list, err := store.ActiveTransformationsOfTrigger(ctx, s.DB, orgID, trigger)
	if err != nil {
		return &ChainSet{Trigger: trigger}, fmt.Errorf("load %s transformations: %w", trigger, err)
	}
	return &ChainSet{Trigger: trigger, sb: s.Sandbox, org: orgID, list: list}, nil
}

// Empty reports whether no bridge has a transformation.
func (c *ChainSet) Empty() bool { return c == nil || len(c.list) == 0 }

// For is the chain of a bridge (nil: none): the global transformations and
// the bridge's own, in the order they run, as Load gives it.
func (c *ChainSet) For(bridgeID *uuid.UUID) *Chain {
	if c == nil {
		return &Chain{}
	}
	var list []store.Transformation
	for _, t := range c.list {
		if t.BridgeID == nil || bridgeID != nil && *t.BridgeID == *bridgeID {
			list = append(list, t)
		}
	}
	return &Chain{Trigger: c.Trigger, sb: c.sb, org: c.org, list: list}
}

// Load returns an empty chain.
func (Noop) Load(_ context.Context, _ uuid.UUID, _ *uuid.UUID, trigger string) (*Chain, error) {
	return &Chain{Trigger: trigger}, nil
}

// Empty reports whether the chain has no transformation (Apply is then
// the identity, and callers may skip encoding their data).
func (c *Chain) Empty() bool { return c == nil || len(c.list) == 0 }

// Len is the number of transformations in the chain.
func (c *Chain) Len() int {
	if c == nil {
		return 0
	}
	return len(c.list)
}

// Apply runs the chain over data (a JSON object): see Transformer.Apply.
func (c *Chain) Apply(ctx context.Context, data []byte) ([]byte, []Result, error) {
	if c.Empty() {
		return data, nil, nil
	}
	return (&Service{Sandbox: c.sb}).run(ctx, c.org, c.list, data)
}

// ApplyBatch runs the chain over many records (a sync page's orders):
// each transformation gets all the records still going in one request to
// a sandbox process (sandbox.RunBatch), so the per-run cost of the
// process boundary is paid once per page. outs[i] and results[i] are as
// Apply's for datas[i]: a record whose transformation failed comes back
// untouched with the failure as its last Result; the others go on. err
// only when the context ended (outs are then the inputs).
func (c *Chain) ApplyBatch(ctx context.Context, datas [][]byte) (outs [][]byte, results [][]Result, err error) {
	outs = slices.Clone(datas)
	results = make([][]Result, len(datas))
	if c.Empty() || len(datas) == 0 {
		return outs, results, nil
	}
	live := make([]int, len(datas))
	for i := range live {
		live[i] = i
	}
	ins := make([][]byte, 0, len(datas))
	for _, t := range c.list {
		if len(live) == 0 {
			break
		}
		ins = ins[:0]
		for _, i := range live {
			ins = append(ins, outs[i])
		}
		start := time.Now()
		res := c.sb.RunBatch(ctx, c.org.String(), t.Code, ins)
		each := Millis(time.Since(start) / time.Duration(len(live)))
		next := live[:0]
		for j, i := range live {
			r := Result{TransformationID: t.ID, Name: t.Name, Success: res[j].Err == nil, DurationMS: each}
			if res[j].Err != nil {
				if sandbox.IsKind(res[j].Err, sandbox.KindCanceled) || ctx.Err() != nil {
					return slices.Clone(datas), results, errors.Join(ctx.Err(), res[j].Err)
				}
				r.Error = res[j].Err.Error()
				results[i] = append(results[i], r)
				outs[i] = datas[i]
				continue
			}
			results[i] = append(results[i], r)
			outs[i] = res[j].Out
			next = append(next, i)
		}
		live = next
	}
	return outs, results, nil
}

// ApplyValue is ApplyValue over the chain: in encoded, the result decoded
// into out (in's value again when a transformation failed, or when the
// result does not fit out's type, which is then that transformation's
// failure).
func (c *Chain) ApplyValue(ctx context.Context, in, out any) ([]Result, error) {
	trigger := ""
	if c != nil {
		trigger = c.Trigger
	}
	return applyValue(trigger, in, out, func(raw []byte) ([]byte, []Result, error) { return c.Apply(ctx, raw) })
}
