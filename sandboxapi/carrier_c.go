package sandboxapi

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

// carrier_c: the single-key rate-estimate wire format (CONTRACT 8a; the
// "Alternative" section of vendors/carriers/carrier_c/README.md): an
// api-key header, GET /v1/carriers and POST /v1/rates/estimate.

func (s *carrierSandbox) carrierCRoutes(r chi.Router) {
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		ccError(w, r, http.StatusNotFound, "system", "not_found", "The requested resource was not found.")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		ccError(w, r, http.StatusMethodNotAllowed, "system", "method_not_allowed", "The requested method is not allowed.")
	})
	r.Group(func(r chi.Router) {
		r.Use(ccAuth)
		r.Get("/v1/carriers", ccCarriers)
		r.Post("/v1/rates/estimate", s.ccEstimate)
	})
}

func ccRequestID(r *http.Request) string {
	h := hashDigits(32, "request", r.Method, r.URL.Path, r.Header.Get("api-key"))
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func ccError(w http.ResponseWriter, r *http.Request, status int, typ, code, msg string) {
	writeJSON(w, status, map[string]any{
		"request_id": ccRequestID(r),
		"errors":     []map[string]any{{"error_source": "shipengine", "error_type": typ, "error_code": code, "message": msg}},
	})
}

// ccAuth: a missing key, InvalidAPIKey and FailValue are refused (401).
func ccAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := strings.TrimSpace(r.Header.Get("api-key"))
		if k == "" || k == InvalidAPIKey || k == FailValue {
			ccError(w, r, http.StatusUnauthorized, "security", "unauthorized", "The API key is invalid. Please see the carrier's authentication documentation.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ccCarrierID is the carrier id the sandbox gives an API key.
func ccCarrierID(apiKey string) string { return "se-" + hashDigits(7, "carrier", apiKey) }

func ccCarriers(w http.ResponseWriter, r *http.Request) {
	id := ccCarrierID(strings.TrimSpace(r.Header.Get("api-key")))
	services := []map[string]any{}
	for _, svc := range sbCarriers["carrier_c"].services {
		services = append(services, map[string]any{
			"carrier_id": id, "carrier_code": "usps", "service_code": svc.code, "name": svc.name,
			"domestic": !svc.intl, "international": svc.intl, "is_multi_package_supported": false,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"carriers": []map[string]any{{
			"carrier_id": id, "carrier_code": "usps", "account_number": "", "requires_funded_amount": false, "balance": 0,
			"nickname": "Carrier C Postal", "friendly_name": "Carrier C Postal", "primary": true, "has_multi_package_supporting_services": false,
			"supports_label_messages": true, "services": services,
			"packages": []map[string]any{{"package_code": "package", "name": "Package"}},
			"options":  []any{},
		}},
		"request_id": ccRequestID(r),
		"errors":     []any{},
	})
}

func (s *carrierSandbox) ccEstimate(w http.ResponseWriter, r *http.Request) {
	var q struct {
		CarrierID       string   `json:"carrier_id"`
		CarrierIDs      []string `json:"carrier_ids"`
		FromCountryCode string   `json:"from_country_code"`
		FromPostalCode  flexStr  `json:"from_postal_code"`
		ToCountryCode   string   `json:"to_country_code"`
		ToPostalCode    flexStr  `json:"to_postal_code"`
		Weight          *struct {
			Value flexNum `json:"value"`
			Unit  string  `json:"unit"`
		} `json:"weight"`
		Dimensions *struct {
			Unit   string  `json:"unit"`
			Length flexNum `json:"length"`
			Width  flexNum `json:"width"`
			Height flexNum `json:"height"`
		} `json:"dimensions"`
		AddressResidentialIndicator string `json:"address_residential_indicator"`
		ShipDate                    string `json:"ship_date"`
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &q)
	}
	if err != nil {
		ccError(w, r, http.StatusBadRequest, "validation", "request_body_required", "The request body is not valid JSON: "+err.Error())
		return
	}
	if f := missingField(body, ccEstimateRequired...); f != "" {
		ccError(w, r, http.StatusBadRequest, "validation", "field_value_required", f+" is required.")
		return
	}
	own := ccCarrierID(strings.TrimSpace(r.Header.Get("api-key")))
	ids := q.CarrierIDs
	if q.CarrierID != "" {
		ids = append(ids, q.CarrierID)
	}
	switch {
	case len(ids) == 0:
		ccError(w, r, http.StatusBadRequest, "validation", "field_value_required", "carrier_id or carrier_ids is required.")
		return
	case q.FromPostalCode == "" || q.ToPostalCode == "" || q.FromCountryCode == "" || q.ToCountryCode == "":
		ccError(w, r, http.StatusBadRequest, "validation", "field_value_required", "from_country_code, from_postal_code, to_country_code and to_postal_code are required.")
		return
	case q.Weight == nil || q.Weight.Value <= 0:
		ccError(w, r, http.StatusBadRequest, "validation", "invalid_field_value", "weight.value must be greater than zero.")
		return
	}
	for _, id := range ids {
		if id != own {
			ccError(w, r, http.StatusBadRequest, "validation", "invalid_identifier", "carrier_id "+id+" was not found.")
			return
		}
	}
	pk := sbPkg{lb: toLB(float64(q.Weight.Value), q.Weight.Unit)}
	if d := q.Dimensions; d != nil {
		pk.l, pk.w, pk.h = toIN(float64(d.Length), d.Unit), toIN(float64(d.Width), d.Unit), toIN(float64(d.Height), d.Unit)
	}
	in := sbRateInput{fromZip: q.FromPostalCode.String(), fromCountry: q.FromCountryCode, toZip: q.ToPostalCode.String(), toCountry: q.ToCountryCode,
		residential: strings.EqualFold(q.AddressResidentialIndicator, "yes"), pkgs: []sbPkg{pk}}
	shipDate := s.parseShipDate(q.ShipDate)
	prices, _ := sbCarriers["carrier_c"].quote(in, shipDate, "")
	rates := make([]map[string]any, 0, len(prices))
	for _, p := range prices {
		rates = append(rates, map[string]any{
			"rate_id":                 "se-" + hashDigits(9, "rate", own, p.svc.code, string(body)),
			"rate_type":               "check",
			"carrier_id":              own,
			"shipping_amount":         map[string]any{"currency": "usd", "amount": p.net},
			"insurance_amount":        map[string]any{"currency": "usd", "amount": 0},
			"confirmation_amount":     map[string]any{"currency": "usd", "amount": 0},
			"other_amount":            map[string]any{"currency": "usd", "amount": 0},
			"tax_amount":              ccTax(p),
			"zone":                    p.zone,
			"package_type":            "package",
			"delivery_days":           p.transit,
			"guaranteed_service":      p.svc.guaranteed,
			"estimated_delivery_date": p.delivery.Format("2006-01-02") + "T00:00:00Z",
			"carrier_delivery_days":   strconv.Itoa(p.transit),
			"ship_date":               shipDate.Format("2006-01-02") + "T00:00:00Z",
			"negotiated_rate":         false,
			"service_type":            p.svc.name,
			"service_code":            p.svc.code,
			"trackable":               true,
			"carrier_code":            "usps",
			"carrier_nickname":        "Carrier C Postal",
			"carrier_friendly_name":   "Carrier C Postal",
			"validation_status":       "valid",
			"warning_messages":        []any{},
			"error_messages":          []any{},
		})
	}
	writeJSON(w, http.StatusOK, rates)
}

// ccTax is a rate's tax_amount: null at home, duties and taxes estimated at
// 8 % of the postage across borders.
func ccTax(p sbPrice) any {
	if p.zone != 9 {
		return nil
	}
	return map[string]any{"currency": "usd", "amount": round2(p.net * 0.08)}
}
