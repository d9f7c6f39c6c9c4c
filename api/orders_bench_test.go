package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// BenchmarkCreateOrder creates orders through the real router, middleware
// and store, authenticated by an API key, from 32 concurrent clients.
//
//	go test ./api -run XXX -bench CreateOrder -benchtime 3000x
func BenchmarkCreateOrder(b *testing.B) {
	e := newEnv(b)
	owner := e.signup()
	bridge := orderTestBridge(b, e, owner.org, "Bench shop")
	key := e.apiKey(owner, "orders:write")
	body := orderTestBody(bridge, "EXT")
	body["shipping_address"] = map[string]any{"line1": "1 Main St", "city": "Springfield", "postalCode": "12345", "country": "US"}
	body["tags"] = []string{"web"}
	raw := string(orderJSONOf(body))
	// One external id per request.
	template := strings.Replace(raw, `"external_id":"EXT"`, `"external_id":"EXT-%d"`, 1)
	require.Contains(b, template, "%d")

	const clients = 32
	b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	var seq atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("POST", "/api/v1/orders", strings.NewReader(fmt.Sprintf(template, seq.Add(1))))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key.token)
			rec := httptest.NewRecorder()
			e.handler.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated && failed.Add(1) == 1 {
				b.Errorf("create: %d %s", rec.Code, rec.Body.String())
			}
		}
	})
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
}

// listFixture is one organization holding listOrderCount orders, seeded
// once per test binary and only by BenchmarkListOrders (plain `go test`
// runs no benchmark, so never seeds it).
type listFixture struct {
	e       *testEnv
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
		f := &listFixture{e: e, key: e.apiKey(owner, "orders:read")}
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
		_, err := pool.CopyFrom(ctx, pgx.Identifier{"orders"}, []string{
			"id", "organization_id", "bridge_id", "external_id", "order_number", "status", "payment_status", "fulfillment_status",
			"customer", "customer_email", "customer_name", "line_items", "totals", "total", "currency", "tags", "metadata",
			"ordered_at", "created_at", "updated_at",
		}, pgx.CopyFromRows(rows))
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `VACUUM ANALYZE orders`)
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

// BenchmarkListOrders measures page-1 list latency in an organization of
// 100,000 orders, per filter, and reports p50 and p99 (sequential requests
// through the router with an API key, so each includes authentication).
//
//	go test ./api -run XXX -bench ListOrders -benchtime 3000x
func BenchmarkListOrders(b *testing.B) {
	f := seedListFixture(b)
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
		{"status_search", "status=shipped&search=smith"},
		{"all", ""},
		{"sort_total", "sort=total&status=pending"},
		{"include_bridge", "include=bridge,dispatch_assignments"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			path := "/api/v1/orders?" + c.query
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
		})
	}
}
