package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/routing"
)

// The tools over the operations, insights and routing domains (CONTRACT
// 11): carrier_performance and list_operations read; create_operation,
// add_operation_items, apply_operation_action, execute_operation and
// evaluate_dispatchers write. Each calls the domain Service the API's
// handlers call, as the agent acting for the caller, and answers with the
// API's own JSON shapes (camelCase, as those endpoints answer).

const operationStatusEnum = `["draft","pending","executing","paused","completed","cancelled","failed"]`

func uuidList(max int) string {
	return fmt.Sprintf(`{"type":"array","minItems":1,"maxItems":%d,"uniqueItems":true,"items":{"type":"string","pattern":"%s"}}`, max, uuidPattern)
}

func parseIDs(list []string, what string) ([]uuid.UUID, error) {
	out := make([]uuid.UUID, 0, len(list))
	for _, s := range list {
		id, err := uuid.Parse(strings.TrimSpace(s))
		if err != nil {
			return nil, domain.InvalidField(what, "must hold UUIDs")
		}
		out = append(out, id)
	}
	return out, nil
}

func operationToolDefs() []toolDef {
	return []toolDef{
		{port: "insights", Tool: Tool{
			Name: "carrier_performance", Description: "Per carrier over the last days (default 30): on-time rate, average transit days, cost per package, shipment counts and trends.",
			Scope:  "insights:read",
			Schema: json.RawMessage(`{"type":"object","properties":{"days":{"type":"integer","minimum":1,"maximum":365}},"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct{ Days int }
				_ = c.decode(&in)
				list, err := t.Performance.CarrierPerformance(ctx, c.Actor, in.Days)
				if err != nil {
					return nil, err
				}
				items := make([]map[string]any, 0, len(list))
				for _, p := range list {
					items = append(items, performanceJSON(p))
				}
				return map[string]any{"items": items}, nil
			},
		}},
		{port: "operations", Tool: Tool{
			Name: "list_operations", Description: "List the organization's bulk operations, most recently updated first; filter by status.",
			Scope:  operations.ScopeRead,
			Schema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","enum":` + operationStatusEnum + `},"limit":{"type":"integer","minimum":1,"maximum":50}},"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					Status string
					Limit  int
				}
				_ = c.decode(&in)
				if in.Limit == 0 {
					in.Limit = 20
				}
				list, total, err := t.Operations.List(ctx, c.Actor, operations.ListInput{Status: in.Status, Limit: in.Limit})
				if err != nil {
					return nil, err
				}
				items := make([]map[string]any, 0, len(list))
				for _, o := range list {
					items = append(items, operationJSON(o))
				}
				return map[string]any{"items": items, "total": total}, nil
			},
		}},
		{port: "operations", Tool: Tool{
			Name: "create_operation", Description: "Create a bulk operation (in draft) to which orders are then added.",
			Scope: operations.ScopeWrite, Write: true, Risk: 0.2,
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":255},"description":{"type":"string","maxLength":1000}},"required":["name"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				return fmt.Sprintf("Create the operation %q", clip(str(m, "name"), 200))
			},
			affected: func(context.Context, *Tools, Call) (Affected, error) { return Affected{}, nil },
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					Name        string  `json:"name"`
					Description *string `json:"description"`
				}
				_ = c.decode(&in)
				// The id derives from the call: a run that repeats finds
				// the operation it created.
				op, err := t.Operations.Create(ctx, c.Actor, operations.CreateInput{ID: c.keyID("operation"), Name: in.Name, Description: in.Description})
				if err != nil {
					return nil, err
				}
				return operationJSON(op), nil
			},
		}},
		{port: "operations", Tool: Tool{
			Name: "add_operation_items", Description: "Add orders (1-500 ids) to a draft operation; orders already in it are ignored.",
			Scope: operations.ScopeWrite, Write: true, Risk: 0.3,
			Schema: json.RawMessage(`{"type":"object","properties":{"operation_id":{"type":"string","pattern":"` + uuidPattern + `"},"order_ids":` + uuidList(operations.MaxIDs) + `},"required":["operation_id","order_ids"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				n, _ := m["order_ids"].([]any)
				return fmt.Sprintf("Add %d order(s) to operation %s", len(n), str(m, "operation_id"))
			},
			affected: func(ctx context.Context, t *Tools, c Call) (Affected, error) {
				var in struct {
					OrderIDs []string `json:"order_ids"`
				}
				_ = c.decode(&in)
				ids, _ := parseIDs(in.OrderIDs, "order_ids")
				return Affected{Items: len(ids), OrderIDs: ids}, nil
			},
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OperationID string   `json:"operation_id"`
					OrderIDs    []string `json:"order_ids"`
				}
				_ = c.decode(&in)
				opID, err := parseID(in.OperationID, "operation")
				if err != nil {
					return nil, err
				}
				ids, err := parseIDs(in.OrderIDs, "order_ids")
				if err != nil {
					return nil, err
				}
				added, err := t.Operations.AddItems(ctx, c.Actor, opID, ids)
				if err != nil {
					return nil, err
				}
				items := make([]map[string]any, 0, len(added))
				for _, it := range added {
					items = append(items, itemJSON(it))
				}
				return map[string]any{"added": len(added), "items": items}, nil
			},
		}},
		{port: "operations", Tool: Tool{
			Name: "apply_operation_action", Description: "Apply an action to items (1-500 item ids) of a draft operation: assign-rate {rateSnapshotId}, override-carrier {carrierAccountId} or override-dispatcher {bridgeId}.",
			Scope: operations.ScopeWrite, Write: true, Risk: 0.4,
			Schema: json.RawMessage(`{"type":"object","properties":{"operation_id":{"type":"string","pattern":"` + uuidPattern + `"},"item_ids":` + uuidList(operations.MaxIDs) +
				`,"action":{"type":"object","properties":{"type":{"type":"string","enum":["assign-rate","override-carrier","override-dispatcher"]},"config":{"type":"object"}},"required":["type","config"],"additionalProperties":false}},"required":["operation_id","item_ids","action"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				n, _ := m["item_ids"].([]any)
				a, _ := m["action"].(map[string]any)
				return fmt.Sprintf("Apply %s to %d item(s) of operation %s", str(a, "type"), len(n), str(m, "operation_id"))
			},
			affected: func(ctx context.Context, t *Tools, c Call) (Affected, error) {
				var in struct {
					OperationID string   `json:"operation_id"`
					ItemIDs     []string `json:"item_ids"`
				}
				_ = c.decode(&in)
				ids, _ := parseIDs(in.ItemIDs, "item_ids")
				opID, err := parseID(in.OperationID, "operation")
				if err != nil {
					return Affected{}, err
				}
				orders, err := t.Operations.ItemOrders(ctx, c.Actor, opID, ids)
				if err != nil {
					return Affected{}, err
				}
				return Affected{Items: max(len(ids), len(orders)), OrderIDs: orders}, nil
			},
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OperationID string            `json:"operation_id"`
					ItemIDs     []string          `json:"item_ids"`
					Action      operations.Action `json:"action"`
				}
				_ = c.decode(&in)
				opID, err := parseID(in.OperationID, "operation")
				if err != nil {
					return nil, err
				}
				ids, err := parseIDs(in.ItemIDs, "item_ids")
				if err != nil {
					return nil, err
				}
				n, err := t.Operations.ApplyAction(ctx, c.Actor, opID, ids, in.Action)
				if err != nil {
					return nil, err
				}
				return map[string]any{"success": true, "applied": n, "action": in.Action}, nil
			},
		}},
		{port: "operations", Tool: Tool{
			Name: "execute_operation", Description: "Execute a draft or pending operation: every item runs (labels are bought, orders dispatched).",
			Scope: operations.ScopeExecute, Write: true, Risk: 0.9, Money: true,
			Schema:   json.RawMessage(`{"type":"object","properties":{"operation_id":{"type":"string","pattern":"` + uuidPattern + `"}},"required":["operation_id"],"additionalProperties":false}`),
			describe: func(m map[string]any) string { return "Execute operation " + str(m, "operation_id") },
			affected: func(ctx context.Context, t *Tools, c Call) (Affected, error) {
				var in struct {
					OperationID string `json:"operation_id"`
				}
				_ = c.decode(&in)
				opID, err := parseID(in.OperationID, "operation")
				if err != nil {
					return Affected{}, err
				}
				read := c.Actor
				read.Scoped = false // weighing the operation is part of executing it
				op, err := t.Operations.Get(ctx, read, opID)
				if err != nil {
					return Affected{}, err
				}
				orders, err := t.Operations.ItemOrders(ctx, read, opID, nil)
				if err != nil {
					return Affected{}, err
				}
				return Affected{Items: max(int(op.ItemCount), len(orders)), OrderIDs: orders, Cost: op.TotalEstimatedCost}, nil
			},
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OperationID string `json:"operation_id"`
				}
				_ = c.decode(&in)
				opID, err := parseID(in.OperationID, "operation")
				if err != nil {
					return nil, err
				}
				op, err := t.Operations.Execute(ctx, c.Actor, opID)
				if err != nil {
					return nil, err
				}
				return operationJSON(op), nil
			},
		}},
		{port: "routing", Tool: Tool{
			Name: "evaluate_dispatchers", Description: "Run every active dispatcher of the order's bridge on the order now; it is assigned (and sent) to the destination of each that matches.",
			Scope: routing.ScopeWrite, Write: true, Risk: 0.5,
			Schema:   json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"` + uuidPattern + `"}},"required":["order_id"],"additionalProperties":false}`),
			describe: func(m map[string]any) string { return "Run the dispatchers on order " + str(m, "order_id") },
			affected: orderAffected("order_id"),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OrderID string `json:"order_id"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.OrderID, "order")
				if err != nil {
					return nil, err
				}
				created, err := t.Dispatchers.EvaluateDispatchers(ctx, c.Actor, id)
				if err != nil {
					return nil, err
				}
				items := make([]map[string]any, 0, len(created))
				for _, a := range created {
					items = append(items, assignmentJSON(a))
				}
				return map[string]any{"orderId": id, "assignmentsCreated": len(created), "assignments": items}, nil
			},
		}},
	}
}

// operationJSON is an operation as GET /operations/:id shows it.
func operationJSON(o operations.Operation) map[string]any {
	return map[string]any{
		"id": o.ID, "organizationId": o.OrganizationID, "name": o.Name, "description": o.Description, "status": o.Status,
		"itemCount": o.ItemCount, "pendingCount": o.PendingCount, "processingCount": o.ProcessingCount,
		"completedCount": o.CompletedCount, "failedCount": o.FailedCount, "skippedCount": o.SkippedCount,
		"totalEstimatedCost": o.TotalEstimatedCost, "currency": o.Currency, "createdBy": o.CreatedBy,
		"startedAt": o.StartedAt, "completedAt": o.CompletedAt, "errorMessage": o.ErrorMessage,
		"createdAt": o.CreatedAt.Format(time.RFC3339Nano), "updatedAt": o.UpdatedAt.Format(time.RFC3339Nano),
	}
}

// itemJSON is an operation item as POST /operations/:id/items shows it.
func itemJSON(i operations.Item) map[string]any {
	return map[string]any{
		"id": i.ID, "organizationId": i.OrganizationID, "operationId": i.OperationID, "orderId": i.OrderID, "status": i.Status,
		"rateSnapshotId": i.RateSnapshotID, "overrideCarrierAccountId": i.OverrideCarrierAccountID,
		"overrideDispatchBridgeId": i.OverrideDispatchBridgeID, "pendingActions": json.RawMessage(jsonOr(i.PendingActions, "[]")),
		"appliedActions": json.RawMessage(jsonOr(i.AppliedActions, "[]")), "retryCount": i.RetryCount,
		"errorMessage": i.ErrorMessage, "shipmentId": i.ShipmentID,
		"createdAt": i.CreatedAt.Format(time.RFC3339Nano), "updatedAt": i.UpdatedAt.Format(time.RFC3339Nano),
	}
}

// assignmentJSON is a dispatch assignment as the dispatchers API shows it.
func assignmentJSON(a routing.Assignment) map[string]any {
	return map[string]any{
		"id": a.ID, "organizationId": a.OrganizationID, "dispatcherId": a.DispatcherID, "orderId": a.OrderID,
		"destinationBridgeId": a.DestinationBridgeID, "status": a.Status, "taskExecutionId": a.TaskExecutionID,
		"processedAt": a.ProcessedAt, "errorMessage": a.ErrorMessage, "retryCount": a.RetryCount,
		"metadata": json.RawMessage(jsonOr(a.Metadata, "{}")), "assignedAt": a.AssignedAt, "createdAt": a.CreatedAt, "updatedAt": a.UpdatedAt,
	}
}

// performanceJSON is a carrier performance entry as
// GET /insights/carriers/performance shows it.
func performanceJSON(p insights.CarrierPerformance) map[string]any {
	return map[string]any{
		"carrierId": p.CarrierID, "carrierName": p.CarrierName, "onTimeRate": p.OnTimeRate,
		"averageTransitDays": p.AverageTransitDays, "costPerPackage": p.CostPerPackage,
		"totalShipments": p.TotalShipments, "deliveredCount": p.DeliveredCount,
		"onTimeTrend": p.OnTimeTrend, "costTrend": p.CostTrend,
		"dateRange": map[string]any{"start": p.Start, "end": p.End},
	}
}

func jsonOr(raw json.RawMessage, def string) []byte {
	if len(raw) == 0 {
		return []byte(def)
	}
	return raw
}
