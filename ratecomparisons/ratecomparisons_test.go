package ratecomparisons_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/ratecomparisons"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// runs answers each start with err and records the cancels.
type runs struct {
	err       error
	started   []ratecomparisons.Run
	cancelled []uuid.UUID
}

func (r *runs) WorkflowID(id uuid.UUID) string { return "rate-comparison/" + id.String() }
func (r *runs) Start(_ context.Context, in ratecomparisons.Run) error {
	r.started = append(r.started, in)
	return r.err
}
func (r *runs) Cancel(_ context.Context, id uuid.UUID) error {
	r.cancelled = append(r.cancelled, id)
	return nil
}

func ptr[T any](v T) *T { return &v }

// An operation processes comparisons as the API does: a start Temporal
// refused puts the comparison back to draft, a start whose outcome is
// unknown leaves it processing for the reconciler, a cancel closes it and
// stops its run.
func TestRateComparisonsAsOperation(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "r" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "R"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(ctx, s, "Rates "+u.Email, u.ID)
	require.NoError(t, err)
	acct, err := store.CreateCarrierAccount(ctx, s.Pool, store.CarrierAccount{ID: uuid.New(), OrganizationID: o.ID, Name: "B", Carrier: "carrier_b",
		Status: store.CarrierAccountActive, SupportsRating: true})
	require.NoError(t, err)
	r := &runs{}
	svc := ratecomparisons.New(ratecomparisons.Deps{Store: s, Runs: r})
	op := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: o.ID}

	_, err = svc.Create(ctx, op, ratecomparisons.CreateInput{Name: ptr("Q3"), CarrierAccountID: ptr(acct.ID.String()), SourceCarrier: ptr("carrier_b"),
		Items: []ratecomparisons.NewItem{{TrackingNumber: ptr("1Z1")}, {TrackingNumber: ptr("1z1 ")}}})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "items[1].trackingNumber", Message: "duplicates items[0].trackingNumber"}}, de.Fields)
	c, err := svc.Create(ctx, op, ratecomparisons.CreateInput{Name: ptr("Q3"), CarrierAccountID: ptr(acct.ID.String()), SourceCarrier: ptr("carrier_b"),
		Items: []ratecomparisons.NewItem{{TrackingNumber: ptr("1Z1"), NetCost: ptr(12.345)}}})
	require.NoError(t, err)
	require.Equal(t, "draft", c.Status)

	r.err = domain.WorkflowsUnavailable(errors.New("refused"))
	_, err = svc.Process(ctx, op, c.ID)
	require.ErrorIs(t, err, domain.ErrUnavailable)
	got, err := svc.Get(ctx, op, c.ID)
	require.NoError(t, err)
	require.Equal(t, "draft", got.Status, "nothing runs: the comparison is put back")

	r.err = domain.WorkflowsUnavailable(fmt.Errorf("%w: lost", domain.ErrRunMayExist))
	started, err := svc.Process(ctx, op, c.ID)
	require.NoError(t, err)
	require.Equal(t, "processing", started.Status, "the run may exist: the comparison stays processing")
	require.Len(t, r.started, 2)
	require.Equal(t, domain.ActorOperation, r.started[1].RequestedBy.Kind)

	_, err = svc.Process(ctx, op, c.ID)
	require.ErrorIs(t, err, domain.ErrConflict)
	done, err := svc.Cancel(ctx, op, c.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled", done.Status)
	require.Equal(t, []uuid.UUID{c.ID}, r.cancelled)

	other := domain.Actor{Kind: domain.ActorOperation, OrganizationID: uuid.New()}
	require.ErrorIs(t, svc.Delete(ctx, other, c.ID), domain.ErrNotFound)
	reader := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: o.ID, Scoped: true, Scopes: []string{ratecomparisons.ScopeRead}}
	require.ErrorIs(t, svc.Delete(ctx, reader, c.ID), domain.ErrForbidden)
	require.NoError(t, svc.Delete(ctx, op, c.ID))
}
