// Package wiring assembles the service: it builds the domain services
// over the concrete store, Temporal adapters and clients. The HTTP layer
// (api) gets the services from New and never touches the store itself;
// cmd/fos and the tests fill Deps.
package wiring

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/fos-dev/fos/accounts"
	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/carrieraccounts"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/email"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/locations"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/ratecomparisons"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/telemetry"
	"github.com/fos-dev/fos/worker"
)

// Deps is what the service is assembled from: the store, the clients and
// the settings the domain services are built over, and what the HTTP
// layer itself uses (api.Deps is this type).
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
	// its key unrenewed (0: accounts.DefaultIdempotencyLease).
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

// EmbedDeps configure the embed endpoints.
type EmbedDeps struct {
	// StorefrontA is the storefront_a OAuth app (FOS_STOREFRONT_A_CLIENT_ID,
	// _CLIENT_SECRET; FOS_STOREFRONT_A_URL).
	StorefrontA embed.StorefrontAApp
	// TaskQueue is the webhook task queue the OAuth exchange and the
	// delivery retries run on (worker.WebhookTaskQueue of the main queue).
	TaskQueue string
	// OAuth and Retries replace the Temporal adapters (tests).
	OAuth   embed.OAuthRuns
	Retries embed.RedeliveryRuns
	// Demo serves /dev/embed-demo (fos dev).
	Demo bool
}

// Hooks are what the HTTP layer lends the services it is built with: its
// per-process limits.
type Hooks struct {
	// PINLimit is asked before a carrier account sends a PIN (key: the
	// account); MaxWrongPINs bounds the wrong PINs of one registration.
	PINLimit     func(key string) error
	MaxWrongPINs int
	// InvitationLimit is asked before an organization invites (key: the
	// organization).
	InvitationLimit func(key string) error
}

// Services are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools.
type Services struct {
	Accounts        *accounts.Service
	Orders          *orders.Service
	CarrierAccounts *carrieraccounts.Service
	RateComparisons *ratecomparisons.Service
	BridgeTasks     *bridgetasks.Service
	Shipping        *shipping.Service
	Operations      *operations.Service
	// Insights reads operations from the operations area's tables
	// (insights.StoreOperations) unless Deps.InsightsOperations says
	// otherwise.
	Insights  *insights.Service
	Routing   *routing.Service
	Embed     *embed.Service
	Agent     *agent.Service
	Locations *locations.Service
	// Ping reports whether PostgreSQL answers (readiness).
	Ping func(context.Context) error
}

// New builds the domain services over d, with the Temporal adapters of
// their ports (nil without a Temporal client: what needs a workflow
// answers that workflows are unavailable).
func New(d Deps, h Hooks) Services {
	w := &wiring{d: d, bulkQueue: d.BulkTaskQueue}
	if w.bulkQueue == "" {
		w.bulkQueue = d.TaskQueue
	}
	w.orderHooks = d.OrderHooks
	if w.orderHooks == nil {
		w.orderHooks = &rules.Hooks{Store: d.Store, Log: d.Logger, Dispatcher: w.dispatchStarter()}
	}
	w.events = worker.AgentEvents(d.Store, d.Temporal, d.TaskQueue, d.LLM, d.Agent, d.Logger)
	od := orders.Deps{Store: d.Store, Logger: d.Logger, Hooks: w.orderHooks, Events: w.events}
	if d.Temporal != nil {
		od.Resyncs = worker.TemporalOrders{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
	}
	ord := orders.New(od)
	sd := shipping.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger, Hooks: w.orderHooks, Events: w.events,
		BaseURL: d.BaseURL, RateTimeout: d.RateTimeout}
	if d.Temporal != nil {
		t := worker.TemporalShipping{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
		sd.Labels, sd.Actions, sd.Pickups = t, t, t
	}
	sh := shipping.New(sd)
	rt := routing.New(routing.Deps{Store: d.Store, Logger: d.Logger, Hooks: w.orderHooks, Starter: w.dispatchStarter(), Sandbox: d.Sandbox})
	bt := w.bridgeTasks()
	ops := w.operations(sh, rt)
	ins := w.insights()
	return Services{
		Accounts: accounts.New(accounts.Deps{Store: d.Store, Logger: d.Logger, Tokens: d.Tokens, Passwords: d.Passwords,
			Mailer: d.Mailer, BaseURL: d.BaseURL, IdempotencyLease: d.IdempotencyLease, InvitationLimit: h.InvitationLimit}),
		Orders:          ord,
		CarrierAccounts: w.carrierAccounts(h),
		RateComparisons: w.rateComparisons(),
		BridgeTasks:     bt,
		Shipping:        sh,
		Operations:      ops,
		Insights:        ins,
		Routing:         rt,
		Embed:           w.embed(bt, sh),
		Agent:           w.agent(ord, ops, ins, rt),
		Locations:       locations.New(d.Store),
		Ping:            d.Store.Ping,
	}
}

// wiring is what New shares between the services it builds.
type wiring struct {
	d          Deps
	bulkQueue  string
	orderHooks rules.OrderHooks
	// events hears orders and shipments created or changed (the agent's
	// standing orders); nil without Temporal.
	events rules.Events
}

// carrierAccounts builds the carrier accounts Service: carrier_a
// registrations through Temporal, PIN requests under the API's limit.
func (w *wiring) carrierAccounts(h Hooks) *carrieraccounts.Service {
	d := w.d
	cd := carrieraccounts.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger,
		PINLimit: h.PINLimit, MaxWrongPINs: h.MaxWrongPINs}
	if d.Temporal != nil {
		cd.Registrations = worker.TemporalCarrierAccounts{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
	}
	return carrieraccounts.New(cd)
}

// rateComparisons builds the rate comparisons Service: its runs through
// Temporal on the bulk task queue.
func (w *wiring) rateComparisons() *ratecomparisons.Service {
	d := w.d
	rd := ratecomparisons.Deps{Store: d.Store, Logger: d.Logger}
	if d.Temporal != nil {
		rd.Runs = worker.TemporalRateComparisons{Client: d.Temporal, TaskQueue: w.bulkQueue, Log: d.Logger}
	}
	return ratecomparisons.New(rd)
}

// bridgeTasks builds the bridge tasks Service: BridgeTask runs and the
// schedules' Temporal Schedules through Temporal on the bulk task queue.
func (w *wiring) bridgeTasks() *bridgetasks.Service {
	d := w.d
	bd := bridgetasks.Deps{Store: d.Store, Logger: d.Logger, Secrets: d.Secrets, Platforms: d.Platforms, AllowPrivateURLs: d.AllowPrivateURLs,
		BaseURL: d.BaseURL, TenantMessage: activities.TenantMessage}
	if d.Temporal != nil {
		t := worker.TemporalBridgeTasks{Client: d.Temporal, TaskQueue: w.bulkQueue, Log: d.Logger,
			Names: &worker.OrganizationNames{DB: d.Store.Pool}}
		bd.Runs, bd.Schedules = t, t
	}
	return bridgetasks.New(bd)
}

// operations builds the operations Service: labels through the shipping
// Service, dispatches through the routing Service, runs through Temporal
// on the bulk task queue.
func (w *wiring) operations(sh *shipping.Service, rt *routing.Service) *operations.Service {
	d := w.d
	od := operations.Deps{Store: d.Store, Logger: d.Logger, Labels: sh, Dispatches: operations.RoutingDispatches{Routing: rt}}
	if d.Temporal != nil {
		od.Runs = worker.TemporalOperations{Client: d.Temporal, TaskQueue: w.bulkQueue, Log: d.Logger, Tune: d.OperationTune}
	}
	return operations.New(od)
}

// dispatchStarter starts DispatchAssignment runs on the bulk task queue
// (nil without Temporal: assignments stay pending).
func (w *wiring) dispatchStarter() rules.DispatchStarter {
	if w.d.Temporal == nil {
		return nil
	}
	return worker.NewDispatchStarter(w.d.Temporal, w.d.Store, w.bulkQueue)
}

// embed builds the embed Service: OAuth and end-user webhook retries
// through Temporal on the webhook task queue; shipments rendered by the
// shipping Service (test webhook payloads as the API shows them); bridge
// configs checked by the bridge tasks Service (POST /bridges' rules).
func (w *wiring) embed(bt *bridgetasks.Service, sh *shipping.Service) *embed.Service {
	d := w.d
	ed := embed.Deps{Store: d.Store, Secrets: d.Secrets, Logger: d.Logger, Platforms: d.Platforms, Shipments: sh,
		BridgeConfigs: bt, StorefrontA: d.Embed.StorefrontA, BaseURL: d.BaseURL,
		AllowPrivateURLs: d.AllowPrivateURLs, OAuth: d.Embed.OAuth, Retries: d.Embed.Retries}
	if d.Temporal != nil && ed.OAuth == nil {
		q := d.Embed.TaskQueue
		if q == "" {
			q = worker.WebhookTaskQueue(d.TaskQueue)
		}
		t := worker.TemporalEmbed{Client: d.Temporal, TaskQueue: q}
		ed.OAuth = t
		if ed.Retries == nil {
			ed.Retries = t
		}
	}
	return embed.New(ed)
}

// insights builds the insights Service over the operations tables.
func (w *wiring) insights() *insights.Service {
	ops := w.d.InsightsOperations
	if ops == nil {
		ops = insights.StoreOperations{Store: w.d.Store}
	}
	return insights.New(insights.Deps{Store: w.d.Store, Operations: ops})
}

// agent builds the agent Service: its tools over the domain services (the
// orders, operations, insights and routing Services the handlers call),
// its conversations on Temporal.
func (w *wiring) agent(ord *orders.Service, ops *operations.Service, ins *insights.Service, rt *routing.Service) *agent.Service {
	d := w.d
	ag, err := worker.NewAgentService(worker.AgentDeps{Orders: ord, Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Hooks: w.orderHooks,
		Logger: d.Logger, BaseURL: d.BaseURL, Temporal: d.Temporal, TaskQueue: d.TaskQueue, Provider: d.LLM, Config: d.Agent,
		Operations: ops, Performance: ins, Dispatchers: rt})
	if err != nil {
		panic("agent tools: " + err.Error()) // the tools' schemas are constants
	}
	return ag
}
