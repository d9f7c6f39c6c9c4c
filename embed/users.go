package embed

import (
	"context"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
)

// EndUser is a platform's own user (store row).
type EndUser = store.EndUser

// EndUserDetail is an end user with their bridges.
type EndUserDetail struct {
	store.EndUser
	Bridges []store.Bridge
}

// ListEndUsers is one page of the organization's end users with their
// bridge counts.
func (s *Service) ListEndUsers(ctx context.Context, a domain.Actor, limit, offset int) ([]store.EndUserListItem, int, error) {
	if err := requireOrgActor(a); err != nil {
		return nil, 0, err
	}
	return store.ListEndUsers(ctx, s.store.Pool, a.OrganizationID, limit, offset)
}

// GetEndUser is an end user of the organization with their bridges.
func (s *Service) GetEndUser(ctx context.Context, a domain.Actor, id uuid.UUID) (EndUserDetail, error) {
	if err := requireOrgActor(a); err != nil {
		return EndUserDetail{}, err
	}
	u, err := store.EndUserByID(ctx, s.store.Pool, a.OrganizationID, id)
	if err != nil {
		return EndUserDetail{}, notFoundAs(err, "end user")
	}
	bridges, err := store.EndUserBridges(ctx, s.store.Pool, a.OrganizationID, id)
	return EndUserDetail{EndUser: u, Bridges: bridges}, err
}

// DeleteEndUser revokes the end user's sessions (each live one logged as
// session.revoked) and deletes them (user.deleted); their bridges stay
// with the organization, with no end user.
func (s *Service) DeleteEndUser(ctx context.Context, a domain.Actor, id uuid.UUID) error {
	if err := requireOrgActor(a); err != nil {
		return err
	}
	return s.store.InTx(ctx, func(tx pgx.Tx) error {
		u, err := store.LockEndUser(ctx, tx, a.OrganizationID, id)
		if err != nil {
			return notFoundAs(err, "end user")
		}
		revoked, err := store.DeleteEndUserRevoking(ctx, tx, a.OrganizationID, id)
		if err != nil {
			return notFoundAs(err, "end user")
		}
		for _, sid := range revoked {
			if err := s.logEvent(ctx, tx, a.OrganizationID, &u.ID, &sid, "session.revoked", "session", sid.String(),
				map[string]any{"reason": "user_deleted"}); err != nil {
				return err
			}
		}
		return s.logEvent(ctx, tx, a.OrganizationID, &u.ID, nil, "user.deleted", "end_user", u.ID.String(), map[string]any{"externalId": u.ExternalID})
	})
}
