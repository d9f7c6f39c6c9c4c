package config

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// CarrierURLVars are the variables that point a carrier adapter at a server
// (CONTRACT 8b): each replaces the scheme and host of one vendor API
// environment; paths stay the adapter's.
var CarrierURLVars = []string{
	"FOS_CARRIER_A_URL", "FOS_CARRIER_A_TEST_URL",
	"FOS_CARRIER_B_URL", "FOS_CARRIER_B_TEST_URL",
	"FOS_CARRIER_C_URL",
}

// PlatformURLVars are the variables that point a platform connector at a
// server (CONTRACT 8b; platforms.APIURLsFromEnv reads them from
// PlatformURLs). storefront_b has none: its storeUrl is its base.
var PlatformURLVars = []string{
	"FOS_STOREFRONT_A_URL", "FOS_SHIPPING_HUB_A_URL", "FOS_STOREFRONT_C_URL",
	"FOS_MARKETPLACE_A_URL", "FOS_MARKETPLACE_A_AUTH_URL",
}

// loadURLs reads CarrierURLVars into c.CarrierURLs and PlatformURLVars
// into c.PlatformURLs (set values only, trailing slash trimmed) and
// FOS_ALLOW_PRIVATE_URLS, one line per problem.
func loadURLs(c *Config, get func(k, def string) string, dev bool) Problems {
	var p Problems
	c.CarrierURLs = map[string]string{}
	c.PlatformURLs = map[string]string{}
	for _, k := range append(append([]string(nil), CarrierURLVars...), PlatformURLVars...) {
		v := get(k, "")
		if v == "" {
			continue
		}
		if msg := checkBaseURL(v); msg != "" {
			p = append(p, fmt.Sprintf("%s=%q: %s", k, v, msg))
			continue
		}
		v = strings.TrimRight(v, "/")
		if !c.Sandbox && c.SandboxURL != "" && (v == c.SandboxURL || strings.HasPrefix(v, c.SandboxURL+"/")) {
			p = append(p, fmt.Sprintf("%s=%q points at the sandbox (FOS_SANDBOX_URL) while FOS_SANDBOX=0; nothing may talk to the sandbox in production", k, v))
			continue
		}
		if slices.Contains(PlatformURLVars, k) {
			c.PlatformURLs[k] = v
		} else {
			c.CarrierURLs[k] = v
		}
	}
	switch v := get("FOS_ALLOW_PRIVATE_URLS", map[bool]string{true: "1", false: "0"}[dev]); v {
	case "1", "true":
		c.AllowPrivateURLs = true
	case "0", "false":
		c.AllowPrivateURLs = false
	default:
		p = append(p, fmt.Sprintf("FOS_ALLOW_PRIVATE_URLS=%q: must be 1 or 0", v))
	}
	return p
}

// checkBaseURL explains why v is not a base URL (an absolute http(s) URL:
// scheme and host, optionally a path prefix), or returns "".
func checkBaseURL(v string) string {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "must be an absolute http(s) URL such as https://api.example.com"
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "must be scheme and host (and optionally a path prefix), without credentials, query or fragment"
	}
	return ""
}
