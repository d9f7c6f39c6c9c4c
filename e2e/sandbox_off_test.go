package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/fos-dev/fos/platforms"
)

// A bridge type without a connector fails its resync at once: the
// OrderResync run fails after one attempt, the order gets a sync_failed
// activity saying the connector is not available.
func TestOrderResyncWithoutConnectorFailsClosed(t *testing.T) {
	reg := platforms.NewRegistry()
	reg.Register(platforms.TypeStorefrontA, platforms.NewUnavailableConnector(platforms.TypeStorefrontA))
	s := startWith(t, reg)
	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "Prod Shop",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "orders:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)
	bridge := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Real Shop",
		"config": map[string]any{"shopDomain": "real-shop.example.com", "accessToken": "shpat_real"},
	}))
	order := data(s.mustCall(201, key, "POST", "/api/v1/orders", map[string]any{
		"bridge_id": bridge["id"], "external_id": "1001", "order_number": "R-1", "status": "pending",
		"customer":   map[string]any{"email": "c@example.com", "firstName": "C", "lastName": "D"},
		"line_items": []map[string]any{{"sku": "S", "name": "Item", "quantity": 1, "unitPrice": 1, "totalPrice": 1, "requiresShipping": true, "taxable": true}},
		"totals":     map[string]any{"subtotal": 1, "shipping": 0, "tax": 0, "discount": 0, "total": 1},
		"currency":   "EUR",
	}))
	orderID := order["id"].(string)

	q := data(s.mustCall(202, key, "POST", "/api/v1/orders/"+orderID+"/resync", nil))
	failed := s.waitForActivity(key, orderID, "sync_failed", 1)
	require.Len(t, failed, 1)
	require.Equal(t, `Re-sync from Real Shop failed: bridge "Real Shop" cannot sync: its platform connector is not available`, failed[0]["description"])
	require.Equal(t, "PlatformPermanent", failed[0]["metadata"].(map[string]any)["errorType"])

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := s.temporal.GetWorkflow(ctx, q["workflowId"].(string), q["runId"].(string)).Get(ctx, nil)
	require.Error(t, err, "the run fails")
	hist := s.temporal.GetWorkflowHistory(ctx, q["workflowId"].(string), q["runId"].(string), false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for hist.HasNext() {
		ev, err := hist.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil {
			require.EqualValues(t, 1, a.GetAttempt(), "not retried")
		}
	}
}
