package api

import (
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

func signupBody(mail, orgName string) map[string]any {
	return map[string]any{"email": mail, "password": "correct horse", "first_name": "Ada", "last_name": "L", "organization_name": orgName}
}

// A slug that is taken gets a suffix; only a taken e-mail is 409.
func TestSignupSlugCollisionGetsSuffix(t *testing.T) {
	e := newEnv(t)
	name := "Collide " + uuid.NewString()[:8]
	first := e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody("c1-"+uuid.NewString()[:8]+"@example.com", name))
	require.Equal(t, 201, first.Code, "%s", first.Raw)
	base := first.data()["organization"].(map[string]any)["slug"].(string)
	require.Equal(t, strings.ToLower(strings.ReplaceAll(name, " ", "-")), base)

	// The same name again: the base slug is taken, a suffix is added.
	second := e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody("c2-"+uuid.NewString()[:8]+"@example.com", name))
	require.Equal(t, 201, second.Code, "%s", second.Raw)
	slug := second.data()["organization"].(map[string]any)["slug"].(string)
	require.True(t, strings.HasPrefix(slug, base+"-"), slug)

	// Concurrent sign-ups with one name all succeed, with distinct slugs
	// (the insert races on the unique index, never a 409 or 500).
	const n = 6
	var wg sync.WaitGroup
	codes := make([]int, n)
	slugs := make([]string, n)
	other := "Race " + uuid.NewString()[:8]
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody("r"+uuid.NewString()[:10]+"@example.com", other))
			codes[i] = res.Code
			if res.Code == 201 {
				slugs[i] = res.data()["organization"].(map[string]any)["slug"].(string)
			}
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		require.Equal(t, 201, codes[i])
		require.False(t, seen[slugs[i]], "duplicate slug %s", slugs[i])
		seen[slugs[i]] = true
	}
}

// A failure after the user row is written leaves nothing behind: user,
// organization and membership are one transaction.
func TestSignupFailureMidwayLeavesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	pool := e.deps.Store.Pool
	_, err := pool.Exec(ctx, `
CREATE FUNCTION fail_boom_membership() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM organizations WHERE id = NEW.organization_id AND name = 'Boom Inc') THEN
    RAISE EXCEPTION 'forced failure';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER fail_boom_membership BEFORE INSERT ON memberships
  FOR EACH ROW EXECUTE FUNCTION fail_boom_membership();`)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, _ = pool.Exec(t.Context(), `DROP TRIGGER IF EXISTS fail_boom_membership ON memberships; DROP FUNCTION IF EXISTS fail_boom_membership()`)
	})

	mail := "boom-" + uuid.NewString()[:8] + "@example.com"
	res := e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody(mail, "Boom Inc"))
	requireError(t, res, 500, "internal")
	var users, orgs int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM users WHERE email = $1`, mail).Scan(&users))
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM organizations WHERE name = 'Boom Inc'`).Scan(&orgs))
	require.Zero(t, users)
	require.Zero(t, orgs)

	// The e-mail is still free: the same sign-up with another name works.
	res = e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody(mail, "Fine Inc"))
	require.Equal(t, 201, res.Code, "%s", res.Raw)
	requireError(t, e.do(caller{}, "POST", "/api/v1/auth/signup", signupBody(mail, "Fine Inc")), 409, "conflict")
}
