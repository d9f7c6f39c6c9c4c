package domain

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func TestErrorKindsMatchThroughWrapping(t *testing.T) {
	err := fmt.Errorf("load: %w", NotFound("order"))
	require.ErrorIs(t, err, ErrNotFound)
	require.NotErrorIs(t, err, ErrConflict)
	require.Equal(t, KindNotFound, KindOf(err))
	require.Equal(t, Kind(0), KindOf(errors.New("plain")))

	cause := errors.New("dial tcp: refused")
	up := Upstream("carrier_error", "carrier_a is unreachable", cause)
	require.ErrorIs(t, up, cause)
	require.ErrorIs(t, up, ErrUpstream)
	require.False(t, KindUpstream.Retryable())
	require.True(t, KindUnavailable.Retryable())
}

func TestInvalidNamesEveryField(t *testing.T) {
	err := Invalid(FieldError{"name", "is required"}, FieldError{"line_items[0].sku", "is required"})
	require.Equal(t, "validation_error", err.Code)
	require.Equal(t, "name is required; line_items[0].sku is required", err.Message)
	require.Len(t, err.Fields, 2)
}

func TestActorScopes(t *testing.T) {
	org := uuid.New()
	key := Actor{Kind: ActorAPIKey, ID: uuid.New(), OrganizationID: org, Scopes: []string{"orders:read"}, Scoped: true}
	require.True(t, key.HasScope("orders:read"))
	require.False(t, key.HasScope("orders:write"))
	err := key.RequireScope("orders:write")
	require.ErrorIs(t, err, ErrForbidden)

	user := Actor{Kind: ActorUser, ID: uuid.New(), OrganizationID: org, Role: "member"}
	require.NoError(t, user.RequireScope("orders:write"))

	kind, id, name := System(org).Attribution()
	require.Equal(t, "system", kind)
	require.Nil(t, id)
	require.Equal(t, "system", *name)
}
