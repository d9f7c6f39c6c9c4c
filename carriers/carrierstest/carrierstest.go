// Package carrierstest holds test doubles for users of package carriers.
package carrierstest

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"

	"github.com/fos-dev/fos/carriers"
)

// DeliveryChanges is a carrier that offers delivery changes (hold,
// redirect, redeliver, instructions), built on a real adapter.
//
// No real carrier publishes a delivery-change API (vendors/carriers), so
// the built-in adapters report Capabilities.Actions false and their
// SendAction fails with carriers.ErrNotSupported, and the sandbox serves no
// such endpoint. The service's ShipmentAction path (API, workflow,
// activity) is still there for a carrier that gets one; tests exercise it
// with this double in the registry (Registry.With):
//
//   - the account is checked with the adapter's real TestCredentials call,
//     so refused credentials and an unavailable carrier come back exactly
//     as the adapter reports them;
//   - the tracking number with the adapter's real Track call: a number the
//     carrier does not know is a 400 *carriers.Error with code
//     TRACKING.TRACKINGNUMBER.NOTFOUND;
//   - anything else is accepted with confirmation number "DM" + 10 digits
//     derived from the action's reference and type.
//
// Every other operation is the wrapped adapter's (registration too, when
// the adapter has it).
type DeliveryChanges struct {
	carriers.Carrier
}

// Capabilities are the adapter's, with Actions.
func (d DeliveryChanges) Capabilities() carriers.Capabilities {
	c := d.Carrier.Capabilities()
	c.Actions = true
	return c
}

// SendAction accepts a valid action for a number the carrier knows.
func (d DeliveryChanges) SendAction(ctx context.Context, acct carriers.Account, act carriers.ShipmentAction) (*carriers.ActionResult, error) {
	if err := carriers.ValidateAction(d.Code(), act); err != nil {
		return nil, err
	}
	if err := d.TestCredentials(ctx, acct); err != nil {
		return nil, err
	}
	res, err := d.Track(ctx, acct, []string{act.TrackingNumber})
	if err != nil {
		return nil, err
	}
	if len(res) == 0 || res[0].NotFound {
		return nil, &carriers.Error{Carrier: d.Code(), Code: "TRACKING.TRACKINGNUMBER.NOTFOUND", StatusCode: http.StatusBadRequest,
			Message: "Tracking number cannot be found. Please correct the tracking number and try again."}
	}
	sum := sha256.Sum256([]byte(act.Reference + "|" + act.Type + "|" + act.TrackingNumber))
	n := uint64(0)
	for _, b := range sum[:8] {
		n = n<<8 | uint64(b)
	}
	return &carriers.ActionResult{
		ConfirmationNumber: fmt.Sprintf("DM%010d", n%10_000_000_000),
		Status:             "accepted",
		Message:            "Delivery change request accepted",
	}, nil
}

func (d DeliveryChanges) registrar() (carriers.Registrar, error) {
	if r, ok := d.Carrier.(carriers.Registrar); ok {
		return r, nil
	}
	return nil, fmt.Errorf("%s: account registration: %w", d.Code(), carriers.ErrNotSupported)
}

// RegisterAddress is the wrapped adapter's (carriers.Registrar).
func (d DeliveryChanges) RegisterAddress(ctx context.Context, req carriers.RegistrationRequest) (*carriers.RegistrationResult, error) {
	r, err := d.registrar()
	if err != nil {
		return nil, err
	}
	return r.RegisterAddress(ctx, req)
}

// RequestPIN is the wrapped adapter's.
func (d DeliveryChanges) RequestPIN(ctx context.Context, st carriers.RegistrationState, option string) (string, error) {
	r, err := d.registrar()
	if err != nil {
		return "", err
	}
	return r.RequestPIN(ctx, st, option)
}

// VerifyPIN is the wrapped adapter's.
func (d DeliveryChanges) VerifyPIN(ctx context.Context, st carriers.RegistrationState, pin string) (*carriers.ChildCredentials, error) {
	r, err := d.registrar()
	if err != nil {
		return nil, err
	}
	return r.VerifyPIN(ctx, st, pin)
}

// VerifyInvoice is the wrapped adapter's.
func (d DeliveryChanges) VerifyInvoice(ctx context.Context, st carriers.RegistrationState, inv carriers.Invoice) (*carriers.ChildCredentials, error) {
	r, err := d.registrar()
	if err != nil {
		return nil, err
	}
	return r.VerifyInvoice(ctx, st, inv)
}

// WithDeliveryChanges returns reg with the adapters of codes wrapped in
// DeliveryChanges.
func WithDeliveryChanges(reg *carriers.Registry, codes ...string) *carriers.Registry {
	var cs []carriers.Carrier
	for _, code := range codes {
		c, err := reg.Get(code)
		if err != nil {
			panic(err)
		}
		cs = append(cs, DeliveryChanges{Carrier: c})
	}
	return reg.With(cs...)
}
