package api

import (
	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/carrieraccounts"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/locations"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/ratecomparisons"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/worker"
)

// domains are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools.
type domains struct {
	orders          *orders.Service
	carrierAccounts *carrieraccounts.Service
	rateComparisons *ratecomparisons.Service
	bridgeTasks     *bridgetasks.Service
	shipping        *shipping.Service
	operations      *operations.Service
	// insights reads operations from the operations area's tables
	// (insights.StoreOperations).
	insights  *insights.Service
	routing   *routing.Service
	embed     *embed.Service
	agent     *agent.Service
	locations *locations.Service
}

// newDomains builds the domain services over the API's dependencies, with
// the Temporal adapters of their ports (nil without a Temporal client:
// what needs a workflow answers that workflows are unavailable).
func newDomains(d Deps, s *Server) domains {
	s.events = worker.AgentEvents(d.Store, d.Temporal, d.TaskQueue, d.LLM, d.Agent, d.Logger)
	od := orders.Deps{Store: d.Store, Logger: d.Logger, Hooks: s.orderHooks, Events: s.events}
	if d.Temporal != nil {
		od.Resyncs = worker.TemporalOrders{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
	}
	ord := orders.New(od)
	sd := shipping.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger, Hooks: s.orderHooks, Events: s.events,
		BaseURL: d.BaseURL, RateTimeout: d.RateTimeout}
	if d.Temporal != nil {
		t := worker.TemporalShipping{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
		sd.Labels, sd.Actions, sd.Pickups = t, t, t
	}
	sh := shipping.New(sd)
	rd := routing.Deps{Store: d.Store, Logger: d.Logger, Hooks: s.orderHooks, Starter: s.dispatchStarter(), Sandbox: d.Sandbox}
	rt := routing.New(rd)
	bt := newBridgeTasks(d, s)
	ops := newOperations(d, sh, rt)
	ins := newInsights(d)
	return domains{
		orders:          ord,
		carrierAccounts: newCarrierAccounts(d, s),
		rateComparisons: newRateComparisons(d, s),
		bridgeTasks:     bt,
		shipping:        sh,
		operations:      ops,
		insights:        ins,
		routing:         rt,
		embed:           newEmbed(d, bt, sh),
		agent:           newAgent(d, s, ord, ops, ins, rt),
		locations:       locations.New(d.Store),
	}
}

// newCarrierAccounts builds the carrier accounts Service: carrier_a
// registrations through Temporal, PIN requests under the API's limit.
func newCarrierAccounts(d Deps, s *Server) *carrieraccounts.Service {
	cd := carrieraccounts.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger,
		PINLimit: s.limits.carrierPINAccount.check, MaxWrongPINs: s.limits.wrongPINs}
	if d.Temporal != nil {
		cd.Registrations = worker.TemporalCarrierAccounts{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
	}
	return carrieraccounts.New(cd)
}

// newRateComparisons builds the rate comparisons Service: its runs
// through Temporal on the bulk task queue.
func newRateComparisons(d Deps, s *Server) *ratecomparisons.Service {
	rd := ratecomparisons.Deps{Store: d.Store, Logger: d.Logger}
	if d.Temporal != nil {
		rd.Runs = worker.TemporalRateComparisons{Client: d.Temporal, TaskQueue: s.bulkTaskQueue, Log: d.Logger}
	}
	return ratecomparisons.New(rd)
}

// newBridgeTasks builds the bridge tasks Service: BridgeTask runs and the
// schedules' Temporal Schedules through Temporal on the bulk task queue.
func newBridgeTasks(d Deps, s *Server) *bridgetasks.Service {
	bd := bridgetasks.Deps{Store: d.Store, Logger: d.Logger, Secrets: d.Secrets, Platforms: d.Platforms, AllowPrivateURLs: d.AllowPrivateURLs,
		BaseURL: d.BaseURL, OnWebhookSecret: s.webhookVerifiers().drop, TenantMessage: activities.TenantMessage}
	if d.Temporal != nil {
		t := worker.TemporalBridgeTasks{Client: d.Temporal, TaskQueue: s.bulkTaskQueue, Log: d.Logger, Names: s.orgNames}
		bd.Runs, bd.Schedules = t, t
	}
	return bridgetasks.New(bd)
}

// newOperations builds the operations Service: labels through the shipping
// Service, dispatches through the routing Service, runs through Temporal
// on the bulk task queue.
func newOperations(d Deps, sh *shipping.Service, rt *routing.Service) *operations.Service {
	od := operations.Deps{Store: d.Store, Logger: d.Logger, Labels: sh, Dispatches: operations.RoutingDispatches{Routing: rt}}
	if d.Temporal != nil {
		queue := d.BulkTaskQueue
		if queue == "" {
			queue = d.TaskQueue
		}
		od.Runs = worker.TemporalOperations{Client: d.Temporal, TaskQueue: queue, Log: d.Logger, Tune: d.OperationTune}
	}
	return operations.New(od)
}

// dispatchStarter starts DispatchAssignment runs on the bulk task queue
// (nil without Temporal: assignments stay pending).
func (s *Server) dispatchStarter() rules.DispatchStarter {
	if s.temporal == nil {
		return nil
	}
	return worker.NewDispatchStarter(s.temporal, s.store, s.bulkTaskQueue)
}

// newEmbed builds the embed Service: OAuth and end-user webhook retries
// through Temporal on the webhook task queue; shipments rendered by the
// shipping Service (test webhook payloads as the API shows them); bridge
// configs checked by the bridge tasks Service (POST /bridges' rules).
func newEmbed(d Deps, bt *bridgetasks.Service, sh *shipping.Service) *embed.Service {
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

// newInsights builds the insights Service over the operations tables.
func newInsights(d Deps) *insights.Service {
	ops := d.InsightsOperations
	if ops == nil {
		ops = insights.StoreOperations{Store: d.Store}
	}
	return insights.New(insights.Deps{Store: d.Store, Operations: ops})
}

// newAgent builds the agent Service: its tools over the domain services
// (the orders, operations, insights and routing Services the handlers
// call), its conversations on Temporal.
func newAgent(d Deps, s *Server, ord *orders.Service, ops *operations.Service, ins *insights.Service, rt *routing.Service) *agent.Service {
	ag, err := worker.NewAgentService(worker.AgentDeps{Orders: ord, Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Hooks: s.orderHooks,
		Logger: d.Logger, BaseURL: d.BaseURL, Temporal: d.Temporal, TaskQueue: d.TaskQueue, Provider: d.LLM, Config: d.Agent,
		Operations: ops, Performance: ins, Dispatchers: rt})
	if err != nil {
		panic("agent tools: " + err.Error()) // the tools' schemas are constants
	}
	return ag
}
