package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/netguard"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/worker"
)

func runWorker(ctx context.Context) error {
	cfg, err := config.Load(config.ModeWorker, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	svc, err := openServices(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.close()
	if err := ensureSchedules(ctx, svc); err != nil {
		return err
	}
	watchBacklogs(svc)
	log.Info("worker starting", "task_queue", cfg.TaskQueue, "bulk_task_queue", cfg.Temporal.BulkTaskQueue, "temporal", cfg.TemporalAddress)
	startWebhookRelay(ctx, svc)
	return newWorkers(svc).run(ctx)
}

// platformRegistry builds the platform connectors, one per bridge type,
// each speaking its platform's own API: at the real hosts, or at the
// built-in sandbox's stores under FOS_SANDBOX=1, each replaceable by its
// CONTRACT 8b variable (FOS_STOREFRONT_A_URL, ...). storefront_b's
// tenant-supplied storeUrl is dialed through the SSRF guard (netguard)
// unless FOS_ALLOW_PRIVATE_URLS; under the sandbox it only names the store
// below the sandbox prefix. With FOS_SANDBOX=0 nothing talks to the sandbox.
// The worker and the API share one.
func platformRegistry(cfg config.Config) *platforms.Registry {
	sandboxURL := ""
	if cfg.Sandbox {
		sandboxURL = cfg.SandboxURL
	}
	urls := platforms.APIURLsFromEnv(func(k string) string { return cfg.PlatformURLs[k] }, cfg.Sandbox, sandboxURL)
	hc := platforms.NewHTTPClient(30 * time.Second)
	storeClient := hc
	if !cfg.Sandbox {
		storeClient = netguard.NewClient(netguard.Options{AllowPrivate: cfg.AllowPrivateURLs})
	}
	return platforms.NewAPIRegistry(urls, hc, storeClient)
}

// ensureSchedules creates or updates the Temporal Schedules the service
// runs on (idempotent; every worker may call it at start).
func ensureSchedules(ctx context.Context, svc *services) error {
	if err := worker.EnsureTrackingSchedule(ctx, svc.temporal, svc.cfg.TaskQueue, 0); err != nil {
		return fmt.Errorf("tracking schedule: %w", err)
	}
	if err := worker.EnsurePickupCompletionSchedule(ctx, svc.temporal, svc.cfg.TaskQueue); err != nil {
		return fmt.Errorf("pickup completion schedule: %w", err)
	}
	if err := worker.EnsureMaintenanceSchedule(ctx, svc.temporal, svc.cfg.TaskQueue); err != nil {
		return fmt.Errorf("maintenance schedule: %w", err)
	}
	if err := worker.EnsureEmbedOutbox(ctx, svc.temporal, worker.WebhookTaskQueue(svc.cfg.TaskQueue)); err != nil {
		return fmt.Errorf("embed outbox dispatcher: %w", err)
	}
	if err := worker.EnsureAgentReconcileSchedule(ctx, svc.temporal, svc.cfg.TaskQueue); err != nil {
		return fmt.Errorf("agent reconcile schedule: %w", err)
	}
	return nil
}

// carrierRegistry builds the carrier adapters: the real carriers' APIs, or
// the built-in sandbox under FOS_SANDBOX=1, each replaceable by its
// FOS_CARRIER_*_URL variable (CONTRACT 8b). With FOS_SANDBOX=0 the sandbox
// URL is not given to the adapters at all.
func carrierRegistry(cfg config.Config) *carriers.Registry {
	sandboxURL := ""
	if cfg.Sandbox {
		sandboxURL = cfg.SandboxURL
	}
	return carriers.NewRegistry(carriers.Config{
		Sandbox:    cfg.Sandbox,
		SandboxURL: sandboxURL,
		BaseURLs:   carriers.EndpointsFromEnv(func(k string) string { return cfg.CarrierURLs[k] }, cfg.Sandbox, sandboxURL),
		HTTPClient: &http.Client{Timeout: 30 * time.Second},
		CarrierA:   carriers.CarrierAConfigFromEnv(os.Getenv),
	})
}
