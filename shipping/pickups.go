package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// PickupRuns is the port through which the Service books and cancels
// pickups in their own workflows (PickupBooking pickup/<id> with
// update-with-start, PickupCancel pickup-cancel/<id>), implemented by
// worker.TemporalShipping. BookPickup answers as LabelRuns does (an error
// of kind Unavailable: the outcome is unknown, keep the pending pickup).
// CancelPickup answers the activity's failure as a *StepError,
// ErrRunOutcomeUnknown when the run ended without an answer, or
// domain.WorkflowsUnavailable.
type PickupRuns interface {
	BookPickup(ctx context.Context, in PickupRun) (PurchaseResult, error)
	CancelPickup(ctx context.Context, orgID, pickupID uuid.UUID, reason string) (CancelPickupResult, error)
}

// PickupRun is a booking to run for a pending pickup.
type PickupRun struct {
	OrganizationID   uuid.UUID
	PickupID         uuid.UUID
	CarrierAccountID uuid.UUID
	Request          carriers.PickupRequest
}

// ErrRunOutcomeUnknown: a run ended without its activity's answer (timed
// out, cancelled, terminated): the carrier may or may not have acted.
var ErrRunOutcomeUnknown = errors.New("the workflow run ended without an answer")

// Pickup is a carrier pickup as stored.
type Pickup = store.Pickup

// PickupStatuses are the pickup statuses a list filters by.
var PickupStatuses = store.PickupStatuses

// Bounds of a pickup the specification leaves open.
const (
	MaxPickupPackages = 999
	MaxPickupWeight   = 100_000
	MaxPickupReason   = 500
)

var pickupTimeRe = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)

// ListPickupsInput filters a pickup list.
type ListPickupsInput struct {
	Status           string
	CarrierAccountID *uuid.UUID
	// FromDate and ToDate bound the pickup date, both inclusive.
	FromDate, ToDate *time.Time
	Limit, Offset    int
}

// ListPickups lists the organization's booked pickups, newest pickup date
// first, with the number of all that match. The actor needs pickups:read.
func (s *Service) ListPickups(ctx context.Context, actor domain.Actor, in ListPickupsInput) ([]Pickup, int, error) {
	if err := actor.RequireScope("pickups:read"); err != nil {
		return nil, 0, err
	}
	if in.FromDate != nil && in.ToDate != nil && in.ToDate.Before(*in.FromDate) {
		return nil, 0, domain.InvalidField("toDate", "must not be before fromDate")
	}
	return store.ListPickups(ctx, s.store.Pool, actor.OrganizationID, store.PickupFilter{
		Status: in.Status, CarrierAccountID: in.CarrierAccountID, FromDate: in.FromDate, ToDate: in.ToDate,
		Today: time.Now(), Limit: in.Limit, Offset: in.Offset,
	})
}

// GetPickup is one booked pickup of the organization. The actor needs
// pickups:read.
func (s *Service) GetPickup(ctx context.Context, actor domain.Actor, id uuid.UUID) (Pickup, error) {
	if err := actor.RequireScope("pickups:read"); err != nil {
		return Pickup{}, err
	}
	return s.visiblePickup(ctx, actor.OrganizationID, id)
}

func (s *Service) visiblePickup(ctx context.Context, orgID, id uuid.UUID) (Pickup, error) {
	p, err := store.PickupByID(ctx, s.store.Pool, orgID, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && !p.Visible() {
		return Pickup{}, domain.NotFound("pickup")
	}
	return p, err
}

// PickupWeight is a pickup's total weight.
type PickupWeight struct {
	Value float64 `json:"value"`
	Unit  string  `json:"unit"`
	// Object: it was given as {value, unit} (its errors name
	// totalWeight.value), not as a number of pounds.
	Object bool `json:"-"`
}

// PickupInput is a pickup to book.
type PickupInput struct {
	// ID names the pickup; the same ID is the same booking (an
	// Idempotency-Key's). Zero: a new one.
	ID               uuid.UUID
	CarrierAccountID uuid.UUID
	// Address: address1, city, zip and countryCode required, provinceCode
	// for US and CA; name, company, phone and address2 go to the carrier
	// only.
	Address *Address
	// Date (UTC, not past), ReadyTime and CloseTime (HH:MM, ready before
	// close).
	Date                 *time.Time
	ReadyTime, CloseTime string
	// PackageCount is 1-999 (nil: 1).
	PackageCount *int
	TotalWeight  *PickupWeight
	Metadata     json.RawMessage
}

// Validate names every problem of the booking.
func (in *PickupInput) Validate() domain.FieldErrors {
	var v domain.FieldErrors
	if in.CarrierAccountID == uuid.Nil {
		v.Add("carrierAccountId", "is required")
	}
	if a := in.Address; a == nil {
		v.Add("pickupAddress", "is required")
	} else {
		for _, f := range []struct {
			name, val string
			max       int
		}{{"address1", a.Street, MaxAddressField}, {"city", a.City, MaxAddressField}, {"zip", a.Zip, 20}} {
			if f.val == "" {
				v.Add("pickupAddress."+f.name, "is required")
			}
			v.MaxLen("pickupAddress."+f.name, f.val, f.max)
		}
		switch {
		case a.Country == "":
			v.Add("pickupAddress.countryCode", "is required")
		case CountryCode(a.Country) != a.Country:
			v.Add("pickupAddress.countryCode", "must be a two-letter country code")
		}
		v.MaxLen("pickupAddress.provinceCode", a.State, 10)
		if a.State == "" && (a.Country == "US" || a.Country == "CA") {
			v.Add("pickupAddress.provinceCode", "is required for "+a.Country+" addresses")
		}
		for _, f := range []struct {
			name, val string
			max       int
		}{{"name", a.Name, MaxAddressField}, {"company", a.Company, MaxAddressField}, {"phone", a.Phone, 50}, {"address2", a.Street2, MaxAddressField}} {
			v.MaxLen("pickupAddress."+f.name, f.val, f.max)
		}
	}
	switch {
	case in.Date == nil:
		v.Add("pickupDate", "is required")
	case in.Date.Before(Today()):
		// Carriers book no pickup for a past day (UTC).
		v.Add("pickupDate", "must not be in the past")
	}
	for _, t := range []struct{ key, val string }{{"readyTime", in.ReadyTime}, {"closeTime", in.CloseTime}} {
		switch {
		case t.val == "":
			v.Add(t.key, "is required")
		case !pickupTimeRe.MatchString(t.val):
			v.Add(t.key, "must be a time HH:MM (24-hour)")
		}
	}
	if pickupTimeRe.MatchString(in.ReadyTime) && pickupTimeRe.MatchString(in.CloseTime) && in.ReadyTime >= in.CloseTime {
		v.Add("closeTime", "must be after readyTime")
	}
	if in.PackageCount != nil && (*in.PackageCount < 1 || *in.PackageCount > MaxPickupPackages) {
		v.Add("packageCount", fmt.Sprintf("must be an integer from 1 to %d", MaxPickupPackages))
	}
	if w := in.TotalWeight; w != nil {
		w.Unit = strings.ToLower(w.Unit)
		if w.Unit == "" {
			w.Unit = carriers.UnitLB
		}
		valid := w.Value > 0 && w.Value <= MaxPickupWeight
		switch {
		case !valid && w.Object:
			v.Add("totalWeight.value", fmt.Sprintf("must be a number above 0 and at most %d", MaxPickupWeight))
		case !valid:
			v.Add("totalWeight", "must be a positive number of pounds or {value, unit: lb|kg}")
		}
		if w.Unit != carriers.UnitLB && w.Unit != carriers.UnitKG {
			v.Add("totalWeight.unit", "must be lb or kg")
		}
	}
	return v
}

// pickupAddress is a pickup's address as it is stored and shown.
type pickupAddress struct {
	Address1     string  `json:"address1"`
	City         string  `json:"city"`
	ProvinceCode *string `json:"provinceCode"`
	Zip          string  `json:"zip"`
	CountryCode  string  `json:"countryCode"`
}

// BookedPickup is a pickup the carrier booked and the carrier's messages.
type BookedPickup struct {
	Pickup   Pickup
	Messages []string
}

// BookPickup books a carrier pickup (carrier_a only) in its PickupBooking
// workflow (PickupRuns) and waits for the outcome: the pickup is inserted
// pending first and shown only once confirmed. A request the carrier
// refuses as invalid is Invalid naming the field, its other failures
// Upstream; a booking whose outcome is unknown is Upstream (the pickup
// ends failed, hidden, with the reason); a booking that cannot be recorded
// is cancelled with the carrier. The actor needs pickups:write.
func (s *Service) BookPickup(ctx context.Context, actor domain.Actor, in PickupInput) (BookedPickup, error) {
	if err := actor.RequireScope("pickups:write"); err != nil {
		return BookedPickup{}, err
	}
	if err := in.Validate().Err(); err != nil {
		return BookedPickup{}, err
	}
	orgID := actor.OrganizationID
	acct, err := s.activeAccount(ctx, orgID, in.CarrierAccountID, "carrierAccountId")
	if err != nil {
		return BookedPickup{}, err
	}
	if !acct.SupportsPickup || acct.Carrier != carriers.CarrierA {
		return BookedPickup{}, domain.InvalidCode("pickups_not_supported", fmt.Sprintf("carrier account %q (%s) does not support pickups; only carrier_a pickups are supported", acct.Name, acct.Carrier))
	}
	if s.pickups == nil {
		return BookedPickup{}, ErrWorkflowsUnavailable
	}
	a := in.Address
	addr := pickupAddress{Address1: a.Street, City: a.City, Zip: a.Zip, CountryCode: a.Country}
	if a.State != "" {
		pc := strings.ToUpper(a.State)
		addr.ProvinceCode = &pc
	}
	date := *in.Date
	packages := 1
	if in.PackageCount != nil {
		packages = *in.PackageCount
	}
	req := carriers.PickupRequest{
		Address: carriers.Address{
			Name: a.Name, Company: a.Company, Phone: a.Phone, Address1: a.Street, Address2: a.Street2, City: a.City,
			ProvinceCode: deref(addr.ProvinceCode), Zip: a.Zip, CountryCode: a.Country,
		},
		PickupDate: date.Format("2006-01-02"), ReadyTime: in.ReadyTime, CloseTime: in.CloseTime, PackageCount: packages,
	}
	id := in.ID
	if id == uuid.Nil {
		id = uuid.New()
	}
	p := store.Pickup{
		ID: id, OrganizationID: orgID, CarrierAccountID: &acct.ID, Carrier: acct.Carrier,
		Status: store.PickupPending, PickupAddress: jsonOf(addr),
		PickupDate: date, ReadyTime: in.ReadyTime, CloseTime: in.CloseTime, PackageCount: packages, Metadata: in.Metadata,
	}
	if w := in.TotalWeight; w != nil {
		req.TotalWeight = &carriers.Weight{Value: w.Value, Unit: w.Unit}
		p.TotalWeight = jsonOf(w)
	}
	// The booking runs to its end even when the caller goes away.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), workTimeout)
	defer cancel()
	cur, created, err := store.InsertPickup(wctx, s.store.Pool, p)
	if err != nil {
		return BookedPickup{}, err
	}
	if cur.Status != store.PickupPending && cur.Visible() {
		// A retry of a booking that is done.
		var booked PickupBooking
		_ = json.Unmarshal(cur.CarrierResponse, &booked)
		return BookedPickup{Pickup: cur, Messages: booked.Messages}, nil
	}
	res, err := s.pickups.BookPickup(wctx, PickupRun{OrganizationID: orgID, PickupID: id, CarrierAccountID: acct.ID, Request: req})
	if domain.KindOf(err) == domain.KindUnavailable {
		return BookedPickup{}, err
	}
	if (err != nil || res.Outcome != PurchaseDone) && created {
		if _, derr := store.DeletePendingPickup(wctx, s.store.Pool, orgID, id); derr != nil {
			s.log.ErrorContext(ctx, "remove pending pickup", "pickup_id", id, "error", derr.Error())
		}
	}
	if err != nil {
		return BookedPickup{}, err
	}
	if res.Outcome != PurchaseDone {
		s.log.WarnContext(ctx, "purchase failed", "what", "pickup", "id", res.ID, "outcome", res.Outcome, "message", res.Message)
		return BookedPickup{}, PurchaseFailure(acct.Carrier+" refused the pickup", res, pickupRefusalField)
	}
	booked, err := store.PickupByID(wctx, s.store.Pool, orgID, id)
	if err != nil {
		return BookedPickup{}, err
	}
	return BookedPickup{Pickup: booked, Messages: res.Messages}, nil
}

// pickupRefusalField names the request field a carrier's refusal of a
// pickup is about ("" for the body as a whole).
func pickupRefusalField(code, _ string) string {
	switch code {
	case "PICKUP.REQUESTED.PREVIOUS.DAY", "PICKUP.READYDATETIME.INVALID", "PICKUP.SCHEDULEDDATE.INVALID":
		return "pickupDate"
	case "PICKUP.CUSTOMERCLOSETIME.INVALID", "PICKUP.CLOSETIME.INVALID":
		return "closeTime"
	case "PICKUP.ADDRESS.INVALID":
		return "pickupAddress"
	}
	return ""
}

// CancelPickup cancels a confirmed pickup with the carrier through its
// PickupCancel workflow, which records it with a compare-and-set (no row
// lock or transaction is held across the carrier call; concurrent
// requests share one run, and a repeated cancellation is harmless).
// Completed or cancelled pickups are 400 invalid_state; a carrier refusal
// is Upstream and the pickup stays confirmed. A pickup the carrier reports
// as already cancelled is recorded as cancelled. The actor needs
// pickups:write.
func (s *Service) CancelPickup(ctx context.Context, actor domain.Actor, id uuid.UUID, reason string) (CancelPickupResult, error) {
	if err := actor.RequireScope("pickups:write"); err != nil {
		return CancelPickupResult{}, err
	}
	reason = strings.TrimSpace(reason)
	var v domain.FieldErrors
	v.MaxLen("reason", reason, MaxPickupReason)
	if err := v.Err(); err != nil {
		return CancelPickupResult{}, err
	}
	orgID := actor.OrganizationID
	p, err := s.visiblePickup(ctx, orgID, id)
	if err != nil {
		return CancelPickupResult{}, err
	}
	if st := p.StatusOn(time.Now()); st != store.PickupConfirmed {
		return CancelPickupResult{}, domain.InvalidCode("invalid_state", "only a confirmed pickup can be cancelled; this one is "+st)
	}
	if p.CarrierAccountID == nil {
		return CancelPickupResult{}, domain.InvalidCode("carrier_account_not_active", "the pickup's carrier account was deleted; it cannot be cancelled with the carrier")
	}
	if s.pickups == nil {
		return CancelPickupResult{}, ErrWorkflowsUnavailable
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), workTimeout)
	defer cancel()
	res, err := s.pickups.CancelPickup(wctx, orgID, id, reason)
	if err != nil {
		return CancelPickupResult{}, s.cancelPickupFailure(ctx, p.Carrier, err)
	}
	if res.Messages == nil {
		res.Messages = []string{}
	}
	return res, nil
}

// cancelPickupFailure is the refusal of a failed cancellation. A run that
// ended without the carrier's answer is Upstream saying the outcome is
// unknown; messages reach the caller through domain.TenantText.
func (s *Service) cancelPickupFailure(ctx context.Context, carrier string, err error) error {
	var se *StepError
	switch {
	case domain.KindOf(err) == domain.KindUnavailable:
		s.log.WarnContext(ctx, "pickup cancel workflow unreachable", "error", err.Error())
		return err
	case errors.Is(err, ErrRunOutcomeUnknown):
		s.log.WarnContext(ctx, "pickup cancellation outcome unknown", "error", err.Error())
		return domain.Upstream("carrier_error", carrier+
			" did not answer the cancellation in time; the pickup may or may not be cancelled: check its status and cancel it again if it is still confirmed", err)
	case !errors.As(err, &se):
		return err
	case se.Type == ErrTypePickupNotCancellable:
		return domain.InvalidCode("invalid_state", domain.TenantText(se.Message))
	case se.Type == ErrTypePurchaseGone:
		return domain.NotFound("pickup")
	case se.Failure != nil && se.Failure.APICode != "":
		return domain.InvalidCode(se.Failure.APICode, domain.TenantText(se.Failure.Message))
	}
	s.log.WarnContext(ctx, "pickup cancellation failed", "error", err.Error())
	return domain.Upstream("carrier_error", carrier+" refused to cancel the pickup: "+domain.TenantText(se.Message), err)
}
