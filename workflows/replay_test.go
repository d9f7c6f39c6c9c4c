package workflows

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/fos-dev/fos/payloadcodec"
	"github.com/fos-dev/fos/payloadcodec/codectest"
)

// newReplayer is a replayer that decodes the recorded histories: their
// payloads are encrypted with the tests' fixed payload key, as every
// client of the service encrypts them (see payloadcodec).
func newReplayer(t *testing.T) worker.WorkflowReplayer {
	t.Helper()
	r, err := worker.NewWorkflowReplayerWithOptions(worker.WorkflowReplayerOptions{
		DataConverter:    codectest.DataConverter(),
		FailureConverter: codectest.FailureConverter(),
	})
	require.NoError(t, err)
	return r
}

// TestOrderResyncReplay replays recorded histories (a successful run and a
// run that failed for good) against the current code: a change to
// OrderResync that running histories cannot replay fails here (guard it
// with workflow.GetVersion). The histories are recorded by the end-to-end
// test: FOS_UPDATE_HISTORY=1 go test ./e2e/.
func TestOrderResyncReplay(t *testing.T) {
	for _, file := range []string{"order_resync_history.json", "order_resync_failed_history.json"} {
		t.Run(file, func(t *testing.T) {
			r := newReplayer(t)
			r.RegisterWorkflowWithOptions(OrderResync, workflow.RegisterOptions{Name: OrderResyncWorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}

// TestShipmentActionReplay replays a completed and a failed ShipmentAction
// run recorded by the end-to-end test (FOS_UPDATE_HISTORY=1 go test ./e2e/).
func TestShipmentActionReplay(t *testing.T) {
	for _, file := range []string{"shipment_action_history.json", "shipment_action_failed_history.json"} {
		t.Run(file, func(t *testing.T) {
			r := newReplayer(t)
			r.RegisterWorkflowWithOptions(ShipmentAction, workflow.RegisterOptions{Name: ShipmentActionWorkflowType})
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, "testdata/"+file))
		})
	}
}

// clearValues are values the end-to-end tests send that must never be
// readable in a recorded history: PINs, invoice facts, customer names and
// addresses, credentials.
var clearValues = []string{
	"123456", "000000", // carrier_a PINs (right, sandbox's wrong one)
	"293235673", "2323.2", // invoice number and amount
	"George", "20 FED EX PKWY", "COLLIERVILLE", // carrier account contact and address
	"Lovelace", "correct horse", // the users
	"Chloe Chen", "1 Pike St", "10 Main St", "Seattle", "Memphis", // shipment addresses
	"stale@example.com", "lost@example.com", "Stale item", // orders
	"shpat_e2e",            // a bridge's access token
	"whsec-ann-0123456789", // an end user's webhook secret
}

// TestRecordedHistoriesHoldNoClearValues reads every recorded history:
// each payload (inputs, results, signals, updates, memos, failures'
// details) must be encrypted by the payload codec, and none of the known
// clear values may appear anywhere, as text or base64-decoded.
func TestRecordedHistoriesHoldNoClearValues(t *testing.T) {
	files, err := filepath.Glob("testdata/*_history.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			require.NoError(t, err)
			var doc any
			require.NoError(t, json.Unmarshal(raw, &doc))
			payloads := 0
			walkHistory(doc, "", func(path string, v any) {
				if s, ok := v.(string); ok {
					for _, text := range []string{s, decodeBase64(s)} {
						for _, clear := range clearValues {
							if strings.Contains(text, clear) {
								t.Errorf("%s: %q in clear at %s", file, clear, path)
							}
						}
					}
				}
				m, ok := v.(map[string]any)
				if !ok {
					return
				}
				md, isPayload := m["metadata"].(map[string]any)
				if !isPayload || strings.Contains(path, "/searchAttributes/") {
					// Search attributes stay readable: Temporal indexes them.
					return
				}
				payloads++
				enc, _ := md["encoding"].(string)
				if got := decodeBase64(enc); got != payloadcodec.Encoding {
					t.Errorf("%s: payload at %s has encoding %q, want %q", file, path, got, payloadcodec.Encoding)
				}
			})
			require.Positive(t, payloads, "no payload found: not a history?")
		})
	}
}

// walkHistory calls fn for every value of a decoded JSON document.
func walkHistory(v any, path string, fn func(path string, v any)) {
	fn(path, v)
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			walkHistory(e, path+"/"+k, fn)
		}
	case []any:
		for i, e := range x {
			walkHistory(e, fmt.Sprintf("%s/%d", path, i), fn)
		}
	}
}

func decodeBase64(s string) string {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return ""
	}
	return string(b)
}
