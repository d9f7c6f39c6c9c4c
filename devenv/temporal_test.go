package devenv

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/config"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	sqliteschema "go.temporal.io/server/schema/sqlite"
)

// testLogger writes warnings and errors to the test log.
func testLogger(t *testing.T) *slog.Logger {
	t.Helper()
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := freeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

func greetWorkflow(ctx workflow.Context, name string) (string, error) {
	return "hello " + name, nil
}

func TestTemporalPersistsAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	opts := TemporalOptions{
		DBPath:    filepath.Join(t.TempDir(), ".fos", "temporal.db"),
		Address:   freeAddr(t),
		UIAddress: freeAddr(t),
		Namespace: "fos-test",
		Logger:    testLogger(t),
		// Not served here; the UI only passes it to the browser.
		CodecEndpoint: "http://127.0.0.1:1/codec",
	}
	const taskQueue = "devenv-test"
	workflowID := fmt.Sprintf("greet/%d", time.Now().UnixNano())
	orgKey := temporal.NewSearchAttributeKeyKeyword(OrganizationIDSearchAttribute)

	start := time.Now()
	srv, err := StartTemporal(ctx, opts)
	if err != nil {
		t.Fatalf("StartTemporal: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	t.Logf("temporal started in %v at %s, UI %s", time.Since(start), srv.Address(), srv.UIAddress())
	if srv.Address() != opts.Address || srv.UIAddress() != opts.UIAddress {
		t.Fatalf("addresses %s %s, want %s %s", srv.Address(), srv.UIAddress(), opts.Address, opts.UIAddress)
	}

	// Starting a second server on the same frontend address fails clearly.
	if _, err := StartTemporal(ctx, TemporalOptions{DBPath: filepath.Join(t.TempDir(), "other.db"), Address: opts.Address, DisableUI: true}); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("second server on a busy address: err = %v", err)
	}

	// The UI is told where the payload codec is.
	resp, err := http.Get("http://" + srv.UIAddress() + "/api/v1/settings")
	if err != nil {
		t.Fatalf("GET UI settings: %v", err)
	}
	settings, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if !strings.Contains(string(settings), opts.CodecEndpoint) {
		t.Fatalf("UI settings do not name the codec endpoint %s: %.500s", opts.CodecEndpoint, settings)
	}

	resp, err = http.Get("http://" + srv.UIAddress() + "/")
	if err != nil {
		t.Fatalf("GET UI: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(strings.ToLower(string(body)), "<html") {
		t.Fatalf("UI answered %d: %.200s", resp.StatusCode, body)
	}

	c := dialTest(t, srv.Address(), opts.Namespace)
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: opts.Namespace})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	if got := sa.GetCustomAttributes()[OrganizationIDSearchAttribute]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute %s has type %v, want Keyword (all: %v)", OrganizationIDSearchAttribute, got, sa.GetCustomAttributes())
	}

	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflow(greetWorkflow)
	if err := w.Start(); err != nil {
		t.Fatalf("worker start: %v", err)
	}
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    workflowID,
		TaskQueue:             taskQueue,
		TypedSearchAttributes: temporal.NewSearchAttributes(orgKey.ValueSet("org-1")),
	}, greetWorkflow, "fos")
	if err != nil {
		t.Fatalf("ExecuteWorkflow: %v", err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("workflow result: %v", err)
	}
	if out != "hello fos" {
		t.Fatalf("workflow result %q", out)
	}
	w.Stop()
	c.Close()
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}

	// Restart on the same database file and ports: the earlier run is still there.
	srv2, err := StartTemporal(ctx, opts)
	if err != nil {
		t.Fatalf("StartTemporal again: %v", err)
	}
	t.Cleanup(func() { _ = srv2.Stop() })
	c2 := dialTest(t, srv2.Address(), opts.Namespace)
	defer c2.Close()

	desc, err := c2.DescribeWorkflowExecution(ctx, workflowID, "")
	if err != nil {
		t.Fatalf("DescribeWorkflowExecution after restart: %v", err)
	}
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("status after restart %v", st)
	}
	if err := c2.GetWorkflow(ctx, workflowID, "").Get(ctx, &out); err != nil || out != "hello fos" {
		t.Fatalf("result after restart: %q, %v", out, err)
	}
	// Visibility finds it through the search attribute.
	query := fmt.Sprintf("%s = 'org-1' AND WorkflowId = '%s'", OrganizationIDSearchAttribute, workflowID)
	deadline := time.Now().Add(10 * time.Second)
	for {
		list, err := c2.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: opts.Namespace, Query: query})
		if err != nil {
			t.Fatalf("ListWorkflow: %v", err)
		}
		if len(list.GetExecutions()) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ListWorkflow %q found %d executions", query, len(list.GetExecutions()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	sa, err = c2.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: opts.Namespace})
	if err != nil {
		t.Fatalf("ListSearchAttributes after restart: %v", err)
	}
	if got := sa.GetCustomAttributes()[OrganizationIDSearchAttribute]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute after restart has type %v", got)
	}
	c2.Close()
	if err := srv2.Stop(); err != nil {
		t.Fatalf("Stop after restart: %v", err)
	}
}

// A database whose namespace lacks the search attribute (made by an older
// version, say) gets it on start.
func TestTemporalAddsSearchAttributeToExistingNamespace(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "temporal.db")
	sqlConf := &config.SQL{PluginName: sqliteplugin.PluginName, DatabaseName: dbPath, ConnectAttributes: map[string]string{"mode": "rwc"}}
	if err := sqliteschema.SetupSchema(sqlConf); err != nil {
		t.Fatal(err)
	}
	nsConf, err := sqliteschema.NewNamespaceConfig(temporalClusterName, "old", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sqliteschema.CreateNamespaces(sqlConf, nsConf); err != nil {
		t.Fatal(err)
	}

	srv, err := StartTemporal(ctx, TemporalOptions{DBPath: dbPath, Address: freeAddr(t), Namespace: "old", DisableUI: true, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("StartTemporal: %v", err)
	}
	defer func() { _ = srv.Stop() }()
	if srv.UIAddress() != "" {
		t.Fatalf("UIAddress %q with the UI disabled", srv.UIAddress())
	}
	c := dialTest(t, srv.Address(), "old")
	defer c.Close()
	sa, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "old"})
	if err != nil {
		t.Fatalf("ListSearchAttributes: %v", err)
	}
	if got := sa.GetCustomAttributes()[OrganizationIDSearchAttribute]; got != enumspb.INDEXED_VALUE_TYPE_KEYWORD {
		t.Fatalf("search attribute %s has type %v, want Keyword", OrganizationIDSearchAttribute, got)
	}
	// Made with a 24 h retention: brought to the dev retention.
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "old"})
	if err != nil {
		t.Fatalf("DescribeNamespace: %v", err)
	}
	if got := desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration(); got != DevRetention {
		t.Fatalf("retention %v, want %v", got, DevRetention)
	}
}

func dialTest(t *testing.T, addr, namespace string) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  addr,
		Namespace: namespace,
		Logger:    sdklog.NewStructuredLogger(testLogger(t)),
	})
	if err != nil {
		t.Fatalf("client.Dial: %v", err)
	}
	return c
}

func TestSplitHostPort(t *testing.T) {
	for _, tc := range []struct {
		in       string
		wantHost string
		wantPort int
		wantErr  bool
	}{
		{"127.0.0.1:7233", "127.0.0.1", 7233, false},
		{"localhost:8233", "127.0.0.1", 8233, false},
		{":7233", "127.0.0.1", 7233, false},
		{"0.0.0.0:7233", "0.0.0.0", 7233, false},
		{"[::1]:7233", "::1", 7233, false},
		{"example.com:7233", "", 0, true},
		{"127.0.0.1", "", 0, true},
		{"127.0.0.1:0", "", 0, true},
		{"127.0.0.1:x", "", 0, true},
	} {
		host, port, err := splitHostPort(tc.in)
		if (err != nil) != tc.wantErr || host != tc.wantHost || port != tc.wantPort {
			t.Errorf("splitHostPort(%q) = %q, %d, %v", tc.in, host, port, err)
		}
	}
}
