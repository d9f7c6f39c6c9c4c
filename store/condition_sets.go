package store

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// ErrConditionSetInUse refuses deleting a condition set that a rule's
// conditions reference.
var ErrConditionSetInUse = errors.New("condition set is referenced")

// conditionSetReferrers are the tables whose rows reference condition sets
// through a condition_set_ids uuid[] column that their writers keep equal
// to the sets their conditions use (cond.Program.SetIDs). Deleting a set
// any of them names is ErrConditionSetInUse; a writer that adds a
// reference locks the sets it names with LockConditionSets first, so a
// delete and a new reference never both succeed. Dispatchers add their
// table here.
var conditionSetReferrers = []string{"split_rules", "dispatchers"}

// ConditionSet is a named list of values of one type.
type ConditionSet struct {
	ID             uuid.UUID `db:"id"`
	OrganizationID uuid.UUID `db:"organization_id"`
	Name           string    `db:"name"`
	Description    *string   `db:"description"`
	ValueType      string    `db:"value_type"`
	ValueCount     int       `db:"value_count"`
	CreatedAt      time.Time `db:"created_at"`
	UpdatedAt      time.Time `db:"updated_at"`
}

const conditionSetCols = `id, organization_id, name, description, value_type, value_count, created_at, updated_at`

// ConditionSetValue is one value of a set.
type ConditionSetValue struct {
	ID             uuid.UUID `db:"id"`
	ConditionSetID uuid.UUID `db:"condition_set_id"`
	Value          string    `db:"value"`
	Label          *string   `db:"label"`
}

// CreateConditionSet inserts s (ID and OrganizationID set by the caller).
// ErrConflict: the organization has a set of that name.
func CreateConditionSet(ctx context.Context, db DBTX, s ConditionSet) (ConditionSet, error) {
	rows, _ := db.Query(ctx, `
INSERT INTO condition_sets (id, organization_id, name, description, value_type)
VALUES ($1, $2, $3, $4, $5)
RETURNING `+conditionSetCols, s.ID, s.OrganizationID, s.Name, s.Description, s.ValueType)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ConditionSet])
	return out, mapErr(err)
}

// ConditionSetByID finds a set of the organization.
func ConditionSetByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (ConditionSet, error) {
	rows, _ := db.Query(ctx, `SELECT `+conditionSetCols+` FROM condition_sets WHERE organization_id = $1 AND id = $2`, orgID, id)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ConditionSet])
	return out, mapErr(err)
}

// ListConditionSets returns one page of the organization's sets by name and
// the number of all of them.
func ListConditionSets(ctx context.Context, db DBTX, orgID uuid.UUID, limit, offset int) ([]ConditionSet, int, error) {
	rows, _ := db.Query(ctx, `SELECT `+conditionSetCols+`, count(*) OVER () AS total FROM condition_sets
 WHERE organization_id = $1 ORDER BY name, id LIMIT $2 OFFSET $3`, orgID, limit, offset)
	type row struct {
		ConditionSet
		Total int `db:"total"`
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[row])
	if err != nil {
		return nil, 0, mapErr(err)
	}
	out := make([]ConditionSet, 0, len(list))
	total := 0
	for _, r := range list {
		out = append(out, r.ConditionSet)
		total = r.Total
	}
	if len(list) == 0 && offset > 0 {
		err = db.QueryRow(ctx, `SELECT count(*) FROM condition_sets WHERE organization_id = $1`, orgID).Scan(&total)
	}
	return out, total, mapErr(err)
}

// ConditionSetPatch is an update: Name when not nil; Description when
// DescriptionSet (nil clears it).
type ConditionSetPatch struct {
	Name           *string
	DescriptionSet bool
	Description    *string
}

// UpdateConditionSet applies p. ErrNotFound, ErrConflict (name taken).
func UpdateConditionSet(ctx context.Context, db DBTX, orgID, id uuid.UUID, p ConditionSetPatch) (ConditionSet, error) {
	rows, _ := db.Query(ctx, `
UPDATE condition_sets
   SET name = coalesce($3, name),
       description = CASE WHEN $4 THEN $5 ELSE description END,
       updated_at = now()
 WHERE organization_id = $1 AND id = $2
RETURNING `+conditionSetCols, orgID, id, p.Name, p.DescriptionSet, p.Description)
	out, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[ConditionSet])
	return out, mapErr(err)
}

// lockConditionSet locks a set of the organization for a change of its
// values or its deletion. ErrNotFound when it is not the organization's.
func lockConditionSet(ctx context.Context, tx pgx.Tx, orgID, id uuid.UUID) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM condition_sets WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id).Scan(&one)
	return mapErr(err)
}

// LockConditionSets share-locks the organization's sets among ids (in a
// transaction that is about to store a reference to them) and returns the
// ids that are not sets of the organization, in the order given.
func LockConditionSets(ctx context.Context, tx pgx.Tx, orgID uuid.UUID, ids []uuid.UUID) ([]uuid.UUID, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, _ := tx.Query(ctx, `SELECT id FROM condition_sets WHERE organization_id = $1 AND id = ANY($2) ORDER BY id FOR SHARE`, orgID, ids)
	found, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, mapErr(err)
	}
	have := make(map[uuid.UUID]bool, len(found))
	for _, id := range found {
		have[id] = true
	}
	var missing []uuid.UUID
	for _, id := range ids {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// DeleteConditionSet deletes a set and its values. ErrNotFound;
// ErrConditionSetInUse when a row of a conditionSetReferrers table names it.
func DeleteConditionSet(ctx context.Context, s *Store, orgID, id uuid.UUID) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockConditionSet(ctx, tx, orgID, id); err != nil {
			return err
		}
		checks := make([]string, 0, len(conditionSetReferrers))
		for _, table := range conditionSetReferrers {
			checks = append(checks, fmt.Sprintf(`EXISTS (SELECT 1 FROM %s WHERE organization_id = $1 AND condition_set_ids @> ARRAY[$2::uuid])`,
				pgx.Identifier{table}.Sanitize()))
		}
		var used bool
		if err := tx.QueryRow(ctx, `SELECT `+strings.Join(checks, " OR "), orgID, id).Scan(&used); err != nil {
			return mapErr(err)
		}
		if used {
			return ErrConditionSetInUse
		}
		_, err := tx.Exec(ctx, `DELETE FROM condition_sets WHERE organization_id = $1 AND id = $2`, orgID, id)
		return mapErr(err)
	})
}

// ListConditionSetValues returns one page of a set's values in
// alphabetical order and the set's value count. ErrNotFound when the set
// is not the organization's.
func ListConditionSetValues(ctx context.Context, db DBTX, orgID, setID uuid.UUID, limit, offset int) ([]ConditionSetValue, int, error) {
	var total int
	if err := db.QueryRow(ctx, `SELECT value_count FROM condition_sets WHERE organization_id = $1 AND id = $2`, orgID, setID).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	rows, _ := db.Query(ctx, `SELECT id, condition_set_id, value, label FROM condition_set_values
 WHERE condition_set_id = $1 ORDER BY value LIMIT $2 OFFSET $3`, setID, limit, offset)
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[ConditionSetValue])
	return out, total, mapErr(err)
}

// NewConditionSetValue is a value to add (already canonical).
type NewConditionSetValue struct {
	Value string
	Label *string
}

// AddConditionSetValues adds values to a set in one statement; values the
// set already holds (or that repeat in the batch) are ignored. It returns
// how many were new, and keeps value_count exact: the set's row is locked
// for the whole change, so concurrent adds run one after the other.
func AddConditionSetValues(ctx context.Context, s *Store, orgID, setID uuid.UUID, values []NewConditionSetValue) (int, error) {
	var added int
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockConditionSet(ctx, tx, orgID, setID); err != nil {
			return err
		}
		if len(values) == 0 {
			return nil
		}
		// COPY into a transaction-local staging table, then one INSERT that
		// skips values the set holds: the fastest bulk path PostgreSQL has.
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE condition_set_values_in (value text, label text, id uuid) ON COMMIT DROP`); err != nil {
			return mapErr(err)
		}
		random := bufio.NewReaderSize(rand.Reader, 16<<10) // one read per 1,000 ids
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"condition_set_values_in"}, []string{"value", "label", "id"},
			pgx.CopyFromSlice(len(values), func(i int) ([]any, error) {
				id, err := uuid.NewRandomFromReader(random)
				return []any{values[i].Value, values[i].Label, id}, err
			})); err != nil {
			return mapErr(err)
		}
		tag, err := tx.Exec(ctx, `
INSERT INTO condition_set_values (condition_set_id, value, label, id)
SELECT $1, value, label, id FROM condition_set_values_in
ON CONFLICT (condition_set_id, value) DO NOTHING`, setID)
		if err != nil {
			return mapErr(err)
		}
		added = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, `UPDATE condition_sets SET value_count = value_count + $2, values_version = values_version + 1, updated_at = now() WHERE id = $1`, setID, added)
		return mapErr(err)
	})
	return added, err
}

// RemoveConditionSetValues removes values (canonical) from a set and
// returns how many it held.
func RemoveConditionSetValues(ctx context.Context, s *Store, orgID, setID uuid.UUID, values []string) (int, error) {
	var removed int
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockConditionSet(ctx, tx, orgID, setID); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM condition_set_values WHERE condition_set_id = $1 AND value = ANY($2)`, setID, values)
		if err != nil {
			return mapErr(err)
		}
		removed = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, `UPDATE condition_sets SET value_count = value_count - $2, values_version = values_version + 1, updated_at = now() WHERE id = $1`, setID, removed)
		return mapErr(err)
	})
	return removed, err
}

// ClearConditionSetValues removes every value of a set; the set stays.
func ClearConditionSetValues(ctx context.Context, s *Store, orgID, setID uuid.UUID) error {
	return s.InTx(ctx, func(tx pgx.Tx) error {
		if err := lockConditionSet(ctx, tx, orgID, setID); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM condition_set_values WHERE condition_set_id = $1`, setID); err != nil {
			return mapErr(err)
		}
		_, err := tx.Exec(ctx, `UPDATE condition_sets SET value_count = 0, values_version = values_version + 1, updated_at = now() WHERE id = $1`, setID)
		return mapErr(err)
	})
}

// LoadedConditionSet is a set's type and all its values, for evaluation,
// with the version of the values read.
type LoadedConditionSet struct {
	ValueType string
	Version   int64
	Values    []string
}

// LoadConditionSets reads the organization's sets among ids with all their
// values (one query per batch of evaluations). Sets that are not the
// organization's are absent from the map.
func LoadConditionSets(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]LoadedConditionSet, error) {
	out := make(map[uuid.UUID]LoadedConditionSet, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := db.Query(ctx, `
SELECT s.id, s.value_type, s.values_version,
       coalesce((SELECT array_agg(v.value) FROM condition_set_values v WHERE v.condition_set_id = s.id), '{}')
  FROM condition_sets s
 WHERE s.organization_id = $1 AND s.id = ANY($2)`, orgID, ids)
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var set LoadedConditionSet
		if err := rows.Scan(&id, &set.ValueType, &set.Version, &set.Values); err != nil {
			return nil, mapErr(err)
		}
		out[id] = set
	}
	return out, mapErr(rows.Err())
}

// ConditionSetVersions are the values_version of the organization's sets
// among ids (absent: not a set of the organization).
func ConditionSetVersions(ctx context.Context, db DBTX, orgID uuid.UUID, ids []uuid.UUID) (map[uuid.UUID]int64, error) {
	out := make(map[uuid.UUID]int64, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, _ := db.Query(ctx, `SELECT id, values_version FROM condition_sets WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var v int64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, mapErr(err)
		}
		out[id] = v
	}
	return out, mapErr(rows.Err())
}
