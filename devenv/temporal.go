package devenv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uiserveroptions "github.com/temporalio/ui-server/v2/server/server_options"
	enumspb "go.temporal.io/api/enums/v1"
	namespacepb "go.temporal.io/api/namespace/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/server/common/authorization"
	"go.temporal.io/server/common/cluster"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/membership/static"
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/primitives"
	sqliteschema "go.temporal.io/server/schema/sqlite"
	"go.temporal.io/server/temporal"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Defaults of TemporalOptions.
const (
	DefaultTemporalAddress   = "127.0.0.1:7233"
	DefaultTemporalUIAddress = "127.0.0.1:8233"
	DefaultTemporalNamespace = "default"
	// DevRetention is how long the dev namespace keeps closed runs.
	DevRetention = 7 * 24 * time.Hour
)

// OrganizationIDSearchAttribute is the custom search attribute (Keyword)
// StartTemporal registers in the namespace.
const OrganizationIDSearchAttribute = "OrganizationId"

const (
	temporalClusterName  = "active"
	temporalReadyTimeout = 60 * time.Second
)

// TemporalOptions configures StartTemporal.
type TemporalOptions struct {
	// DBPath is the SQLite file holding all Temporal state (required). It is
	// created, with its directory, on first use and reused afterwards, so
	// workflow history survives restarts.
	DBPath string
	// Address is the frontend gRPC host:port (default 127.0.0.1:7233). The
	// host must be an IP address or "localhost". A busy port is an error.
	Address string
	// Namespace is registered when missing (default "default").
	Namespace string
	// UIAddress is where the Temporal Web UI serves (default 127.0.0.1:8233).
	UIAddress string
	// DisableUI starts no Web UI.
	DisableUI bool
	// CodecEndpoint is the remote payload codec the Web UI decodes
	// payloads with (the browser POSTs to <endpoint>/decode); empty: none.
	CodecEndpoint string
	// Logger receives Temporal's own logs at warn level and above (nil
	// discards them).
	Logger *slog.Logger
}

// Temporal is an embedded Temporal dev server (all services in this
// process, SQLite persistence) with its Web UI.
type Temporal struct {
	address   string
	uiAddress string
	namespace string
	server    temporal.Server
	ui        *uiserver.Server
	uiDone    chan struct{}
	logger    *slog.Logger
	logLevel  *slog.LevelVar

	stopOnce sync.Once
	stopErr  error
}

// Address returns the frontend host:port for clients and workers.
func (t *Temporal) Address() string { return t.address }

// UIAddress returns the Web UI host:port ("" when the UI is disabled).
func (t *Temporal) UIAddress() string { return t.uiAddress }

// Namespace returns the namespace StartTemporal registered.
func (t *Temporal) Namespace() string { return t.namespace }

// StartTemporal starts an embedded Temporal dev server, like `temporal
// server start-dev --db-filename`, registers the namespace and the
// OrganizationId search attribute, and starts the Web UI. It returns once
// the frontend answers. The caller must call Stop.
func StartTemporal(ctx context.Context, opts TemporalOptions) (*Temporal, error) {
	if opts.DBPath == "" {
		return nil, errors.New("devenv: temporal DBPath is empty")
	}
	if opts.Address == "" {
		opts.Address = DefaultTemporalAddress
	}
	if opts.Namespace == "" {
		opts.Namespace = DefaultTemporalNamespace
	}
	if opts.UIAddress == "" && !opts.DisableUI {
		opts.UIAddress = DefaultTemporalUIAddress
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("component", "temporal")

	frontendIP, frontendPort, err := splitHostPort(opts.Address)
	if err != nil {
		return nil, fmt.Errorf("devenv: temporal address: %w", err)
	}
	if err := checkPortFree(frontendIP, frontendPort); err != nil {
		return nil, fmt.Errorf("devenv: temporal frontend address %s is not available (is another Temporal server running?): %w", opts.Address, err)
	}
	var uiIP string
	var uiPort int
	if !opts.DisableUI {
		if uiIP, uiPort, err = splitHostPort(opts.UIAddress); err != nil {
			return nil, fmt.Errorf("devenv: temporal UI address: %w", err)
		}
		if err := checkPortFree(uiIP, uiPort); err != nil {
			return nil, fmt.Errorf("devenv: temporal UI address %s is not available: %w", opts.UIAddress, err)
		}
	}
	// Clients dial a concrete address even when the frontend binds all interfaces.
	dialIP := frontendIP
	if ip := net.ParseIP(frontendIP); ip != nil && ip.IsUnspecified() {
		dialIP = "127.0.0.1"
	}
	t := &Temporal{
		address:   net.JoinHostPort(dialIP, strconv.Itoa(frontendPort)),
		namespace: opts.Namespace,
		logger:    logger,
	}

	dbPath, err := filepath.Abs(opts.DBPath)
	if err != nil {
		return nil, fmt.Errorf("devenv: resolve temporal DBPath: %w", err)
	}
	sqlConf, err := prepareSQLite(dbPath, opts.Namespace)
	if err != nil {
		return nil, err
	}

	conf, hosts, err := temporalConfig(sqlConf, frontendIP, frontendPort, t.address)
	if err != nil {
		return nil, err
	}
	// Quiet while the services come up and find each other, then warn level.
	logLevel := &slog.LevelVar{}
	logLevel.Set(slog.LevelError)
	tlogger := newTemporalLogger(logger, logLevel)
	authorizer, err := authorization.GetAuthorizerFromConfig(&conf.Global.Authorization)
	if err != nil {
		return nil, fmt.Errorf("devenv: temporal authorizer: %w", err)
	}
	claimMapper, err := authorization.GetClaimMapperFromConfig(&conf.Global.Authorization, tlogger)
	if err != nil {
		return nil, fmt.Errorf("devenv: temporal claim mapper: %w", err)
	}
	dynConf := DynamicConfig()
	server, err := temporal.NewServer(
		temporal.WithConfig(conf),
		temporal.ForServices(temporal.DefaultServices),
		temporal.WithStaticHosts(hosts),
		temporal.WithLogger(tlogger),
		temporal.WithAuthorizer(authorizer),
		temporal.WithClaimMapper(func(*config.Config) authorization.ClaimMapper { return claimMapper }),
		temporal.WithDynamicConfigClient(dynConf),
	)
	if err != nil {
		return nil, fmt.Errorf("devenv: create temporal server: %w", err)
	}
	if err := server.Start(); err != nil {
		if stopErr := server.Stop(); stopErr != nil {
			logger.Warn("stop temporal after failed start", "error", stopErr)
		}
		return nil, fmt.Errorf("devenv: start temporal server: %w", err)
	}
	t.server = server
	t.logLevel = logLevel

	readyCtx, cancel := context.WithTimeout(ctx, temporalReadyTimeout)
	defer cancel()
	if err := t.setupNamespace(readyCtx, DevRetention); err != nil {
		_ = t.Stop()
		return nil, err
	}

	if !opts.DisableUI {
		if err := t.startUI(readyCtx, uiIP, uiPort, opts.Namespace, opts.CodecEndpoint); err != nil {
			_ = t.Stop()
			return nil, err
		}
	}
	logLevel.Set(slog.LevelWarn)
	logger.Info("temporal ready", "address", t.address, "ui", t.uiURL(), "namespace", t.namespace, "db", dbPath)
	return t, nil
}

// Stop stops the Web UI and the server. It is idempotent.
func (t *Temporal) Stop() error {
	t.stopOnce.Do(func() {
		// While it shuts down (and afterwards: a stopped server leaves a
		// few goroutines retrying) the server logs warnings and
		// "context canceled" errors routinely; Stop returns what matters.
		if t.logLevel != nil {
			t.logLevel.Set(slog.LevelError + 4)
		}
		if t.ui != nil {
			t.ui.Stop()
			select {
			case <-t.uiDone:
			case <-time.After(5 * time.Second):
			}
		}
		if t.server != nil {
			if err := t.server.Stop(); err != nil {
				t.stopErr = fmt.Errorf("devenv: stop temporal server: %w", err)
			}
		}
		t.logger.Info("temporal stopped")
	})
	return t.stopErr
}

func (t *Temporal) uiURL() string {
	if t.uiAddress == "" {
		return ""
	}
	return "http://" + t.uiAddress
}

// prepareSQLite creates the database file and schema on first use and
// pre-registers the namespace (a no-op when it exists) with the
// OrganizationId search attribute.
func prepareSQLite(dbPath, namespace string) (*config.SQL, error) {
	sqlConf := &config.SQL{
		PluginName:        sqliteplugin.PluginName,
		DatabaseName:      dbPath,
		ConnectAttributes: map[string]string{"mode": "rwc"},
	}
	if _, err := os.Stat(dbPath); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(dbPath), 0o755); err != nil {
			return nil, fmt.Errorf("devenv: create temporal database directory: %w", err)
		}
		if err := sqliteschema.SetupSchema(sqlConf); err != nil {
			_ = os.Remove(dbPath) // a half-made schema would break the next start
			return nil, fmt.Errorf("devenv: set up temporal sqlite schema in %s: %w", dbPath, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("devenv: stat temporal database: %w", err)
	}
	nsConf, err := sqliteschema.NewNamespaceConfig(temporalClusterName, namespace, false,
		map[string]enumspb.IndexedValueType{OrganizationIDSearchAttribute: enumspb.INDEXED_VALUE_TYPE_KEYWORD})
	if err != nil {
		return nil, fmt.Errorf("devenv: temporal namespace config: %w", err)
	}
	nsConf.Detail.Config.Retention = durationpb.New(DevRetention)
	if err := sqliteschema.CreateNamespaces(sqlConf, nsConf); err != nil {
		return nil, fmt.Errorf("devenv: register temporal namespace %q: %w", namespace, err)
	}
	return sqlConf, nil
}

// temporalConfig builds a single-host configuration: the frontend on the
// requested address, history, matching and worker on free loopback ports,
// membership through static hosts (no ringpop).
func temporalConfig(sqlConf *config.SQL, frontendIP string, frontendPort int, dialAddress string) (*config.Config, map[primitives.ServiceName]static.Hosts, error) {
	conf := &config.Config{}
	conf.Global.Membership.MaxJoinDuration = 30 * time.Second
	conf.Global.Membership.BroadcastAddress = "127.0.0.1"
	conf.Persistence.DefaultStore = "sqlite-default"
	conf.Persistence.VisibilityStore = "sqlite-default"
	conf.Persistence.NumHistoryShards = 1
	conf.Persistence.DataStores = map[string]config.DataStore{"sqlite-default": {SQL: sqlConf}}
	conf.ClusterMetadata = &cluster.Config{
		EnableGlobalNamespace:    false,
		FailoverVersionIncrement: 10,
		MasterClusterName:        temporalClusterName,
		CurrentClusterName:       temporalClusterName,
		ClusterInformation: map[string]cluster.ClusterInformation{
			temporalClusterName: {
				Enabled:                true,
				InitialFailoverVersion: 1,
				RPCAddress:             dialAddress,
			},
		},
	}
	conf.DCRedirectionPolicy.Policy = "noop"
	conf.Archival.History.State = "disabled"
	conf.Archival.Visibility.State = "disabled"
	conf.NamespaceDefaults.Archival.History.State = "disabled"
	conf.NamespaceDefaults.Archival.Visibility.State = "disabled"
	conf.PublicClient.HostPort = dialAddress

	hosts := map[primitives.ServiceName]static.Hosts{
		primitives.FrontendService: static.SingleLocalHost(dialAddress),
	}
	conf.Services = map[string]config.Service{
		string(primitives.FrontendService): {RPC: config.RPC{GRPCPort: frontendPort, BindOnIP: frontendIP}},
	}
	for _, svc := range []primitives.ServiceName{primitives.HistoryService, primitives.MatchingService, primitives.WorkerService} {
		port, err := freeLoopbackPort()
		if err != nil {
			return nil, nil, err
		}
		conf.Services[string(svc)] = config.Service{RPC: config.RPC{GRPCPort: port, BindOnIP: "127.0.0.1"}}
		hosts[svc] = static.SingleLocalHost(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	}
	return conf, hosts, nil
}

// setupNamespace waits until the frontend answers, then makes sure the
// namespace exists with the given retention and has the OrganizationId
// search attribute.
func (t *Temporal) setupNamespace(ctx context.Context, retention time.Duration) error {
	c, err := dialWithRetry(ctx, client.Options{
		HostPort:  t.address,
		Namespace: t.namespace,
		Logger:    sdklog.NewStructuredLogger(slog.New(newLevelHandler(t.logger.Handler(), slog.LevelWarn))),
	})
	if err != nil {
		return fmt.Errorf("devenv: temporal frontend %s did not answer: %w", t.address, err)
	}
	defer c.Close()

	// The namespace was pre-registered in SQLite; register it through the
	// API only if that somehow did not happen.
	desc, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: t.namespace})
	var notFound *serviceerror.NamespaceNotFound
	if errors.As(err, &notFound) {
		_, err = c.WorkflowService().RegisterNamespace(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace:                        t.namespace,
			WorkflowExecutionRetentionPeriod: durationpb.New(retention),
		})
		var exists *serviceerror.NamespaceAlreadyExists
		if errors.As(err, &exists) {
			err = nil
		}
	} else if err == nil && desc.GetConfig().GetWorkflowExecutionRetentionTtl().AsDuration() != retention {
		// A database made by an older fos dev: bring the retention up to date.
		_, err = c.WorkflowService().UpdateNamespace(ctx, &workflowservice.UpdateNamespaceRequest{
			Namespace: t.namespace,
			Config:    &namespacepb.NamespaceConfig{WorkflowExecutionRetentionTtl: durationpb.New(retention)},
		})
	}
	if err != nil {
		return fmt.Errorf("devenv: temporal namespace %q: %w", t.namespace, err)
	}

	for {
		err = ensureSearchAttribute(ctx, c, t.namespace, OrganizationIDSearchAttribute, enumspb.INDEXED_VALUE_TYPE_KEYWORD)
		if err == nil {
			return nil
		}
		// Right after start the namespace registry may not know the namespace yet.
		if !errors.As(err, &notFound) {
			return fmt.Errorf("devenv: temporal search attribute %s: %w", OrganizationIDSearchAttribute, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devenv: temporal search attribute %s: %w", OrganizationIDSearchAttribute, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func ensureSearchAttribute(ctx context.Context, c client.Client, namespace, name string, typ enumspb.IndexedValueType) error {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return err
	}
	if got, ok := resp.GetCustomAttributes()[name]; ok {
		if got != typ {
			return fmt.Errorf("exists with type %v, want %v", got, typ)
		}
		return nil
	}
	_, err = c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace:        namespace,
		SearchAttributes: map[string]enumspb.IndexedValueType{name: typ},
	})
	var exists *serviceerror.AlreadyExists
	if errors.As(err, &exists) {
		return nil
	}
	return err
}

func dialWithRetry(ctx context.Context, opts client.Options) (client.Client, error) {
	for {
		attemptCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		c, err := client.DialContext(attemptCtx, opts)
		cancel()
		if err == nil {
			return c, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// startUI runs the Temporal Web UI server and waits until it answers.
func (t *Temporal) startUI(ctx context.Context, ip string, port int, namespace, codecEndpoint string) (err error) {
	// uiserver.NewServer panics on a bad configuration; turn that into an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("devenv: create temporal UI server: %v", r)
		}
	}()
	host := ip
	if parsed := net.ParseIP(ip); parsed != nil && parsed.To4() == nil {
		host = "[" + ip + "]"
	}
	ui := uiserver.NewServer(uiserveroptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: t.address,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		CORS:                uiconfig.CORS{CookieInsecure: true},
		HideLogs:            true,
		DisableNewsFetch:    true,
		Codec:               uiconfig.Codec{Endpoint: codecEndpoint},
	}))
	t.ui = ui
	t.uiDone = make(chan struct{})
	go func() {
		defer close(t.uiDone)
		// Start blocks until Stop. The port was checked free just before.
		if err := ui.Start(); err != nil {
			t.logger.Error("temporal UI server failed", "error", err)
		}
	}()

	t.uiAddress = net.JoinHostPort(ip, strconv.Itoa(port))
	dial := t.uiAddress
	if parsed := net.ParseIP(ip); parsed != nil && parsed.IsUnspecified() {
		dial = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	healthURL := "http://" + dial + "/healthz"
	httpClient := &http.Client{Timeout: 2 * time.Second}
	for {
		req, reqErr := http.NewRequestWithContext(ctx, http.MethodGet, healthURL, nil)
		if reqErr != nil {
			return fmt.Errorf("devenv: temporal UI health request: %w", reqErr)
		}
		resp, getErr := httpClient.Do(req)
		if getErr == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("devenv: temporal UI at %s did not answer: %w", t.uiAddress, ctx.Err())
		case <-t.uiDone:
			return fmt.Errorf("devenv: temporal UI server at %s exited", t.uiAddress)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%q: %w", addr, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port <= 0 || port > 65535 {
		return "", 0, fmt.Errorf("%q: invalid port", addr)
	}
	switch {
	case host == "" || host == "localhost":
		host = "127.0.0.1"
	case net.ParseIP(host) == nil:
		return "", 0, fmt.Errorf("%q: host must be an IP address or localhost", addr)
	}
	return host, port, nil
}

func checkPortFree(ip string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

// DynamicConfig is the embedded Temporal server's dynamic configuration
// (fos dev, and the end-to-end tests' server):
//   - search attribute changes are visible at once (a dev server, one host);
//   - activity eager execution: a worker that completes a workflow task
//     gets the activities it schedules in the same answer, sparing a
//     matching round trip (a label purchase answers ~10 ms sooner). Off by
//     default in Temporal; production clusters can turn it on per namespace
//     (system.enableActivityEagerExecution).
func DynamicConfig() dynamicconfig.StaticClient {
	return dynamicconfig.StaticClient{
		dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key():      true,
		dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Key(): 100,
		dynamicconfig.EnableActivityEagerExecution.Key():                 true,
	}
}
