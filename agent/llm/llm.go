// Package llm is the agent's model behind one small interface (Provider):
// the Anthropic Messages API, OpenAI Chat Completions (any compatible
// server), or the built-in deterministic sandbox model (CONTRACT 9). A
// conversation is given to a provider in one neutral shape (Message) and
// each provider writes it as its API requires: every tool call answered by
// its result with the same id in the next message, Anthropic's system
// prompt at the top level with alternating roles.
//
// Providers make one attempt per Complete; the caller (a Temporal
// activity) retries, honouring Error.RetryAfter. The API key is held by
// the provider only: it is never logged or put into a workflow payload.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Role is who wrote a message.
type Role string

// The roles of a conversation.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// ToolCall is a tool the model asked for. Input is a JSON object; when the
// model's arguments were not valid JSON, Input is {} and InputError says
// why (the caller answers the call with a tool error).
type ToolCall struct {
	ID         string          `json:"id"`
	Name       string          `json:"name"`
	Input      json.RawMessage `json:"input"`
	InputError string          `json:"inputError,omitempty"`
}

// ToolResult answers one ToolCall (same ID).
type ToolResult struct {
	ToolCallID string `json:"toolCallId"`
	Content    string `json:"content"`
	IsError    bool   `json:"isError,omitempty"`
}

// Message is one message of the conversation. An assistant message may
// carry tool calls; the user message after it carries their results.
type Message struct {
	Role        Role         `json:"role"`
	Text        string       `json:"text,omitempty"`
	ToolCalls   []ToolCall   `json:"toolCalls,omitempty"`
	ToolResults []ToolResult `json:"toolResults,omitempty"`
}

// ToolSpec is a tool offered to the model: its name, what it does and the
// JSON Schema of its input.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// Request is one model call.
type Request struct {
	System    string
	Messages  []Message
	Tools     []ToolSpec
	MaxTokens int
}

// Response is the model's answer and what it cost.
type Response struct {
	Text         string     `json:"text"`
	ToolCalls    []ToolCall `json:"toolCalls,omitempty"`
	InputTokens  int        `json:"inputTokens"`
	OutputTokens int        `json:"outputTokens"`
	StopReason   string     `json:"stopReason,omitempty"`
}

// Provider is a model.
type Provider interface {
	// Name is the provider's name (anthropic, openai, sandbox).
	Name() string
	// Complete makes one model call; a failure is an *Error.
	Complete(ctx context.Context, req Request) (Response, error)
}

// Error is a failed model call. Retryable: a 429, a 5xx or a connection
// failure; RetryAfter is the server's Retry-After when it sent one.
type Error struct {
	Status     int
	Message    string
	Retryable  bool
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status > 0 {
		return fmt.Sprintf("model call failed (%d): %s", e.Status, e.Message)
	}
	return "model call failed: " + e.Message
}

// statusError classifies an HTTP answer of a model API.
func statusError(status int, header http.Header, msg string) *Error {
	e := &Error{Status: status, Message: msg}
	if status == http.StatusTooManyRequests || status >= 500 || status == http.StatusRequestTimeout || status == 529 {
		e.Retryable = true
		e.RetryAfter = retryAfter(header)
	}
	return e
}

// retryAfter reads Retry-After (seconds or an HTTP date) and the
// retry-after-ms header some servers send; 0 when absent. It is capped at
// 5 minutes.
func retryAfter(h http.Header) time.Duration {
	if h == nil {
		return 0
	}
	var d time.Duration
	if ms := h.Get("Retry-After-Ms"); ms != "" {
		if f, err := strconv.ParseFloat(ms, 64); err == nil && f > 0 {
			d = time.Duration(f * float64(time.Millisecond))
		}
	}
	if d == 0 {
		if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
			if secs, err := strconv.ParseFloat(v, 64); err == nil && secs > 0 {
				d = time.Duration(secs * float64(time.Second))
			} else if t, err := http.ParseTime(v); err == nil {
				d = time.Until(t)
			}
		}
	}
	if d < 0 {
		d = 0
	}
	return min(d, 5*time.Minute)
}

// transportError is a call that got no HTTP answer: retryable unless the
// caller's context ended.
func transportError(ctx context.Context, err error) *Error {
	return &Error{Message: redact(err.Error()), Retryable: ctx.Err() == nil}
}

// redact keeps an error text short; it never holds the key (the SDKs put
// no credentials in error texts), but a URL's query may.
func redact(s string) string {
	if i := strings.Index(s, "?"); i >= 0 {
		if j := strings.IndexAny(s[i:], " \"'"); j > 0 {
			s = s[:i] + s[i+j:]
		} else {
			s = s[:i]
		}
	}
	if len(s) > 500 {
		s = s[:500]
	}
	return s
}

// Config selects and configures the provider (CONTRACT 1 and 9).
type Config struct {
	Provider string // anthropic, openai, sandbox
	BaseURL  string
	APIKey   string
	Model    string
	// Timeout bounds one model call (default 60 s).
	Timeout time.Duration
	// HTTPClient, when set, replaces the default client (tests).
	HTTPClient *http.Client
}

// ConfigFromEnv reads FOS_LLM_PROVIDER, FOS_LLM_BASE_URL, FOS_LLM_API_KEY
// and FOS_LLM_MODEL; def is the provider when none is set (sandbox under
// fos dev).
func ConfigFromEnv(getenv func(string) string, def string) Config {
	c := Config{Provider: strings.ToLower(strings.TrimSpace(getenv("FOS_LLM_PROVIDER"))),
		BaseURL: strings.TrimSpace(getenv("FOS_LLM_BASE_URL")), APIKey: strings.TrimSpace(getenv("FOS_LLM_API_KEY")),
		Model: strings.TrimSpace(getenv("FOS_LLM_MODEL"))}
	if c.Provider == "" {
		c.Provider = def
	}
	return c
}

// ErrNotConfigured is the answer of New without a provider.
var ErrNotConfigured = errors.New("no model provider configured (FOS_LLM_PROVIDER)")

// New builds the configured provider.
func New(c Config) (Provider, error) {
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.Timeout}
	}
	switch c.Provider {
	case "sandbox":
		return Sandbox{}, nil
	case "anthropic":
		if c.APIKey == "" {
			return nil, errors.New("FOS_LLM_API_KEY is required for the anthropic provider")
		}
		if c.Model == "" {
			c.Model = "claude-sonnet-4-5"
		}
		return newAnthropic(c), nil
	case "openai":
		if c.Model == "" {
			c.Model = "gpt-4o-mini"
		}
		return newOpenAI(c), nil
	case "":
		return nil, ErrNotConfigured
	}
	return nil, fmt.Errorf("FOS_LLM_PROVIDER %q is not one of anthropic, openai, sandbox", c.Provider)
}
