package main

import (
	"fmt"
	"os"
	"time"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/agent/llm"
	"github.com/fos-dev/fos/config"
)

// agentModel is the agent's model from FOS_LLM_PROVIDER, FOS_LLM_BASE_URL,
// FOS_LLM_API_KEY and FOS_LLM_MODEL (CONTRACT 9); nil when none is set.
func agentModel(cfg config.Config) (llm.Provider, error) {
	if cfg.LLMProvider == "" {
		return nil, nil
	}
	return llm.New(llm.Config{Provider: cfg.LLMProvider, BaseURL: cfg.LLMBaseURL, APIKey: cfg.LLMAPIKey, Model: cfg.LLMModel})
}

// agentConfig reads FOS_AGENT_APPROVAL_TTL (a Go duration, default 24h).
func agentConfig() (agent.Config, error) {
	var c agent.Config
	if v := os.Getenv("FOS_AGENT_APPROVAL_TTL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, fmt.Errorf("FOS_AGENT_APPROVAL_TTL=%q: must be a positive duration such as 24h", v)
		}
		c.ApprovalTTL = d
	}
	return c, nil
}

// agentModel is the process's model; a provider that cannot be built is
// logged and left out (a turn then fails saying so).
func (s *services) agentModel() llm.Provider {
	p, err := agentModel(s.cfg)
	if err != nil {
		s.log.Error("agent model", "error", err.Error())
		return nil
	}
	return p
}

// agentConfig is the agent's configuration; a bad value is logged and
// the default kept.
func (s *services) agentConfig() agent.Config {
	c, err := agentConfig()
	if err != nil {
		s.log.Error("agent config", "error", err.Error())
	}
	return c
}
