package main

import (
	"context"

	"github.com/fos-dev/fos/worker"
)

// startWebhookRelay runs the relay that starts InboundWebhook workflows for
// stored inbound events on the inbound task queue, until ctx ends.
func startWebhookRelay(ctx context.Context, svc *services) {
	relay := &worker.WebhookRelay{Store: svc.store, Temporal: svc.temporal, TaskQueue: svc.cfg.Temporal.InboundTaskQueue,
		Logger: svc.log.With("component", "webhook-relay")}
	go func() { _ = relay.Run(ctx) }()
}
