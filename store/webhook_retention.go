package store

import (
	"context"
	"time"
)

// Retention of inbound webhook events (issue 15): a settled event
// (processed or failed) keeps its payload and headers for
// WebhookEventRetention, then only its row and dedupe key stay, so a
// late replay of the delivery is still recognized; after
// WebhookDedupeRetention the row goes.
const (
	DefaultWebhookEventRetention  = 30 * 24 * time.Hour
	DefaultWebhookDedupeRetention = 90 * 24 * time.Hour
)

// PurgeWebhookEvents empties the payload of at most batch settled events
// older than keepEvents and deletes at most batch settled events older
// than keepKeys (the longer of the two is used for keys). Idempotent;
// call it again while it returns full batches.
func PurgeWebhookEvents(ctx context.Context, db DBTX, keepEvents, keepKeys time.Duration, batch int) (emptied, deleted int64, err error) {
	keepKeys = max(keepKeys, keepEvents)
	tag, err := db.Exec(ctx, `
UPDATE webhook_events SET payload = '{}'::jsonb, headers = '{}'::jsonb, result = NULL
 WHERE id IN (SELECT id FROM webhook_events
               WHERE status IN ('processed', 'failed') AND created_at < now() - make_interval(secs => $1)
                 AND payload <> '{}'::jsonb
               ORDER BY created_at LIMIT $2)`, keepEvents.Seconds(), batch)
	if err != nil {
		return 0, 0, mapErr(err)
	}
	emptied = tag.RowsAffected()
	tag, err = db.Exec(ctx, `
DELETE FROM webhook_events
 WHERE id IN (SELECT id FROM webhook_events
               WHERE status IN ('processed', 'failed') AND created_at < now() - make_interval(secs => $1)
               ORDER BY created_at LIMIT $2)`, keepKeys.Seconds(), batch)
	if err != nil {
		return emptied, 0, mapErr(err)
	}
	return emptied, tag.RowsAffected(), nil
}
