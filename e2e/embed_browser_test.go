package e2e

import (
	"context"
	"encoding/json"
	"html/template"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The connect widget in a real browser (Debian's chromium, headless,
// driven by chromedp): a host page on an allowed origin opens the widget,
// connects a storefront_b bridge through the credential form (after the
// API's field errors are shown for an empty form) and a storefront_a
// bridge through the OAuth popup against the sandbox, and receives
// "connected" each time; a host page on another origin is refused.
// `make test` installs chromium when it is missing (scripts/ensure-chromium.sh);
// without it this test skips, loudly.

var hostPage = template.Must(template.New("host").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><title>host</title></head><body>
<button id="open" type="button">Connect</button>
<script src="{{.FOS}}/embed/connect.js"></script>
<script>
window.__events = [];
document.getElementById("open").onclick = function () {
  FosConnect.open({publishableKey: "{{.Key}}", externalId: "browser-user"}, function (ev) { window.__events.push(ev); });
};
</script></body></html>`))

func chromiumPath(t *testing.T) string {
	for _, name := range []string{os.Getenv("FOS_CHROMIUM"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("\n\n*** BROWSER TEST SKIPPED: no chromium on this machine. `make test` installs Debian's chromium " +
		"(scripts/ensure-chromium.sh); run it, or apt-get install chromium, or set FOS_CHROMIUM. ***\n")
	return ""
}

func serveHost(t *testing.T, fos, key string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = hostPage.Execute(w, map[string]string{"FOS": fos, "Key": key})
	}))
	t.Cleanup(srv.Close)
	return srv
}

type widgetEvent struct {
	Type       string `json:"type"`
	BridgeID   string `json:"bridgeId"`
	BridgeType string `json:"bridgeType"`
	Code       string `json:"code"`
	Message    string `json:"message"`
}

func hostEvents(ctx context.Context) ([]widgetEvent, error) {
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.__events || [])`))
	if err != nil {
		return nil, err
	}
	var evs []widgetEvent
	return evs, json.Unmarshal([]byte(raw), &evs)
}

func waitEvent(t *testing.T, ctx context.Context, typ string, n int) []widgetEvent {
	t.Helper()
	var got []widgetEvent
	require.Eventually(t, func() bool {
		evs, err := hostEvents(ctx)
		if err != nil {
			return false
		}
		got = nil
		for _, e := range evs {
			if e.Type == typ {
				got = append(got, e)
			}
		}
		return len(got) >= n
	}, 60*time.Second, 200*time.Millisecond, "waiting for %d %q events", n, typ)
	return got
}

// frameNode is the widget's iframe (same site as the host on 127.0.0.1, so
// in the host's process and reachable with FromNode).
func frameNode(t *testing.T, ctx context.Context) *chromedp.Node {
	t.Helper()
	nodes, err := chromedp.Run(ctx, chromedp.Nodes(chromedp.CSS("iframe[data-fos-connect]")))
	require.NoError(t, err)
	require.NotEmpty(t, nodes)
	return nodes[0]
}

func TestConnectWidgetInABrowser(t *testing.T) {
	chrome := chromiumPath(t)
	s := startEmbedStack(t)
	_, key, pk := s.embedAccount(nil)
	allowed := serveHost(t, s.api.URL, pk)
	s.mustCall(200, key, "PATCH", "/api/v1/embed/config", map[string]any{"allowed_origins": []string{allowed.URL},
		"branding": map[string]any{"company_name": "Acme Platform", "primary_color": "#0b7285"}})
	other := serveHost(t, s.api.URL, pk)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU)
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// The first Run starts the browser on ctx (no timeout on it).
	_, err := chromedp.Run(ctx, chromedp.Evaluate[int]("1"))
	require.NoError(t, err, "start chromium")
	ctx, cancel = context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()

	// 1. The allowed host: the form, with the API's field errors first.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(allowed.URL), chromedp.Click(chromedp.CSS("#open"))))
	waitEvent(t, ctx, "ready", 1)
	f := chromedp.FromNode(frameNode(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`button[data-type="storefront_b"]`), f),
		chromedp.Click(chromedp.CSS(`button[data-type="storefront_b"]`), f),
		chromedp.WaitVisible(chromedp.CSS(`#f-storeUrl`), f),
		chromedp.Click(chromedp.CSS(`#form button.primary`), f)))
	errs := waitEvent(t, ctx, "error", 1)
	require.NotEmpty(t, errs[0].Message)
	fieldErr, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#f-storeUrl-error`), f))
	require.NoError(t, err)
	require.Contains(t, fieldErr, "required", "the API's field error is shown next to the field")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#f-storeUrl`), "https://shop.example.com", f),
		chromedp.SendKeys(chromedp.CSS(`#f-consumerKey`), "ck_browser", f),
		chromedp.SendKeys(chromedp.CSS(`#f-consumerSecret`), "cs_browser", f),
		chromedp.Click(chromedp.CSS(`#form button.primary`), f)))
	conn := waitEvent(t, ctx, "connected", 1)
	require.Equal(t, "storefront_b", conn[0].BridgeType)
	require.NotEmpty(t, conn[0].BridgeID)

	// The widget's close button (keyboard reachable) closes the frame.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#close"), f)))
	waitEvent(t, ctx, "close", 1)
	frames, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("iframe").length`))
	require.NoError(t, err)
	require.Zero(t, frames)

	// 2. storefront_a through the OAuth popup (the sandbox approves at once).
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#open"))))
	waitEvent(t, ctx, "ready", 2)
	f = chromedp.FromNode(frameNode(t, ctx))
	require.NoError(t, chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`button[data-type="storefront_a"]`), f),
		chromedp.Click(chromedp.CSS(`button[data-type="storefront_a"]`), f),
		chromedp.WaitVisible(chromedp.CSS(`#f-shopDomain`), f),
		chromedp.SendKeys(chromedp.CSS(`#f-shopDomain`), "browser-shop", f),
		chromedp.Click(chromedp.CSS(`#form button.primary`), f)))
	conn = waitEvent(t, ctx, "connected", 2)
	require.Equal(t, "storefront_a", conn[1].BridgeType)

	// 3. Another origin is refused: no session, no frame, an error event.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(other.URL), chromedp.Click(chromedp.CSS("#open"))))
	refused := waitEvent(t, ctx, "error", 1)
	require.NotEmpty(t, refused[0].Message)
	frames, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("iframe").length`))
	require.NoError(t, err)
	require.Zero(t, frames)
	evs, err := hostEvents(ctx)
	require.NoError(t, err)
	for _, e := range evs {
		require.NotEqual(t, "ready", e.Type, "the widget never opened for %s", other.URL)
	}
	t.Logf("widget events on the refused origin: %+v", evs)
}
