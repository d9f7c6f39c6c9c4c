package main

import (
	"os"
	"strings"

	"github.com/fos-dev/fos/config"
	"github.com/fos-dev/fos/embed"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandboxapi"
)

// storefrontAApp is the storefront_a OAuth app of the embed bridges
// (CONTRACT 12): FOS_STOREFRONT_A_CLIENT_ID and _CLIENT_SECRET, and the
// host of FOS_STOREFRONT_A_URL (the shop's own host when unset). Under
// FOS_SANDBOX=1 an unset id and secret are the sandbox's app, so OAuth
// works offline; with FOS_SANDBOX=0 the sandbox app is never used.
func storefrontAApp(cfg config.Config) embed.StorefrontAApp {
	sandboxURL := ""
	if cfg.Sandbox {
		sandboxURL = cfg.SandboxURL
	}
	urls := platforms.APIURLsFromEnv(func(k string) string { return cfg.PlatformURLs[k] }, cfg.Sandbox, sandboxURL)
	app := embed.StorefrontAApp{
		ClientID:     strings.TrimSpace(os.Getenv("FOS_STOREFRONT_A_CLIENT_ID")),
		ClientSecret: strings.TrimSpace(os.Getenv("FOS_STOREFRONT_A_CLIENT_SECRET")),
		BaseURL:      urls.StorefrontA,
	}
	if cfg.Sandbox && app.ClientID == "" && app.ClientSecret == "" {
		app.ClientID = sandboxapi.SandboxStorefrontAClientID
		app.ClientSecret = sandboxapi.StorefrontAClientSecret(app.ClientID)
	}
	return app
}
