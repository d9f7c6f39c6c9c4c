package operations_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/operations"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// benchOrg is an organization with n orders (ids in creation order) and
// an operations Service acting for it (d's Store set).
func benchOrg(b testing.TB, n int, d operations.Deps) (*operations.Service, domain.Actor, []uuid.UUID) {
	b.Helper()
	s := storetest.New(b)
	ctx := context.Background()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "b" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "B"})
	if err != nil {
		b.Fatal(err)
	}
	org, err := store.CreateOrganization(ctx, s, "Bench "+u.Email, u.ID)
	if err != nil {
		b.Fatal(err)
	}
	rows, err := s.Pool.Query(ctx, `INSERT INTO orders (id, organization_id, external_id, status, customer, customer_email, shipping_address, line_items, totals, ordered_at)
SELECT gen_random_uuid(), $1, 'o-' || g, 'confirmed', '{"email": "c@example.com"}', 'c@example.com',
       '{"name": "Chloe Chen", "address1": "1 Pike St", "city": "Seattle", "provinceCode": "WA", "zip": "98101", "countryCode": "US"}', '[]', '{"total": 10}', now()
  FROM generate_series(1, $2::int) AS g
RETURNING id`, org.ID, n)
	if err != nil {
		b.Fatal(err)
	}
	var ids []uuid.UUID
	for rows.Next() {
		var id uuid.UUID
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.Pool.Exec(ctx, `ANALYZE orders`); err != nil {
		b.Fatal(err)
	}
	actor := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: org.ID, Name: "bench",
		Scopes: []string{"operations:read", "operations:write"}, Scoped: true}
	d.Store = s
	return operations.New(d), actor, ids
}

// reportLatency reports the p50 and p99 of the durations in ms.
func reportLatency(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(q float64) float64 {
		return float64(d[min(len(d)-1, int(q*float64(len(d))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(at(0.5), "p50-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

// BenchmarkAddItems500 adds 500 orders to a draft operation in an
// organization of 100,000 orders, one call (issue: p99 ≤ 50 ms):
//
//	./scripts/test-postgres.sh go test ./operations -run '^$' -bench AddItems500 -benchtime 100x
func BenchmarkAddItems500(b *testing.B) {
	svc, actor, ids := benchOrg(b, 100_000, operations.Deps{})
	ctx := context.Background()
	d := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		op, err := svc.Create(ctx, actor, operations.CreateInput{Name: "Bench"})
		if err != nil {
			b.Fatal(err)
		}
		lo := (i * 500) % (len(ids) - 500)
		b.StartTimer()
		began := time.Now()
		added, err := svc.AddItems(ctx, actor, op.ID, ids[lo:lo+500])
		d = append(d, time.Since(began))
		if err != nil || len(added) != 500 {
			b.Fatalf("added %d: %v", len(added), err)
		}
	}
	reportLatency(b, d)
}

// BenchmarkListItemsPage100 lists page 100 of a 100,000-item operation,
// 20 and 100 items a page (issue: p99 ≤ 20 ms), from right after the bulk
// add (the first calls plan with whatever statistics there are):
//
//	./scripts/test-postgres.sh go test ./operations -run '^$' -bench ListItemsPage100 -benchtime 200x
func BenchmarkListItemsPage100(b *testing.B) {
	svc, actor, ids := benchOrg(b, 100_000, operations.Deps{})
	ctx := context.Background()
	op, err := svc.Create(ctx, actor, operations.CreateInput{Name: "Big"})
	if err != nil {
		b.Fatal(err)
	}
	for lo := 0; lo < len(ids); lo += 500 {
		if _, err := svc.AddItems(ctx, actor, op.ID, ids[lo:min(lo+500, len(ids))]); err != nil {
			b.Fatal(err)
		}
	}
	for _, limit := range []int{20, 100} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			d := make([]time.Duration, 0, b.N)
			for range b.N {
				began := time.Now()
				rows, total, err := svc.ListItems(ctx, actor, op.ID, operations.ListItemsInput{Limit: limit, Offset: 99 * limit})
				d = append(d, time.Since(began))
				if err != nil || len(rows) != limit || total != len(ids) || rows[0].OrderID != ids[99*limit] {
					b.Fatalf("%d rows of %d: %v", len(rows), total, err)
				}
			}
			reportLatency(b, d)
		})
	}
}
