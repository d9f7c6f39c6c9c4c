package llm

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// openaiProvider speaks Chat Completions with tools through the official
// client, so any compatible server works through the base URL.
type openaiProvider struct {
	client openai.Client
	model  string
}

func newOpenAI(c Config) *openaiProvider {
	opts := []option.RequestOption{
		option.WithAPIKey(c.APIKey),
		option.WithHTTPClient(c.HTTPClient),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(c.Timeout),
	}
	if c.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(c.BaseURL))
	}
	return &openaiProvider{client: openai.NewClient(opts...), model: c.Model}
}

func (p *openaiProvider) Name() string { return "openai" }

func (p *openaiProvider) Complete(ctx context.Context, req Request) (Response, error) {
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(p.model),
		Messages: openaiMessages(req.System, req.Messages),
	}
	if req.MaxTokens > 0 {
		params.MaxCompletionTokens = openai.Int(int64(req.MaxTokens))
	}
	for _, t := range req.Tools {
		var schema map[string]any
		_ = json.Unmarshal(t.Schema, &schema)
		params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: t.Name, Description: openai.String(t.Description), Parameters: shared.FunctionParameters(schema),
		}))
	}
	res, err := p.client.Chat.Completions.New(ctx, params)
	if err != nil {
		var apiErr *openai.Error
		if errors.As(err, &apiErr) {
			if apiErr.Response != nil {
				return Response{}, statusError(apiErr.StatusCode, apiErr.Response.Header, apiErrorMessage(apiErr.Message, apiErr.StatusCode))
			}
			return Response{}, statusError(apiErr.StatusCode, nil, apiErrorMessage(apiErr.Message, apiErr.StatusCode))
		}
		return Response{}, transportError(ctx, err)
	}
	out := Response{InputTokens: int(res.Usage.PromptTokens), OutputTokens: int(res.Usage.CompletionTokens)}
	if len(res.Choices) == 0 {
		return out, &Error{Message: "the model answered without a choice"}
	}
	ch := res.Choices[0]
	out.StopReason = ch.FinishReason
	out.Text = ch.Message.Content
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		out.ToolCalls = append(out.ToolCalls, toolCall(tc.ID, tc.Function.Name, []byte(tc.Function.Arguments)))
	}
	return out, nil
}

// openaiMessages writes the conversation as Chat Completions requires: the
// system prompt first, each assistant message with its tool_calls, then
// one tool message per call (tool_call_id) before anything else.
func openaiMessages(system string, msgs []Message) []openai.ChatCompletionMessageParamUnion {
	var out []openai.ChatCompletionMessageParamUnion
	if system != "" {
		out = append(out, openai.SystemMessage(system))
	}
	for _, m := range msgs {
		if m.Role == RoleAssistant {
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Text != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = openai.String(m.Text)
			}
			for _, c := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: c.ID, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: c.Name, Arguments: string(objectOrEmpty(c.Input))},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
			continue
		}
		for _, r := range m.ToolResults {
			out = append(out, openai.ToolMessage(nonEmpty(r.Content), r.ToolCallID))
		}
		if m.Text != "" {
			out = append(out, openai.UserMessage(m.Text))
		}
	}
	return out
}
