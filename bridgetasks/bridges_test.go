package bridgetasks_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// The agent manages bridges as the API does: a config is checked and its
// secret sealed (shown redacted, a redacted value sent back keeps it), a
// change of the shop needs the credentials again, and another
// organization's bridge is not found.
func TestBridgesAsAgent(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	o := newOrganization(t, s, "Bridges")
	box := newBox(t)
	svc := bridgetasks.New(bridgetasks.Deps{Store: s, Secrets: box})
	agent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: o.ID, Scoped: true,
		Scopes: []string{bridgetasks.ScopeRead, bridgetasks.ScopeWrite}}
	str := func(s string) *string { return &s }

	_, err := svc.CreateBridge(ctx, agent, bridgetasks.BridgeInput{Type: str("no_such_type"), Name: str(" "), Config: map[string]any{}})
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, []domain.FieldError{{Field: "type", Message: "must be one of " + joinTypes()}, {Field: "name", Message: "is required"}}, de.Fields)
	_, err = svc.CreateBridge(ctx, agent, bridgetasks.BridgeInput{Type: str("storefront_a"), Name: str("Shop"), Config: map[string]any{"shop_domain": "a.myshopify.com"}})
	require.ErrorAs(t, err, &de)
	require.Equal(t, "config.accessToken", de.Fields[0].Field)

	b, err := svc.CreateBridge(ctx, agent, bridgetasks.BridgeInput{Type: str("storefront_a"), Name: str(" Shop "),
		Config: map[string]any{"shop_domain": "a.myshopify.com", "access_token": "shpat_secret"}})
	require.NoError(t, err)
	require.Equal(t, "Shop", b.Name)
	require.Equal(t, bridgetasks.BridgeStatuses[0], b.Status)
	shown := svc.ShownConfig(ctx, b)
	require.Equal(t, platforms.RedactedValue, shown["accessToken"])
	require.Empty(t, shown[platforms.ConfigEnabledWebhooks])
	require.Contains(t, shown, platforms.ConfigRegisteredWebhooks)
	require.NotContains(t, b.Config, "accessToken", "the secret is sealed, not in the plain config")

	// A redacted value sent back keeps the secret.
	b, err = svc.UpdateBridge(ctx, agent, b.ID, bridgetasks.BridgeChange{Name: str("Shop 2"), Config: map[string]any{"accessToken": platforms.RedactedValue}})
	require.NoError(t, err)
	full, err := store.BridgeFullConfig(box, b)
	require.NoError(t, err)
	require.Equal(t, "shpat_secret", full["accessToken"])
	// Another shop: the token must come again.
	_, err = svc.UpdateBridge(ctx, agent, b.ID, bridgetasks.BridgeChange{Config: map[string]any{"shopDomain": "b.myshopify.com"}})
	require.ErrorAs(t, err, &de)
	require.Equal(t, "config.accessToken", de.Fields[0].Field)
	b, err = svc.UpdateBridge(ctx, agent, b.ID, bridgetasks.BridgeChange{Config: map[string]any{"shopDomain": "b.myshopify.com", "accessToken": "shpat_b"}})
	require.NoError(t, err)
	require.Equal(t, "b.myshopify.com", b.Config["shopDomain"])

	other := domain.Actor{Kind: domain.ActorAgent, OrganizationID: uuid.New()}
	_, err = svc.UpdateBridge(ctx, other, b.ID, bridgetasks.BridgeChange{Name: str("x")})
	require.ErrorIs(t, err, domain.ErrNotFound)
	require.ErrorIs(t, svc.DeleteBridge(ctx, other, b.ID), domain.ErrNotFound)
	reader := domain.Actor{Kind: domain.ActorAgent, OrganizationID: o.ID, Scoped: true, Scopes: []string{bridgetasks.ScopeRead}}
	require.ErrorIs(t, svc.DeleteBridge(ctx, reader, b.ID), domain.ErrForbidden)
	page, err := svc.ListBridges(ctx, reader, bridgetasks.BridgeFilter{Limit: 10})
	require.NoError(t, err)
	require.Equal(t, 1, page.Total)

	require.NoError(t, svc.DeleteBridge(ctx, agent, b.ID))
	_, err = svc.Bridge(ctx, agent, b.ID)
	require.ErrorIs(t, err, domain.ErrNotFound)
}

func joinTypes() string {
	out := ""
	for i, t := range bridgetasks.BridgeTypes() {
		if i > 0 {
			out += ", "
		}
		out += t
	}
	return out
}
