package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Sandbox is the built-in deterministic model (CONTRACT 9 and 11): it maps
// plain commands to tool calls, so conversations, approvals and tool
// permissions work offline and in tests. After tool results it answers
// with a short text naming what happened. It understands:
//
//	list pending orders | list orders [with status S] | show order <id or number>
//	list shipments | show shipment <id> | hold shipment <id>
//	add note <text> to order <id> | set status of order <id> to <status>
//	create shipment for order <id> | rates for order <id> | list carrier accounts
//	list operations [with status S] | carrier performance [for N days]
//	create operation <name> | add orders <id>, <id> to operation <id>
//	apply <assign-rate|override-carrier|override-dispatcher> <ref id> to items <id>, <id> of operation <id>
//	execute operation <id> | evaluate dispatchers for order <id> (or: dispatch order <id>)
//	remember <text> | call <tool> <json>  (a raw tool call, for tests)
//
// Its token counts are derived from the text lengths.
type Sandbox struct{}

// Name implements Provider.
func (Sandbox) Name() string { return "sandbox" }

type sandboxCommand struct {
	re    *regexp.Regexp
	tool  string
	input func(m []string) map[string]any
}

var sandboxCommands = []sandboxCommand{
	{regexp.MustCompile(`(?i)^list pending orders\.?$`), "list_orders", func([]string) map[string]any { return map[string]any{"status": "pending"} }},
	{regexp.MustCompile(`(?i)^list orders(?: with status (\w+))?\.?$`), "list_orders", func(m []string) map[string]any {
		if m[1] != "" {
			return map[string]any{"status": strings.ToLower(m[1])}
		}
		return map[string]any{}
	}},
	{regexp.MustCompile(`(?i)^show order #?(\S+?)\.?$`), "get_order", func(m []string) map[string]any { return map[string]any{"order": m[1]} }},
	{regexp.MustCompile(`(?i)^list shipments\.?$`), "list_shipments", func([]string) map[string]any { return map[string]any{} }},
	{regexp.MustCompile(`(?i)^show shipment (\S+?)\.?$`), "get_shipment", func(m []string) map[string]any { return map[string]any{"shipment_id": m[1]} }},
	{regexp.MustCompile(`(?i)^hold shipment (\S+?)\.?$`), "shipment_action", func(m []string) map[string]any {
		return map[string]any{"shipment_id": m[1], "action_type": "hold", "reason": "customer_request"}
	}},
	{regexp.MustCompile(`(?is)^add note (.+) to order #?(\S+?)\.?$`), "add_order_note", func(m []string) map[string]any {
		return map[string]any{"order_id": m[2], "note": strings.Trim(m[1], `"'`)}
	}},
	{regexp.MustCompile(`(?i)^set status of order #?(\S+) to (\w+)\.?$`), "update_order", func(m []string) map[string]any {
		return map[string]any{"order_id": m[1], "status": strings.ToLower(m[2])}
	}},
	{regexp.MustCompile(`(?i)^create shipment for order #?(\S+?)\.?$`), "create_shipment", func(m []string) map[string]any { return map[string]any{"order_id": m[1]} }},
	{regexp.MustCompile(`(?i)^rates for order #?(\S+?)\.?$`), "get_rates", func(m []string) map[string]any { return map[string]any{"order_id": m[1]} }},
	{regexp.MustCompile(`(?i)^list carrier accounts\.?$`), "list_carrier_accounts", func([]string) map[string]any { return map[string]any{} }},
	{regexp.MustCompile(`(?i)^list operations(?: with status (\w+))?\.?$`), "list_operations", func(m []string) map[string]any {
		if m[1] != "" {
			return map[string]any{"status": strings.ToLower(m[1])}
		}
		return map[string]any{}
	}},
	{regexp.MustCompile(`(?i)^carrier performance(?: for (\d+) days)?\.?$`), "carrier_performance", func(m []string) map[string]any {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return map[string]any{"days": n}
		}
		return map[string]any{}
	}},
	{regexp.MustCompile(`(?is)^create operation (.+?)\.?$`), "create_operation", func(m []string) map[string]any {
		return map[string]any{"name": strings.Trim(strings.TrimSpace(m[1]), `"'`)}
	}},
	{regexp.MustCompile(`(?i)^add orders? (.+?) to operation (\S+?)\.?$`), "add_operation_items", func(m []string) map[string]any {
		return map[string]any{"operation_id": m[2], "order_ids": idList(m[1])}
	}},
	{regexp.MustCompile(`(?i)^apply (assign-rate|override-carrier|override-dispatcher) (\S+) to items? (.+?) of operation (\S+?)\.?$`), "apply_operation_action", func(m []string) map[string]any {
		field := map[string]string{"assign-rate": "rateSnapshotId", "override-carrier": "carrierAccountId", "override-dispatcher": "bridgeId"}[strings.ToLower(m[1])]
		return map[string]any{"operation_id": m[4], "item_ids": idList(m[3]),
			"action": map[string]any{"type": strings.ToLower(m[1]), "config": map[string]any{field: m[2]}}}
	}},
	{regexp.MustCompile(`(?i)^execute operation (\S+?)\.?$`), "execute_operation", func(m []string) map[string]any { return map[string]any{"operation_id": m[1]} }},
	{regexp.MustCompile(`(?i)^(?:evaluate dispatchers for|dispatch) order #?(\S+?)\.?$`), "evaluate_dispatchers", func(m []string) map[string]any { return map[string]any{"order_id": m[1]} }},
	{regexp.MustCompile(`(?is)^remember (.+)$`), "remember", func(m []string) map[string]any {
		return map[string]any{"content": strings.TrimSpace(m[1]), "category": "fact"}
	}},
}

// idList splits "a, b and c" into ids.
func idList(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		if f = strings.TrimSpace(f); f != "" && !strings.EqualFold(f, "and") {
			out = append(out, f)
		}
	}
	return out
}

var sandboxRaw = regexp.MustCompile(`(?is)^call (\w+)\s*(.*)$`)

// Complete implements Provider.
func (Sandbox) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, transportError(ctx, err)
	}
	out := sandboxAnswer(req)
	in := len(req.System)
	for _, m := range req.Messages {
		in += len(m.Text)
		for _, r := range m.ToolResults {
			in += len(r.Content)
		}
		for _, c := range m.ToolCalls {
			in += len(c.Input)
		}
	}
	out.InputTokens = in/4 + 1
	out.OutputTokens = len(out.Text)/4 + 10*len(out.ToolCalls) + 1
	return out, nil
}

func sandboxAnswer(req Request) Response {
	if len(req.Messages) == 0 {
		return Response{Text: "How can I help?", StopReason: "end_turn"}
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != RoleUser {
		return Response{Text: "Done.", StopReason: "end_turn"}
	}
	if len(last.ToolResults) > 0 {
		return Response{Text: sandboxSummary(last.ToolResults), StopReason: "end_turn"}
	}
	text := strings.TrimSpace(last.Text)
	id := fmt.Sprintf("toolu_sbx_%d", len(req.Messages))
	if m := sandboxRaw.FindStringSubmatch(text); m != nil {
		return Response{ToolCalls: []ToolCall{toolCall(id, m[1], []byte(strings.TrimSpace(m[2])))}, StopReason: "tool_use"}
	}
	for _, c := range sandboxCommands {
		m := c.re.FindStringSubmatch(text)
		if m == nil {
			continue
		}
		if !slices.ContainsFunc(req.Tools, func(t ToolSpec) bool { return t.Name == c.tool }) {
			return Response{Text: fmt.Sprintf("I cannot use %s here: it is not available to you.", c.tool), StopReason: "end_turn"}
		}
		raw, _ := json.Marshal(c.input(m))
		return Response{ToolCalls: []ToolCall{{ID: id, Name: c.tool, Input: raw}}, StopReason: "tool_use"}
	}
	return Response{Text: "I understand: list pending orders, list orders, show order <id>, list shipments, show shipment <id>, " +
		"hold shipment <id>, add note <text> to order <id>, set status of order <id> to <status>, create shipment for order <id>, " +
		"rates for order <id>, list carrier accounts, list operations, carrier performance, create operation <name>, " +
		"add orders <ids> to operation <id>, apply <action> <ref> to items <ids> of operation <id>, execute operation <id>, " +
		"evaluate dispatchers for order <id>, remember <text>.", StopReason: "end_turn"}
}

// sandboxSummary words the results of the last tool calls.
func sandboxSummary(results []ToolResult) string {
	var parts []string
	for _, r := range results {
		c := r.Content
		switch {
		case r.IsError:
			parts = append(parts, "The tool failed: "+clip(c, 300))
		case strings.Contains(c, `"status":"awaiting_approval"`):
			var w struct {
				ActionID string `json:"action_id"`
			}
			_ = json.Unmarshal([]byte(c), &w)
			parts = append(parts, "This change needs approval: pending action "+w.ActionID+".")
		default:
			parts = append(parts, "Result: "+clip(c, 300))
		}
	}
	return strings.Join(parts, "\n")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
