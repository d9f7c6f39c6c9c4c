package agent_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/agent"
	"github.com/fos-dev/fos/domain"
	"github.com/fos-dev/fos/store"
	"github.com/fos-dev/fos/workflows"
)

// decisionRuns is recordingRuns that also keeps the decisions the Service
// sends to the conversations' workflows.
type decisionRuns struct {
	recordingRuns
	decisions []agent.Decision
}

func (r *decisionRuns) Decide(ctx context.Context, orgID, convID uuid.UUID, d agent.Decision) (agent.DecisionOutcome, error) {
	r.decisions = append(r.decisions, d)
	return agent.DecisionOutcome{Status: agent.ActionApproved, ActionID: d.ActionID}, nil
}

// keys are the fixture organization's API keys: agent:read only, a
// writer (agent and orders), an admin (agent:admin too).
func (f *fixture) keys() (reader, writer, admin domain.Actor) {
	key := func(scopes ...string) domain.Actor {
		return domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.org, Scoped: true, Scopes: scopes}
	}
	return key("agent:read"), key("agent:read", "agent:write", "orders:read", "orders:write"),
		key("agent:read", "agent:write", "agent:admin", "orders:read", "orders:write")
}

// agentFor is the agent acting for caller in conversation conv, as the
// agent's tools are called.
func agentFor(caller domain.Actor, conv uuid.UUID) domain.Actor {
	return domain.Actor{Kind: domain.ActorAgent, ID: conv, OrganizationID: caller.OrganizationID, Name: "agent",
		Scoped: caller.Scoped, Scopes: caller.Scopes, OnBehalfOf: &caller}
}

// storedActor is the actor a JSON column records.
func storedActor(t *testing.T, raw json.RawMessage) domain.Actor {
	t.Helper()
	var a domain.Actor
	require.NoError(t, json.Unmarshal(raw, &a), "%s", raw)
	return a
}

func requireScopeRefused(t *testing.T, err error, who string) {
	t.Helper()
	var de *domain.Error
	require.ErrorAs(t, err, &de, who)
	require.Equal(t, domain.KindForbidden, de.Kind, who)
	require.Equal(t, "insufficient_scope", de.Code, who)
}

// The agent's operations as each kind of caller reaches them: scopes
// bound API keys and the agent acting for one (agent:read, agent:write,
// agent:admin), an embed session reaches nothing, the conversation and
// the standing order record who started them (the agent as itself, with
// the key it acts for), and another organization finds none of the ids.
func TestAgentServiceByActorKind(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &decisionRuns{}
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: f.svc.Tools(), Runs: runs})
	ctx := context.Background()
	reader, writer, admin := f.keys()
	session := domain.Actor{Kind: domain.ActorEmbed, ID: uuid.New(), OrganizationID: f.org, Scoped: true, Scopes: []string{"bridges:read", "bridges:write"}}

	// Chat: agent:write. The conversation records the caller.
	_, err := svc.Chat(ctx, reader, agent.ChatInput{Message: "hello"})
	requireScopeRefused(t, err, "reader")
	_, err = svc.Chat(ctx, session, agent.ChatInput{Message: "hello"})
	requireScopeRefused(t, err, "embed session")
	require.Empty(t, runs.turns, "a refused chat runs nothing")
	res, err := svc.Chat(ctx, writer, agent.ChatInput{Message: "list pending orders"})
	require.NoError(t, err)
	require.Equal(t, []uuid.UUID{res.ConversationID}, runs.convs)
	conv, err := svc.GetConversation(ctx, reader, res.ConversationID)
	require.NoError(t, err)
	by := storedActor(t, conv.Conversation.Actor)
	require.Equal(t, domain.ActorAPIKey, by.Kind)
	require.Equal(t, writer.ID, by.ID)
	require.Equal(t, writer.Scopes, by.Scopes)
	mine, err := svc.Chat(ctx, f.caller, agent.ChatInput{Message: "list pending orders"})
	require.NoError(t, err)
	conv, err = svc.GetConversation(ctx, f.caller, mine.ConversationID)
	require.NoError(t, err)
	by = storedActor(t, conv.Conversation.Actor)
	require.Equal(t, domain.ActorUser, by.Kind)
	require.Equal(t, f.caller.ID, by.ID)
	require.Equal(t, "owner", by.Role)

	// The agent acting for the writer has the writer's scopes: it reads
	// and writes but does not administer.
	ag := agentFor(writer, res.ConversationID)
	_, err = svc.GetConversation(ctx, ag, res.ConversationID)
	require.NoError(t, err)
	_, err = svc.ListPendingActions(ctx, ag, "all")
	require.NoError(t, err)
	_, err = svc.Decide(ctx, ag, uuid.New(), true, "")
	requireScopeRefused(t, err, "agent for writer")
	yes := true
	_, err = svc.UpdateToolPermissions(ctx, ag, []agent.PermissionInput{{ToolName: "add_order_note", ApprovalRequired: &yes}})
	requireScopeRefused(t, err, "agent for writer")
	require.ErrorIs(t, svc.DeleteMemory(ctx, writer, uuid.New()), domain.ErrForbidden)
	require.Empty(t, runs.decisions)

	name, text, trig := "Note big orders", "add a note to big orders", "on_order_created"
	so, err := svc.CreateStandingOrder(ctx, ag, agent.StandingOrderInput{Name: &name, NaturalLanguage: &text, TriggerType: &trig})
	require.NoError(t, err)
	created := storedActor(t, so.CreatedBy)
	require.Equal(t, domain.ActorAgent, created.Kind, "the agent is recorded as itself")
	require.Equal(t, res.ConversationID, created.ID)
	require.NotNil(t, created.OnBehalfOf)
	require.Equal(t, writer.ID, created.OnBehalfOf.ID, "with the key it acts for")
	_, err = svc.CreateStandingOrder(ctx, reader, agent.StandingOrderInput{Name: &name, NaturalLanguage: &text, TriggerType: &trig})
	requireScopeRefused(t, err, "reader")

	// The admin key sets a permission; it is recorded as the key.
	no := false
	perms, err := svc.UpdateToolPermissions(ctx, admin, []agent.PermissionInput{{ToolName: "add_order_note", ApprovalRequired: &no}})
	require.NoError(t, err)
	var note *agent.Permission
	for i := range perms {
		if perms[i].ToolName == "add_order_note" {
			note = &perms[i]
		}
	}
	require.NotNil(t, note)
	require.True(t, note.Stored)
	require.False(t, note.ApprovalRequired)
	require.Equal(t, "api_key:"+admin.ID.String(), *note.UpdatedBy)

	// Another organization: nothing of this one is found, whoever asks.
	otherOrg := uuid.New()
	f.insertOrg(otherOrg)
	for _, other := range []domain.Actor{
		{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: otherOrg, Role: "owner"},
		{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: otherOrg, Scoped: true, Scopes: admin.Scopes},
		agentFor(domain.Actor{Kind: domain.ActorUser, ID: uuid.New(), OrganizationID: otherOrg}, uuid.New()),
		domain.System(otherOrg),
	} {
		_, err = svc.GetConversation(ctx, other, res.ConversationID)
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		_, err = svc.Chat(ctx, other, agent.ChatInput{Message: "again", ConversationID: &res.ConversationID})
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		require.ErrorIs(t, svc.ArchiveConversation(ctx, other, res.ConversationID), domain.ErrNotFound, "%s", other.Kind)
		_, err = svc.UpdateStandingOrder(ctx, other, so.ID, agent.StandingOrderInput{Name: &name})
		require.ErrorIs(t, err, domain.ErrNotFound, "%s", other.Kind)
		require.ErrorIs(t, svc.DeleteStandingOrder(ctx, other, so.ID), domain.ErrNotFound, "%s", other.Kind)
		list, total, err := svc.ListConversations(ctx, other, 50, 0)
		require.NoError(t, err)
		require.Zero(t, total, "%s", other.Kind)
		require.Empty(t, list)
		orders, err := svc.ListStandingOrders(ctx, other)
		require.NoError(t, err)
		require.Empty(t, orders, "%s", other.Kind)
		perms, err := svc.ToolPermissions(ctx, other)
		require.NoError(t, err)
		for _, p := range perms {
			require.False(t, p.Stored, "%s sees %s's permission", other.Kind, p.ToolName)
		}
	}
	require.Len(t, runs.turns, 2, "no other organization's chat ran")

	// The system (the service itself, no scopes) archives; the list no
	// longer shows it.
	require.NoError(t, svc.ArchiveConversation(ctx, domain.System(f.org), res.ConversationID))
	list, _, err := svc.ListConversations(ctx, reader, 50, 0)
	require.NoError(t, err)
	for _, c := range list {
		require.NotEqual(t, res.ConversationID, c.ID)
	}
}

// approveNote has the agent, in a conversation of caller, propose a note
// on the fixture's order and approver approve it through svc (check runs
// first, with the pending action's id); the decision svc hands to the
// workflow is sent to it, as the Temporal adapter does. It answers the
// conversation, the action and the outcome.
func (f *fixture) approveNote(svc *agent.Service, runs *decisionRuns, caller, approver domain.Actor, check func(action uuid.UUID)) (uuid.UUID, uuid.UUID, agent.DecisionOutcome) {
	t := f.t
	raw, _ := json.Marshal(caller)
	c, err := store.InsertAgentConversation(context.Background(), f.st.Pool, store.AgentConversation{ID: uuid.New(), OrganizationID: f.org, Title: "t", Actor: raw})
	require.NoError(t, err)
	r := f.run(c.ID)
	u := r.chat(0, "add note call the customer to order "+f.order.String())
	var action uuid.UUID
	var approve *updateResult
	r.env.RegisterDelayedCallback(func() {
		list := f.actions(c.ID)
		require.Len(t, list, 1)
		action = list[0].ID
		if check != nil {
			check(action)
		}
		n := len(runs.decisions)
		_, err := svc.Decide(context.Background(), approver, action, true, "ok")
		require.NoError(t, err)
		require.Len(t, runs.decisions, n+1)
		approve = r.update(0, workflows.AgentDecideUpdate, runs.decisions[n])
	}, time.Minute)
	r.exec()
	require.NoError(t, r.env.GetWorkflowError())
	require.Equal(t, agent.StatusAwaitingApproval, status(t, u))
	require.True(t, approve.done)
	require.NoError(t, approve.err)
	var out agent.DecisionOutcome
	approve.into(&out)
	return c.ID, action, out
}

// noteActivities are the note activities of the fixture's order.
func (f *fixture) noteActivities() []store.OrderActivity {
	acts, err := store.OrderActivities(context.Background(), f.st.Pool, f.org, f.order)
	require.NoError(f.t, err)
	var notes []store.OrderActivity
	for _, act := range acts {
		if act.Type == "note" {
			notes = append(notes, act)
		}
	}
	return notes
}

// A write the agent proposed for an API key waits for approval: only an
// actor with agent:admin of the organization may decide it (the reader,
// the writer it ran for and the agent acting for it are refused, another
// organization does not find it); the decision carries the approver, the
// pending action records them, and the approved write runs as the agent
// for them, which the order's history records.
func TestApprovalRecordsTheApprover(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &decisionRuns{}
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: f.svc.Tools(), Runs: runs})
	ctx := context.Background()
	reader, writer, admin := f.keys()
	otherOrg := uuid.New()
	f.insertOrg(otherOrg)
	otherAdmin := admin
	otherAdmin.OrganizationID = otherOrg

	conv, action, out := f.approveNote(svc, runs, writer, admin, func(action uuid.UUID) {
		for who, a := range map[string]domain.Actor{"reader": reader, "writer": writer, "agent": agentFor(writer, uuid.New())} {
			_, err := svc.Decide(ctx, a, action, true, "")
			requireScopeRefused(t, err, who)
		}
		_, err := svc.Decide(ctx, otherAdmin, action, true, "")
		require.ErrorIs(t, err, domain.ErrNotFound)
		require.Empty(t, runs.decisions)
	})
	require.Len(t, runs.decisions, 1)
	require.Equal(t, admin.ID, runs.decisions[0].By.ID)
	require.Equal(t, domain.ActorAPIKey, runs.decisions[0].By.Kind)
	require.Equal(t, agent.ActionApproved, out.Status)
	require.False(t, out.IsError, "%s", out.Result)

	a, err := store.AgentPendingActionByID(ctx, f.st.Pool, f.org, action)
	require.NoError(t, err)
	resolver := storedActor(t, a.ResolvedBy)
	require.Equal(t, domain.ActorAPIKey, resolver.Kind)
	require.Equal(t, admin.ID, resolver.ID)

	notes := f.noteActivities()
	require.Len(t, notes, 1)
	require.Equal(t, "agent", notes[0].ActorType)
	require.Equal(t, conv.String(), *notes[0].ActorID, "the agent of this conversation")
}

// The approved write runs with the approver's scopes, not the proposer's:
// an approver who may administer the agent but not write orders gets the
// write refused, and nothing is written.
func TestApprovedWriteRunsWithTheApproversScopes(t *testing.T) {
	f := newFixture(t, agent.Config{})
	runs := &decisionRuns{}
	svc := agent.New(agent.Deps{Store: f.st, Provider: f.model, Tools: f.svc.Tools(), Runs: runs})
	_, writer, _ := f.keys()
	approver := domain.Actor{Kind: domain.ActorAPIKey, ID: uuid.New(), OrganizationID: f.org, Scoped: true, Scopes: []string{"agent:read", "agent:admin"}}
	_, _, out := f.approveNote(svc, runs, writer, approver, nil)
	require.Equal(t, agent.ActionApproved, out.Status)
	require.True(t, out.IsError, "%s", out.Result)
	require.Contains(t, string(out.Result), "orders:write")
	require.Empty(t, f.noteActivities())
}
