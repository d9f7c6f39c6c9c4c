package email

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"math/big"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// received is what the fake server saw of one session.
type received struct {
	ehlo     string
	auth     string // decoded PLAIN response
	authTLS  bool   // AUTH came over TLS
	mailFrom string
	rcptTo   []string
	data     []byte
	tls      bool
}

// fakeSMTP is a tiny SMTP server on 127.0.0.1 that accepts one session.
type fakeSMTP struct {
	ln       net.Listener
	cert     *tls.Certificate
	startTLS bool // offer STARTTLS
	got      chan received
	errs     chan error
}

func newFakeSMTP(t *testing.T, implicitTLS, startTLS bool) (*fakeSMTP, *x509.CertPool) {
	t.Helper()
	cert, pool := selfSigned(t)
	var ln net.Listener
	var err error
	if implicitTLS {
		ln, err = tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	} else {
		ln, err = net.Listen("tcp", "127.0.0.1:0")
	}
	require.NoError(t, err)
	f := &fakeSMTP{ln: ln, cert: &cert, startTLS: startTLS, got: make(chan received, 1), errs: make(chan error, 1)}
	t.Cleanup(func() { _ = ln.Close() })
	go f.serveOne(implicitTLS)
	return f, pool
}

func (f *fakeSMTP) port() string {
	_, p, _ := net.SplitHostPort(f.ln.Addr().String())
	return p
}

func (f *fakeSMTP) serveOne(implicitTLS bool) {
	conn, err := f.ln.Accept()
	if err != nil {
		f.errs <- err
		return
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	var r received
	r.tls = implicitTLS
	tp := textproto.NewConn(conn)
	_ = tp.PrintfLine("220 fake.test ESMTP ready")
	for {
		line, err := tp.ReadLine()
		if err != nil {
			f.errs <- err
			return
		}
		verb, arg, _ := strings.Cut(line, " ")
		switch strings.ToUpper(verb) {
		case "EHLO", "HELO":
			r.ehlo = arg
			_ = tp.PrintfLine("250-fake.test greets %s", arg)
			if f.startTLS && !r.tls {
				_ = tp.PrintfLine("250-STARTTLS")
			}
			_ = tp.PrintfLine("250-AUTH PLAIN")
			_ = tp.PrintfLine("250 8BITMIME")
		case "STARTTLS":
			_ = tp.PrintfLine("220 2.0.0 go ahead")
			tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{*f.cert}})
			if err := tc.Handshake(); err != nil {
				f.errs <- err
				return
			}
			conn, r.tls = tc, true
			tp = textproto.NewConn(tc)
		case "AUTH":
			mech, resp, _ := strings.Cut(arg, " ")
			raw, err := base64.StdEncoding.DecodeString(resp)
			if mech != "PLAIN" || err != nil {
				_ = tp.PrintfLine("504 unsupported")
				continue
			}
			r.auth, r.authTLS = string(raw), r.tls
			_ = tp.PrintfLine("235 2.7.0 authenticated")
		case "MAIL":
			r.mailFrom = arg
			_ = tp.PrintfLine("250 2.1.0 ok")
		case "RCPT":
			r.rcptTo = append(r.rcptTo, arg)
			_ = tp.PrintfLine("250 2.1.5 ok")
		case "DATA":
			_ = tp.PrintfLine("354 end with .")
			data, err := tp.ReadDotBytes()
			if err != nil {
				f.errs <- err
				return
			}
			r.data = data
			_ = tp.PrintfLine("250 2.0.0 queued")
		case "QUIT":
			_ = tp.PrintfLine("221 2.0.0 bye")
			f.got <- r
			return
		default:
			_ = tp.PrintfLine("502 5.5.2 unknown command")
		}
	}
}

func (f *fakeSMTP) wait(t *testing.T) received {
	t.Helper()
	select {
	case r := <-f.got:
		return r
	case err := <-f.errs:
		t.Fatalf("fake SMTP server: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("fake SMTP server received nothing")
	}
	return received{}
}

// selfSigned makes a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "fake.test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:     []string{"localhost"},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

var testMessage = Message{
	To:      "Ada Lovelace <ada@example.com>",
	Subject: "You are invited to join Acme on fos",
	Text:    "Hello Ada,\n\nopen http://fos.test/invitations/accept?token=abc_DEF-123=\n\n.a line starting with a dot\n" + strings.Repeat("long ", 40) + "\n",
	Links:   []string{"http://fos.test/invitations/accept?token=abc_DEF-123="},
}

// parsed checks the message's headers and returns its decoded text.
func parsed(t *testing.T, data []byte) (*mail.Message, string) {
	t.Helper()
	msg, err := mail.ReadMessage(strings.NewReader(string(data)))
	require.NoError(t, err)
	body, err := io.ReadAll(quotedprintable.NewReader(msg.Body))
	require.NoError(t, err)
	return msg, string(body)
}

func TestSMTPSenderPlainAuthOnLocalhost(t *testing.T) {
	srv, _ := newFakeSMTP(t, false, false)
	s, err := NewSMTPSender("smtp://mailer:s3cr%40t@127.0.0.1:"+srv.port(), "fos <no-reply@fos.test>")
	require.NoError(t, err)
	s.Insecure = true // FOS_SMTP_INSECURE=1: no STARTTLS offered
	require.NoError(t, s.Send(t.Context(), testMessage))
	r := srv.wait(t)

	require.False(t, r.tls)
	require.Equal(t, "\x00mailer\x00s3cr@t", r.auth, "PLAIN with the URL's user info")
	require.True(t, strings.HasPrefix(r.mailFrom, "FROM:<no-reply@fos.test>"), r.mailFrom)
	require.Equal(t, []string{"TO:<ada@example.com>"}, r.rcptTo)

	msg, text := parsed(t, r.data)
	h := msg.Header
	require.Equal(t, `"fos" <no-reply@fos.test>`, h.Get("From"))
	require.Equal(t, `"Ada Lovelace" <ada@example.com>`, h.Get("To"))
	require.Equal(t, testMessage.Subject, h.Get("Subject"))
	date, err := h.Date()
	require.NoError(t, err)
	require.WithinDuration(t, time.Now(), date, time.Minute)
	require.Regexp(t, `^<[0-9a-f-]{36}@fos\.test>$`, h.Get("Message-ID"))
	require.Equal(t, "1.0", h.Get("MIME-Version"))
	require.Equal(t, "text/plain; charset=utf-8", h.Get("Content-Type"))
	require.Equal(t, "quoted-printable", h.Get("Content-Transfer-Encoding"))
	// (ReadDotBytes turned the wire's CRLF into LF.)
	require.Equal(t, testMessage.Text, text)
	for _, line := range strings.Split(string(r.data), "\n") {
		require.LessOrEqual(t, len(line), 78, "lines stay short: %q", line)
	}
}

func TestSMTPSenderStartTLS(t *testing.T) {
	srv, pool := newFakeSMTP(t, false, true)
	s, err := NewSMTPSender("smtp://mailer:pw@127.0.0.1:"+srv.port(), "no-reply@fos.test")
	require.NoError(t, err)
	s.TLSConfig = &tls.Config{RootCAs: pool}
	require.NoError(t, s.Send(t.Context(), testMessage))
	r := srv.wait(t)
	require.True(t, r.tls, "upgraded with STARTTLS")
	require.True(t, r.authTLS, "credentials only after the upgrade")
	require.Equal(t, "\x00mailer\x00pw", r.auth)
	_, text := parsed(t, r.data)
	require.Contains(t, text, testMessage.Links[0])
}

func TestSMTPSenderImplicitTLS(t *testing.T) {
	srv, pool := newFakeSMTP(t, true, false)
	s, err := NewSMTPSender("smtps://127.0.0.1:"+srv.port(), "no-reply@fos.test")
	require.NoError(t, err)
	s.TLSConfig = &tls.Config{RootCAs: pool}
	m := testMessage
	m.Subject = "Einladung für Ärzte"
	require.NoError(t, s.Send(t.Context(), m))
	r := srv.wait(t)
	require.True(t, r.tls)
	require.Empty(t, r.auth, "no credentials, no AUTH")
	msg, _ := parsed(t, r.data)
	raw := msg.Header.Get("Subject")
	require.True(t, strings.HasPrefix(raw, "=?utf-8?q?"), "non-ASCII subject is encoded: %s", raw)
	dec, err := new(mime.WordDecoder).DecodeHeader(raw)
	require.NoError(t, err)
	require.Equal(t, m.Subject, dec)
}

func TestSMTPSenderRefusesUntrustedCertificate(t *testing.T) {
	srv, _ := newFakeSMTP(t, true, false)
	s, err := NewSMTPSender("smtps://127.0.0.1:"+srv.port(), "no-reply@fos.test")
	require.NoError(t, err)
	s.Timeout = 5 * time.Second
	require.Error(t, s.Send(t.Context(), testMessage))
}

func TestSMTPSenderHonoursContext(t *testing.T) {
	// A server that accepts and never speaks.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(io.Discard, bufio.NewReader(c))
			_ = c.Close()
		}
	}()
	s, err := NewSMTPSender("smtp://"+ln.Addr().String(), "no-reply@fos.test")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = s.Send(ctx, testMessage)
	require.Error(t, err)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 5*time.Second)

	// Timeout alone bounds a delivery too.
	s.Timeout = 200 * time.Millisecond
	start = time.Now()
	require.Error(t, s.Send(t.Context(), testMessage))
	require.Less(t, time.Since(start), 5*time.Second)
}

func TestSMTPSenderRejectsBadRecipient(t *testing.T) {
	s, err := NewSMTPSender("smtp://127.0.0.1:1", "no-reply@fos.test")
	require.NoError(t, err)
	require.Error(t, s.Send(t.Context(), Message{To: "a@b.c\r\nBcc: evil@x.y", Subject: "x", Text: "x"}))
}

func TestNewSMTPSender(t *testing.T) {
	for _, bad := range []string{"http://mail.example.com", "smtp://", "://nope", "mail.example.com:25"} {
		_, err := NewSMTPSender(bad, "no-reply@fos.test")
		require.Error(t, err, bad)
	}
	_, err := NewSMTPSender("smtp://mail.example.com", "not an address")
	require.Error(t, err)

	s, err := NewSMTPSender("smtp://mail.example.com", "fos <no-reply@fos.test>")
	require.NoError(t, err)
	require.Equal(t, "mail.example.com:587", s.addr)
	require.Equal(t, "no-reply@fos.test", s.envFrom)
	s, err = NewSMTPSender("smtps://u:p@mail.example.com", "no-reply@fos.test")
	require.NoError(t, err)
	require.Equal(t, "mail.example.com:465", s.addr)
	require.True(t, s.implicit)
	require.Equal(t, "u", s.username)
	require.Equal(t, "p", s.password)
}

// Without STARTTLS and without FOS_SMTP_INSECURE=1 nothing is sent: no
// credentials, no message in clear text.
func TestSMTPSenderRequiresTLS(t *testing.T) {
	srv, _ := newFakeSMTP(t, false, false)
	s, err := NewSMTPSender("smtp://mailer:pw@127.0.0.1:"+srv.port(), "no-reply@fos.test")
	require.NoError(t, err)
	err = s.Send(t.Context(), testMessage)
	require.ErrorIs(t, err, ErrNoTLS)
	select {
	case r := <-srv.got:
		t.Fatalf("the server received a session: %+v", r)
	case <-srv.errs: // the client hung up after EHLO
	case <-time.After(5 * time.Second):
		t.Fatal("the client did not hang up")
	}
}
