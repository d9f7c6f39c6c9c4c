package api

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/activities"
	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/worker"
	"github.com/fos-dev/fos/workflows"
)

// mountCarrierAccounts registers the carrier account and carrier_a registration endpoints.
func (s *Server) mountCarrierAccounts(r chi.Router) {
	read := r.With(s.scope("carrier-accounts:read"))
	write := r.With(s.scope("carrier-accounts:write"))
	read.Get("/carrier-accounts", s.h(s.listCarrierAccounts))
	write.Post("/carrier-accounts", s.h(s.createCarrierAccount))
	read.Get("/carrier-accounts/{id}", s.h(s.getCarrierAccount))
	write.Patch("/carrier-accounts/{id}", s.h(s.updateCarrierAccount))
	write.Delete("/carrier-accounts/{id}", s.h(s.deleteCarrierAccount))
	write.Post("/carrier-accounts/{id}/test", s.h(s.testCarrierAccount))
	// The literal carrier code; chi prefers these static segments over {id}.
	write.Post("/carrier-accounts/carrier_a/register", s.h(s.registerCarrierA))
	write.Post("/carrier-accounts/carrier_a/request-pin", s.h(s.requestCarrierAPIN))
	write.Post("/carrier-accounts/carrier_a/verify-pin", s.h(s.verifyCarrierAPIN))
	write.Post("/carrier-accounts/carrier_a/verify-invoice", s.h(s.verifyCarrierAInvoice))
}

// carrierCredentialMask replaces every credential value in responses.
const carrierCredentialMask = "********"

// Bounds of carrier account requests.
const (
	carrierAccountNameMax = 100
	// carrierACustomerNameMax is carrier_a's limit on the customer name.
	carrierACustomerNameMax = 50
	carrierCredentialMax    = 1000
	// carrierAccountTestTimeout bounds a live carrier call made in a request.
	carrierAccountTestTimeout = 30 * time.Second
	// carrierARegistrationTimeout bounds waiting for a registration step
	// (the workflow's activity retries included).
	carrierARegistrationTimeout = 90 * time.Second
)

// carrierAccountJSON is the Carrier account resource (camelCase).
// lastError (extension) is the message of the last failed credentials test
// or registration, null otherwise.
type carrierAccountJSON struct {
	ID             uuid.UUID         `json:"id"`
	OrganizationID uuid.UUID         `json:"organizationId"`
	Name           string            `json:"name"`
	Carrier        string            `json:"carrier"`
	Credentials    map[string]string `json:"credentials"`
	SupportsRating bool              `json:"supportsRating"`
	SupportsPickup bool              `json:"supportsPickup"`
	SupportsLabels bool              `json:"supportsLabels"`
	Status         string            `json:"status"`
	IsTest         bool              `json:"isTest"`
	Metadata       json.RawMessage   `json:"metadata"`
	LastError      *string           `json:"lastError"`
	CreatedAt      time.Time         `json:"createdAt"`
	UpdatedAt      time.Time         `json:"updatedAt"`
}

// toCarrierAccountJSON renders an account with every credential value
// masked. The credentials are opened only to learn their keys; a row that
// cannot be opened (a changed encryption key) renders {} and is logged.
func (s *Server) toCarrierAccountJSON(r *http.Request, a store.CarrierAccount) carrierAccountJSON {
	masked := map[string]string{}
	if len(a.Credentials) > 0 {
		creds, err := s.secrets.OpenJSON(a.Credentials, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID))
		if err != nil {
			s.log.WarnContext(r.Context(), "cannot open carrier account credentials", append(logAttrs(r), "carrier_account_id", a.ID.String(), "error", err.Error())...)
		}
		for k := range creds {
			masked[k] = carrierCredentialMask
		}
	}
	md := a.Metadata
	if len(md) == 0 || string(md) == "null" {
		md = json.RawMessage(`{}`)
	}
	return carrierAccountJSON{
		ID: a.ID, OrganizationID: a.OrganizationID, Name: a.Name, Carrier: a.Carrier, Credentials: masked,
		SupportsRating: a.SupportsRating, SupportsPickup: a.SupportsPickup, SupportsLabels: a.SupportsLabels,
		Status: a.Status, IsTest: a.IsTest, Metadata: md, LastError: a.LastError, CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt,
	}
}

// carrierAccountAdapter is the adapter of a carrier code.
func (s *Server) carrierAccountAdapter(code string) (carriers.Carrier, error) {
	if s.carriers == nil {
		return nil, errors.New("api: no carrier registry configured")
	}
	return s.carriers.Get(code)
}

// carrierAccountFromPath loads the organization's account named by {id};
// an unknown, malformed or foreign id is 404.
func (s *Server) carrierAccountFromPath(r *http.Request) (store.CarrierAccount, error) {
	return loadByID(s, r, "carrier account", store.CarrierAccountByID)
}

// ---- list, get ----

func (s *Server) listCarrierAccounts(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	carrier, err := queryEnum(r, "carrier", carriers.Codes()...)
	details.collect(err)
	// The specification lists active, inactive and error; pending (a
	// registration under way) is accepted too.
	status, err := queryEnum(r, "status", store.CarrierAccountStatuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	list, total, err := store.ListCarrierAccounts(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, store.CarrierAccountFilter{
		Carrier: carrier, Status: status, Limit: p.Limit, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]carrierAccountJSON, 0, len(list))
	for _, a := range list {
		out = append(out, s.toCarrierAccountJSON(r, a))
	}
	writeList(w, out, p, total)
	return nil
}

func (s *Server) getCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.carrierAccountFromPath(r)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toCarrierAccountJSON(r, a))
	return nil
}

// ---- create ----

type createCarrierAccountRequest struct {
	Name        *string        `json:"name"`
	Carrier     *string        `json:"carrier"`
	Credentials map[string]any `json:"credentials"`
	IsTest      *bool          `json:"isTest"`
	Metadata    map[string]any `json:"metadata"`
}

// validateCarrierCredentials checks credentials against the carrier's schema,
// naming each problem credentials.<key>.
func validateCarrierCredentials(v *validator, adapter carriers.Carrier, creds map[string]any) {
	for _, fe := range adapter.ValidateCredentials(creds) {
		v.add("credentials."+fe.Field, fe.Message)
	}
	keys := slices.Sorted(maps.Keys(creds))
	for _, k := range keys {
		if s, ok := creds[k].(string); ok && len(s) > carrierCredentialMax {
			v.add("credentials."+k, "is too long")
		}
	}
}

// dropMaskedCarrierCredentials removes values equal to the mask: a client that sends back
// what it read must not overwrite a credential with it.
func dropMaskedCarrierCredentials(creds map[string]any) {
	for k, v := range creds {
		if s, ok := v.(string); ok && s == carrierCredentialMask {
			delete(creds, k)
		}
	}
}

func (s *Server) createCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	var req createCarrierAccountRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	name := strings.TrimSpace(deref(req.Name))
	if v.required("name", req.Name) {
		v.length("name", name, 1, carrierAccountNameMax)
	}
	var adapter carriers.Carrier
	if v.required("carrier", req.Carrier) && v.oneOf("carrier", *req.Carrier, carriers.Codes()...) {
		if *req.Carrier == carriers.CarrierA {
			v.add("carrier", "carrier_a accounts are connected through the registration flow: POST /api/v1/carrier-accounts/carrier_a/register")
		} else {
			a, err := s.carrierAccountAdapter(*req.Carrier)
			if err != nil {
				return err
			}
			adapter = a
		}
	}
	if req.Credentials == nil {
		v.add("credentials", "is required")
	} else if adapter != nil {
		dropMaskedCarrierCredentials(req.Credentials)
		validateCarrierCredentials(&v, adapter, req.Credentials)
	}
	if err := v.err(); err != nil {
		return err
	}
	acctID, orgID := uuid.New(), mustPrincipal(r).OrganizationID
	sealed, err := s.secrets.SealJSON(req.Credentials, store.CarrierAccountCredentialsAD(orgID, acctID))
	if err != nil {
		return err
	}
	caps := adapter.Capabilities()
	a, err := store.CreateCarrierAccount(r.Context(), s.store.Pool, store.CarrierAccount{
		ID: acctID, OrganizationID: orgID, Name: name, Carrier: *req.Carrier,
		Credentials: sealed, SupportsRating: caps.Rating, SupportsPickup: caps.Pickups, SupportsLabels: caps.Labels,
		Status: store.CarrierAccountActive, IsTest: req.IsTest != nil && *req.IsTest, Metadata: carrierAccountMetadata(req.Metadata),
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.toCarrierAccountJSON(r, a))
	return nil
}

func carrierAccountMetadata(m map[string]any) json.RawMessage {
	if m == nil {
		return json.RawMessage(`{}`)
	}
	raw, _ := json.Marshal(m)
	return raw
}

// ---- update ----

type updateCarrierAccountRequest struct {
	Name        *string        `json:"name"`
	Credentials map[string]any `json:"credentials"`
	Status      *string        `json:"status"`
	Metadata    map[string]any `json:"metadata"`
}

func (s *Server) updateCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "carrier account")
	if err != nil {
		return err
	}
	var req updateCarrierAccountRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	orgID := mustPrincipal(r).OrganizationID
	var out store.CarrierAccount
	err = s.store.InTx(r.Context(), func(tx pgx.Tx) error {
		a, err := store.LockCarrierAccount(r.Context(), tx, orgID, id)
		if err != nil {
			return notFoundAs(err, "carrier account")
		}
		var v validator
		var patch store.CarrierAccountPatch
		if req.Name != nil {
			name := strings.TrimSpace(*req.Name)
			v.length("name", name, 1, carrierAccountNameMax)
			patch.Name = &name
		}
		if req.Status != nil {
			v.oneOf("status", *req.Status, store.CarrierAccountActive, store.CarrierAccountInactive)
			patch.Status = req.Status
		}
		if req.Metadata != nil {
			patch.Metadata = carrierAccountMetadata(req.Metadata)
		}
		if req.Credentials != nil {
			adapter, err := s.carrierAccountAdapter(a.Carrier)
			if err != nil {
				return err
			}
			merged, err := s.mergeCredentials(a, req.Credentials)
			if err != nil {
				return err
			}
			validateCarrierCredentials(&v, adapter, merged)
			if v.ok() {
				if patch.Credentials, err = s.secrets.SealJSON(merged, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID)); err != nil {
					return err
				}
				if a.Carrier == carriers.CarrierA {
					num, _ := merged["accountNumber"].(string)
					patch.AccountNumberDigest = store.CarrierAccountNumberDigest(s.secrets, num)
				}
			}
		}
		if err := v.err(); err != nil {
			return err
		}
		if a.Status == store.CarrierAccountPending && (req.Status != nil || req.Credentials != nil) {
			return errConflict("the carrier account is pending registration: complete the verification (or register again) before changing its status or credentials")
		}
		out, err = store.UpdateCarrierAccount(r.Context(), tx, orgID, id, patch)
		if errors.Is(err, store.ErrConflict) {
			return errConflict("another carrier_a account of this organization has that account number")
		}
		return err
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toCarrierAccountJSON(r, out))
	return nil
}

// mergeCredentials merges an update into the stored credentials: masked
// values are ignored, null removes a key, any other value replaces it.
func (s *Server) mergeCredentials(a store.CarrierAccount, update map[string]any) (map[string]any, error) {
	merged := map[string]any{}
	if len(a.Credentials) > 0 {
		creds, err := s.secrets.OpenJSON(a.Credentials, store.CarrierAccountCredentialsAD(a.OrganizationID, a.ID))
		if err != nil {
			return nil, err
		}
		maps.Copy(merged, creds)
	}
	dropMaskedCarrierCredentials(update)
	for k, val := range update {
		if val == nil {
			delete(merged, k)
			continue
		}
		merged[k] = val
	}
	return merged, nil
}

// ---- delete ----

func (s *Server) deleteCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "carrier account")
	if err != nil {
		return err
	}
	a, err := store.DeleteCarrierAccount(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return notFoundAs(err, "carrier account")
	}
	if a.Status == store.CarrierAccountPending && s.temporal != nil {
		// Stop its registration; best effort (the run would otherwise find
		// the account gone at its next step or its expiry).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), startWorkflowTimeout)
		defer cancel()
		var nf *serviceerror.NotFound
		if err := s.temporal.TerminateWorkflow(ctx, workflows.CarrierRegistrationWorkflowID(id.String()), "", "carrier account deleted"); err != nil && !errors.As(err, &nf) {
			s.log.WarnContext(r.Context(), "stop carrier registration", append(logAttrs(r), "carrier_account_id", id.String(), "error", err.Error())...)
		}
	}
	writeSuccess(w)
	return nil
}

// ---- test ----

// carrierAccountTestResult is the answer of POST /carrier-accounts/{id}/test.
type carrierAccountTestResult struct {
	Valid bool    `json:"valid"`
	Error *string `json:"error"`
}

func (s *Server) testCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	a, err := s.carrierAccountFromPath(r)
	if err != nil {
		return err
	}
	if a.Status == store.CarrierAccountPending {
		return errConflict("the carrier account is pending registration: complete the verification first")
	}
	adapter, err := s.carrierAccountAdapter(a.Carrier)
	if err != nil {
		return err
	}
	var testErr *string
	acct, err := store.AdapterAccount(s.secrets, a)
	if err != nil {
		msg := "the stored credentials cannot be opened; set them again"
		testErr = &msg
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), carrierAccountTestTimeout)
		err := adapter.TestCredentials(ctx, acct)
		cancel()
		if err != nil {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return err
			}
			msg := carrierAccountTestMessage(err)
			testErr = &msg
		}
	}
	if _, err := store.RecordCarrierAccountTest(r.Context(), s.store.Pool, a.OrganizationID, a.ID, testErr); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return errConflict("the carrier account is pending registration: complete the verification first")
		}
		if errors.Is(err, store.ErrNotFound) {
			return errNotFound("carrier account")
		}
		return err
	}
	writeJSON(w, http.StatusOK, carrierAccountTestResult{Valid: testErr == nil, Error: testErr})
	return nil
}

// carrierAccountTestMessage is a carrier error for people: the carrier's message
// and code (never a credential: adapters do not put them in errors).
func carrierAccountTestMessage(err error) string {
	ce, ok := carriers.AsError(err)
	if !ok || ce.Code == carriers.ErrCodeNetwork || ce.Code == carriers.ErrCodeBadResponse {
		return activities.TenantMessage(err)
	}
	msg := activities.TenantText(ce.Message)
	if msg == "" {
		msg = activities.TenantText(ce.Error())
	}
	if ce.Code != "" && !strings.Contains(msg, ce.Code) {
		msg += " (" + ce.Code + ")"
	}
	return msg
}

// ---- carrier_a registration ----

var reCarrierAAccountNumber = regexp.MustCompile(`^[0-9]{9}$`)
var reCarrierACountry = regexp.MustCompile(`^[A-Za-z]{2}$`)

type carrierAAddressRequest struct {
	StreetLines         []string `json:"streetLines"`
	City                *string  `json:"city"`
	StateOrProvinceCode *string  `json:"stateOrProvinceCode"`
	PostalCode          *string  `json:"postalCode"`
	CountryCode         *string  `json:"countryCode"`
	Residential         *bool    `json:"residential"`
}

type registerCarrierARequest struct {
	AccountNumber *string                 `json:"accountNumber"`
	CustomerName  *string                 `json:"customerName"`
	Address       *carrierAAddressRequest `json:"address"`
	IsTest        *bool                   `json:"isTest"`
	Name          *string                 `json:"name"`
}

// carrierARegisterResponse is the answer of register (not wrapped in data, as
// the specification shows it).
type carrierARegisterResponse struct {
	AccountID      string                 `json:"accountId"`
	MFAOptions     carrierAMFAOptionsJSON `json:"mfaOptions"`
	TestModeBypass bool                   `json:"testModeBypass"`
}

// carrierAMFAOptionsJSON is mfaOptions; email and phoneNumber (masked) are
// null when the carrier gave none (always so with testModeBypass).
type carrierAMFAOptionsJSON struct {
	MFARequired bool    `json:"mfaRequired"`
	Email       *string `json:"email"`
	PhoneNumber *string `json:"phoneNumber"`
	Options     struct {
		Invoice    bool     `json:"invoice"`
		SecureCode []string `json:"secureCode"`
	} `json:"options"`
}

func toCarrierAMFAOptionsJSON(o workflows.MFAOptionsResult) carrierAMFAOptionsJSON {
	out := carrierAMFAOptionsJSON{MFARequired: o.MFARequired}
	if o.Email != "" {
		out.Email = &o.Email
	}
	if o.PhoneNumber != "" {
		out.PhoneNumber = &o.PhoneNumber
	}
	out.Options.Invoice = o.Options.Invoice
	out.Options.SecureCode = o.Options.SecureCode
	if out.Options.SecureCode == nil {
		out.Options.SecureCode = []string{}
	}
	return out
}

func (s *Server) registerCarrierA(w http.ResponseWriter, r *http.Request) error {
	var req registerCarrierARequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	number := strings.TrimSpace(deref(req.AccountNumber))
	if v.required("accountNumber", req.AccountNumber) && !reCarrierAAccountNumber.MatchString(number) {
		v.add("accountNumber", "must be a 9-digit account number")
	}
	customer := strings.TrimSpace(deref(req.CustomerName))
	if v.required("customerName", req.CustomerName) {
		v.length("customerName", customer, 1, carrierACustomerNameMax)
	}
	name := customer
	if req.Name != nil {
		name = strings.TrimSpace(*req.Name)
		v.length("name", name, 1, carrierAccountNameMax)
	}
	var addr carriers.RegistrationAddress
	if req.Address == nil {
		v.add("address", "is required")
	} else {
		a := req.Address
		for i, l := range a.StreetLines {
			if l = strings.TrimSpace(l); l != "" {
				addr.StreetLines = append(addr.StreetLines, l)
			} else {
				v.add("address.streetLines["+strconv.Itoa(i)+"]", "must not be blank")
			}
		}
		if len(a.StreetLines) == 0 {
			v.add("address.streetLines", "needs at least one line")
		}
		if v.required("address.city", a.City) {
			addr.City = strings.TrimSpace(*a.City)
		}
		if v.required("address.postalCode", a.PostalCode) {
			addr.PostalCode = strings.TrimSpace(*a.PostalCode)
		}
		if v.required("address.countryCode", a.CountryCode) {
			addr.CountryCode = strings.ToUpper(strings.TrimSpace(*a.CountryCode))
			if !reCarrierACountry.MatchString(addr.CountryCode) {
				v.add("address.countryCode", "must be two letters")
			}
		}
		addr.StateOrProvinceCode = strings.ToUpper(strings.TrimSpace(deref(a.StateOrProvinceCode)))
		addr.Residential = a.Residential != nil && *a.Residential
	}
	if err := v.err(); err != nil {
		return err
	}
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	adapter, err := s.carrierAccountAdapter(carriers.CarrierA)
	if err != nil {
		return err
	}
	p := mustPrincipal(r)
	newID := uuid.New()
	sealed, err := s.secrets.SealJSON(map[string]any{"accountNumber": number}, store.CarrierAccountCredentialsAD(p.OrganizationID, newID))
	if err != nil {
		return err
	}
	caps := adapter.Capabilities()
	isTest := req.IsTest != nil && *req.IsTest
	ra, err := store.UpsertRegistrationAccount(r.Context(), s.store.Pool, store.CarrierAccount{
		ID: newID, OrganizationID: p.OrganizationID, Name: name, Carrier: carriers.CarrierA,
		Credentials: sealed, AccountNumberDigest: store.CarrierAccountNumberDigest(s.secrets, number),
		SupportsRating: caps.Rating, SupportsPickup: caps.Pickups, SupportsLabels: caps.Labels, IsTest: isTest,
	}, req.Name != nil)
	if err != nil {
		return err
	}
	acctID := ra.Account.ID.String()

	args := workflows.RegisterArgs{
		CustomerName: customer, Address: addr, IsTest: isTest, NewAccount: ra.Created,
		RequestedBy:  workflows.Actor{Type: p.Kind, ID: p.ActorID().String(), Name: p.Name},
		MaxWrongPINs: s.limits.wrongPINs,
	}
	res, err := s.startCarrierARegistration(r, p.OrganizationID.String(), acctID, args)
	if err != nil {
		if ra.Created && isTemporalUnavailable(r.Context(), err) && !isStartUnknown(err) {
			// Temporal refused, or has no run for the account: nothing
			// runs for it, do not leave it pending. When the run may exist
			// the account stays pending; the reconciler settles it if the
			// run does not.
			if _, derr := store.DeletePendingCarrierAccount(context.WithoutCancel(r.Context()), s.store.Pool, p.OrganizationID, ra.Account.ID); derr != nil {
				s.log.WarnContext(r.Context(), "remove unregistered carrier account", append(logAttrs(r), "carrier_account_id", acctID, "error", derr.Error())...)
			}
		}
		return s.carrierARegistrationError(r, err)
	}
	writeJSON(w, http.StatusOK, carrierARegisterResponse{AccountID: acctID, MFAOptions: toCarrierAMFAOptionsJSON(res.MFAOptions), TestModeBypass: res.TestModeBypass})
	return nil
}

// startCarrierARegistration sends the register update to the account's
// CarrierRegistration workflow, starting it when none runs
// (update-with-start), and waits for the carrier's answer. A run that is
// just closing refuses the update; the update is then sent again, which
// starts a new run. An answer lost to a deadline or an outage
// (startMayHaveRun) sends the same update again under the same update id,
// so that Temporal answers the first one's outcome instead of registering
// twice; when the outcome is still unknown the workflow is described, and
// the error is a *startUnknownError unless Temporal knows no run of this
// request.
func (s *Server) startCarrierARegistration(r *http.Request, orgID, acctID string, args workflows.RegisterArgs) (workflows.RegisterResult, error) {
	since := time.Now()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), carrierARegistrationTimeout)
	defer cancel()
	wfID := workflows.CarrierRegistrationWorkflowID(acctID)
	updateID := uuid.NewString()
	var lastErr error
	waitClose := false
	for attempt := 0; attempt < 3; attempt++ {
		if waitClose {
			// Wait for the closing run to close.
			wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
			_ = s.temporal.GetWorkflow(wctx, wfID, "").Get(wctx, nil)
			wcancel()
			// A new run gets a new update.
			updateID = uuid.NewString()
		}
		opts := s.withOrganizationName(r.Context(), worker.Start{ID: wfID, TaskQueue: s.taskQueue, OrganizationID: orgID,
			Summary: "Registration of carrier_a account " + acctID,
			Memo:    map[string]any{"carrierAccountId": acctID, "carrier": "carrier_a"}}.Options())
		op := s.temporal.NewWithStartWorkflowOperation(opts, workflows.CarrierRegistration, workflows.CarrierRegistrationInput{
			OrganizationID: orgID, AccountID: acctID,
		})
		handle, err := s.temporal.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
			StartWorkflowOperation: op,
			UpdateOptions: client.UpdateWorkflowOptions{
				UpdateID:     updateID,
				WorkflowID:   wfID,
				UpdateName:   workflows.RegistrationUpdateRegister,
				Args:         []any{args},
				WaitForStage: client.WorkflowUpdateStageCompleted,
			},
		})
		var res workflows.RegisterResult
		if err == nil {
			err = handle.Get(ctx, &res)
		}
		if err == nil {
			return res, nil
		}
		lastErr = err
		if startMayHaveRun(err) {
			waitClose = false
			s.log.WarnContext(r.Context(), "carrier registration outcome unknown; sending it again", append(logAttrs(r), "workflow_id", wfID, "attempt", attempt, "error", err.Error())...)
			continue
		}
		var appErr *temporal.ApplicationError
		if !errors.As(err, &appErr) || appErr.Type() != workflows.ErrTypeRegistrationNotWaiting && appErr.Type() != workflows.ErrTypeRegistrationExpired {
			return workflows.RegisterResult{}, err
		}
		waitClose = true
	}
	if startMayHaveRun(lastErr) {
		dctx, dcancel := context.WithTimeout(context.WithoutCancel(r.Context()), startRetryTimeout)
		defer dcancel()
		if _, found, derr := s.runStartedSince(dctx, wfID, since); derr != nil || found {
			return workflows.RegisterResult{}, &startUnknownError{err: lastErr}
		}
	}
	return workflows.RegisterResult{}, lastErr
}

// carrierARegistrationError maps a failed registration update to the API's errors.
func (s *Server) carrierARegistrationError(r *http.Request, err error) error {
	var appErr *temporal.ApplicationError
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &appErr):
		msg := activities.TenantText(appErr.Message())
		switch appErr.Type() {
		case workflows.ErrTypeRegistrationNotWaiting, workflows.ErrTypeRegistrationExpired:
			return errConflict(msg)
		case workflows.ErrTypeRegistrationOptionNotOffered, workflows.ErrTypeRegistrationInvalid, activities.ErrTypeRegistrationRefused:
			return errBadRequest("validation_error", msg)
		case activities.ErrTypeRegistrationAccountNotFound:
			return &Error{Status: 400, Code: "validation_error", Message: msg, Details: []FieldError{{Field: "accountNumber", Message: msg}}}
		case activities.ErrTypeRegistrationAddressInvalid:
			return &Error{Status: 400, Code: "validation_error", Message: msg, Details: []FieldError{{Field: "address", Message: msg}}}
		case activities.ErrTypeRegistrationSessionExpired:
			return errConflict(msg)
		case activities.ErrTypeRegistrationCarrierUnavailable:
			return &Error{Status: http.StatusBadGateway, Code: "carrier_error", Message: msg}
		case activities.ErrTypeRegistrationAccountGone:
			return errNotFound("carrier account")
		}
	case errors.As(err, &notFound):
		// No run for the workflow id, or it is closed.
		return errConflict("no registration is waiting for this account; register it again")
	case isTemporalUnavailable(r.Context(), err):
		s.log.WarnContext(r.Context(), "carrier registration update", append(logAttrs(r), "error", err.Error())...)
		return errTemporalUnavailable()
	}
	return err
}

// carrierAStepAccount validates an MFA step (the body's other fields are
// already checked into v) and loads its account, which must be a carrier_a
// account pending registration: 400 for the body, 404 when it is
// not the organization's, 409 when it is not pending registration.
func (s *Server) carrierAStepAccount(r *http.Request, v *validator, raw *string) (store.CarrierAccount, error) {
	v.required("accountId", raw)
	if err := v.err(); err != nil {
		return store.CarrierAccount{}, err
	}
	id, err := uuid.Parse(strings.TrimSpace(*raw))
	if err != nil {
		// A malformed id names no account.
		return store.CarrierAccount{}, errNotFound("carrier account")
	}
	a, err := store.CarrierAccountByID(r.Context(), s.store.Pool, mustPrincipal(r).OrganizationID, id)
	if err != nil {
		return a, notFoundAs(err, "carrier account")
	}
	return a, checkCarrierARegistrationPending(a)
}

// checkCarrierARegistrationPending refuses an MFA step for an account not pending registration.
func checkCarrierARegistrationPending(a store.CarrierAccount) error {
	if a.Carrier != carriers.CarrierA {
		return errConflict("the carrier account is not a carrier_a account")
	}
	if a.Status != store.CarrierAccountPending {
		msg := "the carrier account is not pending registration (status " + a.Status + ")"
		if a.LastError != nil {
			msg += ": " + *a.LastError
		}
		return errConflict(msg)
	}
	return nil
}

// updateCarrierARegistration sends an MFA step to the account's running
// CarrierRegistration and waits for its answer.
func (s *Server) updateCarrierARegistration(r *http.Request, acctID uuid.UUID, name string, arg, out any) error {
	if s.temporal == nil {
		return errTemporalUnavailable()
	}
	ctx, cancel := context.WithTimeout(r.Context(), carrierARegistrationTimeout)
	defer cancel()
	handle, err := s.temporal.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflows.CarrierRegistrationWorkflowID(acctID.String()),
		UpdateName:   name,
		Args:         []any{arg},
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err == nil {
		err = handle.Get(ctx, out)
	}
	if err != nil {
		return s.carrierARegistrationError(r, err)
	}
	return nil
}

type carrierARequestPINRequest struct {
	AccountID *string `json:"accountId"`
	Option    *string `json:"option"`
}

func (s *Server) requestCarrierAPIN(w http.ResponseWriter, r *http.Request) error {
	var req carrierARequestPINRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("option", req.Option) {
		v.oneOf("option", strings.ToUpper(strings.TrimSpace(*req.Option)), carriers.MFASMS, carriers.MFACall, carriers.MFAEmail)
	}
	a, err := s.carrierAStepAccount(r, &v, req.AccountID)
	if err != nil {
		return err
	}
	if err := s.limits.carrierPINAccount.check(a.ID.String()); err != nil {
		return err
	}
	var res workflows.RequestPINResult
	if err := s.updateCarrierARegistration(r, a.ID, workflows.RegistrationUpdateRequestPIN,
		workflows.RequestPINArgs{Option: strings.ToUpper(strings.TrimSpace(*req.Option))}, &res); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

type carrierAVerifyPINRequest struct {
	AccountID *string `json:"accountId"`
	PIN       *string `json:"pin"`
}

// carrierAVerifyResponse is {verified: true} or {verified: false, error}.
type carrierAVerifyResponse struct {
	Verified bool    `json:"verified"`
	Error    *string `json:"error,omitempty"`
}

func toCarrierAVerifyResponse(res workflows.VerifyResult) carrierAVerifyResponse {
	out := carrierAVerifyResponse{Verified: res.Verified}
	if !res.Verified {
		msg := res.Error
		out.Error = &msg
	}
	return out
}

func (s *Server) verifyCarrierAPIN(w http.ResponseWriter, r *http.Request) error {
	var req carrierAVerifyPINRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	if v.required("pin", req.PIN) {
		v.maxLen("pin", strings.TrimSpace(*req.PIN), 32)
	}
	a, err := s.carrierAStepAccount(r, &v, req.AccountID)
	if err != nil {
		return err
	}
	var res workflows.VerifyResult
	if err := s.updateCarrierARegistration(r, a.ID, workflows.RegistrationUpdateVerifyPIN,
		workflows.VerifyPINArgs{PIN: strings.TrimSpace(*req.PIN)}, &res); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toCarrierAVerifyResponse(res))
	return nil
}

type carrierAInvoiceInfoRequest struct {
	InvoiceNumber *string  `json:"invoiceNumber"`
	InvoiceDate   *string  `json:"invoiceDate"`
	InvoiceAmount *float64 `json:"invoiceAmount"`
	Currency      *string  `json:"currency"`
}

type carrierAVerifyInvoiceRequest struct {
	AccountID   *string                     `json:"accountId"`
	InvoiceInfo *carrierAInvoiceInfoRequest `json:"invoiceInfo"`
}

func (s *Server) verifyCarrierAInvoice(w http.ResponseWriter, r *http.Request) error {
	var req carrierAVerifyInvoiceRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	var v validator
	var inv carriers.Invoice
	if req.InvoiceInfo == nil {
		v.add("invoiceInfo", "is required")
	} else {
		ii := req.InvoiceInfo
		if v.required("invoiceInfo.invoiceNumber", ii.InvoiceNumber) {
			inv.Number = strings.TrimSpace(*ii.InvoiceNumber)
			v.maxLen("invoiceInfo.invoiceNumber", inv.Number, 50)
		}
		if v.required("invoiceInfo.invoiceDate", ii.InvoiceDate) {
			inv.Date = strings.TrimSpace(*ii.InvoiceDate)
			if _, err := time.Parse("2006-01-02", inv.Date); err != nil {
				v.add("invoiceInfo.invoiceDate", "must be a date (YYYY-MM-DD)")
			}
		}
		if ii.InvoiceAmount == nil {
			v.add("invoiceInfo.invoiceAmount", "is required")
		} else if *ii.InvoiceAmount <= 0 || *ii.InvoiceAmount > 1e12 {
			v.add("invoiceInfo.invoiceAmount", "must be a positive number")
		} else {
			inv.Amount = *ii.InvoiceAmount
		}
		inv.Currency = "USD"
		if ii.Currency != nil {
			inv.Currency = strings.ToUpper(strings.TrimSpace(*ii.Currency))
			if !isCurrencyCode(inv.Currency) {
				v.add("invoiceInfo.currency", "must be an ISO 4217 code (3 letters)")
			}
		}
	}
	a, err := s.carrierAStepAccount(r, &v, req.AccountID)
	if err != nil {
		return err
	}
	var res workflows.VerifyResult
	if err := s.updateCarrierARegistration(r, a.ID, workflows.RegistrationUpdateVerifyInvoice,
		workflows.VerifyInvoiceArgs{Invoice: inv}, &res); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toCarrierAVerifyResponse(res))
	return nil
}
