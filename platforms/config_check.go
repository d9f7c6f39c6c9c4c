package platforms

import (
	"errors"
	"strconv"
	"strings"
)

// A connector's own rules about a bridge config, beyond the catalog's
// (types and required keys): those that decide whether it can ever talk to
// the platform, some depending on where it points (storefront_a's shop
// must be a *.myshopify.com host unless FOS_STOREFRONT_A_URL is set;
// storefront_b's storeUrl must be https:// outside the sandbox). The API
// checks them when a bridge is created or its config changed, so the
// bridge is refused with a 400 naming the field instead of failing its
// first task.

// configChecker is implemented by connectors whose config has such rules;
// checkConfig returns the first problem, a *Error whose Field names the key.
type configChecker interface {
	checkConfig(cfg map[string]any) error
}

// CheckConfig returns the problems the bridge type's connector finds with
// a complete (normalized) config, each naming its field
// ("config.shopDomain"); nil when there are none or the type's connector
// has no rules of its own.
func (r *Registry) CheckConfig(bridgeType string, cfg map[string]any) []FieldError {
	err := ValidateCarrierNames(cfg)
	if err == nil {
		conn, gerr := r.Get(bridgeType)
		if gerr != nil {
			return nil
		}
		if cc, ok := conn.(configChecker); ok {
			err = cc.checkConfig(cfg)
		}
	}
	if err == nil {
		return nil
	}
	var pe *Error
	if !errors.As(err, &pe) || pe.Field == "" {
		return []FieldError{{Field: "config", Message: err.Error()}}
	}
	msg := strings.TrimPrefix(pe.Message, pe.Field+" ")
	msg = strings.TrimPrefix(msg, "bridge config ")
	return []FieldError{{Field: "config." + pe.Field, Message: msg}}
}

func (c *StorefrontA) checkConfig(cfg map[string]any) error {
	_, err := c.shop(Bridge{Type: TypeStorefrontA, Config: cfg})
	return err
}

func (c *StorefrontB) checkConfig(cfg map[string]any) error {
	_, err := c.store(Bridge{Type: TypeStorefrontB, Config: cfg})
	return err
}

func (c *StorefrontC) checkConfig(cfg map[string]any) error {
	_, err := c.store(Bridge{Type: TypeStorefrontC, Config: cfg})
	return err
}

func (c *ShippingHubA) checkConfig(cfg map[string]any) error {
	if _, err := c.auth(Bridge{Type: TypeShippingHubA, Config: cfg}); err != nil {
		return err
	}
	if s := configString(cfg, "storeId"); s != "" {
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			return invalidField("storeId", "storeId must be a number")
		}
	}
	return nil
}

func (c *MarketplaceA) checkConfig(cfg map[string]any) error {
	_, err := c.seller(Bridge{Type: TypeMarketplaceA, Config: cfg})
	return err
}
