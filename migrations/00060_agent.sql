-- +goose Up
-- The AI agent (spec Part 3, CONTRACT 5, 9 and 11). A conversation is run
-- by the AgentConversation workflow (agent-conversation/<id>); these rows
-- are the system of record: the workflow holds ids only and writes every
-- step here through activities.
--
-- turn_status is the chat turn's progress (idle, processing,
-- awaiting_approval, completed, failed), turn_tool the tool being run,
-- turn_started_at when the turn began (the reconciler settles a turn
-- left processing). actor is the domain.Actor who chatted (its kind, id,
-- scopes): tools run as the agent on that caller's behalf, never with an
-- organization or scope that the model chose.
CREATE TABLE agent_conversations (
    id                uuid PRIMARY KEY,
    organization_id   uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    title             text NOT NULL,
    status            text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'archived')),
    message_count     integer NOT NULL DEFAULT 0,
    actor             jsonb NOT NULL,
    context           jsonb,
    standing_order_id uuid,
    turn_status       text NOT NULL DEFAULT 'idle'
                      CHECK (turn_status IN ('idle', 'processing', 'awaiting_approval', 'completed', 'failed')),
    turn_tool         text,
    turn_error        text,
    turn_started_at   timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now()
);
-- The list: active conversations, most recently updated first.
CREATE INDEX agent_conversations_list_idx ON agent_conversations (organization_id, updated_at DESC, id DESC) WHERE status = 'active';
-- The reconciler: turns left processing.
CREATE INDEX agent_conversations_turn_idx ON agent_conversations (turn_started_at) WHERE turn_status = 'processing';

-- A message; seq orders a conversation. step_key names the step that wrote
-- it (the turn's user message, a model step, an outcome), so an activity
-- that runs again finds its message instead of writing a second.
CREATE TABLE agent_messages (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL,
    conversation_id uuid NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
    seq             integer NOT NULL,
    role            text NOT NULL CHECK (role IN ('user', 'assistant')),
    content         text NOT NULL DEFAULT '',
    input_tokens    integer,
    output_tokens   integer,
    step_key        text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (conversation_id, seq),
    UNIQUE (conversation_id, step_key)
);

-- A tool call the model made, with its result as given to the model.
-- result_content is null while the tool has not answered yet.
CREATE TABLE agent_tool_calls (
    id                uuid PRIMARY KEY,
    organization_id   uuid NOT NULL,
    conversation_id   uuid NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
    message_id        uuid NOT NULL REFERENCES agent_messages (id) ON DELETE CASCADE,
    position          integer NOT NULL,
    tool_use_id       text NOT NULL,
    tool_name         text NOT NULL,
    tool_input        jsonb NOT NULL DEFAULT '{}',
    result_content    text,
    is_error          boolean NOT NULL DEFAULT false,
    duration_ms       integer,
    resolved_via      text CHECK (resolved_via IN ('auto', 'approved', 'rejected', 'expired')),
    pending_action_id uuid,
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (message_id, position)
);
CREATE INDEX agent_tool_calls_conversation_idx ON agent_tool_calls (conversation_id, created_at);

-- A write waiting for a person. The database settles the race between
-- approve and expiry (one UPDATE ... WHERE status = 'pending'); the
-- execution is claimed once (execution_started_at) so an approved action
-- runs at most once, and result/executed_at record it.
CREATE TABLE agent_pending_actions (
    id                   uuid PRIMARY KEY,
    organization_id      uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    conversation_id      uuid NOT NULL REFERENCES agent_conversations (id) ON DELETE CASCADE,
    tool_call_id         uuid NOT NULL UNIQUE REFERENCES agent_tool_calls (id) ON DELETE CASCADE,
    tool_name            text NOT NULL,
    tool_input           jsonb NOT NULL DEFAULT '{}',
    description          text NOT NULL,
    status               text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'rejected', 'expired')),
    affected_item_count  integer NOT NULL DEFAULT 0,
    idempotency_key      text NOT NULL UNIQUE,
    expires_at           timestamptz NOT NULL,
    note                 text,
    resolved_by          jsonb,
    resolved_at          timestamptz,
    execution_started_at timestamptz,
    executed_at          timestamptz,
    result               jsonb,
    result_is_error      boolean NOT NULL DEFAULT false,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_pending_actions_list_idx ON agent_pending_actions (organization_id, status, created_at DESC);
CREATE INDEX agent_pending_actions_conversation_idx ON agent_pending_actions (conversation_id) WHERE status = 'pending';
CREATE INDEX agent_pending_actions_expiry_idx ON agent_pending_actions (expires_at) WHERE status = 'pending';

CREATE TABLE agent_tool_permissions (
    id                        uuid PRIMARY KEY,
    organization_id           uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    tool_name                 text NOT NULL,
    approval_required         boolean NOT NULL DEFAULT true,
    max_auto_items            integer NOT NULL DEFAULT 10 CHECK (max_auto_items >= 0),
    max_daily_auto_executions integer CHECK (max_daily_auto_executions >= 0),
    max_order_value           numeric(14, 2) CHECK (max_order_value >= 0),
    risk_threshold            numeric(4, 3) NOT NULL DEFAULT 0.5 CHECK (risk_threshold BETWEEN 0 AND 1),
    budget_cap_daily          numeric(14, 2) CHECK (budget_cap_daily >= 0),
    updated_by                text,
    created_at                timestamptz NOT NULL DEFAULT now(),
    updated_at                timestamptz NOT NULL DEFAULT now(),
    UNIQUE (organization_id, tool_name)
);

-- Auto runs of a tool per UTC day and the label money they spent, counted
-- in the same transaction that decides an auto-approval.
CREATE TABLE agent_auto_usage (
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    tool_name       text NOT NULL,
    day             date NOT NULL,
    executions      integer NOT NULL DEFAULT 0,
    spent           numeric(14, 2) NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, tool_name, day)
);

CREATE TABLE agent_memory (
    id              uuid PRIMARY KEY,
    organization_id uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    category        text NOT NULL,
    scope_type      text NOT NULL DEFAULT 'organization' CHECK (scope_type IN ('organization', 'user', 'bridge')),
    scope_id        uuid,
    content         text NOT NULL,
    source          text,
    confidence      numeric(4, 3),
    expires_at      timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_memory_org_idx ON agent_memory (organization_id, created_at DESC);

CREATE TABLE agent_standing_orders (
    id               uuid PRIMARY KEY,
    organization_id  uuid NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    name             text NOT NULL,
    description      text,
    natural_language text NOT NULL,
    trigger_type     text NOT NULL DEFAULT 'manual'
                     CHECK (trigger_type IN ('manual', 'on_order_created', 'on_order_updated', 'on_shipment_created', 'on_tracking_exception')),
    conditions       jsonb NOT NULL DEFAULT '[]',
    actions          jsonb NOT NULL DEFAULT '[]',
    priority         integer NOT NULL DEFAULT 0,
    is_active        boolean NOT NULL DEFAULT true,
    created_by       jsonb,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX agent_standing_orders_org_idx ON agent_standing_orders (organization_id, priority DESC, created_at);
CREATE INDEX agent_standing_orders_trigger_idx ON agent_standing_orders (organization_id, trigger_type) WHERE is_active;

-- One run of a standing order per event: the conversation it started.
CREATE TABLE agent_standing_order_runs (
    standing_order_id uuid NOT NULL REFERENCES agent_standing_orders (id) ON DELETE CASCADE,
    event_key         text NOT NULL,
    organization_id   uuid NOT NULL,
    conversation_id   uuid NOT NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (standing_order_id, event_key)
);

-- +goose Down
DROP TABLE agent_standing_order_runs;
DROP TABLE agent_standing_orders;
DROP TABLE agent_memory;
DROP TABLE agent_auto_usage;
DROP TABLE agent_tool_permissions;
DROP TABLE agent_pending_actions;
DROP TABLE agent_tool_calls;
DROP TABLE agent_messages;
DROP TABLE agent_conversations;
