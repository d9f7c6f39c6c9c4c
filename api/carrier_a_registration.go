package api

import (
	"net/http"

	"github.com/fos-dev/fos/carrieraccounts"
)

// carrier_a's registration endpoints (carrieraccounts.Service.Register and
// the MFA steps): register, then request and verify a PIN, or verify an
// invoice.

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

func toCarrierAMFAOptionsJSON(o carrieraccounts.MFAOptions) carrierAMFAOptionsJSON {
	out := carrierAMFAOptionsJSON{MFARequired: o.MFARequired}
	if o.Email != "" {
		out.Email = &o.Email
	}
	if o.PhoneNumber != "" {
		out.PhoneNumber = &o.PhoneNumber
	}
	out.Options.Invoice = o.Invoice
	out.Options.SecureCode = o.SecureCode
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
	in := carrieraccounts.RegisterInput{AccountNumber: req.AccountNumber, CustomerName: req.CustomerName,
		IsTest: req.IsTest != nil && *req.IsTest, Name: req.Name}
	if a := req.Address; a != nil {
		in.Address = &carrieraccounts.AddressInput{StreetLines: a.StreetLines, City: a.City, StateOrProvinceCode: a.StateOrProvinceCode,
			PostalCode: a.PostalCode, CountryCode: a.CountryCode, Residential: a.Residential != nil && *a.Residential}
	}
	res, err := s.CarrierAccounts.Register(r.Context(), actorOf(r), in)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, carrierARegisterResponse{AccountID: res.AccountID.String(), MFAOptions: toCarrierAMFAOptionsJSON(res.MFAOptions), TestModeBypass: res.TestModeBypass})
	return nil
}

type carrierARequestPINRequest struct {
	AccountID *string `json:"accountId"`
	Option    *string `json:"option"`
}

// carrierAPINRequestedJSON is the answer of request-pin.
type carrierAPINRequestedJSON struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
}

func (s *Server) requestCarrierAPIN(w http.ResponseWriter, r *http.Request) error {
	var req carrierARequestPINRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	res, err := s.CarrierAccounts.RequestPIN(r.Context(), actorOf(r), req.AccountID, req.Option)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, carrierAPINRequestedJSON{Success: res.Success, Message: res.Message})
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

func toCarrierAVerifyResponse(res carrieraccounts.Verified) carrierAVerifyResponse {
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
	res, err := s.CarrierAccounts.VerifyPIN(r.Context(), actorOf(r), req.AccountID, req.PIN)
	if err != nil {
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
	var inv *carrieraccounts.InvoiceInput
	if ii := req.InvoiceInfo; ii != nil {
		inv = &carrieraccounts.InvoiceInput{Number: ii.InvoiceNumber, Date: ii.InvoiceDate, Amount: ii.InvoiceAmount, Currency: ii.Currency}
	}
	res, err := s.CarrierAccounts.VerifyInvoice(r.Context(), actorOf(r), req.AccountID, inv)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toCarrierAVerifyResponse(res))
	return nil
}
