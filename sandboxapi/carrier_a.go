package sandboxapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// carrier_a: the FedEx REST wire format (vendors/carriers/carrier_a).

func (s *carrierSandbox) carrierARoutes(r chi.Router) {
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		faError(w, r, http.StatusNotFound, "NOT.FOUND.ERROR", "The resource you requested is no longer available. Please modify your request and try again.")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		faError(w, r, http.StatusMethodNotAllowed, "METHOD.NOT.ALLOWED", "The request method is not supported for this resource.")
	})
	r.Post("/oauth/token", s.faToken)
	r.Get("/document/v1/labels/{number}", s.faDocument)
	r.Group(func(r chi.Router) {
		r.Use(s.faAuth)
		r.Post("/rate/v1/rates/quotes", s.faRate)
		r.Post("/ship/v1/shipments", s.faShip)
		r.Put("/ship/v1/shipments/cancel", s.faCancelShipment)
		r.Post("/track/v1/trackingnumbers", s.faTrack)
		r.Post("/pickup/v1/pickups", s.faPickup)
		r.Put("/pickup/v1/pickups/cancel", s.faCancelPickup)
		r.Post("/registration/v2/address/keysgeneration", s.faRegAddress)
		r.Post("/registration/v2/customerkeys/pingeneration", s.faRegPinGeneration)
		r.Post("/registration/v2/pin/keysgeneration", s.faRegPinKeys)
		r.Post("/registration/v2/invoice/keysgeneration", s.faRegInvoiceKeys)
	})
}

// faTransactionID is a UUID-shaped id derived from the request.
func faTransactionID(r *http.Request, body []byte) string {
	sum := sha256.Sum256(append([]byte(r.Method+" "+r.URL.Path+"\x00"), body...))
	h := hex.EncodeToString(sum[:16])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func faEnvelope(r *http.Request, body []byte, output any) map[string]any {
	m := map[string]any{"transactionId": faTransactionID(r, body), "output": output}
	if c := r.Header.Get("x-customer-transaction-id"); c != "" {
		m["customerTransactionId"] = c
	}
	return m
}

func faError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	m := map[string]any{
		"transactionId": faTransactionID(r, []byte(code)),
		"errors":        []map[string]any{{"code": code, "message": msg, "parameterList": []any{}}},
	}
	if c := r.Header.Get("x-customer-transaction-id"); c != "" {
		m["customerTransactionId"] = c
	}
	writeJSON(w, status, m)
}

func faUnavailable(w http.ResponseWriter, r *http.Request) {
	faError(w, r, http.StatusServiceUnavailable, "SERVICE.UNAVAILABLE.ERROR",
		"The service is currently unavailable and we are working to resolve the issue. We apologize for any inconvenience. Please check back at a later time.")
}

// faRead reads and decodes a JSON body; on failure, or when one of the
// required fields is missing, it answers 400.
func faRead(w http.ResponseWriter, r *http.Request, v any, required ...string) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		faError(w, r, http.StatusBadRequest, "INVALID.INPUT.EXCEPTION", "Invalid field value in the input: "+err.Error())
		return nil, false
	}
	if f := missingField(body, required...); f != "" {
		faError(w, r, http.StatusBadRequest, "INVALID.INPUT.EXCEPTION", "Invalid field value in the input: "+f+" is required.")
		return nil, false
	}
	return body, true
}

// ---- OAuth ----

func (s *carrierSandbox) faToken(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		faError(w, r, http.StatusBadRequest, "BAD.REQUEST.ERROR", "The given JWT is invalid. Please modify your request and try again.")
		return
	}
	f := r.PostForm
	grant := f.Get("grant_type")
	needed := []string{"client_id", "client_secret"}
	switch grant {
	case "client_credentials":
	case "csp_credentials", "client_pc_credentials":
		needed = append(needed, "child_Key", "child_secret")
	default:
		faError(w, r, http.StatusBadRequest, "BAD.REQUEST.ERROR", "grant_type must be client_credentials, csp_credentials or client_pc_credentials.")
		return
	}
	for _, k := range needed {
		if v := strings.TrimSpace(f.Get(k)); v == "" || v == FailValue {
			faError(w, r, http.StatusUnauthorized, "NOT.AUTHORIZED.ERROR",
				"The given client credentials were not valid. Please modify your request and try again.")
			return
		}
	}
	ttl := tokenTTL(r, time.Hour)
	tok := s.issueToken("carrier_a", ttl, isTestEnv(r), false)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": tok,
		"token_type":   "bearer",
		"expires_in":   int(ttl / time.Second),
		"scope":        "CXS",
	})
}

func (s *carrierSandbox) faAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := s.bearer(r, "carrier_a"); !ok {
			faError(w, r, http.StatusUnauthorized, "NOT.AUTHORIZED.ERROR", "Access token expired. Please modify your request and try again.")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ---- request shapes ----

type faAddress struct {
	StreetLines         []string `json:"streetLines"`
	City                string   `json:"city"`
	StateOrProvinceCode string   `json:"stateOrProvinceCode"`
	PostalCode          flexStr  `json:"postalCode"`
	CountryCode         string   `json:"countryCode"`
	Residential         bool     `json:"residential"`
}

type faParty struct {
	Contact struct {
		PersonName  flexStr `json:"personName"`
		PhoneNumber flexStr `json:"phoneNumber"`
		CompanyName flexStr `json:"companyName"`
	} `json:"contact"`
	Address faAddress `json:"address"`
}

func (p faParty) place() sbPlace {
	return sbPlace{upper(p.Address.City), upper(p.Address.StateOrProvinceCode), p.Address.PostalCode.String(), normCountry(p.Address.CountryCode)}
}

func (p faParty) lines() []string {
	var out []string
	for _, s := range []string{p.Contact.PersonName.String(), p.Contact.CompanyName.String()} {
		if s != "" {
			out = append(out, s)
		}
	}
	out = append(out, p.Address.StreetLines...)
	out = append(out, strings.TrimSpace(fmt.Sprintf("%s %s %s", p.Address.City, p.Address.StateOrProvinceCode, p.Address.PostalCode)),
		normCountry(p.Address.CountryCode))
	return out
}

type faPackageLine struct {
	GroupPackageCount flexNum `json:"groupPackageCount"`
	Weight            struct {
		Units string  `json:"units"`
		Value flexNum `json:"value"`
	} `json:"weight"`
	Dimensions *struct {
		Length flexNum `json:"length"`
		Width  flexNum `json:"width"`
		Height flexNum `json:"height"`
		Units  string  `json:"units"`
	} `json:"dimensions"`
	CustomerReferences []struct {
		Value flexStr `json:"value"`
	} `json:"customerReferences"`
}

type faShipmentRequest struct {
	AccountNumber struct {
		Value flexStr `json:"value"`
	} `json:"accountNumber"`
	LabelResponseOptions string `json:"labelResponseOptions"`
	RequestedShipment    struct {
		Shipper                   faParty         `json:"shipper"`
		Recipient                 faParty         `json:"recipient"`
		Recipients                []faParty       `json:"recipients"`
		ServiceType               string          `json:"serviceType"`
		ShipDateStamp             string          `json:"shipDateStamp"`
		ShipDatestamp             string          `json:"shipDatestamp"`
		RateRequestType           []string        `json:"rateRequestType"`
		RequestedPackageLineItems []faPackageLine `json:"requestedPackageLineItems"`
		LabelSpecification        struct {
			ImageType      string `json:"imageType"`
			LabelStockType string `json:"labelStockType"`
		} `json:"labelSpecification"`
	} `json:"requestedShipment"`
}

func (q *faShipmentRequest) recipient() faParty {
	if len(q.RequestedShipment.Recipients) > 0 {
		return q.RequestedShipment.Recipients[0]
	}
	return q.RequestedShipment.Recipient
}

// packages expands groupPackageCount into single packages.
func (q *faShipmentRequest) packages() []sbPkg {
	var out []sbPkg
	for _, l := range q.RequestedShipment.RequestedPackageLineItems {
		p := sbPkg{lb: toLB(float64(l.Weight.Value), l.Weight.Units)}
		if d := l.Dimensions; d != nil {
			p.l, p.w, p.h = toIN(float64(d.Length), d.Units), toIN(float64(d.Width), d.Units), toIN(float64(d.Height), d.Units)
		}
		for i := 0; i < max(1, int(l.GroupPackageCount)); i++ {
			out = append(out, p)
		}
	}
	return out
}

// validate answers 400/503 and returns false when the request cannot be rated.
func (q *faShipmentRequest) validate(w http.ResponseWriter, r *http.Request) bool {
	acct := q.AccountNumber.Value.String()
	switch {
	case acct == FailValue:
		faUnavailable(w, r)
	case acct == "":
		faError(w, r, http.StatusBadRequest, "ACCOUNTNUMBER.REGISTRATION.REQUIRED", "Please enter a valid 9-digit Carrier A account number or register for a new Carrier A account number.")
	case q.RequestedShipment.Shipper.Address.PostalCode == "" || q.recipient().Address.PostalCode == "":
		faError(w, r, http.StatusBadRequest, "POSTALCODE.REQUIRED", "Shipper and recipient postal codes are required.")
	case len(q.RequestedShipment.RequestedPackageLineItems) == 0:
		faError(w, r, http.StatusBadRequest, "REQUESTEDPACKAGELINEITEMS.REQUIRED", "At least one requested package line item is required.")
	default:
		for _, p := range q.packages() {
			if p.lb <= 0 {
				faError(w, r, http.StatusBadRequest, "PACKAGE.WEIGHT.INVALID", "Package weight must be greater than zero.")
				return false
			}
		}
		return true
	}
	return false
}

func (q *faShipmentRequest) rateInput() sbRateInput {
	from, to := q.RequestedShipment.Shipper.Address, q.recipient().Address
	return sbRateInput{fromZip: from.PostalCode.String(), fromCountry: from.CountryCode, toZip: to.PostalCode.String(),
		toCountry: to.CountryCode, residential: to.Residential, pkgs: q.packages()}
}

func (q *faShipmentRequest) shipDate(s *carrierSandbox) time.Time {
	d := q.RequestedShipment.ShipDateStamp
	if d == "" {
		d = q.RequestedShipment.ShipDatestamp
	}
	return s.parseShipDate(d)
}

// ---- rates ----

var faTransitWords = []string{"", "ONE_DAY", "TWO_DAYS", "THREE_DAYS", "FOUR_DAYS", "FIVE_DAYS", "SIX_DAYS", "SEVEN_DAYS", "EIGHT_DAYS", "NINE_DAYS", "TEN_DAYS"}

func faTransitWord(n int) string { return faTransitWords[min(max(n, 0), len(faTransitWords)-1)] }

func faCommitTime(p sbPrice) string {
	by := p.svc.by
	if by == "" {
		by = "20:00:00"
	}
	return p.delivery.Format("2006-01-02") + "T" + by
}

// faRatedDetail is one ratedShipmentDetails entry (ACCOUNT or LIST).
func faRatedDetail(p sbPrice, rateType string) map[string]any {
	discount := p.discount
	if rateType == "LIST" {
		discount = 0
	}
	net := round2(p.list - discount)
	method := "ACTUAL"
	if p.dimWeighted {
		method = "DIM"
	}
	surcharges := []map[string]any{{"type": "FUEL", "description": "Fuel Surcharge", "level": "PACKAGE", "amount": p.fuel}}
	if p.resi > 0 {
		surcharges = append(surcharges, map[string]any{"type": "RESIDENTIAL_DELIVERY", "description": "Residential delivery", "level": "PACKAGE", "amount": p.resi})
	}
	totalSurcharges := round2(p.fuel + p.resi)
	weight := map[string]any{"units": "LB", "value": p.billable}
	return map[string]any{
		"rateType":            rateType,
		"ratedWeightMethod":   method,
		"totalDiscounts":      discount,
		"totalBaseCharge":     p.base,
		"totalNetCharge":      net,
		"totalNetFedExCharge": net,
		"shipmentRateDetail": map[string]any{
			"rateZone":             strconv.Itoa(p.zone),
			"dimDivisor":           139,
			"fuelSurchargePercent": round2(p.fuelPct * 100),
			"totalSurcharges":      totalSurcharges,
			"totalFreightDiscount": discount,
			"surCharges":           surcharges,
			"totalBillingWeight":   weight,
			"currency":             p.currency,
		},
		"ratedPackages": []map[string]any{{
			"groupNumber":          0,
			"effectiveNetDiscount": discount,
			"packageRateDetail": map[string]any{
				"rateType":          "PAYOR_" + rateType + "_PACKAGE",
				"ratedWeightMethod": method,
				"baseCharge":        p.base,
				"netFreight":        round2(p.base - discount),
				"totalSurcharges":   totalSurcharges,
				"netFedExCharge":    net,
				"totalTaxes":        0,
				"netCharge":         net,
				"billingWeight":     weight,
				"currency":          p.currency,
			},
			"sequenceNumber": 1,
		}},
		"currency": p.currency,
	}
}

func faRateTypes(requested []string) []string {
	var out []string
	for _, want := range []string{"ACCOUNT", "LIST"} {
		for _, r := range requested {
			if strings.EqualFold(r, want) {
				out = append(out, want)
				break
			}
		}
	}
	if len(out) == 0 {
		return []string{"ACCOUNT", "LIST"}
	}
	return out
}

func faReplyDetail(p sbPrice, rateTypes []string, fromZip, toZip string) map[string]any {
	details := make([]map[string]any, 0, len(rateTypes))
	for _, rt := range rateTypes {
		details = append(details, faRatedDetail(p, rt))
	}
	commit := faCommitTime(p)
	day := strings.ToUpper(p.delivery.Weekday().String()[:3])
	return map[string]any{
		"serviceType":          p.svc.code,
		"serviceName":          p.svc.name,
		"packagingType":        "YOUR_PACKAGING",
		"customerMessages":     []any{},
		"ratedShipmentDetails": details,
		"anonymouslyAllowable": true,
		"operationalDetail": map[string]any{
			"ineligibleForMoneyBackGuarantee": !p.svc.guaranteed,
			"originPostalCodes":               fromZip,
			"destinationPostalCode":           toZip,
			"transitTime":                     faTransitWord(p.transit),
			"deliveryDate":                    commit,
			"deliveryDay":                     day,
			"commitDate":                      commit,
			"commitDays":                      "",
			"publishedDeliveryTime":           p.svc.by,
		},
		"signatureOptionType": "SERVICE_DEFAULT",
		"serviceDescription": map[string]any{
			"serviceType":     p.svc.code,
			"code":            p.svc.code,
			"names":           []map[string]any{{"type": "long", "encoding": "utf-8", "value": p.svc.name}},
			"serviceCategory": "parcel",
			"description":     strings.TrimPrefix(p.svc.name, "Carrier A "),
		},
		"commit": map[string]any{
			"daysInTransit":    faTransitWord(p.transit),
			"dateDetail":       map[string]any{"dayOfWeek": day, "dayCxsFormat": commit},
			"saturdayDelivery": false,
		},
	}
}

func (s *carrierSandbox) faRate(w http.ResponseWriter, r *http.Request) {
	var q faShipmentRequest
	body, ok := faRead(w, r, &q, faRateRequired...)
	if !ok || !q.validate(w, r) {
		return
	}
	shipDate := q.shipDate(s)
	prices, ok := sbCarriers["carrier_a"].quote(q.rateInput(), shipDate, q.RequestedShipment.ServiceType)
	if !ok {
		faError(w, r, http.StatusBadRequest, "SERVICE.TYPE.INVALID", "The service type "+q.RequestedShipment.ServiceType+" is not available for this origin and destination.")
		return
	}
	rateTypes := faRateTypes(q.RequestedShipment.RateRequestType)
	details := make([]map[string]any, 0, len(prices))
	for _, p := range prices {
		details = append(details, faReplyDetail(p, rateTypes, q.RequestedShipment.Shipper.Address.PostalCode.String(), q.recipient().Address.PostalCode.String()))
	}
	writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
		"rateReplyDetails": details,
		"quoteDate":        shipDate.Format("2006-01-02"),
		"encoded":          false,
		"alerts":           []any{},
	}))
}

// ---- ship ----

// faRender renders a label in a labelSpecification.imageType.
func faRender(imageType string, li labelInfo) ([]byte, bool) {
	switch strings.ToUpper(imageType) {
	case "", "PDF":
		return labelPDF(li), true
	case "ZPLII":
		return labelZPL(li), true
	case "PNG":
		img, err := gifToPNG(labelGIF(li))
		return img, err == nil
	}
	return nil, false
}

func (s *carrierSandbox) faShip(w http.ResponseWriter, r *http.Request) {
	var q faShipmentRequest
	body, ok := faRead(w, r, &q, faShipRequired...)
	if !ok || !q.validate(w, r) {
		return
	}
	rs := q.RequestedShipment
	if rs.ServiceType == "" {
		faError(w, r, http.StatusBadRequest, "SERVICE.TYPE.REQUIRED", "Service type is required.")
		return
	}
	imageType := strings.ToUpper(rs.LabelSpecification.ImageType)
	if imageType == "" {
		imageType = "PDF"
	}
	if imageType != "PDF" && imageType != "ZPLII" && imageType != "PNG" {
		faError(w, r, http.StatusBadRequest, "LABELSPECIFICATION.IMAGETYPE.INVALID", "The sandbox renders imageType PDF, ZPLII or PNG.")
		return
	}
	shipDate := q.shipDate(s)
	prices, ok := sbCarriers["carrier_a"].quote(q.rateInput(), shipDate, rs.ServiceType)
	if !ok {
		faError(w, r, http.StatusBadRequest, "SERVICE.TYPE.INVALID", "The service type "+rs.ServiceType+" is not available for this origin and destination.")
		return
	}
	p := prices[0]
	pkgs := q.packages()
	acct := q.AccountNumber.Value.String()
	master := avoidUnknown("7" + hashDigits(11, "carrier_a", acct, string(body)))
	numbers := []string{master}
	for i := 1; i < len(pkgs); i++ {
		numbers = append(numbers, avoidUnknown("7"+hashDigits(11, master, strconv.Itoa(i))))
	}
	reference := ""
	if refs := rs.RequestedPackageLineItems[0].CustomerReferences; len(refs) > 0 {
		reference = refs[0].Value.String()
	}
	recipient := q.recipient()
	sh := &sbShipment{
		carrier: "carrier_a", number: master, service: p.svc.code, serviceName: p.svc.name,
		from: rs.Shipper.place(), to: recipient.place(), weightLb: p.totalActual, shipDate: shipDate,
		created: s.now().UTC().Truncate(time.Second), transit: p.transit, issued: true, price: p.net, pieces: numbers,
	}
	s.putLabel(sh)

	docURL := strings.TrimSuffix(r.URL.Path, "/ship/v1/shipments") + "/document/v1/labels/"
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	pieces := make([]map[string]any, 0, len(pkgs))
	completed := make([]map[string]any, 0, len(pkgs))
	for i, n := range numbers {
		li := labelInfo{carrier: "CARRIER A", service: p.svc.name, tracking: n, shipDate: shipDate.Format("2006-01-02"),
			weightLb: pkgs[i].lb, from: rs.Shipper.lines(), to: recipient.lines(), reference: reference, pieceNumber: i + 1, pieceCount: len(pkgs)}
		doc := map[string]any{"contentType": "LABEL", "copiesToPrint": 1, "docType": imageType}
		if strings.EqualFold(q.LabelResponseOptions, "URL_ONLY") {
			doc["url"] = scheme + "://" + r.Host + docURL + n + "?imageType=" + imageType
		} else {
			data, _ := faRender(imageType, li)
			doc["encodedLabel"] = base64.StdEncoding.EncodeToString(data)
		}
		charge := 0.0
		if i == 0 {
			charge = p.net
		}
		pieces = append(pieces, map[string]any{
			"masterTrackingNumber":      master,
			"trackingNumber":            n,
			"packageSequenceNumber":     i + 1,
			"additionalChargesDiscount": 0,
			"netRateAmount":             charge,
			"netChargeAmount":           charge,
			"netDiscountAmount":         0,
			"packageDocuments":          []map[string]any{doc},
			"currency":                  "USD",
			"customerReferences":        []any{},
			"codcollectionAmount":       0,
			"baseRateAmount":            charge,
			"deliveryTimestamp":         p.delivery.Format("2006-01-02"),
		})
		completed = append(completed, map[string]any{
			"sequenceNumber":  i + 1,
			"trackingIds":     []map[string]any{{"trackingIdType": "FEDEX", "formId": "0430", "trackingNumber": n}},
			"groupNumber":     0,
			"signatureOption": "SERVICE_DEFAULT",
		})
	}
	rated := func(rateType string, net float64, discount float64) map[string]any {
		surcharges := []map[string]any{{"surchargeType": "FUEL", "level": "SHIPMENT", "description": "Fuel", "amount": p.fuel}}
		if p.resi > 0 {
			surcharges = append(surcharges, map[string]any{"surchargeType": "RESIDENTIAL_DELIVERY", "level": "SHIPMENT", "description": "Residential delivery", "amount": p.resi})
		}
		return map[string]any{
			"rateType": rateType, "rateZone": strconv.Itoa(p.zone), "ratedWeightMethod": map[bool]string{true: "DIM", false: "ACTUAL"}[p.dimWeighted],
			"dimDivisor": 139, "fuelSurchargePercent": round2(p.fuelPct * 100),
			"totalBillingWeight": map[string]any{"units": "LB", "value": p.billable},
			"totalBaseCharge":    p.base, "totalFreightDiscounts": discount, "totalDiscounts": discount, "totalNetFreight": round2(p.base - discount),
			"totalSurcharges": round2(p.fuel + p.resi), "totalNetFedExCharge": net, "totalTaxes": 0, "totalNetCharge": net,
			"totalRebates": 0, "totalDutiesAndTaxes": 0, "totalNetChargeWithDutiesAndTaxes": net,
			"surcharges": surcharges, "freightDiscounts": []any{}, "taxes": []any{}, "currency": "USD",
		}
	}
	rateTypes := faRateTypes(rs.RateRequestType)
	actual := "PAYOR_ACCOUNT_SHIPMENT"
	var details []map[string]any
	for _, rt := range rateTypes {
		if rt == "ACCOUNT" {
			details = append(details, rated("PAYOR_ACCOUNT_SHIPMENT", p.net, p.discount))
		} else {
			details = append(details, rated("PAYOR_LIST_SHIPMENT", p.list, 0))
		}
	}
	if len(rateTypes) == 1 && rateTypes[0] == "LIST" {
		actual = "PAYOR_LIST_SHIPMENT"
	}
	commit := faCommitTime(p)
	writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
		"transactionShipments": []map[string]any{{
			"masterTrackingNumber": master,
			"serviceType":          p.svc.code,
			"shipDatestamp":        shipDate.Format("2006-01-02"),
			"serviceName":          p.svc.name,
			"serviceCategory":      map[bool]string{true: "GROUND", false: "EXPRESS"}[strings.Contains(p.svc.code, "GROUND")],
			"alerts":               []any{},
			"pieceResponses":       pieces,
			"completedShipmentDetail": map[string]any{
				"usDomestic":           p.zone != 9 && p.fromCC == "US",
				"carrierCode":          map[bool]string{true: "FDXG", false: "FDXE"}[strings.Contains(p.svc.code, "GROUND")],
				"masterTrackingId":     map[string]any{"trackingIdType": "FEDEX", "formId": "0430", "trackingNumber": master},
				"serviceDescription":   map[string]any{"serviceType": p.svc.code, "code": p.svc.code, "description": p.svc.name},
				"packagingDescription": "Customer Packaging",
				"operationalDetail": map[string]any{
					"deliveryDate": commit, "deliveryDay": strings.ToUpper(p.delivery.Weekday().String()[:3]),
					"transitTime": faTransitWord(p.transit), "publishedDeliveryTime": p.svc.by,
				},
				"shipmentRating":          map[string]any{"actualRateType": actual, "shipmentRateDetails": details},
				"completedPackageDetails": completed,
			},
		}},
		"alerts": []any{},
	}))
}

// faDocument serves a label as a URL_ONLY request's url points to it.
func (s *carrierSandbox) faDocument(w http.ResponseWriter, r *http.Request) {
	n := chi.URLParam(r, "number")
	sh, ok := s.shipment("carrier_a", n)
	if !ok || !sh.issued {
		faError(w, r, http.StatusNotFound, "DOCUMENT.NOTFOUND", "The requested document was not found.")
		return
	}
	imageType := strings.ToUpper(r.URL.Query().Get("imageType"))
	li := labelInfo{carrier: "CARRIER A", service: sh.serviceName, tracking: n, shipDate: sh.shipDate.Format("2006-01-02"), weightLb: sh.weightLb,
		from: []string{sh.from.city + " " + sh.from.state + " " + sh.from.zip}, to: []string{sh.to.city + " " + sh.to.state + " " + sh.to.zip},
		pieceNumber: 1, pieceCount: max(1, len(sh.pieces))}
	data, ok := faRender(imageType, li)
	if !ok {
		faError(w, r, http.StatusBadRequest, "LABELSPECIFICATION.IMAGETYPE.INVALID", "The sandbox renders imageType PDF, ZPLII or PNG.")
		return
	}
	ct := map[string]string{"ZPLII": "application/x-zpl", "PNG": "image/png"}[imageType]
	if ct == "" {
		ct = "application/pdf"
	}
	w.Header().Set("Content-Type", ct)
	_, _ = w.Write(data)
}

func gifToPNG(gifData []byte) ([]byte, error) {
	img, err := decodeGIF(gifData)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func (s *carrierSandbox) faCancelShipment(w http.ResponseWriter, r *http.Request) {
	var q struct {
		AccountNumber struct {
			Value flexStr `json:"value"`
		} `json:"accountNumber"`
		TrackingNumber flexStr `json:"trackingNumber"`
	}
	body, ok := faRead(w, r, &q, faCancelShipmentRequired...)
	if !ok {
		return
	}
	if q.AccountNumber.Value.String() == FailValue {
		faUnavailable(w, r)
		return
	}
	n := q.TrackingNumber.String()
	if n == "" {
		faError(w, r, http.StatusBadRequest, "TRACKINGNUMBER.REQUIRED", "Please provide a tracking number.")
		return
	}
	msg := "Shipment is successfully cancelled"
	switch s.voidLabel("carrier_a", n) {
	case "unknown":
		faError(w, r, http.StatusBadRequest, "TRACKING.TRACKINGNUMBER.NOTFOUND", "Tracking number cannot be found. Please correct the tracking number and try again.")
		return
	case "tendered":
		faError(w, r, http.StatusBadRequest, "SHIPMENT.CANCEL.NOTALLOWED", "The shipment has already been tendered to Carrier A and cannot be cancelled.")
		return
	case "already":
		msg = "Shipment is already cancelled"
	}
	writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
		"cancelledShipment": true, "cancelledHistory": true, "message": msg, "alerts": []any{},
	}))
}

// ---- tracking ----

type faScan struct{ code, derived, desc, derivedDesc string }

var faScans = map[string]faScan{
	evLabel:      {"OC", "IN", "Shipment information sent to Carrier A", "Label created"},
	evPickup:     {"PU", "PU", "Picked up", "Picked up"},
	evDepart:     {"DP", "IT", "Left Carrier A origin facility", "In transit"},
	evArriveHub:  {"AR", "IT", "Arrived at Carrier A hub", "In transit"},
	evDepartHub:  {"DP", "IT", "Departed Carrier A hub", "In transit"},
	evArriveDest: {"AR", "IT", "At local Carrier A facility", "In transit"},
	evOut:        {"OD", "OD", "On Carrier A vehicle for delivery", "Out for delivery"},
	evDelivered:  {"DL", "DL", "Delivered", "Delivered"},
	evException:  {"DE", "DE", "Delivery exception", "Delivery exception"},
}

func faLocation(p sbPlace) map[string]any {
	return map[string]any{"city": p.city, "stateOrProvinceCode": p.state, "postalCode": p.zip, "countryCode": p.country,
		"residential": false, "countryName": map[string]string{"US": "United States", "CA": "Canada"}[p.country]}
}

func (s *carrierSandbox) faTrackResult(number string) (map[string]any, bool) {
	sh, ok := s.shipment("carrier_a", number)
	if !ok {
		return map[string]any{
			"trackingNumber": number,
			"trackResults": []map[string]any{{
				"trackingNumberInfo": map[string]any{"trackingNumber": number, "trackingNumberUniqueId": "", "carrierCode": ""},
				"error": map[string]any{"code": "TRACKING.TRACKINGNUMBER.NOTFOUND",
					"message": "Tracking number cannot be found. Please correct the tracking number and try again."},
			}},
		}, false
	}
	evs := sh.timeline(s.now(), sbCarriers["carrier_a"].hub)
	scans := make([]map[string]any, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- { // newest first
		e := evs[i]
		sc := faScans[e.kind]
		m := map[string]any{
			"date": e.at.Format("2006-01-02T15:04:05-07:00"), "eventType": sc.code, "eventDescription": sc.desc,
			"derivedStatusCode": sc.derived, "derivedStatus": sc.derivedDesc, "exceptionCode": "", "exceptionDescription": "",
			"scanLocation": faLocation(e.place), "locationType": "FEDEX_FACILITY",
		}
		if e.kind == evException {
			m["exceptionCode"], m["exceptionDescription"] = "08", "Customer not available or business closed"
		}
		if e.kind == evLabel {
			m["locationType"] = "CUSTOMER"
		}
		scans = append(scans, m)
	}
	last := evs[len(evs)-1]
	latest := faScans[last.kind]
	dates := []map[string]any{{"type": "SHIP", "dateTime": sh.shipDate.Format("2006-01-02T15:04:05-07:00")}}
	attempts := 0
	var delivered *sbEvent
	for i, e := range evs {
		switch e.kind {
		case evPickup:
			dates = append(dates, map[string]any{"type": "ACTUAL_PICKUP", "dateTime": e.at.Format("2006-01-02T15:04:05-07:00")})
		case evDelivered:
			delivered = &evs[i]
			attempts++
		case evException:
			attempts++
		}
	}
	if delivered != nil {
		dates = append(dates, map[string]any{"type": "ACTUAL_DELIVERY", "dateTime": delivered.at.Format("2006-01-02T15:04:05-07:00")})
	} else if sh.exception != 2 {
		dates = append(dates, map[string]any{"type": "ESTIMATED_DELIVERY", "dateTime": sh.deliveryDate().Format("2006-01-02") + "T20:00:00-00:00"})
	}
	latestStatus := map[string]any{"code": latest.code, "derivedCode": latest.derived, "statusByLocale": latest.derivedDesc,
		"description": latest.desc, "scanLocation": faLocation(last.place)}
	result := map[string]any{
		"trackingNumberInfo": map[string]any{"trackingNumber": number, "carrierCode": map[bool]string{true: "FDXG", false: "FDXE"}[strings.Contains(sh.service, "GROUND")],
			"trackingNumberUniqueId": "12024~" + number + "~FX"},
		"additionalTrackingInfo": map[string]any{"hasAssociatedShipments": len(sh.pieces) > 1, "packageIdentifiers": []any{}},
		"latestStatusDetail":     latestStatus,
		"dateAndTimes":           dates,
		"scanEvents":             scans,
		"serviceDetail":          map[string]any{"type": sh.service, "description": sh.serviceName, "shortDescription": sh.service},
		"packageDetails": map[string]any{
			"packagingDescription": map[string]any{"type": "YOUR_PACKAGING", "description": "Your Packaging"},
			"count":                strconv.Itoa(max(1, len(sh.pieces))),
			"weightAndDimensions":  map[string]any{"weight": []map[string]any{{"unit": "LB", "value": strconv.FormatFloat(round2(sh.weightLb), 'f', 1, 64)}}},
		},
		"shipperInformation":   map[string]any{"contact": map[string]any{}, "address": faLocation(sh.from)},
		"recipientInformation": map[string]any{"contact": map[string]any{}, "address": faLocation(sh.to)},
		"deliveryDetails":      map[string]any{"deliveryAttempts": strconv.Itoa(attempts), "deliveryOptionEligibilityDetails": []any{}},
	}
	return map[string]any{"trackingNumber": number, "trackResults": []map[string]any{result}}, true
}

func (s *carrierSandbox) faTrack(w http.ResponseWriter, r *http.Request) {
	var q struct {
		IncludeDetailedScans bool `json:"includeDetailedScans"`
		TrackingInfo         []struct {
			TrackingNumberInfo struct {
				TrackingNumber flexStr `json:"trackingNumber"`
			} `json:"trackingNumberInfo"`
		} `json:"trackingInfo"`
	}
	body, ok := faRead(w, r, &q, faTrackRequired...)
	if !ok {
		return
	}
	if len(q.TrackingInfo) > 30 {
		faError(w, r, http.StatusBadRequest, "TRACKING.TRACKINGNUMBER.LIMITEXCEEDED", "Maximum limit is 30 tracking numbers per request.")
		return
	}
	results := make([]map[string]any, 0, len(q.TrackingInfo))
	missing := false
	for _, ti := range q.TrackingInfo {
		n := ti.TrackingNumberInfo.TrackingNumber.String()
		if n == "" {
			faError(w, r, http.StatusBadRequest, "TRACKING.TRACKINGNUMBER.EMPTY", "Please provide tracking number.")
			return
		}
		res, found := s.faTrackResult(n)
		missing = missing || !found
		results = append(results, res)
	}
	if len(results) == 0 {
		faError(w, r, http.StatusBadRequest, "TRACKING.TRACKINGNUMBER.EMPTY", "Please provide tracking number.")
		return
	}
	out := map[string]any{"completeTrackResults": results}
	if missing {
		out["alerts"] = "TRACKING.DATA.NOTFOUND -  Tracking data unavailable"
	}
	writeJSON(w, http.StatusOK, faEnvelope(r, body, out))
}

// ---- pickups ----

func (s *carrierSandbox) faPickup(w http.ResponseWriter, r *http.Request) {
	var q struct {
		AssociatedAccountNumber struct {
			Value flexStr `json:"value"`
		} `json:"associatedAccountNumber"`
		OriginDetail struct {
			PickupLocation     faParty `json:"pickupLocation"`
			ReadyDateTimestamp string  `json:"readyDateTimestamp"`
			CustomerCloseTime  string  `json:"customerCloseTime"`
		} `json:"originDetail"`
		CarrierCode  string  `json:"carrierCode"`
		PackageCount flexNum `json:"packageCount"`
	}
	body, ok := faRead(w, r, &q, faPickupRequired...)
	if !ok {
		return
	}
	acct := q.AssociatedAccountNumber.Value.String()
	if acct == FailValue {
		faUnavailable(w, r)
		return
	}
	od := q.OriginDetail
	var ready time.Time
	var err error
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05"} {
		if ready, err = time.Parse(layout, od.ReadyDateTimestamp); err == nil {
			break
		}
	}
	closeT, closeErr := time.Parse("15:04:05", od.CustomerCloseTime)
	switch {
	case acct == "":
		faError(w, r, http.StatusBadRequest, "ACCOUNTNUMBER.REGISTRATION.REQUIRED", "Please enter a valid 9-digit Carrier A account number.")
	case q.CarrierCode != "FDXE" && q.CarrierCode != "FDXG":
		faError(w, r, http.StatusBadRequest, "PICKUP.CARRIERCODE.INVALID", "carrierCode must be FDXE or FDXG.")
	case od.PickupLocation.Address.PostalCode == "" || len(od.PickupLocation.Address.StreetLines) == 0:
		faError(w, r, http.StatusBadRequest, "PICKUP.ADDRESS.INVALID", "The pickup location address is incomplete.")
	case err != nil:
		faError(w, r, http.StatusBadRequest, "PICKUP.READYDATETIME.INVALID", "readyDateTimestamp must look like 2020-07-03T11:00:00Z.")
	case closeErr != nil:
		faError(w, r, http.StatusBadRequest, "PICKUP.CUSTOMERCLOSETIME.INVALID", "customerCloseTime must look like 17:00:00.")
	// Dates are the pickup location's: the ready time's own offset (UTC
	// when it has none, or says Z).
	case ready.Format("2006-01-02") < s.now().In(ready.Location()).Format("2006-01-02"):
		faError(w, r, http.StatusBadRequest, "PICKUP.REQUESTED.PREVIOUS.DAY", "Cannot schedule a pickup requested for a previous day.")
	case closeT.Hour()*60+closeT.Minute() <= ready.Hour()*60+ready.Minute():
		faError(w, r, http.StatusBadRequest, "PICKUP.CLOSETIME.INVALID", "The close time must be later than the ready time.")
	default:
		date := ready.Format("2006-01-02")
		var code string
		if q.CarrierCode == "FDXG" {
			code = "CPU" + hashDigits(8, "pickup", acct, string(body))
		} else {
			code = strconv.Itoa(1000 + int(hashNum("pickup", acct, string(body))%9000))
		}
		st := upper(od.PickupLocation.Address.StateOrProvinceCode) + "XX"
		location := st[:2] + string(rune('A'+hashNum("loc", code)%26)) + "A"
		s.putPickup(&sbPickup{code: code, location: location, carrierCode: q.CarrierCode, date: date})
		msg := "Pickup scheduled"
		if date == s.now().In(ready.Location()).Format("2006-01-02") {
			msg = "Courier on the way"
		}
		writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
			"pickupConfirmationCode": code, "message": msg, "location": location, "alerts": []any{},
		}))
	}
}

func hashNum(parts ...string) uint64 {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var n uint64
	for _, b := range h[:8] {
		n = n<<8 | uint64(b)
	}
	return n
}

func (s *carrierSandbox) faCancelPickup(w http.ResponseWriter, r *http.Request) {
	var q struct {
		AssociatedAccountNumber struct {
			Value flexStr `json:"value"`
		} `json:"associatedAccountNumber"`
		PickupConfirmationCode flexStr `json:"pickupConfirmationCode"`
		ScheduledDate          string  `json:"scheduledDate"`
		CarrierCode            string  `json:"carrierCode"`
		Location               string  `json:"location"`
	}
	body, ok := faRead(w, r, &q, faCancelPickupRequired...)
	if !ok {
		return
	}
	acct := q.AssociatedAccountNumber.Value.String()
	date, dateErr := time.Parse("2006-01-02", q.ScheduledDate)
	code := q.PickupConfirmationCode.String()
	switch {
	case acct == FailValue:
		faUnavailable(w, r)
	case acct == "":
		faError(w, r, http.StatusBadRequest, "ACCOUNTNUMBER.REGISTRATION.REQUIRED", "Please enter a valid 9-digit Carrier A account number.")
	case code == "":
		faError(w, r, http.StatusBadRequest, "PICKUP.CONFIRMATIONCODE.REQUIRED", "Please provide the pickup confirmation code.")
	case dateErr != nil:
		faError(w, r, http.StatusBadRequest, "PICKUP.SCHEDULEDDATE.INVALID", "scheduledDate must be YYYY-MM-DD.")
	case q.CarrierCode == "FDXE" && strings.TrimSpace(q.Location) == "":
		faError(w, r, http.StatusBadRequest, "PICKUP.LOCATION.REQUIRED", "The location of an express pickup is required to cancel it.")
	// The request names no time zone: a date is past once it is past
	// everywhere (the pickup location's today may still be UTC's yesterday).
	case date.Before(dateOnly(s.now().Add(-14 * time.Hour))):
		faError(w, r, http.StatusBadRequest, "PICKUP.NUMBER.EXPIRED", "PREVIOUS DAY PICKUP, CANNOT CANCEL OR UPDATE")
	case s.cancelPickup(code) == "already":
		faError(w, r, http.StatusBadRequest, "PICKUP.ALREADY.CANCELLED", "Requested pickup has already been cancelled.")
	default:
		writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
			"pickupConfirmationCode":    code,
			"cancelConfirmationMessage": "Requested pickup has been cancelled Successfully.",
			"alerts":                    []any{},
		}))
	}
}
