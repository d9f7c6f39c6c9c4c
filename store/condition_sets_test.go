package store_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func csTestSet(t testing.TB, s *store.Store, orgID uuid.UUID, name, typ string) store.ConditionSet {
	t.Helper()
	c, err := store.CreateConditionSet(t.Context(), s.Pool, store.ConditionSet{ID: uuid.New(), OrganizationID: orgID, Name: name, ValueType: typ})
	require.NoError(t, err)
	return c
}

// csTestOrg is an organization for a benchmark.
func csTestOrg(tb testing.TB, s *store.Store) uuid.UUID {
	tb.Helper()
	u, err := store.CreateUser(tb.Context(), s.Pool, store.User{ID: uuid.New(), Email: "c" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "C"})
	require.NoError(tb, err)
	org, err := store.CreateOrganization(tb.Context(), s, "Sets "+u.Email, u.ID)
	require.NoError(tb, err)
	return org.ID
}

func csTestValues(prefix string, n int) []store.NewConditionSetValue {
	out := make([]store.NewConditionSetValue, n)
	for i := range out {
		out[i] = store.NewConditionSetValue{Value: fmt.Sprintf("%s%07d", prefix, i)}
	}
	return out
}

func TestConditionSetCRUDAndValues(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, _ := orderTestOrg(t, s)
	other, _ := orderTestOrg(t, s)

	a := csTestSet(t, s, org, "SKUs", "string")
	require.Equal(t, 0, a.ValueCount)
	_, err := store.CreateConditionSet(ctx, s.Pool, store.ConditionSet{ID: uuid.New(), OrganizationID: org, Name: "SKUs", ValueType: "number"})
	require.ErrorIs(t, err, store.ErrConflict, "names are unique in an organization")
	csTestSet(t, s, other, "SKUs", "string") // but not across organizations

	_, err = store.ConditionSetByID(ctx, s.Pool, other, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = store.AddConditionSetValues(ctx, s, other, a.ID, csTestValues("X", 1))
	require.ErrorIs(t, err, store.ErrNotFound, "another organization's set")

	label := "Blue"
	added, err := store.AddConditionSetValues(ctx, s, org, a.ID, []store.NewConditionSetValue{{Value: "b"}, {Value: "a", Label: &label}, {Value: "b"}})
	require.NoError(t, err)
	require.Equal(t, 2, added, "a repeat inside the batch counts once")
	added, err = store.AddConditionSetValues(ctx, s, org, a.ID, []store.NewConditionSetValue{{Value: "a"}, {Value: "c"}})
	require.NoError(t, err)
	require.Equal(t, 1, added, "only new values count")

	vals, total, err := store.ListConditionSetValues(ctx, s.Pool, org, a.ID, 2, 0)
	require.NoError(t, err)
	require.Equal(t, 3, total)
	require.Equal(t, []string{"a", "b"}, []string{vals[0].Value, vals[1].Value}, "alphabetical")
	require.Equal(t, "Blue", *vals[0].Label, "the first label stays")

	removed, err := store.RemoveConditionSetValues(ctx, s, org, a.ID, []string{"a", "zzz"})
	require.NoError(t, err)
	require.Equal(t, 1, removed)
	got, err := store.ConditionSetByID(ctx, s.Pool, org, a.ID)
	require.NoError(t, err)
	require.Equal(t, 2, got.ValueCount)

	loaded, err := store.LoadConditionSets(ctx, s.Pool, org, []uuid.UUID{a.ID, uuid.New()})
	require.NoError(t, err)
	require.Len(t, loaded, 1)
	require.ElementsMatch(t, []string{"b", "c"}, loaded[a.ID].Values)
	loaded, err = store.LoadConditionSets(ctx, s.Pool, other, []uuid.UUID{a.ID})
	require.NoError(t, err)
	require.Empty(t, loaded, "another organization's set is not loaded")

	require.NoError(t, store.ClearConditionSetValues(ctx, s, org, a.ID))
	got, _ = store.ConditionSetByID(ctx, s.Pool, org, a.ID)
	require.Equal(t, 0, got.ValueCount)

	desc := "d"
	up, err := store.UpdateConditionSet(ctx, s.Pool, org, a.ID, store.ConditionSetPatch{DescriptionSet: true, Description: &desc})
	require.NoError(t, err)
	require.Equal(t, "SKUs", up.Name)
	require.Equal(t, "d", *up.Description)

	list, n, err := store.ListConditionSets(ctx, s.Pool, org, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.Len(t, list, 1)

	_, err = store.AddConditionSetValues(ctx, s, org, a.ID, csTestValues("Z", 3))
	require.NoError(t, err)
	require.NoError(t, store.DeleteConditionSet(ctx, s, org, a.ID))
	require.ErrorIs(t, store.DeleteConditionSet(ctx, s, org, a.ID), store.ErrNotFound)
	var left int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM condition_set_values WHERE condition_set_id = $1`, a.ID).Scan(&left))
	require.Zero(t, left, "a deleted set's values go with it")
}

// Concurrent adds of overlapping batches keep valueCount equal to the
// number of stored values.
func TestConditionSetConcurrentAdds(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, _ := orderTestOrg(t, s)
	set := csTestSet(t, s, org, "Concurrent", "string")
	var wg sync.WaitGroup
	var mu sync.Mutex
	sum := 0
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every worker adds 0..999 shifted: heavy overlap.
			vals := csTestValues("V", 1000+w*100)[w*100:]
			n, err := store.AddConditionSetValues(ctx, s, org, set.ID, vals)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			sum += n
			mu.Unlock()
		}()
	}
	wg.Wait()
	var stored int
	require.NoError(t, s.Pool.QueryRow(ctx, `SELECT count(*) FROM condition_set_values WHERE condition_set_id = $1`, set.ID).Scan(&stored))
	got, err := store.ConditionSetByID(ctx, s.Pool, org, set.ID)
	require.NoError(t, err)
	require.Equal(t, 1700, stored)
	require.Equal(t, stored, got.ValueCount)
	require.Equal(t, stored, sum, "added counts add up to what was stored")
}

func TestConditionSetDeleteReferenced(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	org, bridge := orderTestOrg(t, s)
	other, _ := orderTestOrg(t, s)
	set := csTestSet(t, s, org, "Ref", "string")
	foreign := csTestSet(t, s, other, "Foreign", "string")

	rule := store.SplitRule{
		ID: uuid.New(), OrganizationID: org, Name: "r", Method: "condition", IsActive: true,
		ConditionGroups: json.RawMessage(`[]`), ConditionSetIDs: []uuid.UUID{set.ID, foreign.ID},
	}
	_, err := store.CreateSplitRule(ctx, s, rule)
	var missing *store.MissingConditionSetsError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, []uuid.UUID{foreign.ID}, missing.IDs, "another organization's set does not exist")

	foreignBridge := uuid.New()
	rule.BridgeID = &foreignBridge
	rule.ConditionSetIDs = []uuid.UUID{set.ID}
	_, err = store.CreateSplitRule(ctx, s, rule)
	require.ErrorIs(t, err, store.ErrSplitRuleBridge)
	rule.BridgeID = &bridge
	created, err := store.CreateSplitRule(ctx, s, rule)
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{set.ID}, created.ConditionSetIDs)

	require.ErrorIs(t, store.DeleteConditionSet(ctx, s, org, set.ID), store.ErrConditionSetInUse)
	created.ConditionSetIDs = nil
	_, err = store.UpdateSplitRule(ctx, s, created)
	require.NoError(t, err)
	require.NoError(t, store.DeleteConditionSet(ctx, s, org, set.ID), "no longer referenced")
}

// BenchmarkAddConditionSetValues100k loads 100,000 new values into a set in
// one call (the store half of POST /condition-sets/{id}/values).
func BenchmarkAddConditionSetValues100k(b *testing.B) {
	s := storetest.New(b)
	org := csTestOrg(b, s)
	vals := csTestValues("SKU-", 100_000)
	for b.Loop() {
		b.StopTimer()
		set := csTestSet(b, s, org, uuid.NewString(), "string")
		b.StartTimer()
		n, err := store.AddConditionSetValues(b.Context(), s, org, set.ID, vals)
		if err != nil || n != len(vals) {
			b.Fatalf("added %d: %v", n, err)
		}
	}
}
