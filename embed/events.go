package embed

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// EventTypes are the audit event types of Part 3, plus webhook update and
// delete (issue 21); the event log filter accepts each. Where they are
// logged, in the transaction of the change:
//
//	session.created, session.auto_created  newSession (server-side, auto)
//	session.revoked                        RevokeSession; DeleteEndUser, for each live session
//	bridge.created                         CreateBridge; ExchangeOAuthCode (OAuth callback)
//	bridge.oauth_started                   StartOAuth
//	bridge.updated, bridge.deleted         UpdateBridge, DeleteBridge
//	user.deleted                           DeleteEndUser
//	webhook.created/updated/deleted        CreateWebhook, UpdateWebhook, DeleteWebhook
//
// action_request.*, alert_rule.created and tracking_page.created name
// resources of the action_requests, smart_alerts and branded_tracking
// features, which Part 3 lists as flags only ("objects ... not shown",
// "endpoints ... not shown"): the service has no such resource, so nothing
// logs them (the agent's pending actions and standing orders, and the
// carrier shipment actions, are organization resources outside embed,
// not these).
var EventTypes = []string{
	"session.created", "session.auto_created", "session.revoked",
	"bridge.created", "bridge.updated", "bridge.deleted", "bridge.oauth_started",
	"user.deleted",
	"action_request.created", "action_request.approved", "action_request.denied",
	"alert_rule.created", "webhook.created", "webhook.updated", "webhook.deleted", "tracking_page.created",
}

// logEvent appends to the event log inside the caller's transaction, with
// the request's address.
func (s *Service) logEvent(ctx context.Context, db store.DBTX, orgID uuid.UUID, endUser, session *uuid.UUID,
	eventType, resourceType, resourceID string, meta map[string]any) error {
	return store.InsertEmbedEvent(ctx, db, store.EmbedEvent{
		ID: uuid.New(), OrganizationID: orgID, EndUserID: endUser, SessionID: session, EventType: eventType,
		ResourceType: &resourceType, ResourceID: &resourceID, Metadata: meta, IPAddress: clientIP(ctx),
	})
}

// EventFilter is GET /embed/events.
type EventFilter struct {
	EventType string
	EndUserID *uuid.UUID
	From, To  *time.Time
	Limit     int
	Offset    int
}

// ListEvents is one page of the organization's event log, newest first,
// and the number of entries matching.
func (s *Service) ListEvents(ctx context.Context, a domain.Actor, f EventFilter) ([]store.EmbedEvent, int, error) {
	if err := requireOrgActor(a); err != nil {
		return nil, 0, err
	}
	if f.From != nil && f.To != nil && f.To.Before(*f.From) {
		return nil, 0, domain.InvalidField("to", "must not be before from")
	}
	return store.ListEmbedEvents(ctx, s.store.Pool, a.OrganizationID, store.EmbedEventFilter{
		EventType: f.EventType, EndUserID: f.EndUserID, From: f.From, To: f.To, Limit: f.Limit, Offset: f.Offset,
	})
}
