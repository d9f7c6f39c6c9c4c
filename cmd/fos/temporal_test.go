package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/server/temporaltest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/internal/tlstest"
	"github.com/fos-dev/fos/payloadcodec"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// tlsProxy terminates TLS in front of a plaintext Temporal frontend and
// requires a client certificate signed by the test CA (mTLS), like a
// production Temporal cluster or Temporal Cloud.
type tlsProxy struct {
	addr     string
	verified atomic.Int64 // handshakes with a valid client certificate
}

func startTLSProxy(t *testing.T, pki tlstest.PKI, backend string) *tlsProxy {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(pki.CA)
	require.NoError(t, err)
	cas := x509.NewCertPool()
	require.True(t, cas.AppendCertsFromPEM(caPEM))
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    cas,
		NextProtos:   []string{"h2"}, // gRPC
		MinVersion:   tls.VersionTLS12,
	})
	require.NoError(t, err)
	p := &tlsProxy{addr: ln.Addr().String()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := c.(*tls.Conn).HandshakeContext(ctx); err != nil {
					return
				}
				p.verified.Add(1)
				b, err := net.Dial("tcp", backend)
				if err != nil {
					return
				}
				defer b.Close()
				mu.Lock()
				open = append(open, c, b)
				mu.Unlock()
				go func() { _, _ = io.Copy(b, c); b.Close() }()
				_, _ = io.Copy(c, b)
			})
		}
	})
	return p
}

// runCommand runs a fos command (runWorker, runServe) with env as its
// environment until the test ends, then stops it as SIGTERM would and
// expects it to return cleanly. The context it returns ends with the test.
func runCommand(t *testing.T, env map[string]string, run func(context.Context) error) context.Context {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmdCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- run(cmdCtx) }()
	t.Cleanup(func() {
		stop()
		require.NoError(t, <-done)
		cancel()
	})
	return ctx
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// TestWorkerOverMutualTLS runs `fos worker` (its configuration, client
// construction, search attribute registration, schedules and both
// workers) against Temporal behind a TLS endpoint that requires a client
// certificate; a workflow runs through it, its payloads are stored
// encrypted, the SDK metrics are scraped; without the client certificate
// the connection fails with a clear error.
func TestWorkerOverMutualTLS(t *testing.T) {
	storetest.New(t) // the migrated package database
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	pki := tlstest.Generate(t)
	proxy := startTLSProxy(t, pki, ts.GetFrontendHostPort())
	metricsAddr := freeAddr(t)
	env := map[string]string{
		"DATABASE_URL":             storetest.URL(),
		"TEMPORAL_ADDRESS":         proxy.addr,
		"TEMPORAL_NAMESPACE":       ts.GetDefaultNamespace(),
		"TEMPORAL_TLS_CERT":        pki.ClientCert,
		"TEMPORAL_TLS_KEY":         pki.ClientKey,
		"TEMPORAL_TLS_CA":          pki.CA,
		"TEMPORAL_TLS_SERVER_NAME": "temporal.test",
		"FOS_TASK_QUEUE":           "fos-tls",
		"FOS_BULK_TASK_QUEUE":      "fos-tls-bulk",
		"FOS_ENCRYPTION_KEY":       secrets.NewKey(),
		"FOS_METRICS_ADDR":         metricsAddr,
		"FOS_WORKER_STOP_TIMEOUT":  "5s",
		"FOS_LOG_LEVEL":            "warn",
		"FOS_SANDBOX":              "1",
	}
	ctx := runCommand(t, env, runWorker)

	// A client built the same way runs a workflow on that worker.
	cfg, err := config.Load(config.ModeWorker, os.Getenv)
	require.NoError(t, err)
	log := slog.New(slog.DiscardHandler)
	c, err := dialTemporal(ctx, cfg, log, nil)
	require.NoError(t, err)
	defer c.Close()
	var run interface {
		Get(context.Context, any) error
		GetID() string
		GetRunID() string
	}
	require.Eventually(t, func() bool {
		// The worker registers the search attribute at start.
		r, err := c.ExecuteWorkflow(ctx, worker.StartOptions("tls-maintenance", cfg.TaskQueue, "org-tls", map[string]any{"job": "tls"}),
			workflows.MaintenanceWorkflowType)
		if err != nil {
			return false
		}
		run = r
		return true
	}, 30*time.Second, 200*time.Millisecond)
	var res workflows.MaintenanceResult
	require.NoError(t, run.Get(ctx, &res))
	require.Positive(t, proxy.verified.Load(), "connections went through the mTLS endpoint")

	// The stored history holds encrypted payloads only.
	it := c.GetWorkflowHistory(ctx, run.GetID(), run.GetRunID(), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	found := false
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionCompletedEventAttributes(); a != nil {
			for _, p := range a.GetResult().GetPayloads() {
				require.Equal(t, payloadcodec.Encoding, string(p.GetMetadata()["encoding"]))
				found = true
			}
		}
	}
	require.True(t, found, "the completed event carries the result")

	// The SDK metrics, in Prometheus format (reported once a second).
	scrape := func() string {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(raw)
	}
	completed := regexp.MustCompile(`(?m)^temporal_workflow_completed\{[^}]*task_queue="fos-tls"[^}]*workflow_type="Maintenance"\} [1-9]`)
	body := scrape()
	for deadline := time.Now().Add(10 * time.Second); !completed.MatchString(body) && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		body = scrape()
	}
	require.Regexp(t, completed, body)
	require.Regexp(t, `(?m)^temporal_request\{[^}]*operation="CreateSchedule"[^}]*\} [1-9]`, body)

	// Without the client certificate: refused, and the error says why.
	noCert, err := config.Load(config.ModeWorker, func(k string) string {
		if k == "TEMPORAL_TLS_CERT" || k == "TEMPORAL_TLS_KEY" || k == "FOS_METRICS_ADDR" {
			return ""
		}
		return env[k]
	})
	require.NoError(t, err)
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	defer dcancel()
	_, err = dialTemporal(dctx, noCert, log, nil)
	require.Error(t, err)
	require.ErrorContains(t, err, "connect to Temporal at "+proxy.addr+" (TLS")
	require.ErrorContains(t, err, "set TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY")
}

// TestServeCodecEndpointAndReadiness runs `fos serve` with the codec
// endpoint on its own listener: the Temporal UI's decode call needs the
// bearer token, answers CORS for the UI's origin only, and turns a payload
// a client encrypted back into its JSON; /readyz reports the search
// attribute serve registered at start; FOS_DEBUG_ADDR serves the profiles
// (on its own listener only).
func TestServeCodecEndpointAndReadiness(t *testing.T) {
	storetest.New(t)
	ts := temporaltest.NewServer(temporaltest.WithT(t))
	httpAddr, codecAddr, debugAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	env := map[string]string{
		"FOS_DEBUG_ADDR":     debugAddr,
		"DATABASE_URL":       storetest.URL(),
		"TEMPORAL_ADDRESS":   ts.GetFrontendHostPort(),
		"TEMPORAL_NAMESPACE": ts.GetDefaultNamespace(),
		"FOS_ENCRYPTION_KEY": secrets.NewKey(),
		"FOS_JWT_SECRET":     "serve-test-secret-serve-test-secret!",
		"FOS_HTTP_ADDR":      httpAddr,
		"FOS_CODEC_ADDR":     codecAddr,
		"FOS_CODEC_TOKEN":    "operator-token",
		"FOS_CODEC_ORIGINS":  "http://ui.example.com",
		"FOS_LOG_LEVEL":      "warn",
	}
	runCommand(t, env, runServe)

	// Ready once it listens: Temporal, PostgreSQL and the search attribute.
	var ready map[string]any
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + httpAddr + "/readyz")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		ready = nil
		_ = json.NewDecoder(resp.Body).Decode(&ready)
		return resp.StatusCode == http.StatusOK
	}, 20*time.Second, 100*time.Millisecond)
	require.Equal(t, "ok", ready["checks"].(map[string]any)["temporalSearchAttributes"])

	// A payload as serve's clients encrypt it.
	cfg, err := config.Load(config.ModeServe, os.Getenv)
	require.NoError(t, err)
	codec, err := payloadCodec(cfg)
	require.NoError(t, err)
	enc, err := codec.DataConverter().ToPayload(map[string]string{"pin": "482913"})
	require.NoError(t, err)
	body, err := protojson.Marshal(&commonpb.Payloads{Payloads: []*commonpb.Payload{enc}})
	require.NoError(t, err)

	decode := func(token, origin string) (*http.Response, string) {
		req, err := http.NewRequest(http.MethodPost, "http://"+codecAddr+"/codec/decode", bytes.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Namespace", cfg.TemporalNamespace)
		req.Header.Set("Origin", origin)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp, string(raw)
	}
	resp, out := decode("", "http://ui.example.com")
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	require.NotContains(t, out, "482913")
	resp, out = decode("operator-token", "http://ui.example.com")
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	require.Equal(t, "http://ui.example.com", resp.Header.Get("Access-Control-Allow-Origin"))
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal([]byte(out), &decoded))
	require.Len(t, decoded.GetPayloads(), 1)
	require.JSONEq(t, `{"pin":"482913"}`, string(decoded.GetPayloads()[0].GetData()))
	resp, _ = decode("operator-token", "http://elsewhere.example.com")
	require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))

	// Profiles on FOS_DEBUG_ADDR, not on the API listener.
	prof, err := http.Get("http://" + debugAddr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	prof.Body.Close()
	require.Equal(t, http.StatusOK, prof.StatusCode)
	prof, err = http.Get("http://" + httpAddr + "/debug/pprof/cmdline")
	require.NoError(t, err)
	prof.Body.Close()
	require.Equal(t, http.StatusNotFound, prof.StatusCode)

	// The codec is not on the API listener.
	apiResp, err := http.Post("http://"+httpAddr+"/codec/decode", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	apiResp.Body.Close()
	require.Equal(t, http.StatusNotFound, apiResp.StatusCode)
}

// apiKeyFrontend is a TLS gRPC frontend that records the authorization
// header of GetSystemInfo (the first call of every client).
type apiKeyFrontend struct {
	workflowservice.UnimplementedWorkflowServiceServer
	got chan string
}

func (f *apiKeyFrontend) GetSystemInfo(ctx context.Context, _ *workflowservice.GetSystemInfoRequest) (*workflowservice.GetSystemInfoResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	select {
	case f.got <- strings.Join(md.Get("authorization"), ","):
	default:
	}
	return &workflowservice.GetSystemInfoResponse{}, nil
}

// TestAPIKeyOverTLS: with TEMPORAL_API_KEY (Temporal Cloud) the client
// speaks TLS and sends the key as a bearer token.
func TestAPIKeyOverTLS(t *testing.T) {
	pki := tlstest.Generate(t)
	cert, err := tls.LoadX509KeyPair(pki.ServerCert, pki.ServerKey)
	require.NoError(t, err)
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})))
	fe := &apiKeyFrontend{got: make(chan string, 1)}
	workflowservice.RegisterWorkflowServiceServer(srv, fe)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()

	cfg, err := config.Load(config.ModeDev, func(k string) string {
		return map[string]string{
			"TEMPORAL_ADDRESS": ln.Addr().String(), "TEMPORAL_API_KEY": "cloud-key-1",
			"TEMPORAL_TLS_CA": pki.CA, "FOS_ENCRYPTION_KEY": secrets.NewKey(),
		}[k]
	})
	require.NoError(t, err)
	require.True(t, cfg.Temporal.TLSEnabled())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := dialTemporal(ctx, cfg, slog.New(slog.DiscardHandler), nil)
	require.NoError(t, err)
	defer c.Close()
	require.Equal(t, "Bearer cloud-key-1", <-fe.got)
}

func TestDevCodecOnlyOnLoopback(t *testing.T) {
	svc := &services{log: slog.New(slog.DiscardHandler), codec: payloadcodec.New(must(payloadcodec.ParseKey("Zm9zIHRlc3QgcGF5bG9hZCBrZXksIG5vdCBzZWNyZXQ=")))}
	svc.cfg.HTTPAddr = "0.0.0.0:8080"
	require.Nil(t, devCodec(svc, "127.0.0.1:8233"), "decoded payloads are not served to the network without a token")
	svc.cfg.Temporal.CodecToken = "t"
	require.NotNil(t, devCodec(svc, "127.0.0.1:8233"))
	svc.cfg.Temporal.CodecToken = ""
	svc.cfg.HTTPAddr = "127.0.0.1:8080"
	h := devCodec(svc, "127.0.0.1:8233")
	require.NotNil(t, h)
	for _, origin := range []string{"http://127.0.0.1:8233", "http://localhost:8233"} {
		req := httptest.NewRequest(http.MethodOptions, "/codec/decode", nil)
		req.Header.Set("Origin", origin)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, origin, rec.Header().Get("Access-Control-Allow-Origin"))
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
