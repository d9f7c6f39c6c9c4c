package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
)

// The tools (CONTRACT 11): the service's own operations called in-process
// through the domain services, each with a JSON Schema for its input,
// read or write, a fixed risk and the scope its caller needs. A tool's
// organization and actor come from the conversation, never from its input.

// Tool is one tool.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
	// Write: a change that needs approval unless its permission allows it.
	Write bool
	// Risk is fixed per tool, 0.1 (a note) to 0.9 (executing an operation).
	Risk float64
	// Scope is what the caller needs for the tool to be offered.
	Scope string
	// Money: the tool buys labels (budget_cap_daily applies).
	Money bool
	// Internal: the agent's own bookkeeping (remember): never approved.
	Internal bool

	schema *jsonschema.Schema
	run    func(ctx context.Context, t *Tools, c Call) (any, error)
	// affected lists the orders and the number of items a write touches.
	affected func(ctx context.Context, t *Tools, c Call) (Affected, error)
	describe func(in map[string]any) string
}

// Call is one run of a tool.
type Call struct {
	Actor domain.Actor
	Input json.RawMessage
	// Key is stable across runs of the same call (the pending action's
	// idempotency key, the tool call's id): a write that names its result
	// (a shipment, an action) derives its id from it.
	Key string
	// ConversationID is the conversation the call belongs to.
	ConversationID uuid.UUID
}

// Affected is what a write touches.
type Affected struct {
	Items    int
	OrderIDs []uuid.UUID
	// Cost is the label money the write is known to spend before it runs
	// (an operation's estimate; 0 when only its result tells).
	Cost float64
}

func (c Call) decode(v any) error {
	return json.Unmarshal(c.Input, v)
}

// keyID is a stable uuid derived from the call's key and a purpose.
func (c Call) keyID(purpose string) uuid.UUID {
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte("fos-agent:"+purpose+":"+c.Key))
}

// Tools is the registry over the domain ports.
type Tools struct {
	Orders      Orders
	Shipping    Shipping
	Accounts    CarrierAccounts
	Memory      MemoryWriter
	Operations  Operations
	Performance Performance
	Dispatchers Dispatchers
	byName      map[string]*Tool
	names       []string
	ResultSize  int
}

// CarrierAccounts lists the organization's carrier accounts (no secrets).
type CarrierAccounts interface {
	ListCarrierAccounts(ctx context.Context, actor domain.Actor) ([]map[string]any, error)
}

// MemoryWriter keeps a memory entry (the remember tool).
type MemoryWriter interface {
	Remember(ctx context.Context, actor domain.Actor, conversationID uuid.UUID, key uuid.UUID, category, content string) (map[string]any, error)
}

// DefaultResultSize is the size budget of a tool result given to the
// model, in bytes.
const DefaultResultSize = 8000

// Ports are the domain services the tools call; a tool whose port is nil
// is not offered.
type Ports struct {
	Orders      Orders
	Shipping    Shipping
	Accounts    CarrierAccounts
	Memory      MemoryWriter
	Operations  Operations
	Performance Performance
	Dispatchers Dispatchers
}

// NewTools builds the registry of the orders, shipping, carrier account
// and memory tools.
func NewTools(orders Orders, ship Shipping, accounts CarrierAccounts, mem MemoryWriter) (*Tools, error) {
	return NewToolsFrom(Ports{Orders: orders, Shipping: ship, Accounts: accounts, Memory: mem})
}

// NewToolsFrom builds the registry over p; a tool whose port is nil is
// not offered.
func NewToolsFrom(p Ports) (*Tools, error) {
	t := &Tools{Orders: p.Orders, Shipping: p.Shipping, Accounts: p.Accounts, Memory: p.Memory, Operations: p.Operations,
		Performance: p.Performance, Dispatchers: p.Dispatchers, byName: map[string]*Tool{}, ResultSize: DefaultResultSize}
	for _, def := range append(toolDefs(), operationToolDefs()...) {
		switch {
		case def.port == "orders" && p.Orders == nil,
			def.port == "shipping" && p.Shipping == nil,
			def.port == "accounts" && p.Accounts == nil,
			def.port == "memory" && p.Memory == nil,
			def.port == "operations" && p.Operations == nil,
			def.port == "insights" && p.Performance == nil,
			def.port == "routing" && p.Dispatchers == nil:
			continue
		}
		tool := def.Tool
		c := jsonschema.NewCompiler()
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(tool.Schema))
		if err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", tool.Name, err)
		}
		if err := c.AddResource(tool.Name+".json", doc); err != nil {
			return nil, err
		}
		if tool.schema, err = c.Compile(tool.Name + ".json"); err != nil {
			return nil, fmt.Errorf("tool %s schema: %w", tool.Name, err)
		}
		t.byName[tool.Name] = &tool
		t.names = append(t.names, tool.Name)
	}
	sort.Strings(t.names)
	return t, nil
}

// Get is the tool of that name.
func (t *Tools) Get(name string) (*Tool, bool) {
	tool, ok := t.byName[name]
	return tool, ok
}

// Names are every tool's name, sorted.
func (t *Tools) Names() []string { return t.names }

// WriteTools are the names of the write tools (the tool permissions).
func (t *Tools) WriteTools() []string {
	var out []string
	for _, n := range t.names {
		if tool := t.byName[n]; tool.Write && !tool.Internal {
			out = append(out, n)
		}
	}
	return out
}

// Offered are the tools the actor may use, sorted by name.
func (t *Tools) Offered(actor domain.Actor) []*Tool {
	var out []*Tool
	for _, n := range t.names {
		tool := t.byName[n]
		if tool.Scope == "" || actor.HasScope(tool.Scope) {
			out = append(out, tool)
		}
	}
	return out
}

// Validate checks input against the tool's schema; the error names what
// failed, for the model.
func (tool *Tool) Validate(input json.RawMessage) error {
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return fmt.Errorf("the input is not valid JSON")
	}
	if err := tool.schema.Validate(inst); err != nil {
		msg := err.Error()
		if ve, ok := err.(*jsonschema.ValidationError); ok {
			msg = strings.TrimSpace(fmt.Sprintf("%v", ve))
		}
		return fmt.Errorf("the input does not match the tool's schema: %s", clip(msg, 500))
	}
	return nil
}

// Describe words a write for its pending action.
func (tool *Tool) Describe(input json.RawMessage) string {
	var m map[string]any
	_ = json.Unmarshal(input, &m)
	if tool.describe != nil {
		return clip(tool.describe(m), 500)
	}
	return tool.Name
}

// Affected is what the call touches (1 item when the tool does not say).
func (t *Tools) Affected(ctx context.Context, tool *Tool, c Call) (Affected, error) {
	if tool.affected == nil {
		return Affected{Items: 1}, nil
	}
	return tool.affected(ctx, t, c)
}

// Run runs the tool. The input must have been validated.
func (t *Tools) Run(ctx context.Context, tool *Tool, c Call) (any, error) {
	if tool.Scope != "" {
		if err := c.Actor.RequireScope(tool.Scope); err != nil {
			return nil, err
		}
	}
	return tool.run(ctx, t, c)
}

// Result is a tool's answer as given to the model: its JSON, secrets
// redacted, trimmed to the size budget.
func (t *Tools) Result(v any) string {
	raw, err := json.Marshal(v)
	if err != nil {
		return `{"error":"the result could not be encoded"}`
	}
	var doc any
	if json.Unmarshal(raw, &doc) == nil {
		doc = redactSecrets(doc)
		raw, _ = json.Marshal(doc)
	}
	size := t.ResultSize
	if size <= 0 {
		size = DefaultResultSize
	}
	if len(raw) <= size {
		return string(raw)
	}
	// Lists lose items from the end until they fit.
	if m, ok := doc.(map[string]any); ok {
		if items, ok := m["items"].([]any); ok {
			for len(items) > 0 {
				items = items[:len(items)/2]
				m["items"], m["truncated"] = items, true
				if raw, _ = json.Marshal(m); len(raw) <= size {
					return string(raw)
				}
			}
		}
	}
	cut, _ := json.Marshal(map[string]any{"truncated": true, "preview": string(bytes.ToValidUTF8(raw[:size/2], nil))})
	return string(cut)
}

var secretKey = regexp.MustCompile(`(?i)(secret|password|passwd|token|api_?key|apikey|credential|private_?key|authorization)`)

// redactSecrets replaces the values of keys that name a secret.
func redactSecrets(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if secretKey.MatchString(k) {
				if val != nil {
					x[k] = "[redacted]"
				}
				continue
			}
			x[k] = redactSecrets(val)
		}
	case []any:
		for i := range x {
			x[i] = redactSecrets(x[i])
		}
	}
	return v
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

type toolDef struct {
	Tool
	port string
}

const uuidPattern = `^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`

func parseID(s, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(strings.TrimSpace(s))
	if err != nil {
		return uuid.Nil, domain.NotFound(what)
	}
	return id, nil
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func toolDefs() []toolDef {
	return []toolDef{
		{port: "orders", Tool: Tool{
			Name: "list_orders", Description: "List the organization's orders, newest first; filter by status or a search text (order number, customer name or e-mail).",
			Scope: "orders:read", Risk: 0,
			Schema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","enum":["pending","confirmed","processing","shipped","delivered","cancelled","refunded","on_hold"]},"search":{"type":"string","maxLength":200},"limit":{"type":"integer","minimum":1,"maximum":50}},"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					Status, Search string
					Limit          int
				}
				_ = c.decode(&in)
				if in.Limit == 0 {
					in.Limit = 20
				}
				items, total, err := t.Orders.ListOrders(ctx, c.Actor, OrderQuery{Status: in.Status, Search: in.Search, Limit: in.Limit})
				if err != nil {
					return nil, err
				}
				return map[string]any{"items": items, "total": total}, nil
			},
		}},
		{port: "orders", Tool: Tool{
			Name: "get_order", Description: "Show one order by its id or order number.", Scope: "orders:read",
			Schema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string","minLength":1,"maxLength":100}},"required":["order"],"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct{ Order string }
				_ = c.decode(&in)
				return t.Orders.GetOrder(ctx, c.Actor, in.Order)
			},
		}},
		{port: "orders", Tool: Tool{
			Name: "add_order_note", Description: "Add a note to an order's history.", Scope: "orders:write", Write: true, Risk: 0.1,
			Schema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"` + uuidPattern + `"},"note":{"type":"string","minLength":1,"maxLength":5000}},"required":["order_id","note"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				return fmt.Sprintf("Add note %q to order %s", clip(str(m, "note"), 200), str(m, "order_id"))
			},
			affected: orderAffected("order_id"),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OrderID string `json:"order_id"`
					Note    string `json:"note"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.OrderID, "order")
				if err != nil {
					return nil, err
				}
				return t.Orders.AddOrderNote(ctx, c.Actor, id, strings.TrimSpace(in.Note))
			},
		}},
		{port: "orders", Tool: Tool{
			Name: "update_order", Description: "Change an order's status or tags.", Scope: "orders:write", Write: true, Risk: 0.4,
			Schema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"` + uuidPattern + `"},"status":{"type":"string","enum":["pending","confirmed","processing","shipped","delivered","cancelled","refunded","on_hold"]},"tags":{"type":"array","maxItems":100,"items":{"type":"string","maxLength":100}}},"required":["order_id"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				if s := str(m, "status"); s != "" {
					return fmt.Sprintf("Set the status of order %s to %s", str(m, "order_id"), s)
				}
				return "Update order " + str(m, "order_id")
			},
			affected: orderAffected("order_id"),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OrderID string   `json:"order_id"`
					Status  *string  `json:"status"`
					Tags    []string `json:"tags"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.OrderID, "order")
				if err != nil {
					return nil, err
				}
				return t.Orders.UpdateOrder(ctx, c.Actor, id, OrderUpdate{Status: in.Status, Tags: in.Tags})
			},
		}},
		{port: "shipping", Tool: Tool{
			Name: "list_shipments", Description: "List the organization's shipments, newest first; filter by status or order.", Scope: "shipments:read",
			Schema: json.RawMessage(`{"type":"object","properties":{"status":{"type":"string","maxLength":50},"order_id":{"type":"string","pattern":"` + uuidPattern + `"},"limit":{"type":"integer","minimum":1,"maximum":50}},"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					Status  string `json:"status"`
					OrderID string `json:"order_id"`
					Limit   int    `json:"limit"`
				}
				_ = c.decode(&in)
				if in.Limit == 0 {
					in.Limit = 20
				}
				q := shipping.ListShipmentsInput{Status: in.Status, Limit: in.Limit, Desc: true}
				if in.OrderID != "" {
					id, _ := uuid.Parse(in.OrderID)
					q.OrderID = &id
				}
				page, err := t.Shipping.ListShipments(ctx, c.Actor, q)
				if err != nil {
					return nil, err
				}
				items := make([]map[string]any, 0, len(page.Items))
				for _, sh := range page.Items {
					items = append(items, shipmentJSON(sh))
				}
				return map[string]any{"items": items, "total": page.Total}, nil
			},
		}},
		{port: "shipping", Tool: Tool{
			Name: "get_shipment", Description: "Show one shipment.", Scope: "shipments:read",
			Schema: json.RawMessage(`{"type":"object","properties":{"shipment_id":{"type":"string","pattern":"` + uuidPattern + `"}},"required":["shipment_id"],"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					ShipmentID string `json:"shipment_id"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.ShipmentID, "shipment")
				if err != nil {
					return nil, err
				}
				page, err := t.Shipping.GetShipment(ctx, c.Actor, id, false, false)
				if err != nil {
					return nil, err
				}
				if len(page.Items) == 0 {
					return nil, domain.NotFound("shipment")
				}
				return shipmentJSON(page.Items[0]), nil
			},
		}},
		{port: "shipping", Tool: Tool{
			Name: "get_rates", Description: "Quote shipping rates for an order from every active carrier account.", Scope: "rates:read",
			Schema: json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"` + uuidPattern + `"}},"required":["order_id"],"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					OrderID string `json:"order_id"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.OrderID, "order")
				if err != nil {
					return nil, err
				}
				q, err := t.Shipping.QuoteOrder(ctx, c.Actor, id, shipping.RateOptions{})
				if err != nil {
					return nil, err
				}
				var rates []map[string]any
				for _, r := range q.Results {
					for _, qt := range r.Quotes {
						rates = append(rates, map[string]any{"carrier_account_id": r.AccountID, "carrier": r.Carrier, "service": qt.ServiceType,
							"service_name": qt.ServiceName, "total_price": qt.TotalPrice, "currency": qt.Currency, "transit_days": qt.TransitDays})
					}
				}
				sort.SliceStable(rates, func(i, j int) bool { return rates[i]["total_price"].(float64) < rates[j]["total_price"].(float64) })
				return map[string]any{"items": rates}, nil
			},
		}},
		{port: "shipping", Tool: Tool{
			Name: "shipment_action", Description: "Ask the carrier to hold, redirect or redeliver a shipment, or to follow delivery instructions.",
			Scope: "shipments:write", Write: true, Risk: 0.5,
			Schema: json.RawMessage(`{"type":"object","properties":{"shipment_id":{"type":"string","pattern":"` + uuidPattern + `"},"action_type":{"type":"string","enum":["hold","redirect","redeliver","instructions"]},"reason":{"type":"string","maxLength":100},"notes":{"type":"string","maxLength":500},"instructions":{"type":"string","maxLength":500}},"required":["shipment_id","action_type"],"additionalProperties":false}`),
			describe: func(m map[string]any) string {
				return fmt.Sprintf("Send a %s request to the carrier for shipment %s", str(m, "action_type"), str(m, "shipment_id"))
			},
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct {
					ShipmentID   string `json:"shipment_id"`
					ActionType   string `json:"action_type"`
					Reason       string `json:"reason"`
					Notes        string `json:"notes"`
					Instructions string `json:"instructions"`
				}
				_ = c.decode(&in)
				id, err := parseID(in.ShipmentID, "shipment")
				if err != nil {
					return nil, err
				}
				if in.ActionType == "hold" && in.Reason == "" {
					in.Reason = "customer_request"
				}
				res, err := t.Shipping.RequestAction(ctx, c.Actor, id, shipping.ActionInput{ID: c.keyID("shipment-action"), Type: in.ActionType,
					Reason: in.Reason, Notes: in.Notes, Instructions: in.Instructions})
				if err != nil {
					return nil, err
				}
				return map[string]any{"action_id": res.ActionID, "status": res.Status, "shipment_id": id}, nil
			},
		}},
		{port: "shipping", Tool: Tool{
			Name: "create_shipment", Description: "Buy a shipping label for an order: with the carrier account and service given, else at the cheapest quote.",
			Scope: "shipments:write", Write: true, Risk: 0.7, Money: true,
			Schema:   json.RawMessage(`{"type":"object","properties":{"order_id":{"type":"string","pattern":"` + uuidPattern + `"},"carrier_account_id":{"type":"string","pattern":"` + uuidPattern + `"},"service":{"type":"string","maxLength":100}},"required":["order_id"],"additionalProperties":false}`),
			describe: func(m map[string]any) string { return "Buy a shipping label for order " + str(m, "order_id") },
			affected: orderAffected("order_id"),
			run:      createShipment,
		}},
		{port: "accounts", Tool: Tool{
			Name: "list_carrier_accounts", Description: "List the organization's carrier accounts (no credentials).", Scope: "carriers:read",
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				list, err := t.Accounts.ListCarrierAccounts(ctx, c.Actor)
				if err != nil {
					return nil, err
				}
				return map[string]any{"items": list}, nil
			},
		}},
		{port: "memory", Tool: Tool{
			Name: "remember", Description: "Keep a fact, preference or decision for later conversations.", Write: true, Internal: true,
			Schema: json.RawMessage(`{"type":"object","properties":{"content":{"type":"string","minLength":1,"maxLength":2000},"category":{"type":"string","enum":["preference","fact","decision"]}},"required":["content"],"additionalProperties":false}`),
			run: func(ctx context.Context, t *Tools, c Call) (any, error) {
				var in struct{ Content, Category string }
				_ = c.decode(&in)
				if in.Category == "" {
					in.Category = "fact"
				}
				return t.Memory.Remember(ctx, c.Actor, c.ConversationID, c.keyID("memory"), in.Category, in.Content)
			},
		}},
	}
}

func orderAffected(field string) func(ctx context.Context, t *Tools, c Call) (Affected, error) {
	return func(ctx context.Context, t *Tools, c Call) (Affected, error) {
		var m map[string]any
		_ = json.Unmarshal(c.Input, &m)
		id, err := uuid.Parse(str(m, field))
		if err != nil {
			return Affected{Items: 1}, nil
		}
		return Affected{Items: 1, OrderIDs: []uuid.UUID{id}}, nil
	}
}

// createShipment buys a label through the shipping domain's money-safe
// course; the shipment id derives from the call's key, so a run that
// repeats joins the same purchase and never buys twice.
func createShipment(ctx context.Context, t *Tools, c Call) (any, error) {
	var in struct {
		OrderID          string `json:"order_id"`
		CarrierAccountID string `json:"carrier_account_id"`
		Service          string `json:"service"`
	}
	_ = c.decode(&in)
	orderID, err := parseID(in.OrderID, "order")
	if err != nil {
		return nil, err
	}
	var acct uuid.UUID
	service := in.Service
	if in.CarrierAccountID != "" && service != "" {
		if acct, err = parseID(in.CarrierAccountID, "carrier account"); err != nil {
			return nil, err
		}
	} else {
		opts := shipping.RateOptions{}
		if in.CarrierAccountID != "" {
			id, err := parseID(in.CarrierAccountID, "carrier account")
			if err != nil {
				return nil, err
			}
			opts.CarrierAccountID = &id
		}
		rateActor := c.Actor
		rateActor.Scoped = false // reading rates is part of buying the label the caller may buy
		q, err := t.Shipping.QuoteOrder(ctx, rateActor, orderID, opts)
		if err != nil {
			return nil, err
		}
		best := -1.0
		for _, r := range q.Results {
			for _, qt := range r.Quotes {
				if service != "" && qt.ServiceType != service {
					continue
				}
				if best < 0 || qt.TotalPrice < best {
					best, service = qt.TotalPrice, qt.ServiceType
					acct, _ = uuid.Parse(r.AccountID)
				}
			}
		}
		if best < 0 {
			return nil, domain.InvalidCode("no_active_carrier_account", "no carrier account quoted a rate for this order")
		}
	}
	sh, err := t.Shipping.CreateShipment(ctx, c.Actor, shipping.CreateShipmentInput{
		ID: c.keyID("shipment"), OrderID: orderID, CarrierAccountID: acct, Service: service,
		Parcels: []shipping.Parcel{{Length: 10, Width: 8, Height: 4, Weight: 2, Unit: "lb"}},
	})
	if err != nil {
		return nil, err
	}
	return shipmentJSON(sh), nil
}

// shipmentJSON is a shipment as the API shows it (snake_case), without
// the carrier's raw response.
func shipmentJSON(sh shipping.Shipment) map[string]any {
	var rate any
	if sh.RateAmount != nil {
		cur := "USD"
		if sh.RateCurrency != nil {
			cur = *sh.RateCurrency
		}
		rate = map[string]any{"amount": *sh.RateAmount, "currency": cur}
	}
	var shipDate any
	if sh.ShipDate != nil {
		shipDate = sh.ShipDate.Format("2006-01-02")
	}
	return map[string]any{
		"id": sh.ID, "order_id": sh.OrderID, "status": sh.Status, "carrier": sh.Carrier, "service": sh.Service,
		"tracking_number": sh.TrackingNumber, "rate": rate, "ship_date": shipDate, "ship_to": json.RawMessage(orJSON(sh.ShipTo)),
		"created_at": sh.CreatedAt.Format(time.RFC3339),
	}
}

func orJSON(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null")
	}
	return raw
}
