package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"sync"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/payloadcodec"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
)

// services are the long-lived dependencies shared by the API and worker.
type services struct {
	cfg      config.Config
	log      *slog.Logger
	store    *store.Store
	secrets  *secrets.Box
	temporal client.Client
	// codec encrypts Temporal payloads (the client's data converter uses
	// the same keys); tel is the traces and metrics.
	codec *payloadcodec.Codec
	tel   *processTelemetry

	platformsOnce sync.Once
	platforms     *platforms.Registry
}

// platformRegistry is the process's one platform registry (its connectors
// keep access tokens and rate-limit pacing), built on first use.
func (s *services) platformRegistry() *platforms.Registry {
	s.platformsOnce.Do(func() { s.platforms = platformRegistry(s.cfg) })
	return s.platforms
}

func (s *services) close() {
	if s.temporal != nil {
		s.temporal.Close()
	}
	if s.tel != nil {
		s.tel.stop()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// openServices connects to PostgreSQL and Temporal (starting the metrics
// listener first, so the client reports into it), and makes sure the
// OrganizationId search attribute exists.
func openServices(ctx context.Context, cfg config.Config, log *slog.Logger) (*services, error) {
	box, err := secrets.NewBox(cfg.EncryptionKey)
	if err != nil {
		return nil, err
	}
	codec, err := payloadCodec(cfg)
	if err != nil {
		return nil, err
	}
	tel, err := startTelemetry(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	svc := &services{cfg: cfg, log: log, secrets: box, codec: codec, tel: tel}
	if svc.store, err = store.Open(ctx, cfg.DatabaseURL, store.WithQueryTracer(tel.tracing.QueryTracer())); err != nil {
		svc.close()
		return nil, err
	}
	// Re-seal secrets stored in the old format (idempotent, see
	// store.UpgradeSecrets) before anything reads them.
	if _, err := store.UpgradeSecrets(ctx, svc.store, box, log); err != nil {
		svc.close()
		return nil, fmt.Errorf("upgrade stored secrets: %w", err)
	}
	if svc.temporal, err = dialTemporal(ctx, cfg, log, tel.sdk, tel.interceptors...); err != nil {
		svc.close()
		return nil, err
	}
	// Without the OrganizationId search attribute every workflow start
	// fails: register it, or stop here saying how to.
	if err := worker.EnsureSearchAttributes(ctx, svc.temporal, cfg.TemporalNamespace); err != nil {
		svc.close()
		return nil, err
	}
	return svc, nil
}

func newMailer(cfg config.Config, log *slog.Logger) (email.Sender, error) {
	if cfg.SMTPURL == "" {
		return email.LogSender{Log: log}, nil
	}
	s, err := email.NewSMTPSender(cfg.SMTPURL, cfg.MailFrom)
	if err != nil {
		return nil, err
	}
	s.Insecure = cfg.SMTPInsecure
	return s, nil
}

func apiDeps(svc *services, mailer email.Sender) api.Deps {
	return api.Deps{
		Store:       svc.store,
		Logger:      svc.log,
		Tokens:      auth.Tokens{Secret: []byte(svc.cfg.JWTSecret), TTL: svc.cfg.TokenTTL},
		Secrets:     svc.secrets,
		Carriers:    carrierRegistry(svc.cfg),
		Platforms:   svc.platformRegistry(),
		RateTimeout: svc.cfg.RateTimeout,
		Temporal:    svc.temporal,
		TaskQueue:   svc.cfg.TaskQueue,
		// Bulk work (rate comparisons) runs on its own task queue.
		BulkTaskQueue:     svc.cfg.Temporal.BulkTaskQueue,
		TemporalNamespace: svc.cfg.TemporalNamespace,
		Mailer:            mailer,
		BaseURL:           svc.cfg.BaseURL,

		AllowPrivateURLs: svc.cfg.AllowPrivateURLs,
		Limits:           svc.cfg.Limits,
		IdempotencyLease: svc.cfg.IdempotencyLease,
		// Embed: OAuth exchanges and delivery retries on the webhook queue.
		Embed:       api.EmbedDeps{StorefrontA: storefrontAApp(svc.cfg), TaskQueue: worker.WebhookTaskQueue(svc.cfg.TaskQueue)},
		Tracing:     svc.tel.tracingOf(),
		HTTPMetrics: svc.tel.httpMetrics(),
		LLM:         svc.agentModel(),
		Agent:       svc.agentConfig(),
	}
}

func runServe(ctx context.Context) error {
	cfg, err := config.Load(config.ModeServe, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	svc, err := openServices(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer svc.close()
	mailer, err := newMailer(cfg, log)
	if err != nil {
		return err
	}
	// The codec endpoint for the Temporal UI, on its own listener so only
	// the operators' network reaches it (FOS_CODEC_ADDR, off by default).
	if cfg.Temporal.CodecAddr != "" {
		mux := http.NewServeMux()
		mux.Handle("/codec/", codecHandler(svc, cfg.Temporal.CodecOrigins))
		stop, err := startSideListener(ctx, log, cfg, cfg.Temporal.CodecAddr, mux, "codec")
		if err != nil {
			return fmt.Errorf("FOS_CODEC_ADDR: %w", err)
		}
		defer stop()
	}
	if cfg.Temporal.DebugAddr != "" {
		stop, err := startSideListener(ctx, log, cfg, cfg.Temporal.DebugAddr, debugMux(), "debug")
		if err != nil {
			return fmt.Errorf("FOS_DEBUG_ADDR: %w", err)
		}
		defer stop()
	}
	return serveHTTP(ctx, log, cfg, api.NewRouter(apiDeps(svc, mailer)))
}

// serveHTTP serves h on cfg.HTTPAddr until ctx ends, then drains in-flight requests.
func serveHTTP(ctx context.Context, log *slog.Logger, cfg config.Config, h http.Handler) error {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", cfg.HTTPAddr, err)
	}
	return serveListener(ctx, log, cfg, ln, h, "api")
}

// serveListener serves h on ln until ctx ends, then lets in-flight requests
// finish for cfg.ShutdownGrace. A request may take cfg.HTTPWriteTimeout:
// both exceed the longest synchronous path (a label purchase, up to about
// two minutes), so neither the server nor a deploy cuts a purchase short.
func serveListener(ctx context.Context, log *slog.Logger, cfg config.Config, ln net.Listener, h http.Handler, name string) error {
	writeTimeout, grace := cfg.HTTPWriteTimeout, cfg.ShutdownGrace
	if writeTimeout <= 0 {
		writeTimeout = 3 * time.Minute
	}
	if grace <= 0 {
		grace = 3 * time.Minute
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("listening", "server", name, "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("stopping: letting in-flight requests finish", "server", name, "grace", grace.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped", "server", name)
	return nil
}

// debugMux serves Go's profiles (FOS_DEBUG_ADDR): `go tool pprof
// http://ADDR/debug/pprof/profile?seconds=20` profiles the running process.
func debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
