package activities

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// Sandbox credentials that work.
var (
	rcCredsA = map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}
	rcCredsB = map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": "A1B2C3"}
	rcCredsC = map[string]any{"apiKey": "TEST_key"}
)

// rcFixture is an organization on the sandbox carriers.
type rcFixture struct {
	t     *testing.T
	st    *store.Store
	box   *secrets.Box
	acts  *RateComparisonActivities
	orgID uuid.UUID
}

func newRCFixture(t *testing.T, wrap ...func(http.Handler) http.Handler) *rcFixture {
	t.Helper()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	h := sandboxapi.NewHandler()
	for _, w := range wrap {
		h = w(h)
	}
	sb := httptest.NewServer(h)
	t.Cleanup(sb.Close)
	f := &rcFixture{t: t, st: st, box: box, orgID: uuid.New(), acts: &RateComparisonActivities{
		Store: st, Secrets: box, Carriers: carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL}),
		RetryBackoff: time.Millisecond,
	}}
	_, err = st.Pool.Exec(context.Background(), `INSERT INTO organizations (id, name, slug) VALUES ($1, 'RC', $2)`, f.orgID, "rc-"+f.orgID.String())
	require.NoError(t, err)
	return f
}

// account inserts a carrier account with sealed credentials.
func (f *rcFixture) account(carrier string, creds map[string]any, status string) uuid.UUID {
	f.t.Helper()
	id := uuid.New()
	sealed, err := f.box.SealJSON(creds, store.CarrierAccountCredentialsAD(f.orgID, id))
	require.NoError(f.t, err)
	_, err = f.st.Pool.Exec(context.Background(), `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, status)
		VALUES ($1, $2, $3, $4, $5, true, $6)`, id, f.orgID, carrier+" account", carrier, sealed, status)
	require.NoError(f.t, err)
	return id
}

// comparison creates a processing comparison of numbers (netCost 50 on
// even positions).
func (f *rcFixture) comparison(accountID uuid.UUID, source string, numbers []string) store.RateComparison {
	f.t.Helper()
	items := make([]store.NewRateComparisonItem, len(numbers))
	for i, n := range numbers {
		items[i].TrackingNumber = n
		if i%2 == 0 {
			c := 50.0
			items[i].NetCost = &c
		}
	}
	var carrier string
	require.NoError(f.t, f.st.Pool.QueryRow(context.Background(), `SELECT carrier FROM carrier_accounts WHERE id = $1`, accountID).Scan(&carrier))
	c, err := store.CreateRateComparison(context.Background(), f.st.Pool, store.RateComparison{
		ID: uuid.New(), OrganizationID: f.orgID, Name: "t", CarrierAccountID: &accountID, Carrier: carrier, SourceCarrier: source,
	}, items)
	require.NoError(f.t, err)
	c, _, err = store.StartRateComparison(context.Background(), f.st.Pool, f.orgID, c.ID, "rate-comparison/"+c.ID.String())
	require.NoError(f.t, err)
	return c
}

func rcNumbers(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%08d", prefix, i+1)
	}
	return out
}

func (f *rcFixture) items(c store.RateComparison) []store.RateComparisonItem {
	f.t.Helper()
	items, _, err := store.ListRateComparisonItems(context.Background(), f.st.Pool, f.orgID, c.ID, store.RateComparisonItemFilter{Limit: 10_000})
	require.NoError(f.t, err)
	return items
}

func (f *rcFixture) env() *testsuite.TestActivityEnvironment {
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	return env
}

func (f *rcFixture) runBatch(env *testsuite.TestActivityEnvironment, in RateComparisonBatchInput) (RateComparisonBatchResult, error) {
	val, err := env.ExecuteActivity(f.acts.ProcessRateComparisonBatch, in)
	var res RateComparisonBatchResult
	if err == nil {
		require.NoError(f.t, val.Get(&res))
	}
	return res, err
}

func (f *rcFixture) prepare(c store.RateComparison) (PrepareRateComparisonResult, error) {
	return f.acts.PrepareRateComparison(context.Background(), PrepareRateComparisonInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String()})
}

func TestRateComparisonPrepare(t *testing.T) {
	f := newRCFixture(t)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)

	// No active carrier_a account to track with: fatal.
	f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountInactive)
	c := f.comparison(b, carriers.CarrierA, rcNumbers(3, "RC"))
	_, err := f.prepare(c)
	appErr := requireAppError(t, err, ErrTypeRateComparisonFatal, true)
	require.Contains(t, appErr.Message(), "no active carrier_a account")

	// With one: the oldest active carrier_a account tracks, the
	// comparison's account rates.
	a1 := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	p, err := f.prepare(c)
	require.NoError(t, err)
	require.Equal(t, PrepareRateComparisonResult{SourceAccountID: a1.String(), TargetAccountID: b.String(),
		SourceCarrier: carriers.CarrierA, TargetCarrier: carriers.CarrierB, MaxSeq: 3, PendingItems: 3}, p)

	// The comparison's own account tracks when it is of the source carrier.
	own := f.comparison(b, carriers.CarrierB, rcNumbers(2, "RC"))
	p, err = f.prepare(own)
	require.NoError(t, err)
	require.Equal(t, b.String(), p.SourceAccountID)
	require.Equal(t, b.String(), p.TargetAccountID)

	// An inactive target account: fatal.
	_, err = f.st.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET status = 'error' WHERE id = $1`, b)
	require.NoError(t, err)
	_, err = f.prepare(c)
	appErr = requireAppError(t, err, ErrTypeRateComparisonFatal, true)
	require.Contains(t, appErr.Message(), "is error, not active")

	// A deleted target account: fatal.
	_, err = f.st.Pool.Exec(context.Background(), `DELETE FROM carrier_accounts WHERE id = $1`, b)
	require.NoError(t, err)
	_, err = f.prepare(c)
	appErr = requireAppError(t, err, ErrTypeRateComparisonFatal, true)
	require.Contains(t, appErr.Message(), "deleted")

	// Not processing, or deleted: gone.
	_, err = store.FinishRateComparison(context.Background(), f.st.Pool, f.orgID, own.ID, store.FinishCancelled, "")
	require.NoError(t, err)
	_, err = f.prepare(own)
	requireAppError(t, err, ErrTypeRateComparisonGone, true)
	_, err = f.prepare(store.RateComparison{ID: uuid.New()})
	requireAppError(t, err, ErrTypeRateComparisonGone, true)
	_, err = f.acts.PrepareRateComparison(context.Background(), PrepareRateComparisonInput{OrganizationID: "x", ComparisonID: c.ID.String()})
	requireAppError(t, err, ErrTypeInvalidInput, true)
}

// TestRateComparisonBatchAgainstSandbox tracks carrier_a numbers and rates
// them with carrier_b, through the sandbox wire formats.
func TestRateComparisonBatchAgainstSandbox(t *testing.T) {
	f := newRCFixture(t)
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	numbers := rcNumbers(120, "RCA")
	numbers[6] = "RCA000010000" // unknown to the carrier
	c := f.comparison(b, carriers.CarrierA, numbers)
	// An uploaded service wins over the tracked one.
	_, err := f.st.Pool.Exec(context.Background(), `UPDATE rate_comparison_items SET service_type = 'overnight' WHERE comparison_id = $1 AND seq = 2`, c.ID)
	require.NoError(t, err)

	env := f.env()
	var beats int
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { beats++ })
	in := RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 100}
	res, err := f.runBatch(env, in)
	require.NoError(t, err)
	require.Equal(t, 100, res.Claimed)
	require.Equal(t, 99, res.Completed)
	require.Equal(t, 1, res.Failed)
	require.Equal(t, 20, res.Counters.PendingItems, "items 101-120 are another batch")
	require.Equal(t, 99, res.Counters.CompletedItems)
	require.Equal(t, 1, res.Counters.FailedItems)
	require.Greater(t, beats, 0, "the batch heartbeats")

	items := f.items(c)
	var netCost, quoted, savings float64
	for _, it := range items[:100] {
		if it.TrackingNumber == "RCA000010000" {
			require.Equal(t, store.RateItemFailed, it.Status)
			require.Equal(t, "tracking number unknown to carrier_a", *it.Error)
			require.Nil(t, it.QuotedPrice)
			continue
		}
		require.Equal(t, store.RateItemCompleted, it.Status, "%s: %v", it.TrackingNumber, it.Error)
		require.NotEmpty(t, *it.OriginZip)
		require.Equal(t, "US", *it.OriginCountry)
		require.NotEmpty(t, *it.DestinationCity)
		require.Greater(t, *it.WeightValue, 0.0)
		require.Equal(t, "lb", *it.WeightUnit)
		require.NotEmpty(t, *it.Zone)
		require.NotNil(t, it.ServiceType, "the tracked service is recorded")
		require.NotNil(t, it.ServiceLevel)
		require.Equal(t, ComparableService(carriers.CarrierB, *it.ServiceLevel), *it.QuotedService)
		require.Greater(t, *it.QuotedPrice, 0.0)
		require.Equal(t, "USD", *it.Currency)
		require.Nil(t, it.Error)
		quoted += *it.QuotedPrice
		if it.NetCost != nil {
			require.InDelta(t, *it.NetCost-*it.QuotedPrice, *it.Savings, 0.001)
			netCost += *it.NetCost
			savings += *it.Savings
		} else {
			require.Nil(t, it.Savings)
		}
	}
	require.Equal(t, "overnight", *items[1].ServiceType)
	require.Equal(t, LevelOvernight, *items[1].ServiceLevel)
	require.Equal(t, "13", *items[1].QuotedService)
	require.InDelta(t, netCost, res.Counters.TotalNetCost, 0.001)
	require.InDelta(t, quoted, res.Counters.TotalQuotedCost, 0.001)
	require.InDelta(t, savings, res.Counters.TotalSavings, 0.001)
	for _, it := range items[100:] {
		require.Equal(t, store.RateItemPending, it.Status)
	}

	// The same batch again (a retry) has nothing left to do.
	again, err := f.runBatch(env, in)
	require.NoError(t, err)
	require.Zero(t, again.Claimed)
	var completed int
	require.NoError(t, f.st.Pool.QueryRow(context.Background(), `SELECT completed_items FROM rate_comparisons WHERE id = $1`, c.ID).Scan(&completed))
	require.Equal(t, 99, completed)

	// A deterministic sandbox: the same items quote the same.
	c2 := f.comparison(b, carriers.CarrierA, numbers[:10])
	_, err = f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c2.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 10})
	require.NoError(t, err)
	for i, it := range f.items(c2) {
		if it.Status == store.RateItemCompleted && i != 1 {
			require.Equal(t, *items[i].QuotedPrice, *it.QuotedPrice)
			require.Equal(t, *items[i].Zone, *it.Zone)
		}
	}
}

// TestRateComparisonBatchCarrierBToC tracks with carrier_b (one number per
// call) and rates with carrier_c.
func TestRateComparisonBatchCarrierBToC(t *testing.T) {
	f := newRCFixture(t)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	cc := f.account(carriers.CarrierC, rcCredsC, store.CarrierAccountActive)
	numbers := rcNumbers(30, "1ZRC")
	numbers[3] = "1ZRC00000000" // unknown
	c := f.comparison(cc, carriers.CarrierB, numbers)
	res, err := f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: b.String(), TargetAccountID: cc.String(), FromSeq: 1, ToSeq: 30})
	require.NoError(t, err)
	require.Equal(t, 29, res.Completed)
	require.Equal(t, 1, res.Failed)
	require.Zero(t, res.Counters.PendingItems)
	for _, it := range f.items(c) {
		if it.Status == store.RateItemFailed {
			require.Equal(t, "tracking number unknown to carrier_b", *it.Error)
			continue
		}
		require.True(t, strings.HasPrefix(*it.QuotedService, "usps_"), *it.QuotedService)
		require.NotEmpty(t, *it.Zone)
	}
}

// TestRateComparisonBatchRefusedCredentialsIsFatal: a carrier refusing the
// credentials stops the batch with a permanent error; nothing is failed.
func TestRateComparisonBatchRefusedCredentialsIsFatal(t *testing.T) {
	f := newRCFixture(t)
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	bad := f.account(carriers.CarrierB, map[string]any{"clientId": "id", "clientSecret": sandboxapi.FailValue, "accountNumber": "A1B2C3"}, store.CarrierAccountActive)
	c := f.comparison(bad, carriers.CarrierA, rcNumbers(40, "RCF"))
	_, err := f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: bad.String(), FromSeq: 1, ToSeq: 40})
	appErr := requireAppError(t, err, ErrTypeRateComparisonFatal, true)
	require.Contains(t, appErr.Message(), "carrier_b refused to rate")
	require.NotContains(t, appErr.Message(), sandboxapi.FailValue, "no credential in the message")
	for _, it := range f.items(c) {
		require.Contains(t, []string{store.RateItemTracking, store.RateItemRating}, it.Status, "left for a later run")
	}
}

// TestRateComparisonBatchUnavailableCarrier: a carrier that keeps answering
// 503 is retried in place, then the batch fails with a retryable error and
// leaves the items unfinished for Temporal's retry.
func TestRateComparisonBatchUnavailableCarrier(t *testing.T) {
	f := newRCFixture(t)
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	down := f.account(carriers.CarrierB, map[string]any{"clientId": "id", "clientSecret": "secret", "accountNumber": sandboxapi.FailValue}, store.CarrierAccountActive)
	c := f.comparison(down, carriers.CarrierA, rcNumbers(8, "RCU"))
	in := RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: down.String(), FromSeq: 1, ToSeq: 5}
	_, err := f.runBatch(f.env(), in)
	appErr := requireAppError(t, err, ErrTypeRateComparisonCarrierUnavailable, false)
	require.Contains(t, appErr.Message(), "carrier_b is unavailable")
	require.Contains(t, appErr.Message(), "(8 items not processed)", "the comparison's pending items, not the batch's")
	for _, it := range f.items(c)[:5] {
		require.Equal(t, store.RateItemRating, it.Status)
	}

	// The carrier is back (the account fixed): the retry finishes them.
	sealed, err := f.box.SealJSON(rcCredsB, store.CarrierAccountCredentialsAD(f.orgID, down))
	require.NoError(t, err)
	_, err = f.st.Pool.Exec(context.Background(), `UPDATE carrier_accounts SET credentials = $2 WHERE id = $1`, down, sealed)
	require.NoError(t, err)
	res, err := f.runBatch(f.env(), in)
	require.NoError(t, err)
	require.Equal(t, 5, res.Claimed)
	require.Equal(t, 5, res.Completed)
}

// TestRateComparisonBatchCancelled: a cancelled batch stops at the next
// item, writes what it finished and reports the cancellation.
func TestRateComparisonBatchCancelled(t *testing.T) {
	// Cancel the activity once the carrier has answered five rate calls.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var rated atomic.Int32
	f := newRCFixture(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			next.ServeHTTP(w, r)
			if strings.Contains(r.URL.Path, "/api/rating/") && rated.Add(1) == 5 {
				cancel()
			}
		})
	})
	f.acts.Concurrency = 1
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	c := f.comparison(b, carriers.CarrierA, rcNumbers(100, "RCC"))

	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx})
	env.RegisterActivity(f.acts)
	_, err := f.runBatch(env, RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 100})
	require.Error(t, err)
	require.LessOrEqual(t, rated.Load(), int32(6), "no rate call after the cancellation")

	counts := map[string]int{}
	for _, it := range f.items(c) {
		counts[it.Status]++
	}
	require.GreaterOrEqual(t, counts[store.RateItemCompleted], 4, "%v", counts)
	require.LessOrEqual(t, counts[store.RateItemCompleted], 5, "stopped at the next item: %v", counts)
	require.Equal(t, 100-counts[store.RateItemCompleted], counts[store.RateItemRating], "%v", counts)
	got, err := store.RateComparisonByID(context.Background(), f.st.Pool, f.orgID, c.ID)
	require.NoError(t, err)
	require.Equal(t, counts[store.RateItemCompleted], got.CompletedItems, "the finished items were written")

	// The workflow then closes it: the rest is skipped.
	fin, err := f.acts.FinishRateComparison(context.Background(), FinishRateComparisonInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(), Outcome: store.FinishCancelled})
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCancelled, fin.Status)
	require.Equal(t, 100-counts[store.RateItemCompleted], fin.SkippedItems)
	require.Zero(t, fin.PendingItems)
}

func TestRateComparisonBatchGone(t *testing.T) {
	f := newRCFixture(t)
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	c := f.comparison(a, carriers.CarrierA, rcNumbers(2, "RCG"))
	require.NoError(t, store.DeleteRateComparison(context.Background(), f.st.Pool, f.orgID, c.ID))
	_, err := f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: a.String(), FromSeq: 1, ToSeq: 2})
	requireAppError(t, err, ErrTypeRateComparisonGone, true)

	// Finishing a deleted comparison is fine.
	fin, err := f.acts.FinishRateComparison(context.Background(), FinishRateComparisonInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(), Outcome: store.FinishCompleted})
	require.NoError(t, err)
	require.Empty(t, fin.Status)
	_, err = f.acts.FinishRateComparison(context.Background(), FinishRateComparisonInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(), Outcome: "nope"})
	requireAppError(t, err, ErrTypeInvalidInput, true)
}

func TestServiceLevels(t *testing.T) {
	for _, tc := range []struct{ carrier, service, want string }{
		{carriers.CarrierA, "FEDEX_GROUND", LevelGround},
		{carriers.CarrierA, "FEDEX_EXPRESS_SAVER", Level3Day},
		{carriers.CarrierA, "FEDEX_2_DAY", Level2Day},
		{carriers.CarrierA, "PRIORITY_OVERNIGHT", LevelOvernight},
		{carriers.CarrierA, "INTERNATIONAL_PRIORITY", LevelInternationalPriority},
		{carriers.CarrierB, "03", LevelGround},
		{carriers.CarrierB, "12", Level3Day},
		{carriers.CarrierB, "59", Level2Day},
		{carriers.CarrierB, "14", LevelOvernight},
		{carriers.CarrierB, "08", LevelInternationalEconomy},
		// Another carrier's code, level names and service names.
		{carriers.CarrierB, "fedex_ground", LevelGround},
		{carriers.CarrierA, "ground", LevelGround},
		{carriers.CarrierA, "2-day", Level2Day},
		{carriers.CarrierA, "Overnight", LevelOvernight},
		{carriers.CarrierA, "UPS Next Day Air Saver", LevelOvernight},
		{carriers.CarrierA, "UPS 2nd Day Air A.M.", Level2Day},
		{carriers.CarrierA, "UPS 3 Day Select", Level3Day},
		{carriers.CarrierA, "FedEx Express Saver", Level3Day},
		{carriers.CarrierA, "Home Delivery", LevelGround},
		{carriers.CarrierA, "USPS Priority Mail Express", LevelOvernight},
		{carriers.CarrierA, "UPS Worldwide Expedited", LevelInternationalEconomy},
		{carriers.CarrierA, "", ""},
		{carriers.CarrierA, "carrier pigeon", ""},
	} {
		require.Equal(t, tc.want, ServiceLevel(tc.carrier, tc.service), "%s %q", tc.carrier, tc.service)
	}
	require.Equal(t, "FEDEX_2_DAY", ComparableService(carriers.CarrierA, Level2Day))
	require.Equal(t, "13", ComparableService(carriers.CarrierB, LevelOvernight))
	require.Equal(t, "usps_priority_mail", ComparableService(carriers.CarrierC, Level3Day))
	require.Empty(t, ComparableService("nope", LevelGround))
	// Every level has a comparable service at every carrier.
	for _, code := range carriers.Codes() {
		for _, l := range []string{LevelGround, Level3Day, Level2Day, LevelOvernight, LevelInternationalEconomy, LevelInternationalPriority} {
			require.NotEmpty(t, ComparableService(code, l), "%s %s", code, l)
		}
	}
}

func TestPickQuote(t *testing.T) {
	qs := []carriers.Quote{{ServiceType: "A", TotalPrice: 5}, {ServiceType: "B", TotalPrice: 3}}
	q, ok := rcPickQuote(qs, "A")
	require.True(t, ok)
	require.Equal(t, "A", q.ServiceType)
	q, ok = rcPickQuote(qs, "Z")
	require.True(t, ok)
	require.Equal(t, "B", q.ServiceType)
	_, ok = rcPickQuote(nil, "A")
	require.False(t, ok)
}

// rcPoisonTrack makes the sandbox's carrier_a tracking answer carry a
// malformed entry for the number poison, which fails the adapter's whole
// Track call; calls counts the tracking calls and the numbers in each.
func rcPoisonTrack(poison string, calls *[]int, mu *sync.Mutex) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.Contains(r.URL.Path, "/carrier_a/") || !strings.HasSuffix(r.URL.Path, "/track/v1/trackingnumbers") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			var body map[string]any
			if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &body) != nil {
				w.WriteHeader(rec.Code)
				_, _ = w.Write(rec.Body.Bytes())
				return
			}
			out, _ := body["output"].(map[string]any)
			results, _ := out["completeTrackResults"].([]any)
			mu.Lock()
			*calls = append(*calls, len(results))
			mu.Unlock()
			for _, res := range results {
				if m, _ := res.(map[string]any); m != nil && m["trackingNumber"] == poison {
					m["trackResults"] = []any{"not an object"}
				}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(body)
		})
	}
}

// TestRateComparisonBatchPoisonTrackingNumber: one number whose tracking
// answer the adapter cannot read fails alone; the other numbers of its
// Track call are tracked one by one and rated.
func TestRateComparisonBatchPoisonTrackingNumber(t *testing.T) {
	var (
		mu    sync.Mutex
		calls []int
	)
	numbers := rcNumbers(60, "RCP")
	poison := numbers[7]
	f := newRCFixture(t, rcPoisonTrack(poison, &calls, &mu))
	f.acts.Concurrency = 4
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	c := f.comparison(b, carriers.CarrierA, numbers)
	res, err := f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 60})
	require.NoError(t, err)
	require.Equal(t, 60, res.Claimed)
	require.Equal(t, 59, res.Completed)
	require.Equal(t, 1, res.Failed)
	for _, it := range f.items(c) {
		if it.TrackingNumber == poison {
			require.Equal(t, store.RateItemFailed, it.Status)
			require.Contains(t, *it.Error, "carrier_a tracking failed")
			continue
		}
		require.Equal(t, store.RateItemCompleted, it.Status, "%s: %v", it.TrackingNumber, it.Error)
	}
	// The first chunk (50 numbers, two carrier calls of 30 and 20) failed
	// and was tracked again one number per call; the second chunk (10) was
	// fine.
	mu.Lock()
	defer mu.Unlock()
	singles := 0
	for _, n := range calls {
		if n == 1 {
			singles++
		}
	}
	require.Equal(t, 50, singles, "%v", calls)
}

// TestRateComparisonBatchClosedMeanwhile: a comparison cancelled while a
// batch runs gets nothing from the batch's write, and the batch stops with
// a permanent error instead of reporting success.
func TestRateComparisonBatchClosedMeanwhile(t *testing.T) {
	var (
		once sync.Once
		f    *rcFixture
		c    store.RateComparison
	)
	f = newRCFixture(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.Contains(r.URL.Path, "/api/rating/") {
				once.Do(func() {
					_, err := store.FinishRateComparison(context.Background(), f.st.Pool, f.orgID, c.ID, store.FinishCancelled, "")
					require.NoError(t, err)
				})
			}
			next.ServeHTTP(w, r)
		})
	})
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	c = f.comparison(b, carriers.CarrierA, rcNumbers(10, "RCM"))
	_, err := f.runBatch(f.env(), RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 10})
	appErr := requireAppError(t, err, ErrTypeRateComparisonGone, true)
	require.Contains(t, appErr.Message(), "no longer processing")
	got, err := store.RateComparisonByID(context.Background(), f.st.Pool, f.orgID, c.ID)
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCancelled, got.Status)
	require.Equal(t, 10, got.SkippedItems)
	require.Zero(t, got.CompletedItems)
	for _, it := range f.items(c) {
		require.Equal(t, store.RateItemSkipped, it.Status)
	}
}

// TestRateComparisonBatchOtherFailureAttempts: a failure worth retrying
// that is not a carrier outage (here the database refusing the claim)
// stays retryable until the last allowed attempt, which makes it permanent.
func TestRateComparisonBatchOtherFailureAttempts(t *testing.T) {
	f := newRCFixture(t)
	a := f.account(carriers.CarrierA, rcCredsA, store.CarrierAccountActive)
	b := f.account(carriers.CarrierB, rcCredsB, store.CarrierAccountActive)
	c := f.comparison(b, carriers.CarrierA, rcNumbers(3, "RCO"))
	name := "rc_fail_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	ctx := context.Background()
	for _, q := range []string{
		`CREATE FUNCTION ` + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.comparison_id = '` + c.ID.String() + `' THEN RAISE EXCEPTION 'injected failure'; END IF;
    RETURN NEW;
END $$`,
		`CREATE TRIGGER ` + name + ` BEFORE UPDATE ON rate_comparison_items FOR EACH ROW EXECUTE FUNCTION ` + name + `()`,
	} {
		_, err := f.st.Pool.Exec(ctx, q)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, _ = f.st.Pool.Exec(ctx, `DROP TRIGGER `+name+` ON rate_comparison_items`)
		_, _ = f.st.Pool.Exec(ctx, `DROP FUNCTION `+name+`()`)
	})
	in := RateComparisonBatchInput{OrganizationID: f.orgID.String(), ComparisonID: c.ID.String(),
		SourceAccountID: a.String(), TargetAccountID: b.String(), FromSeq: 1, ToSeq: 3}

	_, err := f.runBatch(f.env(), in)
	require.Error(t, err)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.False(t, appErr.NonRetryable(), "attempt 1 of %d: %v", DefaultRateComparisonMaxOtherAttempts, err)

	f.acts.MaxOtherAttempts = 1
	_, err = f.runBatch(f.env(), in)
	requireAppError(t, err, ErrTypeRateComparisonBatchFailed, true)
}
