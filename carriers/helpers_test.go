package carriers_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fos-dev/fos/carriers"
	"github.com/fos-dev/fos/sandboxapi"
)

// sandbox is the built-in sandbox behind a request counter.
type sandbox struct {
	srv    *httptest.Server
	mu     sync.Mutex
	counts map[string]int // by path
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	sb := &sandbox{counts: map[string]int{}}
	h := sandboxapi.NewHandler()
	sb.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sb.mu.Lock()
		sb.counts[r.URL.Path]++
		sb.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(sb.srv.Close)
	return sb
}

// count returns how many requests hit paths ending in suffix.
func (sb *sandbox) count(suffix string) int {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	n := 0
	for p, c := range sb.counts {
		if strings.HasSuffix(p, suffix) {
			n += c
		}
	}
	return n
}

func (sb *sandbox) registry(mods ...func(*carriers.Config)) *carriers.Registry {
	cfg := carriers.Config{Sandbox: true, SandboxURL: sb.srv.URL}
	for _, m := range mods {
		m(&cfg)
	}
	return carriers.NewRegistry(cfg)
}

func get(t *testing.T, reg *carriers.Registry, code string) carriers.Carrier {
	t.Helper()
	c, err := reg.Get(code)
	require.NoError(t, err)
	return c
}

func acctA() carriers.Account {
	return carriers.Account{ID: "acct-a", Carrier: carriers.CarrierA,
		Credentials: map[string]any{"accountNumber": "123456789", "childKey": "child-key-1", "childSecret": "child-secret-1"}}
}

func acctB() carriers.Account {
	return carriers.Account{ID: "acct-b", Carrier: carriers.CarrierB,
		Credentials: map[string]any{"accountNumber": "A1B2C3", "clientId": "client-1", "clientSecret": "secret-1"}}
}

func acctC() carriers.Account {
	return carriers.Account{ID: "acct-c", Carrier: carriers.CarrierC, Credentials: map[string]any{"apiKey": "TEST_key_1"}}
}

func acctOf(code string) carriers.Account {
	switch code {
	case carriers.CarrierA:
		return acctA()
	case carriers.CarrierB:
		return acctB()
	}
	return acctC()
}

func withCred(a carriers.Account, k, v string) carriers.Account {
	m := map[string]any{}
	for kk, vv := range a.Credentials {
		m[kk] = vv
	}
	m[k] = v
	a.Credentials = m
	return a
}

var (
	memphis = carriers.Address{Name: "Ava Adams", Company: "Adams Goods", Phone: "901-555-0100", Address1: "10 Main St",
		City: "Memphis", ProvinceCode: "TN", Zip: "38103", CountryCode: "US"}
	memphisEast = carriers.Address{Name: "Ben Baker", Address1: "5 Poplar Ave", City: "Memphis", ProvinceCode: "TN", Zip: "38117", CountryCode: "US"}
	seattle     = carriers.Address{Name: "Chloe Chen", Phone: "(206) 555-0199", Address1: "1 Pike St", Address2: "Apt 2",
		City: "Seattle", ProvinceCode: "WA", Zip: "98101", CountryCode: "US", Residential: true}
	toronto = carriers.Address{Name: "Diego Dubois", Address1: "1 King St W", City: "Toronto", ProvinceCode: "ON", Zip: "M5V 2T6", CountryCode: "CA"}
)

func box(lb float64) []carriers.Package {
	return []carriers.Package{{Weight: carriers.Weight{Value: lb, Unit: carriers.UnitLB}, Length: 12, Width: 10, Height: 8, DimensionUnit: carriers.UnitIN}}
}

func day(offset int) time.Time {
	t := time.Now().UTC().AddDate(0, 0, offset)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// weekdayFrom returns the first weekday at or after offset days from today.
func weekdayFrom(offset int) time.Time {
	d := day(offset)
	for d.Weekday() == time.Saturday || d.Weekday() == time.Sunday {
		d = d.AddDate(0, 0, 1)
	}
	return d
}

var reObjOffset = regexp.MustCompile(`(?m)^(\d{10}) 00000 n $`)

// requireValidPDF checks the header, the trailer and that every xref
// offset points at its object.
func requireValidPDF(t *testing.T, doc []byte) {
	t.Helper()
	require.True(t, bytes.HasPrefix(doc, []byte("%PDF-")), "PDF header")
	require.True(t, bytes.HasSuffix(bytes.TrimSpace(doc), []byte("%%EOF")), "PDF trailer")
	i := bytes.LastIndex(doc, []byte("startxref\n"))
	require.Positive(t, i)
	rest := strings.Fields(string(doc[i+len("startxref\n"):]))
	xref, err := strconv.Atoi(rest[0])
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(doc[xref:], []byte("xref")), "startxref points at the xref table")
	offsets := reObjOffset.FindAllSubmatch(doc[xref:], -1)
	require.NotEmpty(t, offsets)
	for n, m := range offsets {
		off, _ := strconv.Atoi(string(m[1]))
		require.True(t, bytes.HasPrefix(doc[off:], []byte(strconv.Itoa(n+1)+" 0 obj")), "object %d offset", n+1)
	}
}
