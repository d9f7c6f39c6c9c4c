package transforms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/platforms"
	"github.com/fos-dev/fos/sandbox"
	"github.com/fos-dev/fos/secrets"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/store/storetest"
	"github.com/fos-dev/fos/transforms"
)

// TestMain: the test binary is its own sandbox process, so the
// transformations run in the process pool as in the service.
func TestMain(m *testing.M) {
	sandbox.ServeIfChild()
	os.Setenv("FOS_SANDBOX_MEMORY_MB", "256")
	os.Exit(storetest.Run(m))
}

type fixture struct {
	t       *testing.T
	s       *store.Store
	org     uuid.UUID
	bridge  uuid.UUID
	bridge2 uuid.UUID
}

func newFixture(t *testing.T) *fixture {
	s := storetest.New(t)
	ctx := t.Context()
	u, err := store.CreateUser(ctx, s.Pool, store.User{ID: uuid.New(), Email: "t" + uuid.NewString()[:12] + "@example.com", PasswordHash: "x", FirstName: "T"})
	require.NoError(t, err)
	org, err := store.CreateOrganization(ctx, s, "Transforms "+u.Email, u.ID)
	require.NoError(t, err)
	box, err := secrets.NewBox(secrets.NewKey())
	require.NoError(t, err)
	mk := func() uuid.UUID {
		id := uuid.New()
		cfg, creds, err := store.SplitBridgeConfig(box, store.BridgeCredentialsAD(org.ID, id), platforms.TypeStorefrontA,
			map[string]any{"shopDomain": "a.example.com", "accessToken": "tok"})
		require.NoError(t, err)
		_, err = store.CreateBridge(ctx, s.Pool, store.Bridge{ID: id, OrganizationID: org.ID, Type: platforms.TypeStorefrontA, Name: "b", Config: cfg, Credentials: creds})
		require.NoError(t, err)
		return id
	}
	return &fixture{t: t, s: s, org: org.ID, bridge: mk(), bridge2: mk()}
}

func (f *fixture) add(name, trigger string, bridge *uuid.UUID, prio int, active bool, code string) store.Transformation {
	f.t.Helper()
	tr, err := store.CreateTransformation(f.t.Context(), f.s.Pool, store.Transformation{ID: uuid.New(), OrganizationID: f.org,
		Name: name, TriggerPoint: trigger, BridgeID: bridge, Code: code, IsActive: active, Priority: prio})
	require.NoError(f.t, err)
	return tr
}

func appendStep(step string) string {
	return `function transform(d) { d.steps = (d.steps || []).concat(["` + step + `"]); return d }`
}

func TestApplyOrderAndScope(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, nil)
	ctx := t.Context()

	f.add("global low", transforms.AfterSync, nil, 1, true, appendStep("global-low"))
	f.add("bridge high", transforms.AfterSync, &f.bridge, 900, true, appendStep("bridge-high"))
	f.add("global mid", transforms.AfterSync, nil, 50, true, appendStep("global-mid"))
	f.add("other bridge", transforms.AfterSync, &f.bridge2, 1000, true, appendStep("other"))
	f.add("inactive", transforms.AfterSync, nil, 999, false, appendStep("inactive"))
	f.add("before", transforms.BeforeSync, nil, 999, true, appendStep("before"))

	out, results, err := svc.Apply(ctx, f.org, &f.bridge, transforms.AfterSync, []byte(`{"id": 1}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"id": 1, "steps": ["bridge-high", "global-mid", "global-low"]}`, string(out))
	require.Len(t, results, 3)
	for _, r := range results {
		require.True(t, r.Success)
		require.GreaterOrEqual(t, r.DurationMS, 0.0)
	}
	require.Equal(t, "bridge high", results[0].Name)

	// No bridge: global ones only. Another organization: nothing.
	out, _, err = svc.Apply(ctx, f.org, nil, transforms.AfterSync, []byte(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"steps": ["global-mid", "global-low"]}`, string(out))
	out, results, err = svc.Apply(ctx, uuid.New(), &f.bridge, transforms.AfterSync, []byte(`{"a": 1}`))
	require.NoError(t, err)
	require.Empty(t, results)
	require.JSONEq(t, `{"a": 1}`, string(out))
}

func TestApplyFailureLeavesDataUntouched(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, sandbox.New(sandbox.Limits{Timeout: 100 * time.Millisecond}))
	ctx := t.Context()
	f.add("first", transforms.BeforeOperation, nil, 10, true, appendStep("first"))
	bad := f.add("broken", transforms.BeforeOperation, nil, 5, true, `function transform(d) { while (true) {} }`)
	f.add("never", transforms.BeforeOperation, nil, 1, true, appendStep("never"))

	in := []byte(`{"n": 1}`)
	out, results, err := svc.Apply(ctx, f.org, &f.bridge, transforms.BeforeOperation, in)
	require.NoError(t, err)
	require.JSONEq(t, `{"n": 1}`, string(out))
	require.Len(t, results, 2)
	require.True(t, results[0].Success)
	failed := transforms.Failed(results)
	require.NotNil(t, failed)
	require.Equal(t, bad.ID, failed.TransformationID)
	require.Contains(t, failed.Error, "deadline")

	// ApplyValue with Go values: a failure gives back the input.
	type order struct {
		N     int      `json:"n"`
		Steps []string `json:"steps"`
	}
	var got order
	results, err = transforms.ApplyValue(ctx, svc, f.org, &f.bridge, transforms.BeforeOperation, order{N: 2}, &got)
	require.NoError(t, err)
	require.Equal(t, order{N: 2}, got)
	require.NotNil(t, transforms.Failed(results))

	// A result that does not fit the caller's type is a failure too.
	f.add("shape", transforms.AfterOperation, nil, 1, true, `function transform(d) { d.n = "not a number" }`)
	results, err = transforms.ApplyValue(ctx, svc, f.org, nil, transforms.AfterOperation, order{N: 3}, &got)
	require.NoError(t, err)
	require.Equal(t, order{N: 3}, got)
	require.Contains(t, transforms.Failed(results).Error, "shape")
}

func TestApplyCanceledContext(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, nil)
	f.add("loop", transforms.AfterSync, nil, 1, true, `function transform(d) { while (true) {} }`)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	out, _, err := svc.Apply(ctx, f.org, nil, transforms.AfterSync, []byte(`{"a": 1}`))
	require.Error(t, err)
	require.JSONEq(t, `{"a": 1}`, string(out))
}

func TestNoop(t *testing.T) {
	var tr transforms.Transformer = transforms.Noop{}
	out, res, err := tr.Apply(context.Background(), uuid.New(), nil, transforms.AfterSync, json.RawMessage(`{"x":1}`))
	require.NoError(t, err)
	require.Nil(t, res)
	require.Equal(t, `{"x":1}`, string(out))
}

func TestLoadChainOnceAppliesLikeApply(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, nil)
	ctx := t.Context()
	f.add("global", transforms.BeforeSync, nil, 1, true, appendStep("global"))
	f.add("bridge", transforms.BeforeSync, &f.bridge, 2, true, appendStep("bridge"))

	chain, err := svc.Load(ctx, f.org, &f.bridge, transforms.BeforeSync)
	require.NoError(t, err)
	require.Equal(t, 2, chain.Len())
	// Loaded once: a transformation added later is not in it.
	f.add("later", transforms.BeforeSync, nil, 3, true, appendStep("later"))
	out, results, err := chain.Apply(ctx, []byte(`{}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"steps": ["bridge", "global"]}`, string(out))
	require.Len(t, results, 2)

	var got struct {
		Steps []string `json:"steps"`
	}
	_, err = chain.ApplyValue(ctx, map[string]any{"steps": []string{"in"}}, &got)
	require.NoError(t, err)
	require.Equal(t, []string{"in", "bridge", "global"}, got.Steps)

	// Nothing to run: the empty chain, the Noop one and a nil one give the data back.
	for _, c := range []*transforms.Chain{nil, {}} {
		require.True(t, c.Empty())
		out, res, err := c.Apply(ctx, []byte(`{"a":1}`))
		require.NoError(t, err)
		require.Nil(t, res)
		require.Equal(t, `{"a":1}`, string(out))
	}
	empty, err := transforms.Noop{}.Load(ctx, f.org, nil, transforms.AfterSync)
	require.NoError(t, err)
	require.True(t, empty.Empty())
	none, err := svc.Load(ctx, f.org, &f.bridge, transforms.AfterOperation)
	require.NoError(t, err)
	require.True(t, none.Empty())
}

// LoadAll reads every bridge's transformations of a trigger once; For
// gives each bridge the chain Load gives it.
func TestLoadAllChainSetPerBridge(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, nil)
	ctx := t.Context()
	none, err := svc.LoadAll(ctx, f.org, transforms.BeforeOperation)
	require.NoError(t, err)
	require.True(t, none.Empty())
	require.True(t, none.For(&f.bridge).Empty())

	f.add("global", transforms.BeforeOperation, nil, 1, true, appendStep("global"))
	f.add("bridge", transforms.BeforeOperation, &f.bridge, 2, true, appendStep("bridge"))
	f.add("inactive", transforms.BeforeOperation, nil, 3, false, appendStep("inactive"))
	f.add("other trigger", transforms.AfterOperation, nil, 4, true, appendStep("after"))
	set, err := svc.LoadAll(ctx, f.org, transforms.BeforeOperation)
	require.NoError(t, err)
	require.False(t, set.Empty())
	other := uuid.New()
	for _, bridge := range []*uuid.UUID{&f.bridge, &other, nil} {
		want, err := svc.Load(ctx, f.org, bridge, transforms.BeforeOperation)
		require.NoError(t, err)
		chain := set.For(bridge)
		require.Equal(t, want.Len(), chain.Len())
		gotOut, _, err := chain.Apply(ctx, []byte(`{}`))
		require.NoError(t, err)
		wantOut, _, err := want.Apply(ctx, []byte(`{}`))
		require.NoError(t, err)
		require.JSONEq(t, string(wantOut), string(gotOut))
	}
	require.Equal(t, 2, set.For(&f.bridge).Len())
	require.Equal(t, 1, set.For(nil).Len())
}

// A page of records goes through the chain in one request per
// transformation: results in order, a record that fails stays untouched
// and stops there, the others go on through the rest of the chain.
func TestApplyBatch(t *testing.T) {
	f := newFixture(t)
	svc := transforms.New(f.s.Pool, sandbox.New(sandbox.Limits{Timeout: 300 * time.Millisecond}))
	require.True(t, svc.Sandbox.Isolated(), "the tests run transformations in sandbox processes")
	ctx := t.Context()
	f.add("first", transforms.BeforeSync, nil, 10, true, `function transform(d) { if (d.n === 3) for (;;) {}; if (d.n === 5) throw new Error("five"); d.steps = ["first"]; return d }`)
	f.add("second", transforms.BeforeSync, nil, 5, true, appendStep("second"))
	chain, err := svc.Load(ctx, f.org, &f.bridge, transforms.BeforeSync)
	require.NoError(t, err)
	var in [][]byte
	for i := range 8 {
		in = append(in, []byte(fmt.Sprintf(`{"n": %d}`, i)))
	}
	outs, results, err := chain.ApplyBatch(ctx, in)
	require.NoError(t, err)
	require.Len(t, outs, 8)
	for i := range 8 {
		switch i {
		case 3, 5:
			require.Equal(t, string(in[i]), string(outs[i]))
			require.Len(t, results[i], 1)
			require.Contains(t, transforms.Failed(results[i]).Error, map[int]string{3: "deadline", 5: "five"}[i])
		default:
			require.JSONEq(t, fmt.Sprintf(`{"n": %d, "steps": ["first", "second"]}`, i), string(outs[i]))
			require.Len(t, results[i], 2)
			require.Nil(t, transforms.Failed(results[i]))
		}
	}
	// Nothing to run: the records come back as they are.
	outs, results, err = (*transforms.Chain)(nil).ApplyBatch(ctx, in)
	require.NoError(t, err)
	require.Equal(t, in, outs)
	require.Len(t, results, 8)
}
