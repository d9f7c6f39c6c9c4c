package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/payloadcodec/codectest"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
)

// workerProcessEnv carries a workerProcess's configuration to the test
// binary started as a worker (see serveWorkerIfChild).
const workerProcessEnv = "FOS_E2E_WORKER"

// workerProcess is what a worker started in its own process needs: the
// same Temporal server, database, key and sandbox carriers as the test.
type workerProcess struct {
	TemporalAddr string `json:"temporalAddr"`
	Namespace    string `json:"namespace"`
	DatabaseURL  string `json:"databaseUrl"`
	BoxKey       string `json:"boxKey"`
	CarriersURL  string `json:"carriersUrl"`
	TaskQueue    string `json:"taskQueue"`
}

// serveWorkerIfChild makes the test binary a worker process when started
// by startWorkerProcess: it serves the task queue until it is killed.
func serveWorkerIfChild() {
	raw := os.Getenv(workerProcessEnv)
	if raw == "" {
		return
	}
	if err := runWorkerProcess(raw); err != nil {
		fmt.Fprintln(os.Stderr, "e2e worker process:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runWorkerProcess(raw string) error {
	var cfg workerProcess
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := store.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer st.Close()
	box, err := secrets.NewBox(cfg.BoxKey)
	if err != nil {
		return err
	}
	c, err := client.Dial(client.Options{HostPort: cfg.TemporalAddr, Namespace: cfg.Namespace,
		DataConverter: codectest.DataConverter(), FailureConverter: codectest.FailureConverter()})
	if err != nil {
		return err
	}
	defer c.Close()
	deps := worker.Deps{Store: st, Secrets: box, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Carriers: carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: cfg.CarriersURL}), BulkTaskQueue: cfg.TaskQueue}
	w := sdkworker.New(c, cfg.TaskQueue, sdkworker.Options{})
	worker.Register(w, deps)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	stop := make(chan any)
	go func() { <-sig; close(stop) }()
	return w.Run(stop)
}

// startWorkerProcess starts the test binary as a worker of cfg in its own
// process; the test kills it (or it is killed at the test's end).
func startWorkerProcess(t testing.TB, cfg workerProcess) *exec.Cmd {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), workerProcessEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	// The worker dies with the test binary: if the test binary is killed
	// (a -timeout, a panic in another goroutine) an orphaned worker would
	// keep the test binary's stderr open and go test waiting for it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}
