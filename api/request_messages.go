package api

import (
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// The words of request validation (request_validation.go): the formats
// request schemas use, read the way the handlers read them, and each
// failure's message in the handlers' wording.

// requestFormats are the formats request schemas use, read the way the
// handlers read them.
var requestFormats = []*jsonschema.Format{
	{Name: "uuid", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		if _, err := uuid.Parse(strings.TrimSpace(s)); err != nil {
			return errors.New("not a UUID")
		}
		return nil
	}},
	{Name: "email", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		s = strings.TrimSpace(s)
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s || !strings.Contains(s, "@") || len(s) > 254 {
			return errors.New("not an e-mail address")
		}
		return nil
	}},
	{Name: "date-time", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			return errors.New("not an RFC 3339 timestamp")
		}
		return nil
	}},
	// iso8601: a timestamp, a timestamp without zone, or a date (UTC).
	{Name: "iso8601", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok || strings.TrimSpace(s) == "" {
			return nil
		}
		if _, ok := parseOrderTime(strings.TrimSpace(s)); !ok {
			return errors.New("not an ISO 8601 timestamp")
		}
		return nil
	}},
	{Name: "date", Validate: func(v any) error {
		s, ok := v.(string)
		if !ok {
			return nil
		}
		// Blank is absent (a required date has pattern \S).
		if s = strings.TrimSpace(s); s == "" {
			return nil
		}
		if _, err := time.Parse(time.DateOnly, s); err != nil {
			return errors.New("not a date")
		}
		return nil
	}},
}

// detailMessage words one failure the way the handlers do.
func detailMessage(e *jsonschema.ValidationError, body any) string {
	v := instanceAt(e.InstanceLocation, body)
	if v == nil {
		return "is required"
	}
	node := schemaNode(e.SchemaURL)
	if kw := e.ErrorKind.KeywordPath(); len(kw) > 0 {
		msgs, _ := node["x-messages"].(map[string]any)
		if msg, _ := msgs[kw[0]].(string); msg != "" {
			return msg
		}
	}
	if s, ok := v.(string); ok && strings.TrimSpace(s) == "" {
		if _, isType := e.ErrorKind.(*kind.Type); !isType {
			return "is required"
		}
	}
	if msg, _ := node["x-message"].(string); msg != "" {
		return msg
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Type:
		return "must be " + typeWords(k.Want)
	case *kind.Enum:
		want := make([]string, 0, len(k.Want))
		for _, w := range k.Want {
			if w != nil && w != "" {
				want = append(want, fmt.Sprint(w))
			}
		}
		return "must be one of " + strings.Join(want, ", ")
	case *kind.Const:
		return fmt.Sprintf("must be %v", k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters", k.Want)
	case *kind.Minimum:
		return "must be at least " + ratString(k.Want)
	case *kind.Maximum:
		return "must be at most " + ratString(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + ratString(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + ratString(k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must contain at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must contain at most %d items", k.Want)
	case *kind.Format:
		switch k.Want {
		case "uuid":
			return "must be a UUID"
		case "email":
			return "must be a valid e-mail address"
		case "date-time", "iso8601":
			return "must be an ISO 8601 timestamp"
		case "date":
			return "must be a date (YYYY-MM-DD)"
		}
		return "must be a valid " + k.Want
	case *kind.Pattern:
		return "has an invalid format"
	}
	return "is invalid"
}

func ratString(r interface{ FloatString(int) string }) string {
	s := r.FloatString(6)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// typeWords is "a string", "an object", "a number" for a type list.
func typeWords(want []string) string {
	words := make([]string, 0, len(want))
	for _, w := range want {
		switch w {
		case "null":
			continue
		case "object", "array", "integer":
			if w == "integer" {
				words = append(words, "an integer")
			} else {
				words = append(words, "an "+w)
			}
		default:
			words = append(words, "a "+w)
		}
	}
	if len(words) == 0 {
		return "null"
	}
	return strings.Join(words, " or ")
}

// schemaNode is the schema object at url (an absolute location in the
// document), nil when there is none; x-message (one message for any
// failure of the node) and x-messages (by keyword) are read from it.
func schemaNode(url string) map[string]any {
	_, frag, ok := strings.Cut(url, "#")
	if !ok {
		return nil
	}
	var cur any = openAPIDoc()
	for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch v := cur.(type) {
		case map[string]any:
			cur = v[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	m, _ := cur.(map[string]any)
	return m
}
