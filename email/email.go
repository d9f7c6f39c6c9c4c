// Package email sends the service's e-mail (invitations, notices) through
// one Sender: SMTP in production, a development mailbox under `fos dev`.
package email

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Message is one e-mail.
type Message struct {
	To      string
	Subject string
	Text    string
	// Links are the actionable URLs in the text (for the dev mailbox).
	Links []string
}

// Sender delivers messages.
type Sender interface {
	Send(ctx context.Context, m Message) error
}

// LogSender only logs that a message would be sent (never its links, which
// carry tokens).
type LogSender struct{ Log *slog.Logger }

// Send logs the recipient and subject.
func (l LogSender) Send(ctx context.Context, m Message) error {
	l.Log.InfoContext(ctx, "e-mail not sent (no FOS_SMTP_URL configured)", "to", m.To, "subject", m.Subject)
	return nil
}

// StoredMessage is a message kept by the Mailbox.
type StoredMessage struct {
	ID        string    `json:"id"`
	To        string    `json:"to"`
	Subject   string    `json:"subject"`
	Text      string    `json:"text"`
	Links     []string  `json:"links"`
	CreatedAt time.Time `json:"created_at"`
}

// Mailbox keeps every message in memory, newest first: the development
// mailbox of `fos dev` (GET /dev/mailbox). It keeps at most 1,000.
type Mailbox struct {
	mu   sync.Mutex
	msgs []StoredMessage
}

// Send stores the message.
func (b *Mailbox) Send(_ context.Context, m Message) error {
	links := m.Links
	if links == nil {
		links = []string{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.msgs = append([]StoredMessage{{ID: uuid.NewString(), To: m.To, Subject: m.Subject, Text: m.Text, Links: links, CreatedAt: time.Now().UTC()}}, b.msgs...)
	if len(b.msgs) > 1000 {
		b.msgs = b.msgs[:1000]
	}
	return nil
}

// Messages lists messages to the address (all when to is empty), newest first.
func (b *Mailbox) Messages(to string) []StoredMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []StoredMessage{}
	for _, m := range b.msgs {
		if to == "" || equalFold(m.To, to) {
			out = append(out, m)
		}
	}
	return out
}

func equalFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		ca, cb := a[i], b[i]
		if 'A' <= ca && ca <= 'Z' {
			ca += 'a' - 'A'
		}
		if 'A' <= cb && cb <= 'Z' {
			cb += 'a' - 'A'
		}
		if ca != cb {
			return false
		}
	}
	return true
}
