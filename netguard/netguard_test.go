package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

func TestCheckURL(t *testing.T) {
	refused := []string{
		"http://127.0.0.1/",
		"http://127.8.9.10:8080/wp-json",
		"https://10.1.2.3",
		"https://172.16.0.1",
		"https://192.168.1.10",
		"http://100.64.0.1",             // shared address space
		"http://169.254.169.254/latest", // cloud metadata
		"http://0.0.0.0:8080",
		"http://224.0.0.1",
		"http://[::1]:8080/",
		"http://[::]/",
		"http://[fe80::1%25eth0]/",
		"http://[fd00:ec2::254]/", // AWS metadata over IPv6
		"http://[fc00::1]/",
		"http://[ff02::1]/",
		"http://[::ffff:127.0.0.1]/", // IPv4-mapped loopback
		"http://[::ffff:169.254.169.254]/",
		"http://localhost:3000",
		"http://LOCALHOST./",
		"http://shop.localhost/",
		"http://metadata.google.internal/computeMetadata/v1/",
		"http://127.1/",
		"http://2130706433/",
		"http://0x7f000001/",
	}
	for _, u := range refused {
		err := CheckURL(u, false)
		if err == nil || !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("CheckURL(%q) = %v, want a forbidden-address error", u, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), "must not point to") {
			t.Errorf("CheckURL(%q) message %q is not a field message", u, err)
		}
		if err := CheckURL(u, true); err != nil {
			t.Errorf("CheckURL(%q, allowPrivate) = %v, want nil", u, err)
		}
	}
	allowed := []string{
		"https://shop.example.com",
		"https://shop.example.com:8443/store/",
		"http://8.8.8.8/",
		"http://[2001:4860:4860::8888]/",
		"http://[::ffff:8.8.8.8]/",
		"https://123.example.com",
	}
	for _, u := range allowed {
		if err := CheckURL(u, false); err != nil {
			t.Errorf("CheckURL(%q) = %v, want nil", u, err)
		}
	}
	malformed := []string{"", "shop.example.com", "ftp://shop.example.com", "https://", "mailto:a@b.c", "https://user:pw@shop.example.com"}
	for _, u := range malformed {
		err := CheckURL(u, true)
		if err == nil || errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("CheckURL(%q) = %v, want a malformed-URL error", u, err)
		}
	}
}

func TestControl(t *testing.T) {
	cases := []struct {
		network, address string
		ok               bool
	}{
		{"tcp4", "127.0.0.1:80", false},
		{"tcp4", "10.0.0.1:443", false},
		{"tcp4", "169.254.169.254:80", false},
		{"tcp4", "0.0.0.0:80", false},
		{"tcp6", "[::1]:80", false},
		{"tcp6", "[::ffff:127.0.0.1]:80", false},
		{"tcp6", "[fe80::1%eth0]:80", false},
		{"tcp6", "[fd12:3456::1]:80", false},
		{"udp4", "8.8.8.8:53", false},
		{"tcp4", "8.8.8.8:443", true},
		{"tcp4", "93.184.216.34:8443", true},
		{"tcp6", "[2606:2800:220:1:248:1893:25c8:1946]:443", true},
	}
	for _, c := range cases {
		err := control(c.network, c.address, nil)
		if (err == nil) != c.ok {
			t.Errorf("control(%s, %s) = %v, want ok=%v", c.network, c.address, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%s, %s) error %v does not match ErrForbiddenAddress", c.network, c.address, err)
		}
	}
	if err := CheckAddr(netip.Addr{}); err == nil {
		t.Error("CheckAddr(invalid) = nil")
	}
}

// TestClientRefusesLoopbackAtDialTime: a name that passes no validation
// check of its own resolves to loopback when dialed; the guarded client
// refuses the connection, the unguarded one (fos dev) makes it.
func TestClientRefusesLoopbackAtDialTime(t *testing.T) {
	var hits int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits++
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port

	for _, target := range []string{
		srv.URL, // literal 127.0.0.1
		"http://localhost:" + strconv.Itoa(port) + "/",
	} {
		res, err := NewClient(Options{}).Get(target)
		if err == nil {
			res.Body.Close()
			t.Fatalf("guarded client reached %s", target)
		}
		if !errors.Is(err, ErrForbiddenAddress) {
			t.Fatalf("guarded client error for %s = %v, want ErrForbiddenAddress", target, err)
		}
	}
	if hits != 0 {
		t.Fatalf("server saw %d requests through the guarded client", hits)
	}

	// FOS_ALLOW_PRIVATE_URLS=1: the same client reaches it.
	res, err := NewClient(Options{AllowPrivate: true}).Get("http://localhost:" + strconv.Itoa(port) + "/")
	if err != nil {
		t.Fatalf("unguarded client: %v", err)
	}
	res.Body.Close()
	if hits != 1 {
		t.Fatalf("unguarded client: %d hits, want 1", hits)
	}
}

// fakeDNS answers every A query with ip and every other query with no
// records: a name the attacker controls, rebound to a private address.
func fakeDNS(t *testing.T, ip net.IP) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			// Header (12 bytes), then one question: name labels, type, class.
			i := 12
			for i < len(q) && q[i] != 0 {
				i += int(q[i]) + 1
			}
			if i+5 > len(q) {
				continue
			}
			qEnd := i + 5
			qtype := int(q[i+1])<<8 | int(q[i+2])
			resp := append([]byte{}, q[:2]...)                      // id
			resp = append(resp, 0x81, 0x80, 0, 1, 0, 0, 0, 0, 0, 0) // response, RD+RA, 1 question
			resp = append(resp, q[12:qEnd]...)
			if qtype == 1 { // A
				resp[7] = 1
				resp = append(resp, 0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
				resp = append(resp, ip.To4()...)
			}
			_, _ = pc.WriteTo(resp, addr)
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

// A public-looking name that resolves to loopback when dialed (DNS
// rebinding after validation) is refused by the guarded dialer, which
// checks the resolved address; CheckURL alone lets the name through.
func TestDialerRefusesNameRebindingToLoopback(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	port := strconv.Itoa(srv.Listener.Addr().(*net.TCPAddr).Port)
	res := fakeDNS(t, net.IPv4(127, 0, 0, 1))
	ctx := context.Background()

	addrs, err := res.LookupHost(ctx, "shop.rebind.example")
	if err != nil || len(addrs) != 1 || addrs[0] != "127.0.0.1" {
		t.Fatalf("fake DNS: %v %v", addrs, err)
	}
	if err := CheckURL("https://shop.rebind.example:"+port+"/", false); err != nil {
		t.Fatalf("CheckURL refused a name at validation time: %v", err)
	}

	d := NewDialer(false)
	d.Resolver = res
	conn, err := d.DialContext(ctx, "tcp", "shop.rebind.example:"+port)
	if err == nil {
		_ = conn.Close()
		t.Fatal("guarded dialer connected to a name resolving to 127.0.0.1")
	}
	if !errors.Is(err, ErrForbiddenAddress) {
		t.Fatalf("dial error = %v, want ErrForbiddenAddress", err)
	}

	d = NewDialer(true)
	d.Resolver = res
	conn, err = d.DialContext(ctx, "tcp", "shop.rebind.example:"+port)
	if err != nil {
		t.Fatalf("unguarded dialer: %v", err)
	}
	_ = conn.Close()
}
