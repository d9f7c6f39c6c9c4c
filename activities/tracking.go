package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/rules"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// TrackingActivities are the activities of the tracking poller.
type TrackingActivities struct {
	Store    *store.Store
	Secrets  *secrets.Box
	Carriers *carriers.Registry
	Logger   *slog.Logger
	// AccountConcurrency bounds how many carrier accounts one poll tracks
	// at once (default 4). Each adapter also bounds its own calls (carrier_a
	// 30 numbers per call, carrier_b a few numbers in parallel).
	AccountConcurrency int
	// Events hears the shipments a poll moved to exception (the agent's
	// standing orders; nil: nobody listens).
	Events rules.Events
}

// TrackingListDueInput is the input of TrackingListDue.
type TrackingListDueInput struct {
	// Cutoff: shipments tracked at or after it are not due. Nil: the
	// database's now (the first page of a poll), returned in the result.
	Cutoff *time.Time `json:"cutoff"`
	Limit  int        `json:"limit"`
}

// TrackingListDueResult is the result of TrackingListDue.
type TrackingListDueResult struct {
	Cutoff      time.Time `json:"cutoff"`
	ShipmentIDs []string  `json:"shipmentIds"`
}

// TrackingListDue lists up to Limit shipments (of every organization) due
// for tracking: not tracked since the cutoff, never-tracked first.
func (a *TrackingActivities) TrackingListDue(ctx context.Context, in TrackingListDueInput) (TrackingListDueResult, error) {
	if in.Limit <= 0 || in.Limit > 10_000 {
		return TrackingListDueResult{}, temporal.NewNonRetryableApplicationError("limit must be 1-10000", ErrTypeInvalidInput, nil)
	}
	var cutoff time.Time
	if in.Cutoff != nil {
		cutoff = *in.Cutoff
	} else {
		now, err := store.DatabaseNow(ctx, a.Store.Pool)
		if err != nil {
			return TrackingListDueResult{}, fmt.Errorf("read the database clock: %w", err)
		}
		cutoff = now
	}
	ids, err := store.ShipmentsDueForTracking(ctx, a.Store.Pool, cutoff, in.Limit)
	if err != nil {
		return TrackingListDueResult{}, fmt.Errorf("list shipments due for tracking: %w", err)
	}
	out := TrackingListDueResult{Cutoff: cutoff, ShipmentIDs: make([]string, len(ids))}
	for i, id := range ids {
		out.ShipmentIDs[i] = id.String()
	}
	return out, nil
}

// TrackingPollInput is the input of TrackingPollShipments.
type TrackingPollInput struct {
	ShipmentIDs []string `json:"shipmentIds"`
}

// TrackingPollResult counts what one poll did.
type TrackingPollResult struct {
	// Shipments is how many of the input still existed and still moved.
	Shipments int `json:"shipments"`
	// Tracked: the carrier answered with a history.
	Tracked int `json:"tracked"`
	// NotFound: the carrier does not know the number (or reported a
	// problem with it).
	NotFound int `json:"notFound"`
	// Untrackable: no active account of the carrier in the organization, or
	// a carrier without tracking.
	Untrackable int `json:"untrackable"`
	// Failed: the account's carrier call failed.
	Failed        int `json:"failed"`
	Checkpoints   int `json:"checkpoints"`
	StatusChanges int `json:"statusChanges"`
	Delivered     int `json:"delivered"`
	// Errors are the failing accounts' errors (at most trackingMaxErrors).
	Errors []string `json:"errors"`
}

// Add sums results.
func (r *TrackingPollResult) Add(o TrackingPollResult) {
	r.Shipments += o.Shipments
	r.Tracked += o.Tracked
	r.NotFound += o.NotFound
	r.Untrackable += o.Untrackable
	r.Failed += o.Failed
	r.Checkpoints += o.Checkpoints
	r.StatusChanges += o.StatusChanges
	r.Delivered += o.Delivered
	for _, e := range o.Errors {
		if len(r.Errors) < trackingMaxErrors {
			r.Errors = append(r.Errors, e)
		}
	}
}

const trackingMaxErrors = 10

// trackingGroup is the shipments one account tracks.
type trackingGroup struct {
	account   uuid.UUID
	org       uuid.UUID
	carrier   string
	isTest    bool
	sealed    []byte
	shipments []store.TrackableShipment
	// filled by track
	results map[string]carriers.TrackResult
	err     error
}

// TrackingPollShipments tracks shipments with their carriers and records
// what it learned in one transaction (store.RecordCheckpoints): every
// event as a checkpoint (source = carrier code, sourceEventId = the event
// id, sequence = its position in the carrier's history, oldest first),
// the status rule over the new checkpoints, last_tracked_at, and origin /
// destination coordinates where the shipment has none.
//
// Shipments are grouped by carrier account; each account is one Track
// call (the adapter batches the numbers), accounts run in parallel up to
// AccountConcurrency. A failing account does not stop the others: its
// shipments are counted as failed and stamped (the next poll tries again).
// Idempotent: checkpoints are upserted on shipment + source + event id, and
// the status rule only looks at checkpoints newer than those recorded.
func (a *TrackingActivities) TrackingPollShipments(ctx context.Context, in TrackingPollInput) (TrackingPollResult, error) {
	ids := make([]uuid.UUID, 0, len(in.ShipmentIDs))
	for _, s := range in.ShipmentIDs {
		id, err := uuid.Parse(s)
		if err != nil {
			return TrackingPollResult{}, temporal.NewNonRetryableApplicationError("shipmentIds must be UUIDs", ErrTypeInvalidInput, nil)
		}
		ids = append(ids, id)
	}
	var res TrackingPollResult
	if len(ids) == 0 {
		return res, nil
	}
	loaded, err := store.TrackableShipments(ctx, a.Store.Pool, ids)
	if err != nil {
		return res, fmt.Errorf("load shipments: %w", err)
	}

	// Group by account; the rest is stamped without a carrier call.
	var stamps []store.ShipmentTracked
	groups := map[uuid.UUID]*trackingGroup{}
	var order []uuid.UUID
	for _, sh := range loaded {
		if !store.IsTrackedStatus(sh.Status) || sh.TrackingNumber == nil || strings.TrimSpace(*sh.TrackingNumber) == "" {
			continue // delivered, or changed, since it was listed
		}
		res.Shipments++
		if sh.AccountID == nil || !a.canTrack(sh.Carrier) {
			res.Untrackable++
			stamps = append(stamps, store.ShipmentTracked{ShipmentID: sh.ID, Tracked: true})
			continue
		}
		g := groups[*sh.AccountID]
		if g == nil {
			g = &trackingGroup{account: *sh.AccountID, org: sh.OrganizationID, carrier: *sh.AccountCarrier, sealed: sh.Credentials, isTest: sh.IsTest != nil && *sh.IsTest}
			groups[*sh.AccountID] = g
			order = append(order, *sh.AccountID)
		}
		g.shipments = append(g.shipments, sh)
	}

	// Track every account, bounded.
	limit := a.AccountConcurrency
	if limit <= 0 {
		limit = 4
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	for _, id := range order {
		g := groups[id]
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return TrackingPollResult{}, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			g.results, g.err = a.track(ctx, g)
			if activity.IsActivity(ctx) {
				activity.RecordHeartbeat(ctx)
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return TrackingPollResult{}, err
	}

	// Checkpoints and stamps of every group: one write.
	var cps []store.Checkpoint
	for _, id := range order {
		g := groups[id]
		if g.err != nil {
			res.Failed += len(g.shipments)
			if len(res.Errors) < trackingMaxErrors {
				res.Errors = append(res.Errors, fmt.Sprintf("account %s (%s): %v", g.account, g.carrier, g.err))
			}
			a.log().WarnContext(ctx, "tracking failed for a carrier account", "carrier_account_id", g.account, "carrier", g.carrier, "shipments", len(g.shipments), "error", g.err.Error())
			for _, sh := range g.shipments {
				stamps = append(stamps, store.ShipmentTracked{ShipmentID: sh.ID, Tracked: true})
			}
			continue
		}
		for _, sh := range g.shipments {
			stamp := store.ShipmentTracked{ShipmentID: sh.ID, Tracked: true}
			r, ok := g.results[strings.TrimSpace(*sh.TrackingNumber)]
			switch {
			case !ok || r.NotFound || r.Error != "":
				res.NotFound++
			default:
				res.Tracked++
				cps = append(cps, TrackingCheckpoints(sh.ID, g.carrier, r)...)
				stamp.FromLat, stamp.FromLng = trackingCoords(r.Origin)
				stamp.ToLat, stamp.ToLng = trackingCoords(r.Destination)
			}
			stamps = append(stamps, stamp)
		}
	}
	if len(stamps) == 0 {
		return res, nil
	}
	out, err := store.RecordCheckpoints(ctx, a.Store.Pool, store.TrackingWrite{Checkpoints: cps, Shipments: stamps})
	if err != nil {
		// A shipment deleted meanwhile is the only "unknown" one; retrying
		// reloads without it.
		return TrackingPollResult{}, fmt.Errorf("record tracking: %w", err)
	}
	res.Checkpoints = len(cps)
	res.StatusChanges = len(out.Changes)
	exceptions := map[uuid.UUID][]uuid.UUID{}
	for _, c := range out.Changes {
		if c.To == store.TrackingDelivered {
			res.Delivered++
		}
		if c.To == store.TrackingException && c.From != store.TrackingException {
			if org, ok := orgOfShipment(loaded, c.ShipmentID); ok {
				exceptions[org] = append(exceptions[org], c.ShipmentID)
			}
		}
	}
	for org, ids := range exceptions {
		rules.Notify(ctx, a.Events, org, rules.EventTrackingException, ids)
	}
	a.log().InfoContext(ctx, "shipments tracked", "shipments", res.Shipments, "tracked", res.Tracked, "not_found", res.NotFound,
		"untrackable", res.Untrackable, "failed", res.Failed, "checkpoints", res.Checkpoints, "status_changes", res.StatusChanges)
	return res, nil
}

// orgOfShipment is the organization of a polled shipment.
func orgOfShipment(loaded []store.TrackableShipment, id uuid.UUID) (uuid.UUID, bool) {
	for _, sh := range loaded {
		if sh.ID == id {
			return sh.OrganizationID, true
		}
	}
	return uuid.Nil, false
}

// canTrack: the registry has the carrier and it tracks.
func (a *TrackingActivities) canTrack(code string) bool {
	if a.Carriers == nil {
		return false
	}
	c, err := a.Carriers.Get(code)
	return err == nil && c.Capabilities().Tracking
}

// track calls the account's carrier for its shipments' numbers.
func (a *TrackingActivities) track(ctx context.Context, g *trackingGroup) (map[string]carriers.TrackResult, error) {
	c, err := a.Carriers.Get(g.carrier)
	if err != nil {
		return nil, err
	}
	if a.Secrets == nil {
		return nil, fmt.Errorf("carrier account credentials cannot be opened: no encryption key configured")
	}
	acct, err := store.AdapterAccount(a.Secrets, store.CarrierAccount{ID: g.account, OrganizationID: g.org, Carrier: g.carrier, IsTest: g.isTest, Credentials: g.sealed})
	if err != nil {
		return nil, fmt.Errorf("carrier account credentials cannot be opened")
	}
	numbers := make([]string, 0, len(g.shipments))
	for _, sh := range g.shipments {
		numbers = append(numbers, strings.TrimSpace(*sh.TrackingNumber))
	}
	results, err := c.Track(ctx, acct, numbers)
	if err != nil {
		return nil, err
	}
	out := make(map[string]carriers.TrackResult, len(results))
	for _, r := range results {
		out[r.TrackingNumber] = r
	}
	return out, nil
}

// TrackingCheckpoints converts a carrier's tracking history into
// checkpoints of a shipment: source is the carrier code, sourceEventId the
// event id (a digest of number, time and status when the carrier gave
// none), sequence the event's position (oldest first). Values the
// checkpoint table would refuse (a country code that is not two letters,
// coordinates out of range) are dropped, never the checkpoint.
func TrackingCheckpoints(shipmentID uuid.UUID, carrier string, r carriers.TrackResult) []store.Checkpoint {
	out := make([]store.Checkpoint, 0, len(r.Events))
	for i, e := range r.Events {
		status := e.Status
		if !slices.Contains(store.CheckpointStatuses, status) {
			status = store.TrackingInTransit
		}
		eventID := strings.TrimSpace(e.EventID)
		if eventID == "" {
			sum := sha256.Sum256([]byte(r.TrackingNumber + "\x00" + e.Time.UTC().Format(time.RFC3339Nano) + "\x00" + status + "\x00" + e.City))
			eventID = hex.EncodeToString(sum[:12])
		}
		c := store.Checkpoint{
			ShipmentID:     shipmentID,
			Sequence:       i,
			Status:         status,
			StatusDetail:   trackingNonEmpty(e.StatusDetail),
			Description:    trackingNonEmpty(e.Description),
			City:           trackingNonEmpty(e.City),
			State:          trackingNonEmpty(e.State),
			Country:        trackingNonEmpty(e.Country),
			Zip:            trackingNonEmpty(e.Zip),
			CheckpointTime: e.Time,
			Source:         carrier,
			SourceEventID:  &eventID,
			IsException:    e.IsException,
			ExceptionType:  trackingNonEmpty(e.ExceptionType),
		}
		if cc := strings.ToUpper(strings.TrimSpace(e.CountryCode)); len(cc) == 2 && trackingUpperAlpha(cc) {
			c.CountryCode = &cc
		}
		if trackingValidCoords(e.Latitude, e.Longitude) {
			c.Latitude, c.Longitude = e.Latitude, e.Longitude
		}
		out = append(out, c)
	}
	return out
}

func trackingCoords(a *carriers.Address) (*float64, *float64) {
	if a == nil || !trackingValidCoords(a.Latitude, a.Longitude) {
		return nil, nil
	}
	return a.Latitude, a.Longitude
}

func trackingValidCoords(lat, lng *float64) bool {
	return lat != nil && lng != nil && *lat >= -90 && *lat <= 90 && *lng >= -180 && *lng <= 180
}

func trackingUpperAlpha(s string) bool {
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}

func trackingNonEmpty(s string) *string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	return &s
}

func (a *TrackingActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}
