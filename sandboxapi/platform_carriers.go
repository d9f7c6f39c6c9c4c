package sandboxapi

import "strings"

// Carrier names the platform sandboxes accept on a fulfillment push, so a
// push that sends the service's own carrier code ("carrier_a") is refused
// here as it is (or misfiled) by the real platform:
//
//   - storefront_a: tracking_info.company must be one of the tracking
//     companies the platform lists, unless tracking_info.url is given.
//     (The platform itself stores another name but shows it without a
//     tracking link; the sandbox refuses it with a 422 so a test sees it.)
//   - shipping_hub_a: carrierCode must be a code of its GET /carriers
//     (400 otherwise, as the hub answers an unknown carrier).
//   - storefront_c: shipping_provider one of its enum (or carrier_{id}),
//     tracking_carrier "" or a known AfterShip courier slug (400).
//   - marketplace_a: carrierCode one of the marketplace's CarrierCode
//     values; "Other" needs carrierName (400 InvalidInput).

// sfaTrackingCompanies: a part of storefront_a's list of tracking
// companies (the names it builds tracking links for).
var sfaTrackingCompanies = []string{
	"4PX", "Amazon Logistics UK", "Amazon Logistics US", "An Post", "APC", "Asendia USA", "Australia Post", "Bonshaw",
	"BPost", "Canada Post", "Canpar", "China Post", "Chronopost", "Colissimo", "Correios", "Correos", "CTT",
	"Deutsche Post", "DHL eCommerce", "DHL eCommerce Asia", "DHL Express", "DPD", "DPD Local", "DPD UK", "Evri",
	"FedEx", "GLS", "Israel Post", "Japan Post (EN)", "La Poste", "Lasership", "New Zealand Post", "OnTrac",
	"Poste Italiane", "PostNL", "PostNord SE", "Purolator", "Royal Mail", "Sendle", "SF Express", "Singapore Post",
	"StarTrack", "Swiss Post", "TNT", "UPS", "USPS", "Yamato (EN)", "YunExpress",
}

// hubCarrierCodes: the carrier codes of shipping_hub_a's GET /carriers.
var hubCarrierCodes = []string{
	"stamps_com", "usps", "ups", "ups_walleted", "fedex", "fedex_walleted", "dhl_express", "dhl_global_mail",
	"canada_post", "australia_post", "royal_mail", "ontrac", "lasership", "purolator_ca", "sendle", "other",
}

// sfcCourierSlugs: the AfterShip courier slugs storefront_c takes as
// tracking_carrier (a part of the list).
var sfcCourierSlugs = []string{
	"fedex", "ups", "usps", "dhl", "dhl-global-mail", "dhl-ecommerce", "canada-post", "australia-post", "royal-mail",
	"dpd", "dpd-uk", "gls", "tnt", "ontrac", "lasership", "purolator", "parcelforce", "yodel", "evri", "la-poste-colissimo",
	"deutsch-post", "postnl", "sendle", "startrack", "new-zealand-post",
}

// mpaCarrierCodes: the marketplace's CarrierCode values the sandbox knows.
var mpaCarrierCodes = []string{
	"Amazon Shipping", "Blue Package", "Canada Post", "Chronopost", "DHL", "DHL eCommerce", "DHL Global Mail", "DPD",
	"FedEx", "FedEx SmartPost", "GLS", "La Poste", "Lasership", "OnTrac", "OSM", "Parcelforce", "Poste Italiane",
	"Royal Mail", "Streamlite", "TNT", "UPS", "UPS Mail Innovations", "USPS", "Yodel", "Other",
}

// knownName reports whether v is one of names: exactly when exact, else
// ignoring case.
func knownName(names []string, v string, exact bool) bool {
	for _, n := range names {
		if n == v || (!exact && strings.EqualFold(n, v)) {
			return true
		}
	}
	return false
}
