package rules

import (
	"context"
	"testing"

	"github.com/google/uuid"
)

func TestNoopOrderHooks(t *testing.T) {
	var h OrderHooks = Noop{}
	if err := h.OrderCreated(context.Background(), uuid.New(), uuid.New()); err != nil {
		t.Fatalf("Noop.OrderCreated: %v", err)
	}
}
