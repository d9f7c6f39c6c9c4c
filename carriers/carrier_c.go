package carriers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// carrierC is a rating-only carrier authenticated by a single apiKey. It
// speaks the single-key rate-estimate wire format (CONTRACT 8a, the
// "Alternative" section of vendors/carriers/carrier_c/README.md): an
// api-key header, GET /v1/carriers to learn the account's carrier ids
// (also the credentials test) and POST /v1/rates/estimate, one package
// per estimate.
type carrierC struct {
	*base

	mu         sync.Mutex
	carrierIDs map[string]carrierIDsEntry // by digest of env + api key
}

type carrierIDsEntry struct {
	ids     []string
	expires time.Time
}

// carrierIDsTTL is how long the account's carrier ids are reused.
const carrierIDsTTL = time.Hour

func (c *carrierC) Code() string { return CarrierC }

func (c *carrierC) Capabilities() Capabilities { return Capabilities{Rating: true} }

// ValidateCredentials: apiKey.
func (c *carrierC) ValidateCredentials(creds map[string]any) []FieldError {
	return requireStrings(creds, "apiKey")
}

type seErrorBody struct {
	RequestID string `json:"request_id"`
	Errors    []struct {
		ErrorSource string `json:"error_source"`
		ErrorType   string `json:"error_type"`
		ErrorCode   string `json:"error_code"`
		Message     string `json:"message"`
	} `json:"errors"`
}

func (c *carrierC) apiError(resp *response) *Error {
	var body seErrorBody
	_ = json.Unmarshal(resp.body, &body)
	code, msgs := "", []string{}
	for _, e := range body.Errors {
		if code == "" {
			code = e.ErrorCode
		}
		if e.Message != "" {
			msgs = append(msgs, strings.TrimSpace(e.Message))
		}
	}
	msg := strings.Join(msgs, "; ")
	if msg == "" && len(body.Errors) == 0 {
		msg = snippet(resp.body)
	}
	var kind error
	if code == "unauthorized" || code == "forbidden" {
		kind = ErrUnauthorized
	}
	// A 429 carries Retry-After (seconds to wait).
	return rateLimited(statusError(CarrierC, resp.status, code, msg, kind), resp.header, c.now(), nil)
}

func (c *carrierC) apiKey(acct Account) (string, error) {
	if err := c.checkAccount(acct); err != nil {
		return "", err
	}
	k := acct.cred("apiKey")
	if k == "" {
		return "", &Error{Carrier: CarrierC, Code: ErrCodeInvalid, Message: "account credentials need apiKey", kind: ErrUnauthorized}
	}
	return k, nil
}

func (c *carrierC) send(ctx context.Context, acct Account, method, path string, body any, out any) (*response, error) {
	key, err := c.apiKey(acct)
	if err != nil {
		return nil, err
	}
	u, err := c.url(acct.IsTest, path)
	if err != nil {
		return nil, err
	}
	resp, err := c.tr.do(ctx, call{method: method, url: u, json: body, header: http.Header{"api-key": {key}}, isTest: acct.IsTest})
	if err != nil {
		return nil, err
	}
	if !resp.ok() {
		return resp, c.apiError(resp)
	}
	if out != nil {
		if err := c.tr.decode(resp, out); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

// ids returns the account's carrier ids (GET /v1/carriers), cached.
func (c *carrierC) ids(ctx context.Context, acct Account, fresh bool) ([]string, error) {
	key, err := c.apiKey(acct)
	if err != nil {
		return nil, err
	}
	cacheKey := tokenKey(map[bool]string{true: "test", false: "prod"}[acct.IsTest], key)
	now := c.now()
	if !fresh {
		c.mu.Lock()
		e, ok := c.carrierIDs[cacheKey]
		c.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.ids, nil
		}
	}
	var out struct {
		Carriers []struct {
			CarrierID string `json:"carrier_id"`
		} `json:"carriers"`
	}
	if _, err := c.send(ctx, acct, http.MethodGet, "/v1/carriers", nil, &out); err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(out.Carriers))
	for _, cr := range out.Carriers {
		if cr.CarrierID != "" {
			ids = append(ids, cr.CarrierID)
		}
	}
	if len(ids) == 0 {
		return nil, &Error{Carrier: CarrierC, Code: "no_carriers", Message: "the account has no carriers connected", StatusCode: http.StatusOK, kind: ErrInvalidRequest}
	}
	c.mu.Lock()
	if len(c.carrierIDs) >= maxTokenEntries {
		for k, e := range c.carrierIDs {
			if !now.Before(e.expires) {
				delete(c.carrierIDs, k)
			}
		}
	}
	c.carrierIDs[cacheKey] = carrierIDsEntry{ids: ids, expires: now.Add(carrierIDsTTL)}
	c.mu.Unlock()
	return ids, nil
}

// TestCredentials lists the account's carriers (GET /v1/carriers).
func (c *carrierC) TestCredentials(ctx context.Context, acct Account) error {
	_, err := c.ids(ctx, acct, true)
	return err
}

type seMoney struct {
	Currency string    `json:"currency"`
	Amount   flexFloat `json:"amount"`
}

type seRate struct {
	ServiceCode           string   `json:"service_code"`
	ServiceType           string   `json:"service_type"`
	ShippingAmount        seMoney  `json:"shipping_amount"`
	InsuranceAmount       seMoney  `json:"insurance_amount"`
	ConfirmationAmount    seMoney  `json:"confirmation_amount"`
	OtherAmount           seMoney  `json:"other_amount"`
	TaxAmount             *seMoney `json:"tax_amount"`
	Zone                  *int     `json:"zone"`
	DeliveryDays          *int     `json:"delivery_days"`
	GuaranteedService     bool     `json:"guaranteed_service"`
	EstimatedDeliveryDate string   `json:"estimated_delivery_date"`
	ErrorMessages         []string `json:"error_messages"`
	CarrierCode           string   `json:"carrier_code"`
	ValidationStatus      string   `json:"validation_status"`
}

// Rate implements Carrier: one estimate per package, summed per service
// (a service is quoted only when every package can use it).
func (c *carrierC) Rate(ctx context.Context, acct Account, req RateRequest) ([]Quote, error) {
	if err := validateShipment(CarrierC, req.ShipFrom, req.ShipTo, req.Packages); err != nil {
		return nil, err
	}
	// The estimate requires both addresses' city_locality and
	// state_province (not just the postal codes).
	var problems []string
	for _, x := range []struct {
		name string
		a    Address
	}{{"shipFrom", req.ShipFrom}, {"shipTo", req.ShipTo}} {
		if trimSpace(x.a.City) == "" {
			problems = append(problems, x.name+".city is required by "+CarrierC)
		}
		if stateCode(x.a) == "" {
			problems = append(problems, x.name+".provinceCode is required by "+CarrierC)
		}
	}
	if len(problems) > 0 {
		return nil, invalidRequest(CarrierC, strings.Join(problems, "; "))
	}
	ids, err := c.ids(ctx, acct, false)
	if err != nil {
		return nil, err
	}
	shipDate := dateOrToday(req.ShipDate, c.now)
	type agg struct {
		q     Quote
		count int
		raws  []json.RawMessage
	}
	byService := map[string]*agg{}
	var order []string
	refreshed := false
	for _, p := range req.Packages {
		body := map[string]any{
			"carrier_ids":                   ids,
			"from_country_code":             countryCode(req.ShipFrom),
			"from_postal_code":              trimSpace(req.ShipFrom.Zip),
			"from_city_locality":            trimSpace(req.ShipFrom.City),
			"from_state_province":           stateCode(req.ShipFrom),
			"to_country_code":               countryCode(req.ShipTo),
			"to_postal_code":                trimSpace(req.ShipTo.Zip),
			"to_city_locality":              trimSpace(req.ShipTo.City),
			"to_state_province":             stateCode(req.ShipTo),
			"weight":                        map[string]any{"value": round2(weightLB(p.Weight)), "unit": "pound"},
			"confirmation":                  "none",
			"address_residential_indicator": map[bool]string{true: "yes", false: "no"}[req.ShipTo.Residential],
			"ship_date":                     shipDate.Format(time.RFC3339),
		}
		if hasDims(p) {
			body["dimensions"] = map[string]any{
				"unit":   "inch",
				"length": round2(lengthIN(p.Length, p.DimensionUnit)),
				"width":  round2(lengthIN(p.Width, p.DimensionUnit)),
				"height": round2(lengthIN(p.Height, p.DimensionUnit)),
			}
		}
		var rates []json.RawMessage
		_, err := c.send(ctx, acct, http.MethodPost, "/v1/rates/estimate", body, &rates)
		if ce, ok := AsError(err); ok && ce.Code == "invalid_identifier" && !refreshed {
			// The cached carrier ids went stale: look them up again, once.
			refreshed = true
			if ids, err = c.ids(ctx, acct, true); err != nil {
				return nil, err
			}
			body["carrier_ids"] = ids
			_, err = c.send(ctx, acct, http.MethodPost, "/v1/rates/estimate", body, &rates)
		}
		if err != nil {
			return nil, err
		}
		for _, raw := range rates {
			var r seRate
			if err := json.Unmarshal(raw, &r); err != nil {
				return nil, badResponse(CarrierC, "rate entry is malformed", err)
			}
			if len(r.ErrorMessages) > 0 || r.ServiceCode == "" || strings.EqualFold(r.ValidationStatus, "invalid") {
				continue
			}
			if req.ServiceType != "" && r.ServiceCode != req.ServiceType {
				continue
			}
			a := byService[r.ServiceCode]
			if a == nil {
				a = &agg{q: Quote{Carrier: CarrierC, ServiceType: r.ServiceCode, ServiceName: r.ServiceType, Currency: strings.ToUpper(firstNonEmpty(r.ShippingAmount.Currency, "usd"))}}
				byService[r.ServiceCode] = a
				order = append(order, r.ServiceCode)
			}
			a.count++
			a.raws = append(a.raws, raw)
			parts := []Charge{
				{Name: "Shipping", Amount: float64(r.ShippingAmount.Amount)},
				{Name: "Insurance", Amount: float64(r.InsuranceAmount.Amount)},
				{Name: "Confirmation", Amount: float64(r.ConfirmationAmount.Amount)},
				{Name: "Other", Amount: float64(r.OtherAmount.Amount)},
			}
			if r.TaxAmount != nil {
				parts = append(parts, Charge{Name: "Tax", Amount: float64(r.TaxAmount.Amount)})
			}
			for _, pc := range parts {
				if pc.Amount == 0 {
					continue
				}
				a.q.TotalPrice += pc.Amount
				found := false
				for i := range a.q.Breakdown {
					if a.q.Breakdown[i].Name == pc.Name {
						a.q.Breakdown[i].Amount += pc.Amount
						found = true
					}
				}
				if !found {
					a.q.Breakdown = append(a.q.Breakdown, pc)
				}
			}
			if r.DeliveryDays != nil && (a.q.TransitDays == nil || *r.DeliveryDays > *a.q.TransitDays) {
				a.q.TransitDays = intPtr(*r.DeliveryDays)
			}
			if t := parseTime(r.EstimatedDeliveryDate); t != nil && (a.q.EstimatedDelivery == nil || t.After(*a.q.EstimatedDelivery)) {
				a.q.EstimatedDelivery = t
			}
			a.q.TransitDaysGuaranteed = r.GuaranteedService
			if r.Zone != nil {
				a.q.Zone = itoa(*r.Zone)
			}
		}
	}
	quotes := make([]Quote, 0, len(order))
	for _, code := range order {
		a := byService[code]
		if a.count != len(req.Packages) {
			continue
		}
		a.q.TotalPrice = round2(a.q.TotalPrice)
		for i := range a.q.Breakdown {
			a.q.Breakdown[i].Amount = round2(a.q.Breakdown[i].Amount)
		}
		if len(a.raws) == 1 {
			a.q.Raw = a.raws[0]
		} else {
			a.q.Raw, _ = json.Marshal(a.raws)
		}
		quotes = append(quotes, a.q)
	}
	sortQuotes(quotes)
	return quotes, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func (c *carrierC) CreateLabel(context.Context, Account, LabelRequest) (*Label, error) {
	return nil, notSupported(CarrierC, "labels")
}

func (c *carrierC) VoidLabel(context.Context, Account, string) error {
	return notSupported(CarrierC, "labels")
}

func (c *carrierC) Track(context.Context, Account, []string) ([]TrackResult, error) {
	return nil, notSupported(CarrierC, "tracking")
}

func (c *carrierC) CreatePickup(context.Context, Account, PickupRequest) (*PickupResult, error) {
	return nil, notSupported(CarrierC, "pickups")
}

func (c *carrierC) CancelPickup(context.Context, Account, CancelPickupRequest) (*CancelPickupResult, error) {
	return nil, notSupported(CarrierC, "pickups")
}

func (c *carrierC) SendAction(context.Context, Account, ShipmentAction) (*ActionResult, error) {
	return nil, noDeliveryChanges(CarrierC)
}
