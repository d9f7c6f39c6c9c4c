package config

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/tlstest"
)

func TestTemporalDefaults(t *testing.T) {
	c, err := Load(ModeDev, env(nil))
	require.NoError(t, err)
	tc := c.Temporal
	require.False(t, tc.TLSEnabled())
	require.Equal(t, "fos-bulk", tc.BulkTaskQueue)
	require.Equal(t, DefaultWorkerTuning, tc.Worker)
	require.Equal(t, DefaultBulkWorkerTuning, tc.BulkWorker)
	require.Equal(t, 30*time.Second, tc.StopTimeout)
	require.Equal(t, DefaultDispatchYield, tc.DispatchYield)
	require.Empty(t, tc.MetricsAddr, "metrics are off unless FOS_METRICS_ADDR is set")
	require.Empty(t, tc.CodecAddr)
	require.Empty(t, tc.DebugAddr, "profiles are off unless FOS_DEBUG_ADDR is set")
}

func TestTemporalSettings(t *testing.T) {
	pki := tlstest.Generate(t)
	c, err := Load(ModeDev, env(map[string]string{
		"TEMPORAL_TLS_CERT": pki.ClientCert, "TEMPORAL_TLS_KEY": pki.ClientKey, "TEMPORAL_TLS_CA": pki.CA,
		"TEMPORAL_TLS_SERVER_NAME": "temporal.test", "TEMPORAL_API_KEY": "k",
		"FOS_BULK_TASK_QUEUE": "bulk", "FOS_WORKER_MAX_ACTIVITIES": "7", "FOS_BULK_WORKER_MAX_WORKFLOW_TASKS": "3",
		"FOS_BULK_WORKER_ACTIVITIES_PER_SECOND": "2.5", "FOS_WORKER_STOP_TIMEOUT": "2m",
		"FOS_DISPATCH_YIELD_RATE": "300", "FOS_DISPATCH_IMPORT_YIELD_RATE": "0",
		"FOS_METRICS_ADDR": "127.0.0.1:0", "FOS_DEBUG_ADDR": "127.0.0.1:6060", "FOS_PAYLOAD_KEY": "Zm9zIHRlc3QgcGF5bG9hZCBrZXksIG5vdCBzZWNyZXQ=",
		"FOS_PAYLOAD_OLD_KEYS": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=, ", "FOS_CODEC_ORIGINS": "http://127.0.0.1:8233,https://ui.example.com",
	}))
	require.NoError(t, err)
	tc := c.Temporal
	require.True(t, tc.TLSEnabled())
	require.Equal(t, "temporal.test", tc.TLSServerName)
	require.Equal(t, "127.0.0.1:6060", tc.DebugAddr)
	require.Equal(t, "bulk", tc.BulkTaskQueue)
	require.Equal(t, 7, tc.Worker.MaxConcurrentActivities)
	require.Equal(t, 3, tc.BulkWorker.MaxConcurrentWorkflowTasks)
	require.Equal(t, 2.5, tc.BulkWorker.ActivitiesPerSecond)
	require.Equal(t, 2*time.Minute, tc.StopTimeout)
	require.Equal(t, DispatchYield{Interactive: 300, Import: 0}, tc.DispatchYield)
	require.Len(t, tc.PayloadOldKeys, 1)
	require.Equal(t, []string{"http://127.0.0.1:8233", "https://ui.example.com"}, tc.CodecOrigins)
}

// problems loads with m and returns the problem lines.
func problems(t *testing.T, m map[string]string) Problems {
	t.Helper()
	_, err := Load(ModeDev, env(m))
	var p Problems
	require.True(t, errors.As(err, &p), "want problems, got %v", err)
	return p
}

func TestTemporalTLSProblemsOneLineEach(t *testing.T) {
	pki := tlstest.Generate(t)
	missing := filepath.Join(t.TempDir(), "nope.pem")

	p := problems(t, map[string]string{"TEMPORAL_TLS_CERT": pki.ClientCert})
	require.Len(t, p, 1)
	require.Contains(t, p[0], "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together")

	p = problems(t, map[string]string{"TEMPORAL_TLS_KEY": pki.ClientKey})
	require.Len(t, p, 1)
	require.Contains(t, p[0], "set both (mTLS) or neither")

	p = problems(t, map[string]string{"TEMPORAL_TLS_CERT": missing, "TEMPORAL_TLS_KEY": pki.ClientKey, "TEMPORAL_TLS_CA": missing})
	require.Len(t, p, 2)
	require.Contains(t, p[0], `TEMPORAL_TLS_CERT="`+missing+`": cannot be read`)
	require.Contains(t, p[1], `TEMPORAL_TLS_CA="`+missing+`": cannot be read`)

	// A certificate with another certificate's key; a CA file with a key in it.
	p = problems(t, map[string]string{"TEMPORAL_TLS_CERT": pki.ClientCert, "TEMPORAL_TLS_KEY": pki.ServerKey, "TEMPORAL_TLS_CA": pki.ClientKey})
	require.Len(t, p, 2)
	require.Contains(t, p[0], "not a matching PEM certificate and key")
	require.Contains(t, p[1], "holds no PEM certificate")
}

func TestTemporalWorkerProblems(t *testing.T) {
	p := problems(t, map[string]string{
		"FOS_BULK_TASK_QUEUE": "fos", "FOS_WORKER_MAX_ACTIVITIES": "0", "FOS_BULK_WORKER_MAX_WORKFLOW_TASKS": "many",
		"FOS_WORKER_ACTIVITIES_PER_SECOND": "-1", "FOS_WORKER_STOP_TIMEOUT": "soon", "FOS_METRICS_ADDR": "9090",
		"FOS_PAYLOAD_KEY": "short", "FOS_PAYLOAD_OLD_KEYS": "c2hvcnQ=", "FOS_CODEC_ORIGINS": "ui.example.com", "FOS_DEBUG_ADDR": "6060",
		"FOS_DISPATCH_YIELD_RATE": "fast", "FOS_DISPATCH_IMPORT_YIELD_RATE": "-5",
	})
	for _, want := range []string{
		"FOS_BULK_TASK_QUEUE=\"fos\": must differ from FOS_TASK_QUEUE",
		"FOS_WORKER_MAX_ACTIVITIES=\"0\"", "FOS_BULK_WORKER_MAX_WORKFLOW_TASKS=\"many\"",
		"FOS_WORKER_ACTIVITIES_PER_SECOND=\"-1\"", "FOS_WORKER_STOP_TIMEOUT=\"soon\"", "FOS_METRICS_ADDR=\"9090\"",
		"FOS_PAYLOAD_KEY: must be base64", "FOS_PAYLOAD_OLD_KEYS: key 1", "FOS_CODEC_ORIGINS: \"ui.example.com\"", "FOS_DEBUG_ADDR=\"6060\"",
		"FOS_DISPATCH_YIELD_RATE=\"fast\"", "FOS_DISPATCH_IMPORT_YIELD_RATE=\"-5\"",
	} {
		require.Contains(t, p.Error(), want)
	}
	require.Len(t, p, 12)
}

// In production the payload key is refused when it is not random bytes
// (the tests' own key is printable text).
func TestTemporalPayloadKeyMustBeRandomOutsideDev(t *testing.T) {
	_, err := Load(ModeWorker, env(map[string]string{
		"DATABASE_URL": "postgres://fos@db/fos", "TEMPORAL_ADDRESS": "temporal:7233",
		"FOS_ENCRYPTION_KEY": "q3bU9x2ZQmJ0r8Yp1tLwVd6Hc5sNfKaE7gRiOjTzXyM=",
		"FOS_PAYLOAD_KEY":    "Zm9zIHRlc3QgcGF5bG9hZCBrZXksIG5vdCBzZWNyZXQ=",
	}))
	require.ErrorContains(t, err, "FOS_PAYLOAD_KEY: decodes to printable text")
}

// Inbound platform webhooks run on their own task queue with their own
// worker tuning, so a storm of them never queues in front of a label
// purchase on the main queue (issue 22 item 8).
func TestInboundTaskQueue(t *testing.T) {
	c, err := Load(ModeDev, env(nil))
	require.NoError(t, err)
	require.Equal(t, "fos-inbound", c.Temporal.InboundTaskQueue)
	require.NotEqual(t, c.TaskQueue, c.Temporal.InboundTaskQueue)
	require.Equal(t, DefaultInboundWorkerTuning, c.Temporal.InboundWorker)

	c, err = Load(ModeDev, env(map[string]string{"FOS_INBOUND_TASK_QUEUE": "hooks", "FOS_INBOUND_WORKER_MAX_ACTIVITIES": "4"}))
	require.NoError(t, err)
	require.Equal(t, "hooks", c.Temporal.InboundTaskQueue)
	require.Equal(t, 4, c.Temporal.InboundWorker.MaxConcurrentActivities)

	for _, q := range []string{"fos", "fos-bulk"} {
		p := problems(t, map[string]string{"FOS_INBOUND_TASK_QUEUE": q})
		require.Contains(t, p.Error(), fmt.Sprintf("FOS_INBOUND_TASK_QUEUE=%q: must differ", q))
	}
}
