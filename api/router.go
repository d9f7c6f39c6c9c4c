// Package api is the HTTP layer: router, middleware and handlers. Handlers
// stay thin: decode, validate, call the store or start/signal a workflow,
// encode.
package api

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/worker"
)

// Deps is what the API needs.
type Deps struct {
	Store     *store.Store
	Logger    *slog.Logger
	Tokens    auth.Tokens
	Passwords auth.Passwords
	Secrets   *secrets.Box
	// Carriers maps carrier codes to carrier adapters.
	Carriers *carriers.Registry
	// RateTimeout is each carrier's deadline in a rate fan-out (default
	// rating.DefaultTimeout).
	RateTimeout time.Duration
	// Temporal starts and signals workflows; TaskQueue is where they run.
	Temporal  client.Client
	TaskQueue string
	// BulkTaskQueue is where bulk work (rate comparisons; later syncs and
	// operations) runs, so interactive work never waits behind it
	// (default: TaskQueue).
	BulkTaskQueue string
	// TemporalNamespace, when set, makes /readyz check that the namespace
	// has the search attributes every workflow start needs.
	TemporalNamespace string
	// Codec, when set (fos dev), serves the Temporal UI's remote payload
	// codec at /codec/encode and /codec/decode.
	Codec  http.Handler
	Mailer email.Sender
	// Mailbox, when set (fos dev), is served at GET /dev/mailbox.
	Mailbox *email.Mailbox
	// BaseURL is the public base URL (links in e-mails, webhook URLs).
	BaseURL string
	// OrderHooks runs after an order is created (split rules, dispatchers);
	// nil means rules.Hooks over Store.
	OrderHooks rules.OrderHooks
	// AllowPrivateURLs accepts tenant-supplied URLs (a storeUrl) that
	// point at loopback, private, link-local or metadata addresses
	// (FOS_ALLOW_PRIVATE_URLS; fos dev only by default).
	AllowPrivateURLs bool
	// Limits are the abuse limits; unset fields take their defaults.
	Limits config.Limits
	// IdempotencyLease is how long an in-flight Idempotency-Key claim holds
	// its key unrenewed (0: store.DefaultIdempotencyLease).
	IdempotencyLease time.Duration
	// Sandbox runs transformation code (nil: sandbox defaults).
	Sandbox *sandbox.Sandbox
	// Platforms are the bridge types' connectors (the worker's); a bridge
	// config is checked against its connector's rules (nil: not checked).
	Platforms *platforms.Registry
	// OperationTune, when set, adjusts each operation execution's input
	// (tests and benchmarks: batch size, heartbeat).
	OperationTune worker.OperationTune
	// Embed configures the embed endpoints (api/embed.go).
	Embed EmbedDeps
	// Tracing traces every request (a span named by its route pattern,
	// the trace id in the access log line); nil or off: none.
	Tracing *telemetry.Tracing
	// HTTPMetrics measures every request by route pattern and status
	// (nil: not measured).
	HTTPMetrics *telemetry.HTTPMetrics
	// InsightsOperations is where the insights read operations (nil: the
	// operations tables, insights.StoreOperations).
	InsightsOperations insights.OperationSource
	// LLM is the agent's model (nil: none) and Agent its settings.
	LLM   llm.Provider
	Agent agent.Config
	// NoRequestValidation turns off the validation of request bodies by
	// api/openapi.yaml (benchmarks compare with and without it).
	NoRequestValidation bool
}

// Server holds the handlers' dependencies.
type Server struct {
	store     *store.Store
	log       *slog.Logger
	accessLog *slog.Logger
	tokens    auth.Tokens
	passwords auth.Passwords
	secrets   *secrets.Box
	carriers  *carriers.Registry
	// rateTimeout is each carrier's deadline in a rate fan-out.
	rateTimeout time.Duration
	temporal    client.Client
	taskQueue   string
	// orgNames name the organization in the runs' memos and summaries.
	orgNames *worker.OrganizationNames
	// bulkTaskQueue is never empty (TaskQueue when not configured).
	bulkTaskQueue string
	namespace     string
	// searchAttrsOK is set once /readyz found the search attributes.
	searchAttrsOK atomic.Bool
	mailer        email.Sender
	mailbox       *email.Mailbox
	baseURL       string
	keyUse        keyUseRecorder
	// orderHooks is never nil.
	orderHooks rules.OrderHooks
	// events hears orders and shipments created or changed (the agent's
	// standing orders); nil without Temporal.
	events rules.Events
	// allowPrivateURLs: see Deps.AllowPrivateURLs.
	allowPrivateURLs bool
	limits           *limiters
	// idempotencyLease: see Deps.IdempotencyLease.
	idempotencyLease time.Duration
	sandbox          *sandbox.Sandbox
	platforms        *platforms.Registry
	// domains are the domain services (domains.go).
	domains
	embedLimits embedLimits
	// requestSchemas validate request bodies (request_validation.go).
	requestSchemas requestValidators
}

// NewRouter builds the whole HTTP handler.
func NewRouter(d Deps) http.Handler {
	s := &Server{
		store: d.Store, log: d.Logger, accessLog: d.Logger.With("component", "http"),
		tokens: d.Tokens, passwords: d.Passwords, secrets: d.Secrets,
		carriers: d.Carriers, temporal: d.Temporal, taskQueue: d.TaskQueue,
		mailer: d.Mailer, mailbox: d.Mailbox, baseURL: d.BaseURL,
		orderHooks: d.OrderHooks, allowPrivateURLs: d.AllowPrivateURLs, limits: newLimiters(d.Limits), idempotencyLease: d.IdempotencyLease,
	}
	s.orgNames = &worker.OrganizationNames{DB: d.Store.Pool}
	if s.orderHooks == nil {
		s.orderHooks = &rules.Hooks{Store: d.Store, Log: d.Logger}
	}
	s.bulkTaskQueue, s.namespace = d.BulkTaskQueue, d.TemporalNamespace
	if s.bulkTaskQueue == "" {
		s.bulkTaskQueue = s.taskQueue
	}
	if h, ok := s.orderHooks.(*rules.Hooks); ok && d.OrderHooks == nil {
		h.Dispatcher = s.dispatchStarter()
	}
	s.rateTimeout = d.RateTimeout
	s.sandbox = d.Sandbox
	s.platforms = d.Platforms
	if s.rateTimeout <= 0 {
		s.rateTimeout = rating.DefaultTimeout
	}
	if s.mailer == nil {
		s.mailer = email.LogSender{Log: d.Logger}
	}
	s.domains = newDomains(d, s)
	s.embedLimits = newEmbedLimits()
	if !d.NoRequestValidation {
		s.requestSchemas = mustRequestValidators()
	}
	r := chi.NewRouter()
	if d.Tracing.Enabled() || d.HTTPMetrics != nil {
		r.Use(telemetry.Middleware(d.Tracing, d.HTTPMetrics))
	}
	r.Use(s.requestContext)
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)

	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.readyz)
	if s.mailbox != nil {
		r.Get("/dev/mailbox", s.devMailbox)
	}
	if d.Codec != nil {
		r.Mount("/codec", d.Codec)
	}
	s.mountEmbedWidget(r, d.Embed.Demo)
	s.mountOpenAPI(r) // GET /api/v1/openapi.json and /docs (public)

	r.Route("/api/v1", func(r chi.Router) {
		// Public: sign-up and login.
		s.mountSignin(r)
		s.mountInboundWebhooks(r) // authenticated by the bridge's secret, not a key
		s.mountSignedLabels(r)    // a label_url: its signature is the credential
		s.mountEmbed(r)           // public, embed:manage and est_ session routes
		// A user token, no organization yet.
		r.Group(func(r chi.Router) {
			r.Use(s.requireUser)
			s.mountUserRoutes(r)
		})
		// Everything else acts inside one organization.
		// API keys: never under Idempotency-Key, so a key's secret is
		// returned once and never stored.
		r.Group(func(r chi.Router) {
			r.Use(s.requireOrg, s.apiKeyBudget)
			s.mountAPIKeys(r)
		})
		r.Group(func(r chi.Router) {
			r.Use(s.requireOrg, s.apiKeyBudget, s.idempotency)
			s.mountOrganizations(r)
			s.mountBridges(r)
			s.mountTaskExecutions(r)
			s.mountSchedules(r)
			s.mountOrders(r)
			s.mountOrderResync(r)
			s.mountCarrierAccounts(r)
			s.mountRates(r)
			s.mountLocations(r)
			s.mountShipments(r)
			s.mountPickups(r)
			s.mountTracking(r)
			s.mountRateComparisons(r)
			s.mountConditionSets(r)
			s.mountSplitRules(r)
			s.mountDispatchers(r)
			s.mountTransformations(r)
			s.mountOperations(r)
			s.mountInsights(r)
			s.mountAgent(r)
		})
	})
	// The unversioned alias of the API key endpoints.
	r.Route("/api", func(r chi.Router) {
		// API keys: never under Idempotency-Key, so a key's secret is
		// returned once and never stored.
		r.Group(func(r chi.Router) {
			r.Use(s.requireOrg, s.apiKeyBudget)
			s.mountAPIKeys(r)
		})
		r.Group(func(r chi.Router) {
			r.Use(s.requireOrg, s.apiKeyBudget, s.idempotency)
		})
		s.mountEmbedAlias(r)
	})
	return r
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers 200 only when PostgreSQL and Temporal answer and the
// namespace has the search attributes the workflow starts need; else 503
// naming what failed.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{"postgres": "ok", "temporal": "ok"}
	if s.namespace != "" {
		checks["temporalSearchAttributes"] = "ok"
	}
	status := http.StatusOK
	if err := s.store.Ping(ctx); err != nil {
		checks["postgres"] = "unavailable"
		status = http.StatusServiceUnavailable
	}
	if s.temporal == nil {
		checks["temporal"] = "not configured"
		status = http.StatusServiceUnavailable
	} else if _, err := s.temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		checks["temporal"] = "unavailable"
		status = http.StatusServiceUnavailable
	} else if s.namespace != "" && !s.searchAttrsOK.Load() {
		// Checked until found once; an attribute is not removed in use.
		missing, err := worker.MissingSearchAttributes(ctx, s.temporal, s.namespace)
		switch {
		case err != nil:
			checks["temporalSearchAttributes"] = "unknown: " + err.Error()
			status = http.StatusServiceUnavailable
		case len(missing) > 0:
			checks["temporalSearchAttributes"] = "missing: " + strings.Join(missing, ", ")
			status = http.StatusServiceUnavailable
		default:
			s.searchAttrsOK.Store(true)
		}
	}
	st := "ready"
	if status != http.StatusOK {
		st = "unavailable"
	}
	writeJSON(w, status, map[string]any{"status": st, "checks": checks})
}

func (s *Server) devMailbox(w http.ResponseWriter, r *http.Request) {
	writeData(w, http.StatusOK, s.mailbox.Messages(r.URL.Query().Get("to")))
}
