package api

import (
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"unicode/utf8"
)

// validator collects field errors so one response names every problem.
type validator struct {
	details []FieldError
}

func (v *validator) add(field, msg string) {
	v.details = append(v.details, FieldError{Field: field, Message: msg})
}

// err is nil when nothing was added.
func (v *validator) err() error {
	if len(v.details) == 0 {
		return nil
	}
	return errValidation(v.details...)
}

func (v *validator) ok() bool { return len(v.details) == 0 }

// required checks that a string pointer is present and not blank.
func (v *validator) required(field string, s *string) bool {
	if s == nil || strings.TrimSpace(*s) == "" {
		v.add(field, "is required")
		return false
	}
	return true
}

// length checks a string's length in characters.
func (v *validator) length(field, s string, lo, hi int) {
	n := utf8.RuneCountInString(s)
	switch {
	case n < lo && lo == 1:
		v.add(field, "is required")
	case n < lo || n > hi:
		v.add(field, fmt.Sprintf("must be %d-%d characters", lo, hi))
	}
}

// maxLen checks an optional string's length.
func (v *validator) maxLen(field, s string, hi int) {
	if utf8.RuneCountInString(s) > hi {
		v.add(field, fmt.Sprintf("must be at most %d characters", hi))
	}
}

// oneOf checks s against allowed values.
func (v *validator) oneOf(field, s string, allowed ...string) bool {
	if !slices.Contains(allowed, s) {
		v.add(field, "must be one of "+strings.Join(allowed, ", "))
		return false
	}
	return true
}

// email checks an e-mail address.
func (v *validator) email(field, s string) bool {
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || !strings.Contains(s, "@") || len(s) > 254 {
		v.add(field, "must be a valid e-mail address")
		return false
	}
	return true
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
