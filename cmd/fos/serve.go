package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// services are the long-lived dependencies shared by the API and worker.
type services struct {
	cfg      config.Config
	log      *slog.Logger
	store    *store.Store
	secrets  *secrets.Box
	temporal client.Client
}

func (s *services) close() {
	if s.temporal != nil {
		s.temporal.Close()
	}
	if s.store != nil {
		s.store.Close()
	}
}

// openServices connects to PostgreSQL and Temporal.
func openServices(ctx context.Context, cfg config.Config, log *slog.Logger) (*services, error) {
	box, err := secrets.NewBox(cfg.EncryptionKey)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	// Re-seal secrets stored in the old format (idempotent, see
	// store.UpgradeSecrets) before anything reads them.
	if _, err := store.UpgradeSecrets(ctx, st, box, log); err != nil {
		st.Close()
		return nil, fmt.Errorf("upgrade stored secrets: %w", err)
	}
	tc, err := dialTemporal(ctx, cfg, log)
	if err != nil {
		st.Close()
		return nil, err
	}
	return &services{cfg: cfg, log: log, store: st, secrets: box, temporal: tc}, nil
}

func dialTemporal(ctx context.Context, cfg config.Config, log *slog.Logger) (client.Client, error) {
	tc, err := client.DialContext(ctx, client.Options{
		HostPort:  cfg.TemporalAddress,
		Namespace: cfg.TemporalNamespace,
		Logger:    tlog.NewStructuredLogger(log.With("component", "temporal-client")),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	return tc, nil
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
		RateTimeout: svc.cfg.RateTimeout,
		Temporal:    svc.temporal,
		TaskQueue:   svc.cfg.TaskQueue,
		Mailer:      mailer,
		BaseURL:     svc.cfg.BaseURL,

		AllowPrivateURLs: svc.cfg.AllowPrivateURLs,
		Limits:           svc.cfg.Limits,
		IdempotencyLease: svc.cfg.IdempotencyLease,
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
