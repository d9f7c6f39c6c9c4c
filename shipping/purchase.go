package shipping

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
)

// A purchase is a call that spends money at a carrier (a label) or books
// something (a pickup), CONTRACT 8b. Its course is the same wherever it
// runs, in the ShipmentLabel and PickupBooking workflows (each step an
// activity) or inside one activity of a batch (each step a direct call,
// PurchaseLabel): buy once; record what was bought, or undo it (void,
// cancel) when it cannot be recorded; when the carrier's answer was lost,
// look the purchase up where the carrier can and undo what is found, else
// end the record as unknown with the reason. The steps are the Service's
// methods (BuyLabel, RecordLabel, VoidLabel, FindLabel, EndLabelPurchase;
// BookPickup, …); Course.Run is the decision between them, pure Go with no
// I/O of its own, so a workflow runs it deterministically.

// Error types of the purchase steps: the StepError.Type, and the
// temporal.ApplicationError type the activities give it. Only
// ErrTypeCarrierNotSent is worth repeating: the call provably never
// reached the carrier (carriers.NotSent).
const (
	// ErrTypeCarrierNotSent: the call never reached the carrier
	// (connection refused, DNS failure, 429); repeating it is safe.
	ErrTypeCarrierNotSent = "CarrierNotSent"
	// ErrTypeCarrierRefused: the carrier answered with a definite refusal
	// (or the service refused before calling); nothing was bought. Its
	// Failure says why.
	ErrTypeCarrierRefused = "CarrierRefused"
	// ErrTypeCarrierOutcomeUnknown: the call may have reached the carrier
	// and no definite answer came back (a timeout after sending, a reset, a
	// 5xx, an unreadable answer).
	ErrTypeCarrierOutcomeUnknown = "CarrierOutcomeUnknown"
	// ErrTypePurchaseGone: the shipment or pickup being bought or booked
	// was deleted, or is no longer pending.
	ErrTypePurchaseGone = "PurchaseGone"
	// ErrTypeInvalidInput: a step's input cannot be used (not a UUID, a
	// config that does not decode).
	ErrTypeInvalidInput = "InvalidInput"
)

// StepError is the classified failure of a purchase step. The activities
// turn it into a temporal.ApplicationError of the same Type, with Failure
// as its details; a direct caller (PurchaseLabel) reads it as it is. An
// error of a step that is not a StepError (a database write that failed)
// is worth retrying.
type StepError struct {
	Type    string
	Message string
	// Failure is what a client may read of the carrier's failure, when
	// there is one.
	Failure *CarrierFailure
	// NonRetryable: repeating the step cannot help.
	NonRetryable bool
	Err          error
}

func (e *StepError) Error() string {
	if e.Err != nil {
		return e.Type + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Type + ": " + e.Message
}

func (e *StepError) Unwrap() error { return e.Err }

// StepErrorType is the Type of err's StepError ("" when it has none).
func StepErrorType(err error) string {
	var se *StepError
	if errors.As(err, &se) {
		return se.Type
	}
	return ""
}

// CarrierFailure is what a client may read of a failed carrier call:
// never credentials, internal addresses or Go error text. It travels in
// workflow payloads (the details of ErrTypeCarrierRefused and
// ErrTypeCarrierOutcomeUnknown): its JSON is stable.
type CarrierFailure struct {
	Carrier string `json:"carrier"`
	// Code is the carrier's error code ("" when the carrier gave none).
	Code string `json:"code"`
	// Message is CarrierErrorMessage of the failure; CarrierMessage the
	// carrier's own message, when it answered.
	Message        string `json:"message"`
	CarrierMessage string `json:"carrierMessage"`
	StatusCode     int    `json:"statusCode"`
	// Invalid: the carrier refused the request itself as invalid (the
	// client's to fix); NotSupported: the carrier does not offer it.
	Invalid      bool `json:"invalid"`
	NotSupported bool `json:"notSupported"`
	// APICode, when set, is the API error code of a refusal that happened
	// before any carrier call (e.g. carrier_account_not_active).
	APICode string `json:"apiCode,omitempty"`
	// RetryAfter is how long a carrier that throttled the call (429) asked
	// to wait.
	RetryAfter time.Duration `json:"retryAfter,omitempty"`
}

// CarrierFailureOf describes a failed carrier call.
func CarrierFailureOf(err error) CarrierFailure {
	f := CarrierFailure{Message: CarrierErrorMessage(err), Invalid: CarrierRefusedRequest(err), NotSupported: errors.Is(err, carriers.ErrNotSupported)}
	if ce, ok := carriers.AsError(err); ok {
		f.Carrier, f.Code, f.CarrierMessage, f.StatusCode, f.RetryAfter = ce.Carrier, ce.Code, ce.Message, ce.StatusCode, ce.RetryAfter
	}
	return f
}

// CarrierRefusedRequest reports whether the carrier refused the request
// itself as invalid (ErrInvalidRequest, or another 4xx that is neither a
// credentials refusal, a not-found, a timeout nor a rate limit): the
// client's to fix, not the carrier's failure.
func CarrierRefusedRequest(err error) bool {
	if errors.Is(err, carriers.ErrUnauthorized) || errors.Is(err, carriers.ErrNotSupported) || errors.Is(err, carriers.ErrNotConfigured) {
		return false
	}
	if errors.Is(err, carriers.ErrInvalidRequest) {
		return true
	}
	ce, ok := carriers.AsError(err)
	if !ok || ce.Retryable || ce.StatusCode < 400 || ce.StatusCode >= 500 {
		return false
	}
	switch ce.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return false
	}
	return true
}

// CarrierErrorMessage is what a client may read of a failed carrier call:
// the carrier's own code and message when the carrier answered, a timeout,
// or a generic message. The text of network, decoding and internal errors
// (which may name internal addresses) is never part of it: log that
// separately.
func CarrierErrorMessage(err error) string {
	timedOut := errors.Is(err, context.DeadlineExceeded)
	ce, ok := carriers.AsError(err)
	switch {
	case timedOut:
		return "the carrier did not answer in time"
	case !ok:
		return "the carrier could not be called"
	case ce.Code == carriers.ErrCodeNetwork:
		return "the carrier could not be reached"
	case ce.Code == carriers.ErrCodeBadResponse:
		return "the carrier's answer could not be read"
	}
	return domain.TenantText(ce.Error())
}

// carrierCallError classifies a failed money-spending call: never sent
// (retryable), outcome unknown or refused (not retryable), with the
// CarrierFailure.
func carrierCallError(err error) error {
	f := CarrierFailureOf(err)
	switch {
	case carriers.NotSent(err):
		return &StepError{Type: ErrTypeCarrierNotSent, Message: f.Message, Failure: &f, Err: err}
	case carriers.Unanswered(err):
		return &StepError{Type: ErrTypeCarrierOutcomeUnknown, Message: f.Message, Failure: &f, NonRetryable: true, Err: err}
	}
	return &StepError{Type: ErrTypeCarrierRefused, Message: f.Message, Failure: &f, NonRetryable: true, Err: err}
}

// compensationError classifies a failed void or cancellation, which is
// safe to repeat: a call that never arrived or was not answered may be
// repeated (ErrTypeCarrierOutcomeUnknown, retryable), a definite refusal
// not.
func compensationError(err error) error {
	f := CarrierFailureOf(err)
	if carriers.NotSent(err) || carriers.Unanswered(err) {
		return &StepError{Type: ErrTypeCarrierOutcomeUnknown, Message: f.Message, Failure: &f, Err: err}
	}
	return &StepError{Type: ErrTypeCarrierRefused, Message: f.Message, Failure: &f, NonRetryable: true, Err: err}
}

// notCalledYet is the failure of a step before the carrier call (a
// database read that failed): nothing reached the carrier, so it is the
// retryable never-sent type errType and never an unknown outcome. The
// message is for people; Err keeps the error for the operators.
func notCalledYet(errType, what string, err error) error {
	msg := "the service could not " + what + " before calling the carrier; nothing was sent to the carrier"
	se := &StepError{Type: errType, Message: msg, Err: err}
	if errType == ErrTypeCarrierNotSent {
		se.Failure = &CarrierFailure{Message: msg}
	}
	return se
}

// refusedBeforeCall is a definite refusal of a call that was never made
// (apiCode: the API's error code for it).
func refusedBeforeCall(apiCode, msg string) error {
	return &StepError{Type: ErrTypeCarrierRefused, Message: msg, Failure: &CarrierFailure{Message: msg, APICode: apiCode}, NonRetryable: true}
}

func purchaseGone(msg string) error {
	return &StepError{Type: ErrTypePurchaseGone, Message: msg, NonRetryable: true}
}

func invalidInput(msg string, err error) error {
	return &StepError{Type: ErrTypeInvalidInput, Message: msg, NonRetryable: true, Err: err}
}

// Outcomes of a purchase (PurchaseResult.Outcome).
const (
	// PurchaseDone: bought (booked) and recorded.
	PurchaseDone = "done"
	// PurchaseRefused: nothing was bought: the carrier refused, could not
	// be reached, or the record was gone before the call.
	PurchaseRefused = "refused"
	// PurchaseVoided: bought but not recorded; voided (cancelled) with the
	// carrier.
	PurchaseVoided = "voided"
	// PurchaseUnknown: the carrier's answer was lost; something may have
	// been bought. The record is kept with the reason.
	PurchaseUnknown = "unknown"
)

// PurchaseResult is the outcome of a purchase: the result of the
// ShipmentLabel and PickupBooking workflows (and of their update), and of
// PurchaseLabel. Its JSON is stable (workflow payloads).
type PurchaseResult struct {
	// ID is the shipment's or pickup's id.
	ID      string `json:"id"`
	Outcome string `json:"outcome"`
	// Reference is the label's tracking number or the pickup's confirmation
	// number.
	Reference string   `json:"reference,omitempty"`
	Messages  []string `json:"messages,omitempty"`
	// Message explains an outcome other than PurchaseDone.
	Message string `json:"message,omitempty"`
	// Failure is the carrier's failure, when it answered one.
	Failure *CarrierFailure `json:"failure,omitempty"`
}

// Messages of unknown outcomes.
const (
	// LabelUnknownMessage is the reason of a label purchase whose outcome
	// is unknown.
	LabelUnknownMessage = "the carrier did not answer; the label may or may not have been bought: check with the carrier (the shipment id is the label's reference) before buying it again"
	// PickupUnknownMessage is the reason of a booking whose outcome is
	// unknown.
	PickupUnknownMessage = "the carrier did not answer; the pickup may or may not have been booked: check with the carrier before booking it again"
)

// PurchaseWords name what a purchase buys, in its messages.
type PurchaseWords struct {
	Thing  string // "label", "pickup"
	Bought string // "bought", "booked"
	Undo   string // "void", "cancel"
	Undone string // "voided", "cancelled"
}

// Words of the label and pickup purchases.
var (
	LabelWords  = PurchaseWords{Thing: "label", Bought: "bought", Undo: "void", Undone: "voided"}
	PickupWords = PurchaseWords{Thing: "pickup", Bought: "booked", Undo: "cancel", Undone: "cancelled"}
)

// Course is a purchase's steps, given as functions, and how to read their
// errors. A workflow gives steps that run activities (with their own
// options and retries) and reads activity errors; PurchaseLabel gives
// direct calls of the Service's steps and reads StepErrors. Each step
// function repeats itself as its runner allows (Buy only while the call was
// never sent; Record and Undo while they fail in a way worth retrying).
type Course struct {
	ID      string
	Words   PurchaseWords
	Unknown string // the reason of an unknown outcome
	// Buy makes the one carrier call (ref: tracking or confirmation
	// number; alreadyRecorded: an earlier run recorded it, nothing bought).
	Buy func() (ref string, msgs []string, alreadyRecorded bool, err error)
	// Record records what was bought on its pending row.
	Record func() error
	// Undo voids (cancels) what was bought and could not be recorded.
	Undo func(ref string) error
	// Find (optional) looks up what an unanswered call bought.
	Find func() (ref string, found bool)
	// End ends the pending row of a purchase that bought nothing (deleted)
	// or whose outcome is unknown (kept with the reason).
	End func(unknown bool, reason string) error
	// ErrorType is a step error's type (the ErrType constants; "" for a
	// timeout, a cancellation or any other failure); Failure the carrier
	// failure it carries (nil if none); Message its text for people.
	ErrorType func(error) string
	Failure   func(error) *CarrierFailure
	Message   func(error) string
	// Warn logs (the workflow's replay-safe logger, or a slog logger).
	Warn func(msg string, keyvals ...any)
}

// Run buys, then records or undoes, and says the outcome. It has no I/O of
// its own: every effect is a step.
func (p Course) Run() PurchaseResult {
	w := p.Words
	out := PurchaseResult{ID: p.ID}
	end := func(unknown bool, reason string) {
		if err := p.End(unknown, reason); err != nil {
			p.Warn("could not end the pending "+w.Thing+"; the reconciler will", "Id", p.ID, "Error", err)
		}
	}
	failureMessage := func(err error) string {
		if f := p.Failure(err); f != nil && f.Message != "" {
			return f.Message
		}
		return p.Message(err)
	}

	ref, msgs, already, err := p.Buy()
	switch typ := p.ErrorType(err); {
	case err == nil && already:
		out.Outcome, out.Reference = PurchaseDone, ref
		return out
	case err == nil:
		out.Reference, out.Messages = ref, msgs
		rerr := p.Record()
		if rerr == nil {
			out.Outcome = PurchaseDone
			return out
		}
		// Bought but not recorded: undo it, so it is not billed.
		msg := p.Message(rerr)
		p.Warn(w.Thing+" "+w.Bought+" but not recorded; undoing it", "Id", p.ID, "Reference", ref, "Error", msg)
		if uerr := p.Undo(ref); uerr != nil {
			umsg := p.Message(uerr)
			out.Outcome = PurchaseUnknown
			out.Message = "the " + w.Thing + " " + ref + " was " + w.Bought + " but could not be recorded (" + msg + ") nor " + w.Undone +
				" (" + umsg + "): " + w.Undo + " it with the carrier"
			end(true, out.Message)
			return out
		}
		out.Outcome = PurchaseVoided
		out.Message = "the " + w.Thing + " could not be recorded (" + msg + "); it was " + w.Undone + " with the carrier"
		end(false, "")
		return out
	case typ == ErrTypePurchaseGone:
		out.Outcome, out.Message = PurchaseRefused, failureMessage(err)
		return out
	case typ == ErrTypeCarrierRefused, typ == ErrTypeCarrierNotSent, typ == ErrTypeInvalidInput:
		// Nothing was bought.
		out.Outcome, out.Message, out.Failure = PurchaseRefused, failureMessage(err), p.Failure(err)
		end(false, "")
		return out
	}
	// The outcome is unknown: a timeout after sending, a 5xx, a worker that
	// died during the call. Never repeated; looked up where the carrier can
	// (only what is found is conclusive: it is undone).
	out.Failure = p.Failure(err)
	if p.Find != nil {
		if found, ok := p.Find(); ok {
			out.Reference = found
			if p.Undo(found) == nil {
				out.Outcome = PurchaseVoided
				out.Message = "the carrier did not answer; the " + w.Thing + " it " + w.Bought + " (" + found + ") was " + w.Undone + ": nothing is billed, try again"
				end(false, "")
				return out
			}
		}
	}
	out.Outcome, out.Message = PurchaseUnknown, p.Unknown
	if out.Failure != nil {
		out.Message += " (" + out.Failure.Message + ")"
	}
	p.Warn(w.Thing+" outcome unknown", "Id", p.ID, "Message", out.Message)
	end(true, out.Message)
	return out
}
