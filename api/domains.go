package api

import (
	"context"

	"github.com/fos-dev/fos/accounts"
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
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/wiring"
)

// domains are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools. wiring.New
// builds them over the store and Temporal.
type domains struct {
	accounts        *accounts.Service
	orders          *orders.Service
	carrierAccounts *carrieraccounts.Service
	rateComparisons *ratecomparisons.Service
	bridgeTasks     *bridgetasks.Service
	shipping        *shipping.Service
	operations      *operations.Service
	insights        *insights.Service
	routing         *routing.Service
	embed           *embed.Service
	agent           *agent.Service
	locations       *locations.Service
	// ping reports whether PostgreSQL answers (/readyz).
	ping func(context.Context) error
}

func newDomains(v wiring.Services) domains {
	return domains{
		accounts: v.Accounts, orders: v.Orders, carrierAccounts: v.CarrierAccounts, rateComparisons: v.RateComparisons,
		bridgeTasks: v.BridgeTasks, shipping: v.Shipping, operations: v.Operations, insights: v.Insights,
		routing: v.Routing, embed: v.Embed, agent: v.Agent, locations: v.Locations, ping: v.Ping,
	}
}
