package platforms

import (
	"fmt"
	"strings"
)

// Carrier names per platform. A shipment of the service names its carrier
// by the service's code (carrier_a, carrier_b, carrier_c) and a service
// (FEDEX_GROUND, "03", ...); every platform wants its own name for it:
//
//	storefront_a    tracking_info.company, one of the tracking companies the
//	                platform lists ("FedEx", "UPS", "USPS"); another name is
//	                shown without a tracking link
//	shipping_hub_a  carrierCode of GET /carriers ("fedex", "ups", "usps")
//	storefront_b    free text in the order note (the platform has no
//	                carrier field)
//	storefront_c    shipping_provider ("fedex", "ups", "usps", ...) with
//	                tracking_carrier "", or tracking_carrier an AfterShip
//	                courier slug with shipping_provider ""
//	marketplace_a   carrierCode of the marketplace's CarrierCode list
//	                ("FedEx", "UPS", "USPS"); any other carrier is "Other"
//	                with carrierName
//
// A bridge's config may override the defaults with "carrierNames": an
// object whose keys are a carrier code ("carrier_a") or a carrier code and
// service ("carrier_a/SMART_POST", which wins) and whose values are the
// platform's name. A carrier that is neither in the table nor overridden
// goes as it is (a shipment imported with a platform's own carrier name),
// and the platform refuses it if it does not know it.

// ConfigCarrierNames is the bridge config key of the carrier name
// overrides.
const ConfigCarrierNames = "carrierNames"

// Bridge config keys of the notification flags a fulfillment push sends
// (booleans): notifyCustomer (default false: the service's own tracking
// e-mails are the usual channel) and notifySalesChannel (shipping_hub_a's
// mark-as-shipped, default true: the store the hub imported the order
// from learns it shipped).
const (
	ConfigNotifyCustomer     = "notifyCustomer"
	ConfigNotifySalesChannel = "notifySalesChannel"
)

// The service's carrier codes (carriers.CarrierA, ...; not imported, the
// platforms package does not depend on carriers).
const (
	carrierCodeA = "carrier_a" // FedEx
	carrierCodeB = "carrier_b" // UPS
	carrierCodeC = "carrier_c" // USPS
)

// defaultCarrierNames: bridge type → carrier code (or code/service) → the
// platform's name.
var defaultCarrierNames = map[string]map[string]string{
	TypeStorefrontA: {
		carrierCodeA: "FedEx", carrierCodeB: "UPS", carrierCodeC: "USPS",
	},
	TypeShippingHubA: {
		carrierCodeA: "fedex", carrierCodeB: "ups", carrierCodeC: "usps",
	},
	TypeStorefrontB: {
		carrierCodeA: "FedEx", carrierCodeB: "UPS", carrierCodeC: "USPS",
	},
	TypeStorefrontC: {
		carrierCodeA: "fedex", carrierCodeB: "ups", carrierCodeC: "usps",
	},
	TypeMarketplaceA: {
		carrierCodeA: "FedEx", carrierCodeB: "UPS", carrierCodeC: "USPS",
		carrierCodeA + "/SMART_POST": "FedEx SmartPost", carrierCodeA + "/FEDEX_GROUND_ECONOMY": "FedEx SmartPost",
		carrierCodeB + "/92": "UPS Mail Innovations", carrierCodeB + "/93": "UPS Mail Innovations",
	},
}

// MarketplaceACarrierCodes is the part of the marketplace's CarrierCode
// list the service names (vendors/platforms/marketplace_a lists no
// complete copy); any other carrier goes as "Other" with carrierName.
var MarketplaceACarrierCodes = []string{
	"Amazon Shipping", "Blue Package", "Canada Post", "Chronopost", "DHL", "DHL eCommerce", "DHL Global Mail", "DPD",
	"FedEx", "FedEx SmartPost", "GLS", "La Poste", "Lasership", "OnTrac", "OSM", "Parcelforce", "Poste Italiane",
	"Royal Mail", "Streamlite", "TNT", "UPS", "UPS Mail Innovations", "USPS", "Yodel",
}

// MarketplaceAOtherCarrier is the carrierCode of a carrier not on the list.
const MarketplaceAOtherCarrier = "Other"

// CarrierName returns what a platform of the bridge's type calls a
// shipment's carrier (carrier: the service's code or a name; service: the
// shipment's service, may be ""): the bridge's carrierNames override for
// code/service, else for code, else the default table, else the carrier
// as it is. A carrierNames value that is not a string is an invalid_config
// error.
func CarrierName(b Bridge, carrier, service string) (string, error) {
	carrier, service = strings.TrimSpace(carrier), strings.TrimSpace(service)
	if carrier == "" {
		return "", nil
	}
	keys := []string{carrier}
	if service != "" {
		keys = []string{carrier + "/" + service, carrier}
	}
	if raw, ok := b.Config[ConfigCarrierNames]; ok && raw != nil {
		m, ok := raw.(map[string]any)
		if !ok {
			return "", invalidField(ConfigCarrierNames, "carrierNames must be an object of carrier code to the platform's carrier name")
		}
		for _, k := range keys {
			if v, ok := m[k]; ok {
				s, ok := v.(string)
				if !ok || strings.TrimSpace(s) == "" {
					return "", invalidField(ConfigCarrierNames, fmt.Sprintf("carrierNames[%q] must be a non-empty string", k))
				}
				return strings.TrimSpace(s), nil
			}
		}
	}
	table := defaultCarrierNames[b.Type]
	for _, k := range keys {
		if v, ok := table[k]; ok {
			return v, nil
		}
	}
	return carrier, nil
}

// ValidateCarrierNames checks a bridge config's carrierNames (absent is
// fine): an object of non-empty strings.
func ValidateCarrierNames(config map[string]any) error {
	raw, ok := config[ConfigCarrierNames]
	if !ok || raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return invalidField(ConfigCarrierNames, "carrierNames must be an object of carrier code to the platform's carrier name")
	}
	for k, v := range m {
		if s, ok := v.(string); !ok || strings.TrimSpace(s) == "" || strings.TrimSpace(k) == "" {
			return invalidField(ConfigCarrierNames, fmt.Sprintf("carrierNames[%q] must be a non-empty string", k))
		}
	}
	return nil
}

// notifyFlag reads a boolean bridge config flag (a JSON boolean or the
// strings "true"/"false"), def when absent.
func notifyFlag(b Bridge, key string, def bool) bool {
	switch v := b.Config[key].(type) {
	case bool:
		return v
	case string:
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "1", "yes":
			return true
		case "false", "0", "no":
			return false
		}
	}
	return def
}

// NotifyCustomer tells whether a push asks the platform to notify the
// buyer: the fulfillment's own flag, else the bridge's notifyCustomer.
func NotifyCustomer(b Bridge, f Fulfillment) bool {
	return f.NotifyCustomer || notifyFlag(b, ConfigNotifyCustomer, false)
}
