// Package insightstest seeds crafted data sets for the insights tests
// (the insights package's and the API's): an organization and its orders,
// shipments, checkpoints, snapshots, accounts, bridges and dispatches,
// written straight to PostgreSQL with the times a test needs.
package insightstest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/store"
)

// Seed writes one organization's data.
type Seed struct {
	T   testing.TB
	DB  store.DBTX
	Org uuid.UUID
	n   int
}

// New creates an organization to seed.
func New(t testing.TB, s *store.Store) *Seed {
	t.Helper()
	org := uuid.New()
	_, err := s.Pool.Exec(context.Background(), `INSERT INTO organizations (id, name, slug) VALUES ($1, 'Insights test', $2)`, org, "ins-"+org.String())
	must(t, err)
	return &Seed{T: t, DB: s.Pool, Org: org}
}

// For seeds an existing organization.
func For(t testing.TB, s *store.Store, org uuid.UUID) *Seed {
	return &Seed{T: t, DB: s.Pool, Org: org}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (s *Seed) exec(sql string, args ...any) {
	s.T.Helper()
	_, err := s.DB.Exec(context.Background(), sql, args...)
	must(s.T, err)
}

// Order inserts an order in status created at the time (in that status
// since), with total.
func (s *Seed) Order(status string, createdAt time.Time, total float64) uuid.UUID {
	s.T.Helper()
	s.n++
	id := uuid.New()
	s.exec(`INSERT INTO orders (id, organization_id, external_id, order_number, status, customer, customer_email, line_items, totals, total, ordered_at,
	                            created_at, updated_at, status_entered_at)
	        VALUES ($1, $2, $3, $3, $4, '{}', 'a@example.com', '[]', '{}', $5, $6, $6, $6, $6)`,
		id, s.Org, fmt.Sprintf("ext-%d-%s", s.n, id.String()[:8]), status, total, createdAt)
	return id
}

// StatusChange records an order's status change at the time, as a
// status write at that time would have: its activity, its row of
// order_status_changes (the stay in from began when the order entered its
// status so far) and the order's status_entered_at (the order's status is
// left as it was inserted). Changes of an order are seeded oldest first.
func (s *Seed) StatusChange(order uuid.UUID, from, to string, at time.Time) {
	s.T.Helper()
	s.exec(`INSERT INTO order_activities (id, organization_id, order_id, type, description, actor_type, metadata, created_at)
	        VALUES ($1, $2, $3, 'status_change', 'changed', 'system', jsonb_build_object('from', $4::text, 'to', $5::text), $6)`,
		uuid.New(), s.Org, order, from, to, at)
	s.exec(`WITH c AS (
	          INSERT INTO order_status_changes (order_id, organization_id, from_status, to_status, from_entered_at, changed_at)
	          SELECT id, organization_id, $2, $3, status_entered_at, $4 FROM orders WHERE id = $1)
	        UPDATE orders SET status_entered_at = $4 WHERE id = $1 AND status_entered_at < $4`, order, from, to, at)
}

// Shipment is a shipment to seed.
type Shipment struct {
	Order       *uuid.UUID
	Carrier     string
	Service     string
	Status      string
	Rate        *float64
	CreatedAt   time.Time
	DeliveredAt *time.Time
	// Estimated is the label's estimated delivery.
	Estimated *time.Time
	Tracking  string
	WeightLb  float64
	State     string
	Country   string
}

// Money is a pointer to an amount.
func Money(v float64) *float64 { return &v }

// At is a pointer to a time.
func At(t time.Time) *time.Time { return &t }

// Shipment inserts a shipment.
func (s *Seed) Shipment(sh Shipment) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	if sh.Status == "" {
		sh.Status = "label_created"
	}
	if sh.Service == "" {
		sh.Service = "ground"
	}
	var tracking *string
	if sh.Tracking != "" {
		tracking = &sh.Tracking
	}
	var est *string
	if sh.Estimated != nil {
		e := sh.Estimated.UTC().Format(time.RFC3339)
		est = &e
	}
	weight := sh.WeightLb
	if weight == 0 {
		weight = 2
	}
	s.exec(`INSERT INTO shipments (id, organization_id, order_id, carrier, service, status, tracking_number, rate_amount, rate_currency,
	                               ship_to, parcels, carrier_response, delivered_at, created_at, updated_at)
	        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'USD', jsonb_build_object('state', $9::text, 'country', $10::text),
	                jsonb_build_array(jsonb_build_object('weight', $11::float8, 'unit', 'lb')),
	                CASE WHEN $12::text IS NULL THEN NULL ELSE jsonb_build_object('estimatedDelivery', $12::text) END, $13, $14, $14)`,
		id, s.Org, sh.Order, sh.Carrier, sh.Service, sh.Status, tracking, sh.Rate, nilIfEmpty(sh.State), nilIfEmpty(sh.Country),
		weight, est, sh.DeliveredAt, sh.CreatedAt)
	return id
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ExceptionCheckpoint records an exception checkpoint of a shipment.
func (s *Seed) ExceptionCheckpoint(shipment uuid.UUID, at time.Time) {
	s.T.Helper()
	s.exec(`INSERT INTO tracking_checkpoints (id, organization_id, shipment_id, sequence, status, checkpoint_time, source, is_exception)
	        VALUES ($1, $2, $3, 0, 'exception', $4, 'test', true)`, uuid.New(), s.Org, shipment, at)
}

// CarrierAccount inserts a carrier account in status.
func (s *Seed) CarrierAccount(carrier, status string) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	s.exec(`INSERT INTO carrier_accounts (id, organization_id, name, carrier, status, last_error) VALUES ($1, $2, $3, $4, $5,
	        CASE WHEN $5 = 'error' THEN 'credentials refused' END)`, id, s.Org, "acct "+carrier+" "+id.String()[:4], carrier, status)
	return id
}

// Snapshot is a rate snapshot to seed; Request names the shipment it
// quotes (snapshots of one request are alternatives of each other).
type Snapshot struct {
	Account     uuid.UUID
	Carrier     string
	Service     string
	Price       float64
	TransitDays *int
	Request     string
	ExpiresAt   time.Time
}

// Days is a pointer to a number of days.
func Days(n int) *int { return &n }

// Snapshot inserts a rate snapshot.
func (s *Seed) Snapshot(sn Snapshot) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	if sn.ExpiresAt.IsZero() {
		sn.ExpiresAt = time.Now().Add(24 * time.Hour)
	}
	s.exec(`INSERT INTO rate_snapshots (id, organization_id, carrier_account_id, carrier, service_type, service_name, total_price, currency,
	                                    transit_days, ship_from, ship_to, packages, quoted_at, expires_at)
	        VALUES ($1, $2, $3, $4, $5, $5, $6, 'USD', $7, '{"zip": "10001"}', jsonb_build_object('request', $8::text), '[{"weight": 2}]',
	                $9::timestamptz - interval '1 hour', $9)`,
		id, s.Org, sn.Account, sn.Carrier, sn.Service, sn.Price, sn.TransitDays, sn.Request, sn.ExpiresAt)
	return id
}

// Bridge inserts a bridge in status.
func (s *Seed) Bridge(status string) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	s.exec(`INSERT INTO bridges (id, organization_id, type, name, status) VALUES ($1, $2, 'storefront_a', $3, $4)`, id, s.Org, "bridge "+id.String()[:6], status)
	return id
}

// FailedTask records a failed task execution of a bridge at the time.
func (s *Seed) FailedTask(bridge uuid.UUID, at time.Time) {
	s.T.Helper()
	id := uuid.New()
	s.exec(`INSERT INTO task_executions (id, organization_id, bridge_id, task_name, status, error, workflow_id, created_at, finished_at)
	        VALUES ($1, $2, $3, 'grab-orders', 'failed', 'platform refused', $4, $5, $5)`, id, s.Org, bridge, "bridge-task/"+id.String(), at)
}

// Dispatcher inserts an active dispatcher to dest with triggers.
func (s *Seed) Dispatcher(name string, dest uuid.UUID, triggers []string) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	s.exec(`INSERT INTO dispatchers (id, organization_id, name, source_bridge_ids, destination_bridge_id, conditions, trigger_on)
	        VALUES ($1, $2, $3, '{}', $4, '[]', $5)`, id, s.Org, name, dest, triggers)
	return id
}

// Assignment records a dispatch assignment of an order, by trigger, in
// status, at the time.
func (s *Seed) Assignment(dispatcher, order, dest uuid.UUID, trigger, status string, at time.Time) {
	s.T.Helper()
	s.exec(`INSERT INTO dispatch_assignments (id, organization_id, dispatcher_id, order_id, destination_bridge_id, status, error_message, metadata, created_at, updated_at)
	        VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $6 = 'failed' THEN 'destination refused' END, jsonb_build_object('trigger', $7::text), $8, $8)`,
		uuid.New(), s.Org, dispatcher, order, dest, status, trigger, at)
}

// Comparison inserts a completed rate comparison of the carrier.
func (s *Seed) Comparison(carrier string) uuid.UUID {
	s.T.Helper()
	id := uuid.New()
	s.exec(`INSERT INTO rate_comparisons (id, organization_id, name, carrier, source_carrier, status, total_items, pending_items)
	        VALUES ($1, $2, 'cmp', $3, 'carrier_a', 'completed', 0, 0)`, id, s.Org, carrier)
	return id
}

// ComparisonItem records a completed quote of a tracking number.
func (s *Seed) ComparisonItem(comparison uuid.UUID, seq int, tracking, service string, quoted float64, transitDays int) {
	s.T.Helper()
	s.exec(`INSERT INTO rate_comparison_items (id, comparison_id, organization_id, seq, tracking_number, status, quoted_service, quoted_service_name, quoted_price, transit_days)
	        VALUES ($1, $2, $3, $4, $5, 'completed', $6, $6, $7, $8)`, uuid.New(), comparison, s.Org, seq, tracking, service, quoted, transitDays)
}
