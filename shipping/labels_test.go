package shipping

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/sandboxapi"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

// faultyCarrier is the sandbox's carrier_a with faults a test injects: it
// counts the labels it sells and voids, can fail a call before it leaves
// (never sent) or lose the answer of a label it sold (unanswered), and
// finds a label by its reference as carriers with a lookup do.
type faultyCarrier struct {
	carriers.Carrier
	mu sync.Mutex
	// notSent fails that many calls before they leave.
	notSent int
	// loseAnswer sells the label and answers a network error.
	loseAnswer bool
	// afterSale runs after a label was sold, before the answer.
	afterSale func()
	// voidFails refuses every void.
	voidFails bool
	sold      map[string]string // reference → tracking number
	voided    []string
	calls     int
}

func (c *faultyCarrier) CreateLabel(ctx context.Context, acct carriers.Account, req carriers.LabelRequest) (*carriers.Label, error) {
	c.mu.Lock()
	c.calls++
	if c.notSent > 0 {
		c.notSent--
		c.mu.Unlock()
		return nil, &carriers.Error{Carrier: carriers.CarrierA, Code: "RATE.LIMIT", Message: "slow down", StatusCode: 429, Retryable: true}
	}
	lose, after := c.loseAnswer, c.afterSale
	c.mu.Unlock()
	l, err := c.Carrier.CreateLabel(ctx, acct, req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.sold[req.Reference] = l.TrackingNumber
	c.mu.Unlock()
	if after != nil {
		after()
	}
	if lose {
		return nil, &carriers.Error{Carrier: carriers.CarrierA, Code: carriers.ErrCodeNetwork, Message: "connection reset"}
	}
	return l, nil
}

func (c *faultyCarrier) VoidLabel(ctx context.Context, acct carriers.Account, tn string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.voidFails {
		return &carriers.Error{Carrier: carriers.CarrierA, Code: "VOID.REFUSED", Message: "the label cannot be voided", StatusCode: 400}
	}
	c.voided = append(c.voided, tn)
	return nil
}

func (c *faultyCarrier) FindLabel(_ context.Context, _ carriers.Account, reference string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tn, ok := c.sold[reference]
	return tn, ok, nil
}

func (c *faultyCarrier) labelsSold() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sold)
}

type labelFixture struct {
	t       *testing.T
	st      *store.Store
	svc     *Service
	carrier *faultyCarrier
	orgID   uuid.UUID
	orderID uuid.UUID
	acctID  uuid.UUID
	actor   domain.Actor
}

func newLabelFixture(t *testing.T) *labelFixture {
	t.Helper()
	ctx := t.Context()
	st := storetest.New(t)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	sb := httptest.NewServer(sandboxapi.NewHandler())
	t.Cleanup(sb.Close)
	base := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: sb.URL})
	real, err := base.Get(carriers.CarrierA)
	require.NoError(t, err)
	fc := &faultyCarrier{Carrier: real, sold: map[string]string{}}
	u, err := store.CreateUser(ctx, st.Pool, store.User{ID: uuid.New(), Email: "o" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "O"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, st, "Acme "+u.Email, u.ID)
	require.NoError(t, err)
	f := &labelFixture{t: t, st: st, carrier: fc, orgID: org.ID, orderID: uuid.New(), acctID: uuid.New()}
	f.svc = New(Deps{Store: st, Secrets: box, Carriers: base.With(fc)})
	sealed, err := box.SealJSON(map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}, store.CarrierAccountCredentialsAD(f.orgID, f.acctID))
	require.NoError(t, err)
	_, err = st.Pool.Exec(ctx, `INSERT INTO carrier_accounts (id, organization_id, name, carrier, credentials, supports_rating, supports_pickup, supports_labels)
		VALUES ($1, $2, 'A', 'carrier_a', $3, true, true, true)`, f.acctID, f.orgID, sealed)
	require.NoError(t, err)
	bridgeID := uuid.New()
	_, err = st.Pool.Exec(ctx, `INSERT INTO bridges (id, organization_id, type, name) VALUES ($1, $2, 'storefront_a', 'Shop')`, bridgeID, f.orgID)
	require.NoError(t, err)
	_, err = store.CreateOrder(ctx, st.Pool, store.Order{
		ID: f.orderID, OrganizationID: f.orgID, BridgeID: &bridgeID, ExternalID: "1001", Status: "pending", PaymentStatus: "paid", FulfillmentStatus: "unfulfilled",
		Customer: json.RawMessage(`{"email":"a@example.com"}`), CustomerEmail: "a@example.com", CustomerName: "Ann Lee",
		ShippingAddress: json.RawMessage(`{"address1":"1 Pike St","city":"Seattle","provinceCode":"WA","zip":"98101","countryCode":"US"}`),
		LineItems:       json.RawMessage(`[]`), Totals: json.RawMessage(`{"total":1}`), Total: 1, Currency: "USD",
	})
	require.NoError(t, err)
	// The operation that executes carries its caller's scopes.
	f.actor = domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: f.orgID, Scoped: true,
		Scopes: []string{"shipments:write", "shipments:read"}}
	// No real waits between retries.
	directNotSentBackoff, directStepBackoff = time.Millisecond, time.Millisecond
	return f
}

func (f *labelFixture) input(id uuid.UUID) PurchaseLabelInput {
	return PurchaseLabelInput{Owner: "operation/test", Shipment: CreateShipmentInput{
		ID: id, OrderID: f.orderID, CarrierAccountID: f.acctID, Service: "FEDEX_GROUND",
		Parcels:  []Parcel{{Length: 10, Width: 8, Height: 4, Weight: 2, Unit: "lb"}},
		ShipFrom: &Address{Company: "Main warehouse", Street: "10 Main St", City: "Memphis", State: "TN", Zip: "38103", Country: "US"},
	}}
}

func (f *labelFixture) shipment(id uuid.UUID) (store.Shipment, bool) {
	sh, err := store.ShipmentByID(f.t.Context(), f.st.Pool, f.orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return sh, false
	}
	require.NoError(f.t, err)
	return sh, true
}

// TestPurchaseLabelBuysOnce: a batch buys a label inside its activity
// (PurchaseLabel, as an operation acting with its caller's scopes); the
// shipment is recorded with its owner, and calling again for the same item
// answers with it: one label sold.
func TestPurchaseLabelBuysOnce(t *testing.T) {
	f := newLabelFixture(t)
	id := uuid.New()
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(id))
	require.NoError(t, err)
	require.Equal(t, PurchaseDone, got.Result.Outcome)
	require.Equal(t, store.ShipmentLabelCreated, got.Shipment.Status)
	require.True(t, got.Shipment.HasLabel())
	require.Equal(t, "operation/test", *got.Shipment.PurchaseOwner)
	require.NotNil(t, got.Shipment.LabelRequestedAt)
	require.Equal(t, got.Result.Reference, *got.Shipment.TrackingNumber)

	again, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(id))
	require.NoError(t, err)
	require.Equal(t, got.Shipment.TrackingNumber, again.Shipment.TrackingNumber)
	require.Equal(t, 1, f.carrier.labelsSold())
	require.Equal(t, 1, f.carrier.calls)

	// Resolving a done purchase changes nothing.
	res, err := f.svc.ResolveLabelPurchase(t.Context(), f.actor, id)
	require.NoError(t, err)
	require.Equal(t, PurchaseDone, res.Result.Outcome)
	require.Equal(t, 1, f.carrier.calls)
}

// TestPurchaseLabelRefusals: scopes are checked in the service, the input
// is validated with every field named, and another organization's order
// is refused before anything is written.
func TestPurchaseLabelRefusals(t *testing.T) {
	f := newLabelFixture(t)
	readOnly := f.actor
	readOnly.Scopes = []string{"shipments:read"}
	_, err := f.svc.PurchaseLabel(t.Context(), readOnly, f.input(uuid.New()))
	require.Equal(t, domain.KindForbidden, domain.KindOf(err))

	in := f.input(uuid.New())
	in.Shipment.Parcels = []Parcel{{Length: 0, Width: 1, Height: 1, Weight: 1, Unit: "stone"}}
	in.Shipment.Service = ""
	_, err = f.svc.PurchaseLabel(t.Context(), f.actor, in)
	var de *domain.Error
	require.ErrorAs(t, err, &de)
	require.Equal(t, domain.KindInvalid, de.Kind)
	var fields []string
	for _, fe := range de.Fields {
		fields = append(fields, fe.Field)
	}
	require.Equal(t, []string{"service", "parcels[0].length", "parcels[0].unit"}, fields)

	_, err = f.svc.PurchaseLabel(t.Context(), f.actor, PurchaseLabelInput{Shipment: f.input(uuid.New()).Shipment})
	require.Equal(t, domain.KindInvalid, domain.KindOf(err), "an owner is required")

	other := f.actor
	other.OrganizationID = uuid.New()
	_, err = f.svc.PurchaseLabel(t.Context(), other, f.input(uuid.New()))
	require.Equal(t, domain.KindInvalid, domain.KindOf(err), "the order is not that organization's")
	require.Equal(t, 0, f.carrier.calls)
}

// TestPurchaseLabelNotSentIsRepeated: calls that never reached the
// carrier are repeated; one label is sold.
func TestPurchaseLabelNotSentIsRepeated(t *testing.T) {
	f := newLabelFixture(t)
	f.carrier.notSent = 2
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(uuid.New()))
	require.NoError(t, err)
	require.Equal(t, PurchaseDone, got.Result.Outcome)
	require.Equal(t, 3, f.carrier.calls)
	require.Equal(t, 1, f.carrier.labelsSold())
}

// TestPurchaseLabelLostAnswerIsVoided: the carrier sold a label and its
// answer was lost: never bought again, the label is found by its
// reference and voided, and the shipment goes.
func TestPurchaseLabelLostAnswerIsVoided(t *testing.T) {
	f := newLabelFixture(t)
	f.carrier.loseAnswer = true
	id := uuid.New()
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(id))
	require.Equal(t, domain.KindUpstream, domain.KindOf(err), "%v", err)
	require.Equal(t, PurchaseVoided, got.Result.Outcome, got.Result.Message)
	require.Equal(t, 1, f.carrier.calls, "never asked twice")
	require.Equal(t, []string{f.carrier.sold[id.String()]}, f.carrier.voided)
	_, exists := f.shipment(id)
	require.False(t, exists)
}

// TestPurchaseLabelUnrecordedIsVoided: a label bought for a shipment
// deleted meanwhile cannot be recorded: it is voided.
func TestPurchaseLabelUnrecordedIsVoided(t *testing.T) {
	f := newLabelFixture(t)
	id := uuid.New()
	f.carrier.afterSale = func() {
		_, err := f.st.Pool.Exec(context.Background(), `DELETE FROM shipments WHERE id = $1`, id)
		require.NoError(t, err)
	}
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(id))
	require.Error(t, err)
	require.Equal(t, PurchaseVoided, got.Result.Outcome, got.Result.Message)
	require.Len(t, f.carrier.voided, 1)
}

// TestPurchaseLabelVoidRefusedEndsUnknown: a lost answer whose label
// cannot be voided leaves the shipment as exception with the reason.
func TestPurchaseLabelVoidRefusedEndsUnknown(t *testing.T) {
	f := newLabelFixture(t)
	f.carrier.loseAnswer, f.carrier.voidFails = true, true
	id := uuid.New()
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(id))
	require.Equal(t, domain.KindUpstream, domain.KindOf(err))
	require.Equal(t, PurchaseUnknown, got.Result.Outcome)
	sh, exists := f.shipment(id)
	require.True(t, exists)
	require.Equal(t, store.ShipmentException, sh.Status)
	require.Contains(t, string(sh.Metadata), "label_purchase_error")
	require.Equal(t, sh.ID, got.Shipment.ID)

	// Resolving it again asks nothing and says unknown.
	res, err := f.svc.ResolveLabelPurchase(t.Context(), f.actor, id)
	require.Equal(t, domain.KindUpstream, domain.KindOf(err))
	require.Equal(t, PurchaseUnknown, res.Result.Outcome)
	require.Equal(t, 1, f.carrier.calls)
}

// TestResolveLabelPurchase: an interrupted purchase is settled without
// ever asking the carrier for a label: never asked → deleted (may be
// bought afresh); stashed → recorded; asked and sold → found and voided;
// never created → not found.
func TestResolveLabelPurchase(t *testing.T) {
	f := newLabelFixture(t)
	ctx := t.Context()
	plan := func(id uuid.UUID) plannedShipment {
		p, err := f.svc.plan(ctx, f.orgID, f.input(id).Shipment)
		require.NoError(t, err)
		owner := "operation/test"
		p.row.PurchaseOwner = &owner
		_, _, err = f.svc.insertPending(ctx, p)
		require.NoError(t, err)
		return p
	}

	// Interrupted before the carrier was asked.
	never := uuid.New()
	plan(never)
	res, err := f.svc.ResolveLabelPurchase(ctx, f.actor, never)
	require.Error(t, err)
	require.Equal(t, PurchaseRefused, res.Result.Outcome, res.Result.Message)
	_, exists := f.shipment(never)
	require.False(t, exists, "nothing was bought: the item may be bought afresh")

	// Interrupted after the carrier answered and the label was stashed.
	stashed := uuid.New()
	p := plan(stashed)
	bought, err := f.svc.BuyLabel(ctx, BuyLabelInput{OrganizationID: f.orgID, ShipmentID: stashed, CarrierAccountID: f.acctID, Request: p.request})
	require.NoError(t, err)
	require.True(t, bought.Label.Stashed)
	res, err = f.svc.ResolveLabelPurchase(ctx, f.actor, stashed)
	require.NoError(t, err)
	require.Equal(t, PurchaseDone, res.Result.Outcome)
	require.Equal(t, bought.Label.TrackingNumber, *res.Shipment.TrackingNumber)
	require.True(t, res.Shipment.HasLabel())

	// Interrupted after the carrier sold, before anything was stashed.
	lost := uuid.New()
	p = plan(lost)
	f.carrier.loseAnswer = true
	_, err = f.svc.BuyLabel(ctx, BuyLabelInput{OrganizationID: f.orgID, ShipmentID: lost, CarrierAccountID: f.acctID, Request: p.request})
	require.Equal(t, ErrTypeCarrierOutcomeUnknown, StepErrorType(err))
	f.carrier.loseAnswer = false
	calls := f.carrier.calls
	res, err = f.svc.ResolveLabelPurchase(ctx, f.actor, lost)
	require.Error(t, err)
	require.Equal(t, PurchaseVoided, res.Result.Outcome, res.Result.Message)
	require.Equal(t, []string{f.carrier.sold[lost.String()]}, f.carrier.voided)
	require.Equal(t, calls, f.carrier.calls, "the carrier was never asked for a label")

	_, err = f.svc.ResolveLabelPurchase(ctx, f.actor, uuid.New())
	require.Equal(t, domain.KindNotFound, domain.KindOf(err))
	require.Equal(t, 2, f.carrier.labelsSold(), "the stashed and the lost label; nothing else")
}

// TestSignedLabelURL: a label_url names one label of one organization and
// stops working when it expires.
func TestSignedLabelURL(t *testing.T) {
	f := newLabelFixture(t)
	f.svc.baseURL = "https://fos.example"
	got, err := f.svc.PurchaseLabel(t.Context(), f.actor, f.input(uuid.New()))
	require.NoError(t, err)
	link, err := url.Parse(*f.svc.LabelURL(got.Shipment))
	require.NoError(t, err)
	require.Equal(t, LabelPath+got.Shipment.ID.String(), link.Path)
	q := link.Query()
	exp, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Until(time.Unix(exp, 0)), LabelURLTTL, "valid at least LabelURLTTL")
	in := SignedLabelInput{ShipmentID: got.Shipment.ID, OrganizationID: q.Get("organization"), Expires: q.Get("expires"), Signature: q.Get("signature")}
	file, err := f.svc.SignedLabel(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, "application/pdf", file.ContentType)
	require.NotEmpty(t, file.Document)

	// Expired: signed correctly, an hour ago.
	past := time.Now().Add(-time.Hour).Unix()
	expired := in
	expired.Expires = strconv.FormatInt(past, 10)
	expired.Signature = f.svc.labelSignature(f.orgID, got.Shipment.ID, past)
	_, err = f.svc.SignedLabel(t.Context(), expired)
	require.Equal(t, domain.KindGone, domain.KindOf(err))
	// Another shipment under the same signature.
	other := in
	other.ShipmentID = uuid.New()
	_, err = f.svc.SignedLabel(t.Context(), other)
	require.Equal(t, domain.KindForbidden, domain.KindOf(err))
}
