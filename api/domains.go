package api

import (
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/worker"
)

// domains are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools.
type domains struct {
	shipping *shipping.Service
	embed    *embed.Service
}

// newDomains builds the domain services over the API's dependencies, with
// the Temporal adapters of their ports (nil without a Temporal client:
// what needs a workflow answers that workflows are unavailable).
func newDomains(d Deps, s *Server) domains {
	sd := shipping.Deps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Logger: d.Logger, Hooks: s.orderHooks, BaseURL: d.BaseURL, RateTimeout: d.RateTimeout}
	if d.Temporal != nil {
		t := worker.TemporalShipping{Client: d.Temporal, TaskQueue: d.TaskQueue, Log: d.Logger}
		sd.Labels, sd.Actions, sd.Pickups = t, t, t
	}
	ed := embed.Deps{Store: d.Store, Secrets: d.Secrets, Logger: d.Logger, Platforms: d.Platforms,
		BridgeConfigs: embedConfigChecker{s}, StorefrontA: d.Embed.StorefrontA, BaseURL: d.BaseURL,
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
	return domains{shipping: shipping.New(sd), embed: embed.New(ed)}
}
