package worker

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/fos-dev/fos/store"
)

// Search attributes of the runs that work for one bridge (BridgeTask,
// ScheduledBridgeTask, InboundWebhook, StorefrontAOAuth, dispatch): an
// operator lists a bridge's runs, or every grab-orders, in the Temporal UI
// (BridgeId = "…", TaskName = "grab-orders").
var (
	BridgeIDKey = temporal.NewSearchAttributeKeyKeyword("BridgeId")
	TaskNameKey = temporal.NewSearchAttributeKeyKeyword("TaskName")
)

// Start is one workflow start as an operator sees it in the Temporal UI:
// its Options are the one place start options are built (each start site
// is one call).
//
// Summary and Details are Temporal's static summary and details (the
// "Summary" column and the run's header): what runs and for which
// resource, by name, never a secret or a customer's personal data (no
// address, no e-mail, no credential). They travel through the payload
// codec like every payload (the UI decodes them with the codec endpoint).
type Start struct {
	ID             string
	TaskQueue      string
	OrganizationID string
	// OrganizationName names the organization in the memo, the summary
	// and the details (OrganizationNames finds it).
	OrganizationName string
	// Summary is one line: what runs, for which resource (names first,
	// ids after). Empty: derived from the workflow id.
	Summary string
	// Details are further lines (markdown); the memo's entries are
	// appended.
	Details string
	// Memo holds the resources' ids and names (nothing secret).
	Memo map[string]any
	// BridgeID and TaskName set the BridgeId and TaskName search
	// attributes when not empty.
	BridgeID string
	TaskName string
}

// Options are the start options: the stable workflow id, the
// OrganizationId search attribute (BridgeId, TaskName where they apply),
// the memo, the static summary and details. A start while a run with the
// same id is going returns that run (USE_EXISTING); a closed run's id may
// be started again.
func (s Start) Options() client.StartWorkflowOptions {
	updates := []temporal.SearchAttributeUpdate{OrganizationIDKey.ValueSet(s.OrganizationID)}
	if s.BridgeID != "" {
		updates = append(updates, BridgeIDKey.ValueSet(s.BridgeID))
	}
	if s.TaskName != "" {
		updates = append(updates, TaskNameKey.ValueSet(s.TaskName))
	}
	memo := map[string]any{}
	for k, v := range s.Memo {
		memo[k] = v
	}
	if s.OrganizationName != "" {
		memo["organization"] = s.OrganizationName
	}
	if s.OrganizationID != "" && s.OrganizationID != "system" {
		memo["organizationId"] = s.OrganizationID
	}
	if len(memo) == 0 {
		memo = nil
	}
	summary := s.Summary
	if summary == "" {
		summary = DefaultSummary(s.ID)
	}
	if s.OrganizationName != "" && !strings.Contains(summary, s.OrganizationName) {
		summary += " — " + s.OrganizationName
	}
	return client.StartWorkflowOptions{
		ID:                       s.ID,
		TaskQueue:                s.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
		TypedSearchAttributes:    temporal.NewSearchAttributes(updates...),
		Memo:                     memo,
		StaticSummary:            oneLine(summary),
		StaticDetails:            details(s.Details, memo),
	}
}

// StartOptions are Start{...}.Options() for the start sites that know only
// the id, the queue, the organization and a memo of ids (the summary is
// derived from the id; rules.TemporalDispatch takes it as a function).
func StartOptions(id, taskQueue, orgID string, memo map[string]any) client.StartWorkflowOptions {
	return Start{ID: id, TaskQueue: taskQueue, OrganizationID: orgID, Memo: memo}.Options()
}

// WithOrganizationName adds the organization's name to options built by
// Start (memo, summary, details), for the start sites that look it up
// centrally.
func WithOrganizationName(opts client.StartWorkflowOptions, name string) client.StartWorkflowOptions {
	if name == "" {
		return opts
	}
	memo := map[string]any{}
	for k, v := range opts.Memo {
		memo[k] = v
	}
	if _, ok := memo["organization"]; ok {
		return opts
	}
	memo["organization"] = name
	opts.Memo = memo
	if !strings.Contains(opts.StaticSummary, name) {
		opts.StaticSummary = oneLine(opts.StaticSummary + " — " + name)
	}
	opts.StaticDetails = details("", memo)
	return opts
}

// workflowLabels name the workflow id prefixes for the default summary.
var workflowLabels = map[string]string{
	"bridge-task":           "Bridge task",
	"scheduled-bridge-task": "Scheduled bridge task",
	"order-resync":          "Resync of order",
	"inbound-webhook":       "Inbound webhook event",
	"carrier-registration":  "Carrier account registration",
	"rate-comparison":       "Rate comparison",
	"operation":             "Bulk operation",
	"operation-undo":        "Undo of bulk operation",
	"webhook-delivery":      "Webhook delivery",
	"embed-outbox":          "Embed outbox dispatcher",
	"embed-oauth":           "storefront_a OAuth exchange for bridge",
	"shipment-label":        "Label purchase for shipment",
	"shipment-action":       "Shipment action",
	"pickup-booking":        "Pickup booking",
	"pickup-cancel":         "Pickup cancellation",
	"dispatch":              "Dispatch of assignment",
	"dispatch-batch":        "Dispatch batch to bridge",
	"agent-conversation":    "Agent conversation",
	"tracking-poller":       "Tracking poller",
	"maintenance":           "Maintenance",
}

// DefaultSummary is the summary of a start that gives none: the workflow's
// kind and the id of its resource ("Resync of order 3f…").
func DefaultSummary(id string) string {
	prefix, rest, _ := strings.Cut(id, "/")
	label, ok := workflowLabels[prefix]
	if !ok {
		label = strings.ReplaceAll(prefix, "-", " ")
		if label != "" {
			label = strings.ToUpper(label[:1]) + label[1:]
		}
	}
	if rest == "" {
		return label
	}
	return label + " " + rest
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	const max = 200
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}

// details are the static details: the given lines, then the memo's
// entries, one a line, sorted.
func details(text string, memo map[string]any) string {
	var b strings.Builder
	if text != "" {
		b.WriteString(strings.TrimSpace(text))
		b.WriteString("\n\n")
	}
	keys := make([]string, 0, len(memo))
	for k := range memo {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "- %s: %v\n", k, memo[k])
	}
	return strings.TrimSpace(b.String())
}

// OrganizationNames finds organizations' names for the start options,
// caching them for a few minutes (a start never waits on a slow lookup:
// it gives up after a short while and starts without the name).
type OrganizationNames struct {
	DB store.DBTX

	mu    sync.Mutex
	cache map[uuid.UUID]orgName
}

type orgName struct {
	name string
	at   time.Time
}

const orgNameTTL = 5 * time.Minute

// Name is the organization's name ("" when unknown).
func (n *OrganizationNames) Name(ctx context.Context, orgID string) string {
	if n == nil || n.DB == nil {
		return ""
	}
	id, err := uuid.Parse(orgID)
	if err != nil {
		return ""
	}
	n.mu.Lock()
	if c, ok := n.cache[id]; ok && time.Since(c.at) < orgNameTTL {
		n.mu.Unlock()
		return c.name
	}
	n.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	org, err := store.OrganizationByID(lctx, n.DB, id)
	if err != nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cache == nil || len(n.cache) > 10000 {
		n.cache = map[uuid.UUID]orgName{}
	}
	n.cache[id] = orgName{name: org.Name, at: time.Now()}
	return org.Name
}
