// Package carrieraccounts holds the carrier accounts domain: an
// organization's accounts with the carriers (credentials sealed at rest,
// never shown), their credential tests, and carrier_a's registration
// (register, then a PIN or an invoice to verify), which runs as the
// account's CarrierRegistration workflow behind the Registrations port
// (its Temporal adapter is worker.TemporalCarrierAccounts). The API's
// handlers and the agent's tools call the one Service.
package carrieraccounts

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Scopes of carrier accounts (Part 1).
const (
	ScopeRead  = "carrier-accounts:read"
	ScopeWrite = "carrier-accounts:write"
)

// Account is a carrier account (store row; Credentials are sealed).
type Account = store.CarrierAccount

// Statuses of an account.
var Statuses = store.CarrierAccountStatuses

// The account statuses.
const (
	StatusActive   = store.CarrierAccountActive
	StatusInactive = store.CarrierAccountInactive
	StatusPending  = store.CarrierAccountPending
)

// CredentialMask replaces every credential value the service shows; a
// value equal to it in an input is ignored (a client sending back what it
// read does not overwrite a credential with it).
const CredentialMask = "********"

// Bounds of carrier account inputs.
const (
	NameMax = 100
	// CustomerNameMax is carrier_a's limit on the customer name.
	CustomerNameMax = 50
	CredentialMax   = 1000
)

// Deps are the Service's dependencies.
type Deps struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// Registrations runs carrier_a registrations; nil: they answer that
	// workflows are unavailable.
	Registrations Registrations
	// PINLimit, when set, is asked before each PIN request of an account
	// (its key); its error is returned as it is.
	PINLimit func(key string) error
	// MaxWrongPINs is how many wrong PINs a registration accepts (0: the
	// workflow's default).
	MaxWrongPINs int
}

// Service is the carrier accounts domain's operations.
type Service struct {
	store         *store.Store
	secrets       *secrets.Box
	carriers      *carriers.Registry
	log           *slog.Logger
	registrations Registrations
	pinLimit      func(string) error
	maxWrongPINs  int
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Service{store: d.Store, secrets: d.Secrets, carriers: d.Carriers, log: log,
		registrations: d.Registrations, pinLimit: d.PINLimit, maxWrongPINs: d.MaxWrongPINs}
}

// adapter is the adapter of a carrier code.
func (s *Service) adapter(code string) (carriers.Carrier, error) {
	if s.carriers == nil {
		return nil, errors.New("carrieraccounts: no carrier registry configured")
	}
	return s.carriers.Get(code)
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return domain.NotFound("carrier account")
	}
	return err
}

// CredentialKeys are the names of the account's stored credentials (their
// values are never shown). Credentials that cannot be opened (a changed
// encryption key) have no keys, and are logged.
func (s *Service) CredentialKeys(ctx context.Context, a Account) []string {
	if len(a.Credentials) == 0 {
		return nil
	}
	creds, err := s.secrets.OpenJSON(a.Credentials, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID))
	if err != nil {
		s.log.WarnContext(ctx, "cannot open carrier account credentials", "carrier_account_id", a.ID.String(), "error", err.Error())
	}
	return slices.Sorted(maps.Keys(creds))
}

// validateCredentials checks credentials against the carrier's schema,
// naming each problem credentials.<key>.
func validateCredentials(v *domain.FieldErrors, adapter carriers.Carrier, creds map[string]any) {
	for _, fe := range adapter.ValidateCredentials(creds) {
		v.Add("credentials."+fe.Field, fe.Message)
	}
	for _, k := range slices.Sorted(maps.Keys(creds)) {
		if s, ok := creds[k].(string); ok && len(s) > CredentialMax {
			v.Add("credentials."+k, "is too long")
		}
	}
}

// dropMasked removes values equal to the mask.
func dropMasked(creds map[string]any) {
	for k, v := range creds {
		if s, ok := v.(string); ok && s == CredentialMask {
			delete(creds, k)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
