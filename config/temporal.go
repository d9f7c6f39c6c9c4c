package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/fos-dev/fos/payloadcodec"
)

// Temporal is how the service reaches a production Temporal cluster (TLS,
// mTLS, API key) and runs its workers: per-queue concurrency, the bulk
// task queue, the stop timeout, SDK metrics, and the payload codec.
type Temporal struct {
	// TLSCert and TLSKey are PEM files of the client certificate (mTLS);
	// both or neither. TLSCA is a PEM bundle of the CAs that sign the
	// server's certificate (default: the system roots). TLSServerName
	// overrides the name checked in the server's certificate. Any of them
	// turns TLS on.
	TLSCert       string
	TLSKey        string
	TLSCA         string
	TLSServerName string
	// APIKey authenticates to Temporal Cloud (or a server that accepts API
	// keys); it turns TLS on.
	APIKey string

	// BulkTaskQueue serves bulk work (rate comparisons; later syncs and
	// operations), so interactive work on the main task queue never waits
	// behind it.
	BulkTaskQueue string
	// InboundTaskQueue serves inbound platform webhooks (InboundWebhook
	// runs), so a storm of them never delays interactive work such as a
	// label purchase a client waits for.
	InboundTaskQueue string
	// Worker tunes the worker of the main task queue, BulkWorker the
	// worker of the bulk task queue, InboundWorker the worker of the
	// inbound webhook queue.
	Worker        WorkerTuning
	BulkWorker    WorkerTuning
	InboundWorker WorkerTuning
	// StopTimeout is how long a stopping worker lets in-flight activities
	// finish before their contexts are cancelled.
	StopTimeout time.Duration
	// DispatchYield paces a worker process's dispatch drainers while a
	// label purchase or an import page runs in it (activities.PriorityGate).
	DispatchYield DispatchYield

	// MetricsAddr is where the Temporal SDK metrics are served in
	// Prometheus format (GET /metrics); empty: not served.
	MetricsAddr string
	// DebugAddr is where a process serves Go's profiles
	// (GET /debug/pprof/...); empty: not served. Keep it on loopback or an
	// operators' network: profiles show the process's memory.
	DebugAddr string

	// PayloadKey is base64 of the 32-byte AES key of the payload codec;
	// empty: derived from FOS_ENCRYPTION_KEY. PayloadOldKeys still decode.
	PayloadKey     string
	PayloadOldKeys []string
	// CodecAddr is where `fos serve` serves the remote codec endpoint for
	// the Temporal UI (POST /codec/encode, /codec/decode); empty: not
	// served. CodecToken, when set, is required as a bearer token;
	// CodecOrigins are the UI origins allowed by CORS.
	CodecAddr    string
	CodecToken   string
	CodecOrigins []string
}

// TLSEnabled reports whether the connection to Temporal uses TLS.
func (t Temporal) TLSEnabled() bool {
	return t.TLSCert != "" || t.TLSCA != "" || t.TLSServerName != "" || t.APIKey != ""
}

// WorkerTuning are the options of one task queue's worker.
type WorkerTuning struct {
	// MaxConcurrentActivities and MaxConcurrentWorkflowTasks bound the
	// activities and workflow tasks this process runs at once.
	MaxConcurrentActivities    int
	MaxConcurrentWorkflowTasks int
	// ActivitiesPerSecond bounds the activities this process starts per
	// second (0: no bound).
	ActivitiesPerSecond float64
}

// DispatchYield are the assignments per second a worker process's
// dispatch drainers keep while work with priority runs in the process:
// Interactive while a label purchase's steps run (FOS_DISPATCH_YIELD_RATE),
// Import while a sync's pages run (FOS_DISPATCH_IMPORT_YIELD_RATE); 0: the
// drainers do not yield to it.
type DispatchYield struct {
	Interactive float64
	Import      float64
}

// DefaultDispatchYield is activities.DefaultInteractiveYieldRate and
// activities.DefaultImportYieldRate (a test in cmd/fos keeps them equal).
var DefaultDispatchYield = DispatchYield{Interactive: 550, Import: 0}

// Defaults of the worker options.
const (
	DefaultBulkTaskQueue     = "fos-bulk"
	DefaultInboundTaskQueue  = "fos-inbound"
	DefaultWorkerStopTimeout = 30 * time.Second
)

// Default tunings: the interactive queue takes many short tasks; the bulk
// queue fewer at a time (each may run for minutes against carriers).
var (
	DefaultWorkerTuning     = WorkerTuning{MaxConcurrentActivities: 100, MaxConcurrentWorkflowTasks: 100}
	DefaultBulkWorkerTuning = WorkerTuning{MaxConcurrentActivities: 20, MaxConcurrentWorkflowTasks: 20}
	// Inbound webhooks: short runs, many at once in a storm, bounded so a
	// storm takes its share of the process and no more.
	DefaultInboundWorkerTuning = WorkerTuning{MaxConcurrentActivities: 20, MaxConcurrentWorkflowTasks: 20}
)

// loadTemporal reads and checks the Temporal settings, adding one line per
// problem to p.
func loadTemporal(get func(k, def string) string, mode Mode, taskQueue string, p Problems) (Temporal, Problems) {
	t := Temporal{
		TLSCert:          get("TEMPORAL_TLS_CERT", ""),
		TLSKey:           get("TEMPORAL_TLS_KEY", ""),
		TLSCA:            get("TEMPORAL_TLS_CA", ""),
		TLSServerName:    get("TEMPORAL_TLS_SERVER_NAME", ""),
		APIKey:           get("TEMPORAL_API_KEY", ""),
		BulkTaskQueue:    get("FOS_BULK_TASK_QUEUE", DefaultBulkTaskQueue),
		InboundTaskQueue: get("FOS_INBOUND_TASK_QUEUE", DefaultInboundTaskQueue),
		MetricsAddr:      get("FOS_METRICS_ADDR", ""),
		DebugAddr:        get("FOS_DEBUG_ADDR", ""),
		PayloadKey:       get("FOS_PAYLOAD_KEY", ""),
		CodecAddr:        get("FOS_CODEC_ADDR", ""),
		CodecToken:       get("FOS_CODEC_TOKEN", ""),
	}
	t.PayloadOldKeys = splitList(get("FOS_PAYLOAD_OLD_KEYS", ""))
	t.CodecOrigins = splitList(get("FOS_CODEC_ORIGINS", ""))

	// TLS: readable files, a certificate with its key, a CA bundle that
	// holds certificates.
	switch {
	case (t.TLSCert == "") != (t.TLSKey == ""):
		p = append(p, "TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (mTLS) or neither")
	case t.TLSCert != "":
		certOK := readable(&p, "TEMPORAL_TLS_CERT", t.TLSCert)
		keyOK := readable(&p, "TEMPORAL_TLS_KEY", t.TLSKey)
		if certOK && keyOK {
			if _, err := tls.LoadX509KeyPair(t.TLSCert, t.TLSKey); err != nil {
				p = append(p, fmt.Sprintf("TEMPORAL_TLS_CERT/TEMPORAL_TLS_KEY: not a matching PEM certificate and key: %v", err))
			}
		}
	}
	if t.TLSCA != "" && readable(&p, "TEMPORAL_TLS_CA", t.TLSCA) {
		raw, _ := os.ReadFile(t.TLSCA)
		if !x509.NewCertPool().AppendCertsFromPEM(raw) {
			p = append(p, fmt.Sprintf("TEMPORAL_TLS_CA=%q: holds no PEM certificate", t.TLSCA))
		}
	}

	if t.BulkTaskQueue == taskQueue {
		p = append(p, fmt.Sprintf("FOS_BULK_TASK_QUEUE=%q: must differ from FOS_TASK_QUEUE, or bulk work queues in front of interactive work", t.BulkTaskQueue))
	}
	t.Worker = loadTuning(get, &p, "FOS_WORKER_", DefaultWorkerTuning)
	t.BulkWorker = loadTuning(get, &p, "FOS_BULK_WORKER_", DefaultBulkWorkerTuning)
	t.InboundWorker = loadTuning(get, &p, "FOS_INBOUND_WORKER_", DefaultInboundWorkerTuning)
	if t.InboundTaskQueue == taskQueue || t.InboundTaskQueue == t.BulkTaskQueue {
		p = append(p, fmt.Sprintf("FOS_INBOUND_TASK_QUEUE=%q: must differ from FOS_TASK_QUEUE and FOS_BULK_TASK_QUEUE, or a webhook storm queues in front of other work", t.InboundTaskQueue))
	}
	t.DispatchYield = DefaultDispatchYield
	for _, r := range []struct {
		name string
		into *float64
	}{{"FOS_DISPATCH_YIELD_RATE", &t.DispatchYield.Interactive}, {"FOS_DISPATCH_IMPORT_YIELD_RATE", &t.DispatchYield.Import}} {
		v := get(r.name, strconv.FormatFloat(*r.into, 'f', -1, 64))
		if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
			p = append(p, fmt.Sprintf("%s=%q: must be a number ≥ 0 (assignments per second; 0: the drainers do not yield)", r.name, v))
		} else {
			*r.into = f
		}
	}
	st := get("FOS_WORKER_STOP_TIMEOUT", DefaultWorkerStopTimeout.String())
	if d, err := time.ParseDuration(st); err != nil || d <= 0 {
		p = append(p, fmt.Sprintf("FOS_WORKER_STOP_TIMEOUT=%q: must be a positive duration such as 30s", st))
	} else {
		t.StopTimeout = d
	}

	for _, a := range [][2]string{{"FOS_METRICS_ADDR", t.MetricsAddr}, {"FOS_CODEC_ADDR", t.CodecAddr}, {"FOS_DEBUG_ADDR", t.DebugAddr}} {
		if a[1] == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(a[1]); err != nil {
			p = append(p, fmt.Sprintf("%s=%q: must be host:port", a[0], a[1]))
		}
	}
	if t.PayloadKey != "" {
		if _, err := payloadcodec.ParseKey(t.PayloadKey); err != nil {
			p = append(p, "FOS_PAYLOAD_KEY: must be base64 of exactly 32 bytes")
		} else if why := weakEncryptionKey(t.PayloadKey); why != "" && (mode == ModeServe || mode == ModeWorker) {
			p = append(p, "FOS_PAYLOAD_KEY: "+why+"; generate one with `openssl rand -base64 32`")
		}
	}
	for i, k := range t.PayloadOldKeys {
		if _, err := payloadcodec.ParseKey(k); err != nil {
			p = append(p, fmt.Sprintf("FOS_PAYLOAD_OLD_KEYS: key %d must be base64 of exactly 32 bytes", i+1))
		}
	}
	for _, o := range t.CodecOrigins {
		if u, err := url.Parse(o); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
			p = append(p, fmt.Sprintf("FOS_CODEC_ORIGINS: %q must be an origin such as https://temporal-ui.example.com", o))
		}
	}
	return t, p
}

func loadTuning(get func(k, def string) string, p *Problems, prefix string, def WorkerTuning) WorkerTuning {
	t := def
	positive := func(name string, into *int) {
		v := get(prefix+name, strconv.Itoa(*into))
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			*p = append(*p, fmt.Sprintf("%s%s=%q: must be a positive whole number", prefix, name, v))
			return
		}
		*into = n
	}
	positive("MAX_ACTIVITIES", &t.MaxConcurrentActivities)
	positive("MAX_WORKFLOW_TASKS", &t.MaxConcurrentWorkflowTasks)
	v := get(prefix+"ACTIVITIES_PER_SECOND", "0")
	if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
		*p = append(*p, fmt.Sprintf("%sACTIVITIES_PER_SECOND=%q: must be a number ≥ 0 (0: no bound)", prefix, v))
	} else {
		t.ActivitiesPerSecond = f
	}
	return t
}

// readable reports whether path can be read, adding a problem if not.
func readable(p *Problems, name, path string) bool {
	f, err := os.Open(path)
	if err != nil {
		*p = append(*p, fmt.Sprintf("%s=%q: cannot be read: %v", name, path, unwrapPathErr(err)))
		return false
	}
	f.Close()
	return true
}

func unwrapPathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}
