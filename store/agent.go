package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// The agent's rows (migrations/00060_agent.sql).

// AgentConversation is a conversation with the agent.
type AgentConversation struct {
	ID              uuid.UUID       `db:"id"`
	OrganizationID  uuid.UUID       `db:"organization_id"`
	Title           string          `db:"title"`
	Status          string          `db:"status"`
	MessageCount    int             `db:"message_count"`
	Actor           json.RawMessage `db:"actor"`
	Context         json.RawMessage `db:"context"`
	StandingOrderID *uuid.UUID      `db:"standing_order_id"`
	TurnStatus      string          `db:"turn_status"`
	TurnTool        *string         `db:"turn_tool"`
	TurnError       *string         `db:"turn_error"`
	TurnStartedAt   *time.Time      `db:"turn_started_at"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
}

const agentConversationCols = `id, organization_id, title, status, message_count, actor, context, standing_order_id,
 turn_status, turn_tool, turn_error, turn_started_at, created_at, updated_at`

// InsertAgentConversation inserts c (ID and OrganizationID set); an
// existing id of the same organization is returned as it is.
func InsertAgentConversation(ctx context.Context, db DBTX, c AgentConversation) (AgentConversation, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO agent_conversations (id, organization_id, title, actor, context, standing_order_id)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (id) DO UPDATE SET id = excluded.id WHERE agent_conversations.organization_id = excluded.organization_id
RETURNING `+agentConversationCols, c.ID, c.OrganizationID, c.Title, c.Actor, nullJSON(c.Context), c.StandingOrderID)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentConversation])
	return out, mapErr(err)
}

// AgentConversationByID is one conversation of the organization.
func AgentConversationByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (AgentConversation, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentConversationCols+` FROM agent_conversations WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentConversation])
	return out, mapErr(err)
}

// ListAgentConversations is a page of the active conversations, most
// recently updated first, and their number.
func ListAgentConversations(ctx context.Context, db DBTX, orgID uuid.UUID, limit, offset int) ([]AgentConversation, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentConversationCols+` FROM agent_conversations
 WHERE organization_id = $1 AND status = 'active' ORDER BY updated_at DESC, id DESC LIMIT $2 OFFSET $3`, orgID, limit, offset)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentConversation])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	total := offset + len(list)
	if len(list) == limit || (len(list) == 0 && offset > 0) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM agent_conversations WHERE organization_id = $1 AND status = 'active'`, orgID).Scan(&total); err != nil {
			return nil, 0, mapErr(err)
		}
	}
	return list, total, nil
}

// ArchiveAgentConversation archives a conversation; ErrNotFound when the
// organization has none with that id (archived ones included: archiving
// twice is fine).
func ArchiveAgentConversation(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `UPDATE agent_conversations SET status = 'archived', updated_at = now() WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// SetAgentTurn records a turn's progress: its status, the tool being run
// (nil: none) and, for a failed turn, why. A status of processing (re)starts
// turn_started_at when the turn was not processing.
func SetAgentTurn(ctx context.Context, db DBTX, orgID, id uuid.UUID, status string, tool, errText *string) error {
	_, err := db.Exec(ctx, `
UPDATE agent_conversations
   SET turn_status = $3, turn_tool = $4, turn_error = $5,
       turn_started_at = CASE WHEN $3 = 'processing' AND turn_status <> 'processing' THEN now() ELSE turn_started_at END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2`, orgID, id, status, tool, errText)
	return mapErr(err)
}

// SetAgentTurnTool names the tool a turn runs now.
func SetAgentTurnTool(ctx context.Context, db DBTX, orgID, id uuid.UUID, tool *string) error {
	_, err := db.Exec(ctx, `UPDATE agent_conversations SET turn_tool = $3 WHERE organization_id = $1 AND id = $2`, orgID, id, tool)
	return mapErr(err)
}

// StuckAgentTurns are conversations whose turn has been processing since
// before olderThan (the reconciler's).
func StuckAgentTurns(ctx context.Context, db DBTX, olderThan time.Time, limit int) ([]AgentConversation, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentConversationCols+` FROM agent_conversations
 WHERE turn_status = 'processing' AND turn_started_at < $1 ORDER BY turn_started_at LIMIT $2`, olderThan, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentConversation])
	return list, mapErr(err)
}

// AgentMessage is one message of a conversation.
type AgentMessage struct {
	ID             uuid.UUID `db:"id"`
	OrganizationID uuid.UUID `db:"organization_id"`
	ConversationID uuid.UUID `db:"conversation_id"`
	Seq            int       `db:"seq"`
	Role           string    `db:"role"`
	Content        string    `db:"content"`
	InputTokens    *int      `db:"input_tokens"`
	OutputTokens   *int      `db:"output_tokens"`
	StepKey        string    `db:"step_key"`
	CreatedAt      time.Time `db:"created_at"`
}

const agentMessageCols = `id, organization_id, conversation_id, seq, role, content, input_tokens, output_tokens, step_key, created_at`

// AgentToolCall is a tool call of an assistant message.
type AgentToolCall struct {
	ID              uuid.UUID       `db:"id"`
	OrganizationID  uuid.UUID       `db:"organization_id"`
	ConversationID  uuid.UUID       `db:"conversation_id"`
	MessageID       uuid.UUID       `db:"message_id"`
	Position        int             `db:"position"`
	ToolUseID       string          `db:"tool_use_id"`
	ToolName        string          `db:"tool_name"`
	ToolInput       json.RawMessage `db:"tool_input"`
	ResultContent   *string         `db:"result_content"`
	IsError         bool            `db:"is_error"`
	DurationMS      *int            `db:"duration_ms"`
	ResolvedVia     *string         `db:"resolved_via"`
	PendingActionID *uuid.UUID      `db:"pending_action_id"`
	CreatedAt       time.Time       `db:"created_at"`
}

const agentToolCallCols = `id, organization_id, conversation_id, message_id, position, tool_use_id, tool_name, tool_input,
 result_content, is_error, duration_ms, resolved_via, pending_action_id, created_at`

// AppendAgentMessage appends m (ConversationID, OrganizationID, Role,
// Content, StepKey set) and its tool calls in one transaction, numbering
// it after the conversation's last message. A message with the same
// StepKey already written is returned with its calls instead (created
// false), so a step that runs again never writes twice.
func AppendAgentMessage(ctx context.Context, s *Store, m AgentMessage, calls []AgentToolCall) (AgentMessage, []AgentToolCall, bool, error) {
	var out AgentMessage
	var outCalls []AgentToolCall
	created := false
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var count int
		if err := tx.QueryRow(ctx, `SELECT message_count FROM agent_conversations WHERE organization_id = $1 AND id = $2 FOR UPDATE`,
			m.OrganizationID, m.ConversationID).Scan(&count); err != nil {
			return mapErr(err)
		}
		rows, _ := tx.Query(ctx, `SELECT `+agentMessageCols+` FROM agent_messages WHERE conversation_id = $1 AND step_key = $2`, m.ConversationID, m.StepKey)
		existing, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentMessage])
		if err != nil {
			return mapErr(err)
		}
		if len(existing) > 0 {
			out = existing[0]
			rows, _ := tx.Query(ctx, `SELECT `+agentToolCallCols+` FROM agent_tool_calls WHERE message_id = $1 ORDER BY position`, out.ID)
			outCalls, err = pgx.CollectRows(rows, pgx.RowToStructByName[AgentToolCall])
			return mapErr(err)
		}
		if m.ID == uuid.Nil {
			m.ID = uuid.New()
		}
		rows, _ = tx.Query(ctx, `
INSERT INTO agent_messages (id, organization_id, conversation_id, seq, role, content, input_tokens, output_tokens, step_key)
VALUES ($1, $2, $3, coalesce((SELECT max(seq) FROM agent_messages WHERE conversation_id = $3), 0) + 1, $4, $5, $6, $7, $8)
RETURNING `+agentMessageCols, m.ID, m.OrganizationID, m.ConversationID, m.Role, m.Content, m.InputTokens, m.OutputTokens, m.StepKey)
		if out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentMessage]); err != nil {
			return mapErr(err)
		}
		if _, err := tx.Exec(ctx, `UPDATE agent_conversations SET message_count = message_count + 1, updated_at = now() WHERE id = $1`, m.ConversationID); err != nil {
			return mapErr(err)
		}
		batch := &pgx.Batch{}
		for i, c := range calls {
			if c.ID == uuid.Nil {
				c.ID = uuid.New()
			}
			batch.Queue(`
INSERT INTO agent_tool_calls (id, organization_id, conversation_id, message_id, position, tool_use_id, tool_name, tool_input, result_content, is_error, duration_ms)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING `+agentToolCallCols,
				c.ID, m.OrganizationID, m.ConversationID, out.ID, i, c.ToolUseID, c.ToolName, jsonOrEmpty(c.ToolInput), c.ResultContent, c.IsError, c.DurationMS)
		}
		if batch.Len() == 0 {
			created = true
			return nil
		}
		br := tx.SendBatch(ctx, batch)
		for range calls {
			rows, _ := br.Query()
			c, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentToolCall])
			if err != nil {
				_ = br.Close()
				return mapErr(err)
			}
			outCalls = append(outCalls, c)
		}
		created = true
		return mapErr(br.Close())
	})
	return out, outCalls, created, err
}

// AgentMessages are a conversation's messages in order and its tool calls
// by message.
func AgentMessages(ctx context.Context, db DBTX, orgID, convID uuid.UUID) ([]AgentMessage, map[uuid.UUID][]AgentToolCall, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentMessageCols+` FROM agent_messages WHERE organization_id = $1 AND conversation_id = $2 ORDER BY seq`, orgID, convID)
	msgs, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentMessage])
	if err != nil {
		return nil, nil, mapErr(err)
	}
	rows, _ = db.Query(ctx, `SELECT `+agentToolCallCols+` FROM agent_tool_calls WHERE organization_id = $1 AND conversation_id = $2 ORDER BY message_id, position`, orgID, convID)
	calls, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentToolCall])
	if err != nil {
		return nil, nil, mapErr(err)
	}
	by := make(map[uuid.UUID][]AgentToolCall, len(msgs))
	for _, c := range calls {
		by[c.MessageID] = append(by[c.MessageID], c)
	}
	return msgs, by, nil
}

// AgentToolCallByID is one tool call of the organization.
func AgentToolCallByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (AgentToolCall, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentToolCallCols+` FROM agent_tool_calls WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentToolCall])
	return out, mapErr(err)
}

// SetAgentToolResult records the result given to the model for a call,
// once: a call that has a result keeps it (answered false).
func SetAgentToolResult(ctx context.Context, db DBTX, orgID, id uuid.UUID, content string, isErr bool, durationMS int, resolvedVia *string, actionID *uuid.UUID) (bool, error) {
	tag, err := db.Exec(ctx, `
UPDATE agent_tool_calls SET result_content = $3, is_error = $4, duration_ms = $5, resolved_via = $6, pending_action_id = $7
 WHERE organization_id = $1 AND id = $2 AND result_content IS NULL`, orgID, id, content, isErr, durationMS, resolvedVia, actionID)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// SetAgentToolResolution records how a call that waited for approval was
// resolved (approved, rejected, expired).
func SetAgentToolResolution(ctx context.Context, db DBTX, orgID, id uuid.UUID, resolvedVia string) error {
	_, err := db.Exec(ctx, `UPDATE agent_tool_calls SET resolved_via = $3 WHERE organization_id = $1 AND id = $2`, orgID, id, resolvedVia)
	return mapErr(err)
}

// AgentPendingAction is a write waiting for approval.
type AgentPendingAction struct {
	ID                 uuid.UUID       `db:"id"`
	OrganizationID     uuid.UUID       `db:"organization_id"`
	ConversationID     uuid.UUID       `db:"conversation_id"`
	ToolCallID         uuid.UUID       `db:"tool_call_id"`
	ToolName           string          `db:"tool_name"`
	ToolInput          json.RawMessage `db:"tool_input"`
	Description        string          `db:"description"`
	Status             string          `db:"status"`
	AffectedItemCount  int             `db:"affected_item_count"`
	IdempotencyKey     string          `db:"idempotency_key"`
	ExpiresAt          time.Time       `db:"expires_at"`
	Note               *string         `db:"note"`
	ResolvedBy         json.RawMessage `db:"resolved_by"`
	ResolvedAt         *time.Time      `db:"resolved_at"`
	ExecutionStartedAt *time.Time      `db:"execution_started_at"`
	ExecutedAt         *time.Time      `db:"executed_at"`
	Result             json.RawMessage `db:"result"`
	ResultIsError      bool            `db:"result_is_error"`
	CreatedAt          time.Time       `db:"created_at"`
}

const agentActionCols = `id, organization_id, conversation_id, tool_call_id, tool_name, tool_input, description, status,
 affected_item_count, idempotency_key, expires_at, note, resolved_by, resolved_at, execution_started_at, executed_at,
 result, result_is_error, created_at`

// InsertAgentPendingAction inserts a for its tool call; the action already
// written for that call is returned instead.
func InsertAgentPendingAction(ctx context.Context, db DBTX, a AgentPendingAction) (AgentPendingAction, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO agent_pending_actions (id, organization_id, conversation_id, tool_call_id, tool_name, tool_input, description,
                                   affected_item_count, idempotency_key, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (tool_call_id) DO UPDATE SET tool_call_id = excluded.tool_call_id
RETURNING `+agentActionCols, a.ID, a.OrganizationID, a.ConversationID, a.ToolCallID, a.ToolName, jsonOrEmpty(a.ToolInput),
		a.Description, a.AffectedItemCount, a.IdempotencyKey, a.ExpiresAt)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentPendingAction])
	return out, mapErr(err)
}

// AgentPendingActionByID is one action of the organization.
func AgentPendingActionByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (AgentPendingAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentActionCols+` FROM agent_pending_actions WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentPendingAction])
	return out, mapErr(err)
}

// ListAgentPendingActions lists the organization's actions, newest first;
// status "" lists all.
func ListAgentPendingActions(ctx context.Context, db DBTX, orgID uuid.UUID, status string, limit int) ([]AgentPendingAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentActionCols+` FROM agent_pending_actions
 WHERE organization_id = $1 AND ($2 = '' OR status = $2) ORDER BY created_at DESC, id DESC LIMIT $3`, orgID, status, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentPendingAction])
	return list, mapErr(err)
}

// PendingAgentActionsOf are a conversation's actions still pending.
func PendingAgentActionsOf(ctx context.Context, db DBTX, orgID, convID uuid.UUID) ([]AgentPendingAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentActionCols+` FROM agent_pending_actions
 WHERE organization_id = $1 AND conversation_id = $2 AND status = 'pending' ORDER BY created_at, id`, orgID, convID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentPendingAction])
	return list, mapErr(err)
}

// OverdueAgentActions are actions still pending after their expiry (the
// reconciler's: their workflow did not expire them).
func OverdueAgentActions(ctx context.Context, db DBTX, before time.Time, limit int) ([]AgentPendingAction, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentActionCols+` FROM agent_pending_actions
 WHERE status = 'pending' AND expires_at < $1 ORDER BY expires_at LIMIT $2`, before, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentPendingAction])
	return list, mapErr(err)
}

// ResolveAgentPendingAction moves a pending action to status in one
// statement, which settles the race between approve, reject and expiry:
// approve and reject only before expires_at, expire only after it.
// resolved is false when the action was not pending (or, for approve and
// reject, already expired; for expire, not yet due); the row is returned
// as it is then.
//
// at is the time of an expiry (the workflow's durable timer fired at it;
// zero: now); approve and reject are judged by the database's clock.
func ResolveAgentPendingAction(ctx context.Context, db DBTX, orgID, id uuid.UUID, status string, note *string, by json.RawMessage, at time.Time) (AgentPendingAction, bool, error) {
	var atArg any
	if !at.IsZero() {
		atArg = at
	}
	rows, _ := db.Query(ctx, `
UPDATE agent_pending_actions
   SET status = $3, note = $4, resolved_by = $5, resolved_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'pending'
   AND CASE WHEN $3 = 'expired' THEN expires_at <= coalesce($6::timestamptz, now()) ELSE expires_at > now() END
RETURNING `+agentActionCols, orgID, id, status, note, nullJSON(by), atArg)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentPendingAction])
	if err == nil {
		return out, true, nil
	}
	if err != pgx.ErrNoRows {
		return out, false, mapErr(err)
	}
	cur, err := AgentPendingActionByID(ctx, db, orgID, id)
	return cur, false, err
}

// ClaimAgentActionExecution claims an approved action's execution once:
// false when it was claimed before.
func ClaimAgentActionExecution(ctx context.Context, db DBTX, orgID, id uuid.UUID) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE agent_pending_actions SET execution_started_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = 'approved' AND execution_started_at IS NULL`, orgID, id)
	if err != nil {
		return false, mapErr(err)
	}
	return tag.RowsAffected() == 1, nil
}

// RecordAgentActionResult records an executed action's result.
func RecordAgentActionResult(ctx context.Context, db DBTX, orgID, id uuid.UUID, result json.RawMessage, isErr bool) error {
	_, err := db.Exec(ctx, `UPDATE agent_pending_actions SET result = $3, result_is_error = $4, executed_at = now()
 WHERE organization_id = $1 AND id = $2 AND executed_at IS NULL`, orgID, id, jsonOrEmpty(result), isErr)
	return mapErr(err)
}

// AgentToolPermission is a tool's approval rule in an organization.
type AgentToolPermission struct {
	ID                     uuid.UUID `db:"id"`
	OrganizationID         uuid.UUID `db:"organization_id"`
	ToolName               string    `db:"tool_name"`
	ApprovalRequired       bool      `db:"approval_required"`
	MaxAutoItems           int       `db:"max_auto_items"`
	MaxDailyAutoExecutions *int      `db:"max_daily_auto_executions"`
	MaxOrderValue          *float64  `db:"max_order_value"`
	RiskThreshold          float64   `db:"risk_threshold"`
	BudgetCapDaily         *float64  `db:"budget_cap_daily"`
	UpdatedBy              *string   `db:"updated_by"`
	CreatedAt              time.Time `db:"created_at"`
	UpdatedAt              time.Time `db:"updated_at"`
}

const agentPermCols = `id, organization_id, tool_name, approval_required, max_auto_items, max_daily_auto_executions,
 max_order_value::float8 AS max_order_value, risk_threshold::float8 AS risk_threshold, budget_cap_daily::float8 AS budget_cap_daily,
 updated_by, created_at, updated_at`

// AgentToolPermissions are the organization's stored tool permissions.
func AgentToolPermissions(ctx context.Context, db DBTX, orgID uuid.UUID) ([]AgentToolPermission, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentPermCols+` FROM agent_tool_permissions WHERE organization_id = $1 ORDER BY tool_name`, orgID)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentToolPermission])
	return list, mapErr(err)
}

// UpsertAgentToolPermissions writes the permissions by tool name in one
// transaction.
func UpsertAgentToolPermissions(ctx context.Context, s *Store, orgID uuid.UUID, perms []AgentToolPermission) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range perms {
			b.Queue(`
INSERT INTO agent_tool_permissions (id, organization_id, tool_name, approval_required, max_auto_items, max_daily_auto_executions,
                                    max_order_value, risk_threshold, budget_cap_daily, updated_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
ON CONFLICT (organization_id, tool_name) DO UPDATE
   SET approval_required = excluded.approval_required, max_auto_items = excluded.max_auto_items,
       max_daily_auto_executions = excluded.max_daily_auto_executions, max_order_value = excluded.max_order_value,
       risk_threshold = excluded.risk_threshold, budget_cap_daily = excluded.budget_cap_daily,
       updated_by = excluded.updated_by, updated_at = now()`,
				uuid.New(), orgID, p.ToolName, p.ApprovalRequired, p.MaxAutoItems, p.MaxDailyAutoExecutions,
				p.MaxOrderValue, p.RiskThreshold, p.BudgetCapDaily, p.UpdatedBy)
		}
		return mapErr(tx.SendBatch(ctx, b).Close())
	})
}

// AgentToolPermissionForUpdate reads a tool's permission inside tx,
// locking it so concurrent auto-approvals of the tool count one after
// the other; ErrNotFound when the organization has none for the tool.
func AgentToolPermissionForUpdate(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, tool string) (AgentToolPermission, error) {
	rows, _ := tx.Query(ctx, `SELECT `+agentPermCols+` FROM agent_tool_permissions WHERE organization_id = $1 AND tool_name = $2 FOR UPDATE`, orgID, tool)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentToolPermission])
	return out, mapErr(err)
}

// AgentAutoUsage is today's (UTC) auto runs of a tool and the label money
// they spent, read inside tx.
func AgentAutoUsage(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, tool string) (executions int, spent float64, err error) {
	err = tx.QueryRow(ctx, `SELECT executions, spent::float8 FROM agent_auto_usage
 WHERE organization_id = $1 AND tool_name = $2 AND day = (now() AT TIME ZONE 'UTC')::date`, orgID, tool).Scan(&executions, &spent)
	if err == pgx.ErrNoRows {
		return 0, 0, nil
	}
	return executions, spent, mapErr(err)
}

// AddAgentAutoUsage counts one auto run of a tool today (UTC) and the
// money it spent.
func AddAgentAutoUsage(ctx context.Context, db DBTX, orgID uuid.UUID, tool string, runs int, spent float64) error {
	_, err := db.Exec(ctx, `
INSERT INTO agent_auto_usage (organization_id, tool_name, day, executions, spent)
VALUES ($1, $2, (now() AT TIME ZONE 'UTC')::date, $3, $4)
ON CONFLICT (organization_id, tool_name, day) DO UPDATE
   SET executions = agent_auto_usage.executions + excluded.executions, spent = agent_auto_usage.spent + excluded.spent`, orgID, tool, runs, spent)
	return mapErr(err)
}

// AgentMemory is an entry the agent keeps.
type AgentMemory struct {
	ID             uuid.UUID  `db:"id"`
	OrganizationID uuid.UUID  `db:"organization_id"`
	Category       string     `db:"category"`
	ScopeType      string     `db:"scope_type"`
	ScopeID        *uuid.UUID `db:"scope_id"`
	Content        string     `db:"content"`
	Source         *string    `db:"source"`
	Confidence     *float64   `db:"confidence"`
	ExpiresAt      *time.Time `db:"expires_at"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
}

const agentMemoryCols = `id, organization_id, category, scope_type, scope_id, content, source, confidence::float8 AS confidence, expires_at, created_at, updated_at`

// InsertAgentMemory inserts m; the same id is written once.
func InsertAgentMemory(ctx context.Context, db DBTX, m AgentMemory) (AgentMemory, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO agent_memory (id, organization_id, category, scope_type, scope_id, content, source, confidence, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
ON CONFLICT (id) DO UPDATE SET id = excluded.id WHERE agent_memory.organization_id = excluded.organization_id
RETURNING `+agentMemoryCols, m.ID, m.OrganizationID, m.Category, m.ScopeType, m.ScopeID, m.Content, m.Source, m.Confidence, m.ExpiresAt)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentMemory])
	return out, mapErr(err)
}

// ListAgentMemory lists the organization's entries, newest first, by
// category and scope type ("" for any).
func ListAgentMemory(ctx context.Context, db DBTX, orgID uuid.UUID, category, scopeType string, limit int) ([]AgentMemory, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentMemoryCols+` FROM agent_memory
 WHERE organization_id = $1 AND ($2 = '' OR category = $2) AND ($3 = '' OR scope_type = $3)
 ORDER BY created_at DESC, id DESC LIMIT $4`, orgID, category, scopeType, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentMemory])
	return list, mapErr(err)
}

// AgentMemoryForTurn are the unexpired entries given to the model: the
// organization's and those of the scopes named (a user, bridges).
func AgentMemoryForTurn(ctx context.Context, db DBTX, orgID uuid.UUID, scopeIDs []uuid.UUID, limit int) ([]AgentMemory, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentMemoryCols+` FROM agent_memory
 WHERE organization_id = $1 AND (expires_at IS NULL OR expires_at > now())
   AND (scope_type = 'organization' OR scope_id = ANY($2))
 ORDER BY created_at DESC LIMIT $3`, orgID, scopeIDs, limit)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentMemory])
	return list, mapErr(err)
}

// DeleteAgentMemory deletes an entry for good.
func DeleteAgentMemory(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM agent_memory WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// AgentStandingOrder is an instruction the agent follows on events.
type AgentStandingOrder struct {
	ID              uuid.UUID       `db:"id"`
	OrganizationID  uuid.UUID       `db:"organization_id"`
	Name            string          `db:"name"`
	Description     *string         `db:"description"`
	NaturalLanguage string          `db:"natural_language"`
	TriggerType     string          `db:"trigger_type"`
	Conditions      json.RawMessage `db:"conditions"`
	Actions         json.RawMessage `db:"actions"`
	Priority        int             `db:"priority"`
	IsActive        bool            `db:"is_active"`
	CreatedBy       json.RawMessage `db:"created_by"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
}

const agentStandingCols = `id, organization_id, name, description, natural_language, trigger_type, conditions, actions,
 priority, is_active, created_by, created_at, updated_at`

// ListAgentStandingOrders lists the organization's standing orders,
// highest priority first; trigger "" lists all, else the active ones of
// that trigger.
func ListAgentStandingOrders(ctx context.Context, db DBTX, orgID uuid.UUID, trigger string) ([]AgentStandingOrder, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentStandingCols+` FROM agent_standing_orders
 WHERE organization_id = $1 AND ($2 = '' OR (trigger_type = $2 AND is_active))
 ORDER BY priority DESC, created_at, id LIMIT 500`, orgID, trigger)
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[AgentStandingOrder])
	return list, mapErr(err)
}

// AgentStandingOrderByID is one standing order of the organization.
func AgentStandingOrderByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (AgentStandingOrder, error) {
	rows, _ := db.Query(ctx, `SELECT `+agentStandingCols+` FROM agent_standing_orders WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentStandingOrder])
	return out, mapErr(err)
}

// SaveAgentStandingOrder inserts or updates o (by id, in its organization).
func SaveAgentStandingOrder(ctx context.Context, db DBTX, o AgentStandingOrder) (AgentStandingOrder, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO agent_standing_orders (id, organization_id, name, description, natural_language, trigger_type, conditions, actions, priority, is_active, created_by)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT (id) DO UPDATE
   SET name = excluded.name, description = excluded.description, natural_language = excluded.natural_language,
       trigger_type = excluded.trigger_type, conditions = excluded.conditions, actions = excluded.actions,
       priority = excluded.priority, is_active = excluded.is_active, updated_at = now()
 WHERE agent_standing_orders.organization_id = excluded.organization_id
RETURNING `+agentStandingCols, o.ID, o.OrganizationID, o.Name, o.Description, o.NaturalLanguage, o.TriggerType,
		jsonOr(o.Conditions, "[]"), jsonOr(o.Actions, "[]"), o.Priority, o.IsActive, nullJSON(o.CreatedBy))
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[AgentStandingOrder])
	return out, mapErr(err)
}

// DeleteAgentStandingOrder deletes a standing order.
func DeleteAgentStandingOrder(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM agent_standing_orders WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

func nullJSON(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

func jsonOrEmpty(raw json.RawMessage) json.RawMessage { return jsonOr(raw, "{}") }

func jsonOr(raw json.RawMessage, def string) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage(def)
	}
	return raw
}
