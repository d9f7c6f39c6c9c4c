package api

import (
	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/worker"
)

// domains are the domain services the handlers call (decode → call →
// encode): the business operations live there, shared with the
// activities, operation execution and the agent's tools.
type domains struct {
	shipping *shipping.Service
	agent    *agent.Service
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
	ag, err := worker.NewAgentService(worker.AgentDeps{Store: d.Store, Secrets: d.Secrets, Carriers: d.Carriers, Hooks: s.orderHooks,
		Logger: d.Logger, BaseURL: d.BaseURL, Temporal: d.Temporal, TaskQueue: d.TaskQueue, Provider: d.LLM, Config: d.Agent})
	if err != nil {
		panic("agent tools: " + err.Error()) // the tools' schemas are constants
	}
	return domains{shipping: shipping.New(sd), agent: ag}
}
