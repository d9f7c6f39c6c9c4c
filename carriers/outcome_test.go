package carriers_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
)

// TestNotSent buys a label through the real adapter against servers that
// fail in each way, and checks which failures prove the request never
// reached the carrier.
func TestNotSent(t *testing.T) {
	// ship answers label purchases with fail (the sandbox answers the rest).
	ship := func(t *testing.T, fail http.HandlerFunc) string {
		h := sandboxapi.NewHandler()
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/ship/v1/shipments") {
				fail(w, r)
				return
			}
			h.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	// refused is an address nothing listens on.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	cases := []struct {
		name    string
		url     func(t *testing.T) string
		notSent bool
	}{
		{"connection refused", func(*testing.T) string { return refused }, true},
		{"dns failure", func(*testing.T) string { return "http://no-such-host.invalid" }, true},
		{"429", func(t *testing.T) string {
			return ship(t, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
			})
		}, true},
		{"503", func(t *testing.T) string {
			return ship(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		}, false},
		{"500", func(t *testing.T) string {
			return ship(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
		}, false},
		{"timeout after sending", func(t *testing.T) string {
			return ship(t, func(_ http.ResponseWriter, r *http.Request) {
				select {
				case <-r.Context().Done():
				case <-time.After(5 * time.Second):
				}
			})
		}, false},
		{"reset mid-response", func(t *testing.T) string {
			return ship(t, func(w http.ResponseWriter, _ *http.Request) {
				conn, buf, err := http.NewResponseController(w).Hijack()
				if err != nil {
					return
				}
				_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"output\":")
				_ = buf.Flush()
				_ = conn.Close()
			})
		}, false},
		{"unreadable answer", func(t *testing.T) string {
			return ship(t, func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) })
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: tc.url(t)})
			c := get(t, reg, "carrier_a")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_, err := c.CreateLabel(ctx, acctOf("carrier_a"), labelReq("carrier_a", 5))
			require.Error(t, err)
			require.Equal(t, tc.notSent, carriers.NotSent(err), "%v", err)
			require.Equal(t, !tc.notSent, carriers.Unanswered(err), "%v", err)
		})
	}

	// A definite refusal was sent and answered: neither.
	reg := carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: ship(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"errors":[{"code":"SERVICE.TYPE.INVALID","message":"bad service"}]}`))
	})})
	_, err = get(t, reg, "carrier_a").CreateLabel(context.Background(), acctOf("carrier_a"), labelReq("carrier_a", 5))
	require.Error(t, err)
	require.False(t, carriers.NotSent(err))
	require.False(t, carriers.Unanswered(err))
	require.False(t, carriers.NotSent(nil))
}

// TestCarrierBFindLabel: carrier_b looks a label up by the reference it was
// bought with; an unknown or voided one is not found. carrier_a offers no
// lookup.
func TestCarrierBFindLabel(t *testing.T) {
	reg := newSandbox(t).registry()
	ctx := context.Background()
	c := get(t, reg, "carrier_b")
	finder, ok := c.(carriers.LabelFinder)
	require.True(t, ok)
	_, isFinder := get(t, reg, "carrier_a").(carriers.LabelFinder)
	require.False(t, isFinder)

	ref := "0b7f1e4c-2d3a-4c5b-8e9f-6a7b8c9d0e1f" // a shipment id: 36 characters
	req := labelReq("carrier_b", 5)
	req.Reference = ref
	l, err := c.CreateLabel(ctx, acctOf("carrier_b"), req)
	require.NoError(t, err)
	tn, found, err := finder.FindLabel(ctx, acctOf("carrier_b"), ref)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, l.TrackingNumber, tn)

	_, found, err = finder.FindLabel(ctx, acctOf("carrier_b"), "7d7e9f1a-2b3c-4d5e-8f9a-0b1c2d3e4f5a")
	require.NoError(t, err)
	require.False(t, found)

	require.NoError(t, c.VoidLabel(ctx, acctOf("carrier_b"), l.TrackingNumber))
	_, found, err = finder.FindLabel(ctx, acctOf("carrier_b"), ref)
	require.NoError(t, err)
	require.False(t, found, "a voided label is not found")
}
