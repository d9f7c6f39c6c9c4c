package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// rcTestOrg inserts an organization with a carrier_b account.
func rcTestOrg(t *testing.T, s *store.Store) (orgID, accountID uuid.UUID) {
	t.Helper()
	ctx := t.Context()
	orgID, accountID = uuid.New(), uuid.New()
	_, err := s.Pool.Exec(ctx, `INSERT INTO organizations (id, name, slug) VALUES ($1, 'RC', $2)`, orgID, "rc-"+orgID.String())
	require.NoError(t, err)
	_, err = s.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, supports_rating)
		VALUES ($1, $2, 'B', 'carrier_b', true)`, accountID, orgID)
	require.NoError(t, err)
	return orgID, accountID
}

func rcTestCreate(t *testing.T, s *store.Store, orgID, accountID uuid.UUID, n int) store.RateComparison {
	t.Helper()
	items := make([]store.NewRateComparisonItem, n)
	for i := range items {
		items[i].TrackingNumber = fmt.Sprintf("1ZTEST%06d", i+1)
		if i%2 == 0 {
			c := float64(10 + i%7)
			items[i].NetCost = &c
		}
		if i%3 == 0 {
			svc := "03"
			items[i].ServiceType = &svc
		}
	}
	c, err := store.CreateRateComparison(t.Context(), s.Pool, store.RateComparison{
		ID: uuid.New(), OrganizationID: orgID, Name: "Q1", CarrierAccountID: &accountID, Carrier: "carrier_b", SourceCarrier: "carrier_a",
	}, items)
	require.NoError(t, err)
	return c
}

func TestStoreRateComparisonCreateTenThousand(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, accountID := rcTestOrg(t, s)

	began := time.Now()
	c := rcTestCreate(t, s, orgID, accountID, store.RateComparisonMaxItems)
	t.Logf("10,000 items inserted in %s", time.Since(began).Round(time.Millisecond))
	require.Equal(t, store.RateComparisonDraft, c.Status)
	require.Equal(t, 10_000, c.TotalItems)
	require.Equal(t, 10_000, c.PendingItems)
	require.Zero(t, c.CompletedItems)
	require.Equal(t, "carrier_b", c.Carrier)
	require.Nil(t, c.SavingsPercent())

	items, total, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, store.RateComparisonItemFilter{Limit: 3, Offset: 9_998})
	require.NoError(t, err)
	require.Equal(t, 10_000, total)
	require.Len(t, items, 2)
	require.Equal(t, 9_999, items[0].Seq)
	require.Equal(t, "1ZTEST009999", items[0].TrackingNumber)
	require.Equal(t, store.RateItemPending, items[0].Status)
	require.Nil(t, items[1].NetCost, "odd positions have no net cost")

	maxSeq, err := store.RateComparisonMaxSeq(ctx, s.Pool, orgID, c.ID)
	require.NoError(t, err)
	require.Equal(t, 10_000, maxSeq)

	// A duplicate tracking number (case-insensitively) is a conflict, and
	// nothing is inserted.
	_, err = store.CreateRateComparison(ctx, s.Pool, store.RateComparison{
		ID: uuid.New(), OrganizationID: orgID, Name: "dup", Carrier: "carrier_b", SourceCarrier: "carrier_a",
	}, []store.NewRateComparisonItem{{TrackingNumber: "abc"}, {TrackingNumber: "ABC"}})
	require.ErrorIs(t, err, store.ErrConflict)
	list, n, err := store.ListRateComparisons(ctx, s.Pool, orgID, store.RateComparisonFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, list, 1)
}

func TestStoreRateComparisonLifecycle(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, accountID := rcTestOrg(t, s)
	c := rcTestCreate(t, s, orgID, accountID, 10)

	// Another organization sees nothing.
	otherOrg, _ := rcTestOrg(t, s)
	_, err := store.RateComparisonByID(ctx, s.Pool, otherOrg, c.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, _, err = store.StartRateComparison(ctx, s.Pool, otherOrg, c.ID, "wf")
	require.ErrorIs(t, err, store.ErrNotFound)

	// Nothing is claimed while draft.
	claimed, err := store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, 1, 10)
	require.NoError(t, err)
	require.Empty(t, claimed)

	// draft → processing; twice is a conflict.
	started, prev, err := store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "rate-comparison/"+c.ID.String())
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonDraft, prev)
	require.Equal(t, store.RateComparisonProcessing, started.Status)
	require.NotNil(t, started.StartedAt)
	require.Equal(t, "rate-comparison/"+c.ID.String(), *started.WorkflowID)
	_, prev, err = store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
	require.ErrorIs(t, err, store.ErrConflict)
	require.Equal(t, store.RateComparisonProcessing, prev)

	// Revert (the workflow could not start), then start again.
	require.NoError(t, store.RevertRateComparisonStart(ctx, s.Pool, orgID, c.ID, store.RateComparisonDraft))
	got, err := store.RateComparisonByID(ctx, s.Pool, orgID, c.ID)
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonDraft, got.Status)
	require.Nil(t, got.WorkflowID)
	_, _, err = store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
	require.NoError(t, err)

	// Claim the first batch: seq 1-4 move to tracking, in seq order.
	claimed, err = store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, 1, 4)
	require.NoError(t, err)
	require.Len(t, claimed, 4)
	for i, it := range claimed {
		require.Equal(t, i+1, it.Seq)
	}
	require.Equal(t, 10.0, *claimed[0].NetCost)
	require.Equal(t, "03", *claimed[0].ServiceType)
	require.Nil(t, claimed[1].NetCost)
	require.NoError(t, store.MarkRateComparisonItemsRating(ctx, s.Pool, orgID, c.ID, []uuid.UUID{claimed[0].ID, claimed[1].ID}))
	rating, _, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, store.RateComparisonItemFilter{Status: store.RateItemRating, Limit: 10})
	require.NoError(t, err)
	require.Len(t, rating, 2)

	// One batched write: three completed, one failed.
	price := func(v float64) *float64 { return &v }
	days := 3
	res := []store.RateComparisonItemResult{
		{ID: claimed[0].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_GROUND", ServiceLevel: "ground",
			Origin: &store.RateAddress{City: "DENVER", State: "CO", Zip: "80202", Country: "US"}, Destination: &store.RateAddress{City: "RENO", State: "NV", Zip: "89501", Country: "US"},
			WeightValue: price(12.5), WeightUnit: "lb", Zone: "5", QuotedService: "03", QuotedServiceName: "UPS Ground", QuotedPrice: price(7.25), Currency: "USD", TransitDays: &days},
		{ID: claimed[1].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_GROUND", ServiceLevel: "ground", Zone: "5",
			QuotedService: "03", QuotedPrice: price(8), Currency: "USD"},
		{ID: claimed[2].ID, Status: store.RateItemCompleted, ServiceType: "FEDEX_2_DAY", ServiceLevel: "2_day", Zone: "8",
			QuotedService: "02", QuotedPrice: price(20), Currency: "USD"},
		{ID: claimed[3].ID, Status: store.RateItemFailed, Error: "tracking number unknown to carrier_a"},
	}
	counters, err := store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, res)
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCounters{PendingItems: 6, CompletedItems: 3, FailedItems: 1,
		TotalNetCost: 10 + 12, TotalQuotedCost: 35.25, TotalSavings: (10 - 7.25) + (12 - 20), Written: 4}, counters)

	// The same write again changes nothing (idempotent).
	again, err := store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, res)
	require.NoError(t, err)
	counters.Written = 0
	require.Equal(t, counters, again)

	items, _, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, store.RateComparisonItemFilter{Limit: 2})
	require.NoError(t, err)
	first := items[0]
	require.Equal(t, store.RateItemCompleted, first.Status)
	require.Equal(t, "03", *first.ServiceType, "the uploaded service is kept")
	require.Equal(t, "ground", *first.ServiceLevel)
	require.Equal(t, "DENVER", *first.OriginCity)
	require.Equal(t, "89501", *first.DestinationZip)
	require.Equal(t, 12.5, *first.WeightValue)
	require.Equal(t, "5", *first.Zone)
	require.Equal(t, 7.25, *first.QuotedPrice)
	require.Equal(t, 2.75, *first.Savings)
	require.Equal(t, 3, *first.TransitDays)
	require.Nil(t, items[1].Savings, "no net cost, no savings")
	require.Equal(t, "FEDEX_GROUND", *items[1].ServiceType, "the tracked service fills a missing one")

	// Filters.
	for _, tc := range []struct {
		f    store.RateComparisonItemFilter
		want int
	}{
		{store.RateComparisonItemFilter{Zone: "5"}, 2},
		{store.RateComparisonItemFilter{ServiceType: "FEDEX_2_DAY"}, 1},
		{store.RateComparisonItemFilter{Status: store.RateItemFailed}, 1},
		{store.RateComparisonItemFilter{Status: store.RateItemPending}, 6},
		{store.RateComparisonItemFilter{Search: "ztest00000"}, 9},
		{store.RateComparisonItemFilter{Search: "1ZTEST000010"}, 1},
		{store.RateComparisonItemFilter{Search: "%"}, 0},
		{store.RateComparisonItemFilter{Search: "_"}, 0},
	} {
		tc.f.Limit = 100
		_, n, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, tc.f)
		require.NoError(t, err)
		require.Equal(t, tc.want, n, "%+v", tc.f)
	}

	// Summary: GROUP BY zone and by service.
	sum, err := store.RateComparisonSummary(ctx, s.Pool, orgID, c.ID)
	require.NoError(t, err)
	pct := func(v float64) *float64 { return &v }
	require.Equal(t, store.RateSummaryTotals{Items: 10, Pending: 6, Completed: 3, Failed: 1, NetCost: 22, QuotedCost: 35.25, Savings: -5.25,
		SavingsPercent: pct(-23.86)}, sum.Totals)
	str := func(s string) *string { return &s }
	require.Equal(t, []store.RateSummaryZone{
		{Zone: str("5"), Items: 2, NetCost: 10, QuotedCost: 15.25, Savings: 2.75, SavingsPercent: pct(27.5)},
		{Zone: str("8"), Items: 1, NetCost: 12, QuotedCost: 20, Savings: -8, SavingsPercent: pct(-66.67)},
	}, sum.ByZone)
	require.Equal(t, []store.RateSummaryService{
		{ServiceType: str("03"), ServiceLevel: str("ground"), QuotedService: str("03"), Items: 1, NetCost: 10, QuotedCost: 7.25, Savings: 2.75, SavingsPercent: pct(27.5)},
		{ServiceType: str("FEDEX_2_DAY"), ServiceLevel: str("2_day"), QuotedService: str("02"), Items: 1, NetCost: 12, QuotedCost: 20, Savings: -8, SavingsPercent: pct(-66.67)},
		{ServiceType: str("FEDEX_GROUND"), ServiceLevel: str("ground"), QuotedService: str("03"), Items: 1, QuotedCost: 8},
	}, sum.ByService)

	// Cancel: the six unfinished items become skipped; counters recounted.
	fin, err := store.FinishRateComparison(ctx, s.Pool, orgID, c.ID, store.FinishCancelled, "")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCancelled, fin.Status)
	require.Equal(t, 0, fin.PendingItems)
	require.Equal(t, 6, fin.SkippedItems)
	require.Equal(t, 3, fin.CompletedItems)
	require.Equal(t, 1, fin.FailedItems)
	require.Equal(t, -5.25, fin.TotalSavings)
	require.Equal(t, -23.86, *fin.SavingsPercent())
	require.NotNil(t, fin.CompletedAt)
	_, n, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, store.RateComparisonItemFilter{Status: store.RateItemSkipped, Limit: 1})
	require.NoError(t, err)
	require.Equal(t, 6, n)

	// A closed comparison is left alone; a late batch write touches nothing
	// and says so (the batch activity then stops).
	fin2, err := store.FinishRateComparison(ctx, s.Pool, orgID, c.ID, store.FinishCompleted, "")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCancelled, fin2.Status)
	_, err = store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, []store.RateComparisonItemResult{{ID: items[0].ID, Status: store.RateItemFailed}})
	require.ErrorIs(t, err, store.ErrRateComparisonClosed)
	after, err := store.RateComparisonByID(ctx, s.Pool, orgID, c.ID)
	require.NoError(t, err)
	require.Equal(t, fin.CompletedItems, after.CompletedItems)
	require.Equal(t, fin.FailedItems, after.FailedItems)

	// Cancelled cannot be processed again.
	_, _, err = store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
	require.ErrorIs(t, err, store.ErrConflict)

	// Delete: gone with its items; a batch write then reports it gone.
	require.NoError(t, store.DeleteRateComparison(ctx, s.Pool, orgID, c.ID))
	require.ErrorIs(t, store.DeleteRateComparison(ctx, s.Pool, orgID, c.ID), store.ErrNotFound)
	_, err = store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, res)
	require.True(t, errors.Is(err, store.ErrRateComparisonGone))
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM rate_comparison_items WHERE comparison_id = $1`, c.ID).Scan(&left))
	require.Zero(t, left)
}

func TestStoreRateComparisonFinish(t *testing.T) {
	s := storetest.New(t)
	ctx := context.Background()
	orgID, accountID := rcTestOrg(t, s)

	// Every item failed: completed becomes failed with the reason.
	c := rcTestCreate(t, s, orgID, accountID, 2)
	_, _, err := store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
	require.NoError(t, err)
	claimed, err := store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, 1, 2)
	require.NoError(t, err)
	_, err = store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, []store.RateComparisonItemResult{
		{ID: claimed[0].ID, Status: store.RateItemFailed, Error: "x"}, {ID: claimed[1].ID, Status: store.RateItemFailed, Error: "y"},
	})
	require.NoError(t, err)
	fin, err := store.FinishRateComparison(ctx, s.Pool, orgID, c.ID, store.FinishCompleted, "")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonFailed, fin.Status)
	require.Equal(t, store.ErrEveryItemFailed, *fin.Error)
	require.Equal(t, 2, fin.FailedItems)

	// A fatal failure keeps the unfinished items pending; processing it
	// again is allowed and clears the error.
	c2 := rcTestCreate(t, s, orgID, accountID, 3)
	_, _, err = store.StartRateComparison(ctx, s.Pool, orgID, c2.ID, "wf")
	require.NoError(t, err)
	_, err = store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c2.ID, 1, 1)
	require.NoError(t, err)
	fin, err = store.FinishRateComparison(ctx, s.Pool, orgID, c2.ID, store.FinishFailed, "carrier_b refused the credentials")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonFailed, fin.Status)
	require.Equal(t, 3, fin.PendingItems)
	require.Equal(t, "carrier_b refused the credentials", *fin.Error)
	again, prev, err := store.StartRateComparison(ctx, s.Pool, orgID, c2.ID, "wf")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonFailed, prev)
	require.Nil(t, again.Error)
	require.Nil(t, again.CompletedAt)
	claimed, err = store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c2.ID, 1, 3)
	require.NoError(t, err)
	require.Len(t, claimed, 3, "the item left in tracking is claimed again")

	_, err = store.FinishRateComparison(ctx, s.Pool, orgID, c2.ID, "bogus", "")
	require.Error(t, err)
}

func TestStoreRateComparisonList(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, accountID := rcTestOrg(t, s)
	a := rcTestCreate(t, s, orgID, accountID, 1)
	b := rcTestCreate(t, s, orgID, accountID, 1)
	_, _, err := store.StartRateComparison(ctx, s.Pool, orgID, b.ID, "wf")
	require.NoError(t, err)

	list, n, err := store.ListRateComparisons(ctx, s.Pool, orgID, store.RateComparisonFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, b.ID, list[0].ID, "newest first")
	require.Equal(t, a.ID, list[1].ID)
	list, n, err = store.ListRateComparisons(ctx, s.Pool, orgID, store.RateComparisonFilter{Status: "draft", Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Equal(t, a.ID, list[0].ID)
	list, n, err = store.ListRateComparisons(ctx, s.Pool, orgID, store.RateComparisonFilter{Limit: 1, Offset: 1})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Len(t, list, 1)
	require.Equal(t, a.ID, list[0].ID)
}

// TestStoreRateComparisonConcurrentCloseRace runs batch writes against a
// cancel or a delete of the same comparison, many times: nothing may
// deadlock, a write after the close changes nothing, and a cancelled
// comparison's counters are exactly its items counted by status.
func TestStoreRateComparisonConcurrentCloseRace(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, accountID := rcTestOrg(t, s)
	const rounds, batches, perBatch = 50, 3, 15
	price := func(v float64) *float64 { return &v }
	for round := range rounds {
		del := round%3 == 2
		c := rcTestCreate(t, s, orgID, accountID, batches*perBatch)
		_, _, err := store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
		require.NoError(t, err)
		claims := make([][]store.RateComparisonWorkItem, batches)
		for b := range batches {
			claims[b], err = store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, b*perBatch+1, (b+1)*perBatch)
			require.NoError(t, err)
			require.Len(t, claims[b], perBatch)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, batches+2)
		// One more batch is claimed, moved to rating and written during
		// the race.
		late := rcTestCreateItems(t, s, orgID, c.ID, batches*perBatch, perBatch)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			claimed, err := store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, batches*perBatch+1, batches*perBatch+late)
			if err != nil {
				errs <- fmt.Errorf("claim: %w", err)
				return
			}
			ids := make([]uuid.UUID, 0, len(claimed))
			res := make([]store.RateComparisonItemResult, 0, len(claimed))
			for _, it := range claimed {
				ids = append(ids, it.ID)
				res = append(res, store.RateComparisonItemResult{ID: it.ID, Status: store.RateItemCompleted, QuotedPrice: price(1), Currency: "USD"})
			}
			if err := store.MarkRateComparisonItemsRating(ctx, s.Pool, orgID, c.ID, ids); err != nil {
				errs <- fmt.Errorf("mark rating: %w", err)
				return
			}
			if len(res) == 0 {
				return
			}
			_, err = store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, res)
			if err != nil && !errors.Is(err, store.ErrRateComparisonGone) && !errors.Is(err, store.ErrRateComparisonClosed) {
				errs <- fmt.Errorf("record late batch: %w", err)
			}
		}()
		for b := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := make([]store.RateComparisonItemResult, 0, perBatch)
				for i, it := range claims[b] {
					if i%4 == 3 {
						res = append(res, store.RateComparisonItemResult{ID: it.ID, Status: store.RateItemFailed, Error: "x"})
						continue
					}
					res = append(res, store.RateComparisonItemResult{ID: it.ID, Status: store.RateItemCompleted, Zone: "5",
						QuotedService: "03", QuotedPrice: price(5), Currency: "USD"})
				}
				<-start
				_, err := store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, res)
				if err != nil && !errors.Is(err, store.ErrRateComparisonGone) && !errors.Is(err, store.ErrRateComparisonClosed) {
					errs <- fmt.Errorf("record batch %d: %w", b, err)
				}
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if del {
				if err := store.DeleteRateComparison(ctx, s.Pool, orgID, c.ID); err != nil {
					errs <- fmt.Errorf("delete: %w", err)
				}
				return
			}
			if _, err := store.FinishRateComparison(ctx, s.Pool, orgID, c.ID, store.FinishCancelled, ""); err != nil {
				errs <- fmt.Errorf("cancel: %w", err)
			}
		}()
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err, "round %d", round)
		}
		if del {
			_, err := store.RateComparisonByID(ctx, s.Pool, orgID, c.ID)
			require.ErrorIs(t, err, store.ErrNotFound, "round %d", round)
			continue
		}
		got, err := store.RateComparisonByID(ctx, s.Pool, orgID, c.ID)
		require.NoError(t, err)
		require.Equal(t, store.RateComparisonCancelled, got.Status, "round %d", round)
		var pending, completed, failed, skipped int
		var savings float64
		require.NoError(t, s.Pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE status IN ('pending', 'tracking', 'rating')), count(*) FILTER (WHERE status = 'completed'),
       count(*) FILTER (WHERE status = 'failed'), count(*) FILTER (WHERE status = 'skipped'),
       coalesce(sum(savings) FILTER (WHERE status = 'completed'), 0)::float8
  FROM rate_comparison_items WHERE comparison_id = $1`, c.ID).Scan(&pending, &completed, &failed, &skipped, &savings))
		require.Equal(t, []int{pending, completed, failed, skipped}, []int{got.PendingItems, got.CompletedItems, got.FailedItems, got.SkippedItems},
			"round %d: counters (pending, completed, failed, skipped) match the items", round)
		require.Zero(t, pending, "round %d", round)
		require.InDelta(t, savings, got.TotalSavings, 0.001, "round %d", round)
	}
}

// rcTestCreateItems appends n pending items after position after (the
// comparison's total and pending counters follow) and returns n.
func rcTestCreateItems(t *testing.T, s *store.Store, orgID, compID uuid.UUID, after, n int) int {
	t.Helper()
	_, err := s.Pool.Exec(t.Context(), `
INSERT INTO rate_comparison_items (id, comparison_id, organization_id, seq, tracking_number, net_cost)
SELECT gen_random_uuid(), $1, $2, $3 + g, 'LATE' || ($3 + g), 10 FROM generate_series(1, $4) g`, compID, orgID, after, n)
	require.NoError(t, err)
	_, err = s.Pool.Exec(t.Context(), `UPDATE rate_comparisons SET total_items = total_items + $2, pending_items = pending_items + $2 WHERE id = $1`, compID, n)
	require.NoError(t, err)
	return n
}

// rcInjectFailures makes the next `times` statements that change a row of
// table (by `op`: UPDATE or DELETE) whose column col is id fail with
// SQLSTATE code; times < 0: every one.
func rcInjectFailures(t *testing.T, pool interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
}, table, op, col string, id uuid.UUID, times int, code string) {
	t.Helper()
	name := "rc_fail_" + strings.ReplaceAll(uuid.NewString(), "-", "")
	limit := "true"
	if times >= 0 {
		limit = fmt.Sprintf("nextval('%s') <= %d", name, times)
	}
	ctx := context.Background()
	for _, q := range []string{
		`CREATE SEQUENCE ` + name,
		`CREATE FUNCTION ` + name + `() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.` + col + ` = '` + id.String() + `' AND ` + limit + ` THEN
        RAISE EXCEPTION 'injected failure' USING ERRCODE = '` + code + `';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$`,
		`CREATE TRIGGER ` + name + ` BEFORE ` + op + ` ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION ` + name + `()`,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(ctx, `DROP TRIGGER `+name+` ON `+table)
		_, _ = pool.Exec(ctx, `DROP FUNCTION `+name+`()`)
		_, _ = pool.Exec(ctx, `DROP SEQUENCE `+name)
	})
}

// TestStoreRateComparisonRetriesConflicts: a write aborted as a deadlock
// victim or serialization failure is run again (a couple of times).
func TestStoreRateComparisonRetriesConflicts(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	orgID, accountID := rcTestOrg(t, s)

	c := rcTestCreate(t, s, orgID, accountID, 4)
	_, _, err := store.StartRateComparison(ctx, s.Pool, orgID, c.ID, "wf")
	require.NoError(t, err)
	claimed, err := store.ClaimRateComparisonBatch(ctx, s.Pool, orgID, c.ID, 1, 2)
	require.NoError(t, err)

	rcInjectFailures(t, s.Pool, "rate_comparison_items", "UPDATE", "comparison_id", c.ID, 1, "40P01")
	counters, err := store.RecordRateComparisonResults(ctx, s.Pool, orgID, c.ID, []store.RateComparisonItemResult{
		{ID: claimed[0].ID, Status: store.RateItemFailed, Error: "x"}, {ID: claimed[1].ID, Status: store.RateItemFailed, Error: "y"},
	})
	require.NoError(t, err)
	require.Equal(t, 2, counters.Written)

	rcInjectFailures(t, s.Pool, "rate_comparison_items", "UPDATE", "comparison_id", c.ID, 2, "40001")
	fin, err := store.FinishRateComparison(ctx, s.Pool, orgID, c.ID, store.FinishCancelled, "")
	require.NoError(t, err)
	require.Equal(t, store.RateComparisonCancelled, fin.Status)
	require.Equal(t, 2, fin.SkippedItems)
	require.Equal(t, 2, fin.FailedItems)

	rcInjectFailures(t, s.Pool, "rate_comparisons", "DELETE", "id", c.ID, 1, "40P01")
	require.NoError(t, store.DeleteRateComparison(ctx, s.Pool, orgID, c.ID))

	// It gives up after a few attempts; other errors are not retried.
	c2 := rcTestCreate(t, s, orgID, accountID, 1)
	rcInjectFailures(t, s.Pool, "rate_comparisons", "DELETE", "id", c2.ID, -1, "40P01")
	err = store.DeleteRateComparison(ctx, s.Pool, orgID, c2.ID)
	require.True(t, store.IsTransactionConflict(err), "%v", err)
	c3 := rcTestCreate(t, s, orgID, accountID, 1)
	rcInjectFailures(t, s.Pool, "rate_comparisons", "DELETE", "id", c3.ID, 1, "P0001")
	require.Error(t, store.DeleteRateComparison(ctx, s.Pool, orgID, c3.ID))
	require.NoError(t, store.DeleteRateComparison(ctx, s.Pool, orgID, c3.ID))
}

// TestStoreRateComparisonSearchNonASCII: the item search matches tracking
// numbers with non-ASCII letters, whatever the database's locale: in a
// database with LC_CTYPE C (upper() folds ASCII only) as well.
func TestStoreRateComparisonSearchNonASCII(t *testing.T) {
	ctx := t.Context()
	check := func(t *testing.T, s *store.Store, foldsUnicode bool) {
		orgID, accountID := rcTestOrg(t, s)
		c, err := store.CreateRateComparison(ctx, s.Pool, store.RateComparison{
			ID: uuid.New(), OrganizationID: orgID, Name: "intl", CarrierAccountID: &accountID, Carrier: "carrier_b", SourceCarrier: "carrier_a",
		}, []store.NewRateComparisonItem{{TrackingNumber: "ñandú-001"}, {TrackingNumber: "ÉCOLE-002"}, {TrackingNumber: "abc-003"}})
		require.NoError(t, err)
		cases := map[string]int{"ñandú": 1, "ñ": 1, "ÉCOLE": 1, "É": 1, "ñANDú-00": 1, "aBc": 1, "-00": 3, "ü": 0}
		if foldsUnicode {
			cases["ÑANDÚ"], cases["école"], cases["Ñandú-00"] = 1, 1, 1
		}
		for search, want := range cases {
			_, n, err := store.ListRateComparisonItems(ctx, s.Pool, orgID, c.ID, store.RateComparisonItemFilter{Search: search, Limit: 10})
			require.NoError(t, err)
			require.Equal(t, want, n, "search %q", search)
		}
	}
	t.Run("default locale", func(t *testing.T) {
		s := storetest.New(t)
		var ctype string
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT datctype FROM pg_database WHERE datname = current_database()`).Scan(&ctype))
		var folds bool
		require.NoError(t, s.Pool.QueryRow(ctx, `SELECT upper('ñ') = 'Ñ'`).Scan(&folds))
		t.Logf("LC_CTYPE %s, upper() folds non-ASCII: %v", ctype, folds)
		check(t, s, folds)
	})
	t.Run("C locale", func(t *testing.T) {
		conn, err := pgx.Connect(ctx, storetest.ServerURL())
		require.NoError(t, err)
		defer conn.Close(context.Background())
		name := "fos_test_c_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:12]
		_, err = conn.Exec(ctx, `CREATE DATABASE `+name+` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`)
		require.NoError(t, err)
		t.Cleanup(func() {
			_, _ = conn.Exec(context.Background(), `DROP DATABASE IF EXISTS `+name+` WITH (FORCE)`)
		})
		cfg, err := pgxpool.ParseConfig(storetest.ServerURL())
		require.NoError(t, err)
		cfg.ConnConfig.Database = name
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		require.NoError(t, err)
		defer pool.Close()
		require.NoError(t, store.Migrate(ctx, pool, nil))
		check(t, &store.Store{Pool: pool}, false)
	})
}
