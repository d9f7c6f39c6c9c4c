package carriers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func trimSpace(s string) string { return strings.TrimSpace(s) }

// flexFloat decodes a JSON number or numeric string; anything else
// (null, "", "string") decodes as 0, because carrier samples are not always
// well typed.
type flexFloat float64

func (f *flexFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(strings.TrimSpace(string(b)), `"`)
	v, err := strconv.ParseFloat(strings.ReplaceAll(s, ",", ""), 64)
	if err != nil {
		*f = 0
		return nil
	}
	*f = flexFloat(v)
	return nil
}

// oneOrMany decodes a JSON array or a single object (UPS returns a single
// object where an array has one element in older versions).
type oneOrMany[T any] []T

func (o *oneOrMany[T]) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" || s == "" {
		*o = nil
		return nil
	}
	if strings.HasPrefix(s, "[") {
		var v []T
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*o = v
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = []T{v}
	return nil
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// weightLB converts a weight to pounds (unit lb by default).
func weightLB(w Weight) float64 {
	if strings.EqualFold(w.Unit, UnitKG) {
		return w.Value * 2.20462
	}
	return w.Value
}

// lengthIN converts a length to inches (unit in by default).
func lengthIN(v float64, unit string) float64 {
	if strings.EqualFold(unit, UnitCM) {
		return v / 2.54
	}
	return v
}

func intPtr(v int) *int { return &v }

// transitWords maps FedEx transit enums (ONE_DAY…) to days.
var transitWords = map[string]int{
	"ONE_DAY": 1, "TWO_DAYS": 2, "THREE_DAYS": 3, "FOUR_DAYS": 4, "FIVE_DAYS": 5,
	"SIX_DAYS": 6, "SEVEN_DAYS": 7, "EIGHT_DAYS": 8, "NINE_DAYS": 9, "TEN_DAYS": 10,
	"ELEVEN_DAYS": 11, "TWELVE_DAYS": 12, "THIRTEEN_DAYS": 13, "FOURTEEN_DAYS": 14,
	"FIFTEEN_DAYS": 15, "SIXTEEN_DAYS": 16, "SEVENTEEN_DAYS": 17, "EIGHTEEN_DAYS": 18,
	"NINETEEN_DAYS": 19, "TWENTY_DAYS": 20,
}

func transitDays(word string) *int {
	if n, ok := transitWords[strings.ToUpper(strings.TrimSpace(word))]; ok {
		return intPtr(n)
	}
	if n, err := strconv.Atoi(strings.TrimSpace(word)); err == nil && n > 0 {
		return intPtr(n)
	}
	return nil
}

// parseTime reads the date/time forms carriers use; times without a zone
// are taken as UTC. nil when s is empty or unreadable.
func parseTime(s string) *time.Time {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05", "2006-01-02 15:04:05", "2006-01-02", "20060102150405", "20060102"} {
		if t, err := time.Parse(layout, s); err == nil {
			t = t.UTC()
			return &t
		}
	}
	return nil
}

// dateOrToday returns t's date (UTC), or today's when t is zero.
func dateOrToday(t time.Time, now func() time.Time) time.Time {
	if t.IsZero() {
		t = now()
	}
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

var (
	reDate = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	reHHMM = regexp.MustCompile(`^([01]\d|2[0-3]):[0-5]\d$`)
)

func validDate(s string) bool {
	if !reDate.MatchString(s) {
		return false
	}
	_, err := time.Parse("2006-01-02", s)
	return err == nil
}

// hhmm normalizes "8:30 A.M.", "10:30:00", "1030" style times to "HH:MM";
// it returns s unchanged when it cannot.
func hhmm(s string) string {
	raw := strings.TrimSpace(s)
	if raw == "" {
		return ""
	}
	u := strings.ToUpper(strings.ReplaceAll(raw, ".", ""))
	pm := strings.HasSuffix(u, "PM")
	am := strings.HasSuffix(u, "AM")
	u = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(u, "PM"), "AM"))
	var h, m int
	switch {
	case strings.Contains(u, ":"):
		parts := strings.Split(u, ":")
		var err1, err2 error
		h, err1 = strconv.Atoi(parts[0])
		m, err2 = strconv.Atoi(parts[1])
		if err1 != nil || err2 != nil {
			return raw
		}
	case len(u) == 4 || len(u) == 6:
		var err1, err2 error
		h, err1 = strconv.Atoi(u[:2])
		m, err2 = strconv.Atoi(u[2:4])
		if err1 != nil || err2 != nil {
			return raw
		}
	default:
		return raw
	}
	if pm && h < 12 {
		h += 12
	}
	if am && h == 12 {
		h = 0
	}
	if h > 23 || m > 59 {
		return raw
	}
	return fmt.Sprintf("%02d:%02d", h, m)
}

// countryCode returns the address's two-letter country code (default US).
func countryCode(a Address) string {
	if c := strings.ToUpper(trimSpace(a.CountryCode)); c != "" {
		return c
	}
	if c := strings.ToUpper(trimSpace(a.Country)); len(c) == 2 {
		return c
	}
	return "US"
}

// stateCode returns the address's state/province code.
func stateCode(a Address) string {
	if s := trimSpace(a.ProvinceCode); s != "" {
		return strings.ToUpper(s)
	}
	if s := trimSpace(a.Province); len(s) == 2 {
		return strings.ToUpper(s)
	}
	return trimSpace(a.Province)
}

// streetLines returns the non-empty address lines.
func streetLines(a Address) []string {
	var out []string
	for _, l := range []string{a.Address1, a.Address2} {
		if l = trimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// digest returns a short stable hex digest of parts.
func digest(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:20]
}

// stripKeys returns raw with the values of the named keys (at any depth)
// replaced by "(omitted)", to keep label images out of stored responses.
func stripKeys(raw []byte, keys ...string) json.RawMessage {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil
	}
	drop := map[string]bool{}
	for _, k := range keys {
		drop[k] = true
	}
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				if drop[k] {
					if s, ok := val.(string); ok && s != "" {
						t[k] = "(omitted)"
					}
					continue
				}
				walk(val)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// validateShipment checks the parts of a rate or label request every
// carrier needs.
func validateShipment(carrier string, from, to Address, pkgs []Package) error {
	var problems []string
	for _, x := range []struct {
		name string
		a    Address
	}{{"shipFrom", from}, {"shipTo", to}} {
		if trimSpace(x.a.Zip) == "" {
			problems = append(problems, x.name+".zip is required")
		}
		if cc := countryCode(x.a); len(cc) != 2 {
			problems = append(problems, x.name+".countryCode must be two letters")
		}
	}
	if len(pkgs) == 0 {
		problems = append(problems, "at least one package is required")
	}
	for i, p := range pkgs {
		if p.Weight.Value <= 0 || math.IsNaN(p.Weight.Value) || math.IsInf(p.Weight.Value, 0) {
			problems = append(problems, fmt.Sprintf("packages[%d].weight.value must be positive", i))
		}
		if u := strings.ToLower(p.Weight.Unit); u != "" && u != UnitLB && u != UnitKG {
			problems = append(problems, fmt.Sprintf("packages[%d].weight.unit must be lb or kg", i))
		}
		if u := strings.ToLower(p.DimensionUnit); u != "" && u != UnitIN && u != UnitCM {
			problems = append(problems, fmt.Sprintf("packages[%d].dimensionUnit must be in or cm", i))
		}
		if p.Length < 0 || p.Width < 0 || p.Height < 0 {
			problems = append(problems, fmt.Sprintf("packages[%d] dimensions must not be negative", i))
		}
	}
	if len(problems) > 0 {
		return invalidRequest(carrier, strings.Join(problems, "; "))
	}
	return nil
}

func hasDims(p Package) bool { return p.Length > 0 && p.Width > 0 && p.Height > 0 }

// dedupe returns the distinct trimmed non-empty numbers, in first-seen order.
func dedupe(nums []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range nums {
		n = trimSpace(n)
		if n == "" || seen[n] {
			continue
		}
		seen[n] = true
		out = append(out, n)
	}
	return out
}

// credentialErrors checks required string credentials.
func requireStrings(creds map[string]any, fields ...string) []FieldError {
	var errs []FieldError
	for _, f := range fields {
		v, ok := creds[f]
		if !ok || v == nil {
			errs = append(errs, FieldError{Field: f, Message: "is required"})
			continue
		}
		s, isStr := v.(string)
		if !isStr {
			errs = append(errs, FieldError{Field: f, Message: "must be a string"})
			continue
		}
		if trimSpace(s) == "" {
			errs = append(errs, FieldError{Field: f, Message: "is required"})
		}
	}
	return errs
}
