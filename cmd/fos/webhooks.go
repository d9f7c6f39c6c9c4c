package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/worker"
)

// apiPlatformRegistry holds the connectors that speak the platforms' own
// APIs (storefront_a, shipping_hub_a, storefront_c) at the CONTRACT 8b
// URLs (the built-in sandbox's prefixes under FOS_SANDBOX=1): webhook
// registration (API) and inbound webhook processing (worker) use them.
func apiPlatformRegistry(cfg config.Config) *platforms.Registry {
	reg := platforms.NewRegistry()
	sandboxURL := ""
	if cfg.Sandbox {
		sandboxURL = cfg.SandboxURL
	}
	urls := platforms.APIURLsFromEnv(os.Getenv, cfg.Sandbox, sandboxURL)
	for typ, c := range platforms.APIConnectors(urls, &http.Client{Timeout: 30 * time.Second}) {
		reg.Register(typ, c)
	}
	return reg
}

// startWebhookRelay runs the relay that starts InboundWebhook workflows for
// stored inbound events, until ctx ends.
func startWebhookRelay(ctx context.Context, svc *services) {
	relay := &worker.WebhookRelay{Store: svc.store, Temporal: svc.temporal, TaskQueue: svc.cfg.TaskQueue,
		Logger: svc.log.With("component", "webhook-relay")}
	go func() { _ = relay.Run(ctx) }()
}
