package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/internal/bareorders"
)

// BenchmarkCreateOrder creates orders from 32 concurrent clients two ways,
// interleaved in chunks so both see the same machine load: through the real
// router, middleware and store, authenticated by an API key ("router"), and
// through a bare chi handler that decodes the same JSON and runs one plain
// pgx INSERT into the same table through a stock pgx pool ("bare"). It reports both rates and their
// ratio (issue 7: router/bare >= 0.75).
//
//	go test ./api -run XXX -bench CreateOrder -benchtime 3000x -count 3
//
// FOS_BENCH_TRACING=1 and FOS_BENCH_METRICS=1 measure it with tracing and
// metrics on (api/telemetry_bench_test.go).
func BenchmarkCreateOrder(b *testing.B) {
	e := newEnv(b, benchTelemetry(b))
	owner := e.signup()
	bridge := orderTestBridge(b, e, owner.org, "Bench shop")
	key := e.apiKey(owner, "orders:write")
	body := orderTestBody(bridge, "EXT")
	body["shipping_address"] = map[string]any{"line1": "1 Main St", "city": "Springfield", "postalCode": "12345", "country": "US"}
	body["tags"] = []string{"web"}
	raw := string(orderJSONOf(body))
	// One external id per request.
	template := strings.Replace(raw, `"external_id":"EXT"`, `"external_id":"%s-%d"`, 1)
	require.Contains(b, template, "%d")
	// The baseline gets a stock pgx pool of the same size (the service's
	// pool is configured by store.ConfigurePool).
	cfg, err := pgxpool.ParseConfig(e.deps.Store.Pool.Config().ConnString())
	require.NoError(b, err)
	cfg.MaxConns = e.deps.Store.Pool.Config().MaxConns
	barePool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(b, err)
	b.Cleanup(barePool.Close)
	bare := bareorders.Router(barePool, uuid.MustParse(owner.org))

	const clients, chunk = 32, 256
	var seq atomic.Int64
	var failed atomic.Int64
	// run sends n creates from 32 concurrent clients and returns how long
	// they took.
	run := func(h http.Handler, prefix, path, token string, n int) time.Duration {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(n) {
					req := httptest.NewRequest("POST", path, strings.NewReader(fmt.Sprintf(template, prefix, seq.Add(1))))
					req.Header.Set("Content-Type", "application/json")
					if token != "" {
						req.Header.Set("Authorization", "Bearer "+token)
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusCreated && failed.Add(1) == 1 {
						b.Errorf("create %s: %d %s", prefix, rec.Code, rec.Body.String())
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(start)
	}
	// Warm both paths (connections, statement caches).
	run(e.handler, "WARM", "/api/v1/orders", key.token, chunk)
	run(bare, "BAREWARM", "/orders", "", chunk)
	var routerTime, bareTime time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; done += chunk {
		n := min(chunk, b.N-done)
		routerTime += run(e.handler, "R", "/api/v1/orders", key.token, n)
		bareTime += run(bare, "B", "/orders", "", n)
	}
	b.StopTimer()
	routerRate := float64(b.N) / routerTime.Seconds()
	bareRate := float64(b.N) / bareTime.Seconds()
	b.ReportMetric(routerRate, "orders/s")
	b.ReportMetric(bareRate, "bare_orders/s")
	b.ReportMetric(routerRate/bareRate, "ratio")
	b.ReportMetric(0, "ns/op") // both paths ran b.N times; ns/op would mislead
}

// listFixture is one organization holding listOrderCount orders, seeded
// once per test binary and only by BenchmarkListOrders (plain `go test`
// runs no benchmark, so never seeds it).
type listFixture struct {
	e       *testEnv
	org     string
	key     caller
	bridges []uuid.UUID
}

const listOrderCount = 100_000

var (
	listFixtureOnce sync.Once
	listFix         *listFixture
)

var (
	benchFirstNames = []string{"James", "Mary", "Robert", "Patricia", "John", "Jennifer", "Michael", "Linda", "David", "Elizabeth",
		"William", "Barbara", "Richard", "Susan", "Joseph", "Jessica", "Thomas", "Sarah", "Charles", "Karen", "Christopher", "Lisa",
		"Daniel", "Nancy", "Matthew", "Betty", "Anthony", "Margaret", "Mark", "Sandra", "Donald", "Ashley", "Steven", "Kimberly",
		"Paul", "Emily", "Andrew", "Donna", "Joshua", "Michelle", "Kenneth", "Carol", "Kevin", "Amanda", "Brian", "Dorothy", "George",
		"Melissa", "Timothy", "Deborah", "Ronald", "Stephanie", "Edward", "Rebecca", "Jason", "Sharon", "Jeffrey", "Laura", "Ryan",
		"Cynthia", "Jacob", "Kathleen", "Gary", "Amy", "Nicholas", "Angela", "Eric", "Shirley", "Jonathan", "Anna", "Stephen", "Brenda",
		"Larry", "Pamela", "Justin", "Emma", "Scott", "Nicole", "Brandon", "Helen", "Benjamin", "Samantha", "Samuel", "Katherine",
		"Gregory", "Christine", "Alexander", "Debra", "Frank", "Rachel", "Patrick", "Carolyn", "Raymond", "Janet", "Jack", "Catherine",
		"Dennis", "Maria", "Jerry", "Heather", "Tyler", "Diane", "Aaron", "Ruth", "Jose", "Julie", "Adam", "Olivia", "Nathan", "Joyce",
		"Henry", "Virginia", "Zachary", "Victoria", "Douglas", "Kelly", "Peter", "Lauren", "Kyle", "Christina", "Noah", "Joan", "Ethan",
		"Evelyn", "Jeremy", "Judith", "Walter", "Megan", "Christian", "Andrea", "Keith", "Cheryl", "Roger", "Hannah", "Terry", "Jacqueline",
		"Austin", "Martha", "Sean", "Gloria", "Gerald", "Teresa", "Carl", "Ann", "Harold", "Sara", "Dylan", "Madison", "Arthur", "Frances",
		"Lawrence", "Kathryn", "Jordan", "Janice", "Jesse", "Jean", "Bryan", "Abigail", "Billy", "Alice", "Bruce", "Judy", "Gabriel",
		"Sophia", "Joe", "Grace", "Logan", "Denise", "Alan", "Amber", "Juan", "Doris", "Albert", "Marilyn", "Willie", "Danielle", "Elijah",
		"Beverly", "Wayne", "Isabella", "Randy", "Theresa", "Vincent", "Diana", "Mason", "Natalie", "Roy", "Brittany", "Ralph", "Charlotte",
		"Bobby", "Marie", "Russell", "Kayla", "Bradley", "Alexis", "Philip", "Lori"}
	benchLastNames = []string{"Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez", "Martinez",
		"Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor", "Moore", "Jackson", "Martin", "Lee", "Perez",
		"Thompson", "White", "Harris", "Sanchez", "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
		"Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall", "Rivera", "Campbell", "Mitchell",
		"Carter", "Roberts", "Gomez", "Phillips", "Evans", "Turner", "Diaz", "Parker", "Cruz", "Edwards", "Collins", "Reyes", "Stewart",
		"Morris", "Morales", "Murphy", "Cook", "Rogers", "Gutierrez", "Ortiz", "Morgan", "Cooper", "Peterson", "Bailey", "Reed", "Kelly",
		"Howard", "Ramos", "Kim", "Cox", "Ward", "Richardson", "Watson", "Brooks", "Chavez", "Wood", "James", "Bennett", "Gray", "Mendoza",
		"Ruiz", "Hughes", "Price", "Alvarez", "Castillo", "Sanders", "Patel", "Myers", "Long", "Ross", "Foster", "Jimenez", "Kowalski",
		"Nakamura", "Okafor", "Lindqvist", "Dubois", "Rossi", "Schneider", "Fischer", "Weber", "Novak", "Horvat", "Kovacs", "Jensen",
		"Hansen", "Larsen", "Andersen", "Nielsen", "Virtanen", "Korhonen", "Silva", "Santos", "Oliveira", "Pereira", "Costa", "Yamamoto",
		"Tanaka", "Watanabe", "Suzuki", "Chen", "Wang", "Zhang", "Liu", "Singh", "Kumar", "Shah", "Mehta", "Ivanov", "Petrov", "Popescu",
		"Nowak", "Wojcik", "Murray", "Ford", "Hamilton", "Graham", "Sullivan", "Wallace", "Woods", "Cole", "West", "Jordan", "Owens",
		"Reynolds", "Fisher", "Ellis", "Harrison", "Gibson", "McDonald", "Marshall", "Wells", "Simpson", "Stevens", "Tucker", "Porter",
		"Hunter", "Hicks", "Crawford", "Henry", "Boyd", "Mason", "Kennedy", "Warren", "Dixon", "Burns", "Gordon", "Shaw", "Holmes", "Rice",
		"Robertson", "Hunt", "Black", "Daniels", "Palmer", "Mills", "Nichols", "Grant", "Knight", "Ferguson", "Rose", "Stone", "Hawkins",
		"Dunn", "Perkins", "Hudson", "Spencer", "Gardner", "Stephens", "Payne", "Pierce", "Berry", "Matthews", "Arnold", "Wagner"}
	benchDomains = []string{"gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com", "proton.me", "fastmail.com",
		"aol.com", "gmx.de", "web.de", "orange.fr", "libero.it", "acme-corp.com", "example.org", "mail.ru", "qq.com"}
	// Weighted like a real store: most orders are delivered or shipped.
	benchStatuses = []struct {
		status string
		weight int
	}{{"delivered", 45}, {"shipped", 15}, {"processing", 10}, {"pending", 12}, {"confirmed", 5}, {"cancelled", 7}, {"refunded", 4}, {"on_hold", 2}}
)

// seedListFixture bulk-loads the orders with COPY, then VACUUM ANALYZE
// (what autovacuum does to a table after a large insert).
func seedListFixture(b *testing.B) *listFixture {
	listFixtureOnce.Do(func() {
		e := newEnv(b)
		owner := e.signup()
		f := &listFixture{e: e, org: owner.org, key: e.apiKey(owner, "orders:read")}
		orgID := uuid.MustParse(owner.org)
		// Five bridges with unequal shares (40/25/15/12/8 %).
		shares := []int{40, 25, 15, 12, 8}
		for i := range shares {
			f.bridges = append(f.bridges, uuid.MustParse(orderTestBridge(b, e, owner.org, fmt.Sprintf("Store %d", i+1))))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		pick := func(weights []int) int {
			n := rng.IntN(100)
			for i, w := range weights {
				if n < w {
					return i
				}
				n -= w
			}
			return len(weights) - 1
		}
		statusWeights := make([]int, len(benchStatuses))
		for i, s := range benchStatuses {
			statusWeights[i] = s.weight
		}
		now := time.Now()
		rows := make([][]any, 0, listOrderCount)
		for i := range listOrderCount {
			first := benchFirstNames[rng.IntN(len(benchFirstNames))]
			last := benchLastNames[rng.IntN(len(benchLastNames))]
			email := fmt.Sprintf("%s.%s%d@%s", strings.ToLower(first), strings.ToLower(last), rng.IntN(1000), benchDomains[rng.IntN(len(benchDomains))])
			qty := 1 + rng.IntN(3)
			price := float64(500+rng.IntN(20000)) / 100
			sub := float64(qty) * price
			total := sub + 5.99
			created := now.Add(-time.Duration(rng.Int64N(int64(365 * 24 * time.Hour))))
			customer := fmt.Sprintf(`{"email":%q,"firstName":%q,"lastName":%q}`, email, first, last)
			items := fmt.Sprintf(`[{"sku":"SKU-%d","name":"Product %d","quantity":%d,"unitPrice":%.2f,"totalPrice":%.2f,"requiresShipping":true,"taxable":true}]`,
				rng.IntN(5000), rng.IntN(5000), qty, price, sub)
			totals := fmt.Sprintf(`{"subtotal":%.2f,"shipping":5.99,"tax":0,"discount":0,"total":%.2f}`, sub, total)
			rows = append(rows, []any{
				uuid.New(), orgID, f.bridges[pick(shares)], fmt.Sprintf("ext-%d", i), fmt.Sprintf("#%d", 100000+i),
				benchStatuses[pick(statusWeights)].status, "paid", "unfulfilled",
				customer, email, first + " " + last, items, totals, total, "USD", []string{}, "{}", created, created, created,
			})
		}
		ctx := context.Background()
		pool := e.deps.Store.Pool
		// Loaded 500 orders per statement, the largest page a sync stores:
		// the order counters' insert trigger costs the square of a
		// statement's rows (migration 00025).
		for chunk := range slices.Chunk(rows, 500) {
			_, err := pool.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{
				"id", "organization_id", "bridge_id", "external_id", "order_number", "status", "payment_status", "fulfillment_status",
				"customer", "customer_email", "customer_name", "line_items", "totals", "total", "currency", "tags", "metadata",
				"ordered_at", "created_at", "updated_at",
			}, pgx.CopyFromRows(chunk))
			require.NoError(b, err)
		}
		_, err := pool.Exec(ctx, `VACUUM ANALYZE orders, order_counts`)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `VACUUM ANALYZE bridges`)
		require.NoError(b, err)
		listFix = f
	})
	if listFix == nil {
		b.Fatal("list fixture was not seeded")
	}
	return listFix
}

// BenchmarkListOrders measures list latency in an organization of 100,000
// orders, per query shape, and reports p50 and p99 (sequential requests
// through the router with an API key, so each includes authentication).
// Issue 7 asks page=500 for p99 <= 10 ms and searches matching most orders
// for p99 < 25 ms.
//
// The table is vacuumed first, as autovacuum leaves it. The unvacuumed_*
// shapes then run after 1,900 more orders arrived that autovacuum has not
// visited yet (just below migration 00014's threshold of 1,000 + 1 %):
// their index entries point at pages the visibility map does not mark
// all-visible, so index-only scans read those rows. The updated_* shapes
// run after 1,000 scattered status changes on top (just below 50 + 1 %),
// which clear the mark of the pages they touch: the worst the lists see
// before autovacuum comes.
//
//	go test ./api -run XXX -bench ListOrders -benchtime 300x -count 3
func BenchmarkListOrders(b *testing.B) {
	f := seedListFixture(b)
	ctx := context.Background()
	pool := f.e.deps.Store.Pool
	_, err := pool.Exec(ctx, `DELETE FROM orders WHERE external_id LIKE 'fresh-%'`)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `VACUUM ANALYZE orders, order_counts`)
	require.NoError(b, err)
	cases := []struct{ name, query string }{
		{"status", "status=processing"},
		{"status_common", "status=delivered"},
		{"bridge", "bridge_id=" + f.bridges[1].String()},
		{"search_name", "search=garcia"},
		{"search_email", "search=" + url.QueryEscape("michael.kim")},
		{"search_number", "search=" + url.QueryEscape("#1234")},
		{"search_broad", "search=gmail"},
		{"search_very_broad", "search=.com"},
		{"search_short", "search=an"},
		{"search_one_letter", "search=a"},
		{"status_search", "status=shipped&search=smith"},
		{"all", ""},
		{"sort_total", "sort=total&status=pending"},
		{"sort_total_all", "sort=total"},
		{"include_bridge", "include=bridge,dispatch_assignments"},
		{"page_500", "page=500&limit=20"},
		{"page_500_status", "page=500&limit=20&status=delivered"},
		{"page_500_sort_total", "page=500&limit=20&sort=total"},
		{"page_500_search_very_broad", "page=500&limit=20&search=" + url.QueryEscape(".com")},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) { benchListQuery(b, f, c.query) })
	}

	// 1,900 orders autovacuum has not visited yet.
	_, err = pool.Exec(ctx, `
INSERT INTO orders (id, organization_id, bridge_id, external_id, order_number, status, customer, customer_email, customer_name,
                    line_items, totals, total, ordered_at)
SELECT gen_random_uuid(), organization_id, bridge_id, 'fresh-' || external_id, '#F' || external_id, status, customer,
       customer_email, customer_name, line_items, totals, total, now()
  FROM orders WHERE organization_id = $1 LIMIT 1900`, uuid.MustParse(f.org))
	require.NoError(b, err)
	unvacuumed := []struct{ name, query string }{
		{"all", ""},
		{"page_500", "page=500&limit=20"},
		{"search_very_broad", "search=" + url.QueryEscape(".com")},
	}
	for _, c := range unvacuumed {
		b.Run("unvacuumed_"+c.name, func(b *testing.B) { benchListQuery(b, f, c.query) })
	}
	// And 1,000 status changes scattered over the table: each clears its
	// page's all-visible mark.
	_, err = pool.Exec(ctx, `
UPDATE orders SET status = CASE status WHEN 'pending' THEN 'confirmed' ELSE 'pending' END, updated_at = now()
 WHERE id IN (SELECT id FROM orders WHERE organization_id = $1 AND external_id LIKE 'ext-%' ORDER BY id LIMIT 1000)`, uuid.MustParse(f.org))
	require.NoError(b, err)
	for _, c := range unvacuumed {
		b.Run("updated_"+c.name, func(b *testing.B) { benchListQuery(b, f, c.query) })
	}
}

// benchListQuery runs GET /orders?query b.N times after a warm-up and
// reports the latency percentiles and the number of matches.
func benchListQuery(b *testing.B, f *listFixture, query string) {
	path := "/api/v1/orders?" + query
	var last []byte
	run := func() time.Duration {
		req := httptest.NewRequest("GET", path, nil)
		req.Header.Set("Authorization", "Bearer "+f.key.token)
		rec := httptest.NewRecorder()
		start := time.Now()
		f.e.handler.ServeHTTP(rec, req)
		d := time.Since(start)
		last = rec.Body.Bytes()
		if rec.Code != http.StatusOK {
			b.Fatalf("list %s: %d %s", path, rec.Code, rec.Body.String())
		}
		return d
	}
	for range 20 { // warm the plan and connection caches
		run()
	}
	var page struct {
		Pagination Pagination `json:"pagination"`
	}
	require.NoError(b, json.Unmarshal(last, &page))
	durations := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		durations = append(durations, run())
	}
	b.StopTimer()
	slices.Sort(durations)
	q := func(p float64) float64 {
		return float64(durations[min(len(durations)-1, int(p*float64(len(durations))))].Microseconds()) / 1000
	}
	b.ReportMetric(q(0.50), "p50_ms")
	b.ReportMetric(q(0.99), "p99_ms")
	b.ReportMetric(float64(page.Pagination.Total), "matches")
}
