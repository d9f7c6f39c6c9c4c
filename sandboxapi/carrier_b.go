package sandboxapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// carrier_b: the UPS REST wire format (vendors/carriers/carrier_b).

func (s *carrierSandbox) carrierBRoutes(r chi.Router) {
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		ubError(w, http.StatusNotFound, "10404", "Resource not found")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		ubError(w, http.StatusMethodNotAllowed, "10405", "Method not allowed")
	})
	r.Post("/security/v1/oauth/token", s.ubToken)
	r.Group(func(r chi.Router) {
		r.Use(s.ubAuth)
		r.Post("/api/rating/{version}/{requestoption}", s.ubRate)
		r.Post("/api/shipments/{version}/ship", s.ubShip)
		r.Delete("/api/shipments/{version}/void/cancel/{id}", s.ubVoid)
		r.Get("/api/track/v1/details/{number}", s.ubTrack)
		r.Get("/api/track/v1/reference/details/{reference}", s.ubTrackReference)
	})
}

func ubError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"response": map[string]any{"errors": []map[string]any{{"code": code, "message": msg}}}})
}

func ubUnavailable(w http.ResponseWriter) {
	ubError(w, http.StatusServiceUnavailable, "190001", "The service is temporarily unavailable, please try again later.")
}

func ubRead(w http.ResponseWriter, r *http.Request, v any, required ...string) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		ubError(w, http.StatusBadRequest, "10001", "The request is not valid JSON: "+err.Error())
		return nil, false
	}
	if f := missingField(body, required...); f != "" {
		ubError(w, http.StatusBadRequest, "10002", "Missing or invalid data: "+f+" is required.")
		return nil, false
	}
	return body, true
}

func ubMoney(v float64) map[string]any {
	return map[string]any{"CurrencyCode": "USD", "MonetaryValue": fmt.Sprintf("%.2f", v)}
}

var ubResponseOK = map[string]any{"ResponseStatus": map[string]any{"Code": "1", "Description": "Success"}}

// ---- OAuth ----

func (s *carrierSandbox) ubToken(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || strings.TrimSpace(id) == "" || strings.TrimSpace(secret) == "" || id == FailValue || secret == FailValue {
		ubError(w, http.StatusUnauthorized, "10401", "ClientId is Invalid")
		return
	}
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		ubError(w, http.StatusBadRequest, "10400", "Invalid/Missing grant_type")
		return
	}
	ttl := tokenTTL(r, 14399*time.Second)
	fail := strings.TrimSpace(r.Header.Get("x-merchant-id")) == FailValue
	tok := s.issueToken("carrier_b", ttl, isTestEnv(r), fail)
	writeJSON(w, http.StatusOK, map[string]any{
		"token_type":    "Bearer",
		"issued_at":     strconv.FormatInt(s.now().UnixMilli(), 10),
		"client_id":     id,
		"access_token":  tok,
		"expires_in":    strconv.Itoa(int(ttl / time.Second)),
		"refresh_count": "0",
		"status":        "approved",
	})
}

func (s *carrierSandbox) ubAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := s.bearer(r, "carrier_b")
		if !ok {
			ubError(w, http.StatusUnauthorized, "250002", "Invalid Authentication Information.")
			return
		}
		if tok.fail {
			ubUnavailable(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ---- request shapes ----

type ubAddress struct {
	AddressLine                 oneOrMany[string] `json:"AddressLine"`
	City                        string            `json:"City"`
	StateProvinceCode           string            `json:"StateProvinceCode"`
	PostalCode                  flexStr           `json:"PostalCode"`
	CountryCode                 string            `json:"CountryCode"`
	ResidentialAddressIndicator *string           `json:"ResidentialAddressIndicator"`
}

type ubParty struct {
	Name          string    `json:"Name"`
	AttentionName string    `json:"AttentionName"`
	ShipperNumber flexStr   `json:"ShipperNumber"`
	Address       ubAddress `json:"Address"`
	Residential   *string   `json:"Residential"`
}

func (p ubParty) place() sbPlace {
	return sbPlace{upper(p.Address.City), upper(p.Address.StateProvinceCode), p.Address.PostalCode.String(), normCountry(p.Address.CountryCode)}
}

func (p ubParty) lines() []string {
	var out []string
	for _, s := range []string{p.AttentionName, p.Name} {
		if s = strings.TrimSpace(s); s != "" && (len(out) == 0 || out[0] != s) {
			out = append(out, s)
		}
	}
	for _, l := range p.Address.AddressLine {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Address.City, p.Address.StateProvinceCode, p.Address.PostalCode)), normCountry(p.Address.CountryCode))
}

type ubUnit struct {
	Code string `json:"Code"`
}

type ubPackage struct {
	Dimensions *struct {
		UnitOfMeasurement ubUnit  `json:"UnitOfMeasurement"`
		Length            flexNum `json:"Length"`
		Width             flexNum `json:"Width"`
		Height            flexNum `json:"Height"`
	} `json:"Dimensions"`
	PackageWeight struct {
		UnitOfMeasurement ubUnit  `json:"UnitOfMeasurement"`
		Weight            flexNum `json:"Weight"`
	} `json:"PackageWeight"`
}

type ubShipment struct {
	Shipper  ubParty `json:"Shipper"`
	ShipTo   ubParty `json:"ShipTo"`
	ShipFrom ubParty `json:"ShipFrom"`
	Service  *struct {
		Code string `json:"Code"`
	} `json:"Service"`
	Package                 oneOrMany[ubPackage] `json:"Package"`
	ShipmentDate            string               `json:"ShipmentDate"`
	DeliveryTimeInformation struct {
		Pickup struct {
			Date string `json:"Date"`
		} `json:"Pickup"`
	} `json:"DeliveryTimeInformation"`
	ShipmentRatingOptions struct {
		NegotiatedRatesIndicator *string `json:"NegotiatedRatesIndicator"`
	} `json:"ShipmentRatingOptions"`
	Description     string `json:"Description"`
	ReferenceNumber *struct {
		Value flexStr `json:"Value"`
	} `json:"ReferenceNumber"`
}

func (sh *ubShipment) from() ubParty {
	if sh.ShipFrom.Address.PostalCode != "" {
		return sh.ShipFrom
	}
	return sh.Shipper
}

func (sh *ubShipment) residential() bool {
	return sh.ShipTo.Address.ResidentialAddressIndicator != nil || sh.ShipTo.Residential != nil
}

func (sh *ubShipment) packages() []sbPkg {
	out := make([]sbPkg, 0, len(sh.Package))
	for _, p := range sh.Package {
		pk := sbPkg{lb: toLB(float64(p.PackageWeight.Weight), p.PackageWeight.UnitOfMeasurement.Code)}
		if d := p.Dimensions; d != nil {
			u := d.UnitOfMeasurement.Code
			pk.l, pk.w, pk.h = toIN(float64(d.Length), u), toIN(float64(d.Width), u), toIN(float64(d.Height), u)
		}
		out = append(out, pk)
	}
	return out
}

func (sh *ubShipment) rateInput() sbRateInput {
	f := sh.from()
	return sbRateInput{fromZip: f.Address.PostalCode.String(), fromCountry: f.Address.CountryCode, toZip: sh.ShipTo.Address.PostalCode.String(),
		toCountry: sh.ShipTo.Address.CountryCode, residential: sh.residential(), pkgs: sh.packages()}
}

// validate answers 400/503 and returns false when the shipment cannot be rated.
func (sh *ubShipment) validate(w http.ResponseWriter) bool {
	switch {
	case sh.Shipper.ShipperNumber.String() == FailValue:
		ubUnavailable(w)
	case sh.from().Address.PostalCode == "" || sh.ShipTo.Address.PostalCode == "":
		ubError(w, http.StatusBadRequest, "111210", "The requested service is unavailable between the selected locations: postal codes are required.")
	case len(sh.Package) == 0:
		ubError(w, http.StatusBadRequest, "111035", "Missing or invalid package information.")
	default:
		for _, p := range sh.packages() {
			if p.lb <= 0 {
				ubError(w, http.StatusBadRequest, "111057", "Missing or invalid package weight.")
				return false
			}
		}
		return true
	}
	return false
}

// split divides total over weights in cents, the remainder on the first.
func split(total float64, weights []float64) []float64 {
	out := make([]float64, len(weights))
	if len(weights) == 0 {
		return out
	}
	sum := 0.0
	for _, w := range weights {
		sum += w
	}
	rest := total
	for i := len(weights) - 1; i > 0; i-- {
		out[i] = round2(total * weights[i] / sum)
		rest -= out[i]
	}
	out[0] = round2(rest)
	return out
}

// ---- rating ----

func ubArrivalTime(by string) string {
	u := strings.ToUpper(strings.ReplaceAll(by, ".", ""))
	if u == "" {
		return "233000"
	}
	pm := strings.HasSuffix(u, "PM")
	u = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(u, "PM"), "AM"))
	parts := strings.Split(u, ":")
	h, _ := strconv.Atoi(parts[0])
	m := 0
	if len(parts) > 1 {
		m, _ = strconv.Atoi(parts[1])
	}
	if pm && h < 12 {
		h += 12
	}
	return fmt.Sprintf("%02d%02d00", h, m)
}

func ubRatedShipment(p sbPrice, pkgs []sbPkg, negotiated, timeInTransit bool, shipDate time.Time) map[string]any {
	weights := make([]float64, len(pkgs))
	for i, pk := range pkgs {
		weights[i] = max(pk.lb, 0.1)
	}
	bases, fuels, resis := split(p.base, weights), split(p.fuel, weights), split(p.resi, weights)
	rated := make([]map[string]any, 0, len(pkgs))
	for i := range pkgs {
		items := []map[string]any{
			{"Code": "376", "CurrencyCode": "USD", "MonetaryValue": "0.00", "SubType": "Suburban"},
			{"Code": "375", "CurrencyCode": "USD", "MonetaryValue": fmt.Sprintf("%.2f", fuels[i])},
		}
		if p.resi > 0 {
			items = append(items, map[string]any{"Code": "270", "CurrencyCode": "USD", "MonetaryValue": fmt.Sprintf("%.2f", resis[i])})
		}
		transport := round2(bases[i] + fuels[i] + resis[i])
		rated = append(rated, map[string]any{
			"TransportationCharges": ubMoney(transport),
			"BaseServiceCharge":     ubMoney(bases[i]),
			"ServiceOptionsCharges": ubMoney(0),
			"ItemizedCharges":       items,
			"TotalCharges":          ubMoney(transport),
			"Weight":                fmt.Sprintf("%.1f", pkgs[i].lb),
			"BillingWeight":         map[string]any{"UnitOfMeasurement": map[string]any{"Code": "LBS", "Description": "Pounds"}, "Weight": fmt.Sprintf("%.1f", max(1, weights[i]))},
		})
	}
	m := map[string]any{
		"Service":               map[string]any{"Code": p.svc.code, "Description": ""},
		"RatedShipmentAlert":    []map[string]any{{"Code": "110971", "Description": "Your invoice may vary from the displayed reference rates"}},
		"Zone":                  strconv.Itoa(p.zone),
		"BillingWeight":         map[string]any{"UnitOfMeasurement": map[string]any{"Code": "LBS", "Description": "Pounds"}, "Weight": fmt.Sprintf("%.1f", p.billable)},
		"TransportationCharges": ubMoney(p.list),
		"BaseServiceCharge":     ubMoney(p.base),
		"ServiceOptionsCharges": ubMoney(0),
		"TotalCharges":          ubMoney(p.list),
		"RatedPackage":          rated,
	}
	if negotiated {
		m["NegotiatedRateCharges"] = map[string]any{"TotalCharge": ubMoney(p.net)}
	}
	if p.svc.guaranteed {
		g := map[string]any{"BusinessDaysInTransit": strconv.Itoa(p.transit)}
		if p.svc.by != "" {
			g["DeliveryByTime"] = p.svc.by
		}
		m["GuaranteedDelivery"] = g
	}
	if timeInTransit {
		summary := map[string]any{
			"Service": map[string]any{"Description": p.svc.name},
			"EstimatedArrival": map[string]any{
				"Arrival":               map[string]any{"Date": p.delivery.Format("20060102"), "Time": ubArrivalTime(p.svc.by)},
				"BusinessDaysInTransit": strconv.Itoa(p.transit),
				"Pickup":                map[string]any{"Date": shipDate.Format("20060102"), "Time": "180000"},
				"DayOfWeek":             strings.ToUpper(p.delivery.Weekday().String()[:3]),
				"TotalTransitDays":      strconv.Itoa(int(p.delivery.Sub(shipDate).Hours() / 24)),
			},
			"SaturdayDelivery": "0",
		}
		if p.svc.guaranteed {
			summary["GuaranteedIndicator"] = ""
		}
		m["TimeInTransit"] = map[string]any{"PickupDate": shipDate.Format("20060102"), "PackageBillType": "03", "ServiceSummary": summary}
	}
	return m
}

func (s *carrierSandbox) ubRate(w http.ResponseWriter, r *http.Request) {
	var q struct {
		RateRequest struct {
			Request struct {
				TransactionReference struct {
					CustomerContext string `json:"CustomerContext"`
				} `json:"TransactionReference"`
			} `json:"Request"`
			Shipment ubShipment `json:"Shipment"`
		} `json:"RateRequest"`
	}
	if _, ok := ubRead(w, r, &q, ubRateRequired...); !ok {
		return
	}
	sh := &q.RateRequest.Shipment
	if !sh.validate(w) {
		return
	}
	option := strings.ToLower(chi.URLParam(r, "requestoption"))
	code := ""
	switch option {
	case "rate", "ratetimeintransit":
		if sh.Service == nil || sh.Service.Code == "" {
			ubError(w, http.StatusBadRequest, "111100", "The requested service is invalid from the selected origin.")
			return
		}
		code = sh.Service.Code
	case "shop", "shoptimeintransit":
	default:
		ubError(w, http.StatusBadRequest, "111500", "Invalid request option: use Rate, Shop, Ratetimeintransit or Shoptimeintransit.")
		return
	}
	date := sh.DeliveryTimeInformation.Pickup.Date
	if date == "" {
		date = sh.ShipmentDate
	}
	shipDate := s.parseShipDate(date)
	prices, ok := sbCarriers["carrier_b"].quote(sh.rateInput(), shipDate, code)
	if !ok {
		ubError(w, http.StatusBadRequest, "111100", "The requested service is invalid from the selected origin.")
		return
	}
	negotiated := sh.ShipmentRatingOptions.NegotiatedRatesIndicator != nil
	tit := strings.HasSuffix(option, "timeintransit")
	rated := make([]map[string]any, 0, len(prices))
	for _, p := range prices {
		rated = append(rated, ubRatedShipment(p, sh.packages(), negotiated, tit, shipDate))
	}
	writeJSON(w, http.StatusOK, map[string]any{"RateResponse": map[string]any{
		"Response": map[string]any{
			"ResponseStatus":       ubResponseOK["ResponseStatus"],
			"Alert":                []map[string]any{{"Code": "110971", "Description": "Your invoice may vary from the displayed reference rates"}},
			"TransactionReference": map[string]any{"CustomerContext": q.RateRequest.Request.TransactionReference.CustomerContext},
		},
		"RatedShipment": rated,
	}})
}

// ---- ship, void ----

// ubTrackingNumber builds a 1Z number: shipper (6), service (2), package
// id (7) and the UPS check digit.
func ubTrackingNumber(account, service string, seed ...string) string {
	shipper := strings.Map(func(r rune) rune {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			return r
		}
		return -1
	}, strings.ToUpper(account))
	if len(shipper) < 6 {
		shipper += strings.ToUpper(hashDigits(6-len(shipper), "shipper", account))
	}
	svc := service
	if len(svc) != 2 {
		svc = "03"
	}
	for attempt := 0; ; attempt++ {
		body := shipper[:6] + svc + hashDigits(7, append(seed, strconv.Itoa(attempt))...)
		sum := 0
		for i, c := range body {
			v := int(c - '0')
			if c >= 'A' && c <= 'Z' {
				v = (int(c) - 63) % 10
			}
			if i%2 == 1 {
				v *= 2
			}
			sum += v
		}
		n := "1Z" + body + strconv.Itoa((10-sum%10)%10)
		if !unknownNumber(n) {
			return n
		}
	}
}

func (s *carrierSandbox) ubShip(w http.ResponseWriter, r *http.Request) {
	var q struct {
		ShipmentRequest struct {
			Request struct {
				TransactionReference struct {
					CustomerContext string `json:"CustomerContext"`
				} `json:"TransactionReference"`
			} `json:"Request"`
			Shipment           ubShipment `json:"Shipment"`
			LabelSpecification struct {
				LabelImageFormat ubUnit `json:"LabelImageFormat"`
			} `json:"LabelSpecification"`
		} `json:"ShipmentRequest"`
	}
	body, ok := ubRead(w, r, &q, ubShipRequired...)
	if !ok {
		return
	}
	sh := &q.ShipmentRequest.Shipment
	if !sh.validate(w) {
		return
	}
	if sh.Service == nil || sh.Service.Code == "" {
		ubError(w, http.StatusBadRequest, "120100", "Missing or invalid service code.")
		return
	}
	format := strings.ToUpper(q.ShipmentRequest.LabelSpecification.LabelImageFormat.Code)
	if format == "" {
		format = "GIF"
	}
	if format != "GIF" && format != "ZPL" && format != "PNG" {
		ubError(w, http.StatusBadRequest, "120416", "The sandbox renders label image formats GIF, PNG and ZPL.")
		return
	}
	shipDate := s.parseShipDate(sh.ShipmentDate)
	prices, ok := sbCarriers["carrier_b"].quote(sh.rateInput(), shipDate, sh.Service.Code)
	if !ok {
		ubError(w, http.StatusBadRequest, "111100", "The requested service is invalid from the selected origin.")
		return
	}
	p := prices[0]
	pkgs := sh.packages()
	acct := sh.Shipper.ShipperNumber.String()
	numbers := make([]string, len(pkgs))
	for i := range pkgs {
		numbers[i] = ubTrackingNumber(acct, p.svc.code, "carrier_b", string(body), strconv.Itoa(i))
	}
	reference := ""
	if sh.ReferenceNumber != nil {
		reference = sh.ReferenceNumber.Value.String()
	}
	negotiated := sh.ShipmentRatingOptions.NegotiatedRatesIndicator != nil
	rec := &sbShipment{carrier: "carrier_b", number: numbers[0], service: p.svc.code, serviceName: p.svc.name,
		from: sh.from().place(), to: sh.ShipTo.place(), weightLb: p.totalActual, shipDate: shipDate,
		created: s.now().UTC().Truncate(time.Second), transit: p.transit, issued: true, price: p.net, pieces: numbers, reference: reference}
	s.putLabel(rec)
	rated := ubRatedShipment(p, pkgs, false, false, shipDate)["RatedPackage"].([]map[string]any)
	results := make([]map[string]any, 0, len(pkgs))
	for i, n := range numbers {
		li := labelInfo{carrier: "CARRIER B", service: p.svc.name, tracking: n, shipDate: shipDate.Format("2006-01-02"), weightLb: pkgs[i].lb,
			from: sh.from().lines(), to: sh.ShipTo.lines(), reference: reference, pieceNumber: i + 1, pieceCount: len(pkgs)}
		var img []byte
		switch format {
		case "ZPL":
			img = labelZPL(li)
		case "PNG":
			img, _ = gifToPNG(labelGIFLandscape(li))
		default:
			img = labelGIFLandscape(li) // landscape, as the carrier's GIF labels are
		}
		html := fmt.Sprintf(`<html><head><title>View/Print Label</title></head><body><img src="label%s.%s"></body></html>`, n, strings.ToLower(format))
		results = append(results, map[string]any{
			"TrackingNumber":        n,
			"BaseServiceCharge":     rated[i]["BaseServiceCharge"],
			"ServiceOptionsCharges": ubMoney(0),
			"ShippingLabel": map[string]any{
				"ImageFormat":  map[string]any{"Code": format, "Description": format},
				"GraphicImage": base64.StdEncoding.EncodeToString(img),
				"HTMLImage":    base64.StdEncoding.EncodeToString([]byte(html)),
			},
			"ItemizedCharges": rated[i]["ItemizedCharges"],
		})
	}
	resultsBody := map[string]any{
		"Disclaimer": []map[string]any{{"Code": "05", "Description": "Rate excludes VAT. Rate includes a fuel surcharge, but excludes taxes, duties and other charges that may apply to the shipment."}},
		"ShipmentCharges": map[string]any{
			"TransportationCharges": ubMoney(p.list),
			"ServiceOptionsCharges": ubMoney(0),
			"TotalCharges":          ubMoney(p.list),
		},
		"RatingMethod":                    "01",
		"BillableWeightCalculationMethod": "02",
		"BillingWeight":                   map[string]any{"UnitOfMeasurement": map[string]any{"Code": "LBS", "Description": "Pounds"}, "Weight": fmt.Sprintf("%.1f", p.billable)},
		"ShipmentIdentificationNumber":    numbers[0],
		"PackageResults":                  results,
	}
	if negotiated {
		resultsBody["NegotiatedRateCharges"] = map[string]any{"TotalCharge": ubMoney(p.net)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"ShipmentResponse": map[string]any{
		"Response": map[string]any{
			"ResponseStatus": ubResponseOK["ResponseStatus"],
			"TransactionReference": map[string]any{"CustomerContext": q.ShipmentRequest.Request.TransactionReference.CustomerContext,
				"TransactionIdentifier": hashDigits(22, "txn", string(body))},
		},
		"ShipmentResults": resultsBody,
	}})
}

func (s *carrierSandbox) ubVoid(w http.ResponseWriter, r *http.Request) {
	n := pathParam(r, "id")
	switch s.voidLabel("carrier_b", n) {
	case "unknown":
		ubError(w, http.StatusBadRequest, "190117", "No shipment found within the allowed void period.")
		return
	case "tendered":
		ubError(w, http.StatusBadRequest, "190102", "The shipment cannot be voided: the package has already been picked up.")
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"VoidShipmentResponse": map[string]any{
		"Response":            map[string]any{"ResponseStatus": ubResponseOK["ResponseStatus"], "TransactionReference": map[string]any{"CustomerContext": ""}},
		"SummaryResult":       map[string]any{"Status": map[string]any{"Code": "1", "Description": "Voided"}},
		"PackageLevelResults": []map[string]any{{"TrackingNumber": n, "Status": map[string]any{"Code": "1", "Description": "Voided"}}},
	}})
}

// ---- tracking ----

type ubScan struct{ typ, code, desc, statusCode string }

var ubScans = map[string]ubScan{
	evLabel:      {"M", "MP", "Shipper created a label, Carrier B has not received the package yet.", "003"},
	evPickup:     {"P", "PU", "Pickup Scan", "005"},
	evDepart:     {"I", "DP", "Departed from Facility", "005"},
	evArriveHub:  {"I", "AR", "Arrived at Facility", "005"},
	evDepartHub:  {"I", "DP", "Departed from Facility", "005"},
	evArriveDest: {"I", "AR", "Arrived at Facility", "005"},
	evOut:        {"I", "OT", "Out For Delivery Today", "021"},
	evDelivered:  {"D", "KB", "DELIVERED", "011"},
	evException:  {"X", "48", "The receiver was not available for delivery. We'll make a second attempt the next business day.", "007"},
}

func ubTrackAddress(p sbPlace) map[string]any {
	return map[string]any{"addressLine1": "", "addressLine2": "", "addressLine3": "", "city": p.city, "stateProvince": p.state,
		"countryCode": p.country, "postalCode": p.zip, "country": p.country}
}

// ubTrackReference finds an issued label by the shipper's reference
// (ReferenceNumber of the ship request): its shipment with the packages'
// tracking numbers, or the TW0001 warning of an unknown inquiry.
func (s *carrierSandbox) ubTrackReference(w http.ResponseWriter, r *http.Request) {
	if !ubTrackHeaders(w, r) {
		return
	}
	ref := pathParam(r, "reference")
	sh, ok := s.labelByReference("carrier_b", ref)
	if !ok {
		ubTrackNotFound(w, ref)
		return
	}
	pkgs := make([]map[string]any, 0, len(sh.pieces))
	for _, n := range sh.pieces {
		pkgs = append(pkgs, map[string]any{"trackingNumber": n, "referenceNumber": []map[string]any{{"type": "SHIPMENT", "number": ref}}})
	}
	writeJSON(w, http.StatusOK, map[string]any{"trackResponse": map[string]any{"shipment": []map[string]any{{
		"inquiryNumber": ref, "package": pkgs,
	}}}})
}

// ubTrackHeaders refuses a tracking call without its required headers.
func ubTrackHeaders(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("transId") == "" || r.Header.Get("transactionSrc") == "" {
		ubError(w, http.StatusBadRequest, "VSS000", "Missing required header: transId and transactionSrc are required.")
		return false
	}
	return true
}

// ubTrackNotFound answers an inquiry the carrier does not know (TW0001).
func ubTrackNotFound(w http.ResponseWriter, inquiry string) {
	writeJSON(w, http.StatusOK, map[string]any{"trackResponse": map[string]any{"shipment": []map[string]any{{
		"inquiryNumber": inquiry,
		"warnings":      []map[string]any{{"code": "TW0001", "message": "Tracking Information Not Found"}},
	}}}})
}

func (s *carrierSandbox) ubTrack(w http.ResponseWriter, r *http.Request) {
	if !ubTrackHeaders(w, r) {
		return
	}
	n := pathParam(r, "number")
	sh, ok := s.shipment("carrier_b", n)
	if !ok {
		ubTrackNotFound(w, n)
		return
	}
	evs := sh.timeline(s.now(), sbCarriers["carrier_b"].hub)
	acts := make([]map[string]any, 0, len(evs))
	var delivered *sbEvent
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		sc := ubScans[e.kind]
		if e.kind == evDelivered && delivered == nil {
			delivered = &evs[i]
		}
		acts = append(acts, map[string]any{
			"location": map[string]any{"address": ubTrackAddress(e.place), "slic": hashDigits(4, "slic", e.place.zip)},
			"status":   map[string]any{"type": sc.typ, "description": sc.desc, "code": sc.code, "statusCode": sc.statusCode, "simplifiedTextDescription": sc.desc},
			"date":     e.at.Format("20060102"), "time": e.at.Format("150405"),
			"gmtDate": e.at.Format("20060102"), "gmtTime": e.at.Format("15:04:05"), "gmtOffset": "+00:00",
		})
	}
	cur := ubScans[lastKind(evs)]
	pkg := map[string]any{
		"trackingNumber": n,
		"activity":       acts,
		"currentStatus":  map[string]any{"description": cur.desc, "code": cur.code, "simplifiedTextDescription": cur.desc, "statusCode": cur.statusCode, "type": cur.typ},
		"packageAddress": []map[string]any{
			{"type": "ORIGIN", "name": "", "attentionName": "", "address": ubTrackAddress(sh.from)},
			{"type": "DESTINATION", "name": "", "attentionName": "", "address": ubTrackAddress(sh.to)},
		},
		"weight":          map[string]any{"unitOfMeasurement": "LBS", "weight": fmt.Sprintf("%.2f", sh.weightLb)},
		"service":         map[string]any{"code": sh.service, "description": sh.serviceName},
		"referenceNumber": []any{},
		"packageCount":    max(1, len(sh.pieces)),
	}
	if delivered != nil {
		pkg["deliveryDate"] = []map[string]any{{"type": "DEL", "date": delivered.at.Format("20060102")}}
		pkg["deliveryTime"] = map[string]any{"type": "DEL", "startTime": "", "endTime": delivered.at.Format("150405")}
	} else if sh.exception != 2 {
		pkg["deliveryDate"] = []map[string]any{{"type": "SDD", "date": sh.deliveryDate().Format("20060102")}}
		pkg["deliveryTime"] = map[string]any{"type": "EOD", "startTime": "", "endTime": "233000"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"trackResponse": map[string]any{"shipment": []map[string]any{{
		"inquiryNumber": n,
		"package":       []map[string]any{pkg},
	}}}})
}
