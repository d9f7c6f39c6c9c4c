// Package activities holds the Temporal activities: all I/O of the
// workflows (PostgreSQL, platform and carrier HTTP calls). Activities are
// methods on structs that hold their dependencies, registered once by the
// worker and called from workflows through a nil pointer of that type.
//
// Every activity may run more than once (retries, an operator's reset), so
// every write is idempotent.
package activities

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"

	"github.com/google/uuid"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
)

// Error types (temporal.ApplicationError.Type) of the order activities.
// All but ErrTypePlatformUnavailable are permanent: the activity returns
// them as non-retryable errors and workflows list them in their retry
// policies' NonRetryableErrorTypes.
const (
	// ErrTypePlatformPermanent: the platform refused for good (order unknown
	// to it, credentials refused, bridge config it cannot use).
	ErrTypePlatformPermanent = "PlatformPermanent"
	// ErrTypePlatformUnavailable: a failure worth retrying (network, 429, 5xx).
	ErrTypePlatformUnavailable = "PlatformUnavailable"
	// ErrTypeBridgeUnavailable: the order has no source bridge, the bridge
	// is not active, or its credentials cannot be opened.
	ErrTypeBridgeUnavailable = "BridgeUnavailable"
	// ErrTypeOrderNotFound: the order no longer exists in the organization.
	ErrTypeOrderNotFound = "OrderNotFound"
	// ErrTypeInvalidInput: the activity input is malformed.
	ErrTypeInvalidInput = "InvalidInput"
)

// PermanentOrderErrorTypes are the non-retryable error types of the order
// activities, for retry policies.
var PermanentOrderErrorTypes = []string{
	ErrTypePlatformPermanent, ErrTypeBridgeUnavailable, ErrTypeOrderNotFound, ErrTypeInvalidInput,
}

// Actor is who asked for a piece of work (recorded for attribution).
type Actor struct {
	// Type is "user", "api_key" or "system".
	Type string `json:"type"`
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ResyncActorName is the actor name of the activities a resync records.
const ResyncActorName = "order resync"

// OrderActivities are the activities on orders.
type OrderActivities struct {
	Store     *store.Store
	Secrets   *secrets.Box
	Platforms *platforms.Registry
	Logger    *slog.Logger
}

// ResyncOrderInput is the input of ResyncOrder. WorkflowID and RunID key
// the recorded activity (one per run, whatever the attempt); when empty they
// are taken from the activity's own info.
type ResyncOrderInput struct {
	OrganizationID string `json:"organizationId"`
	OrderID        string `json:"orderId"`
	WorkflowID     string `json:"workflowId"`
	RunID          string `json:"runId"`
	RequestedBy    Actor  `json:"requestedBy"`
}

// ResyncOrderResult is the result of ResyncOrder.
type ResyncOrderResult struct {
	OrderID    string `json:"orderId"`
	BridgeID   string `json:"bridgeId"`
	ExternalID string `json:"externalId"`
	// ChangedFields names the order fields the sync changed (API names, in
	// store.OrderSyncFields order); empty when the order was up to date.
	ChangedFields []string `json:"changedFields"`
	// AlreadyApplied is true when an earlier attempt of the same run had
	// already written the sync.
	AlreadyApplied bool `json:"alreadyApplied"`
}

// ResyncOrder fetches an order from its source bridge through the bridge
// type's platform connector and writes the platform's copy onto the order,
// with a "sync" order activity and the bridge's last_sync_at, in one
// transaction. Permanent failures are non-retryable application errors
// (see the ErrType constants).
func (a *OrderActivities) ResyncOrder(ctx context.Context, in ResyncOrderInput) (ResyncOrderResult, error) {
	orgID, orderID, err := parseIDs(in.OrganizationID, in.OrderID)
	if err != nil {
		return ResyncOrderResult{}, err
	}
	wfID, runID, err := runKey(ctx, in.WorkflowID, in.RunID)
	if err != nil {
		return ResyncOrderResult{}, err
	}

	src, err := store.GetOrderSyncSource(ctx, a.Store.Pool, orgID, orderID)
	if errors.Is(err, store.ErrNotFound) {
		return ResyncOrderResult{}, temporal.NewNonRetryableApplicationError("order "+in.OrderID+" not found", ErrTypeOrderNotFound, nil)
	}
	if err != nil {
		return ResyncOrderResult{}, fmt.Errorf("read order %s: %w", in.OrderID, err)
	}
	bridge, err := a.connectorBridge(src)
	if err != nil {
		return ResyncOrderResult{}, err
	}
	conn, err := a.Platforms.Get(bridge.Type)
	if err != nil {
		return ResyncOrderResult{}, platformError(err, src)
	}

	o, err := conn.FetchOrder(ctx, bridge, src.ExternalID)
	if err != nil {
		return ResyncOrderResult{}, platformError(err, src)
	}

	out, err := store.ApplyOrderSync(ctx, a.Store, store.OrderSyncUpdate{
		OrganizationID: orgID,
		OrderID:        orderID,
		BridgeID:       bridge.ID,
		Order:          *o,
		Activity: store.OrderSyncActivity{
			ID:          OrderActivityID(wfID, runID, store.OrderSyncActivityType),
			Description: "Re-synced from " + *src.BridgeName,
			ActorType:   "system",
			ActorName:   ResyncActorName,
			Metadata: map[string]any{
				"bridgeId":    bridge.ID.String(),
				"externalId":  src.ExternalID,
				"workflowId":  wfID,
				"runId":       runID,
				"requestedBy": in.RequestedBy,
			},
		},
	})
	if errors.Is(err, store.ErrNotFound) {
		// Deleted, or moved to another bridge, while we fetched it.
		return ResyncOrderResult{}, temporal.NewNonRetryableApplicationError("order "+in.OrderID+" was deleted or changed its source bridge during the resync", ErrTypeOrderNotFound, nil)
	}
	if err != nil {
		return ResyncOrderResult{}, fmt.Errorf("apply synced order %s: %w", in.OrderID, err)
	}
	a.log().InfoContext(ctx, "order resynced", "organization_id", orgID, "order_id", orderID,
		"bridge_id", bridge.ID, "changed_fields", out.ChangedFields, "already_applied", out.AlreadyApplied)
	return ResyncOrderResult{
		OrderID:        orderID.String(),
		BridgeID:       bridge.ID.String(),
		ExternalID:     src.ExternalID,
		ChangedFields:  out.ChangedFields,
		AlreadyApplied: out.AlreadyApplied,
	}, nil
}

// RecordResyncFailureInput is the input of RecordResyncFailure.
type RecordResyncFailureInput struct {
	OrganizationID string `json:"organizationId"`
	OrderID        string `json:"orderId"`
	WorkflowID     string `json:"workflowId"`
	RunID          string `json:"runId"`
	// Error is the failure's message for people; ErrorType its application
	// error type, when it had one.
	Error       string `json:"error"`
	ErrorType   string `json:"errorType"`
	RequestedBy Actor  `json:"requestedBy"`
}

// RecordResyncFailureResult is the result of RecordResyncFailure.
type RecordResyncFailureResult struct {
	// Recorded is false when the order no longer exists.
	Recorded bool `json:"recorded"`
}

// RecordResyncFailure records a "sync_failed" activity on the order, once
// per workflow run.
func (a *OrderActivities) RecordResyncFailure(ctx context.Context, in RecordResyncFailureInput) (RecordResyncFailureResult, error) {
	orgID, orderID, err := parseIDs(in.OrganizationID, in.OrderID)
	if err != nil {
		return RecordResyncFailureResult{}, err
	}
	wfID, runID, err := runKey(ctx, in.WorkflowID, in.RunID)
	if err != nil {
		return RecordResyncFailureResult{}, err
	}

	src, err := store.GetOrderSyncSource(ctx, a.Store.Pool, orgID, orderID)
	if errors.Is(err, store.ErrNotFound) {
		return RecordResyncFailureResult{}, nil
	}
	if err != nil {
		return RecordResyncFailureResult{}, fmt.Errorf("read order %s: %w", in.OrderID, err)
	}
	desc := "Re-sync failed"
	meta := map[string]any{
		"workflowId":  wfID,
		"runId":       runID,
		"error":       TenantText(in.Error),
		"errorType":   in.ErrorType,
		"requestedBy": in.RequestedBy,
		"bridgeId":    nil,
	}
	if src.HasBridge() {
		desc = "Re-sync from " + *src.BridgeName + " failed"
		meta["bridgeId"] = src.BridgeID.String()
	}
	if in.Error != "" {
		desc += ": " + TenantText(in.Error)
	}
	err = store.RecordOrderSyncFailure(ctx, a.Store.Pool, orgID, orderID, store.OrderSyncActivity{
		ID:          OrderActivityID(wfID, runID, store.OrderSyncFailedActivityType),
		Description: desc,
		ActorType:   "system",
		ActorName:   ResyncActorName,
		Metadata:    meta,
	})
	if err != nil {
		return RecordResyncFailureResult{}, fmt.Errorf("record resync failure of order %s: %w", in.OrderID, err)
	}
	return RecordResyncFailureResult{Recorded: true}, nil
}

// connectorBridge checks the order's source bridge can sync and builds the
// connector's view of it, with the decrypted credentials.
func (a *OrderActivities) connectorBridge(src store.OrderSyncSource) (platforms.Bridge, error) {
	if !src.HasBridge() {
		return platforms.Bridge{}, temporal.NewNonRetryableApplicationError("order has no source bridge", ErrTypeBridgeUnavailable, nil)
	}
	if *src.BridgeStatus != "active" {
		return platforms.Bridge{}, temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("bridge %q is %s; only an active bridge syncs", *src.BridgeName, *src.BridgeStatus), ErrTypeBridgeUnavailable, nil)
	}
	cfg := make(map[string]any, len(src.BridgeConfig)+4)
	maps.Copy(cfg, src.BridgeConfig)
	if len(src.BridgeCredentials) > 0 {
		if a.Secrets == nil {
			return platforms.Bridge{}, temporal.NewNonRetryableApplicationError("bridge credentials cannot be opened: no encryption key configured", ErrTypeBridgeUnavailable, nil)
		}
		creds, err := a.Secrets.OpenJSON(src.BridgeCredentials, store.BridgeCredentialsAD(src.OrganizationID, *src.BridgeID))
		if err != nil {
			return platforms.Bridge{}, temporal.NewNonRetryableApplicationError("bridge credentials cannot be opened", ErrTypeBridgeUnavailable, err)
		}
		maps.Copy(cfg, creds)
	}
	return platforms.Bridge{ID: *src.BridgeID, OrganizationID: src.OrganizationID, Type: *src.BridgeType, Config: cfg}, nil
}

// platformError maps a connector error: permanent ones become
// non-retryable application errors, the others retryable ones. Messages
// never carry credentials (connector errors do not).
func platformError(err error, src store.OrderSyncSource) error {
	name := "the platform"
	if src.BridgeName != nil {
		name = fmt.Sprintf("bridge %q", *src.BridgeName)
	}
	var msg string
	var pe *platforms.Error
	switch {
	case errors.Is(err, platforms.ErrOrderNotFound):
		msg = fmt.Sprintf("order %s not found on %s", src.ExternalID, name)
	case errors.Is(err, platforms.ErrUnauthorized):
		msg = name + " refused its credentials"
	case errors.Is(err, platforms.ErrNotAvailable):
		msg = fmt.Sprintf("%s cannot sync: its platform connector is not available", name)
	case errors.As(err, &pe):
		msg = fmt.Sprintf("%s failed: %s", name, platformMessage(pe))
	default:
		msg = fmt.Sprintf("%s failed: %s", name, TenantMessage(err))
	}
	if !platforms.IsRetryable(err) {
		return temporal.NewNonRetryableApplicationError(msg, ErrTypePlatformPermanent, err)
	}
	return temporal.NewApplicationErrorWithCause(msg, ErrTypePlatformUnavailable, err)
}

// orderActivityNamespace is the UUID v5 namespace of activity ids derived
// from workflow runs.
var orderActivityNamespace = uuid.MustParse("0d7c6f2e-3f0a-5b8e-9c1d-4a6b2e8f7c31")

// OrderActivityID is the id of the order activity of a given type recorded
// by a workflow run: the same for every attempt of the run.
func OrderActivityID(workflowID, runID, activityType string) uuid.UUID {
	return uuid.NewSHA1(orderActivityNamespace, []byte(workflowID+"\x00"+runID+"\x00"+activityType))
}

// runKey returns the workflow run an activity records for: the input's,
// else the activity's own.
func runKey(ctx context.Context, workflowID, runID string) (string, string, error) {
	if (workflowID == "" || runID == "") && activity.IsActivity(ctx) {
		we := activity.GetInfo(ctx).WorkflowExecution
		if workflowID == "" {
			workflowID = we.ID
		}
		if runID == "" {
			runID = we.RunID
		}
	}
	if workflowID == "" || runID == "" {
		return "", "", temporal.NewNonRetryableApplicationError("workflowId and runId are required", ErrTypeInvalidInput, nil)
	}
	return workflowID, runID, nil
}

func parseIDs(orgID, orderID string) (uuid.UUID, uuid.UUID, error) {
	org, err := uuid.Parse(orgID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("organizationId is not a UUID", ErrTypeInvalidInput, nil)
	}
	order, err := uuid.Parse(orderID)
	if err != nil {
		return uuid.Nil, uuid.Nil, temporal.NewNonRetryableApplicationError("orderId is not a UUID", ErrTypeInvalidInput, nil)
	}
	return org, order, nil
}

func (a *OrderActivities) log() *slog.Logger {
	if a.Logger == nil {
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return a.Logger
}
