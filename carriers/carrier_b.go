package carriers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// carrierB speaks the UPS REST APIs (vendors/carriers/carrier_b): OAuth2
// client credentials (clientId/clientSecret as Basic auth, accountNumber as
// x-merchant-id), Rating/Shipping v2409, Tracking v1 (one number per call).
type carrierB struct {
	*base
	trackConcurrency int
}

const upsVersion = "v2409"

// upsServiceNames names the UPS service codes.
var upsServiceNames = map[string]string{
	"01": "Carrier B Next Day Air", "02": "Carrier B 2nd Day Air", "03": "Carrier B Ground",
	"07": "Carrier B Worldwide Express", "08": "Carrier B Worldwide Expedited", "11": "Carrier B Standard",
	"12": "Carrier B 3 Day Select", "13": "Carrier B Next Day Air Saver", "14": "Carrier B Next Day Air Early",
	"54": "Carrier B Worldwide Express Plus", "59": "Carrier B 2nd Day Air A.M.", "65": "Carrier B Worldwide Saver",
}

// upsChargeNames names the UPS itemized charge codes seen in responses.
var upsChargeNames = map[string]string{
	"375": "Fuel surcharge", "376": "Delivery area surcharge", "270": "Residential surcharge",
	"100": "Additional handling", "190": "Remote area surcharge",
}

func (b *carrierB) Code() string { return CarrierB }

func (b *carrierB) Capabilities() Capabilities {
	// Actions: UPS publishes no delivery-change API (see SendAction).
	return Capabilities{Rating: true, Labels: true, Pickups: false, Tracking: true}
}

// ValidateCredentials: clientId, clientSecret, accountNumber.
func (b *carrierB) ValidateCredentials(creds map[string]any) []FieldError {
	errs := requireStrings(creds, "accountNumber", "clientId", "clientSecret")
	sortFieldErrors(errs)
	return errs
}

type upsErrorBody struct {
	Response struct {
		Errors []struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"errors"`
	} `json:"response"`
}

func (b *carrierB) apiError(resp *response) *Error {
	var body upsErrorBody
	_ = json.Unmarshal(resp.body, &body)
	code, msgs := "", []string{}
	for _, e := range body.Response.Errors {
		if code == "" {
			code = e.Code
		}
		if e.Message != "" {
			msgs = append(msgs, strings.TrimSpace(e.Message))
		}
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" && len(body.Response.Errors) == 0 {
		msg = snippet(resp.body)
	}
	var kind error
	switch code {
	case "250002", "250003", "250004", "250007":
		kind = ErrUnauthorized
	case "TW0001", "151044", "151018", "190117":
		kind = ErrNotFound
	}
	// UPS documents the 429 only; a Retry-After it sends is honoured.
	return rateLimited(statusError(CarrierB, resp.status, code, msg, kind), resp.header, b.now(), nil)
}

type upsCreds struct{ clientID, clientSecret, account string }

func (b *carrierB) creds(acct Account) (upsCreds, error) {
	if err := b.checkAccount(acct); err != nil {
		return upsCreds{}, err
	}
	c := upsCreds{acct.cred("clientId"), acct.cred("clientSecret"), acct.cred("accountNumber")}
	if c.clientID == "" || c.clientSecret == "" || c.account == "" {
		return c, &Error{Carrier: CarrierB, Code: ErrCodeInvalid, Message: "account credentials need clientId, clientSecret and accountNumber", kind: ErrUnauthorized}
	}
	return c, nil
}

func (b *carrierB) tokenSource(isTest bool, c upsCreds) (string, fetchFunc) {
	env := "prod"
	if isTest {
		env = "test"
	}
	key := tokenKey(env, c.clientID, c.clientSecret, c.account)
	fetch := func(ctx context.Context) (fetchedToken, error) {
		u, err := b.url(isTest, "/security/v1/oauth/token")
		if err != nil {
			return fetchedToken{}, err
		}
		hdr := http.Header{"x-merchant-id": {c.account}}
		resp, err := b.tr.do(ctx, call{method: http.MethodPost, url: u, form: url.Values{"grant_type": {"client_credentials"}},
			header: hdr, basicUser: c.clientID, basicPass: c.clientSecret, isTest: isTest})
		if err != nil {
			return fetchedToken{}, err
		}
		if !resp.ok() {
			return fetchedToken{}, b.apiError(resp)
		}
		return b.tr.oauthToken(CarrierB, resp)
	}
	return key, fetch
}

// send performs an authorized call and decodes a 2xx answer into out.
// notFoundOK returns a 404 answer to the caller instead of an error.
func (b *carrierB) send(ctx context.Context, acct Account, method, path string, body any, out any, notFoundOK bool) (*response, error) {
	c, err := b.creds(acct)
	if err != nil {
		return nil, err
	}
	u, err := b.url(acct.IsTest, path)
	if err != nil {
		return nil, err
	}
	key, fetch := b.tokenSource(acct.IsTest, c)
	hdr := http.Header{
		"transId":        {tokenKey(path, fmt.Sprint(time.Now().UnixNano()))[:32]},
		"transactionSrc": {"fos"},
	}
	resp, err := withToken(ctx, b.tokens, key, fetch, func(token string) (*response, error) {
		return b.tr.do(ctx, call{method: method, url: u, json: body, header: hdr, bearer: token, isTest: acct.IsTest})
	})
	if err != nil {
		return nil, err
	}
	if resp.status == http.StatusNotFound && notFoundOK {
		return resp, nil
	}
	if !resp.ok() {
		return resp, b.apiError(resp)
	}
	if out != nil {
		if err := b.tr.decode(resp, out); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// ---- wire helpers ----

type upsCode struct {
	Code        string `json:"Code"`
	Description string `json:"Description,omitempty"`
}

type upsAddress struct {
	AddressLine                 []string `json:"AddressLine,omitempty"`
	City                        string   `json:"City,omitempty"`
	StateProvinceCode           string   `json:"StateProvinceCode,omitempty"`
	PostalCode                  string   `json:"PostalCode"`
	CountryCode                 string   `json:"CountryCode"`
	ResidentialAddressIndicator *string  `json:"ResidentialAddressIndicator,omitempty"`
}

type upsParty struct {
	Name          string     `json:"Name"`
	AttentionName string     `json:"AttentionName,omitempty"`
	ShipperNumber string     `json:"ShipperNumber,omitempty"`
	Phone         *upsPhone  `json:"Phone,omitempty"`
	Address       upsAddress `json:"Address"`
	Residential   *string    `json:"Residential,omitempty"`
}

type upsPhone struct {
	Number string `json:"Number"`
}

type upsMoney struct {
	CurrencyCode  string    `json:"CurrencyCode"`
	MonetaryValue flexFloat `json:"MonetaryValue"`
}

type upsItemized struct {
	Code          string    `json:"Code"`
	CurrencyCode  string    `json:"CurrencyCode"`
	MonetaryValue flexFloat `json:"MonetaryValue"`
	SubType       string    `json:"SubType"`
}

func upsAddr(a Address, residential bool) upsAddress {
	ua := upsAddress{
		AddressLine:       streetLines(a),
		City:              trimSpace(a.City),
		StateProvinceCode: stateCode(a),
		PostalCode:        trimSpace(a.Zip),
		CountryCode:       countryCode(a),
	}
	if residential {
		y := "Y"
		ua.ResidentialAddressIndicator = &y
	}
	return ua
}

func upsName(a Address) string {
	return truncate(firstNonEmpty(a.Company, a.Name, "Shipping Department"), 35)
}

func upsPartyOf(a Address, shipperNumber string, residential bool) upsParty {
	p := upsParty{Name: upsName(a), AttentionName: truncate(firstNonEmpty(a.Name, a.Company), 35), ShipperNumber: shipperNumber, Address: upsAddr(a, residential)}
	if ph := digitsOnly(a.Phone); ph != "" {
		p.Phone = &upsPhone{Number: ph}
	}
	return p
}

func fmtNum(v float64) string {
	s := fmt.Sprintf("%.1f", v)
	return strings.TrimSuffix(s, ".0")
}

func upsPackages(pkgs []Package, packagingKey string) ([]map[string]any, float64) {
	out := make([]map[string]any, 0, len(pkgs))
	total := 0.0
	for _, p := range pkgs {
		lb := math.Ceil(weightLB(p.Weight)*10) / 10
		total += lb
		m := map[string]any{
			packagingKey:    upsCode{Code: "02", Description: "Package"},
			"PackageWeight": map[string]any{"UnitOfMeasurement": upsCode{Code: "LBS"}, "Weight": fmtNum(lb)},
		}
		if hasDims(p) {
			m["Dimensions"] = map[string]any{
				"UnitOfMeasurement": upsCode{Code: "IN"},
				"Length":            fmtNum(math.Ceil(lengthIN(p.Length, p.DimensionUnit))),
				"Width":             fmtNum(math.Ceil(lengthIN(p.Width, p.DimensionUnit))),
				"Height":            fmtNum(math.Ceil(lengthIN(p.Height, p.DimensionUnit))),
			}
		}
		out = append(out, m)
	}
	return out, total
}

// ---- credentials test ----

// TestCredentials gets a token (client id/secret, account as merchant id)
// and rates a one-pound Ground parcel billed to the account.
func (b *carrierB) TestCredentials(ctx context.Context, acct Account) error {
	from := Address{Address1: "1 Test Way", City: "Timonium", ProvinceCode: "MD", Zip: "21093", CountryCode: "US"}
	_, err := b.Rate(ctx, acct, RateRequest{ShipFrom: from, ShipTo: from, ServiceType: "03",
		Packages: []Package{{Weight: Weight{Value: 1, Unit: UnitLB}}}})
	return err
}

// ---- rates ----

type upsRatedShipment struct {
	Service struct {
		Code        string `json:"Code"`
		Description string `json:"Description"`
	} `json:"Service"`
	Zone          string `json:"Zone"`
	BillingWeight struct {
		UnitOfMeasurement upsCode   `json:"UnitOfMeasurement"`
		Weight            flexFloat `json:"Weight"`
	} `json:"BillingWeight"`
	TransportationCharges upsMoney `json:"TransportationCharges"`
	BaseServiceCharge     upsMoney `json:"BaseServiceCharge"`
	ServiceOptionsCharges upsMoney `json:"ServiceOptionsCharges"`
	TotalCharges          upsMoney `json:"TotalCharges"`
	NegotiatedRateCharges *struct {
		TotalCharge upsMoney `json:"TotalCharge"`
	} `json:"NegotiatedRateCharges"`
	ItemizedCharges    oneOrMany[upsItemized] `json:"ItemizedCharges"`
	GuaranteedDelivery *struct {
		BusinessDaysInTransit string `json:"BusinessDaysInTransit"`
		DeliveryByTime        string `json:"DeliveryByTime"`
	} `json:"GuaranteedDelivery"`
	TimeInTransit *struct {
		ServiceSummary struct {
			EstimatedArrival struct {
				Arrival struct {
					Date string `json:"Date"`
					Time string `json:"Time"`
				} `json:"Arrival"`
				BusinessDaysInTransit string `json:"BusinessDaysInTransit"`
			} `json:"EstimatedArrival"`
			GuaranteedIndicator *string `json:"GuaranteedIndicator"`
		} `json:"ServiceSummary"`
	} `json:"TimeInTransit"`
	RatedPackage oneOrMany[struct {
		ItemizedCharges oneOrMany[upsItemized] `json:"ItemizedCharges"`
	}] `json:"RatedPackage"`
}

func (r *upsRatedShipment) breakdown(total float64) []Charge {
	items := map[string]float64{}
	var order []string
	add := func(list []upsItemized) {
		for _, it := range list {
			if it.MonetaryValue == 0 {
				continue
			}
			if _, ok := items[it.Code]; !ok {
				order = append(order, it.Code)
			}
			items[it.Code] += float64(it.MonetaryValue)
		}
	}
	add(r.ItemizedCharges)
	for _, p := range r.RatedPackage {
		add(p.ItemizedCharges)
	}
	sum := 0.0
	var extra []Charge
	for _, code := range order {
		name := upsChargeNames[code]
		if name == "" {
			name = "Charge " + code
		}
		extra = append(extra, Charge{Name: name, Amount: round2(items[code])})
		sum += items[code]
	}
	out := []Charge{{Name: "Transportation", Amount: round2(float64(r.TransportationCharges.MonetaryValue) - sum)}}
	out = append(out, extra...)
	if v := float64(r.ServiceOptionsCharges.MonetaryValue); v != 0 {
		out = append(out, Charge{Name: "Service options", Amount: round2(v)})
	}
	if d := total - float64(r.TotalCharges.MonetaryValue); r.NegotiatedRateCharges != nil && math.Abs(d) >= 0.005 {
		out = append(out, Charge{Name: "Negotiated discount", Amount: round2(d)})
	}
	return out
}

// upsDateTime reads UPS "YYYYMMDD" + "HHMMSS" (or ISO forms) as UTC.
func upsDateTime(date, clock string) *time.Time {
	date, clock = strings.ReplaceAll(trimSpace(date), "-", ""), strings.ReplaceAll(trimSpace(clock), ":", "")
	if len(date) != 8 {
		return nil
	}
	if len(clock) == 4 {
		clock += "00"
	}
	if len(clock) != 6 {
		clock = "000000"
	}
	t, err := time.Parse("20060102150405", date+clock)
	if err != nil {
		return nil
	}
	return &t
}

// Rate implements Carrier: POST /api/rating/v2409/Shoptimeintransit (all
// services) or Ratetimeintransit (ServiceType).
func (b *carrierB) Rate(ctx context.Context, acct Account, req RateRequest) ([]Quote, error) {
	if err := validateShipment(CarrierB, req.ShipFrom, req.ShipTo, req.Packages); err != nil {
		return nil, err
	}
	c, err := b.creds(acct)
	if err != nil {
		return nil, err
	}
	shipDate := dateOrToday(req.ShipDate, b.now)
	pkgs, total := upsPackages(req.Packages, "PackagingType")
	shipment := map[string]any{
		"Shipper":               upsPartyOf(req.ShipFrom, c.account, false),
		"ShipFrom":              upsPartyOf(req.ShipFrom, "", false),
		"ShipTo":                upsPartyOf(req.ShipTo, "", req.ShipTo.Residential),
		"PaymentDetails":        map[string]any{"ShipmentCharge": []map[string]any{{"Type": "01", "BillShipper": map[string]any{"AccountNumber": c.account}}}},
		"ShipmentRatingOptions": map[string]any{"NegotiatedRatesIndicator": "Y"},
		"NumOfPieces":           fmt.Sprint(len(req.Packages)),
		"ShipmentTotalWeight":   map[string]any{"UnitOfMeasurement": upsCode{Code: "LBS"}, "Weight": fmtNum(total)},
		"DeliveryTimeInformation": map[string]any{
			"PackageBillType": "03",
			"Pickup":          map[string]any{"Date": shipDate.Format("20060102")},
		},
		"Package": pkgs,
	}
	option := "Shoptimeintransit"
	if req.ServiceType != "" {
		option = "Ratetimeintransit"
		shipment["Service"] = upsCode{Code: req.ServiceType, Description: upsServiceNames[req.ServiceType]}
	}
	body := map[string]any{"RateRequest": map[string]any{
		"Request":  map[string]any{"TransactionReference": map[string]any{"CustomerContext": "fos rate"}},
		"Shipment": shipment,
	}}
	var out struct {
		RateResponse struct {
			RatedShipment oneOrMany[json.RawMessage] `json:"RatedShipment"`
		} `json:"RateResponse"`
	}
	if _, err := b.send(ctx, acct, http.MethodPost, "/api/rating/"+upsVersion+"/"+option, body, &out, false); err != nil {
		return nil, err
	}
	quotes := make([]Quote, 0, len(out.RateResponse.RatedShipment))
	for _, raw := range out.RateResponse.RatedShipment {
		var r upsRatedShipment
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, badResponse(CarrierB, "RatedShipment entry is malformed", err)
		}
		price, currency := float64(r.TotalCharges.MonetaryValue), r.TotalCharges.CurrencyCode
		if r.NegotiatedRateCharges != nil && r.NegotiatedRateCharges.TotalCharge.MonetaryValue > 0 {
			price = float64(r.NegotiatedRateCharges.TotalCharge.MonetaryValue)
			currency = firstNonEmpty(r.NegotiatedRateCharges.TotalCharge.CurrencyCode, currency)
		}
		name := firstNonEmpty(r.Service.Description, upsServiceNames[r.Service.Code], "Carrier B service "+r.Service.Code)
		q := Quote{
			Carrier:     CarrierB,
			ServiceType: r.Service.Code,
			ServiceName: name,
			TotalPrice:  round2(price),
			Currency:    firstNonEmpty(currency, "USD"),
			Breakdown:   r.breakdown(price),
			Zone:        r.Zone,
			Raw:         raw,
		}
		if r.BillingWeight.Weight > 0 {
			unit := UnitLB
			if strings.HasPrefix(strings.ToUpper(r.BillingWeight.UnitOfMeasurement.Code), "K") {
				unit = UnitKG
			}
			q.BillingWeight = &Weight{Value: float64(r.BillingWeight.Weight), Unit: unit}
		}
		if g := r.GuaranteedDelivery; g != nil && g.BusinessDaysInTransit != "" {
			q.TransitDays = transitDays(g.BusinessDaysInTransit)
			q.TransitDaysGuaranteed = true
			q.DeliveryByTime = hhmm(g.DeliveryByTime)
		}
		if t := r.TimeInTransit; t != nil {
			ea := t.ServiceSummary.EstimatedArrival
			if q.TransitDays == nil {
				q.TransitDays = transitDays(ea.BusinessDaysInTransit)
			}
			q.EstimatedDelivery = upsDateTime(ea.Arrival.Date, ea.Arrival.Time)
		}
		quotes = append(quotes, q)
	}
	sortQuotes(quotes)
	return quotes, nil
}

// ---- labels ----

type upsShipResponse struct {
	ShipmentResponse struct {
		ShipmentResults struct {
			ShipmentCharges struct {
				TransportationCharges upsMoney `json:"TransportationCharges"`
				ServiceOptionsCharges upsMoney `json:"ServiceOptionsCharges"`
				TotalCharges          upsMoney `json:"TotalCharges"`
			} `json:"ShipmentCharges"`
			NegotiatedRateCharges *struct {
				TotalCharge upsMoney `json:"TotalCharge"`
			} `json:"NegotiatedRateCharges"`
			ShipmentIdentificationNumber string `json:"ShipmentIdentificationNumber"`
			PackageResults               oneOrMany[struct {
				TrackingNumber string `json:"TrackingNumber"`
				ShippingLabel  struct {
					ImageFormat  upsCode `json:"ImageFormat"`
					GraphicImage string  `json:"GraphicImage"`
				} `json:"ShippingLabel"`
				ItemizedCharges oneOrMany[upsItemized] `json:"ItemizedCharges"`
			}] `json:"PackageResults"`
			ItemizedCharges oneOrMany[upsItemized] `json:"ItemizedCharges"`
		} `json:"ShipmentResults"`
	} `json:"ShipmentResponse"`
}

// CreateLabel implements Carrier (POST /api/shipments/v2409/ship). UPS has
// no PDF labels: for FormatPDF the adapter asks for GIF and wraps the image
// into a PDF; FormatZPL is passed through.
func (b *carrierB) CreateLabel(ctx context.Context, acct Account, req LabelRequest) (*Label, error) {
	if err := validateShipment(CarrierB, req.ShipFrom, req.ShipTo, req.Packages); err != nil {
		return nil, err
	}
	if trimSpace(req.ServiceType) == "" {
		return nil, invalidRequest(CarrierB, "serviceType is required")
	}
	format, err := labelFormat(req.Format)
	if err != nil {
		return nil, invalidRequest(CarrierB, err.Error())
	}
	c, err := b.creds(acct)
	if err != nil {
		return nil, err
	}
	shipDate := dateOrToday(req.ShipDate, b.now)
	pkgs, _ := upsPackages(req.Packages, "Packaging")
	labelSpec := map[string]any{"LabelImageFormat": upsCode{Code: "GIF", Description: "GIF"}, "HTTPUserAgent": "Mozilla/4.5"}
	if format == FormatZPL {
		labelSpec = map[string]any{"LabelImageFormat": upsCode{Code: "ZPL", Description: "ZPL"}, "LabelStockSize": map[string]any{"Height": "6", "Width": "4"}}
	}
	shipTo := upsPartyOf(req.ShipTo, "", req.ShipTo.Residential)
	shipment := map[string]any{
		"Description":           truncate(firstNonEmpty(req.Reference, "Merchandise"), 50),
		"Shipper":               upsPartyOf(req.ShipFrom, c.account, false),
		"ShipFrom":              upsPartyOf(req.ShipFrom, "", false),
		"ShipTo":                shipTo,
		"PaymentInformation":    map[string]any{"ShipmentCharge": []map[string]any{{"Type": "01", "BillShipper": map[string]any{"AccountNumber": c.account}}}},
		"Service":               upsCode{Code: req.ServiceType, Description: upsServiceNames[req.ServiceType]},
		"ShipmentRatingOptions": map[string]any{"NegotiatedRatesIndicator": "Y"},
		"ShipmentDate":          shipDate.Format("20060102"),
		"Package":               pkgs,
	}
	if req.Reference != "" {
		shipment["ReferenceNumber"] = map[string]any{"Value": truncate(req.Reference, 35)}
	}
	body := map[string]any{"ShipmentRequest": map[string]any{
		"Request":            map[string]any{"RequestOption": "nonvalidate", "TransactionReference": map[string]any{"CustomerContext": truncate(req.Reference, 512)}},
		"Shipment":           shipment,
		"LabelSpecification": labelSpec,
	}}
	var out upsShipResponse
	resp, err := b.send(ctx, acct, http.MethodPost, "/api/shipments/"+upsVersion+"/ship", body, &out, false)
	if err != nil {
		return nil, err
	}
	sr := out.ShipmentResponse.ShipmentResults
	label := &Label{
		TrackingNumber: sr.ShipmentIdentificationNumber,
		ServiceType:    req.ServiceType,
		ServiceName:    upsServiceNames[req.ServiceType],
		Format:         format,
		ContentType:    contentTypeOf(format),
		ShipDate:       shipDate,
		Currency:       firstNonEmpty(sr.ShipmentCharges.TotalCharges.CurrencyCode, "USD"),
		TotalPrice:     round2(float64(sr.ShipmentCharges.TotalCharges.MonetaryValue)),
		Raw:            stripKeys(resp.body, "GraphicImage", "HTMLImage"),
	}
	if n := sr.NegotiatedRateCharges; n != nil && n.TotalCharge.MonetaryValue > 0 {
		label.TotalPrice = round2(float64(n.TotalCharge.MonetaryValue))
	}
	rs := upsRatedShipment{TransportationCharges: sr.ShipmentCharges.TransportationCharges, ServiceOptionsCharges: sr.ShipmentCharges.ServiceOptionsCharges,
		TotalCharges: sr.ShipmentCharges.TotalCharges, ItemizedCharges: sr.ItemizedCharges}
	if sr.NegotiatedRateCharges != nil {
		rs.NegotiatedRateCharges = &struct {
			TotalCharge upsMoney `json:"TotalCharge"`
		}{sr.NegotiatedRateCharges.TotalCharge}
	}
	for _, p := range sr.PackageResults {
		rs.RatedPackage = append(rs.RatedPackage, struct {
			ItemizedCharges oneOrMany[upsItemized] `json:"ItemizedCharges"`
		}{p.ItemizedCharges})
	}
	label.Breakdown = rs.breakdown(label.TotalPrice)
	for _, p := range sr.PackageResults {
		img, err := base64.StdEncoding.DecodeString(p.ShippingLabel.GraphicImage)
		if err != nil || len(img) == 0 {
			return nil, badResponse(CarrierB, "no label image for package "+p.TrackingNumber, err)
		}
		doc := img
		if format == FormatPDF {
			doc, err = imageLabelPDF(img, "CARRIER B "+label.ServiceName+"  TRACKING #: "+p.TrackingNumber)
			if err != nil {
				return nil, badResponse(CarrierB, "label image cannot be read", err)
			}
		}
		label.Pieces = append(label.Pieces, LabelPiece{TrackingNumber: p.TrackingNumber, Document: doc})
	}
	if len(label.Pieces) == 0 {
		return nil, badResponse(CarrierB, "ship response has no PackageResults", nil)
	}
	label.Document = label.Pieces[0].Document
	if label.TrackingNumber == "" {
		label.TrackingNumber = label.Pieces[0].TrackingNumber
	}
	return label, nil
}

// VoidLabel implements Carrier
// (DELETE /api/shipments/v2409/void/cancel/{shipmentIdentificationNumber}).
func (b *carrierB) VoidLabel(ctx context.Context, acct Account, trackingNumber string) error {
	trackingNumber = trimSpace(trackingNumber)
	if trackingNumber == "" {
		return invalidRequest(CarrierB, "tracking number is required")
	}
	var out struct {
		VoidShipmentResponse struct {
			SummaryResult struct {
				Status upsCode `json:"Status"`
			} `json:"SummaryResult"`
		} `json:"VoidShipmentResponse"`
	}
	if _, err := b.send(ctx, acct, http.MethodDelete, "/api/shipments/"+upsVersion+"/void/cancel/"+url.PathEscape(trackingNumber), nil, &out, false); err != nil {
		return err
	}
	if st := out.VoidShipmentResponse.SummaryResult.Status; st.Code != "1" {
		return &Error{Carrier: CarrierB, Code: "VOID." + firstNonEmpty(st.Code, "UNKNOWN"), Message: firstNonEmpty(st.Description, "the carrier did not void the shipment"),
			StatusCode: http.StatusOK, kind: ErrInvalidRequest}
	}
	return nil
}

// ---- tracking ----

type upsTrackAddress struct {
	AddressLine1  string `json:"addressLine1"`
	AddressLine2  string `json:"addressLine2"`
	City          string `json:"city"`
	StateProvince string `json:"stateProvince"`
	CountryCode   string `json:"countryCode"`
	PostalCode    string `json:"postalCode"`
	Country       string `json:"country"`
}

func (a upsTrackAddress) address() *Address {
	if a.City == "" && a.PostalCode == "" && a.StateProvince == "" {
		return nil
	}
	return withCoordinates(&Address{Address1: a.AddressLine1, Address2: a.AddressLine2, City: a.City, ProvinceCode: a.StateProvince,
		Zip: a.PostalCode, CountryCode: firstNonEmpty(a.CountryCode, a.Country)})
}

type upsStatus struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	Code        string `json:"code"`
	StatusCode  string `json:"statusCode"`
}

type upsTrackPackage struct {
	TrackingNumber string `json:"trackingNumber"`
	Activity       []struct {
		Location struct {
			Address upsTrackAddress `json:"address"`
		} `json:"location"`
		Status    upsStatus `json:"status"`
		Date      string    `json:"date"`
		Time      string    `json:"time"`
		GmtDate   string    `json:"gmtDate"`
		GmtTime   string    `json:"gmtTime"`
		GmtOffset string    `json:"gmtOffset"`
	} `json:"activity"`
	CurrentStatus upsStatus `json:"currentStatus"`
	DeliveryDate  []struct {
		Type string `json:"type"`
		Date string `json:"date"`
	} `json:"deliveryDate"`
	PackageAddress []struct {
		Type    string          `json:"type"`
		Address upsTrackAddress `json:"address"`
	} `json:"packageAddress"`
	Weight struct {
		UnitOfMeasurement string `json:"unitOfMeasurement"`
		Weight            string `json:"weight"`
	} `json:"weight"`
	Service struct {
		Code        string `json:"code"`
		Description string `json:"description"`
	} `json:"service"`
}

// upsTrackStatus maps a UPS activity status to a normalized status.
func upsTrackStatus(s upsStatus) string {
	desc := strings.ToUpper(s.Description)
	switch strings.ToUpper(trimSpace(s.Type)) {
	case "M":
		return StatusLabelCreated
	case "D":
		return StatusDelivered
	case "X", "RS", "MV":
		return StatusException
	case "":
		return ""
	}
	if s.Code == "OT" || strings.Contains(desc, "OUT FOR DELIVERY") {
		return StatusOutForDelivery
	}
	return StatusInTransit
}

// upsEventTime prefers the GMT fields, else the local date/time as UTC.
func upsEventTime(date, clock, gmtDate, gmtTime, gmtOffset string) *time.Time {
	if gmtDate != "" {
		if t := upsDateTime(gmtDate, gmtTime); t != nil {
			return t
		}
	}
	t := upsDateTime(date, clock)
	if t == nil {
		return nil
	}
	if off := trimSpace(gmtOffset); off != "" {
		if o, err := time.Parse("-07:00", off); err == nil {
			_, secs := o.Zone()
			u := t.Add(-time.Duration(secs) * time.Second)
			return &u
		}
	}
	return t
}

func upsTrack(number string, resp *response) (TrackResult, error) {
	if resp.status == http.StatusNotFound {
		return TrackResult{TrackingNumber: number, NotFound: true, Raw: resp.body}, nil
	}
	var out struct {
		TrackResponse struct {
			Shipment []struct {
				InquiryNumber string            `json:"inquiryNumber"`
				Package       []json.RawMessage `json:"package"`
				Warnings      []struct {
					Code    string `json:"code"`
					Message string `json:"message"`
				} `json:"warnings"`
			} `json:"shipment"`
		} `json:"trackResponse"`
	}
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return TrackResult{}, badResponse(CarrierB, "track response is not the expected JSON", err)
	}
	if len(out.TrackResponse.Shipment) == 0 || len(out.TrackResponse.Shipment[0].Package) == 0 {
		r := TrackResult{TrackingNumber: number, NotFound: true, Raw: resp.body}
		if len(out.TrackResponse.Shipment) > 0 {
			for _, w := range out.TrackResponse.Shipment[0].Warnings {
				if w.Code != "TW0001" && !strings.Contains(strings.ToUpper(w.Message), "NOT FOUND") {
					r.NotFound, r.Error = false, w.Code+": "+w.Message
				}
			}
		}
		return r, nil
	}
	raw := out.TrackResponse.Shipment[0].Package[0]
	var p upsTrackPackage
	if err := json.Unmarshal(raw, &p); err != nil {
		return TrackResult{}, badResponse(CarrierB, "track package is malformed", err)
	}
	r := TrackResult{TrackingNumber: number, ServiceType: p.Service.Code, ServiceName: p.Service.Description, Raw: raw}
	for _, a := range p.Activity {
		ts := upsEventTime(a.Date, a.Time, a.GmtDate, a.GmtTime, a.GmtOffset)
		if ts == nil {
			continue
		}
		loc := a.Location.Address
		ev := TrackEvent{
			EventID:      digest(number, a.Date, a.Time, a.Status.Code, loc.City, loc.PostalCode),
			Status:       upsTrackStatus(a.Status),
			StatusDetail: firstNonEmpty(a.Status.Code, a.Status.StatusCode),
			Description:  trimSpace(a.Status.Description),
			City:         loc.City,
			State:        loc.StateProvince,
			CountryCode:  firstNonEmpty(loc.CountryCode, loc.Country),
			Zip:          loc.PostalCode,
			Time:         *ts,
		}
		if ev.Status == StatusException {
			ev.IsException, ev.ExceptionType = true, firstNonEmpty(a.Status.Code, a.Status.Type)
		}
		ev.Latitude, ev.Longitude = geocode(ev.City, ev.State, ev.CountryCode)
		r.Events = append(r.Events, ev)
		if ev.Status == StatusDelivered {
			t := ev.Time
			r.DeliveredAt = &t
		}
	}
	sort.SliceStable(r.Events, func(i, j int) bool { return r.Events[i].Time.Before(r.Events[j].Time) })
	r.Status = upsTrackStatus(p.CurrentStatus)
	r.StatusDetail = trimSpace(firstNonEmpty(p.CurrentStatus.Description))
	if len(r.Events) > 0 {
		last := r.Events[len(r.Events)-1]
		if r.Status == "" {
			r.Status = last.Status
		}
		if r.StatusDetail == "" {
			r.StatusDetail = last.Description
		}
		for _, e := range r.Events {
			if e.Status != StatusLabelCreated {
				t := e.Time
				r.ShipDate = &t
				break
			}
		}
	}
	if r.Status == "" {
		r.Status = StatusLabelCreated
	}
	for _, pa := range p.PackageAddress {
		switch strings.ToUpper(pa.Type) {
		case "ORIGIN", "SHIPPER":
			r.Origin = pa.Address.address()
		case "DESTINATION", "SHIP_TO", "DELIVERY":
			r.Destination = pa.Address.address()
		}
	}
	var w flexFloat
	_ = w.UnmarshalJSON([]byte(p.Weight.Weight))
	if w > 0 {
		unit := UnitLB
		if strings.HasPrefix(strings.ToUpper(p.Weight.UnitOfMeasurement), "K") {
			unit = UnitKG
		}
		r.Weight = &Weight{Value: float64(w), Unit: unit}
	}
	for _, d := range p.DeliveryDate {
		switch strings.ToUpper(d.Type) {
		case "SDD", "RDD", "EDD":
			r.EstimatedDelivery = upsDateTime(d.Date, "")
		case "DEL":
			if r.DeliveredAt == nil {
				r.DeliveredAt = upsDateTime(d.Date, "")
			}
		}
	}
	return r, nil
}

// Track implements Carrier: one GET /api/track/v1/details/{number} per
// number, at most TrackConcurrency at a time.
func (b *carrierB) Track(ctx context.Context, acct Account, trackingNumbers []string) ([]TrackResult, error) {
	if _, err := b.creds(acct); err != nil {
		return nil, err
	}
	nums := dedupe(trackingNumbers)
	results := make([]TrackResult, len(nums))
	errs := make([]error, len(nums))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, max(1, b.trackConcurrency))
	var wg sync.WaitGroup
	for i, n := range nums {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			errs[i] = &Error{Carrier: CarrierB, Code: ErrCodeNetwork, Message: "call cancelled: " + ctx.Err().Error(), cause: ctx.Err()}
			continue
		}
		wg.Add(1)
		go func(i int, n string) {
			defer wg.Done()
			defer func() { <-sem }()
			q := url.Values{"locale": {"en_US"}, "returnSignature": {"false"}, "returnMilestones": {"false"}, "returnPOD": {"false"}}
			resp, err := b.send(ctx, acct, http.MethodGet, "/api/track/v1/details/"+url.PathEscape(n)+"?"+q.Encode(), nil, nil, true)
			if err == nil {
				results[i], err = upsTrack(n, resp)
			} else if ce, ok := AsError(err); ok && !ce.Retryable && ce.StatusCode == http.StatusBadRequest {
				// A number the carrier rejects is a per-number problem.
				results[i], err = TrackResult{TrackingNumber: n, Error: ce.Code + ": " + ce.Message}, nil
			}
			if err != nil {
				errs[i] = err
				cancel()
			}
		}(i, n)
	}
	wg.Wait()
	// Report the first real failure (not the cancellations it caused).
	var first error
	for _, err := range errs {
		if err == nil {
			continue
		}
		if first == nil {
			first = err
		}
		if ce, ok := AsError(err); !ok || ce.cause == nil || ce.Code != ErrCodeNetwork {
			return nil, err
		}
	}
	if first != nil {
		return nil, first
	}
	return results, nil
}

// ---- pickups (not offered) ----

func (b *carrierB) CreatePickup(context.Context, Account, PickupRequest) (*PickupResult, error) {
	return nil, notSupported(CarrierB, "pickups")
}

func (b *carrierB) CancelPickup(context.Context, Account, CancelPickupRequest) (*CancelPickupResult, error) {
	return nil, notSupported(CarrierB, "pickups")
}

// ---- shipment actions ----

// SendAction implements Carrier: not supported (noDeliveryChanges).
func (b *carrierB) SendAction(context.Context, Account, ShipmentAction) (*ActionResult, error) {
	return nil, noDeliveryChanges(CarrierB)
}
