package api

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/workflows"
)

// purchaseFailure is the API's answer to a purchase that did not end
// recorded: the shipping domain's refusal, mapped to HTTP in one place.
func purchaseFailure(what string, res workflows.PurchaseResult, field func(code, msg string) string) error {
	return fromDomain(shipping.PurchaseFailure(what, res, field))
}

// rawRecordError is what a failed record step may put in a purchase's
// message: database and network text a tenant must not read.
const rawRecordError = "the label 794 was bought but could not be recorded (failed to connect to `host=10.0.0.5 user=fos`: dial tcp 10.0.0.5:5432: connection refused (SQLSTATE 08006)); it was voided with the carrier"

func requireTenantSafe(t *testing.T, err error) *Error {
	t.Helper()
	apiErr, ok := err.(*Error)
	require.True(t, ok, "%T", err)
	for _, s := range append([]string{apiErr.Message}, func() []string {
		var out []string
		for _, d := range apiErr.Details {
			out = append(out, d.Message)
		}
		return out
	}()...) {
		require.NotContains(t, s, "SQLSTATE")
		require.NotContains(t, s, "10.0.0.5")
	}
	return apiErr
}

// A purchase's failure text reaches a tenant only through TenantText.
func TestPurchaseFailureTenantText(t *testing.T) {
	noField := func(string, string) string { return "" }

	err := requireTenantSafe(t, purchaseFailure("carrier_a could not create the label", workflows.PurchaseResult{Outcome: workflows.PurchaseUnknown, Message: rawRecordError}, noField))
	require.Equal(t, 502, err.Status)
	require.Equal(t, "carrier_a could not create the label: "+activities.InternalFailureMessage, err.Message)

	err = requireTenantSafe(t, purchaseFailure("x", workflows.PurchaseResult{Outcome: workflows.PurchaseVoided, Message: rawRecordError}, noField))
	require.Equal(t, 409, err.Status)

	err = requireTenantSafe(t, purchaseFailure("x", workflows.PurchaseResult{Outcome: workflows.PurchaseVoided, Message: rawRecordError,
		Failure: &activities.CarrierFailure{Message: rawRecordError}}, noField))
	require.Equal(t, 502, err.Status)

	// A tenant's own message is kept.
	err = requireTenantSafe(t, purchaseFailure("x", workflows.PurchaseResult{Outcome: workflows.PurchaseRefused, Message: "the shipment was deleted meanwhile"}, noField))
	require.Equal(t, "the shipment was deleted meanwhile", err.Message)
}

// A carrier's refusal of the request as invalid is a 400 naming the field;
// the carrier's own text goes through TenantText.
func TestPurchaseFailureCarrierMessageTenantText(t *testing.T) {
	field := func(code, _ string) string {
		if code == "ZIP" {
			return "ship_to.zip"
		}
		return ""
	}
	refused := func(carrierMsg string) workflows.PurchaseResult {
		return workflows.PurchaseResult{Outcome: workflows.PurchaseRefused, Message: "refused",
			Failure: &activities.CarrierFailure{Invalid: true, Code: "ZIP", Message: "carrier_a: invalid zip", CarrierMessage: carrierMsg}}
	}
	err := requireTenantSafe(t, purchaseFailure("x", refused("upstream https://10.0.0.5:8443/ship failed: invalid character '<' (SQLSTATE 0)"), field))
	require.Equal(t, 400, err.Status)
	require.Equal(t, []FieldError{{Field: "ship_to.zip", Message: "refused by the carrier: " + activities.InternalFailureMessage}}, err.Details)

	err = requireTenantSafe(t, purchaseFailure("x", refused("Postal code 99999 is not valid"), field))
	require.Equal(t, []FieldError{{Field: "ship_to.zip", Message: "refused by the carrier: Postal code 99999 is not valid"}}, err.Details)
}
