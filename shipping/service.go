// Package shipping holds the shipping domain: shipments and their labels,
// shipment actions, pickups, rates and rate snapshots, and tracking. The
// API's handlers, the Temporal activities, operation execution and the
// agent's tools all call the one Service; none of them repeats its logic.
//
// Money is spent only through the purchase course (purchase.go, CONTRACT
// 8b): a shipment is inserted pending, its label is bought once with the
// shipment id as the carrier's reference, the documents are stashed the
// moment the carrier answers, and the label is recorded, or voided when it
// cannot be. The API runs that course in the ShipmentLabel workflow (one
// activity per step, each step a method of this Service); a batch inside
// one activity runs it directly with PurchaseLabel.
package shipping

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Deps are the Service's dependencies.
type Deps struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// Hooks runs the dispatchers of an order's events (shipment_created);
	// nil: none.
	Hooks rules.OrderHooks
	// Events hears shipments created and tracking exceptions (the agent's
	// standing orders); nil: nobody listens.
	Events rules.Events
	// Labels, Actions and Pickups run the domain's workflows (the
	// Temporal adapter worker.TemporalShipping implements all three); nil:
	// the operations that need one answer that workflows are unavailable.
	Labels  LabelRuns
	Actions ActionRuns
	Pickups PickupRuns
	// BaseURL is the service's public URL (signed label URLs).
	BaseURL string
	// RateTimeout is each carrier's deadline in a rate fan-out (0:
	// rating.DefaultTimeout).
	RateTimeout time.Duration
}

// ErrWorkflowsUnavailable is the answer of an operation that needs a
// workflow when none can be started.
var ErrWorkflowsUnavailable = domain.WorkflowsUnavailable(nil)

// Service is the shipping domain's operations.
type Service struct {
	store    *store.Store
	secrets  *secrets.Box
	carriers *carriers.Registry
	log      *slog.Logger
	hooks    rules.OrderHooks
	events   rules.Events
	labels   LabelRuns
	actions  ActionRuns
	pickups  PickupRuns
	baseURL  string
	// rateTimeout is each carrier's deadline in a rate fan-out.
	rateTimeout time.Duration
}

// New builds the Service.
func New(d Deps) *Service {
	log := d.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if d.RateTimeout <= 0 {
		d.RateTimeout = rating.DefaultTimeout
	}
	hooks := d.Hooks
	if hooks == nil {
		hooks = rules.Noop{}
	}
	return &Service{store: d.Store, secrets: d.Secrets, carriers: d.Carriers, log: log, hooks: hooks, events: d.Events,
		labels: d.Labels, actions: d.Actions, pickups: d.Pickups, baseURL: d.BaseURL,
		rateTimeout: d.RateTimeout}
}

// accountAdapter loads a carrier account of the organization with its
// adapter and opened credentials, for a step about to call the carrier; a
// deleted or (with active) not active account is a definite refusal
// (ErrTypeCarrierRefused) before any call.
func (s *Service) accountAdapter(ctx context.Context, orgID, acctID uuid.UUID, active bool) (carriers.Carrier, carriers.Account, error) {
	acct, err := store.CarrierAccountByID(ctx, s.store.Pool, orgID, acctID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, carriers.Account{}, refusedBeforeCall("carrier_account_not_active", "the carrier account was deleted")
	}
	if err != nil {
		return nil, carriers.Account{}, notCalledYet(ErrTypeCarrierNotSent, "read the carrier account", fmt.Errorf("read carrier account %s: %w", acctID, err))
	}
	return s.adapterOf(acct, active)
}

// adapterOf is accountAdapter of an account read.
func (s *Service) adapterOf(acct store.CarrierAccount, active bool) (carriers.Carrier, carriers.Account, error) {
	if active && acct.Status != store.CarrierAccountActive {
		return nil, carriers.Account{}, refusedBeforeCall("carrier_account_not_active", fmt.Sprintf("carrier account %q is %s; only an active account can be used", acct.Name, acct.Status))
	}
	if s.secrets == nil {
		return nil, carriers.Account{}, refusedBeforeCall("", "carrier credentials cannot be opened: no encryption key configured")
	}
	adapterAcct, err := store.AdapterAccount(s.secrets, acct)
	if err != nil {
		return nil, carriers.Account{}, refusedBeforeCall("", "carrier credentials cannot be opened")
	}
	if s.carriers == nil {
		return nil, carriers.Account{}, refusedBeforeCall("", "no carrier adapters are configured")
	}
	c, err := s.carriers.Get(acct.Carrier)
	if err != nil {
		return nil, carriers.Account{}, refusedBeforeCall("", err.Error())
	}
	return c, adapterAcct, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
