package transforms

import (
	"context"
	"fmt"

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
	return &Chain{Trigger: trigger, sb: s.Sandbox, list: list}, nil
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
	return (&Service{Sandbox: c.sb}).run(ctx, c.list, data)
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
