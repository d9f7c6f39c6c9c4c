package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Insight statuses (CONTRACT 11).
const (
	InsightNew          = "new"
	InsightAcknowledged = "acknowledged"
	InsightResolved     = "resolved"
	InsightDismissed    = "dismissed"
)

// Insight is a stored insight (spec Part 3, CONTRACT 11).
type Insight struct {
	ID             uuid.UUID       `db:"id"`
	OrganizationID uuid.UUID       `db:"organization_id"`
	Fingerprint    string          `db:"fingerprint"`
	Detector       string          `db:"detector"`
	Category       string          `db:"category"`
	Severity       string          `db:"severity"`
	Status         string          `db:"status"`
	Title          string          `db:"title"`
	Summary        string          `db:"summary"`
	Metrics        json.RawMessage `db:"metrics"`
	Actions        json.RawMessage `db:"actions"`
	Confidence     float64         `db:"confidence"`
	Tags           []string        `db:"tags"`
	Source         string          `db:"source"`
	OperationID    *uuid.UUID      `db:"operation_id"`
	DetectedAt     time.Time       `db:"detected_at"`
	ExpiresAt      time.Time       `db:"expires_at"`
	AcknowledgedAt *time.Time      `db:"acknowledged_at"`
	AcknowledgedBy json.RawMessage `db:"acknowledged_by"`
	Note           *string         `db:"note"`
	CreatedAt      time.Time       `db:"created_at"`
	UpdatedAt      time.Time       `db:"updated_at"`
}

const insightCols = `id, organization_id, fingerprint, detector, category, severity, status, title, summary, metrics, actions,
 confidence, tags, source, operation_id, detected_at, expires_at, acknowledged_at, acknowledged_by, note, created_at, updated_at`

// UpsertInsights stores generated insights in one statement, keyed by
// (organization, fingerprint), and returns the stored rows in the order
// given. A fingerprint seen before is refreshed (numbers, text, detected
// and expiry times) and keeps its id and status while unexpired; an
// acknowledged, resolved or dismissed one keeps its expiry too, so a
// dismissal lasts its 24 h and the finding comes back as new after. An
// expired row is replaced by a new insight (new id, status new).
func UpsertInsights(ctx context.Context, db DBTX, orgID uuid.UUID, list []Insight) ([]Insight, error) {
	if len(list) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(list))
	fps := make([]string, len(list))
	detectors := make([]string, len(list))
	cats := make([]string, len(list))
	sevs := make([]string, len(list))
	titles := make([]string, len(list))
	summaries := make([]string, len(list))
	metrics := make([]string, len(list))
	actions := make([]string, len(list))
	confs := make([]float64, len(list))
	tags := make([]string, len(list))
	sources := make([]string, len(list))
	ops := make([]*uuid.UUID, len(list))
	detected := make([]time.Time, len(list))
	expires := make([]time.Time, len(list))
	for i, in := range list {
		ids[i], fps[i], detectors[i], cats[i], sevs[i] = in.ID, in.Fingerprint, in.Detector, in.Category, in.Severity
		titles[i], summaries[i], confs[i], sources[i], ops[i] = in.Title, in.Summary, in.Confidence, in.Source, in.OperationID
		metrics[i], actions[i] = string(jsonOr(in.Metrics, "[]")), string(jsonOr(in.Actions, "[]"))
		t, _ := json.Marshal(nonNil(in.Tags))
		tags[i] = string(t)
		detected[i], expires[i] = in.DetectedAt, in.ExpiresAt
	}
	rows, err := db.Query(ctx, `
WITH input AS (
  SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::jsonb[], $10::jsonb[],
                       $11::float8[], $12::jsonb[], $13::text[], $14::uuid[], $15::timestamptz[], $16::timestamptz[])
         WITH ORDINALITY AS t(id, fingerprint, detector, category, severity, title, summary, metrics, actions,
                              confidence, tags, source, operation_id, detected_at, expires_at, ord)
), stored AS (
  INSERT INTO insights AS i (id, organization_id, fingerprint, detector, category, severity, status, title, summary, metrics, actions,
                             confidence, tags, source, operation_id, detected_at, expires_at)
  SELECT id, $1, fingerprint, detector, category, severity, 'new', title, summary, metrics, actions, confidence,
         ARRAY(SELECT jsonb_array_elements_text(tags)), source, operation_id, detected_at, expires_at
    FROM input ORDER BY ord
  ON CONFLICT (organization_id, fingerprint) DO UPDATE SET
    id              = CASE WHEN i.expires_at <= excluded.detected_at THEN excluded.id ELSE i.id END,
    status          = CASE WHEN i.expires_at <= excluded.detected_at THEN 'new' ELSE i.status END,
    expires_at      = CASE WHEN i.expires_at <= excluded.detected_at OR i.status = 'new' THEN excluded.expires_at ELSE i.expires_at END,
    acknowledged_at = CASE WHEN i.expires_at <= excluded.detected_at THEN NULL ELSE i.acknowledged_at END,
    acknowledged_by = CASE WHEN i.expires_at <= excluded.detected_at THEN NULL ELSE i.acknowledged_by END,
    note            = CASE WHEN i.expires_at <= excluded.detected_at THEN NULL ELSE i.note END,
    created_at      = CASE WHEN i.expires_at <= excluded.detected_at THEN now() ELSE i.created_at END,
    detector = excluded.detector, category = excluded.category, severity = excluded.severity, title = excluded.title,
    summary = excluded.summary, metrics = excluded.metrics, actions = excluded.actions, confidence = excluded.confidence,
    tags = excluded.tags, source = excluded.source, operation_id = excluded.operation_id, detected_at = excluded.detected_at,
    updated_at = now()
  RETURNING `+insightCols+`
)
SELECT s.* FROM stored s JOIN input USING (fingerprint) ORDER BY input.ord`,
		orgID, ids, fps, detectors, cats, sevs, titles, summaries, metrics, actions, confs, tags, sources, ops, detected, expires)
	if err != nil {
		return nil, mapErr(err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByName[Insight])
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// InsightFilter narrows ListInsights.
type InsightFilter struct {
	Status, Category string
	// OperationID keeps the insights generated for one operation.
	OperationID   *uuid.UUID
	Now           time.Time
	Limit, Offset int
}

// ListInsights lists the organization's unexpired insights, newest
// first, with the number of all that match.
func ListInsights(ctx context.Context, db DBTX, orgID uuid.UUID, f InsightFilter) ([]Insight, int, error) {
	const where = ` WHERE organization_id = $1 AND expires_at > $2 AND ($3 = '' OR status = $3) AND ($4 = '' OR category = $4)
   AND ($5::uuid IS NULL OR operation_id = $5)`
	args := []any{orgID, f.Now, f.Status, f.Category, f.OperationID}
	var total int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM insights`+where, args...).Scan(&total); err != nil {
		return nil, 0, mapErr(err)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	rows, err := db.Query(ctx, `SELECT `+insightCols+` FROM insights`+where+`
 ORDER BY detected_at DESC, id DESC LIMIT $6 OFFSET $7`, append(args, limit, f.Offset)...)
	if err != nil {
		return nil, 0, mapErr(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByName[Insight])
	return list, total, mapErr(err)
}

// InsightByID is one insight of the organization (expired or not).
func InsightByID(ctx context.Context, db DBTX, orgID, id uuid.UUID) (Insight, error) {
	rows, err := db.Query(ctx, `SELECT `+insightCols+` FROM insights WHERE organization_id = $1 AND id = $2`, orgID, id)
	if err != nil {
		return Insight{}, mapErr(err)
	}
	in, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Insight])
	return in, mapErr(err)
}

// SetInsightStatus records an acknowledgement (status, who, when, note)
// of an unexpired insight whose status is one of from. ErrNotFound: no
// such unexpired insight in that status.
func SetInsightStatus(ctx context.Context, db DBTX, orgID, id uuid.UUID, from []string, status string, by json.RawMessage, note *string, at time.Time) (Insight, error) {
	rows, err := db.Query(ctx, `
UPDATE insights SET status = $4, acknowledged_at = $5, acknowledged_by = $6, note = $7, updated_at = now()
 WHERE organization_id = $1 AND id = $2 AND status = ANY($3) AND expires_at > $5
RETURNING `+insightCols, orgID, id, from, status, at, by, note)
	if err != nil {
		return Insight{}, mapErr(err)
	}
	in, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Insight])
	return in, mapErr(err)
}

// DeleteExpiredInsights removes the organization's insights that expired
// before cutoff (generation calls it, so rows never pile up).
func DeleteExpiredInsights(ctx context.Context, db DBTX, orgID uuid.UUID, cutoff time.Time) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM insights WHERE organization_id = $1 AND expires_at < $2`, orgID, cutoff)
	return tag.RowsAffected(), mapErr(err)
}
