package locations_test

import (
	"os"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/locations"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

func org(t *testing.T, s *store.Store) uuid.UUID {
	t.Helper()
	u, err := store.CreateUser(t.Context(), s.Pool, store.User{ID: uuid.New(), Email: "l" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "L"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(t.Context(), s, "Locations "+u.Email, u.ID)
	require.NoError(t, err)
	return o.ID
}

// The agent's tools manage locations as the API does: values trimmed and
// bounded, "" clears an address field, another organization's location is
// not found, and a read-only caller cannot write.
func TestLocationsAsAgent(t *testing.T) {
	s := storetest.New(t)
	svc := locations.New(s)
	ctx := t.Context()
	agent := domain.Actor{Kind: domain.ActorAgent, OrganizationID: org(t, s), Scoped: true, Scopes: []string{"locations:read", "locations:write"}}

	long := strings.Repeat("x", locations.MaxLen+1)
	_, err := svc.Create(ctx, agent, locations.Input{City: &long})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "name", Message: "is required"}, {Field: "city", Message: "must be at most 255 characters"}}, de.Fields)

	name, city := " Main ", "Austin"
	l, err := svc.Create(ctx, agent, locations.Input{Name: &name, City: &city})
	require.NoError(t, err)
	require.Equal(t, "Main", l.Name)
	require.Nil(t, l.Street)

	empty := ""
	l, err = svc.Update(ctx, agent, l.ID, locations.Input{City: &empty})
	require.NoError(t, err)
	require.Nil(t, l.City)
	require.Equal(t, "Main", l.Name)

	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: org(t, s)}
	_, err = svc.Get(ctx, other, l.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, svc.Delete(ctx, other, l.ID), domain.ErrNotFound)
	reader := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: agent.OrganizationID, Scoped: true, Scopes: []string{"locations:read"}}
	require.ErrorIs(t, svc.Delete(ctx, reader, l.ID), domain.ErrForbidden)
	page, err := svc.List(ctx, reader, nil, 10, 0)
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)
	require.NoError(t, svc.Delete(ctx, agent, l.ID))
}
