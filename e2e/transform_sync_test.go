package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

// TestTransformationsAroundGrabOrders: transformations created through
// the API reshape the orders grab-orders imports (before_sync), are
// written back after the import (after_sync), and a failing one is named
// on the task execution while its order is imported as it came.
func TestTransformationsAroundGrabOrders(t *testing.T) {
	s := start(t)
	mail := "e2e-" + uuid.NewString()[:8] + "@example.com"
	signup := data(s.mustCall(201, "", "POST", "/api/v1/auth/signup", map[string]any{
		"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "Lovelace", "organization_name": "E2E Transforms",
	}))
	orgID := signup["organization"].(map[string]any)["id"].(string)
	code, out := s.call(signup["access_token"].(string), orgID, "POST", "/api/v1/api-keys", map[string]any{
		"name": "e2e", "scopes": []string{"bridges:read", "bridges:write", "orders:read", "transformations:read", "transformations:write"},
	})
	require.Equal(t, 201, code, "%v", out)
	key := data(out)["key"].(string)

	// A sandbox store of 25 orders (bulk-N names its size).
	shop := "bulk-25-tf-" + uuid.NewString()[:8] + ".example.com"
	bridgeID := data(s.mustCall(201, key, "POST", "/api/v1/bridges", map[string]any{
		"type": "storefront_a", "name": "Sandbox shop", "config": map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"},
	}))["id"].(string)
	conn, err := s.platforms.Get(platforms.TypeStorefrontA)
	require.NoError(t, err)
	ids, _, err := conn.ListOrders(context.Background(), platforms.Bridge{Type: platforms.TypeStorefrontA,
		Config: map[string]any{"shopDomain": shop, "accessToken": "shpat_e2e"}}, time.Time{}, "")
	require.NoError(t, err)
	require.Len(t, ids, 25)
	bad := ids[0].ExternalID

	s.mustCall(201, key, "POST", "/api/v1/transformations", map[string]any{
		"name": "tag and upper city", "triggerPoint": "before_sync", "bridgeId": bridgeID, "priority": 10,
		"code": `function transform(d) {
  d.tags = (d.tags || []).concat(['fos-imported']);
  if (d.shippingAddress) d.shippingAddress.city = d.shippingAddress.city.toUpperCase();
  return d;
}`,
	})
	failing := data(s.mustCall(201, key, "POST", "/api/v1/transformations", map[string]any{
		"name": "refuse one", "triggerPoint": "before_sync", "priority": 1,
		"code": "function transform(d) {\n  if (d.externalId === '" + bad + "') throw new Error('refused ' + d.externalId);\n}",
	}))
	s.mustCall(201, key, "POST", "/api/v1/transformations", map[string]any{
		"name": "stamp", "triggerPoint": "after_sync",
		"code": `function transform(o) { o.metadata.importedBy = 'fos'; o.metadata.orderId = o.id; }`,
	})

	exec := s.waitForExecution(key, data(s.mustCall(202, key, "POST", "/api/v1/bridges/"+bridgeID+"/tasks/grab-orders/run", nil))["id"].(string))
	require.Equal(t, "completed", exec["status"], "%v", exec)
	output := exec["output"].(map[string]any)
	n := float64(len(ids))
	require.Equal(t, n, output["created"])
	require.Equal(t, n, output["afterSyncWritten"])
	require.Equal(t, float64(1), output["transformFailed"])
	require.Len(t, output["transformErrors"], 1)
	te := output["transformErrors"].([]any)[0].(map[string]any)
	require.Equal(t, failing["id"], te["transformationId"])
	require.Equal(t, "refuse one", te["name"])
	require.Equal(t, "before_sync", te["triggerPoint"])
	require.Equal(t, bad, te["externalId"])
	require.Contains(t, te["error"], "refused "+bad)

	list := s.mustCall(200, key, "GET", "/api/v1/orders?bridge_id="+bridgeID+"&limit=100", nil)["data"].([]any)
	require.Len(t, list, len(ids))
	cities := 0
	for _, it := range list {
		id := it.(map[string]any)["id"].(string)
		o := data(s.mustCall(200, key, "GET", "/api/v1/orders/"+id, nil))
		require.Equal(t, map[string]any{"importedBy": "fos", "orderId": id}, o["metadata"])
		tags := o["tags"].([]any)
		addr, _ := o["shippingAddress"].(map[string]any)
		if o["externalId"] == bad {
			require.NotContains(t, tags, "fos-imported", "a failed chain leaves the order as it came")
			continue
		}
		require.Contains(t, tags, "fos-imported")
		if addr != nil && addr["city"] != nil {
			require.Equal(t, strings.ToUpper(addr["city"].(string)), addr["city"])
			cities++
		}
	}
	require.Positive(t, cities, "the sandbox orders have cities")
	acts := s.waitForActivity(key, list[0].(map[string]any)["id"].(string), "transform", 1)
	require.Contains(t, acts[0]["description"], "by after_sync transformation stamp")
}
