package email

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"net/smtp"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
)

// SMTPSender delivers messages through an SMTP server (FOS_SMTP_URL):
//
//	smtp://user:pass@host:587   plain connection, upgraded with STARTTLS
//	smtps://user:pass@host:465  TLS from the first byte
//
// TLS is required: a server that does not offer STARTTLS is refused before
// anything is sent, unless Insecure is set (FOS_SMTP_INSECURE=1, e.g. a
// local relay in a trusted network).
//
// With user info in the URL it authenticates with PLAIN, which net/smtp only
// allows over TLS (or to localhost). It never logs: message texts carry
// tokens.
type SMTPSender struct {
	addr     string // host:port
	host     string
	implicit bool // smtps://
	username string
	password string
	from     string // From header, as given
	envFrom  string // its bare address, for MAIL FROM

	// Timeout bounds one whole delivery (dial to QUIT) when the context has
	// no earlier deadline.
	Timeout time.Duration
	// TLSConfig, when set, is used for STARTTLS and smtps:// (for example
	// to trust a private CA); ServerName defaults to the URL's host.
	TLSConfig *tls.Config
	// LocalName is the name sent with EHLO; empty means "localhost".
	LocalName string
	// Insecure allows an smtp:// delivery without STARTTLS (in clear text)
	// when the server does not offer it.
	Insecure bool
}

// ErrNoTLS: the SMTP server offers no STARTTLS and Insecure is not set.
var ErrNoTLS = errors.New("email: the SMTP server does not offer STARTTLS; use smtps:// or set FOS_SMTP_INSECURE=1 to send in clear text")

// NewSMTPSender parses an smtp:// or smtps:// URL. from is the From header
// ("fos <no-reply@example.com>" or a bare address).
func NewSMTPSender(rawURL, from string) (*SMTPSender, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("email: FOS_SMTP_URL is not a URL")
	}
	s := &SMTPSender{Timeout: 30 * time.Second}
	switch u.Scheme {
	case "smtp":
	case "smtps":
		s.implicit = true
	default:
		return nil, fmt.Errorf("email: FOS_SMTP_URL must start with smtp:// or smtps://, not %q", u.Scheme+"://")
	}
	s.host = u.Hostname()
	if s.host == "" {
		return nil, errors.New("email: FOS_SMTP_URL names no host")
	}
	port := u.Port()
	if port == "" {
		port = "587"
		if s.implicit {
			port = "465"
		}
	}
	s.addr = net.JoinHostPort(s.host, port)
	if u.User != nil {
		s.username = u.User.Username()
		s.password, _ = u.User.Password()
	}
	a, err := mail.ParseAddress(from)
	if err != nil {
		return nil, fmt.Errorf("email: sender address %q: %w", from, err)
	}
	s.from = a.String()
	s.envFrom = a.Address
	return s, nil
}

// Send delivers one message. It honours ctx (cancellation closes the
// connection) and Timeout.
func (s *SMTPSender) Send(ctx context.Context, m Message) error {
	to, err := mail.ParseAddress(m.To)
	if err != nil {
		return fmt.Errorf("email: recipient: %w", err)
	}
	body, err := s.render(to, m)
	if err != nil {
		return err
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	conn, err := s.dial(ctx)
	if err != nil {
		return fmt.Errorf("email: connect to %s: %w", s.addr, err)
	}
	// net/smtp knows no context: a deadline bounds every read and write,
	// and cancellation closes the connection under it.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	err = s.deliver(conn, to.Address, body)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		err = fmt.Errorf("email: send to %s: %w (%w)", s.addr, ctx.Err(), err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The connection deadline fired a moment before the context's timer.
		err = fmt.Errorf("email: send to %s: %w (%w)", s.addr, context.DeadlineExceeded, err)
	}
	return err
}

func (s *SMTPSender) tlsConfig() *tls.Config {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.TLSConfig != nil {
		cfg = s.TLSConfig.Clone()
	}
	if cfg.ServerName == "" {
		cfg.ServerName = s.host
	}
	return cfg
}

func (s *SMTPSender) dial(ctx context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: 15 * time.Second}
	if s.implicit {
		return (&tls.Dialer{NetDialer: d, Config: s.tlsConfig()}).DialContext(ctx, "tcp", s.addr)
	}
	return d.DialContext(ctx, "tcp", s.addr)
}

func (s *SMTPSender) deliver(conn net.Conn, rcpt string, body []byte) error {
	c, err := smtp.NewClient(conn, s.host)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("email: greeting from %s: %w", s.addr, err)
	}
	defer c.Close()
	if s.LocalName != "" {
		if err := c.Hello(s.LocalName); err != nil {
			return fmt.Errorf("email: EHLO: %w", err)
		}
	}
	if !s.implicit {
		if ok, _ := c.Extension("STARTTLS"); ok {
			if err := c.StartTLS(s.tlsConfig()); err != nil {
				return fmt.Errorf("email: STARTTLS: %w", err)
			}
		} else if !s.Insecure {
			return fmt.Errorf("%w (%s)", ErrNoTLS, s.addr)
		}
	}
	if s.username != "" {
		if ok, _ := c.Extension("AUTH"); !ok {
			return fmt.Errorf("email: %s does not offer AUTH but FOS_SMTP_URL has credentials", s.addr)
		}
		if err := c.Auth(smtp.PlainAuth("", s.username, s.password, s.host)); err != nil {
			return fmt.Errorf("email: AUTH: %w", err)
		}
	}
	if err := c.Mail(s.envFrom); err != nil {
		return fmt.Errorf("email: MAIL FROM: %w", err)
	}
	if err := c.Rcpt(rcpt); err != nil {
		return fmt.Errorf("email: RCPT TO: %w", err)
	}
	w, err := c.Data()
	if err != nil {
		return fmt.Errorf("email: DATA: %w", err)
	}
	if _, err := w.Write(body); err != nil {
		return fmt.Errorf("email: DATA: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("email: DATA: %w", err)
	}
	if err := c.Quit(); err != nil {
		return fmt.Errorf("email: QUIT: %w", err)
	}
	return nil
}

// render builds the RFC 5322 message: headers, then the text as
// quoted-printable UTF-8 (safe through any relay, whatever the line length).
func (s *SMTPSender) render(to *mail.Address, m Message) ([]byte, error) {
	domain := "localhost"
	if i := strings.LastIndexByte(s.envFrom, '@'); i >= 0 {
		domain = s.envFrom[i+1:]
	}
	subject := strings.Join(strings.Fields(m.Subject), " ") // no CR or LF can reach the header
	var b bytes.Buffer
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", s.from)
	header("To", to.String())
	header("Subject", mime.QEncoding.Encode("utf-8", subject))
	header("Date", time.Now().Format(time.RFC1123Z))
	header("Message-ID", "<"+uuid.NewString()+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	b.WriteString("\r\n")
	qp := quotedprintable.NewWriter(&b)
	text := strings.ReplaceAll(strings.ReplaceAll(m.Text, "\r\n", "\n"), "\n", "\r\n")
	if _, err := qp.Write([]byte(text)); err != nil {
		return nil, err
	}
	if err := qp.Close(); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(b.Bytes(), []byte("\r\n")) {
		b.WriteString("\r\n")
	}
	return b.Bytes(), nil
}
