package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/orders"
	"github.com/fos-dev/fos/rules"
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

// orderDetailJSON is GET /orders/{id} and the PATCH response: the full
// order, the sync timestamps and, with include, the related objects.
type orderDetailJSON struct {
	rules.OrderDetailJSON
	// Present only when included; null when the bridge is gone.
	Bridge              json.RawMessage `json:"bridge,omitempty"`
	DispatchAssignments json.RawMessage `json:"dispatchAssignments,omitempty"`
}

func toOrderDetailJSON(o orders.Order) orderDetailJSON {
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

func toOrderActivityJSON(a orders.Activity) orderActivityJSON {
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

// --- create ---

func (s *Server) createOrder(w http.ResponseWriter, r *http.Request) error {
	var body jsonBody
	if err := decodeValidatedJSON(r, &body); err != nil {
		return err
	}
	in, err := parseCreateOrder(body)
	if err != nil {
		return err
	}
	created, err := s.Orders.Create(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	// The create answer is the specification's list plus shippingAddress,
	// billingAddress, note and sourceData (rules.OrderJSON).
	writeData(w, http.StatusCreated, rules.OrderJSONOf(created))
	return nil
}

// --- list ---

func (s *Server) listOrders(w http.ResponseWriter, r *http.Request) error {
	// Every query parameter is checked before answering, and all problems
	// are named at once.
	var details fieldErrors
	page, err := parsePage(r, 20, 100)
	details.collect(err)
	sort, err := parseSort(r, orders.SortColumns, "created_at", true)
	details.collect(err)
	// The specification's status list names five values; all eight order
	// states are accepted, which is a superset and harmless.
	status, err := queryEnum(r, "status", orders.Statuses...)
	details.collect(err)
	bridgeID, err := queryUUID(r, "bridge_id")
	details.collect(err)
	since, err := queryTime(r, "since")
	details.collect(err)
	inc, err := parseOrderInclude(r)
	details.collect(err)
	// external_id (extension): the orders with this platform id, exactly.
	in := orders.ListInput{Sort: sort.Column, Desc: sort.Desc, Limit: page.Limit, Offset: page.Offset(), IncludeBridges: inc.bridge,
		Filter: orders.Filter{Status: status, BridgeID: bridgeID, Since: since,
			Search: strings.TrimSpace(r.URL.Query().Get("search")), ExternalID: strings.TrimSpace(r.URL.Query().Get("external_id"))}}
	details.collect(in.Validate().Err())
	if len(details) > 0 {
		return errValidation(details...)
	}
	res, err := s.Orders.List(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	orderIDs := make([]uuid.UUID, len(res.Items))
	for i, it := range res.Items {
		orderIDs[i] = it.ID
	}
	assigned, err := s.pageAssignments(r, inc.dispatchAssignments, orderIDs)
	if err != nil {
		return err
	}
	out := make([]orderListItemJSON, 0, len(res.Items))
	for _, it := range res.Items {
		j := toOrderListItemJSON(it)
		if inc.bridge {
			j.Bridge = orderBridgeOf(res.Bridges, it.BridgeID)
		}
		if inc.dispatchAssignments {
			j.DispatchAssignments = assignmentsOf(assigned, it.ID)
		}
		out = append(out, j)
	}
	writeList(w, out, page, res.Total)
	return nil
}

func toOrderListItemJSON(it orders.ListItem) orderListItemJSON {
	return orderListItemJSON{
		ID: it.ID, OrderNumber: it.OrderNumber, Status: it.Status,
		Customer:  orderListCustomerJSON{Name: orderNullable(it.CustomerName), Email: it.CustomerEmail},
		LineItems: it.LineItems, Total: it.Total, Currency: it.Currency, BridgeID: it.BridgeID, ExternalID: it.ExternalID,
		SentToFulfillment: it.SentToFulfillment, SentToCart: it.SentToCart, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt,
	}
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
func orderBridgeOf(bridges map[uuid.UUID]orders.Bridge, id *uuid.UUID) json.RawMessage {
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
	o, err := s.Orders.Get(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	out := toOrderDetailJSON(o)
	if inc.bridge {
		b, err := s.Orders.Bridge(r.Context(), actorOf(r), o)
		if err != nil {
			return err
		}
		out.Bridge = json.RawMessage(`null`)
		if b != nil {
			out.Bridge = orderBridgeOf(map[uuid.UUID]orders.Bridge{b.ID: *b}, &b.ID)
		}
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
// line_items (orders.Service.Update). metadata is merged one level deep
// (keys overwrite, null removes a key); tags and line_items replace;
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
	o, err := s.Orders.Update(r.Context(), actorOf(r), id, patch)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, toOrderDetailJSON(o))
	return nil
}

func (s *Server) deleteOrder(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "order")
	if err != nil {
		return err
	}
	if err := s.Orders.Delete(r.Context(), actorOf(r), id); err != nil {
		return err
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
	acts, err := s.Orders.Activities(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, mapSlice(acts, toOrderActivityJSON))
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
	a, err := s.Orders.AddNote(r.Context(), actorOf(r), id, deref(req.Note))
	if err != nil {
		return err
	}
	j := toOrderActivityJSON(a)
	writeData(w, http.StatusCreated, map[string]any{
		"id": j.ID, "type": j.Type, "description": j.Description, "actor": j.Actor, "created_at": j.CreatedAt,
	})
	return nil
}
