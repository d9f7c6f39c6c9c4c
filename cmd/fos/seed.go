package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fos-dev/fos/api"
	"github.com/fos-dev/fos/auth"
	"github.com/fos-dev/fos/platforms"
)

// The demo organization's owner. The password is printed on purpose: this
// is a local sandbox.
const (
	demoEmail    = "demo@fos.local"
	demoPassword = "fos-demo-password"
	demoOrgName  = "Demo Store"
)

type seedResult struct {
	OrgID, OrgName, Email, Password, APIKey string
}

// seedClient calls the real router in-process, so seeding goes through the
// same validation as any client.
type seedClient struct {
	h     http.Handler
	token string
	org   string
}

func (c *seedClient) call(ctx context.Context, method, path string, body any, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(raw)
	} else {
		rd = bytes.NewReader(nil)
	}
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.org != "" {
		req.Header.Set("X-Organization-Id", c.org)
	}
	rec := httptest.NewRecorder()
	c.h.ServeHTTP(rec, req)
	if out != nil && rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			return rec.Code, fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	if rec.Code >= 400 && rec.Code != http.StatusConflict {
		return rec.Code, fmt.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return rec.Code, nil
}

// seedDemo creates (or reuses) the demo organization with a warehouse,
// carrier accounts and a bridge of each type on the sandbox (whose first
// grab-orders imports the sandbox store's orders), and a fresh API key
// with every scope.
func seedDemo(ctx context.Context, deps api.Deps) (*seedResult, error) {
	h := api.NewRouter(deps)
	c := &seedClient{h: h}

	var login struct {
		Data struct {
			AccessToken   string `json:"access_token"`
			Organizations []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"organizations"`
		} `json:"data"`
	}
	code, _ := c.call(ctx, "POST", "/api/v1/auth/login", map[string]string{"email": demoEmail, "password": demoPassword}, &login)
	if code == http.StatusUnauthorized {
		var signup struct {
			Data struct {
				AccessToken  string `json:"access_token"`
				Organization struct {
					ID string `json:"id"`
				} `json:"organization"`
			} `json:"data"`
		}
		code, err := c.call(ctx, "POST", "/api/v1/auth/signup", map[string]string{
			"email": demoEmail, "password": demoPassword, "first_name": "Demo", "last_name": "Owner", "organization_name": demoOrgName,
		}, &signup)
		if err != nil {
			return nil, err
		}
		if code == http.StatusConflict {
			return nil, fmt.Errorf("%s exists but no longer accepts the demo password; log in as yourself, or remove .fos/ to start over", demoEmail)
		}
		c.token, c.org = signup.Data.AccessToken, signup.Data.Organization.ID
	} else if code == http.StatusOK && len(login.Data.Organizations) > 0 {
		c.token, c.org = login.Data.AccessToken, login.Data.Organizations[0].ID
	} else {
		return nil, fmt.Errorf("log in as %s: status %d", demoEmail, code)
	}

	var key struct {
		Data struct {
			Key string `json:"key"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, "POST", "/api/v1/api-keys", map[string]any{
		"name": "fos dev --seed " + time.Now().UTC().Format(time.RFC3339), "scopes": auth.Scopes,
	}, &key); err != nil {
		return nil, err
	}

	if err := seedShipping(ctx, c); err != nil {
		return nil, err
	}
	if err := seedBridges(ctx, c); err != nil {
		return nil, err
	}
	// The embed config of /dev/embed-demo (slug "demo", any origin).
	if _, err := c.call(ctx, "PATCH", "/api/v1/embed/config", map[string]any{"slug": "demo",
		"branding": map[string]any{"company_name": demoOrgName, "primary_color": "#1a73e8"}}, nil); err != nil {
		return nil, err
	}
	return &seedResult{OrgID: c.org, OrgName: demoOrgName, Email: demoEmail, Password: demoPassword, APIKey: key.Data.Key}, nil
}

// seedShipping gives the demo organization a warehouse (its default
// location, the origin of rates and labels) and a sandbox account with each
// carrier, carrier_a through its registration flow (isTest: no MFA).
func seedShipping(ctx context.Context, c *seedClient) error {
	var list struct {
		Pagination struct {
			Total int `json:"total"`
		} `json:"pagination"`
	}
	if _, err := c.call(ctx, "GET", "/api/v1/locations", nil, &list); err != nil {
		return err
	}
	if list.Pagination.Total == 0 {
		var loc struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if _, err := c.call(ctx, "POST", "/api/v1/locations", map[string]any{
			"name": "Demo warehouse", "street": "500 Terry Francois Blvd", "city": "San Francisco",
			"province": "CA", "zip": "94158", "country": "US",
		}, &loc); err != nil {
			return err
		}
		if _, err := c.call(ctx, "PATCH", "/api/v1/organizations", map[string]any{
			"settings": map[string]any{"default_location_id": loc.Data.ID},
		}, nil); err != nil {
			return err
		}
	}

	if _, err := c.call(ctx, "GET", "/api/v1/carrier-accounts", nil, &list); err != nil {
		return err
	}
	if list.Pagination.Total > 0 {
		return nil
	}
	if _, err := c.call(ctx, "POST", "/api/v1/carrier-accounts/carrier_a/register", map[string]any{
		"accountNumber": "123456789", "customerName": demoOrgName, "name": "Demo carrier A", "isTest": true,
		"address": map[string]any{"streetLines": []string{"500 Terry Francois Blvd"}, "city": "San Francisco",
			"stateOrProvinceCode": "CA", "postalCode": "94158", "countryCode": "US"},
	}, nil); err != nil {
		return err
	}
	for _, a := range []map[string]any{
		{"name": "Demo carrier B", "carrier": "carrier_b", "credentials": map[string]any{"clientId": "demo-client", "clientSecret": "demo-secret", "accountNumber": "A1B2C3"}},
		{"name": "Demo carrier C", "carrier": "carrier_c", "credentials": map[string]any{"apiKey": "demo-api-key"}},
	} {
		if _, err := c.call(ctx, "POST", "/api/v1/carrier-accounts", a, nil); err != nil {
			return err
		}
	}
	return nil
}

// demoBridges are the demo organization's bridges, one of each type, with
// credentials the sandbox's stores accept (under FOS_SANDBOX=1 every
// connector talks to the sandbox store of its platform's API; the
// storefront_b storeUrl only names the store there).
func demoBridges() []map[string]any {
	return []map[string]any{
		{"type": platforms.TypeStorefrontA, "name": "Demo storefront A", "config": map[string]any{
			"shopDomain": "demo-store.myshopify.com", "accessToken": "shpat_demo_token"}},
		{"type": platforms.TypeShippingHubA, "name": "Demo shipping hub", "config": map[string]any{
			"apiKey": "demo-hub-key", "apiSecret": "demo-hub-secret"}},
		{"type": platforms.TypeStorefrontB, "name": "Demo storefront B", "config": map[string]any{
			"storeUrl": "https://demo-store.example.com", "consumerKey": "ck_demo", "consumerSecret": "cs_demo"}},
		{"type": platforms.TypeStorefrontC, "name": "Demo storefront C", "config": map[string]any{
			"storeHash": "demo123", "accessToken": "demo-storefront-c-token"}},
		{"type": platforms.TypeMarketplaceA, "name": "Demo marketplace", "config": map[string]any{
			"sellerId": "ADEMOSELLER", "refreshToken": "Atzr|demo-refresh-token", "clientId": "amzn1.application-oa2-client.demo",
			"clientSecret": "demo-client-secret", "marketplaceId": "ATVPDKIKX0DER"}},
	}
}

// seedBridges creates the demo bridges the organization lacks (one per
// type; existing ones are reused) and runs the first grab-orders of each
// bridge that has never run a task, through the API, so the UI shows real
// runs. The runs go on in the worker; seeding does not wait for them.
func seedBridges(ctx context.Context, c *seedClient) error {
	var bridges struct {
		Data []struct {
			ID   string `json:"id"`
			Type string `json:"type"`
		} `json:"data"`
	}
	if _, err := c.call(ctx, "GET", "/api/v1/bridges?limit=100", nil, &bridges); err != nil {
		return err
	}
	byType := map[string]string{}
	for _, b := range bridges.Data {
		if _, seen := byType[b.Type]; !seen {
			byType[b.Type] = b.ID
		}
	}
	for _, b := range demoBridges() {
		typ := b["type"].(string)
		if byType[typ] != "" {
			continue
		}
		var created struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if _, err := c.call(ctx, "POST", "/api/v1/bridges", b, &created); err != nil {
			return err
		}
		byType[typ] = created.Data.ID
	}
	for _, b := range demoBridges() {
		id := byType[b["type"].(string)]
		var runs struct {
			Data []json.RawMessage `json:"data"`
		}
		if _, err := c.call(ctx, "GET", "/api/v1/bridges/"+id+"/executions", nil, &runs); err != nil {
			return err
		}
		if len(runs.Data) > 0 {
			continue
		}
		if _, err := c.call(ctx, "POST", "/api/v1/bridges/"+id+"/tasks/"+platforms.TaskGrabOrders+"/run", nil, nil); err != nil {
			return err
		}
	}
	return nil
}
