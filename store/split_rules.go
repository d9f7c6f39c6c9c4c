package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Split rule methods (the CHECK of migrations/00018).
var SplitRuleMethods = []string{"condition", "field_group"}

// ErrSplitRuleBridge: the rule's bridge is not one of the organization's.
var ErrSplitRuleBridge = errors.New("bridge not found")

// MissingConditionSetsError lists the condition sets a rule names that are
// not sets of the organization.
type MissingConditionSetsError struct{ IDs []uuid.UUID }

func (e *MissingConditionSetsError) Error() string { return "condition set not found" }

// SplitRule splits an order's line items into child orders.
type SplitRule struct {
	ID              uuid.UUID       `db:"id"`
	OrganizationID  uuid.UUID       `db:"organization_id"`
	Name            string          `db:"name"`
	Description     *string         `db:"description"`
	Method          string          `db:"method"`
	ConditionGroups json.RawMessage `db:"condition_groups"`
	GroupField      *string         `db:"group_field"`
	BridgeID        *uuid.UUID      `db:"bridge_id"`
	IsActive        bool            `db:"is_active"`
	Priority        int             `db:"priority"`
	OrdersSplit     int             `db:"orders_split"`
	LastSplitAt     *time.Time      `db:"last_split_at"`
	ConditionSetIDs []uuid.UUID     `db:"condition_set_ids"`
	CreatedAt       time.Time       `db:"created_at"`
	UpdatedAt       time.Time       `db:"updated_at"`
}

const splitRuleCols = `id, organization_id, name, description, method, condition_groups, group_field, bridge_id,
 is_active, priority, orders_split, last_split_at, condition_set_ids, created_at, updated_at`

// checkSplitRuleRefs fills a rule's empty arrays, then locks and checks what
// it points at: its bridge and its condition sets must be the
// organization's.
func checkSplitRuleRefs(ctx context.Context, tx pgx.Tx, r *SplitRule) error {
	if r.ConditionSetIDs == nil {
		r.ConditionSetIDs = []uuid.UUID{}
	}
	if r.ConditionGroups == nil {
		r.ConditionGroups = json.RawMessage(`[]`)
	}
	if r.BridgeID != nil {
		var one int
		err := tx.QueryRow(ctx, `SELECT 1 FROM bridges WHERE organization_id = $1 AND id = $2 FOR SHARE`, r.OrganizationID, *r.BridgeID).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return ErrSplitRuleBridge
		}
		if err != nil {
			return mapErr(err)
		}
	}
	missing, err := LockConditionSets(ctx, tx, r.OrganizationID, r.ConditionSetIDs)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return &MissingConditionSetsError{IDs: missing}
	}
	return nil
}

// CreateSplitRule inserts r (ID, OrganizationID and ConditionSetIDs set by
// the caller). ErrSplitRuleBridge, *MissingConditionSetsError.
func CreateSplitRule(ctx context.Context, s *Store, r SplitRule) (SplitRule, error) {
	var out SplitRule
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := checkSplitRuleRefs(ctx, tx, &r); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
INSERT INTO split_rules (id, organization_id, name, description, method, condition_groups, group_field, bridge_id,
                         is_active, priority, condition_set_ids)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
RETURNING `+splitRuleCols, r.ID, r.OrganizationID, r.Name, r.Description, r.Method, r.ConditionGroups, r.GroupField,
			r.BridgeID, r.IsActive, r.Priority, r.ConditionSetIDs)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[SplitRule])
		return mapErr(err)
	})
	return out, err
}

// UpdateSplitRule writes the editable fields of r (the whole new state;
// the counters are left alone). ErrNotFound, ErrSplitRuleBridge,
// *MissingConditionSetsError.
func UpdateSplitRule(ctx context.Context, s *Store, r SplitRule) (SplitRule, error) {
	var out SplitRule
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := checkSplitRuleRefs(ctx, tx, &r); err != nil {
			return err
		}
		rows, _ := tx.Query(ctx, `
UPDATE split_rules
   SET name = $3, description = $4, method = $5, condition_groups = $6, group_field = $7, bridge_id = $8,
       is_active = $9, priority = $10, condition_set_ids = $11, updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+splitRuleCols, r.OrganizationID, r.ID, r.Name, r.Description, r.Method, r.ConditionGroups, r.GroupField,
			r.BridgeID, r.IsActive, r.Priority, r.ConditionSetIDs)
		var err error
		out, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[SplitRule])
		return mapErr(err)
	})
	return out, err
}

// SplitRuleByID finds a rule of the organization.
func SplitRuleByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (SplitRule, error) {
	rows, _ := db.Query(ctx, `SELECT `+splitRuleCols+` FROM split_rules WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[SplitRule])
	return out, mapErr(err)
}

// SplitRuleFilter narrows a list; nil fields do not filter.
type SplitRuleFilter struct {
	IsActive *bool
	BridgeID *uuid.UUID
	Limit    int
	Offset   int
}

// ListSplitRules returns one page, by priority descending then name, and
// the number of all matching rules.
func ListSplitRules(ctx context.Context, db DBTX, orgID uuid.UUID, f SplitRuleFilter) ([]SplitRule, int, error) {
	where := `organization_id = $1 AND ($2::boolean IS NULL OR is_active = $2) AND ($3::uuid IS NULL OR bridge_id = $3)`
	rows, _ := db.Query(ctx, `SELECT `+splitRuleCols+` FROM split_rules WHERE `+where+`
 ORDER BY priority DESC, name, id LIMIT $4 OFFSET $5`, orgID, f.IsActive, f.BridgeID, f.Limit, f.Offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SplitRule])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	if len(out) < f.Limit && (len(out) > 0 || f.Offset == 0) {
		return out, f.Offset + len(out), nil
	}
	var total int
	err = db.QueryRow(ctx, `SELECT count(*) FROM split_rules WHERE `+where, orgID, f.IsActive, f.BridgeID).Scan(&total)
	return out, total, mapErr(err)
}

// DeleteSplitRule deletes a rule; orders it split stay as they are.
func DeleteSplitRule(ctx context.Context, db DBTX, orgID, id uuid.UUID) error {
	tag, err := db.Exec(ctx, `DELETE FROM split_rules WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return mapErr(err)
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}

// ActiveSplitRules are the active rules that apply to orders of a bridge
// (rules of that bridge and rules of no bridge), in the order they are
// tried: priority descending, then name.
func ActiveSplitRules(ctx context.Context, db DBTX, orgID uuid.UUID, bridgeID *uuid.UUID) ([]SplitRule, error) {
	rows, _ := db.Query(ctx, `SELECT `+splitRuleCols+` FROM split_rules
 WHERE organization_id = $1 AND is_active AND (bridge_id IS NULL OR bridge_id = $2)
 ORDER BY priority DESC, name, id`, orgID, bridgeID)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[SplitRule])
	return out, mapErr(err)
}

// OrderForUpdate reads an order of the organization and locks it until the
// transaction ends.
func OrderForUpdate(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID) (Order, error) {
	rows, _ := tx.Query(ctx, `SELECT `+orderCols+` FROM orders WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Order])
	return out, mapErr(err)
}

// MarkOrderSplit records on a parent order that it was split: metadata
// keys merged in (one level) and a tag added when absent and there is room.
func MarkOrderSplit(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID, metadata map[string]any, tag string, maxTags int) error {
	_, err := tx.Exec(ctx, `
UPDATE orders
   SET metadata = metadata || $3::jsonb,
       tags = CASE WHEN $4 = ANY(tags) OR cardinality(tags) >= $5 THEN tags ELSE array_append(tags, $4) END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2`, orgID, id, metadata, tag, maxTags)
	return mapErr(err)
}

// RecordSplitRuleUse counts one split by a rule.
func RecordSplitRuleUse(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID) error {
	_, err := tx.Exec(ctx, `UPDATE split_rules SET orders_split = orders_split + 1, last_split_at = now() WHERE organization_id = $1 AND id = $2`, orgID, id)
	return mapErr(err)
}
