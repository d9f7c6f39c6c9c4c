package store

import (
	"context"
	"encoding/json"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The agent's standing orders on events: the event's objects loaded a
// batch at a time, and the runs claimed a batch at a time.

// OrdersByIDs are the orders of the organization among ids (others are
// left out), in no particular order.
func OrdersByIDs(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) ([]Order, error) {
	rows, _ := db.Query(ctx, `SELECT `+orderCols+` FROM orders WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Order])
	return out, mapErr(err)
}

// ShipmentsByIDs are the shipments of the organization among ids (others
// are left out), in no particular order.
func ShipmentsByIDs(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) ([]Shipment, error) {
	rows, _ := db.Query(ctx, `SELECT `+shipmentCols+shipmentFrom+` WHERE s.organization_id = $1 AND s.id = ANY($2)`, orgID, ids)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Shipment])
	return out, mapErr(err)
}

// StandingRunClaim is one run of a standing order for an event: its
// conversation, titled with the standing order's name, acting as Actor.
type StandingRunClaim struct {
	StandingOrderID uuid.UUID
	EventKey        string
	ConversationID  uuid.UUID
	Title           string
	Actor           json.RawMessage
	// Context keeps the run's first message (its start can be repeated
	// from the row).
	Context json.RawMessage
}

// ClaimAgentStandingRuns records the runs of standing orders for events,
// each with its conversation, in one statement: a run recorded before
// (the same standing order and event key) is not recorded again. It
// returns the conversations to start: those of the runs recorded now and
// those of runs recorded over 30 s before whose turn never began (the
// caller that recorded them stopped before starting them; a start is
// idempotent, the delay only spares a run being started its second start).
func ClaimAgentStandingRuns(ctx context.Context, db DBTX, orgID uuid.UUID, runs []StandingRunClaim) ([]uuid.UUID, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	orders := make([]uuid.UUID, len(runs))
	keys := make([]string, len(runs))
	convs := make([]uuid.UUID, len(runs))
	titles := make([]string, len(runs))
	actors := make([]string, len(runs))
	contexts := make([]string, len(runs))
	for i, r := range runs {
		orders[i], keys[i], convs[i], titles[i], actors[i] = r.StandingOrderID, r.EventKey, r.ConversationID, r.Title, string(r.Actor)
		contexts[i] = string(jsonOr(r.Context, "{}"))
	}
	// The statement's parts share one snapshot: the last SELECT sees the
	// conversations that were there before, the first part those it adds.
	rows, _ := db.Query(ctx, `
WITH u AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::uuid[], $5::text[], $6::text[], $7::text[]) AS u(standing_order_id, event_key, conversation_id, title, actor, context)
), runs AS (
  INSERT INTO agent_standing_order_runs (standing_order_id, event_key, organization_id, conversation_id)
  SELECT u.standing_order_id, u.event_key, $1, u.conversation_id FROM u
    JOIN agent_standing_orders o ON o.id = u.standing_order_id AND o.organization_id = $1
  ON CONFLICT DO NOTHING
  RETURNING conversation_id
), convs AS (
  INSERT INTO agent_conversations (id, organization_id, title, actor, context, standing_order_id)
  SELECT u.conversation_id, $1, u.title, u.actor::jsonb, u.context::jsonb, u.standing_order_id FROM u
   WHERE u.conversation_id IN (SELECT conversation_id FROM runs)
  ON CONFLICT (id) DO NOTHING
  RETURNING id
)
SELECT id FROM convs
UNION
SELECT c.id FROM agent_conversations c
  JOIN agent_standing_order_runs r ON r.conversation_id = c.id AND r.organization_id = $1
 WHERE c.organization_id = $1 AND c.id = ANY($4) AND c.message_count = 0 AND c.turn_status = 'idle'
   AND r.created_at < now() - interval '30 seconds'`,
		orgID, orders, keys, convs, titles, actors, contexts)
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	return out, mapErr(err)
}

// UnstartedAgentStandingRuns are runs of standing orders recorded before
// cutoff whose conversation's turn never began (its start was lost), up
// to limit, for the reconciler: organization and conversation.
func UnstartedAgentStandingRuns(ctx context.Context, db DBTX, cutoff any, limit int) ([][2]uuid.UUID, error) {
	rows, err := db.Query(ctx, `
SELECT r.organization_id, r.conversation_id FROM agent_standing_order_runs r
  JOIN agent_conversations c ON c.id = r.conversation_id AND c.organization_id = r.organization_id
 WHERE r.created_at < $1 AND r.created_at > now() - interval '1 day' AND c.message_count = 0 AND c.turn_status = 'idle'
 ORDER BY r.created_at LIMIT $2`, cutoff, limit)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out [][2]uuid.UUID
	for rows.Next() {
		var p [2]uuid.UUID
		if err := rows.Scan(&p[0], &p[1]); err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, mapErr(rows.Err())
}
