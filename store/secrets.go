package store

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/secrets"
)

// The sealed columns. Each value is sealed for its row (secrets.AD): a
// ciphertext copied into another row does not open.
const (
	bridgeCredentialsColumn         = "bridges.credentials"
	carrierAccountCredentialsColumn = "carrier_accounts.credentials"
	carrierRegistrationStateColumn  = "carrier_registrations.state"
)

// BridgeCredentialsAD binds bridges.credentials to its bridge.
func BridgeCredentialsAD(orgID, bridgeID uuid.UUID) secrets.AD {
	return secrets.AD{Table: bridgeCredentialsColumn, Org: orgID, Row: bridgeID}
}

// CarrierAccountCredentialsAD binds carrier_accounts.credentials to its account.
func CarrierAccountCredentialsAD(orgID, accountID uuid.UUID) secrets.AD {
	return secrets.AD{Table: carrierAccountCredentialsColumn, Org: orgID, Row: accountID}
}

// CarrierRegistrationStateAD binds carrier_registrations.state to its account.
func CarrierRegistrationStateAD(orgID, accountID uuid.UUID) secrets.AD {
	return secrets.AD{Table: carrierRegistrationStateColumn, Org: orgID, Row: accountID}
}

// SecretsUpgrade reports what UpgradeSecrets changed.
type SecretsUpgrade struct {
	// Resealed values were in the format without associated data.
	Resealed int
	// Rehashed carrier account-number digests were bare SHA-256.
	Rehashed int
	// Unreadable values open with neither format under this key (a
	// changed FOS_ENCRYPTION_KEY): left as they are, and logged.
	Unreadable int
}

// upgradeSecretsLock is the advisory lock key that serializes concurrent
// runs (serve and worker starting together).
const upgradeSecretsLock = 0x666f7373 // "foss"

// UpgradeSecrets brings the stored secrets to the current format, in one
// transaction: values sealed without associated data (before secrets
// format 1) are re-sealed for their rows, and carrier account-number
// digests become keyed HMACs (CarrierAccountNumberDigest). SQL migrations
// cannot do this (they do not hold the key), so it runs at start (serve,
// worker, dev) and after `fos migrate up` when FOS_ENCRYPTION_KEY is set.
// It is idempotent: a value already current is left untouched. Before the
// schema exists it does nothing.
func UpgradeSecrets(ctx context.Context, s *Store, box *secrets.Box, log *slog.Logger) (SecretsUpgrade, error) {
	var rep SecretsUpgrade
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var ready bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('bridges') IS NOT NULL AND to_regclass('carrier_accounts') IS NOT NULL
   AND to_regclass('carrier_registrations') IS NOT NULL`).Scan(&ready); err != nil || !ready {
			return mapErr(err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, upgradeSecretsLock); err != nil {
			return mapErr(err)
		}
		for _, t := range []struct {
			query, update string
			ad            func(org, id uuid.UUID) secrets.AD
		}{
			{`SELECT organization_id, id, credentials, NULL::bytea FROM bridges WHERE credentials IS NOT NULL`,
				`UPDATE bridges SET credentials = $2 WHERE id = $1 AND credentials = $3`, BridgeCredentialsAD},
			{`SELECT organization_id, id, credentials, account_number_digest FROM carrier_accounts WHERE credentials IS NOT NULL`,
				`UPDATE carrier_accounts SET credentials = $2 WHERE id = $1 AND credentials = $3`, CarrierAccountCredentialsAD},
			{`SELECT organization_id, carrier_account_id, state, NULL::bytea FROM carrier_registrations`,
				`UPDATE carrier_registrations SET state = $2 WHERE carrier_account_id = $1 AND state = $3`, CarrierRegistrationStateAD},
		} {
			if err := upgradeSealed(ctx, tx, box, log, t.query, t.update, t.ad, &rep); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil && log != nil && (rep.Resealed > 0 || rep.Rehashed > 0 || rep.Unreadable > 0) {
		log.Info("stored secrets upgraded", "resealed", rep.Resealed, "rehashed_digests", rep.Rehashed, "unreadable", rep.Unreadable)
	}
	return rep, err
}

type sealedRow struct {
	org, id uuid.UUID
	sealed  []byte
	digest  []byte
}

func upgradeSealed(ctx context.Context, tx pgx.Tx, box *secrets.Box, log *slog.Logger, query, update string,
	adOf func(org, id uuid.UUID) secrets.AD, rep *SecretsUpgrade) error {
	rows, _ := tx.Query(ctx, query)
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (sealedRow, error) {
		var x sealedRow
		err := r.Scan(&x.org, &x.id, &x.sealed, &x.digest)
		return x, err
	})
	if err != nil {
		return mapErr(err)
	}
	for _, x := range list {
		ad := adOf(x.org, x.id)
		plain, err := box.Open(x.sealed, ad)
		if err != nil {
			if plain, err = box.OpenLegacy(x.sealed); err != nil {
				rep.Unreadable++
				if log != nil {
					log.Warn("a stored secret opens with neither format (was FOS_ENCRYPTION_KEY changed?)", "column", ad.Table, "id", x.id)
				}
				continue
			}
			// Conditional on the value read: a row the service rewrote
			// meanwhile (already current) is left as it is. No row is locked
			// while the others are read.
			tag, err := tx.Exec(ctx, update, x.id, box.Seal(plain, ad), x.sealed)
			if err != nil {
				return mapErr(err)
			}
			rep.Resealed += int(tag.RowsAffected())
		}
		if len(x.digest) == 0 {
			continue
		}
		var creds map[string]any
		if json.Unmarshal(plain, &creds) != nil {
			continue
		}
		number, _ := creds["accountNumber"].(string)
		if strings.TrimSpace(number) == "" {
			continue
		}
		if d := CarrierAccountNumberDigest(box, number); !bytes.Equal(d, x.digest) {
			tag, err := tx.Exec(ctx, `UPDATE carrier_accounts SET account_number_digest = $2 WHERE id = $1 AND account_number_digest = $3`, x.id, d, x.digest)
			if err != nil {
				return mapErr(err)
			}
			rep.Rehashed += int(tag.RowsAffected())
		}
	}
	return nil
}
