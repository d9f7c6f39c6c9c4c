package main

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// Ctrl-C (the signal context cancelled) is a clean stop: exit 0 even when
// a command answers with the cancellation; a cancellation without a signal,
// or any other failure, is exit 1.
func TestExitCodeOfAStop(t *testing.T) {
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	running := context.Background()
	for _, c := range []struct {
		ctx  context.Context
		err  error
		want int
	}{
		{running, nil, 0},
		{stopped, nil, 0},
		{stopped, context.Canceled, 0},
		{stopped, fmt.Errorf("serve: %w", context.Canceled), 0},
		{running, context.Canceled, 1},
		{stopped, errors.New("listen: address in use"), 1},
		{running, errors.New("boom"), 1},
	} {
		if got := exitCode(c.ctx, c.err); got != c.want {
			t.Errorf("exitCode(ctx err %v, %v) = %d, want %d", c.ctx.Err(), c.err, got, c.want)
		}
	}
}
