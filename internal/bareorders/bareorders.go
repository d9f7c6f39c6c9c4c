// Package bareorders is the baseline the order-create benchmarks compare
// the service with (issue 7, issue 17): a chi router with one handler that
// decodes the POST /orders body into a struct and inserts it with one pgx
// statement, with no authentication, validation or middleware.
// api.BenchmarkCreateOrder serves it in-process, cmd/fos's
// BenchmarkServeCreateOrder over loopback HTTP beside `fos serve`.
package bareorders

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Router serves POST /orders into orgID's orders through pool.
func Router(pool *pgxpool.Pool, orgID uuid.UUID) http.Handler {
	type bareCustomer struct {
		Email     string `json:"email"`
		FirstName string `json:"firstName"`
		LastName  string `json:"lastName"`
	}
	type bareOrder struct {
		BridgeID        uuid.UUID       `json:"bridge_id"`
		ExternalID      string          `json:"external_id"`
		OrderNumber     *string         `json:"order_number"`
		Status          string          `json:"status"`
		Customer        json.RawMessage `json:"customer"`
		ShippingAddress json.RawMessage `json:"shipping_address"`
		LineItems       json.RawMessage `json:"line_items"`
		Totals          json.RawMessage `json:"totals"`
		Tags            []string        `json:"tags"`
	}
	r := chi.NewRouter()
	r.Post("/orders", func(w http.ResponseWriter, r *http.Request) {
		var in bareOrder
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var c bareCustomer
		var t struct {
			Total float64 `json:"total"`
		}
		_ = json.Unmarshal(in.Customer, &c)
		_ = json.Unmarshal(in.Totals, &t)
		id := uuid.New()
		var created time.Time
		err := pool.QueryRow(r.Context(), `
INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email, customer_name,
                    shipping_address, line_items, totals, total, tags, ordered_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, now())
RETURNING created_at`, id, orgID, in.BridgeID, in.ExternalID, in.OrderNumber, in.Status, in.Customer, c.Email,
			c.FirstName+" "+c.LastName, in.ShippingAddress, in.LineItems, in.Totals, t.Total, in.Tags).Scan(&created)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{
			"id": id, "organizationId": orgID, "bridgeId": in.BridgeID, "externalId": in.ExternalID, "orderNumber": in.OrderNumber,
			"status": in.Status, "customer": in.Customer, "shippingAddress": in.ShippingAddress, "lineItems": in.LineItems,
			"totals": in.Totals, "tags": in.Tags, "createdAt": created,
		}})
	})
	return r
}
