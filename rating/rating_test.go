package rating_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/rating"
	"github.com/fos-dev/fos/sandboxapi"
)

// sandbox serves the sandbox carriers, delaying slow carriers' calls.
func sandbox(t *testing.T, slow map[string]time.Duration) *carriers.Registry {
	t.Helper()
	h := sandboxapi.NewHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for code, d := range slow {
			if strings.HasPrefix(r.URL.Path, "/carriers/"+code+"/") {
				select {
				case <-time.After(d):
				case <-r.Context().Done():
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return carriers.NewRegistry(carriers.Config{Sandbox: true, SandboxURL: srv.URL})
}

func accounts() []carriers.Account {
	return []carriers.Account{
		{ID: "a", Carrier: carriers.CarrierA, Credentials: map[string]any{"accountNumber": "123456789", "childKey": "k", "childSecret": "s"}},
		{ID: "b", Carrier: carriers.CarrierB, Credentials: map[string]any{"clientId": "c", "clientSecret": "s", "accountNumber": "A1B2C3"}},
		{ID: "c", Carrier: carriers.CarrierC, Credentials: map[string]any{"apiKey": "TEST_key"}},
	}
}

func request() carriers.RateRequest {
	addr := func(zip string) carriers.Address {
		return carriers.Address{Address1: "1 Main St", City: "X", ProvinceCode: "NY", CountryCode: "US", Zip: zip}
	}
	return carriers.RateRequest{ShipFrom: addr("10001"), ShipTo: addr("94105"),
		Packages: []carriers.Package{{Weight: carriers.Weight{Value: 2, Unit: carriers.UnitLB}}}}
}

func TestQuoteFanOut(t *testing.T) {
	reg := sandbox(t, nil)
	res := rating.Quote(context.Background(), reg, accounts(), request(), 0)
	require.Len(t, res, 3)
	for i, want := range []string{"a", "b", "c"} {
		require.Equal(t, want, res[i].AccountID, "results in account order")
		require.NoError(t, res[i].Err)
		require.NotEmpty(t, res[i].Quotes)
	}
	require.False(t, rating.Failed(res))
	require.False(t, rating.Failed(nil))
	require.Empty(t, rating.Quote(context.Background(), reg, nil, request(), 0))
}

func TestQuoteServiceTypeAcrossCarriers(t *testing.T) {
	reg := sandbox(t, nil)
	req := request()
	req.ServiceType = "03"
	res := rating.Quote(context.Background(), reg, accounts(), req, 0)
	for _, r := range res {
		require.NoError(t, r.Err, r.Carrier)
		if r.Carrier == carriers.CarrierB {
			require.Len(t, r.Quotes, 1)
			require.Equal(t, "03", r.Quotes[0].ServiceType)
		} else {
			require.NotNil(t, r.Quotes)
			require.Empty(t, r.Quotes)
		}
	}
	// One carrier: the code goes to the carrier, which refuses an unknown one.
	res = rating.Quote(context.Background(), reg, accounts()[:1], req, 0)
	require.Error(t, res[0].Err)
	require.True(t, rating.Failed(res))
}

func TestQuoteDeadlineAndFailures(t *testing.T) {
	reg := sandbox(t, map[string]time.Duration{carriers.CarrierC: 3 * time.Second})
	accts := accounts()
	accts[1].Credentials["accountNumber"] = "sandbox-fail"
	accts = append(accts, carriers.Account{ID: "z", Carrier: "carrier_z"})
	start := time.Now()
	res := rating.Quote(context.Background(), reg, accts, request(), 200*time.Millisecond)
	require.Less(t, time.Since(start), 2*time.Second)
	require.NoError(t, res[0].Err)
	ce, ok := carriers.AsError(res[1].Err)
	require.True(t, ok)
	require.Equal(t, 503, ce.StatusCode)
	require.Nil(t, res[1].Quotes)
	require.ErrorIs(t, res[2].Err, rating.ErrTimeout)
	require.ErrorIs(t, res[3].Err, carriers.ErrUnknownCarrier)

	// A cancelled caller is not reported as a per-carrier timeout.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = rating.Quote(ctx, reg, accounts(), request(), time.Second)
	for _, r := range res {
		require.Error(t, r.Err)
		require.False(t, errors.Is(r.Err, rating.ErrTimeout))
	}
	require.Error(t, rating.Quote(context.Background(), nil, accounts()[:1], request(), 0)[0].Err, "no registry")
}
