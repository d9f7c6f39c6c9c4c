package carriers

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Registrar is carrier_a's account registration with multi-factor
// verification (the carrier's Account Registration API). The flow:
//
//  1. RegisterAddress validates account number, name and address. The
//     result either carries Credentials at once (no MFA; always so for
//     IsTest accounts: TestModeBypass) or MFARequired with the offered
//     Options and a State to keep for the next steps.
//  2. Either RequestPIN (SMS, CALL or EMAIL) then VerifyPIN, or
//     VerifyInvoice, each with that State, yields the ChildCredentials.
//
// A wrong PIN or an unmatched invoice matches ErrVerificationFailed (the
// same State may be tried again), an unknown account number
// ErrAccountNotFound, an address that does not match the account
// ErrAddressInvalid, an expired or unusable State ErrSessionExpired (so is
// the carrier's re-login answer on an MFA step: it is about the session,
// not the service's project keys). Other failures are
// *Error values like every other call.
type Registrar interface {
	RegisterAddress(ctx context.Context, req RegistrationRequest) (*RegistrationResult, error)
	// RequestPIN asks the carrier to send a PIN; it returns the carrier's
	// status message.
	RequestPIN(ctx context.Context, state RegistrationState, option string) (string, error)
	VerifyPIN(ctx context.Context, state RegistrationState, pin string) (*ChildCredentials, error)
	VerifyInvoice(ctx context.Context, state RegistrationState, inv Invoice) (*ChildCredentials, error)
}

// RegistrationAddress is the address the carrier has on file for the account.
type RegistrationAddress struct {
	StreetLines         []string `json:"streetLines"`
	City                string   `json:"city"`
	StateOrProvinceCode string   `json:"stateOrProvinceCode"`
	PostalCode          string   `json:"postalCode"`
	CountryCode         string   `json:"countryCode"`
	Residential         bool     `json:"residential"`
}

// RegistrationRequest starts a registration.
type RegistrationRequest struct {
	AccountNumber string              `json:"accountNumber"`
	CustomerName  string              `json:"customerName"`
	Address       RegistrationAddress `json:"address"`
	// IsTest registers in the carrier's test environment, where MFA is
	// bypassed.
	IsTest bool `json:"isTest"`
}

// RegistrationState is what the MFA steps need from RegisterAddress. It is
// JSON-serializable (for a workflow's state) but AccountAuthToken is a
// bearer secret: store it encrypted, never log it.
type RegistrationState struct {
	AccountNumber    string `json:"accountNumber"`
	AccountAuthToken string `json:"accountAuthToken"`
	IsTest           bool   `json:"isTest"`
}

// MFAOptions are the second factors the carrier offers.
type MFAOptions struct {
	// Invoice: verification by a recent invoice is allowed.
	Invoice bool `json:"invoice"`
	// SecureCode lists the PIN channels on file: SMS, CALL, EMAIL.
	SecureCode []string `json:"secureCode"`
	// Email and Phone are masked by the carrier ("PU***@S***.COM",
	// "***-***-4222").
	Email string `json:"email"`
	Phone string `json:"phoneNumber"`
}

// ChildCredentials are the per-account keys the carrier issues; stored as
// the account's childKey / childSecret.
type ChildCredentials struct {
	ChildKey    string `json:"childKey"`
	ChildSecret string `json:"childSecret"`
}

// AccountCredentials returns the credentials map of a registered
// carrier_a account.
func (c ChildCredentials) AccountCredentials(accountNumber string) map[string]any {
	return map[string]any{"accountNumber": accountNumber, "childKey": c.ChildKey, "childSecret": c.ChildSecret}
}

// RegistrationResult is RegisterAddress's answer.
type RegistrationResult struct {
	MFARequired bool `json:"mfaRequired"`
	// TestModeBypass: an IsTest registration that skipped MFA.
	TestModeBypass bool       `json:"testModeBypass"`
	Options        MFAOptions `json:"options"`
	// Credentials are set when no MFA is required.
	Credentials *ChildCredentials `json:"credentials"`
	// State is needed by RequestPIN, VerifyPIN and VerifyInvoice.
	State RegistrationState `json:"state"`
}

// Invoice identifies a recent carrier invoice of the account.
type Invoice struct {
	Number   string  `json:"invoiceNumber"`
	Date     string  `json:"invoiceDate"` // YYYY-MM-DD
	Amount   float64 `json:"invoiceAmount"`
	Currency string  `json:"currency"` // default USD
}

type fxKeysOutput struct {
	Output struct {
		MFAOptions  json.RawMessage `json:"mfaOptions"`
		ChildKey    string          `json:"child_Key"`
		ChildSecret string          `json:"child_secret"`
		Status      string          `json:"status"`
	} `json:"output"`
}

type fxMFA struct {
	AccountAuthToken string `json:"accountAuthToken"`
	MFARequired      bool   `json:"mfaRequired"`
	Email            string `json:"email"`
	PhoneNumber      string `json:"phoneNumber"`
	Options          struct {
		Invoice    string   `json:"invoice"`
		SecureCode []string `json:"secureCode"`
	} `json:"options"`
}

// regCall performs a registration call with a client_credentials token.
func (a *carrierA) regCall(ctx context.Context, isTest bool, path, authToken string, body any) (*fxKeysOutput, error) {
	hdr := http.Header{}
	if authToken != "" {
		hdr.Set("accountAuthToken", authToken)
	}
	var out fxKeysOutput
	if _, err := a.sendWith(ctx, isTest, "", "", http.MethodPost, path, body, hdr, &out); err != nil {
		// On the MFA steps a re-login answer is about the registration
		// session (the accountAuthToken), not the service's project keys:
		// the bearer token was already renewed once by withToken.
		if ce, ok := AsError(err); ok && authToken != "" && ce.Code == "LOGIN.REAUTHENTICATE.ERROR" {
			ce.kind = ErrSessionExpired
		}
		return nil, err
	}
	return &out, nil
}

// RegisterAddress implements Registrar
// (POST /registration/v2/address/keysgeneration).
func (a *carrierA) RegisterAddress(ctx context.Context, req RegistrationRequest) (*RegistrationResult, error) {
	num := trimSpace(req.AccountNumber)
	var problems []string
	if !reNineDigits.MatchString(num) {
		problems = append(problems, "accountNumber must be a 9-digit account number")
	}
	if n := trimSpace(req.CustomerName); n == "" || len(n) > 50 {
		problems = append(problems, "customerName is required (at most 50 characters)")
	}
	lines := []string{}
	for _, l := range req.Address.StreetLines {
		if l = trimSpace(l); l != "" {
			lines = append(lines, truncate(l, 35))
		}
	}
	if len(lines) == 0 {
		problems = append(problems, "address.streetLines needs at least one line")
	}
	if trimSpace(req.Address.City) == "" || trimSpace(req.Address.PostalCode) == "" {
		problems = append(problems, "address.city and address.postalCode are required")
	}
	cc := strings.ToUpper(trimSpace(req.Address.CountryCode))
	if len(cc) != 2 {
		problems = append(problems, "address.countryCode must be two letters")
	}
	if len(problems) > 0 {
		return nil, invalidRequest(CarrierA, strings.Join(problems, "; "))
	}
	body := map[string]any{
		// accountNumber.key is required (the "key to decode" value; the
		// published example sends ""), so it is sent even when empty.
		"accountNumber": map[string]string{"value": num, "key": ""},
		"customerName":  trimSpace(req.CustomerName),
		"address": map[string]any{
			"streetLines":         lines,
			"city":                trimSpace(req.Address.City),
			"stateOrProvinceCode": strings.ToUpper(trimSpace(req.Address.StateOrProvinceCode)),
			"postalCode":          trimSpace(req.Address.PostalCode),
			"countryCode":         cc,
			"residential":         req.Address.Residential,
		},
	}
	out, err := a.regCall(ctx, req.IsTest, "/registration/v2/address/keysgeneration", "", body)
	if err != nil {
		return nil, err
	}
	res := &RegistrationResult{State: RegistrationState{AccountNumber: num, IsTest: req.IsTest}}
	if out.Output.ChildKey != "" {
		res.Credentials = &ChildCredentials{ChildKey: out.Output.ChildKey, ChildSecret: out.Output.ChildSecret}
		res.TestModeBypass = req.IsTest
		return res, nil
	}
	// The schema types mfaOptions as an array, the published example as an
	// object: accept both.
	var opts oneOrMany[fxMFA]
	if len(out.Output.MFAOptions) == 0 || json.Unmarshal(out.Output.MFAOptions, &opts) != nil || len(opts) == 0 {
		return nil, badResponse(CarrierA, "registration response has neither keys nor mfaOptions", nil)
	}
	m := opts[0]
	res.MFARequired = true
	res.State.AccountAuthToken = m.AccountAuthToken
	res.Options = MFAOptions{
		Invoice:    m.Options.Invoice != "",
		SecureCode: append([]string{}, m.Options.SecureCode...),
		Email:      m.Email,
		Phone:      m.PhoneNumber,
	}
	return res, nil
}

func checkState(st RegistrationState) error {
	if st.AccountAuthToken == "" {
		return &Error{Carrier: CarrierA, Code: "SESSION.EXPIRED.ERROR", Message: "no registration session: call RegisterAddress first", kind: ErrSessionExpired}
	}
	return nil
}

func childCreds(out *fxKeysOutput) (*ChildCredentials, error) {
	if out.Output.ChildKey == "" || out.Output.ChildSecret == "" {
		return nil, badResponse(CarrierA, "verification response has no child_Key/child_secret", nil)
	}
	return &ChildCredentials{ChildKey: out.Output.ChildKey, ChildSecret: out.Output.ChildSecret}, nil
}

// RequestPIN implements Registrar
// (POST /registration/v2/customerkeys/pingeneration).
func (a *carrierA) RequestPIN(ctx context.Context, st RegistrationState, option string) (string, error) {
	option = strings.ToUpper(trimSpace(option))
	if option != MFASMS && option != MFACall && option != MFAEmail {
		return "", invalidRequest(CarrierA, "option must be SMS, CALL or EMAIL")
	}
	if err := checkState(st); err != nil {
		return "", err
	}
	out, err := a.regCall(ctx, st.IsTest, "/registration/v2/customerkeys/pingeneration", st.AccountAuthToken,
		map[string]any{"option": option, "locale": "en_US"})
	if err != nil {
		return "", err
	}
	return out.Output.Status, nil
}

// VerifyPIN implements Registrar (POST /registration/v2/pin/keysgeneration).
func (a *carrierA) VerifyPIN(ctx context.Context, st RegistrationState, pin string) (*ChildCredentials, error) {
	pin = trimSpace(pin)
	if pin == "" {
		return nil, invalidRequest(CarrierA, "pin is required")
	}
	if err := checkState(st); err != nil {
		return nil, err
	}
	out, err := a.regCall(ctx, st.IsTest, "/registration/v2/pin/keysgeneration", st.AccountAuthToken,
		map[string]any{"secureCodePin": pin, "locale": "en_US"})
	if err != nil {
		return nil, err
	}
	return childCreds(out)
}

// VerifyInvoice implements Registrar
// (POST /registration/v2/invoice/keysgeneration).
func (a *carrierA) VerifyInvoice(ctx context.Context, st RegistrationState, inv Invoice) (*ChildCredentials, error) {
	var problems []string
	number := trimSpace(inv.Number)
	if number == "" {
		problems = append(problems, "invoiceNumber is required")
	}
	if !validDate(inv.Date) {
		problems = append(problems, "invoiceDate must be YYYY-MM-DD")
	}
	if inv.Amount <= 0 {
		problems = append(problems, "invoiceAmount must be positive")
	}
	if len(problems) > 0 {
		return nil, invalidRequest(CarrierA, strings.Join(problems, "; "))
	}
	if err := checkState(st); err != nil {
		return nil, err
	}
	currency := strings.ToUpper(trimSpace(inv.Currency))
	if currency == "" {
		currency = "USD"
	}
	// The carrier types the invoice number as an integer.
	var num any = number
	if n, err := strconv.ParseInt(number, 10, 64); err == nil {
		num = n
	}
	out, err := a.regCall(ctx, st.IsTest, "/registration/v2/invoice/keysgeneration", st.AccountAuthToken, map[string]any{
		"invoiceDetail": map[string]any{"number": num, "currency": currency, "date": inv.Date, "amount": round2(inv.Amount)},
		"locale":        "en_US",
	})
	if err != nil {
		return nil, err
	}
	return childCreds(out)
}
