package carrieraccounts

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/shipping"
	"github.com/fos-dev/fos/store"
)

// TestTimeout bounds a live credentials test.
const TestTimeout = 30 * time.Second

// Filter narrows a list.
type Filter struct {
	// Carrier is a carrier code; Status one of Statuses ("" : any).
	Carrier, Status string
	Limit, Offset   int
}

// Page is one page of accounts and the number of all that match.
type Page struct {
	Items []Account
	Total int
}

// List lists the organization's accounts. The actor needs
// carrier-accounts:read.
func (s *Service) List(ctx context.Context, actor domain.Actor, f Filter) (Page, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Page{}, err
	}
	list, total, err := store.ListCarrierAccounts(ctx, s.store.Pool, actor.OrganizationID, store.CarrierAccountFilter{
		Carrier: f.Carrier, Status: f.Status, Limit: f.Limit, Offset: f.Offset,
	})
	return Page{Items: list, Total: total}, err
}

// Get is one account of the organization. The actor needs
// carrier-accounts:read.
func (s *Service) Get(ctx context.Context, actor domain.Actor, id uuid.UUID) (Account, error) {
	if err := actor.RequireScope(ScopeRead); err != nil {
		return Account{}, err
	}
	a, err := store.CarrierAccountByID(ctx, s.store.Pool, actor.OrganizationID, id)
	return a, notFound(err)
}

// CreateInput creates an account; nil is missing.
type CreateInput struct {
	Name        *string
	Carrier     *string
	Credentials map[string]any
	IsTest      bool
	Metadata    map[string]any
}

// Create creates an active account with credentials checked against the
// carrier's schema (masked values dropped) and sealed. A carrier_a account
// is connected through Register instead. The actor needs
// carrier-accounts:write.
func (s *Service) Create(ctx context.Context, actor domain.Actor, in CreateInput) (Account, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Account{}, err
	}
	var v domain.FieldErrors
	name := strings.TrimSpace(deref(in.Name))
	if v.Required("name", in.Name) {
		v.Length("name", name, NameMax)
	}
	var adapter carriers.Carrier
	if v.Required("carrier", in.Carrier) && v.OneOf("carrier", *in.Carrier, carriers.Codes()...) {
		if *in.Carrier == carriers.CarrierA {
			v.Add("carrier", "carrier_a accounts are connected through the registration flow: POST /api/v1/carrier-accounts/carrier_a/register")
		} else {
			a, err := s.adapter(*in.Carrier)
			if err != nil {
				return Account{}, err
			}
			adapter = a
		}
	}
	if in.Credentials == nil {
		v.Add("credentials", "is required")
	} else if adapter != nil {
		dropMasked(in.Credentials)
		validateCredentials(&v, adapter, in.Credentials)
	}
	if err := v.Err(); err != nil {
		return Account{}, err
	}
	acctID, orgID := uuid.New(), actor.OrganizationID
	sealed, err := s.secrets.SealJSON(in.Credentials, store.CarrierAccountCredentialsAD(orgID, acctID))
	if err != nil {
		return Account{}, err
	}
	caps := adapter.Capabilities()
	return store.CreateCarrierAccount(ctx, s.store.Pool, store.CarrierAccount{
		ID: acctID, OrganizationID: orgID, Name: name, Carrier: *in.Carrier,
		Credentials: sealed, SupportsRating: caps.Rating, SupportsPickup: caps.Pickups, SupportsLabels: caps.Labels,
		Status: StatusActive, IsTest: in.IsTest, Metadata: metadataOf(in.Metadata),
	})
}

func metadataOf(m map[string]any) json.RawMessage {
	if m == nil {
		return json.RawMessage(`{}`)
	}
	raw, _ := json.Marshal(m)
	return raw
}

// UpdateInput changes an account; nil fields stay. Credentials are merged
// into the stored ones: masked values are ignored, null removes a key, any
// other value replaces it.
type UpdateInput struct {
	Name        *string
	Credentials map[string]any
	Status      *string
	Metadata    map[string]any
}

// Update changes an account. Only active and inactive can be set; an
// account pending registration keeps its status and credentials until
// verified (a conflict). The actor needs carrier-accounts:write.
func (s *Service) Update(ctx context.Context, actor domain.Actor, id uuid.UUID, in UpdateInput) (Account, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return Account{}, err
	}
	orgID := actor.OrganizationID
	var out Account
	err := s.store.InTx(ctx, func(tx pgx.Tx) error {
		a, err := store.LockCarrierAccount(ctx, tx, orgID, id)
		if err != nil {
			return notFound(err)
		}
		var v domain.FieldErrors
		var patch store.CarrierAccountPatch
		if in.Name != nil {
			name := strings.TrimSpace(*in.Name)
			v.Length("name", name, NameMax)
			patch.Name = &name
		}
		if in.Status != nil {
			v.OneOf("status", *in.Status, StatusActive, StatusInactive)
			patch.Status = in.Status
		}
		if in.Metadata != nil {
			patch.Metadata = metadataOf(in.Metadata)
		}
		if in.Credentials != nil {
			adapter, err := s.adapter(a.Carrier)
			if err != nil {
				return err
			}
			merged, err := s.mergeCredentials(a, in.Credentials)
			if err != nil {
				return err
			}
			validateCredentials(&v, adapter, merged)
			if len(v) == 0 {
				if patch.Credentials, err = s.secrets.SealJSON(merged, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID)); err != nil {
					return err
				}
				if a.Carrier == carriers.CarrierA {
					num, _ := merged["accountNumber"].(string)
					patch.AccountNumberDigest = store.CarrierAccountNumberDigest(s.secrets, num)
				}
			}
		}
		if err := v.Err(); err != nil {
			return err
		}
		if a.Status == StatusPending && (in.Status != nil || in.Credentials != nil) {
			return domain.Conflict("the carrier account is pending registration: complete the verification (or register again) before changing its status or credentials")
		}
		out, err = store.UpdateCarrierAccount(ctx, tx, orgID, id, patch)
		if errors.Is(err, store.ErrConflict) {
			return domain.Conflict("another carrier_a account of this organization has that account number")
		}
		return err
	})
	return out, err
}

// mergeCredentials merges an update into the stored credentials.
func (s *Service) mergeCredentials(a Account, update map[string]any) (map[string]any, error) {
	merged := map[string]any{}
	if len(a.Credentials) > 0 {
		creds, err := s.secrets.OpenJSON(a.Credentials, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID))
		if err != nil {
			return nil, err
		}
		maps.Copy(merged, creds)
	}
	dropMasked(update)
	for k, val := range update {
		if val == nil {
			delete(merged, k)
			continue
		}
		merged[k] = val
	}
	return merged, nil
}

// Delete deletes an account; a registration under way for it is stopped
// (best effort: the run would otherwise find the account gone at its next
// step or its expiry). The actor needs carrier-accounts:write.
func (s *Service) Delete(ctx context.Context, actor domain.Actor, id uuid.UUID) error {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return err
	}
	a, err := store.DeleteCarrierAccount(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return notFound(err)
	}
	if a.Status == StatusPending && s.registrations != nil {
		if err := s.registrations.Stop(context.WithoutCancel(ctx), id); err != nil {
			s.log.WarnContext(ctx, "stop carrier registration", "carrier_account_id", id.String(), "error", err.Error())
		}
	}
	return nil
}

// TestResult is a credentials test's outcome: Error is the carrier's
// refusal for people (never a credential), nil when valid.
type TestResult struct {
	Valid bool
	Error *string
}

// Test tries the account's credentials with the carrier and records the
// outcome on the account (its status and last error). The actor needs
// carrier-accounts:write.
func (s *Service) Test(ctx context.Context, actor domain.Actor, id uuid.UUID) (TestResult, error) {
	if err := actor.RequireScope(ScopeWrite); err != nil {
		return TestResult{}, err
	}
	pending := domain.Conflict("the carrier account is pending registration: complete the verification first")
	a, err := store.CarrierAccountByID(ctx, s.store.Pool, actor.OrganizationID, id)
	if err != nil {
		return TestResult{}, notFound(err)
	}
	if a.Status == StatusPending {
		return TestResult{}, pending
	}
	adapter, err := s.adapter(a.Carrier)
	if err != nil {
		return TestResult{}, err
	}
	var testErr *string
	acct, err := store.AdapterAccount(s.secrets, a)
	if err != nil {
		msg := "the stored credentials cannot be opened; set them again"
		testErr = &msg
	} else {
		tctx, cancel := context.WithTimeout(ctx, TestTimeout)
		err := adapter.TestCredentials(tctx, acct)
		cancel()
		if err != nil {
			if errors.Is(err, context.Canceled) && ctx.Err() != nil {
				return TestResult{}, err
			}
			msg := testMessage(err)
			testErr = &msg
		}
	}
	if _, err := store.RecordCarrierAccountTest(ctx, s.store.Pool, a.OrganizationID, a.ID, testErr); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return TestResult{}, pending
		}
		return TestResult{}, notFound(err)
	}
	return TestResult{Valid: testErr == nil, Error: testErr}, nil
}

// testMessage is a carrier error for people: the carrier's message and
// code (never a credential: adapters do not put them in errors).
func testMessage(err error) string {
	ce, ok := carriers.AsError(err)
	switch {
	case ok && (ce.Code == carriers.ErrCodeNetwork || ce.Code == carriers.ErrCodeBadResponse):
		return shipping.CarrierErrorMessage(err)
	case ok:
	case errors.Is(err, context.DeadlineExceeded):
		return "the call did not complete in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	default:
		return domain.InternalFailureMessage
	}
	msg := domain.TenantText(ce.Message)
	if msg == "" {
		msg = domain.TenantText(ce.Error())
	}
	if ce.Code != "" && !strings.Contains(msg, ce.Code) {
		msg += " (" + ce.Code + ")"
	}
	return msg
}
