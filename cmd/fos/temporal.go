package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	tlog "go.temporal.io/sdk/log"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/payloadcodec"
	"github.com/fos-dev/fos/worker"
)

// temporalClientOptions are the client options of every process (serve,
// worker, dev): address and namespace, TLS or mTLS, the API key, the
// payload codec and the SDK metrics (nil: none).
func temporalClientOptions(cfg config.Config, log *slog.Logger, metrics client.MetricsHandler, interceptors ...interceptor.ClientInterceptor) (client.Options, error) {
	codec, err := payloadCodec(cfg)
	if err != nil {
		return client.Options{}, err
	}
	opts := client.Options{
		HostPort:         cfg.TemporalAddress,
		Namespace:        cfg.TemporalNamespace,
		Logger:           tlog.NewStructuredLogger(log.With("component", "temporal-client")),
		DataConverter:    codec.DataConverter(),
		FailureConverter: codec.FailureConverter(),
		MetricsHandler:   metrics,
		// Tracing (telemetry): on the client and every worker made from it.
		Interceptors: interceptors,
	}
	t := cfg.Temporal
	if t.TLSEnabled() {
		if opts.ConnectionOptions.TLS, err = temporalTLS(t); err != nil {
			return client.Options{}, err
		}
	}
	if t.APIKey != "" {
		opts.Credentials = client.NewAPIKeyStaticCredentials(t.APIKey)
	}
	return opts, nil
}

// temporalTLS is the TLS configuration of the Temporal connection:
// the client certificate (mTLS) when set, the CA bundle (default: the
// system roots) and the server name to check.
func temporalTLS(t config.Temporal) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.TLSServerName}
	if t.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey)
		if err != nil {
			return nil, fmt.Errorf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if t.TLSCA != "" {
		raw, err := os.ReadFile(t.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("TEMPORAL_TLS_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(raw) {
			return nil, fmt.Errorf("TEMPORAL_TLS_CA=%q: holds no PEM certificate", t.TLSCA)
		}
		c.RootCAs = pool
	}
	return c, nil
}

// payloadCodec is the codec every client encrypts payloads with:
// FOS_PAYLOAD_KEY, or a key derived from FOS_ENCRYPTION_KEY; the keys of
// FOS_PAYLOAD_OLD_KEYS still decode.
func payloadCodec(cfg config.Config) (*payloadcodec.Codec, error) {
	var current payloadcodec.Key
	var err error
	switch {
	case cfg.Temporal.PayloadKey != "":
		current, err = payloadcodec.ParseKey(cfg.Temporal.PayloadKey)
	case cfg.EncryptionKey != "":
		current, err = payloadcodec.DeriveKey([]byte(cfg.EncryptionKey))
	default:
		err = errors.New("FOS_PAYLOAD_KEY or FOS_ENCRYPTION_KEY is required to encrypt Temporal payloads")
	}
	if err != nil {
		return nil, fmt.Errorf("payload key: %w", err)
	}
	var old []payloadcodec.Key
	for _, s := range cfg.Temporal.PayloadOldKeys {
		k, err := payloadcodec.ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("FOS_PAYLOAD_OLD_KEYS: %w", err)
		}
		old = append(old, k)
	}
	return payloadcodec.New(current, old...), nil
}

// dialTemporal connects to Temporal with the options above.
func dialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger, metrics client.MetricsHandler, interceptors ...interceptor.ClientInterceptor) (client.Client, error) {
	opts, err := temporalClientOptions(cfg, log, metrics, interceptors...)
	if err != nil {
		return nil, err
	}
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		how := "plaintext"
		if cfg.Temporal.TLSEnabled() {
			how = "TLS"
			// With TLS 1.3 a refused client certificate may show as a
			// broken pipe rather than a certificate error: hint anyway.
			if cfg.Temporal.TLSCert == "" && cfg.Temporal.APIKey == "" {
				how += "; if the server requires mTLS, set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY"
			}
		}
		return nil, fmt.Errorf("connect to Temporal at %s (%s): %w", cfg.TemporalAddress, how, err)
	}
	return tc, nil
}

// workerOptions are one task queue's worker options.
func workerOptions(t config.WorkerTuning, stop time.Duration, onFatal func(error)) sdkworker.Options {
	return sdkworker.Options{
		MaxConcurrentActivityExecutionSize:     t.MaxConcurrentActivities,
		MaxConcurrentWorkflowTaskExecutionSize: t.MaxConcurrentWorkflowTasks,
		WorkerActivitiesPerSecond:              t.ActivitiesPerSecond,
		WorkerStopTimeout:                      stop,
		OnFatalError:                           onFatal,
	}
}

// workers are the worker of the main (interactive) task queue and the
// worker of the bulk task queue, each with its own tuning. Both register
// every workflow and activity; what runs where is decided at the start
// (api.Deps.BulkTaskQueue).
type workers struct {
	list  []sdkworker.Worker
	fatal chan error
}

func newWorkers(svc *services) *workers {
	ws := &workers{fatal: make(chan error, 4)}
	onFatal := func(err error) {
		select {
		case ws.fatal <- err:
		default:
		}
	}
	deps := worker.Deps{
		Store:     svc.store,
		Secrets:   svc.secrets,
		Platforms: svc.platformRegistry(),
		Carriers:  carrierRegistry(svc.cfg),
		Logger:    svc.log,
		// The reconciler restarts bulk work where the API starts it.
		BulkTaskQueue: svc.cfg.Temporal.BulkTaskQueue,
		Embed:         worker.EmbedDeps{StorefrontA: storefrontAApp(svc.cfg), AllowPrivateURLs: svc.cfg.AllowPrivateURLs, BaseURL: svc.cfg.BaseURL},
		LLM:           svc.agentModel(),
		Agent:         svc.agentConfig(),
	}
	if svc.tel != nil {
		deps.Metrics = svc.tel.metrics
	}
	t := svc.cfg.Temporal
	// The drainers of this process yield to its purchases and imports.
	worker.SetDispatchYield(t.DispatchYield.Interactive, t.DispatchYield.Import)
	for _, q := range []struct {
		queue  string
		tuning config.WorkerTuning
	}{{svc.cfg.TaskQueue, t.Worker}, {t.BulkTaskQueue, t.BulkWorker},
		// End-user webhook deliveries: a slow receiver never delays labels.
		{worker.WebhookTaskQueue(svc.cfg.TaskQueue), t.Worker},
		// Inbound platform webhooks: a storm never delays labels either.
		{t.InboundTaskQueue, t.InboundWorker}} {
		deps.Options = workerOptions(q.tuning, t.StopTimeout, onFatal)
		ws.list = append(ws.list, worker.New(svc.temporal, q.queue, deps))
	}
	return ws
}

// start starts every worker (stopping those started when one fails).
func (ws *workers) start() error {
	for i, w := range ws.list {
		if err := w.Start(); err != nil {
			for _, started := range ws.list[:i] {
				started.Stop()
			}
			return fmt.Errorf("start worker: %w", err)
		}
	}
	return nil
}

// stop stops the workers together, each letting its in-flight activities
// finish within the stop timeout.
func (ws *workers) stop() {
	var wg sync.WaitGroup
	for _, w := range ws.list {
		wg.Go(w.Stop)
	}
	wg.Wait()
}

// run starts the workers and stops them when ctx ends or one fails.
func (ws *workers) run(ctx context.Context) error {
	if err := ws.start(); err != nil {
		return err
	}
	defer ws.stop()
	select {
	case <-ctx.Done():
		return nil
	case err := <-ws.fatal:
		return fmt.Errorf("worker stopped: %w", err)
	}
}

// startSideListener serves h on addr (metrics, codec) until ctx ends. The
// address is taken now, so a busy port fails the start.
func startSideListener(ctx context.Context, log *slog.Logger, cfg config.Config, addr string, h http.Handler, name string) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener on %s: %w", name, addr, err)
	}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := serveListener(sctx, log, cfg, ln, h, name); err != nil {
			log.Error("listener failed", "server", name, "error", err)
		}
	}()
	go func() {
		<-ctx.Done()
		cancel()
	}()
	return func() { cancel(); <-done }, nil
}

// codecHandler is the remote codec endpoint (mount it at /codec).
func codecHandler(svc *services, origins []string) http.Handler {
	return payloadcodec.NewHTTPHandler(svc.codec, payloadcodec.HandlerOptions{
		AllowedOrigins: origins,
		Token:          svc.cfg.Temporal.CodecToken,
	})
}
