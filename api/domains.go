package api

import (
	"github.com/fos-dev/fos/locations"
	"github.com/fos-dev/fos/routing"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/worker"
)

// domains are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools.
type domains struct {
	shipping  *shipping.Service
	routing   *routing.Service
	locations *locations.Service
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
	rd := routing.Deps{Store: d.Store, Logger: d.Logger, Hooks: s.orderHooks, Starter: s.dispatchStarter(), Sandbox: d.Sandbox}
	return domains{shipping: shipping.New(sd), routing: routing.New(rd), locations: locations.New(d.Store)}
}

// dispatchStarter starts DispatchAssignment runs on the bulk task queue
// (nil without Temporal: assignments stay pending).
func (s *Server) dispatchStarter() rules.DispatchStarter {
	if s.temporal == nil {
		return nil
	}
	return rules.TemporalDispatch{Client: s.temporal, TaskQueue: s.bulkTaskQueue, Options: worker.StartOptions}
}
