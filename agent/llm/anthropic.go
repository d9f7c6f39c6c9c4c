package llm

import (
	"context"
	"encoding/json"
	"errors"

	anthropic "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
)

// anthropicProvider speaks the Messages API with tool use through the
// official client.
type anthropicProvider struct {
	client anthropic.Client
	model  string
}

func newAnthropic(c Config) *anthropicProvider {
	opts := []option.RequestOption{
		option.WithAPIKey(c.APIKey),
		// The published wire format authenticates with x-api-key.
		option.WithHeader("x-api-key", c.APIKey),
		option.WithHTTPClient(c.HTTPClient),
		// One attempt: the activity retries, honouring Retry-After.
		option.WithMaxRetries(0),
		option.WithRequestTimeout(c.Timeout),
	}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	return &anthropicProvider{client: anthropic.NewClient(opts...), model: c.Model}
}

func (p *anthropicProvider) Name() string { return "anthropic" }

func (p *anthropicProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(p.model),
		MaxTokens: int64(max(req.MaxTokens, 256)),
		Messages:  anthropicMessages(req.Messages),
	}
	if req.System != "" {
		params.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	for _, t := range req.Tools {
		params.Tools = append(params.Tools, anthropic.ToolUnionParam{OfTool: anthropicTool(t)})
	}
	msg, err := p.client.Messages.New(ctx, params)
	if err != nil {
		var apiErr *anthropic.Error
		if errors.As(err, &apiErr) {
			var h = apiErr.Response
			if h != nil {
				return Response{}, statusError(apiErr.StatusCode, h.Header, apiErrorMessage(apiErr.Message, apiErr.StatusCode))
			}
			return Response{}, statusError(apiErr.StatusCode, nil, apiErrorMessage(apiErr.Message, apiErr.StatusCode))
		}
		return Response{}, transportError(ctx, err)
	}
	out := Response{InputTokens: int(msg.Usage.InputTokens), OutputTokens: int(msg.Usage.OutputTokens), StopReason: string(msg.StopReason)}
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			if out.Text != "" {
				out.Text += "\n"
			}
			out.Text += b.Text
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, toolCall(b.ID, b.Name, b.Input))
		}
	}
	return out, nil
}

func apiErrorMessage(msg string, status int) string {
	if msg == "" {
		return "the model API answered with an error"
	}
	return redact(msg)
}

// anthropicMessages writes the conversation as the Messages API requires:
// roles alternate (consecutive messages of one role are merged), each
// assistant tool_use is answered by a tool_result with its id in the next
// user message, and no message is empty.
func anthropicMessages(msgs []Message) []anthropic.MessageParam {
	type turn struct {
		role   Role
		blocks []anthropic.ContentBlockParamUnion
	}
	var turns []turn
	for _, m := range msgs {
		var blocks []anthropic.ContentBlockParamUnion
		if m.Role == RoleUser {
			for _, r := range m.ToolResults {
				blocks = append(blocks, anthropic.NewToolResultBlock(r.ToolCallID, nonEmpty(r.Content), r.IsError))
			}
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
		} else {
			if m.Text != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Text))
			}
			for _, c := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(c.ID, json.RawMessage(objectOrEmpty(c.Input)), c.Name))
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role: m.Role, blocks: blocks})
	}
	out := make([]anthropic.MessageParam, 0, len(turns))
	for _, t := range turns {
		if t.role == RoleAssistant {
			out = append(out, anthropic.NewAssistantMessage(t.blocks...))
		} else {
			out = append(out, anthropic.NewUserMessage(t.blocks...))
		}
	}
	return out
}

func anthropicTool(t ToolSpec) *anthropic.ToolParam {
	var schema map[string]any
	_ = json.Unmarshal(t.Schema, &schema)
	in := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				in.Required = append(in.Required, s)
			}
		}
	}
	for k, v := range schema {
		if k != "properties" && k != "required" && k != "type" {
			in.ExtraFields[k] = v
		}
	}
	return &anthropic.ToolParam{Name: t.Name, Description: anthropic.String(t.Description), InputSchema: in}
}

// toolCall is a model's tool call; arguments that are not a JSON object
// become {} with InputError set.
func toolCall(id, name string, args []byte) ToolCall {
	var obj map[string]any
	if len(args) == 0 {
		return ToolCall{ID: id, Name: name, Input: json.RawMessage(`{}`)}
	}
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		return ToolCall{ID: id, Name: name, Input: json.RawMessage(`{}`), InputError: "the tool arguments are not a valid JSON object"}
	}
	return ToolCall{ID: id, Name: name, Input: json.RawMessage(args)}
}

func objectOrEmpty(raw json.RawMessage) []byte {
	if len(raw) == 0 || !json.Valid(raw) {
		return []byte(`{}`)
	}
	return raw
}

func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}
