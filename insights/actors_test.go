package insights_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/insights"
	"github.com/fos-dev/fos/insights/insightstest"
	"github.com/fos-dev/fos/store"
)

// acknowledgedBy is who the insight's last acknowledgement records.
func (e *env) acknowledgedBy(id uuid.UUID) map[string]any {
	e.t.Helper()
	row, err := store.InsightByID(context.Background(), e.st.Pool, e.seed.Org, id)
	require.NoError(e.t, err)
	var by map[string]any
	require.NoError(e.t, json.Unmarshal(row.AcknowledgedBy, &by))
	return by
}

// The insights are read by anyone with insights:read and generated and
// acknowledged with insights:write: the agent acting for a read-only API
// key reads but does not write; an operation, the system and the agent
// acting for a user write, and the acknowledgement records each as itself;
// an embed session reaches nothing.
func TestInsightsByActorKind(t *testing.T) {
	ops := fakeOperations{}
	e := newEnv(t, ops)
	opID := operationFixture(e, ops)
	e.seed.Bridge("error")
	ctx := context.Background()
	org := e.seed.Org
	key := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: org, Scoped: true, Scopes: []string{"insights:read"}}
	readAgent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: org, Name: "agent", Scoped: true, Scopes: key.Scopes, OnBehalfOf: &key}
	userAgent := domain.Actor{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: org, Name: "agent", OnBehalfOf: &e.actor}
	op := domain.Actor{Kind: domain.ActorOperation, ID: opID, OrganizationID: org, Name: "Black Friday"}
	session := domain.Actor{Kind: domain.ActorEmbed, ID: uuid.New(), OrganizationID: org, Scoped: true, Scopes: []string{"bridges:read", "bridges:write"}}

	res, err := e.svc.Generate(ctx, op, insights.GenerateInput{Types: []string{"alert"}})
	require.NoError(t, err)
	var in insights.Insight
	for _, i := range res.Insights {
		if i.Detector == "bridge_error" {
			in = i
		}
	}
	require.NotEqual(t, uuid.Nil, in.ID, "%+v", res.Insights)

	// Reads: the agent for a read-only key may.
	list, total, err := e.svc.List(ctx, readAgent, insights.ListInput{})
	require.NoError(t, err)
	require.Equal(t, len(res.Insights), total)
	require.NotEmpty(t, list)
	_, err = e.svc.Ask(ctx, readAgent, insights.AskInput{Query: "how many orders this week"})
	require.NoError(t, err)
	_, err = e.svc.CarrierPerformance(ctx, readAgent, 30)
	require.NoError(t, err)
	oi, err := e.svc.OperationInsights(ctx, readAgent, opID)
	require.NoError(t, err)
	require.Equal(t, "Black Friday", oi.OperationName)

	// Writes: refused to it (insufficient_scope) and to the key; nothing
	// changes.
	for _, a := range []domain.Actor{readAgent, key} {
		_, err = e.svc.Acknowledge(ctx, a, insights.AcknowledgeInput{InsightID: in.ID})
		var de *domain.Error
		require.ErrorAs(t, err, &de, "%s", a.Kind)
		require.Equal(t, domain.KindForbidden, de.Kind)
		require.Equal(t, "insufficient_scope", de.Code)
		_, err = e.svc.Generate(ctx, a, insights.GenerateInput{})
		require.ErrorIs(t, err, domain.ErrForbidden)
	}
	require.Equal(t, 0, e.count(`SELECT count(*) FROM insights WHERE id = $1 AND acknowledged_at IS NOT NULL`, in.ID))

	// An embed session has no insights scope.
	_, _, err = e.svc.List(ctx, session, insights.ListInput{})
	require.ErrorIs(t, err, domain.ErrForbidden)
	_, err = e.svc.Ask(ctx, session, insights.AskInput{Query: "how many orders"})
	require.ErrorIs(t, err, domain.ErrForbidden)
	_, err = e.svc.OperationInsights(ctx, session, opID)
	require.ErrorIs(t, err, domain.ErrForbidden)

	// Each writer is recorded as itself.
	_, err = e.svc.Acknowledge(ctx, userAgent, insights.AcknowledgeInput{InsightID: in.ID})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"type": "agent", "id": userAgent.ID.String(), "name": "agent"}, e.acknowledgedBy(in.ID))
	_, err = e.svc.Acknowledge(ctx, op, insights.AcknowledgeInput{InsightID: in.ID})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"type": "operation", "id": opID.String(), "name": "Black Friday"}, e.acknowledgedBy(in.ID))
	_, err = e.svc.Acknowledge(ctx, domain.System(org), insights.AcknowledgeInput{InsightID: in.ID, Action: "resolve"})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"type": "system", "id": nil, "name": "system"}, e.acknowledgedBy(in.ID))
	_, err = e.svc.Acknowledge(ctx, e.actor, insights.AcknowledgeInput{InsightID: in.ID, Action: "dismiss"})
	require.ErrorIs(t, err, domain.ErrConflict, "resolved stays resolved, whoever asks")
	require.Equal(t, "system", e.acknowledgedBy(in.ID)["type"])
}

// Another organization's actors, of every kind, find none of the
// organization's insights or operations and see none of its data.
func TestInsightsOfAnotherOrganizationAreNotFound(t *testing.T) {
	ops := fakeOperations{}
	e := newEnv(t, ops)
	opID := operationFixture(e, ops)
	e.seed.Bridge("error")
	ctx := context.Background()
	res, err := e.svc.Generate(ctx, domain.System(e.seed.Org), insights.GenerateInput{})
	require.NoError(t, err)
	require.NotEmpty(t, res.Insights)

	otherOrg := insightstest.New(t, e.st).Org
	for _, other := range []domain.Actor{
		{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: otherOrg, Role: "owner"},
		{Kind: domain.ActorAgent, ID: uuid.New(), OrganizationID: otherOrg},
		{Kind: domain.ActorOperation, ID: opID, OrganizationID: otherOrg},
		domain.System(otherOrg),
	} {
		_, err = e.svc.Acknowledge(ctx, other, insights.AcknowledgeInput{InsightID: res.Insights[0].ID})
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		_, err = e.svc.OperationInsights(ctx, other, opID)
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		_, err = e.svc.Generate(ctx, other, insights.GenerateInput{OperationID: &opID})
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		_, err = e.svc.Ask(ctx, other, insights.AskInput{Query: "how many orders", Context: insights.AskContext{OperationID: &opID}})
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		list, total, err := e.svc.List(ctx, other, insights.ListInput{})
		require.NoError(t, err)
		require.Zero(t, total, "%s", other.Kind)
		require.Empty(t, list)
		perf, err := e.svc.CarrierPerformance(ctx, other, 30)
		require.NoError(t, err)
		require.Empty(t, perf, "%s", other.Kind)
	}
	require.Equal(t, 0, e.count(`SELECT count(*) FROM insights WHERE organization_id = $1`, otherOrg))
	require.Equal(t, 0, e.count(`SELECT count(*) FROM insights WHERE organization_id = $1 AND acknowledged_at IS NOT NULL`, e.seed.Org))
}
