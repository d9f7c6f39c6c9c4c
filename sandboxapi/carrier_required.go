package sandboxapi

import (
	"encoding/json"
	"strings"
)

// The sandbox carriers are strict about the fields each vendor documents
// as required (vendors/carriers/*/README.md and the published requests):
// a request lacking one is answered with the carrier's own 400 body, as the
// real API would, so an adapter that forgets a field fails its tests.
//
// A path names nested keys with dots; "[]" after a key means every element
// of that array (which must not be empty). A value that is missing, null,
// "" or an empty array is missing (" " is not: UPS's own samples send
// blanks); a trailing "?" accepts "" (the key must
// still be sent, e.g. FedEx's accountNumber.key, whose example is "").

// missingField returns the first of paths missing from the JSON body, "" when
// all are there (or the body is not a JSON object: decoding errors are
// reported by the handler).
func missingField(body []byte, paths ...string) string {
	var doc any
	if json.Unmarshal(body, &doc) != nil {
		return ""
	}
	for _, p := range paths {
		emptyOK := strings.HasSuffix(p, "?")
		if !present(doc, strings.Split(strings.TrimSuffix(p, "?"), "."), emptyOK) {
			return strings.ReplaceAll(strings.TrimSuffix(p, "?"), "[]", "")
		}
	}
	return ""
}

func present(v any, parts []string, emptyOK bool) bool {
	if len(parts) == 0 {
		switch t := v.(type) {
		case nil:
			return false
		case string:
			return emptyOK || t != ""
		case []any:
			return len(t) > 0
		}
		return true
	}
	m, ok := v.(map[string]any)
	if !ok {
		return false
	}
	key, each := strings.CutSuffix(parts[0], "[]")
	child, ok := m[key]
	if !ok {
		return false
	}
	if !each {
		return present(child, parts[1:], emptyOK)
	}
	arr, ok := child.([]any)
	if !ok {
		// UPS accepts a single object where an array has one element.
		if _, isObj := child.(map[string]any); isObj {
			return present(child, parts[1:], emptyOK)
		}
		return false
	}
	if len(arr) == 0 {
		return false
	}
	for _, e := range arr {
		if !present(e, parts[1:], emptyOK) {
			return false
		}
	}
	return true
}

// Required request fields per carrier operation.
var (
	faAddressFields = []string{"postalCode", "countryCode"}

	faRateRequired = append([]string{"accountNumber.value", "requestedShipment.pickupType",
		"requestedShipment.requestedPackageLineItems[].weight.units", "requestedShipment.requestedPackageLineItems[].weight.value"},
		prefixed([]string{"requestedShipment.shipper.address.", "requestedShipment.recipient.address."}, faAddressFields)...)
	// labelResponseOptions is marked required, but FedEx's own
	// label-pdf sample leaves it out: it is not enforced.
	faShipRequired = append([]string{"accountNumber.value",
		"requestedShipment.shipper.contact.personName", "requestedShipment.shipper.contact.phoneNumber",
		"requestedShipment.recipients[].contact.personName", "requestedShipment.recipients[].contact.phoneNumber",
		"requestedShipment.pickupType", "requestedShipment.serviceType", "requestedShipment.packagingType",
		"requestedShipment.shippingChargesPayment.paymentType",
		"requestedShipment.labelSpecification.imageType", "requestedShipment.labelSpecification.labelStockType",
		"requestedShipment.requestedPackageLineItems[].weight.units", "requestedShipment.requestedPackageLineItems[].weight.value"},
		prefixed([]string{"requestedShipment.shipper.address.", "requestedShipment.recipients[].address."}, append([]string{"streetLines", "city"}, faAddressFields...))...)
	faCancelShipmentRequired = []string{"accountNumber.value", "trackingNumber"}
	// An empty trackingInfo is the carrier's own TRACKING.TRACKINGNUMBER.EMPTY.
	faTrackRequired  = []string{"includeDetailedScans"}
	faPickupRequired = []string{"associatedAccountNumber.value", "carrierCode",
		"originDetail.pickupLocation.contact.personName", "originDetail.pickupLocation.contact.phoneNumber",
		"originDetail.pickupLocation.address.streetLines", "originDetail.pickupLocation.address.city",
		"originDetail.pickupLocation.address.postalCode", "originDetail.pickupLocation.address.countryCode",
		"originDetail.readyDateTimestamp", "originDetail.customerCloseTime"}
	faCancelPickupRequired = []string{"associatedAccountNumber.value", "pickupConfirmationCode", "scheduledDate"}
	// Account registration: the schema marks all six address fields required.
	faRegAddressRequired = []string{"accountNumber.value", "accountNumber.key?", "customerName",
		"address.streetLines", "address.city", "address.stateOrProvinceCode?", "address.postalCode", "address.countryCode", "address.residential"}
	faRegPinGenerationRequired = []string{"option"}
	faRegPinRequired           = []string{"secureCodePin"}
	faRegInvoiceRequired       = []string{"invoiceDetail.number", "invoiceDetail.currency", "invoiceDetail.date", "invoiceDetail.amount"}

	ubPackageFields = []string{"PackageWeight.UnitOfMeasurement.Code", "PackageWeight.Weight"}
	ubRateRequired  = append([]string{"RateRequest.Request", "RateRequest.Shipment.Shipper.Name",
		"RateRequest.Shipment.Shipper.Address.CountryCode", "RateRequest.Shipment.ShipTo.Name", "RateRequest.Shipment.ShipTo.Address.CountryCode",
		"RateRequest.Shipment.Package[].PackagingType.Code"},
		prefixed([]string{"RateRequest.Shipment.Package[]."}, ubPackageFields)...)
	ubShipRequired = append([]string{"ShipmentRequest.Request.RequestOption", "ShipmentRequest.Shipment.Shipper.Name",
		"ShipmentRequest.Shipment.Shipper.ShipperNumber", "ShipmentRequest.Shipment.ShipTo.Name",
		"ShipmentRequest.Shipment.PaymentInformation.ShipmentCharge[].Type", "ShipmentRequest.Shipment.Service.Code",
		"ShipmentRequest.Shipment.Package[].Packaging.Code", "ShipmentRequest.LabelSpecification.LabelImageFormat.Code"},
		append(prefixed([]string{"ShipmentRequest.Shipment.Shipper.Address.", "ShipmentRequest.Shipment.ShipTo.Address."},
			[]string{"AddressLine", "City", "CountryCode"}),
			prefixed([]string{"ShipmentRequest.Shipment.Package[]."}, ubPackageFields)...)...)

	ccEstimateRequired = []string{"from_country_code", "from_postal_code", "from_city_locality", "from_state_province",
		"to_country_code", "to_postal_code", "to_city_locality", "to_state_province", "weight.value", "weight.unit", "ship_date"}
)

func prefixed(prefixes, fields []string) []string {
	var out []string
	for _, p := range prefixes {
		for _, f := range fields {
			out = append(out, p+f)
		}
	}
	return out
}
