package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/devenv"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
)

// runDev runs everything a newcomer needs on one machine (CONTRACT 1).
func runDev(ctx context.Context, args []string) error {
	fset := flag.NewFlagSet("dev", flag.ContinueOnError)
	seed := fset.Bool("seed", false, "create a demo organization and print its owner login and an API key")
	dir := fset.String("dir", envOr("FOS_DEV_DIR", ".fos"), "directory for local state (PostgreSQL, Temporal, keys)")
	temporalAddr := fset.String("temporal-addr", devenv.DefaultTemporalAddress, "where the embedded Temporal server listens")
	uiAddr := fset.String("ui-addr", devenv.DefaultTemporalUIAddress, "where the Temporal Web UI listens")
	if err := fset.Parse(args); err != nil {
		return err
	}
	cfg, err := config.Load(config.ModeDev, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel)
	// 0755: the private PostgreSQL runs as the postgres user when fos runs as
	// root and must reach .fos/pg; secrets.env itself is 0600.
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if err := devSecrets(&cfg, filepath.Join(*dir, "secrets.env")); err != nil {
		return err
	}

	// PostgreSQL: the given one, or a private cluster under .fos/.
	if cfg.DatabaseURL == "" {
		pg, err := devenv.StartPostgres(ctx, filepath.Join(*dir, "pg"), log)
		if err != nil {
			return fmt.Errorf("private PostgreSQL: %w (install the postgresql package, or set DATABASE_URL)", err)
		}
		defer func() {
			if err := pg.Stop(context.Background()); err != nil {
				log.Error("stop PostgreSQL", "error", err)
			}
		}()
		cfg.DatabaseURL = pg.URL()
	}
	tel, err := startTelemetry(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer tel.stop()
	st, err := store.Open(ctx, cfg.DatabaseURL, store.WithQueryTracer(tel.tracing.QueryTracer()))
	if err != nil {
		return err
	}
	defer st.Close()
	if err := store.Migrate(ctx, st.Pool, log); err != nil {
		return err
	}

	// The sandbox platforms (and later carriers) on their own listener.
	sandboxLn, err := net.Listen("tcp", cfg.SandboxAddr)
	if err != nil {
		return fmt.Errorf("sandbox listener on %s: %w (set FOS_SANDBOX_ADDR)", cfg.SandboxAddr, err)
	}
	sandboxDone := make(chan error, 1)
	sandboxCtx, stopSandbox := context.WithCancel(context.WithoutCancel(ctx))
	go func() {
		sandboxDone <- serveListener(sandboxCtx, log, cfg, sandboxLn, sandboxapi.NewHandler(), "sandbox")
	}()
	defer func() { stopSandbox(); <-sandboxDone }()

	// Temporal: the given server, or an embedded dev server with its UI.
	shownUI := ""
	if cfg.TemporalAddress == "" {
		t, err := devenv.StartTemporal(ctx, devenv.TemporalOptions{
			DBPath:    filepath.Join(*dir, "temporal.db"),
			Namespace: cfg.TemporalNamespace,
			Address:   *temporalAddr,
			UIAddress: *uiAddr,
			// The UI decodes payloads through the API's codec endpoint.
			CodecEndpoint: cfg.BaseURL + "/codec",
			Logger:        log,
		})
		if err != nil {
			return fmt.Errorf("embedded Temporal: %w (or set TEMPORAL_ADDRESS)", err)
		}
		defer func() {
			if err := t.Stop(); err != nil {
				log.Error("stop Temporal", "error", err)
			}
		}()
		cfg.TemporalAddress, shownUI = t.Address(), t.UIAddress()
	}
	box, err := secrets.NewBox(cfg.EncryptionKey)
	if err != nil {
		return err
	}
	if _, err := store.UpgradeSecrets(ctx, st, box, log); err != nil {
		return fmt.Errorf("upgrade stored secrets: %w", err)
	}
	codec, err := payloadCodec(cfg)
	if err != nil {
		return err
	}
	tc, err := dialTemporal(ctx, cfg, log, tel.sdk, tel.interceptors...)
	if err != nil {
		return err
	}
	defer tc.Close()
	if err := worker.EnsureSearchAttributes(ctx, tc, cfg.TemporalNamespace); err != nil {
		return err
	}
	svc := &services{cfg: cfg, log: log, store: st, secrets: box, temporal: tc, codec: codec, tel: tel}
	watchBacklogs(svc)
	if err := ensureSchedules(ctx, svc); err != nil {
		return err
	}

	ws := newWorkers(svc)
	if err := ws.start(); err != nil {
		return err
	}
	defer ws.stop()
	startWebhookRelay(ctx, svc)

	// Mail stays on this machine unless SMTP is configured.
	mailbox := &email.Mailbox{}
	var mailer email.Sender = mailbox
	if cfg.SMTPURL != "" {
		if mailer, err = newMailer(cfg, log); err != nil {
			return err
		}
	}
	deps := apiDeps(svc, mailer)
	deps.Mailbox = mailbox
	deps.Embed.Demo = true
	deps.Codec = devCodec(svc, shownUI)

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (set FOS_HTTP_ADDR)", cfg.HTTPAddr, err)
	}
	var demo *seedResult
	if *seed {
		if demo, err = seedDemo(ctx, deps); err != nil {
			return fmt.Errorf("seed: %w", err)
		}
	}
	printBanner(cfg, shownUI, demo)
	return serveListener(ctx, log, cfg, ln, api.NewRouter(deps), "api")
}

func printBanner(cfg config.Config, uiAddr string, demo *seedResult) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n  fos dev is running\n\n")
	fmt.Fprintf(&b, "  API          %s/api/v1\n", cfg.BaseURL)
	if uiAddr != "" {
		fmt.Fprintf(&b, "  Temporal UI  http://%s\n", uiAddr)
	}
	fmt.Fprintf(&b, "  Temporal     %s (namespace %s, task queues %s and %s)\n", cfg.TemporalAddress, cfg.TemporalNamespace, cfg.TaskQueue, cfg.Temporal.BulkTaskQueue)
	fmt.Fprintf(&b, "  Mailbox      %s/dev/mailbox?to=<e-mail>\n", cfg.BaseURL)
	fmt.Fprintf(&b, "  Sandbox      %s\n", cfg.SandboxURL)
	if cfg.Temporal.MetricsAddr != "" {
		fmt.Fprintf(&b, "  Metrics      http://%s/metrics\n", cfg.Temporal.MetricsAddr)
	}
	if e := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"); e != "" {
		fmt.Fprintf(&b, "  Traces       OTLP to %s\n", e)
	}
	if demo != nil {
		fmt.Fprintf(&b, "\n  Demo organization  %s (%s)\n", demo.OrgName, demo.OrgID)
		fmt.Fprintf(&b, "  Owner login        %s / %s\n", demo.Email, demo.Password)
		fmt.Fprintf(&b, "  API key            %s\n", demo.APIKey)
		fmt.Fprintf(&b, "\n  try: curl -H 'Authorization: Bearer %s' %s/api/v1/orders\n", demo.APIKey, cfg.BaseURL)
	}
	fmt.Fprintf(&b, "\n  Ctrl-C stops everything.\n\n")
	fmt.Fprint(os.Stdout, b.String())
}

// devSecrets fills in the encryption key and JWT secret, generated once and
// kept in path so that data encrypted yesterday still opens today.
func devSecrets(cfg *config.Config, path string) error {
	kept := map[string]string{}
	f, err := os.Open(path)
	switch {
	case err == nil:
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), "="); ok {
				kept[k] = v
			}
		}
		f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	changed := false
	if kept["FOS_ENCRYPTION_KEY"] == "" {
		kept["FOS_ENCRYPTION_KEY"], changed = secrets.NewKey(), true
	}
	if kept["FOS_JWT_SECRET"] == "" {
		kept["FOS_JWT_SECRET"], changed = secrets.NewKey(), true
	}
	if changed {
		body := "# generated by `fos dev`; keep it, data encrypted with it needs it\n" +
			"FOS_ENCRYPTION_KEY=" + kept["FOS_ENCRYPTION_KEY"] + "\nFOS_JWT_SECRET=" + kept["FOS_JWT_SECRET"] + "\n"
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return err
		}
	}
	if cfg.EncryptionKey == "" {
		cfg.EncryptionKey = kept["FOS_ENCRYPTION_KEY"]
	}
	if cfg.JWTSecret == "" {
		cfg.JWTSecret = kept["FOS_JWT_SECRET"]
	}
	return nil
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// devCodec is the codec endpoint `fos dev` serves on its API listener for
// its own Temporal UI: only while the API listens on loopback (or
// FOS_CODEC_TOKEN guards it), so decoded payloads stay on this machine.
func devCodec(svc *services, uiAddr string) http.Handler {
	host, _, _ := net.SplitHostPort(svc.cfg.HTTPAddr)
	ip := net.ParseIP(host)
	loopback := host == "localhost" || (ip != nil && ip.IsLoopback())
	if !loopback && svc.cfg.Temporal.CodecToken == "" {
		svc.log.Warn("the Temporal UI shows payloads encrypted: the codec endpoint is served only when FOS_HTTP_ADDR is a loopback address or FOS_CODEC_TOKEN is set")
		return nil
	}
	origins := svc.cfg.Temporal.CodecOrigins
	if uiAddr != "" {
		origins = append(origins, "http://"+uiAddr)
		if _, port, err := net.SplitHostPort(uiAddr); err == nil {
			origins = append(origins, "http://localhost:"+port)
		}
	}
	return codecHandler(svc, origins)
}
