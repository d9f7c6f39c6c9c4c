package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/worker"
)

// processTelemetry is a process's traces and metrics.
type processTelemetry struct {
	// tracing is never nil; off unless OTEL_EXPORTER_OTLP_ENDPOINT is set.
	tracing *telemetry.Tracing
	// metrics (the process's own) and sdk (the Temporal SDK's) are
	// served together at FOS_METRICS_ADDR; both nil when it is unset.
	metrics *telemetry.Metrics
	sdk     client.MetricsHandler
	// interceptors carry traces through Temporal (none when tracing is off).
	interceptors []interceptor.ClientInterceptor
	stopMetrics  func()
	log          *slog.Logger
}

// startTelemetry starts tracing (OTLP export when
// OTEL_EXPORTER_OTLP_ENDPOINT is set) and serves the metrics at
// FOS_METRICS_ADDR (GET /metrics) when it is set. Call stop at exit: it
// flushes the spans not exported yet.
func startTelemetry(ctx context.Context, cfg config.Config, log *slog.Logger) (*processTelemetry, error) {
	tr, err := telemetry.StartTracing(ctx, "fos", os.Getenv)
	if err != nil {
		return nil, err
	}
	t := &processTelemetry{tracing: tr, stopMetrics: func() {}, log: log}
	if t.interceptors, err = tr.TemporalInterceptors(); err != nil {
		_ = tr.Shutdown()
		return nil, err
	}
	if tr.Enabled() {
		log.Info("tracing: exporting spans over OTLP")
	}
	if cfg.Temporal.MetricsAddr == "" {
		return t, nil
	}
	sdk := worker.NewMetrics(log)
	t.metrics = telemetry.NewMetrics()
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.metrics.Handler(sdk.Gatherer()))
	stop, err := startSideListener(ctx, log, cfg, cfg.Temporal.MetricsAddr, mux, "metrics")
	if err != nil {
		_ = sdk.Close()
		_ = tr.Shutdown()
		return nil, fmt.Errorf("FOS_METRICS_ADDR: %w", err)
	}
	t.sdk = sdk.Handler()
	t.stopMetrics = func() { stop(); _ = sdk.Close() }
	return t, nil
}

// tracingOf is the tracing (nil t: none).
func (t *processTelemetry) tracingOf() *telemetry.Tracing {
	if t == nil {
		return nil
	}
	return t.tracing
}

// httpMetrics are the API's request metrics (nil: none).
func (t *processTelemetry) httpMetrics() *telemetry.HTTPMetrics {
	if t == nil {
		return nil
	}
	return t.metrics.HTTP()
}

// stop ends the metrics listener and flushes the spans.
func (t *processTelemetry) stop() {
	t.stopMetrics()
	if err := t.tracing.Shutdown(); err != nil {
		t.log.Warn("tracing: flush at exit", "error", err)
	}
}

// watchBacklogs adds the backlog gauges to the metrics (the worker's and
// fos dev's: one process per deployment counts them).
func watchBacklogs(svc *services) {
	if svc.tel != nil && svc.tel.metrics != nil && svc.store != nil {
		svc.tel.metrics.WatchBacklogs(svc.store.Pool, svc.log)
	}
}
