// Package api is the HTTP layer: router, middleware and handlers. Handlers
// stay thin: decode, validate, call a domain service, encode (README,
// "Layers"); the services are built by package wiring.
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

	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/wiring"
	"github.com/fos-dev/fos/worker"
)

// Deps is what the API is built from (wiring.Deps): the router asks
// wiring.New for the domain services and never touches the store itself.
type Deps = wiring.Deps

// Server holds the handlers' dependencies.
type Server struct {
	log       *slog.Logger
	accessLog *slog.Logger
	// temporal answers /readyz (nil: not configured).
	temporal  client.Client
	namespace string
	// searchAttrsOK is set once /readyz found the search attributes.
	searchAttrsOK atomic.Bool
	mailbox       *email.Mailbox
	limits        *limiters
	// Services are the domain services the handlers call (decode → call
	// → encode), built by wiring.New.
	wiring.Services
	embedLimits embedLimits
	// requestSchemas validate request bodies (request_validation.go).
	requestSchemas requestValidators
}

// NewRouter builds the whole HTTP handler.
func NewRouter(d Deps) http.Handler {
	s := &Server{
		log: d.Logger, accessLog: d.Logger.With("component", "http"),
		temporal: d.Temporal, namespace: d.TemporalNamespace, mailbox: d.Mailbox,
		limits: newLimiters(d.Limits),
	}
	s.Services = wiring.New(d, wiring.Hooks{
		PINLimit: s.limits.carrierPINAccount.check, MaxWrongPINs: s.limits.wrongPINs,
		InvitationLimit: s.limits.invitationsOrg.check,
	})
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
	if err := s.Ping(ctx); err != nil {
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
