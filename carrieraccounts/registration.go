package carrieraccounts

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// carrier_a's registration: Register creates (or finds, by its account
// number) a pending account and sends the register step to its
// CarrierRegistration run; RequestPIN, VerifyPIN and VerifyInvoice are
// the MFA steps of that run. The run activates the account when verified.

// MFAOptions are the verification options the carrier offers; Email and
// PhoneNumber (masked) are "" when it gave none.
type MFAOptions struct {
	MFARequired bool
	Email       string
	PhoneNumber string
	Invoice     bool
	SecureCode  []string
}

// Registered is the answer of a register step.
type Registered struct {
	AccountID      uuid.UUID
	MFAOptions     MFAOptions
	TestModeBypass bool
}

// PINRequested is the answer of a PIN request.
type PINRequested struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

// Verified is the answer of a PIN or invoice verification: Error is the
// carrier's refusal when not verified.
type Verified struct {
	Verified bool
	Error    string
}

// RegisterRun is the register step sent to an account's run.
type RegisterRun struct {
	OrganizationID uuid.UUID
	AccountID      uuid.UUID
	CustomerName   string
	Address        carriers.RegistrationAddress
	IsTest         bool
	// NewAccount: the account was created for this registration.
	NewAccount   bool
	RequestedBy  domain.Actor
	MaxWrongPINs int
}

// Registrations runs the registration steps (worker.TemporalCarrierAccounts
// on Temporal). Errors are domain errors; one that is unavailable and not
// domain.ErrRunMayExist means nothing runs for the account.
type Registrations interface {
	Register(ctx context.Context, in RegisterRun) (Registered, error)
	RequestPIN(ctx context.Context, orgID, accountID uuid.UUID, option string) (PINRequested, error)
	VerifyPIN(ctx context.Context, orgID, accountID uuid.UUID, pin string) (Verified, error)
	VerifyInvoice(ctx context.Context, orgID, accountID uuid.UUID, inv carriers.Invoice) (Verified, error)
	// Stop ends the account's run, if any.
	Stop(ctx context.Context, accountID uuid.UUID) error
}

// RegistrationTimeout bounds waiting for a registration step (the
// workflow's activity retries included).
const RegistrationTimeout = 90 * time.Second

var (
	reAccountNumber = regexp.MustCompile(`^[0-9]{9}$`)
	reCountry       = regexp.MustCompile(`^[A-Za-z]{2}$`)
)

// AddressInput is a registration's address; nil is missing.
type AddressInput struct {
	StreetLines         []string
	City                *string
	StateOrProvinceCode *string
	PostalCode          *string
	CountryCode         *string
	Residential         bool
}

// RegisterInput registers a carrier_a account; nil is missing. Name
// (default: the customer name) names the account.
type RegisterInput struct {
	AccountNumber *string
	CustomerName  *string
	Address       *AddressInput
	IsTest        bool
	Name          *string
}

// Register connects a carrier_a account: the organization's account with
// that number (or a new pending one) is sent to the carrier, which answers
// with the verification options. A new account is removed again when
// nothing runs for it. The actor needs carrier-accounts:write.
func (s *Service) Register(ctx context.Context, actor domain.Actor, in RegisterInput) (Registered, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Registered{}, err
	}
	var v domain.FieldErrors
	number := strings.TrimSpace(deref(in.AccountNumber))
	if v.Required("accountNumber", in.AccountNumber) && !reAccountNumber.MatchString(number) {
		v.Add("accountNumber", "must be a 9-digit account number")
	}
	customer := strings.TrimSpace(deref(in.CustomerName))
	if v.Required("customerName", in.CustomerName) {
		v.Length("customerName", customer, CustomerNameMax)
	}
	name := customer
	if in.Name != nil {
		name = strings.TrimSpace(*in.Name)
		v.Length("name", name, NameMax)
	}
	addr := registrationAddress(&v, in.Address)
	if err := v.Err(); err != nil {
		return Registered{}, err
	}
	if s.registrations == nil {
		return Registered{}, domain.WorkflowsUnavailable(nil)
	}
	adapter, err := s.adapter(carriers.CarrierA)
	if err != nil {
		return Registered{}, err
	}
	orgID, newID := actor.OrganizationID, uuid.New()
	sealed, err := s.secrets.SealJSON(map[string]any{"accountNumber": number}, store.CarrierAccountCredentialsAD(orgID, newID))
	if err != nil {
		return Registered{}, err
	}
	caps := adapter.Capabilities()
	ra, err := store.UpsertRegistrationAccount(ctx, s.store.Pool, store.CarrierAccount{
		ID: newID, OrganizationID: orgID, Name: name, Carrier: carriers.CarrierA,
		Credentials: sealed, AccountNumberDigest: store.CarrierAccountNumberDigest(s.secrets, number),
		SupportsRating: caps.Rating, SupportsPickup: caps.Pickups, SupportsLabels: caps.Labels, IsTest: in.IsTest,
	}, in.Name != nil)
	if err != nil {
		return Registered{}, err
	}
	res, err := s.registrations.Register(ctx, RegisterRun{
		OrganizationID: orgID, AccountID: ra.Account.ID, CustomerName: customer, Address: addr, IsTest: in.IsTest,
		NewAccount: ra.Created, RequestedBy: actor, MaxWrongPINs: s.maxWrongPINs,
	})
	if err != nil {
		if ra.Created && errors.Is(err, domain.ErrUnavailable) && !errors.Is(err, domain.ErrRunMayExist) {
			// Temporal refused, or has no run for the account: nothing
			// runs for it, do not leave it pending. When the run may exist
			// the account stays pending; the reconciler settles it if the
			// run does not.
			if _, derr := store.DeletePendingCarrierAccount(context.WithoutCancel(ctx), s.store.Pool, orgID, ra.Account.ID); derr != nil {
				s.log.WarnContext(ctx, "remove unregistered carrier account", "carrier_account_id", ra.Account.ID.String(), "error", derr.Error())
			}
		}
		return Registered{}, err
	}
	res.AccountID = ra.Account.ID
	return res, nil
}

// registrationAddress checks and normalizes a registration's address.
func registrationAddress(v *domain.FieldErrors, a *AddressInput) carriers.RegistrationAddress {
	var addr carriers.RegistrationAddress
	if a == nil {
		v.Add("address", "is required")
		return addr
	}
	for i, l := range a.StreetLines {
		if l = strings.TrimSpace(l); l != "" {
			addr.StreetLines = append(addr.StreetLines, l)
		} else {
			v.Add("address.streetLines["+strconv.Itoa(i)+"]", "must not be blank")
		}
	}
	if len(a.StreetLines) == 0 {
		v.Add("address.streetLines", "needs at least one line")
	}
	if v.Required("address.city", a.City) {
		addr.City = strings.TrimSpace(*a.City)
	}
	if v.Required("address.postalCode", a.PostalCode) {
		addr.PostalCode = strings.TrimSpace(*a.PostalCode)
	}
	if v.Required("address.countryCode", a.CountryCode) {
		addr.CountryCode = strings.ToUpper(strings.TrimSpace(*a.CountryCode))
		if !reCountry.MatchString(addr.CountryCode) {
			v.Add("address.countryCode", "must be two letters")
		}
	}
	addr.StateOrProvinceCode = strings.ToUpper(strings.TrimSpace(deref(a.StateOrProvinceCode)))
	addr.Residential = a.Residential
	return addr
}

// stepAccount checks an MFA step's account id (after the step's other
// fields, in v) and loads the account, which must be a carrier_a account
// pending registration: invalid input, not found when it is not the
// organization's (or the id is malformed), a conflict when it is not
// pending registration.
func (s *Service) stepAccount(ctx context.Context, actor domain.Actor, v domain.FieldErrors, raw *string) (Account, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Account{}, err
	}
	v.Required("accountId", raw)
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	id, err := uuid.Parse(strings.TrimSpace(*raw))
	if err != nil {
		return Account{}, domain.NotFound("carrier account")
	}
	a, err := store.CarrierAccountByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return a, notFound(err)
	}
	if a.Carrier != carriers.CarrierA {
		return a, domain.Conflict("the carrier account is not a carrier_a account")
	}
	if a.Status != StatusPending {
		msg := "the carrier account is not pending registration (status " + a.Status + ")"
		if a.LastError != nil {
			msg += ": " + *a.LastError
		}
		return a, domain.Conflict(msg)
	}
	return a, nil
}

// runs is the Registrations port, or the error that none is configured.
func (s *Service) runs() (Registrations, error) {
	if s.registrations == nil {
		return nil, domain.WorkflowsUnavailable(nil)
	}
	return s.registrations, nil
}

// RequestPIN asks the carrier to send a PIN (option SMS, CALL or EMAIL)
// for the account's registration. The actor needs carrier-accounts:write.
func (s *Service) RequestPIN(ctx context.Context, actor domain.Actor, accountID, option *string) (PINRequested, error) {
	var v domain.FieldErrors
	opt := strings.ToUpper(strings.TrimSpace(deref(option)))
	if v.Required("option", option) {
		v.OneOf("option", opt, carriers.MFASMS, carriers.MFACall, carriers.MFAEmail)
	}
	a, err := s.stepAccount(ctx, actor, v, accountID)
	if err != nil {
		return PINRequested{}, err
	}
	if s.pinLimit != nil {
		if err := s.pinLimit(a.ID.String()); err != nil {
			return PINRequested{}, err
		}
	}
	runs, err := s.runs()
	if err != nil {
		return PINRequested{}, err
	}
	return runs.RequestPIN(ctx, a.OrganizationID, a.ID, opt)
}

// VerifyPIN sends the PIN the carrier sent. The actor needs
// carrier-accounts:write.
func (s *Service) VerifyPIN(ctx context.Context, actor domain.Actor, accountID, pin *string) (Verified, error) {
	var v domain.FieldErrors
	p := strings.TrimSpace(deref(pin))
	if v.Required("pin", pin) {
		v.MaxLen("pin", p, 32)
	}
	a, err := s.stepAccount(ctx, actor, v, accountID)
	if err != nil {
		return Verified{}, err
	}
	runs, err := s.runs()
	if err != nil {
		return Verified{}, err
	}
	return runs.VerifyPIN(ctx, a.OrganizationID, a.ID, p)
}

// InvoiceInput is an invoice of the account, for verification; nil is
// missing (Currency: USD).
type InvoiceInput struct {
	Number   *string
	Date     *string
	Amount   *float64
	Currency *string
}

// VerifyInvoice verifies the registration with one of the account's
// invoices. The actor needs carrier-accounts:write.
func (s *Service) VerifyInvoice(ctx context.Context, actor domain.Actor, accountID *string, in *InvoiceInput) (Verified, error) {
	var v domain.FieldErrors
	var inv carriers.Invoice
	if in == nil {
		v.Add("invoiceInfo", "is required")
	} else {
		if v.Required("invoiceInfo.invoiceNumber", in.Number) {
			inv.Number = strings.TrimSpace(*in.Number)
			v.MaxLen("invoiceInfo.invoiceNumber", inv.Number, 50)
		}
		if v.Required("invoiceInfo.invoiceDate", in.Date) {
			inv.Date = strings.TrimSpace(*in.Date)
			if _, err := time.Parse("2006-01-02", inv.Date); err != nil {
				v.Add("invoiceInfo.invoiceDate", "must be a date (YYYY-MM-DD)")
			}
		}
		switch {
		case in.Amount == nil:
			v.Add("invoiceInfo.invoiceAmount", "is required")
		case *in.Amount <= 0 || *in.Amount > 1e12:
			v.Add("invoiceInfo.invoiceAmount", "must be a positive number")
		default:
			inv.Amount = *in.Amount
		}
		inv.Currency = "USD"
		if in.Currency != nil {
			inv.Currency = strings.ToUpper(strings.TrimSpace(*in.Currency))
			if !isCurrencyCode(inv.Currency) {
				v.Add("invoiceInfo.currency", "must be an ISO 4217 code (3 letters)")
			}
		}
	}
	a, err := s.stepAccount(ctx, actor, v, accountID)
	if err != nil {
		return Verified{}, err
	}
	runs, err := s.runs()
	if err != nil {
		return Verified{}, err
	}
	return runs.VerifyInvoice(ctx, a.OrganizationID, a.ID, inv)
}

func isCurrencyCode(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}
