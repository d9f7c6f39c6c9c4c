package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
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
	log.Info("worker starting", "task_queue", cfg.TaskQueue, "bulk_task_queue", cfg.Temporal.BulkTaskQueue, "temporal", cfg.TemporalAddress)
	startWebhookRelay(ctx, svc)
	return newWorkers(svc).run(ctx)
}

// platformRegistry picks the platform connectors: the sandbox under
// FOS_SANDBOX=1; otherwise each bridge type's real connector, or, while a
// type has none, one whose tasks fail non-retryably as "not available".
// With FOS_SANDBOX=0 nothing talks to the sandbox (CONTRACT 8b).
func platformRegistry(cfg config.Config, log *slog.Logger) *platforms.Registry {
	if !cfg.Sandbox {
		reg := platforms.NewProductionRegistry()
		log.Info("FOS_SANDBOX=0: bridge types without a real connector fail their tasks as not available", "bridge_types", reg.Types())
		return reg
	}
	return platforms.NewSandboxRegistry(cfg.SandboxURL, &http.Client{Timeout: 30 * time.Second})
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
