package bridgetasks_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/bridgetasks"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
)

func TestMain(m *testing.M) { os.Exit(storetest.Run(m)) }

// newOrganization makes an organization (and its owner) named after the
// test's subject.
func newOrganization(t *testing.T, s *store.Store, name string) store.Organization {
	t.Helper()
	u, err := store.CreateUser(t.Context(), s.Pool, store.User{ID: uuid.New(), Email: "u" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "U"})
	require.NoError(t, err)
	o, err := store.CreateOrganization(t.Context(), s, name+" "+u.Email, u.ID)
	require.NoError(t, err)
	return o
}

// newBox is a secrets box with a fresh key.
func newBox(t *testing.T) *secrets.Box {
	t.Helper()
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	return box
}

// runs answers each start with err.
type runs struct {
	err     error
	started []bridgetasks.Run
}

func (r *runs) WorkflowID(id uuid.UUID) string { return "bridge-task/" + id.String() }
func (r *runs) Start(_ context.Context, in bridgetasks.Run) (func(context.Context) error, error) {
	r.started = append(r.started, in)
	if r.err != nil {
		return nil, r.err
	}
	return func(context.Context) error { return nil }, nil
}

// An operation runs a bridge's task as the API does: a start Temporal
// refused fails the execution (kept as a record), one whose outcome is
// unknown leaves it queued (a second run of the task is then a conflict);
// a webhook task or another organization's bridge is refused.
func TestRunTaskAsOperation(t *testing.T) {
	s := storetest.New(t)
	ctx := t.Context()
	o := newOrganization(t, s, "Tasks")
	typ := platforms.Types()[0].Slug
	b, err := store.CreateBridge(ctx, s.Pool, store.Bridge{ID: uuid.New(), OrganizationID: o.ID, Type: typ, Name: "Shop"})
	require.NoError(t, err)
	var task, webhook string
	for _, d := range platforms.Tasks(typ) {
		switch {
		case d.Category == platforms.TaskCategoryWebhook && webhook == "":
			webhook = d.Name
		case d.Category != platforms.TaskCategoryWebhook && task == "":
			task = d.Name
		}
	}
	require.NotEmpty(t, task)
	r := &runs{}
	svc := bridgetasks.New(bridgetasks.Deps{Store: s, Runs: r})
	op := domain.Actor{Kind: domain.ActorOperation, ID: uuid.New(), OrganizationID: o.ID}

	_, err = svc.RunTask(ctx, op, b.ID, bridgetasks.RunInput{TaskName: "no-such-task", Field: "taskName"})
	require.ErrorIs(t, err, domain.ErrInvalid)
	if webhook != "" {
		_, err = svc.RunTask(ctx, op, b.ID, bridgetasks.RunInput{TaskName: webhook, Field: "taskName"})
		require.ErrorIs(t, err, domain.ErrInvalid)
	}
	_, err = svc.RunTask(ctx, domain.Actor{Kind: domain.ActorOperation, OrganizationID: uuid.New()}, b.ID, bridgetasks.RunInput{TaskName: task})
	require.ErrorIs(t, err, domain.ErrNotFound)

	r.err = domain.WorkflowsUnavailable(errors.New("refused"))
	_, err = svc.RunTask(ctx, op, b.ID, bridgetasks.RunInput{TaskName: task})
	require.ErrorIs(t, err, domain.ErrUnavailable)
	page, err := svc.Executions(ctx, op, b.ID, 10, 0)
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
	require.Equal(t, bridgetasks.StatusFailed, page.Items[0].Status, "nothing runs: the execution fails")

	r.err = domain.WorkflowsUnavailable(fmt.Errorf("%w: lost", domain.ErrRunMayExist))
	_, err = svc.RunTask(ctx, op, b.ID, bridgetasks.RunInput{TaskName: task})
	require.ErrorIs(t, err, domain.ErrUnavailable)
	r.err = nil
	_, err = svc.RunTask(ctx, op, b.ID, bridgetasks.RunInput{TaskName: task})
	require.ErrorIs(t, err, domain.ErrConflict, "the run that may exist keeps its execution queued")

	reader := domain.Actor{Kind: domain.ActorAPIKey, OrganizationID: o.ID, Scoped: true, Scopes: []string{bridgetasks.ScopeRead}}
	_, err = svc.RunTask(ctx, reader, b.ID, bridgetasks.RunInput{TaskName: task})
	require.ErrorIs(t, err, domain.ErrForbidden)
}
