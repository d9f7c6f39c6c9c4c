package carriers

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// carrierA speaks the FedEx REST APIs (vendors/carriers/carrier_a).
//
// Authentication: a csp_credentials token from the service's project key
// (Config.CarrierA) plus the account's childKey/childSecret for account
// calls; a client_credentials token from the project key alone for the
// registration calls, which come before the account has child keys.
type carrierA struct {
	*base
	client CarrierAConfig
}

// carrier_a limits.
const (
	carrierATrackBatch = 30 // trackingInfo "Maximum limit is 30"
)

var reNineDigits = regexp.MustCompile(`^\d{9}$`)

func (a *carrierA) Code() string { return CarrierA }

func (a *carrierA) Capabilities() Capabilities {
	// Actions: FedEx publishes no delivery-change API (see SendAction).
	return Capabilities{Rating: true, Labels: true, Pickups: true, Tracking: true}
}

// ValidateCredentials: accountNumber (9 digits), childKey, childSecret.
func (a *carrierA) ValidateCredentials(creds map[string]any) []FieldError {
	errs := requireStrings(creds, "accountNumber", "childKey", "childSecret")
	if s, ok := creds["accountNumber"].(string); ok && trimSpace(s) != "" && !reNineDigits.MatchString(trimSpace(s)) {
		errs = append(errs, FieldError{Field: "accountNumber", Message: "must be a 9-digit account number"})
	}
	sortFieldErrors(errs)
	return errs
}

func sortFieldErrors(errs []FieldError) {
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
}

// ---- wire types ----

type fxValue struct {
	Value string `json:"value"`
	Key   string `json:"key,omitempty"`
}

type fxAddress struct {
	StreetLines         []string `json:"streetLines,omitempty"`
	City                string   `json:"city,omitempty"`
	StateOrProvinceCode string   `json:"stateOrProvinceCode,omitempty"`
	PostalCode          string   `json:"postalCode"`
	CountryCode         string   `json:"countryCode"`
	Residential         bool     `json:"residential"`
}

type fxContact struct {
	PersonName  string `json:"personName,omitempty"`
	PhoneNumber string `json:"phoneNumber,omitempty"`
	CompanyName string `json:"companyName,omitempty"`
}

type fxParty struct {
	Contact *fxContact `json:"contact,omitempty"`
	Address fxAddress  `json:"address"`
}

type fxWeight struct {
	Units string  `json:"units"`
	Value float64 `json:"value"`
}

type fxDimensions struct {
	Length int    `json:"length"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Units  string `json:"units"`
}

type fxReference struct {
	CustomerReferenceType string `json:"customerReferenceType"`
	Value                 string `json:"value"`
}

type fxPackage struct {
	SequenceNumber     int           `json:"sequenceNumber,omitempty"`
	GroupPackageCount  int           `json:"groupPackageCount,omitempty"`
	Weight             fxWeight      `json:"weight"`
	Dimensions         *fxDimensions `json:"dimensions,omitempty"`
	CustomerReferences []fxReference `json:"customerReferences,omitempty"`
}

type fxErrorBody struct {
	TransactionID string `json:"transactionId"`
	Errors        []struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"errors"`
}

type fxAlert struct {
	Code      string `json:"code"`
	AlertType string `json:"alertType"`
	Message   string `json:"message"`
}

func fxAddr(a Address) fxAddress {
	return fxAddress{
		StreetLines:         streetLines(a),
		City:                trimSpace(a.City),
		StateOrProvinceCode: stateCode(a),
		PostalCode:          trimSpace(a.Zip),
		CountryCode:         countryCode(a),
		Residential:         a.Residential,
	}
}

func fxContactOf(a Address) *fxContact {
	name := trimSpace(a.Name)
	if name == "" {
		name = trimSpace(a.Company)
	}
	if name == "" {
		name = "Shipping Department"
	}
	phone := digitsOnly(a.Phone)
	if phone == "" {
		phone = "0000000000"
	}
	return &fxContact{PersonName: name, PhoneNumber: phone, CompanyName: trimSpace(a.Company)}
}

func digitsOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= '0' && r <= '9' {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// fxPackages converts packages to pounds and inches (weights rounded up to a
// tenth, dimensions up to whole inches).
func fxPackages(pkgs []Package, reference string) []fxPackage {
	out := make([]fxPackage, 0, len(pkgs))
	for i, p := range pkgs {
		fp := fxPackage{
			SequenceNumber:    i + 1,
			GroupPackageCount: 1,
			Weight:            fxWeight{Units: "LB", Value: math.Ceil(weightLB(p.Weight)*10) / 10},
		}
		if hasDims(p) {
			fp.Dimensions = &fxDimensions{
				Length: int(math.Ceil(lengthIN(p.Length, p.DimensionUnit))),
				Width:  int(math.Ceil(lengthIN(p.Width, p.DimensionUnit))),
				Height: int(math.Ceil(lengthIN(p.Height, p.DimensionUnit))),
				Units:  "IN",
			}
		}
		if reference != "" {
			fp.CustomerReferences = []fxReference{{CustomerReferenceType: "CUSTOMER_REFERENCE", Value: truncate(reference, 40)}}
		}
		out = append(out, fp)
	}
	return out
}

func truncate(s string, n int) string {
	s = trimSpace(s)
	if len(s) > n {
		return s[:n]
	}
	return s
}

// apiError maps a FedEx error answer.
func (a *carrierA) apiError(resp *response) *Error {
	var body fxErrorBody
	_ = json.Unmarshal(resp.body, &body)
	code, msgs := "", []string{}
	for _, e := range body.Errors {
		if code == "" {
			code = e.Code
		}
		if e.Message != "" {
			msgs = append(msgs, strings.TrimSpace(e.Message))
		}
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" && len(body.Errors) == 0 {
		msg = snippet(resp.body)
	}
	return rateLimited(statusError(CarrierA, resp.status, code, msg, fxErrorKind(code)), resp.header, a.now(), func() time.Duration {
		return fxThrottleWait(msg, a.now())
	})
}

// fxThrottleWait is how long FedEx's documented throttles last when the
// 429 carries no Retry-After: the daily quota resets at 12:00 AM GMT
// ("Daily transaction quota exceeded. Retry after 12:00AM GMT"), the
// per-project burst limit holds "for the rest of the 10-second window".
func fxThrottleWait(msg string, now time.Time) time.Duration {
	if strings.Contains(strings.ToLower(msg), "daily") {
		now = now.UTC()
		return time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC).Sub(now)
	}
	return 10 * time.Second
}

func fxErrorKind(code string) error {
	switch code {
	case "NOT.AUTHORIZED.ERROR", "FORBIDDEN.ERROR", "LOGIN.REAUTHENTICATE.ERROR":
		return ErrUnauthorized
	case "ACCOUNT.NUMBER.NOTFOUND", "USER.ACCOUNT.NOTFOUND":
		return ErrAccountNotFound
	case "ADDRESS.DETAIL.INVALID":
		return ErrAddressInvalid
	case "PIN.OPTION.INVALIDEXPIRED", "INVOICEDETAILS.NUMBER.NOTEXIST":
		return ErrVerificationFailed
	case "SESSION.EXPIRED.ERROR", "UNAUTHORIZED.ACCESS.ERROR":
		return ErrSessionExpired
	}
	if strings.HasSuffix(code, ".NOTFOUND") || strings.HasSuffix(code, ".NOTEXIST") {
		return ErrNotFound
	}
	return nil
}

// snippet returns the start of a non-JSON error body.
func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

// ---- tokens ----

func (a *carrierA) project(isTest bool) (string, string, error) {
	if !isTest {
		if a.client.ClientID == "" || a.client.ClientSecret == "" {
			return "", "", notConfigured(CarrierA, "carrier_a platform client id/secret are not configured ("+EnvCarrierAClientID+", "+EnvCarrierAClientSecret+")")
		}
		return a.client.ClientID, a.client.ClientSecret, nil
	}
	id, secret := a.client.TestClientID, a.client.TestClientSecret
	if (id == "" || secret == "") && a.tr.sandbox {
		// The sandbox serves both environments with one project pair.
		id, secret = a.client.ClientID, a.client.ClientSecret
	}
	if id == "" || secret == "" {
		// The carrier's test environment has its own project keys: the
		// production pair is never sent there (nor used in its place).
		return "", "", notConfigured(CarrierA, "carrier_a test-environment client id/secret are not configured ("+EnvCarrierATestClientID+", "+EnvCarrierATestClientSecret+")")
	}
	return id, secret, nil
}

// tokenSource returns the cache key and fetcher of the token for an
// environment: csp_credentials with child keys, or client_credentials when
// childKey is empty.
func (a *carrierA) tokenSource(isTest bool, childKey, childSecret string) (string, fetchFunc, error) {
	id, secret, err := a.project(isTest)
	if err != nil {
		return "", nil, err
	}
	env := "prod"
	if isTest {
		env = "test"
	}
	key := tokenKey(env, id, secret, childKey, childSecret)
	fetch := func(ctx context.Context) (fetchedToken, error) {
		u, err := a.url(isTest, "/oauth/token")
		if err != nil {
			return fetchedToken{}, err
		}
		form := url.Values{"client_id": {id}, "client_secret": {secret}}
		if childKey != "" {
			form.Set("grant_type", "csp_credentials")
			form.Set("child_Key", childKey)
			form.Set("child_secret", childSecret)
		} else {
			form.Set("grant_type", "client_credentials")
		}
		resp, err := a.tr.do(ctx, call{method: http.MethodPost, url: u, form: form, isTest: isTest})
		if err != nil {
			return fetchedToken{}, err
		}
		if !resp.ok() {
			return fetchedToken{}, a.apiError(resp)
		}
		return a.tr.oauthToken(CarrierA, resp)
	}
	return key, fetch, nil
}

// accountCreds returns the account's number and child keys.
func (a *carrierA) accountCreds(acct Account) (string, string, string, error) {
	if err := a.checkAccount(acct); err != nil {
		return "", "", "", err
	}
	num, key, secret := acct.cred("accountNumber"), acct.cred("childKey"), acct.cred("childSecret")
	if num == "" || key == "" || secret == "" {
		return "", "", "", &Error{Carrier: CarrierA, Code: ErrCodeInvalid, Message: "account credentials need accountNumber, childKey and childSecret", kind: ErrUnauthorized}
	}
	return num, key, secret, nil
}

// send performs an authorized JSON call for an account and decodes a 2xx
// answer into out.
func (a *carrierA) send(ctx context.Context, acct Account, method, path string, body any, hdr http.Header, out any) (*response, error) {
	_, key, secret, err := a.accountCreds(acct)
	if err != nil {
		return nil, err
	}
	return a.sendWith(ctx, acct.IsTest, key, secret, method, path, body, hdr, out)
}

func (a *carrierA) sendWith(ctx context.Context, isTest bool, childKey, childSecret, method, path string, body any, hdr http.Header, out any) (*response, error) {
	u, err := a.url(isTest, path)
	if err != nil {
		return nil, err
	}
	cacheKey, fetch, err := a.tokenSource(isTest, childKey, childSecret)
	if err != nil {
		return nil, err
	}
	if hdr == nil {
		hdr = http.Header{}
	}
	hdr.Set("X-locale", "en_US")
	resp, err := withToken(ctx, a.tokens, cacheKey, fetch, func(token string) (*response, error) {
		return a.tr.do(ctx, call{method: method, url: u, json: body, header: hdr, bearer: token, isTest: isTest})
	})
	if err != nil {
		return nil, err
	}
	if !resp.ok() {
		return resp, a.apiError(resp)
	}
	if out != nil {
		if err := a.tr.decode(resp, out); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// ---- credentials test ----

// TestCredentials gets a token with the account's child keys and rates a
// one-pound parcel with the account number.
func (a *carrierA) TestCredentials(ctx context.Context, acct Account) error {
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return err
	}
	body := map[string]any{
		"accountNumber": fxValue{Value: num},
		"requestedShipment": map[string]any{
			"shipper":                   fxParty{Address: fxAddress{PostalCode: "38017", CountryCode: "US"}},
			"recipient":                 fxParty{Address: fxAddress{PostalCode: "38017", CountryCode: "US"}},
			"pickupType":                "DROPOFF_AT_FEDEX_LOCATION",
			"rateRequestType":           []string{"ACCOUNT"},
			"requestedPackageLineItems": []fxPackage{{Weight: fxWeight{Units: "LB", Value: 1}}},
		},
	}
	_, err = a.send(ctx, acct, http.MethodPost, "/rate/v1/rates/quotes", body, nil, nil)
	return err
}

// ---- rates ----

type fxCharge struct {
	Type          string    `json:"type"`
	SurchargeType string    `json:"surchargeType"`
	Description   string    `json:"description"`
	Amount        flexFloat `json:"amount"`
}

func (c fxCharge) name() string {
	for _, s := range []string{c.Description, c.Type, c.SurchargeType} {
		if s = trimSpace(s); s != "" {
			return s
		}
	}
	return "Surcharge"
}

type fxRateDetail struct {
	RateType           string    `json:"rateType"`
	TotalBaseCharge    flexFloat `json:"totalBaseCharge"`
	TotalNetCharge     flexFloat `json:"totalNetCharge"`
	TotalDiscounts     flexFloat `json:"totalDiscounts"`
	Currency           string    `json:"currency"`
	ShipmentRateDetail struct {
		RateZone           string     `json:"rateZone"`
		SurCharges         []fxCharge `json:"surCharges"`
		Surcharges         []fxCharge `json:"surcharges"`
		Taxes              []fxCharge `json:"taxes"`
		TotalBillingWeight struct {
			Units string    `json:"units"`
			Value flexFloat `json:"value"`
		} `json:"totalBillingWeight"`
		Currency string `json:"currency"`
	} `json:"shipmentRateDetail"`
}

type fxRateReplyDetail struct {
	ServiceType          string         `json:"serviceType"`
	ServiceName          string         `json:"serviceName"`
	RatedShipmentDetails []fxRateDetail `json:"ratedShipmentDetails"`
	OperationalDetail    struct {
		TransitTime                     string `json:"transitTime"`
		DeliveryDate                    string `json:"deliveryDate"`
		CommitDate                      string `json:"commitDate"`
		PublishedDeliveryTime           string `json:"publishedDeliveryTime"`
		IneligibleForMoneyBackGuarantee *bool  `json:"ineligibleForMoneyBackGuarantee"`
	} `json:"operationalDetail"`
	Commit struct {
		DaysInTransit string `json:"daysInTransit"`
		DateDetail    struct {
			DayOfWeek    string `json:"dayOfWeek"`
			DayCxsFormat string `json:"dayCxsFormat"`
		} `json:"dateDetail"`
	} `json:"commit"`
}

// pickRate chooses the ACCOUNT rate, else LIST, else the first.
func pickRate(ds []fxRateDetail) *fxRateDetail {
	for _, want := range []string{"ACCOUNT", "PAYOR_ACCOUNT_SHIPMENT", "PAYOR_ACCOUNT_PACKAGE", "LIST", "PAYOR_LIST_SHIPMENT"} {
		for i := range ds {
			if strings.EqualFold(ds[i].RateType, want) {
				return &ds[i]
			}
		}
	}
	if len(ds) > 0 {
		return &ds[0]
	}
	return nil
}

func (d *fxRateDetail) breakdown() []Charge {
	out := []Charge{{Name: "Base charge", Amount: round2(float64(d.TotalBaseCharge))}}
	if d.TotalDiscounts > 0 {
		out = append(out, Charge{Name: "Discount", Amount: -round2(float64(d.TotalDiscounts))})
	}
	sur := d.ShipmentRateDetail.SurCharges
	if len(sur) == 0 {
		sur = d.ShipmentRateDetail.Surcharges
	}
	for _, c := range append(sur, d.ShipmentRateDetail.Taxes...) {
		if c.Amount != 0 {
			out = append(out, Charge{Name: c.name(), Amount: round2(float64(c.Amount))})
		}
	}
	return out
}

func (d *fxRateDetail) currency() string {
	if d.Currency != "" {
		return d.Currency
	}
	return d.ShipmentRateDetail.Currency
}

func fxRateRequestBody(num string, req RateRequest, shipDate time.Time) map[string]any {
	rs := map[string]any{
		"shipper":                   fxParty{Address: fxAddr(req.ShipFrom)},
		"recipient":                 fxParty{Address: fxAddr(req.ShipTo)},
		"pickupType":                "DROPOFF_AT_FEDEX_LOCATION",
		"packagingType":             "YOUR_PACKAGING",
		"rateRequestType":           []string{"ACCOUNT", "LIST"},
		"shipDateStamp":             shipDate.Format("2006-01-02"),
		"preferredCurrency":         "USD",
		"requestedPackageLineItems": fxPackages(req.Packages, ""),
		"totalPackageCount":         len(req.Packages),
	}
	if req.ServiceType != "" {
		rs["serviceType"] = req.ServiceType
	}
	return map[string]any{
		"accountNumber":                fxValue{Value: num},
		"rateRequestControlParameters": map[string]any{"returnTransitTimes": true},
		"requestedShipment":            rs,
		"carrierCodes":                 []string{"FDXE", "FDXG"},
	}
}

// Rate implements Carrier.
func (a *carrierA) Rate(ctx context.Context, acct Account, req RateRequest) ([]Quote, error) {
	if err := validateShipment(CarrierA, req.ShipFrom, req.ShipTo, req.Packages); err != nil {
		return nil, err
	}
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return nil, err
	}
	shipDate := dateOrToday(req.ShipDate, a.now)
	var out struct {
		Output struct {
			RateReplyDetails []json.RawMessage `json:"rateReplyDetails"`
		} `json:"output"`
	}
	if _, err := a.send(ctx, acct, http.MethodPost, "/rate/v1/rates/quotes", fxRateRequestBody(num, req, shipDate), nil, &out); err != nil {
		return nil, err
	}
	quotes := make([]Quote, 0, len(out.Output.RateReplyDetails))
	for _, raw := range out.Output.RateReplyDetails {
		var d fxRateReplyDetail
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, badResponse(CarrierA, "rateReplyDetails entry is malformed", err)
		}
		rd := pickRate(d.RatedShipmentDetails)
		if rd == nil {
			continue
		}
		q := Quote{
			Carrier:     CarrierA,
			ServiceType: d.ServiceType,
			ServiceName: d.ServiceName,
			TotalPrice:  round2(float64(rd.TotalNetCharge)),
			Currency:    rd.currency(),
			Breakdown:   rd.breakdown(),
			Zone:        rd.ShipmentRateDetail.RateZone,
			Raw:         raw,
		}
		if w := rd.ShipmentRateDetail.TotalBillingWeight; w.Value > 0 {
			q.BillingWeight = &Weight{Value: float64(w.Value), Unit: strings.ToLower(strings.TrimSuffix(w.Units, "S"))}
		}
		q.TransitDays = transitDays(d.Commit.DaysInTransit)
		if q.TransitDays == nil {
			q.TransitDays = transitDays(d.OperationalDetail.TransitTime)
		}
		q.EstimatedDelivery = parseTime(d.Commit.DateDetail.DayCxsFormat)
		if q.EstimatedDelivery == nil {
			q.EstimatedDelivery = parseTime(d.OperationalDetail.DeliveryDate)
		}
		if g := d.OperationalDetail.IneligibleForMoneyBackGuarantee; g != nil && !*g {
			q.TransitDaysGuaranteed = true
		}
		q.DeliveryByTime = hhmm(d.OperationalDetail.PublishedDeliveryTime)
		quotes = append(quotes, q)
	}
	sortQuotes(quotes)
	return quotes, nil
}

func sortQuotes(qs []Quote) {
	sort.SliceStable(qs, func(i, j int) bool {
		if qs[i].TotalPrice != qs[j].TotalPrice {
			return qs[i].TotalPrice < qs[j].TotalPrice
		}
		return qs[i].ServiceType < qs[j].ServiceType
	})
}

// ---- labels ----

type fxShipResponse struct {
	Output struct {
		TransactionShipments []struct {
			MasterTrackingNumber string `json:"masterTrackingNumber"`
			ServiceType          string `json:"serviceType"`
			ServiceName          string `json:"serviceName"`
			ShipDatestamp        string `json:"shipDatestamp"`
			PieceResponses       []struct {
				TrackingNumber   string `json:"trackingNumber"`
				PackageDocuments []struct {
					ContentType  string `json:"contentType"`
					DocType      string `json:"docType"`
					EncodedLabel string `json:"encodedLabel"`
					URL          string `json:"url"`
				} `json:"packageDocuments"`
				NetChargeAmount flexFloat `json:"netChargeAmount"`
				NetRateAmount   flexFloat `json:"netRateAmount"`
				Currency        string    `json:"currency"`
			} `json:"pieceResponses"`
			CompletedShipmentDetail struct {
				OperationalDetail struct {
					DeliveryDate string `json:"deliveryDate"`
				} `json:"operationalDetail"`
				ShipmentRating struct {
					ActualRateType      string `json:"actualRateType"`
					ShipmentRateDetails []struct {
						RateType        string     `json:"rateType"`
						RateZone        string     `json:"rateZone"`
						TotalBaseCharge flexFloat  `json:"totalBaseCharge"`
						TotalNetCharge  flexFloat  `json:"totalNetCharge"`
						TotalDiscounts  flexFloat  `json:"totalDiscounts"`
						Surcharges      []fxCharge `json:"surcharges"`
						SurCharges      []fxCharge `json:"surCharges"`
						Taxes           []fxCharge `json:"taxes"`
						Currency        string     `json:"currency"`
					} `json:"shipmentRateDetails"`
				} `json:"shipmentRating"`
			} `json:"completedShipmentDetail"`
		} `json:"transactionShipments"`
	} `json:"output"`
}

func labelFormat(f string) (string, error) {
	switch strings.ToUpper(trimSpace(f)) {
	case "", FormatPDF:
		return FormatPDF, nil
	case FormatZPL, "ZPLII":
		return FormatZPL, nil
	}
	return "", fmt.Errorf("label format must be PDF or ZPL")
}

func contentTypeOf(format string) string {
	if format == FormatZPL {
		return "application/x-zpl"
	}
	return "application/pdf"
}

// CreateLabel implements Carrier.
func (a *carrierA) CreateLabel(ctx context.Context, acct Account, req LabelRequest) (*Label, error) {
	if err := validateShipment(CarrierA, req.ShipFrom, req.ShipTo, req.Packages); err != nil {
		return nil, err
	}
	if trimSpace(req.ServiceType) == "" {
		return nil, invalidRequest(CarrierA, "serviceType is required")
	}
	format, err := labelFormat(req.Format)
	if err != nil {
		return nil, invalidRequest(CarrierA, err.Error())
	}
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return nil, err
	}
	imageType, stock := "PDF", "PAPER_4X6"
	if format == FormatZPL {
		imageType, stock = "ZPLII", "STOCK_4X6"
	}
	shipDate := dateOrToday(req.ShipDate, a.now)
	body := map[string]any{
		"labelResponseOptions": "LABEL",
		"accountNumber":        fxValue{Value: num},
		"requestedShipment": map[string]any{
			"shipDatestamp":             shipDate.Format("2006-01-02"),
			"pickupType":                "USE_SCHEDULED_PICKUP",
			"serviceType":               req.ServiceType,
			"packagingType":             "YOUR_PACKAGING",
			"shipper":                   fxParty{Contact: fxContactOf(req.ShipFrom), Address: fxAddr(req.ShipFrom)},
			"recipients":                []fxParty{{Contact: fxContactOf(req.ShipTo), Address: fxAddr(req.ShipTo)}},
			"shippingChargesPayment":    map[string]any{"paymentType": "SENDER"},
			"labelSpecification":        map[string]any{"imageType": imageType, "labelStockType": stock},
			"rateRequestType":           []string{"ACCOUNT", "LIST"},
			"requestedPackageLineItems": fxPackages(req.Packages, req.Reference),
			"totalPackageCount":         len(req.Packages),
		},
	}
	hdr := http.Header{}
	if req.Reference != "" {
		hdr.Set("x-customer-transaction-id", truncate(req.Reference, 64))
	}
	var out fxShipResponse
	resp, err := a.send(ctx, acct, http.MethodPost, "/ship/v1/shipments", body, hdr, &out)
	if err != nil {
		return nil, err
	}
	if len(out.Output.TransactionShipments) == 0 {
		return nil, badResponse(CarrierA, "ship response has no transactionShipments", nil)
	}
	ts := out.Output.TransactionShipments[0]
	label := &Label{
		TrackingNumber: ts.MasterTrackingNumber,
		ServiceType:    ts.ServiceType,
		ServiceName:    ts.ServiceName,
		Format:         format,
		ContentType:    contentTypeOf(format),
		ShipDate:       shipDate,
		Raw:            stripKeys(resp.body, "encodedLabel"),
	}
	if t := parseTime(ts.ShipDatestamp); t != nil {
		label.ShipDate = *t
	}
	label.EstimatedDelivery = parseTime(ts.CompletedShipmentDetail.OperationalDetail.DeliveryDate)
	for _, p := range ts.PieceResponses {
		var doc []byte
		for _, d := range p.PackageDocuments {
			if d.EncodedLabel == "" || (d.ContentType != "" && !strings.EqualFold(d.ContentType, "LABEL")) {
				continue
			}
			doc, err = base64.StdEncoding.DecodeString(d.EncodedLabel)
			if err != nil {
				return nil, badResponse(CarrierA, "encodedLabel is not base64", err)
			}
			break
		}
		if doc == nil {
			return nil, badResponse(CarrierA, "no label document for package "+p.TrackingNumber, nil)
		}
		label.Pieces = append(label.Pieces, LabelPiece{TrackingNumber: p.TrackingNumber, Document: doc})
	}
	if len(label.Pieces) == 0 {
		return nil, badResponse(CarrierA, "ship response has no pieceResponses", nil)
	}
	label.Document = label.Pieces[0].Document
	if label.TrackingNumber == "" {
		label.TrackingNumber = label.Pieces[0].TrackingNumber
	}
	// Price: the actual rate type's shipment rate, else the pieces' sum.
	rating := ts.CompletedShipmentDetail.ShipmentRating
	for i, d := range rating.ShipmentRateDetails {
		if i == 0 || strings.EqualFold(d.RateType, rating.ActualRateType) {
			label.TotalPrice, label.Currency, label.Zone = round2(float64(d.TotalNetCharge)), d.Currency, d.RateZone
			rd := fxRateDetail{TotalBaseCharge: d.TotalBaseCharge, TotalDiscounts: d.TotalDiscounts}
			rd.ShipmentRateDetail.Surcharges = append(d.Surcharges, d.SurCharges...)
			rd.ShipmentRateDetail.Taxes = d.Taxes
			label.Breakdown = rd.breakdown()
		}
	}
	if label.TotalPrice == 0 {
		for _, p := range ts.PieceResponses {
			amt := p.NetChargeAmount
			if amt == 0 {
				amt = p.NetRateAmount
			}
			label.TotalPrice += float64(amt)
			if label.Currency == "" {
				label.Currency = p.Currency
			}
		}
		label.TotalPrice = round2(label.TotalPrice)
	}
	if label.Currency == "" {
		label.Currency = "USD"
	}
	return label, nil
}

// VoidLabel implements Carrier (PUT /ship/v1/shipments/cancel).
func (a *carrierA) VoidLabel(ctx context.Context, acct Account, trackingNumber string) error {
	trackingNumber = trimSpace(trackingNumber)
	if trackingNumber == "" {
		return invalidRequest(CarrierA, "tracking number is required")
	}
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return err
	}
	body := map[string]any{
		"accountNumber":   fxValue{Value: num},
		"trackingNumber":  trackingNumber,
		"deletionControl": "DELETE_ALL_PACKAGES",
		"emailShipment":   false,
	}
	var out struct {
		Output struct {
			CancelledShipment bool      `json:"cancelledShipment"`
			Message           string    `json:"message"`
			SuccessMessage    string    `json:"successMessage"`
			Alerts            []fxAlert `json:"alerts"`
		} `json:"output"`
	}
	if _, err := a.send(ctx, acct, http.MethodPut, "/ship/v1/shipments/cancel", body, nil, &out); err != nil {
		return err
	}
	if !out.Output.CancelledShipment {
		msg := out.Output.Message
		if msg == "" {
			msg = "the carrier did not cancel the shipment"
		}
		return &Error{Carrier: CarrierA, Code: "SHIPMENT.NOT.CANCELLED", Message: msg, StatusCode: http.StatusOK, kind: ErrInvalidRequest}
	}
	return nil
}

// ---- tracking ----

type fxLocation struct {
	StreetLines         []string `json:"streetLines"`
	City                string   `json:"city"`
	StateOrProvinceCode string   `json:"stateOrProvinceCode"`
	PostalCode          string   `json:"postalCode"`
	CountryCode         string   `json:"countryCode"`
	CountryName         string   `json:"countryName"`
	Residential         bool     `json:"residential"`
}

func (l fxLocation) address() *Address {
	if l.City == "" && l.PostalCode == "" && l.StateOrProvinceCode == "" && l.CountryCode == "" {
		return nil
	}
	a := &Address{City: l.City, ProvinceCode: l.StateOrProvinceCode, Zip: l.PostalCode, CountryCode: l.CountryCode, Country: l.CountryName, Residential: l.Residential}
	if len(l.StreetLines) > 0 {
		a.Address1 = l.StreetLines[0]
	}
	if len(l.StreetLines) > 1 {
		a.Address2 = l.StreetLines[1]
	}
	return withCoordinates(a)
}

type fxTrackResult struct {
	TrackingNumberInfo struct {
		TrackingNumber string `json:"trackingNumber"`
	} `json:"trackingNumberInfo"`
	LatestStatusDetail struct {
		Code           string     `json:"code"`
		DerivedCode    string     `json:"derivedCode"`
		StatusByLocale string     `json:"statusByLocale"`
		Description    string     `json:"description"`
		ScanLocation   fxLocation `json:"scanLocation"`
	} `json:"latestStatusDetail"`
	DateAndTimes []struct {
		Type     string `json:"type"`
		DateTime string `json:"dateTime"`
	} `json:"dateAndTimes"`
	ScanEvents []struct {
		Date                 string     `json:"date"`
		EventType            string     `json:"eventType"`
		EventDescription     string     `json:"eventDescription"`
		DerivedStatusCode    string     `json:"derivedStatusCode"`
		DerivedStatus        string     `json:"derivedStatus"`
		ExceptionCode        string     `json:"exceptionCode"`
		ExceptionDescription string     `json:"exceptionDescription"`
		ScanLocation         fxLocation `json:"scanLocation"`
	} `json:"scanEvents"`
	ServiceDetail struct {
		Type        string `json:"type"`
		Description string `json:"description"`
	} `json:"serviceDetail"`
	PackageDetails struct {
		WeightAndDimensions struct {
			Weight []struct {
				Unit  string    `json:"unit"`
				Value flexFloat `json:"value"`
			} `json:"weight"`
		} `json:"weightAndDimensions"`
	} `json:"packageDetails"`
	ShipperInformation struct {
		Address fxLocation `json:"address"`
	} `json:"shipperInformation"`
	RecipientInformation struct {
		Address fxLocation `json:"address"`
	} `json:"recipientInformation"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// fxStatus maps a FedEx scan / status code to a normalized status.
func fxStatus(code string) string {
	switch strings.ToUpper(trimSpace(code)) {
	case "OC", "LP", "IN":
		return StatusLabelCreated
	case "OD":
		return StatusOutForDelivery
	case "DL":
		return StatusDelivered
	case "DE", "SE", "CA", "RS", "DY", "DD", "CD", "RG":
		return StatusException
	case "":
		return ""
	}
	return StatusInTransit
}

// Track implements Carrier: batches of 30 numbers per call.
func (a *carrierA) Track(ctx context.Context, acct Account, trackingNumbers []string) ([]TrackResult, error) {
	if _, _, _, err := a.accountCreds(acct); err != nil {
		return nil, err
	}
	nums := dedupe(trackingNumbers)
	results := make(map[string]TrackResult, len(nums))
	for start := 0; start < len(nums); start += carrierATrackBatch {
		chunk := nums[start:min(start+carrierATrackBatch, len(nums))]
		info := make([]map[string]any, 0, len(chunk))
		for _, n := range chunk {
			info = append(info, map[string]any{"trackingNumberInfo": map[string]any{"trackingNumber": n}})
		}
		var out struct {
			Output struct {
				CompleteTrackResults []struct {
					TrackingNumber string            `json:"trackingNumber"`
					TrackResults   []json.RawMessage `json:"trackResults"`
				} `json:"completeTrackResults"`
			} `json:"output"`
		}
		body := map[string]any{"includeDetailedScans": true, "trackingInfo": info}
		if _, err := a.send(ctx, acct, http.MethodPost, "/track/v1/trackingnumbers", body, nil, &out); err != nil {
			return nil, err
		}
		for _, c := range out.Output.CompleteTrackResults {
			if len(c.TrackResults) == 0 {
				continue
			}
			tr, err := fxTrack(c.TrackingNumber, c.TrackResults[0])
			if err != nil {
				return nil, err
			}
			results[c.TrackingNumber] = tr
		}
	}
	out := make([]TrackResult, 0, len(nums))
	for _, n := range nums {
		r, ok := results[n]
		if !ok {
			r = TrackResult{TrackingNumber: n, NotFound: true}
		}
		out = append(out, r)
	}
	return out, nil
}

func fxTrack(number string, raw json.RawMessage) (TrackResult, error) {
	var t fxTrackResult
	if err := json.Unmarshal(raw, &t); err != nil {
		return TrackResult{}, badResponse(CarrierA, "trackResults entry is malformed", err)
	}
	if number == "" {
		number = t.TrackingNumberInfo.TrackingNumber
	}
	r := TrackResult{TrackingNumber: number, Raw: raw}
	hasData := len(t.ScanEvents) > 0 || t.LatestStatusDetail.Code != "" || t.LatestStatusDetail.DerivedCode != ""
	if t.Error != nil && t.Error.Code != "" {
		if strings.Contains(t.Error.Code, "NOTFOUND") {
			return TrackResult{TrackingNumber: number, NotFound: true, Raw: raw}, nil
		}
		if !hasData {
			r.Error = t.Error.Code + ": " + t.Error.Message
			return r, nil
		}
	}
	for _, e := range t.ScanEvents {
		ts := parseTime(e.Date)
		if ts == nil {
			continue
		}
		code := e.DerivedStatusCode
		if code == "" {
			code = e.EventType
		}
		ev := TrackEvent{
			EventID:      digest(number, e.Date, e.EventType, e.ScanLocation.City, e.ScanLocation.PostalCode),
			Status:       fxStatus(code),
			StatusDetail: e.EventType,
			Description:  firstNonEmpty(e.EventDescription, e.DerivedStatus),
			City:         e.ScanLocation.City,
			State:        e.ScanLocation.StateOrProvinceCode,
			Country:      e.ScanLocation.CountryName,
			CountryCode:  e.ScanLocation.CountryCode,
			Zip:          e.ScanLocation.PostalCode,
			Time:         *ts,
		}
		if e.ExceptionCode != "" || ev.Status == StatusException {
			ev.IsException = true
			ev.ExceptionType = firstNonEmpty(e.ExceptionCode, e.EventType)
			if e.ExceptionDescription != "" && !strings.Contains(ev.Description, e.ExceptionDescription) {
				ev.Description = strings.TrimSpace(ev.Description + " — " + e.ExceptionDescription)
			}
		}
		ev.Latitude, ev.Longitude = geocode(ev.City, ev.State, ev.CountryCode)
		r.Events = append(r.Events, ev)
	}
	sort.SliceStable(r.Events, func(i, j int) bool { return r.Events[i].Time.Before(r.Events[j].Time) })

	latest := firstNonEmpty(t.LatestStatusDetail.DerivedCode, t.LatestStatusDetail.Code)
	r.Status = fxStatus(latest)
	r.StatusDetail = firstNonEmpty(t.LatestStatusDetail.Description, t.LatestStatusDetail.StatusByLocale)
	if r.Status == "" && len(r.Events) > 0 {
		last := r.Events[len(r.Events)-1]
		r.Status, r.StatusDetail = last.Status, last.Description
	}
	if r.Status == "" {
		r.Status = StatusLabelCreated
	}
	r.ServiceType, r.ServiceName = t.ServiceDetail.Type, t.ServiceDetail.Description
	r.Origin = t.ShipperInformation.Address.address()
	r.Destination = t.RecipientInformation.Address.address()
	for _, w := range t.PackageDetails.WeightAndDimensions.Weight {
		if w.Value > 0 {
			unit := UnitLB
			if strings.HasPrefix(strings.ToUpper(w.Unit), "K") {
				unit = UnitKG
			}
			r.Weight = &Weight{Value: float64(w.Value), Unit: unit}
			break
		}
	}
	for _, d := range t.DateAndTimes {
		ts := parseTime(d.DateTime)
		if ts == nil {
			continue
		}
		switch d.Type {
		case "SHIP", "ACTUAL_PICKUP":
			if r.ShipDate == nil || ts.Before(*r.ShipDate) {
				r.ShipDate = ts
			}
		case "ACTUAL_DELIVERY":
			r.DeliveredAt = ts
		case "ESTIMATED_DELIVERY":
			r.EstimatedDelivery = ts
		}
	}
	if r.DeliveredAt == nil && r.Status == StatusDelivered && len(r.Events) > 0 {
		t := r.Events[len(r.Events)-1].Time
		r.DeliveredAt = &t
	}
	return r, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v = trimSpace(v); v != "" {
			return v
		}
	}
	return ""
}

// ---- pickups ----

func pickupCarrierCode(c string) (string, error) {
	switch strings.ToUpper(trimSpace(c)) {
	case "", "FDXG":
		return "FDXG", nil
	case "FDXE":
		return "FDXE", nil
	}
	return "", fmt.Errorf("carrierCode must be FDXG or FDXE")
}

// CreatePickup implements Carrier (POST /pickup/v1/pickups).
func (a *carrierA) CreatePickup(ctx context.Context, acct Account, req PickupRequest) (*PickupResult, error) {
	var problems []string
	if !validDate(req.PickupDate) {
		problems = append(problems, "pickupDate must be YYYY-MM-DD")
	}
	if !reHHMM.MatchString(req.ReadyTime) {
		problems = append(problems, "readyTime must be HH:MM")
	}
	if !reHHMM.MatchString(req.CloseTime) {
		problems = append(problems, "closeTime must be HH:MM")
	}
	if reHHMM.MatchString(req.ReadyTime) && reHHMM.MatchString(req.CloseTime) && req.CloseTime <= req.ReadyTime {
		problems = append(problems, "closeTime must be after readyTime")
	}
	if trimSpace(req.Address.Zip) == "" || trimSpace(req.Address.Address1) == "" || trimSpace(req.Address.City) == "" {
		problems = append(problems, "pickupAddress needs address1, city and zip")
	}
	code, err := pickupCarrierCode(req.CarrierCode)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if req.PackageCount < 0 {
		problems = append(problems, "packageCount must not be negative")
	}
	if len(problems) > 0 {
		return nil, invalidRequest(CarrierA, strings.Join(problems, "; "))
	}
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return nil, err
	}
	count := req.PackageCount
	if count == 0 {
		count = 1
	}
	contact := fxContactOf(req.Address)
	if n := trimSpace(req.ContactName); n != "" {
		contact.PersonName = n
	}
	if p := digitsOnly(req.ContactPhone); p != "" {
		contact.PhoneNumber = p
	}
	// The ready time is the pickup location's local time, and "same day"
	// is judged on that location's calendar, not UTC's.
	ready, sameDay := localPickupTime(req.Address, req.PickupDate, req.ReadyTime, a.now())
	dateType := "FUTURE_DAY"
	if sameDay {
		dateType = "SAME_DAY"
	}
	relationship := "DOMESTIC"
	if countryCode(req.Address) != "US" {
		relationship = "INTERNATIONAL"
	}
	body := map[string]any{
		"associatedAccountNumber": fxValue{Value: num},
		"originDetail": map[string]any{
			"pickupLocation":     fxParty{Contact: contact, Address: fxAddr(req.Address)},
			"readyDateTimestamp": ready,
			"customerCloseTime":  req.CloseTime + ":00",
			"pickupDateType":     dateType,
			"packageLocation":    "FRONT",
		},
		"carrierCode":          code,
		"packageCount":         count,
		"countryRelationships": relationship,
	}
	if req.TotalWeight != nil && req.TotalWeight.Value > 0 {
		body["totalWeight"] = fxWeight{Units: "LB", Value: math.Ceil(weightLB(*req.TotalWeight)*10) / 10}
	}
	if r := trimSpace(req.Remarks); r != "" {
		body["remarks"] = truncate(r, 60)
	}
	var out struct {
		Output struct {
			PickupConfirmationCode string    `json:"pickupConfirmationCode"`
			Message                string    `json:"message"`
			Location               string    `json:"location"`
			Alerts                 []fxAlert `json:"alerts"`
		} `json:"output"`
	}
	resp, err := a.send(ctx, acct, http.MethodPost, "/pickup/v1/pickups", body, nil, &out)
	if err != nil {
		return nil, err
	}
	if out.Output.PickupConfirmationCode == "" {
		return nil, badResponse(CarrierA, "pickup response has no pickupConfirmationCode", nil)
	}
	return &PickupResult{
		ConfirmationNumber: out.Output.PickupConfirmationCode,
		Location:           out.Output.Location,
		Messages:           alertMessages(out.Output.Message, out.Output.Alerts),
		Raw:                resp.body,
	}, nil
}

func alertMessages(first string, alerts []fxAlert) []string {
	msgs := []string{}
	if first = trimSpace(first); first != "" {
		msgs = append(msgs, first)
	}
	for _, al := range alerts {
		if m := trimSpace(al.Message); m != "" {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// CancelPickup implements Carrier (PUT /pickup/v1/pickups/cancel).
func (a *carrierA) CancelPickup(ctx context.Context, acct Account, req CancelPickupRequest) (*CancelPickupResult, error) {
	var problems []string
	if trimSpace(req.ConfirmationNumber) == "" {
		problems = append(problems, "confirmationNumber is required")
	}
	if !validDate(req.PickupDate) {
		problems = append(problems, "pickupDate must be YYYY-MM-DD")
	}
	code, err := pickupCarrierCode(req.CarrierCode)
	if err != nil {
		problems = append(problems, err.Error())
	}
	if len(problems) > 0 {
		return nil, invalidRequest(CarrierA, strings.Join(problems, "; "))
	}
	num, _, _, err := a.accountCreds(acct)
	if err != nil {
		return nil, err
	}
	body := map[string]any{
		"associatedAccountNumber": fxValue{Value: num},
		"pickupConfirmationCode":  trimSpace(req.ConfirmationNumber),
		"scheduledDate":           req.PickupDate,
		"carrierCode":             code,
	}
	if l := trimSpace(req.Location); l != "" {
		body["location"] = l
	}
	if r := trimSpace(req.Reason); r != "" {
		body["remarks"] = truncate(r, 60)
	}
	var out struct {
		Output struct {
			PickupConfirmationCode    string    `json:"pickupConfirmationCode"`
			CancelConfirmationMessage string    `json:"cancelConfirmationMessage"`
			Alerts                    []fxAlert `json:"alerts"`
		} `json:"output"`
	}
	resp, err := a.send(ctx, acct, http.MethodPut, "/pickup/v1/pickups/cancel", body, nil, &out)
	if err != nil {
		return nil, err
	}
	return &CancelPickupResult{Messages: alertMessages(out.Output.CancelConfirmationMessage, out.Output.Alerts), Raw: resp.body}, nil
}

// ---- shipment actions ----

// ValidateAction checks a delivery change's fields; an adapter that sends
// delivery changes calls it first.
func ValidateAction(carrier string, act ShipmentAction) error {
	var problems []string
	if trimSpace(act.TrackingNumber) == "" {
		problems = append(problems, "trackingNumber is required")
	}
	switch act.Type {
	case ActionHold:
		switch act.Reason {
		case "", "customer_request", "address_issue", "payment_issue", "inventory_issue", "other":
		default:
			problems = append(problems, "reason must be customer_request, address_issue, payment_issue, inventory_issue or other")
		}
	case ActionRedirect:
		if act.Address == nil || trimSpace(act.Address.Zip) == "" {
			problems = append(problems, "address.zip is required")
		}
	case ActionRedeliver:
		if act.PreferredDate != "" && !validDate(act.PreferredDate) {
			problems = append(problems, "preferredDate must be YYYY-MM-DD")
		}
	case ActionInstructions:
		if trimSpace(act.Instructions) == "" {
			problems = append(problems, "instructions is required")
		}
	default:
		problems = append(problems, "type must be hold, redirect, redeliver or instructions")
	}
	if len(act.Notes) > 500 || len(act.Instructions) > 500 {
		problems = append(problems, "notes and instructions are at most 500 characters")
	}
	if len(problems) > 0 {
		return invalidRequest(carrier, strings.Join(problems, "; "))
	}
	return nil
}

// noDeliveryChanges is SendAction of a carrier that publishes no API for
// delivery changes (hold, redirect, redeliver, instructions): FedEx's and
// UPS's are customer-facing products (Delivery Manager, My Choice) without
// a public REST endpoint, so nothing is sent.
func noDeliveryChanges(carrier string) error {
	return notSupported(carrier, "delivery changes (hold, redirect, redeliver, instructions): the carrier publishes no API for them")
}

// SendAction implements Carrier: not supported (noDeliveryChanges).
func (a *carrierA) SendAction(context.Context, Account, ShipmentAction) (*ActionResult, error) {
	return nil, noDeliveryChanges(CarrierA)
}
