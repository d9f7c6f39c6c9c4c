package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/store"
)

// mountOrders registers the order endpoints (spec Part 1, Orders), except
// POST /orders/{id}/resync, which is mountOrderResync's. Routes are flat (no
// sub-router) so that the resync route can sit beside them.
func (s *Server) mountOrders(r chi.Router) {
	read := r.With(s.scope("orders:read"))
	write := r.With(s.scope("orders:write"))
	read.Get("/orders", s.h(s.listOrders))
	write.Post("/orders", s.h(s.createOrder))
	read.Get("/orders/{id}", s.h(s.getOrder))
	write.Patch("/orders/{id}", s.h(s.updateOrder))
	write.Delete("/orders/{id}", s.h(s.deleteOrder))
	read.Get("/orders/{id}/activities", s.h(s.listOrderActivities))
	write.Post("/orders/{id}/notes", s.h(s.addOrderNote))
}

// Bounds the specification leaves open.
const (
	orderMaxLineItems = 1000
	orderMaxTags      = 100
	orderMaxTagLen    = 100
	orderMaxNoteLen   = 5000
	orderMaxSearchLen = 200
	orderMaxQuantity  = 1_000_000
	// orderMaxMoney keeps totals.total inside the numeric(14,2) column.
	orderMaxMoney = 999_999_999_999.99
)

// orderDetailJSON is GET /orders/{id} and the PATCH response: the full
// order, the sync timestamps and, with include, the related objects.
type orderDetailJSON struct {
	rules.OrderDetailJSON
	// Present only when included; null when the bridge is gone.
	Bridge              json.RawMessage `json:"bridge,omitempty"`
	DispatchAssignments json.RawMessage `json:"dispatchAssignments,omitempty"`
}

func toOrderDetailJSON(o store.Order) orderDetailJSON {
	return orderDetailJSON{OrderDetailJSON: rules.OrderDetailJSONOf(o)}
}

// orderListItemJSON is the list item (snake_case).
type orderListItemJSON struct {
	ID                uuid.UUID             `json:"id"`
	OrderNumber       *string               `json:"order_number"`
	Status            string                `json:"status"`
	Customer          orderListCustomerJSON `json:"customer"`
	LineItems         json.RawMessage       `json:"line_items"`
	Total             float64               `json:"total"`
	Currency          string                `json:"currency"`
	BridgeID          *uuid.UUID            `json:"bridge_id"`
	ExternalID        string                `json:"external_id"`
	SentToFulfillment *time.Time            `json:"sent_to_fulfillment"`
	SentToCart        *time.Time            `json:"sent_to_cart"`
	CreatedAt         time.Time             `json:"created_at"`
	UpdatedAt         time.Time             `json:"updated_at"`
	// Present only when included; bridge is null when the bridge is gone.
	Bridge              json.RawMessage `json:"bridge,omitempty"`
	DispatchAssignments json.RawMessage `json:"dispatch_assignments,omitempty"`
}

type orderListCustomerJSON struct {
	Name  *string `json:"name"`
	Email string  `json:"email"`
}

// orderBridgeJSON is the bridge of include=bridge.
type orderBridgeJSON struct {
	ID     uuid.UUID `json:"id"`
	Name   string    `json:"name"`
	Type   string    `json:"type"`
	Status string    `json:"status"`
}

// orderActorJSON is who did an activity.
type orderActorJSON struct {
	Type string  `json:"type"`
	ID   *string `json:"id"`
	Name *string `json:"name"`
}

// orderActivityJSON is an order activity.
type orderActivityJSON struct {
	ID          uuid.UUID      `json:"id"`
	Type        string         `json:"type"`
	Description string         `json:"description"`
	Actor       orderActorJSON `json:"actor"`
	Metadata    map[string]any `json:"metadata"`
	CreatedAt   time.Time      `json:"created_at"`
}

func toOrderActivityJSON(a store.OrderActivity) orderActivityJSON {
	md := a.Metadata
	if md == nil {
		md = map[string]any{}
	}
	return orderActivityJSON{
		ID: a.ID, Type: a.Type, Description: a.Description,
		Actor:    orderActorJSON{Type: a.ActorType, ID: a.ActorID, Name: a.ActorName},
		Metadata: md, CreatedAt: a.CreatedAt,
	}
}

// orderActor attributes a change to the caller: a user or an API key.
func orderActor(p *auth.Principal) store.OrderActor {
	id := p.ActorID().String()
	a := store.OrderActor{Type: store.ActorUser, ID: &id}
	if p.IsAPIKey() {
		a.Type = store.ActorAPIKey
	}
	if p.Name != "" {
		name := p.Name
		a.Name = &name
	}
	return a
}

// --- create ---

func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	o, err := parseCreateOrder(body)
	if err != nil {
		return err
	}
	p := mustPrincipal(r)
	o.ID = uuid.New()
	o.OrganizationID = p.OrganizationID
	// The bridge check and the insert are one statement, sent with the
	// question whether any split rule or dispatcher applies (one round
	// trip; most orders meet none, and the hooks then cost nothing more).
	created, split, dispatch, err := store.CreateOrderProbe(r.Context(), s.store.Pool, o, rules.TriggerOrderCreated)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errValidation(FieldError{Field: "bridge_id", Message: "must be a bridge of this organization"})
	case errors.Is(err, store.ErrConflict):
		// Name the order that holds the external id, so a client can use it.
		conflict := errConflict("the bridge already has an order with this external_id")
		if o.BridgeID != nil {
			if id, err := store.OrderIDByExternalID(r.Context(), s.store.Pool, p.OrganizationID, *o.BridgeID, o.ExternalID); err == nil {
				conflict.Details = []FieldError{{Field: "external_id", Message: "already used by order " + id.String()}}
			}
		}
		return conflict
	case err != nil:
		return err
	}

	// Split rules and dispatchers are evaluated here. The order is
	// committed, so a failing hook is logged and never turns the create into
	// an error, and a client that hangs up does not cancel it.
	hctx := rules.WithRulesKnown(context.WithoutCancel(r.Context()), split, dispatch)
	if err := s.orderHooks.OrderCreated(hctx, p.OrganizationID, created.ID); err != nil {
		s.log.ErrorContext(r.Context(), "order created hook", append(logAttrs(r), "order_id", created.ID, "error", err)...)
	}
	rules.Notify(hctx, s.events, p.OrganizationID, rules.EventOrderCreated, []uuid.UUID{created.ID})

	// The create answer is the specification's list plus shippingAddress,
	// billingAddress, note and sourceData (rules.OrderJSON).
	writeData(w, http.StatusCreated, rules.OrderJSONOf(created))
	return nil
}

// parseCreateOrder validates a create body, naming every problem at once.
func parseCreateOrder(body map[string]any) (store.Order, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	var o store.Order
	if id := f.str("bridge_id", true, 100); id != nil {
		if u, err := uuid.Parse(*id); err != nil {
			v.add("bridge_id", "must be a UUID")
		} else {
			o.BridgeID = &u
		}
	}
	if ext := f.str("external_id", true, 255); ext != nil {
		o.ExternalID = *ext
	}
	o.OrderNumber = f.str("order_number", false, 255)
	o.Status = f.enum("status", true, "", store.OrderStatuses)
	o.PaymentStatus = f.enum("payment_status", false, "pending", store.PaymentStatuses)
	o.FulfillmentStatus = f.enum("fulfillment_status", false, "unfulfilled", store.FulfillmentStatuses)
	if c, ok := f.object("customer", true); ok {
		if email := c.str("email", true, 254); email != nil && v.email("customer.email", *email) {
			o.CustomerEmail = *email
			c.m["email"] = *email
		}
		first, last := c.str("firstName", false, 100), c.str("lastName", false, 100)
		c.str("phone", false, 50)
		// Every customer field is present in responses, null when not given.
		for _, k := range []string{"firstName", "lastName", "phone"} {
			if _, ok := c.m[k]; !ok {
				c.m[k] = nil
			}
		}
		o.CustomerName = strings.TrimSpace(deref(first) + " " + deref(last))
		o.Customer = orderJSONOf(c.m)
	}
	o.ShippingAddress = f.rawObject("shipping_address", false)
	o.BillingAddress = f.rawObject("billing_address", false)
	o.LineItems = f.lineItems("line_items")
	if t, ok := f.object("totals", true); ok {
		for _, k := range []string{"subtotal", "shipping", "tax", "discount", "total"} {
			if n := t.money(k); n != nil && k == "total" {
				o.Total = *n
			}
		}
		o.Totals = orderJSONOf(t.m)
	}
	o.Currency = "USD"
	if c := f.str("currency", false, 16); c != nil {
		if !isCurrencyCode(*c) {
			v.add("currency", "must be an ISO 4217 code (3 uppercase letters)")
		}
		o.Currency = *c
	}
	o.Tags = f.tags("tags")
	o.Note = f.str("note", false, orderMaxNoteLen)
	o.Metadata = f.rawObject("metadata", false)
	o.SourceData = f.rawObject("source_data", false)
	if at := f.str("ordered_at", false, 64); at != nil {
		t, ok := parseOrderTime(*at)
		if !ok {
			v.add("ordered_at", "must be an ISO 8601 timestamp")
		} else if t.Year() < 1970 || t.Year() > 9999 {
			v.add("ordered_at", "must be between 1970 and 9999")
		}
		o.OrderedAt = t
	}
	return o, v.err()
}

// --- list ---

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) error {
	// Every query parameter is checked before answering, and all problems
	// are named at once.
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	sort, err := parseSort(r, store.OrderSortColumns, "created_at", true)
	details.collect(err)
	// The specification's status list names five values; all eight order
	// states are accepted, which is a superset and harmless.
	status, err := queryEnum(r, "status", store.OrderStatuses...)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridge_id")
	details.collect(err)
	since, err := queryTime(r, "since")
	details.collect(err)
	inc, err := parseOrderInclude(r)
	details.collect(err)
	search := strings.TrimSpace(r.URL.Query().Get("search"))
	if utf8.RuneCountInString(search) > orderMaxSearchLen {
		details = append(details, FieldError{Field: "search", Message: fmt.Sprintf("must be at most %d characters", orderMaxSearchLen)})
	}
	// external_id (extension): the orders with this platform id, exactly.
	externalID := strings.TrimSpace(r.URL.Query().Get("external_id"))
	if utf8.RuneCountInString(externalID) > 255 {
		details = append(details, FieldError{Field: "external_id", Message: "must be at most 255 characters"})
	}
	if len(details) > 0 {
		return errValidation(details...)
	}

	orgID := mustPrincipal(r).OrganizationID
	items, total, err := store.ListOrders(r.Context(), s.store.Pool, orgID, store.OrderListParams{
		Filter: store.OrderFilter{Status: status, BridgeID: bridgeID, Search: search, Since: since, ExternalID: externalID},
		Sort:   sort.Column, Desc: sort.Desc, Limit: page.Limit, Offset: page.Offset(),
	})
	if err != nil {
		return err
	}
	var bridges map[uuid.UUID]store.OrderBridge
	if inc.bridge {
		// All bridges of the page in one query.
		ids := make([]uuid.UUID, 0, len(items))
		seen := map[uuid.UUID]bool{}
		for _, it := range items {
			if it.BridgeID != nil && !seen[*it.BridgeID] {
				seen[*it.BridgeID] = true
				ids = append(ids, *it.BridgeID)
			}
		}
		if bridges, err = store.OrderBridges(r.Context(), s.store.Pool, orgID, ids); err != nil {
			return err
		}
	}
	orderIDs := make([]uuid.UUID, len(items))
	for i, it := range items {
		orderIDs[i] = it.ID
	}
	assigned, err := s.pageAssignments(r, inc.dispatchAssignments, orderIDs)
	if err != nil {
		return err
	}
	out := make([]orderListItemJSON, 0, len(items))
	for _, it := range items {
		j := orderListItemJSON{
			ID: it.ID, OrderNumber: it.OrderNumber, Status: it.Status,
			Customer:  orderListCustomerJSON{Name: orderNullable(it.CustomerName), Email: it.CustomerEmail},
			LineItems: it.LineItems, Total: it.Total, Currency: it.Currency, BridgeID: it.BridgeID, ExternalID: it.ExternalID,
			SentToFulfillment: it.SentToFulfillment, SentToCart: it.SentToCart, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
		}
		if inc.bridge {
			j.Bridge = orderBridgeOf(bridges, it.BridgeID)
		}
		if inc.dispatchAssignments {
			j.DispatchAssignments = assignmentsOf(assigned, it.ID)
		}
		out = append(out, j)
	}
	writeList(w, out, page, total)
	return nil
}

// orderInclude is the include query parameter.
type orderInclude struct {
	bridge, dispatchAssignments bool
}

// parseOrderInclude reads include=bridge,dispatch_assignments; any other
// value is 400.
func parseOrderInclude(r *http.Request) (orderInclude, error) {
	var inc orderInclude
	for _, part := range strings.Split(r.URL.Query().Get("include"), ",") {
		switch strings.TrimSpace(part) {
		case "":
		case "bridge":
			inc.bridge = true
		case "dispatch_assignments":
			inc.dispatchAssignments = true
		default:
			return inc, errValidation(FieldError{Field: "include", Message: "must be a comma-separated list of bridge, dispatch_assignments"})
		}
	}
	return inc, nil
}

// orderBridgeOf is the included bridge, or null.
func orderBridgeOf(bridges map[uuid.UUID]store.OrderBridge, id *uuid.UUID) json.RawMessage {
	if id == nil {
		return json.RawMessage(`null`)
	}
	b, ok := bridges[*id]
	if !ok {
		return json.RawMessage(`null`)
	}
	return orderJSONOf(orderBridgeJSON{ID: b.ID, Name: b.Name, Type: b.Type, Status: b.Status})
}

// --- get, update, delete ---

func (s *Server) getOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	inc, err := parseOrderInclude(r)
	if err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	o, err := store.OrderByID(r.Context(), s.store.Pool, orgID, id)
	if err != nil {
		return notFoundAs(err, "order")
	}
	out := toOrderDetailJSON(o)
	if inc.bridge {
		var ids []uuid.UUID
		if o.BridgeID != nil {
			ids = []uuid.UUID{*o.BridgeID}
		}
		bridges, err := store.OrderBridges(r.Context(), s.store.Pool, orgID, ids)
		if err != nil {
			return err
		}
		out.Bridge = orderBridgeOf(bridges, o.BridgeID)
	}
	if inc.dispatchAssignments {
		as, err := s.pageAssignments(r, true, []uuid.UUID{o.ID})
		if err != nil {
			return err
		}
		out.DispatchAssignments = assignmentsOf(as, o.ID)
	}
	writeData(w, http.StatusOK, out)
	return nil
}

// updateOrder applies status, shipping_address, notes, metadata, tags and
// line_items. The specification leaves order status moves open: any state
// may move to any other (nothing is refused). Line items cannot change once
// the order is shipped or delivered (409). metadata is merged one level
// deep (keys overwrite, null removes a key); tags and line_items replace;
// shipping_address and notes accept null to clear.
func (s *Server) updateOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	var body jsonBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	patch, err := parseOrderPatch(body)
	if err != nil {
		return err
	}
	p := mustPrincipal(r)
	o, err := store.PatchOrder(r.Context(), s.store, p.OrganizationID, id, patch, orderActor(p))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return errNotFound("order")
	case errors.Is(err, store.ErrOrderLineItemsLocked):
		return errConflict("line items cannot change once an order is shipped or delivered")
	case err != nil:
		return err
	}
	rules.OrderEvent(r.Context(), s.orderHooks, p.OrganizationID, id, rules.TriggerOrderUpdated)
	rules.Notify(r.Context(), s.events, p.OrganizationID, rules.EventOrderUpdated, []uuid.UUID{id})
	writeData(w, http.StatusOK, toOrderDetailJSON(o))
	return nil
}

// parseOrderPatch validates an update body; absent fields stay as they are.
func parseOrderPatch(body map[string]any) (store.OrderPatch, error) {
	var v validator
	f := bodyFields{v: &v, m: body}
	var p store.OrderPatch
	if _, ok := body["status"]; ok {
		st := f.enum("status", true, "", store.OrderStatuses)
		p.Status = &st
	}
	if raw, ok := body["shipping_address"]; ok {
		if raw == nil {
			p.ShippingAddress = json.RawMessage(`null`)
		} else {
			p.ShippingAddress = f.rawObject("shipping_address", true)
		}
	}
	if _, ok := body["notes"]; ok {
		note := f.str("notes", false, orderMaxNoteLen) // null or "" clears
		p.Note = &note
	}
	if _, ok := body["metadata"]; ok {
		if m, ok := f.object("metadata", true); ok {
			p.Metadata = m.m
		}
	}
	if _, ok := body["tags"]; ok {
		if body["tags"] == nil {
			v.add("tags", "must be an array of strings")
		} else {
			p.Tags = f.tags("tags")
		}
	}
	if _, ok := body["line_items"]; ok {
		p.LineItems = f.lineItems("line_items")
	}
	return p, v.err()
}

func (s *Server) deleteOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	err = store.DeleteOrder(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "order")
	}
	writeSuccess(w)
	return nil
}

// --- activities and notes ---

func (s *Server) listOrderActivities(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	acts, err := store.OrderActivities(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "order")
	}
	out := make([]orderActivityJSON, 0, len(acts))
	for _, a := range acts {
		out = append(out, toOrderActivityJSON(a))
	}
	writeData(w, http.StatusOK, out)
	return nil
}

type addOrderNoteRequest struct {
	Note *string `json:"note"`
}

func (s *Server) addOrderNote(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	var req addOrderNoteRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("note", req.Note) {
		v.length("note", strings.TrimSpace(*req.Note), 1, orderMaxNoteLen)
	}
	if err := v.err(); err != nil {
		return err
	}
	p := mustPrincipal(r)
	actor := orderActor(p)
	a, err := store.InsertOrderActivity(r.Context(), s.store.Pool, store.OrderActivity{
		OrganizationID: p.OrganizationID, OrderID: id, Type: store.ActivityNote,
		Description: strings.TrimSpace(*req.Note),
		ActorType:   actor.Type, ActorID: actor.ID, ActorName: actor.Name,
	})
	if err != nil {
		return notFoundAs(err, "order")
	}
	j := toOrderActivityJSON(a)
	writeData(w, http.StatusCreated, map[string]any{
		"id": j.ID, "type": j.Type, "description": j.Description, "actor": j.Actor, "created_at": j.CreatedAt,
	})
	return nil
}

// --- body validation ---

// orderNumber is a JSON number as float64.
func orderNumber(raw any) (float64, bool) {
	n, ok := raw.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil && !math.IsInf(f, 0)
}

// enum is one of allowed, or def when absent and optional.
func (f bodyFields) enum(key string, required bool, def string, allowed []string) string {
	raw, ok := f.get(key, required)
	if !ok {
		return def
	}
	s, isStr := raw.(string)
	if !isStr {
		f.v.add(f.name(key), "must be one of "+strings.Join(allowed, ", "))
		return def
	}
	f.v.oneOf(f.name(key), s, allowed...)
	return s
}

// money is a required number from 0 to orderMaxMoney.
func (f bodyFields) money(key string) *float64 {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	n, isNum := orderNumber(raw)
	switch {
	case !isNum:
		f.v.add(f.name(key), "must be a number")
	case n < 0:
		f.v.add(f.name(key), "must be at least 0")
	case n > orderMaxMoney:
		f.v.add(f.name(key), fmt.Sprintf("must be at most %.2f", orderMaxMoney))
	default:
		return &n
	}
	return nil
}

// quantity is a required positive integer.
func (f bodyFields) quantity(key string) {
	raw, ok := f.get(key, true)
	if !ok {
		return
	}
	n, isNum := orderNumber(raw)
	if !isNum || n < 1 || n != math.Trunc(n) || n > orderMaxQuantity {
		f.v.add(f.name(key), fmt.Sprintf("must be a positive integer (at most %d)", orderMaxQuantity))
	}
}

// boolean is a required true or false.
func (f bodyFields) requiredBool(key string) {
	raw, ok := f.get(key, true)
	if !ok {
		return
	}
	if _, isBool := raw.(bool); !isBool {
		f.v.add(f.name(key), "must be a boolean")
	}
}

// rawObject is an object kept as JSON; nil when absent.
func (f bodyFields) rawObject(key string, required bool) json.RawMessage {
	o, ok := f.object(key, required)
	if !ok {
		return nil
	}
	return orderJSONOf(o.m)
}

// tags is an optional array of 1-100 character strings.
func (f bodyFields) tags(key string) []string {
	raw, ok := f.get(key, false)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	if !isArr {
		f.v.add(f.name(key), "must be an array of strings")
		return nil
	}
	if len(arr) > orderMaxTags {
		f.v.add(f.name(key), fmt.Sprintf("must have at most %d tags", orderMaxTags))
		return nil
	}
	out := make([]string, 0, len(arr))
	for i, it := range arr {
		name := fmt.Sprintf("%s[%d]", f.name(key), i)
		s, isStr := it.(string)
		s = strings.TrimSpace(s)
		switch {
		case !isStr:
			f.v.add(name, "must be a string")
		case s == "" || utf8.RuneCountInString(s) > orderMaxTagLen:
			f.v.add(name, fmt.Sprintf("must be 1-%d characters", orderMaxTagLen))
		default:
			out = append(out, s)
		}
	}
	return out
}

// lineItems is the required, non-empty array of line items, kept as JSON.
func (f bodyFields) lineItems(key string) json.RawMessage {
	raw, ok := f.get(key, true)
	if !ok {
		return nil
	}
	arr, isArr := raw.([]any)
	switch {
	case !isArr:
		f.v.add(f.name(key), "must be an array")
		return nil
	case len(arr) == 0:
		f.v.add(f.name(key), "must contain at least one line item")
		return nil
	case len(arr) > orderMaxLineItems:
		f.v.add(f.name(key), fmt.Sprintf("must contain at most %d line items", orderMaxLineItems))
		return nil
	}
	for i, it := range arr {
		path := fmt.Sprintf("%s[%d]", f.name(key), i)
		m, isObj := it.(map[string]any)
		if !isObj {
			f.v.add(path, "must be an object")
			continue
		}
		li := bodyFields{v: f.v, path: path, m: m}
		li.str("sku", true, 255)
		li.str("name", true, 500)
		li.quantity("quantity")
		li.money("unitPrice")
		li.money("totalPrice")
		li.requiredBool("requiresShipping")
		li.requiredBool("taxable")
	}
	return orderJSONOf(arr)
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// parseOrderTime reads an ISO 8601 timestamp (a date or a time without a
// zone is UTC).
func parseOrderTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// orderJSONOf encodes a value decoded from JSON (it cannot fail).
func orderJSONOf(v any) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}

// orderNullable is nil for "", so an empty value is written as null.
func orderNullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
