package shipping

import (
	"encoding/json"
	"strings"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
)

// Addresses.
//
// The service's canonical address is the rates' Address: address1,
// address2, city, province, provinceCode, country, countryCode (ISO 3166
// alpha-2) and zip, plus name, company and phone where a label needs
// them. Everywhere an address is taken (a rate request, a shipment's
// ship_from, a redirect action, a pickup's address) that shape is
// accepted, and so are the names other sources use (street/street1/line1,
// state/state_code, postalCode/postal_code, country_code, first_name +
// last_name, …): AddressOf reads them all.

// MaxAddressField bounds each address field.
const MaxAddressField = 255

// Address is a postal address. A shipment stores and shows it with the
// names street, street2, state, zip and country (MarshalJSON), as it
// always has.
type Address struct {
	Name    string
	Company string
	Phone   string
	Street  string // address1
	Street2 string // address2
	City    string
	State   string // provinceCode (or province)
	Zip     string
	Country string // countryCode
}

// MarshalJSON writes the address as a shipment shows it: every field
// present, null when empty.
func (a Address) MarshalJSON() ([]byte, error) {
	n := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return json.Marshal(struct {
		Name    *string `json:"name"`
		Company *string `json:"company"`
		Phone   *string `json:"phone"`
		Street  *string `json:"street"`
		Street2 *string `json:"street2"`
		City    *string `json:"city"`
		State   *string `json:"state"`
		Zip     *string `json:"zip"`
		Country *string `json:"country"`
	}{n(a.Name), n(a.Company), n(a.Phone), n(a.Street), n(a.Street2), n(a.City), n(a.State), n(a.Zip), n(a.Country)})
}

// Coordinates are the address's coarse coordinates from the carriers'
// gazetteer (carriers.Geocode), nils when the place is unknown.
func (a Address) Coordinates() (lat, lng *float64) {
	la, ln, ok := carriers.Geocode(a.City, a.State, a.Country)
	if !ok {
		return nil, nil
	}
	return &la, &ln
}

// Carrier is the address as the carrier adapters take it.
func (a Address) Carrier() carriers.Address {
	return carriers.Address{Name: a.Name, Company: a.Company, Phone: a.Phone, Address1: a.Street, Address2: a.Street2,
		City: a.City, ProvinceCode: a.State, CountryCode: a.Country, Zip: a.Zip}
}

// Address field names, first the canonical one (the rates' Address, or a
// shipment's own), then the aliases other sources use.
var (
	addressNameKeys    = []string{"name", "full_name", "fullName"}
	addressCompanyKeys = []string{"company", "company_name", "companyName"}
	addressPhoneKeys   = []string{"phone", "phone_number", "phoneNumber"}
	addressStreetKeys  = []string{"address1", "street", "address_1", "street1", "line1", "addressLine1", "address_line1", "address"}
	addressStreet2Keys = []string{"address2", "street2", "address_2", "line2", "addressLine2", "address_line2"}
	addressCityKeys    = []string{"city", "town", "locality"}
	addressStateKeys   = []string{"provinceCode", "state", "province_code", "stateCode", "state_code", "province", "region"}
	addressZipKeys     = []string{"zip", "postalCode", "postal_code", "zipCode", "zip_code", "postcode"}
	addressCountryKeys = []string{"countryCode", "country_code", "country"}
)

// AddressOf reads an address object whatever naming its source used (the
// rates' Address, a shipment's street/state/zip/country, a platform's
// line1/postalCode/country_code, …). A country that is no known code is
// kept as written, for Check to name; an absent one is "" (see
// DefaultCountry).
func AddressOf(m map[string]any) Address {
	pick := func(keys []string) string {
		for _, k := range keys {
			if s, ok := m[k].(string); ok && strings.TrimSpace(s) != "" {
				return strings.TrimSpace(s)
			}
		}
		return ""
	}
	a := Address{
		Name: pick(addressNameKeys), Company: pick(addressCompanyKeys), Phone: pick(addressPhoneKeys),
		Street: pick(addressStreetKeys), Street2: pick(addressStreet2Keys), City: pick(addressCityKeys),
		State: pick(addressStateKeys), Zip: pick(addressZipKeys),
	}
	if a.Name == "" {
		a.Name = strings.TrimSpace(pick([]string{"first_name", "firstName"}) + " " + pick([]string{"last_name", "lastName"}))
	}
	if country := pick(addressCountryKeys); country != "" {
		a.Country = CountryCode(country)
		if a.Country == "" {
			a.Country = country // named by Check
		}
	}
	if len(a.State) == 2 {
		a.State = strings.ToUpper(a.State)
	}
	return a
}

// DefaultCountry is the address with US as its country when it names
// none.
func (a Address) DefaultCountry() Address {
	if a.Country == "" {
		a.Country = "US"
	}
	return a
}

// Check names, under prefix, every missing or invalid part of an address a
// carrier ships from or to: street, city and zip are required, the country
// must be a two-letter code, a US or CA address needs its state, and no
// field may exceed MaxAddressField characters.
func (a Address) Check(v *domain.FieldErrors, prefix string) {
	for _, f := range []struct{ name, val string }{{"street", a.Street}, {"city", a.City}, {"zip", a.Zip}} {
		if f.val == "" {
			v.Add(prefix+"."+f.name, "is required")
		}
	}
	if CountryCode(a.Country) != a.Country {
		v.Add(prefix+".country", "must be a two-letter country code")
	}
	if (a.Country == "US" || a.Country == "CA") && a.State == "" {
		v.Add(prefix+".state", "is required for "+a.Country+" addresses")
	}
	for _, f := range []struct{ name, val string }{{"name", a.Name}, {"company", a.Company}, {"phone", a.Phone},
		{"street", a.Street}, {"street2", a.Street2}, {"city", a.City}, {"state", a.State}, {"zip", a.Zip}} {
		v.MaxLen(prefix+"."+f.name, f.val, MaxAddressField)
	}
}

// CountryCode is the ISO 3166 alpha-2 code of a code or a few common
// country names; "" when unknown.
func CountryCode(s string) string {
	s = strings.TrimSpace(s)
	if len(s) == 2 && isLetters(s) {
		return strings.ToUpper(s)
	}
	switch strings.ToLower(s) {
	case "usa", "united states", "united states of america":
		return "US"
	case "can", "canada":
		return "CA"
	case "mex", "mexico":
		return "MX"
	case "gbr", "united kingdom", "great britain":
		return "GB"
	case "deu", "germany":
		return "DE"
	case "fra", "france":
		return "FR"
	case "aus", "australia":
		return "AU"
	}
	return ""
}

func isLetters(s string) bool {
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
