package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// conversation is a turn with a tool call answered by its result.
func conversation() Request {
	return Request{
		System: "be brief",
		Messages: []Message{
			{Role: RoleUser, Text: "list pending orders"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "list_orders", Input: json.RawMessage(`{"status":"pending"}`)}}},
			{Role: RoleUser, ToolResults: []ToolResult{{ToolCallID: "call_1", Content: `{"items":[]}`}}},
			// An outcome added to the conversation: two assistant messages in a row.
			{Role: RoleAssistant, Text: "There are none."},
			{Role: RoleAssistant, Text: "Pending action x was approved."},
			{Role: RoleUser, Text: "thanks"},
		},
		Tools:     []ToolSpec{{Name: "list_orders", Description: "List orders", Schema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string"}},"required":["status"],"additionalProperties":false}`)}},
		MaxTokens: 512,
	}
}

func TestAnthropicWireFormat(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/v1/messages", r.URL.Path)
		require.Equal(t, "secret-key", r.Header.Get("X-Api-Key"))
		raw, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(raw, &body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","stop_reason":"tool_use",
			"content":[{"type":"text","text":"Let me look."},{"type":"tool_use","id":"toolu_9","name":"get_order","input":{"order":"1001"}}],
			"usage":{"input_tokens":120,"output_tokens":30}}`)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "secret-key", Model: "m"})
	require.NoError(t, err)
	res, err := p.Complete(context.Background(), conversation())
	require.NoError(t, err)
	require.Equal(t, "Let me look.", res.Text)
	require.Equal(t, []ToolCall{{ID: "toolu_9", Name: "get_order", Input: json.RawMessage(`{"order":"1001"}`)}}, res.ToolCalls)
	require.Equal(t, 120, res.InputTokens)
	require.Equal(t, 30, res.OutputTokens)

	// The system prompt is top level; roles alternate; the tool_result
	// answers the tool_use with its id in the next (user) message.
	require.Equal(t, "be brief", body["system"].([]any)[0].(map[string]any)["text"])
	msgs := body["messages"].([]any)
	require.Len(t, msgs, 5)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	require.Equal(t, []string{"user", "assistant", "user", "assistant", "user"}, roles)
	use := msgs[1].(map[string]any)["content"].([]any)[0].(map[string]any)
	require.Equal(t, "tool_use", use["type"])
	require.Equal(t, "call_1", use["id"])
	result := msgs[2].(map[string]any)["content"].([]any)[0].(map[string]any)
	require.Equal(t, "tool_result", result["type"])
	require.Equal(t, "call_1", result["tool_use_id"])
	require.Len(t, msgs[3].(map[string]any)["content"].([]any), 2, "the two assistant texts are merged")
	tool := body["tools"].([]any)[0].(map[string]any)
	require.Equal(t, "list_orders", tool["name"])
	require.Equal(t, false, tool["input_schema"].(map[string]any)["additionalProperties"])
}

func TestAnthropicErrors(t *testing.T) {
	status, retryAfter := 429, "7"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "secret-key"})
	require.NoError(t, err)
	_, err = p.Complete(context.Background(), conversation())
	var le *Error
	require.True(t, errors.As(err, &le), "%v", err)
	require.True(t, le.Retryable)
	require.Equal(t, 7*time.Second, le.RetryAfter)
	require.NotContains(t, err.Error(), "secret-key")

	status, retryAfter = 400, ""
	_, err = p.Complete(context.Background(), conversation())
	require.True(t, errors.As(err, &le))
	require.False(t, le.Retryable)
	require.Equal(t, 400, le.Status)

	status = 529
	_, err = p.Complete(context.Background(), conversation())
	require.True(t, errors.As(err, &le))
	require.True(t, le.Retryable, "overloaded is retried")
}

func TestOpenAIWireFormat(t *testing.T) {
	var body map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/v1/chat/completions", r.URL.Path)
		require.Equal(t, "Bearer secret-key", r.Header.Get("Authorization"))
		raw, _ := io.ReadAll(r.Body)
		require.NoError(t, json.Unmarshal(raw, &body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"c1","object":"chat.completion","created":1,"model":"m",
			"choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
			"tool_calls":[{"id":"call_a","type":"function","function":{"name":"get_order","arguments":"{\"order\":\"1001\"}"}},
			              {"id":"call_b","type":"function","function":{"name":"list_orders","arguments":"{not json"}}]}}],
			"usage":{"prompt_tokens":50,"completion_tokens":12,"total_tokens":62}}`)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: "openai", BaseURL: srv.URL + "/v1", APIKey: "secret-key", Model: "m"})
	require.NoError(t, err)
	res, err := p.Complete(context.Background(), conversation())
	require.NoError(t, err)
	require.Len(t, res.ToolCalls, 2)
	require.Equal(t, "call_a", res.ToolCalls[0].ID)
	require.JSONEq(t, `{"order":"1001"}`, string(res.ToolCalls[0].Input))
	require.Empty(t, res.ToolCalls[0].InputError)
	require.NotEmpty(t, res.ToolCalls[1].InputError, "arguments that are not JSON become a tool error, not a crash")
	require.JSONEq(t, `{}`, string(res.ToolCalls[1].Input))
	require.Equal(t, 50, res.InputTokens)
	require.Equal(t, 12, res.OutputTokens)

	msgs := body["messages"].([]any)
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.(map[string]any)["role"].(string))
	}
	require.Equal(t, []string{"system", "user", "assistant", "tool", "assistant", "assistant", "user"}, roles)
	call := msgs[2].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)
	require.Equal(t, "call_1", call["id"])
	require.Equal(t, "call_1", msgs[3].(map[string]any)["tool_call_id"])
	fn := body["tools"].([]any)[0].(map[string]any)["function"].(map[string]any)
	require.Equal(t, "list_orders", fn["name"])
}

func TestOpenAIRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, `{"error":{"message":"busy"}}`)
	}))
	defer srv.Close()
	p, err := New(Config{Provider: "openai", BaseURL: srv.URL + "/v1", APIKey: "secret-key"})
	require.NoError(t, err)
	_, err = p.Complete(context.Background(), conversation())
	var le *Error
	require.True(t, errors.As(err, &le), "%v", err)
	require.True(t, le.Retryable)
	require.Equal(t, 2*time.Second, le.RetryAfter)
	require.False(t, strings.Contains(err.Error(), "secret-key"))
}

func TestSandboxIsDeterministic(t *testing.T) {
	tools := []ToolSpec{{Name: "shipment_action"}, {Name: "get_order"}}
	req := Request{Messages: []Message{{Role: RoleUser, Text: "hold shipment 5f0c"}}, Tools: tools}
	a, err := Sandbox{}.Complete(context.Background(), req)
	require.NoError(t, err)
	b, _ := Sandbox{}.Complete(context.Background(), req)
	require.Equal(t, a, b)
	require.Equal(t, "shipment_action", a.ToolCalls[0].Name)
	require.JSONEq(t, `{"shipment_id":"5f0c","action_type":"hold","reason":"customer_request"}`, string(a.ToolCalls[0].Input))
	// A tool that is not offered is not called.
	c, _ := Sandbox{}.Complete(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "list shipments"}}, Tools: tools})
	require.Empty(t, c.ToolCalls)
	require.Contains(t, c.Text, "not available")
}
