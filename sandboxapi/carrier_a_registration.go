package sandboxapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"
)

// carrier_a account registration (FedEx Account Registration API) with the
// sandbox rules of CONTRACT 8: a 9-digit account number starting with 0 is
// unknown; PIN 000000 and invoice number 0 are wrong, anything else is
// accepted; test-environment calls skip MFA (keys returned at once).

// Magic values of the carrier_a registration sandbox.
const (
	WrongPIN           = "000000"
	WrongInvoiceNumber = "0"
)

// registrationSessionTTL is the accountAuthToken lifetime (the sample JWT's
// DateTime claim, 1800000 ms).
const registrationSessionTTL = 30 * time.Minute

var (
	reAccountNumber = regexp.MustCompile(`^\d{9}$`)
	// registrationKey signs accountAuthTokens. It is fixed so a session
	// survives a sandbox restart.
	registrationKey = []byte("fos-sandbox-carrier_a-registration")
)

type faSession struct {
	TypeOfJWT     string `json:"TypeOfJWT"`
	AccountNumber string `json:"AccountNumber"`
	DateTime      int64  `json:"DateTime"`
	Exp           int64  `json:"exp"`
}

func b64url(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func (s *carrierSandbox) faSessionToken(account string) string {
	head := b64url([]byte(`{"alg":"HS256"}`))
	claims, _ := json.Marshal(faSession{TypeOfJWT: "AddressValidated", AccountNumber: account, DateTime: registrationSessionTTL.Milliseconds(),
		Exp: s.now().Add(registrationSessionTTL).Unix()})
	body := head + "." + b64url(claims)
	mac := hmac.New(sha256.New, registrationKey)
	mac.Write([]byte(body))
	return body + "." + b64url(mac.Sum(nil))
}

// faSessionOf validates the accountAuthToken header: it answers the error
// and returns false when the token is missing, forged or expired.
func (s *carrierSandbox) faSessionOf(w http.ResponseWriter, r *http.Request) (faSession, bool) {
	tok := strings.TrimSpace(r.Header.Get("accountAuthToken"))
	parts := strings.Split(tok, ".")
	var sess faSession
	if len(parts) == 3 {
		mac := hmac.New(sha256.New, registrationKey)
		mac.Write([]byte(parts[0] + "." + parts[1]))
		sig, err := base64.RawURLEncoding.DecodeString(parts[2])
		if err == nil && hmac.Equal(sig, mac.Sum(nil)) {
			claims, err := base64.RawURLEncoding.DecodeString(parts[1])
			if err == nil && json.Unmarshal(claims, &sess) == nil && sess.AccountNumber != "" {
				if s.now().Unix() >= sess.Exp {
					faError(w, r, http.StatusBadRequest, "SESSION.EXPIRED.ERROR", "Your session has expired. Please start the registration again.")
					return sess, false
				}
				return sess, true
			}
		}
	}
	faError(w, r, http.StatusBadRequest, "UNAUTHORIZED.ACCESS.ERROR", "You are not authorized to access this resource: the accountAuthToken is missing or invalid.")
	return sess, false
}

// faChildKeys derives an account's child key pair.
func faChildKeys(account string) map[string]any {
	k := sha256.Sum256([]byte("child_Key|" + account))
	h := hex.EncodeToString(k[:16])
	sec := sha256.Sum256([]byte("child_secret|" + account))
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789"
	var b strings.Builder
	for i := 0; i < 25; i++ {
		b.WriteByte(alphabet[int(sec[i])%len(alphabet)])
	}
	return map[string]any{
		"child_Key":    h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32],
		"child_secret": b.String(),
	}
}

func (s *carrierSandbox) faRegAddress(w http.ResponseWriter, r *http.Request) {
	var q struct {
		AccountNumber struct {
			Value flexStr `json:"value"`
			Key   string  `json:"key"`
		} `json:"accountNumber"`
		CustomerName string    `json:"customerName"`
		Address      faAddress `json:"address"`
	}
	body, ok := faRead(w, r, &q, faRegAddressRequired...)
	if !ok {
		return
	}
	acct := q.AccountNumber.Value.String()
	a := q.Address
	switch {
	case acct == FailValue:
		faUnavailable(w, r)
		return
	case acct == "":
		faError(w, r, http.StatusBadRequest, "ACCOUNT.NUMBER.REQUIRED", "Please provide the account number.")
		return
	case strings.TrimSpace(q.CustomerName) == "":
		faError(w, r, http.StatusBadRequest, "CUSTOMER.NAME.REQUIRED", "Please provide the customer name.")
		return
	case !reAccountNumber.MatchString(acct) || strings.HasPrefix(acct, "0"):
		faError(w, r, http.StatusBadRequest, "ACCOUNT.NUMBER.NOTFOUND",
			"Account Number not in database.  Please check the number entered and try again.  If you continue to have problems, please contact Carrier A customer service.")
		return
	case len(a.StreetLines) == 0 || strings.TrimSpace(a.City) == "" || a.PostalCode.String() == "" || len(strings.TrimSpace(a.CountryCode)) != 2:
		faError(w, r, http.StatusBadRequest, "ADDRESS.DETAIL.INVALID", "The City, State/Province and ZIP/Postal code combination that you entered is not valid.")
		return
	}
	tok, _ := s.bearer(r, "carrier_a")
	if isTestEnv(r) || tok.test {
		writeJSON(w, http.StatusOK, faEnvelope(r, body, faChildKeys(acct)))
		return
	}
	names := []string{"PU", "JO", "MA", "SH", "OR", "LO"}
	domains := []string{"S", "E", "G", "F", "M"}
	seed := hashNum("mfa", acct)
	writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{
		"mfaOptions": map[string]any{
			"accountAuthToken": s.faSessionToken(acct),
			"mfaRequired":      true,
			"email":            names[seed%6] + "***@" + domains[(seed/6)%5] + "***.COM",
			"phoneNumber":      "***-***-" + acct[5:],
			"options":          map[string]any{"invoice": "INVOICE", "secureCode": []string{"SMS", "CALL", "EMAIL"}},
		},
	}))
}

func (s *carrierSandbox) faRegPinGeneration(w http.ResponseWriter, r *http.Request) {
	var q struct {
		Option string `json:"option"`
	}
	body, ok := faRead(w, r, &q, faRegPinGenerationRequired...)
	if !ok {
		return
	}
	if _, ok := s.faSessionOf(w, r); !ok {
		return
	}
	switch strings.ToUpper(strings.TrimSpace(q.Option)) {
	case "SMS", "CALL", "EMAIL":
	case "":
		faError(w, r, http.StatusBadRequest, "PIN.OPTION.REQUIRED", "Please provide option.")
		return
	default:
		faError(w, r, http.StatusBadRequest, "PIN.OPTION.REQUIRED", "Please provide option: SMS, CALL or EMAIL.")
		return
	}
	writeJSON(w, http.StatusOK, faEnvelope(r, body, map[string]any{"status": "sent secured Pin"}))
}

func (s *carrierSandbox) faRegPinKeys(w http.ResponseWriter, r *http.Request) {
	var q struct {
		SecureCodePin flexStr `json:"secureCodePin"`
	}
	body, ok := faRead(w, r, &q, faRegPinRequired...)
	if !ok {
		return
	}
	sess, ok := s.faSessionOf(w, r)
	if !ok {
		return
	}
	switch pin := q.SecureCodePin.String(); pin {
	case "":
		faError(w, r, http.StatusBadRequest, "PIN.PINSECURECODE.REQUIRED", "Please provide the secure code PIN.")
	case WrongPIN:
		faError(w, r, http.StatusBadRequest, "PIN.OPTION.INVALIDEXPIRED", "Pin is invalid or expired..")
	default:
		writeJSON(w, http.StatusOK, faEnvelope(r, body, faChildKeys(sess.AccountNumber)))
	}
}

func (s *carrierSandbox) faRegInvoiceKeys(w http.ResponseWriter, r *http.Request) {
	var q struct {
		InvoiceDetail *struct {
			Number   flexStr `json:"number"`
			Currency string  `json:"currency"`
			Date     string  `json:"date"`
			Amount   flexNum `json:"amount"`
		} `json:"invoiceDetail"`
	}
	body, ok := faRead(w, r, &q, faRegInvoiceRequired...)
	if !ok {
		return
	}
	sess, ok := s.faSessionOf(w, r)
	if !ok {
		return
	}
	switch {
	case q.InvoiceDetail == nil:
		faError(w, r, http.StatusBadRequest, "INVOICE.DETAILS.REQUIRED", "Please provide the invoice details.")
	case q.InvoiceDetail.Number.String() == "":
		faError(w, r, http.StatusBadRequest, "INVOICEDETAILS.NUMBER.REQUIRED", "Please provide the invoice number.")
	case strings.TrimLeft(q.InvoiceDetail.Number.String(), "0") == "":
		faError(w, r, http.StatusNotFound, "INVOICEDETAILS.NUMBER.NOTEXIST", "Invoice does not exist for the provided invoice number.")
	default:
		writeJSON(w, http.StatusOK, faEnvelope(r, body, faChildKeys(sess.AccountNumber)))
	}
}
