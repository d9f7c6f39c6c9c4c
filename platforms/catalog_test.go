package platforms_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
)

func TestTypesCatalog(t *testing.T) {
	types := platforms.Types()
	require.Len(t, types, 5)
	slugs := []string{}
	ids := map[string]bool{}
	for _, bt := range types {
		slugs = append(slugs, bt.Slug)
		_, err := uuid.Parse(bt.ID)
		require.NoError(t, err, bt.Slug)
		assert.False(t, ids[bt.ID], "duplicate id %s", bt.ID)
		ids[bt.ID] = true
		assert.NotEmpty(t, bt.Name)
		assert.NotEmpty(t, bt.Description)
		assert.NotEmpty(t, bt.AuthMethods)
		assert.Contains(t, bt.Tasks, platforms.TaskGrabOrders)
		assert.Contains(t, bt.Tasks, platforms.TaskPushFulfillment)
		assert.False(t, bt.CreatedAt.IsZero())
	}
	assert.Equal(t, []string{"storefront_a", "shipping_hub_a", "storefront_b", "storefront_c", "marketplace_a"}, slugs)

	categories := map[string]string{}
	for _, bt := range types {
		categories[bt.Slug] = bt.Category
	}
	assert.Equal(t, map[string]string{
		"storefront_a": "ecommerce", "shipping_hub_a": "shipping", "storefront_b": "ecommerce",
		"storefront_c": "ecommerce", "marketplace_a": "marketplace",
	}, categories)
}

func TestTypeIDsAreStable(t *testing.T) {
	bt, ok := platforms.TypeBySlug("storefront_a")
	require.True(t, ok)
	assert.Equal(t, "fe312c68-6105-469c-b79b-1c9ff9bc409a", bt.ID)

	byID, ok := platforms.TypeByID(bt.ID)
	require.True(t, ok)
	assert.Equal(t, bt, byID)

	upper, ok := platforms.TypeByID("FE312C68-6105-469C-B79B-1C9FF9BC409A")
	require.True(t, ok)
	assert.Equal(t, "storefront_a", upper.Slug)

	_, ok = platforms.TypeByID("not-a-uuid")
	assert.False(t, ok)
	_, ok = platforms.TypeByID(uuid.NewString())
	assert.False(t, ok)
	_, ok = platforms.TypeBySlug("erp_x")
	assert.False(t, ok)

	// Two calls give equal values, and changing one does not change the catalog.
	a, b := platforms.Types(), platforms.Types()
	assert.Equal(t, a, b)
	a[0].Tasks[0] = "mutated"
	a[0].ConfigFields[0].Key = "mutated"
	assert.Equal(t, b, platforms.Types())
}

func TestBridgeTypeJSONShape(t *testing.T) {
	bt, _ := platforms.TypeBySlug("shipping_hub_a")
	raw, err := json.Marshal(bt)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"id", "name", "slug", "description", "category", "icon_url", "auth_methods", "config_fields", "tasks", "created_at"} {
		assert.Contains(t, m, k)
	}
	field := m["config_fields"].([]any)[0].(map[string]any)
	for _, k := range []string{"key", "label", "type", "required"} {
		assert.Contains(t, field, k)
	}

	tasks := platforms.Tasks("shipping_hub_a")
	raw, err = json.Marshal(tasks[0])
	require.NoError(t, err)
	m = map[string]any{}
	require.NoError(t, json.Unmarshal(raw, &m))
	for _, k := range []string{"id", "bridge_type", "name", "display_name", "description", "category", "supports_schedule", "created_at"} {
		assert.Contains(t, m, k)
	}
}

func TestRequiredFieldsPerType(t *testing.T) {
	want := map[string][]string{
		"storefront_a":   {"shopDomain", "accessToken"},
		"shipping_hub_a": {"apiKey", "apiSecret"},
		"storefront_b":   {"storeUrl", "consumerKey", "consumerSecret"},
		"storefront_c":   {"storeHash", "accessToken"},
		"marketplace_a":  {"sellerId", "refreshToken", "clientId", "clientSecret", "marketplaceId"},
	}
	for typ, fields := range want {
		assert.Equal(t, fields, platforms.RequiredFields(typ), typ)
		assert.Equal(t, fields, platforms.MissingRequired(typ, map[string]any{}), typ)
	}
	assert.Nil(t, platforms.RequiredFields("nope"))
}

func TestTasks(t *testing.T) {
	hub := platforms.Tasks("shipping_hub_a")
	names := []string{}
	for _, task := range hub {
		names = append(names, task.Name)
		assert.Equal(t, "shipping_hub_a", task.BridgeType)
		_, err := uuid.Parse(task.ID)
		assert.NoError(t, err)
	}
	assert.Contains(t, names, "grab-shipments")
	assert.Contains(t, names, "warehouse-sync")

	grab, ok := platforms.TaskByName("storefront_a", "grab-orders")
	require.True(t, ok)
	assert.Equal(t, "sync", grab.Category)
	assert.True(t, grab.SupportsSchedule)
	push, ok := platforms.TaskByName("storefront_a", "push-fulfillment")
	require.True(t, ok)
	assert.Equal(t, "push", push.Category)
	hook, ok := platforms.TaskByName("storefront_a", "process-webhook")
	require.True(t, ok)
	assert.Equal(t, "webhook", hook.Category)
	assert.False(t, hook.SupportsSchedule)
	_, ok = platforms.TaskByName("storefront_b", "grab-shipments")
	assert.False(t, ok)
	assert.Nil(t, platforms.Tasks("nope"))

	// Task ids are unique across the catalog and match BridgeType.Tasks.
	seen := map[string]bool{}
	for _, bt := range platforms.Types() {
		tasks := platforms.Tasks(bt.Slug)
		require.Len(t, tasks, len(bt.Tasks))
		for i, task := range tasks {
			assert.Equal(t, bt.Tasks[i], task.Name)
			assert.False(t, seen[task.ID], "duplicate task id %s", task.ID)
			seen[task.ID] = true
		}
	}
}

func TestNormalizeConfig(t *testing.T) {
	in := map[string]any{
		"shop_domain":      "  demo.example.com ",
		"access_token":     "tok",
		"enabled_webhooks": []any{"orders/create"},
		"custom_thing":     1,
		"ApiVersion":       "2026-07",
	}
	out, errs := platforms.NormalizeConfig("storefront_a", in)
	require.Empty(t, errs)
	assert.Equal(t, map[string]any{
		"shopDomain":      "demo.example.com",
		"accessToken":     "tok",
		"enabledWebhooks": []string{"orders/create"},
		"customThing":     1,
		"apiVersion":      "2026-07",
	}, out)
	assert.Contains(t, in, "shop_domain", "input must not be modified")
	assert.Empty(t, platforms.MissingRequired("storefront_a", out))

	// camelCase wins over another spelling of the same key.
	out, errs = platforms.NormalizeConfig("storefront_c", map[string]any{"store_hash": "snake", "storeHash": "camel"})
	require.Empty(t, errs)
	assert.Equal(t, "camel", out["storeHash"])
	assert.Equal(t, []string{"accessToken"}, platforms.MissingRequired("storefront_c", out))

	// Wrong types are reported with the camelCase path.
	_, errs = platforms.NormalizeConfig("storefront_a", map[string]any{
		"access_token": 42, "enabledWebhooks": []any{1}, "registered_webhooks": "x",
	})
	fields := []string{}
	for _, e := range errs {
		fields = append(fields, e.Field)
	}
	assert.ElementsMatch(t, []string{"config.accessToken", "config.enabledWebhooks", "config.registeredWebhooks"}, fields)

	// Empty strings count as missing.
	missing := platforms.MissingRequired("marketplace_a", map[string]any{
		"sellerId": "S1", "refreshToken": " ", "clientId": "c", "clientSecret": nil, "marketplaceId": "ATVPDKIKX0DER",
	})
	assert.Equal(t, []string{"refreshToken", "clientSecret"}, missing)
}

func TestSnakeToCamel(t *testing.T) {
	cases := map[string]string{
		"shop_domain": "shopDomain", "api_key": "apiKey", "store_url": "storeUrl",
		"marketplace_id": "marketplaceId", "shopDomain": "shopDomain", "a__b_": "aB", "_": "_",
	}
	for in, want := range cases {
		assert.Equal(t, want, platforms.SnakeToCamel(in), in)
	}
}

func TestSecretFields(t *testing.T) {
	secret := map[string][]string{
		"storefront_a":   {"accessToken", "access_token", "webhookSecret"},
		"shipping_hub_a": {"apiKey", "apiSecret", "api_secret"},
		"storefront_b":   {"consumerKey", "consumerSecret"},
		"storefront_c":   {"accessToken", "clientSecret"},
		"marketplace_a":  {"refreshToken", "clientSecret", "refresh_token"},
		"unknown_type":   {"accessToken", "someOtherToken", "dbPassword"},
	}
	for typ, keys := range secret {
		for _, k := range keys {
			assert.True(t, platforms.IsSecretField(typ, k), "%s %s", typ, k)
		}
	}
	plain := map[string][]string{
		"storefront_a":   {"shopDomain", "shop_domain", "enabledWebhooks", "registeredWebhooks", "apiVersion"},
		"shipping_hub_a": {"storeId"},
		"storefront_b":   {"storeUrl"},
		"storefront_c":   {"storeHash", "clientId"},
		"marketplace_a":  {"sellerId", "clientId", "marketplaceId"},
	}
	for typ, keys := range plain {
		for _, k := range keys {
			assert.False(t, platforms.IsSecretField(typ, k), "%s %s", typ, k)
		}
	}

	red := platforms.RedactConfig("storefront_a", map[string]any{
		"shopDomain": "demo", "accessToken": "tok", "webhookSecret": "", "enabledWebhooks": []string{"orders/create"},
	})
	assert.Equal(t, map[string]any{
		"shopDomain": "demo", "accessToken": platforms.RedactedValue, "webhookSecret": "", "enabledWebhooks": []string{"orders/create"},
	}, red)
}

func TestStoreKeyField(t *testing.T) {
	assert.Equal(t, "shopDomain", platforms.StoreKeyField("storefront_a"))
	assert.Equal(t, "apiKey", platforms.StoreKeyField("shipping_hub_a"))
	assert.Equal(t, "storeUrl", platforms.StoreKeyField("storefront_b"))
	assert.Equal(t, "storeHash", platforms.StoreKeyField("storefront_c"))
	assert.Equal(t, "sellerId", platforms.StoreKeyField("marketplace_a"))
	assert.Equal(t, "", platforms.StoreKeyField("nope"))
}
