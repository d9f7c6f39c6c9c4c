package api

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
)

// Every domain kind maps to the status and code of CONTRACT 4.
func TestDomainErrorsMapToContractStatuses(t *testing.T) {
	cases := []struct {
		err    *domain.Error
		status int
		code   string
	}{
		{domain.InvalidField("name", "is required"), 400, "validation_error"},
		{domain.InvalidCode("invalid_javascript", "x"), 400, "invalid_javascript"},
		{domain.NotFound("order"), 404, "not_found"},
		{domain.Conflict("operation is executing"), 409, "conflict"},
		{domain.Gone("expired"), 410, "gone"},
		{domain.Forbidden("no"), 403, "forbidden"},
		{domain.Upstream("carrier_error", "refused", nil), 502, "carrier_error"},
		{domain.Unavailable("down", nil), http.StatusServiceUnavailable, "unavailable"},
	}
	for _, c := range cases {
		e := fromDomain(c.err)
		require.Equal(t, c.status, e.Status, c.err.Error())
		require.Equal(t, c.code, e.Code, c.err.Error())
		require.Equal(t, c.err.Message, e.Message)
	}
	e := fromDomain(domain.InvalidField("line_items[0].sku", "is required"))
	require.Equal(t, []FieldError{{Field: "line_items[0].sku", Message: "is required"}}, e.Details)
}
