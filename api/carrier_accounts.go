package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/fos-dev/fos/carrieraccounts"
	"github.com/fos-dev/fos/carriers"
)

// mountCarrierAccounts registers the carrier account and carrier_a
// registration endpoints (carrieraccounts.Service).
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
// masked (a row whose credentials cannot be opened renders {}).
func (s *Server) toCarrierAccountJSON(r *http.Request, a carrieraccounts.Account) carrierAccountJSON {
	masked := map[string]string{}
	for _, k := range s.CarrierAccounts.CredentialKeys(r.Context(), a) {
		masked[k] = carrieraccounts.CredentialMask
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

// ---- list, get ----

func (s *Server) listCarrierAccounts(w http.ResponseWriter, r *http.Request) error {
	var details fieldErrors
	p, err := parsePage(r, 20, 100)
	details.collect(err)
	carrier, err := queryEnum(r, "carrier", carriers.Codes()...)
	details.collect(err)
	// The specification lists active, inactive and error; pending (a
	// registration under way) is accepted too.
	status, err := queryEnum(r, "status", carrieraccounts.Statuses...)
	details.collect(err)
	if len(details) > 0 {
		return errValidation(details...)
	}
	page, err := s.CarrierAccounts.List(r.Context(), actorOf(r), carrieraccounts.Filter{
		Carrier: carrier, Status: status, Limit: p.Limit, Offset: p.Offset(),
	})
	if err != nil {
		return err
	}
	out := make([]carrierAccountJSON, 0, len(page.Items))
	for _, a := range page.Items {
		out = append(out, s.toCarrierAccountJSON(r, a))
	}
	writeList(w, out, p, page.Total)
	return nil
}

func (s *Server) getCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "carrier account")
	if err != nil {
		return err
	}
	a, err := s.CarrierAccounts.Get(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toCarrierAccountJSON(r, a))
	return nil
}

// ---- create, update, delete ----

type createCarrierAccountRequest struct {
	Name        *string        `json:"name"`
	Carrier     *string        `json:"carrier"`
	Credentials map[string]any `json:"credentials"`
	IsTest      *bool          `json:"isTest"`
	Metadata    map[string]any `json:"metadata"`
}

func (s *Server) createCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	var req createCarrierAccountRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	a, err := s.CarrierAccounts.Create(r.Context(), actorOf(r), carrieraccounts.CreateInput{
		Name: req.Name, Carrier: req.Carrier, Credentials: req.Credentials, IsTest: req.IsTest != nil && *req.IsTest, Metadata: req.Metadata,
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusCreated, s.toCarrierAccountJSON(r, a))
	return nil
}

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
	a, err := s.CarrierAccounts.Update(r.Context(), actorOf(r), id, carrieraccounts.UpdateInput{
		Name: req.Name, Credentials: req.Credentials, Status: req.Status, Metadata: req.Metadata,
	})
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, s.toCarrierAccountJSON(r, a))
	return nil
}

func (s *Server) deleteCarrierAccount(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id", "carrier account")
	if err != nil {
		return err
	}
	if err := s.CarrierAccounts.Delete(r.Context(), actorOf(r), id); err != nil {
		return err
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
	id, err := pathID(r, "id", "carrier account")
	if err != nil {
		return err
	}
	res, err := s.CarrierAccounts.Test(r.Context(), actorOf(r), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, carrierAccountTestResult{Valid: res.Valid, Error: res.Error})
	return nil
}
