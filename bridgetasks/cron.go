package bridgetasks

import (
	"fmt"
	"strconv"
	"strings"
)

// cronField is one of the five fields of a cron expression.
type cronField struct {
	name   string
	lo, hi int
	names  []string // three-letter names of the values from lo (month, day of week)
}

var cronFields = [5]cronField{
	{name: "minute", lo: 0, hi: 59},
	{name: "hour", lo: 0, hi: 23},
	{name: "day of month", lo: 1, hi: 31},
	{name: "month", lo: 1, hi: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	// 0 and 7 are Sunday.
	{name: "day of week", lo: 0, hi: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// CheckCron checks a five-field cron expression (minute hour day-of-month
// month day-of-week) and says what is wrong ("" when nothing). It accepts
// the standard syntax — values, names (JAN-DEC, SUN-SAT), *, ranges a-b,
// steps /n, lists — which is a subset of what Temporal's schedule spec
// parses, with the same meaning; Temporal has the last word (a spec it
// refuses is 400 too). Shorthands (@daily), seconds and year fields, time
// zone prefixes and comments are refused: the time zone is its own field.
func CheckCron(expr string) string {
	fields := strings.Fields(expr)
	if len(fields) != len(cronFields) {
		return "must have 5 fields: minute hour day-of-month month day-of-week"
	}
	for i, f := range fields {
		if msg := cronFields[i].check(f); msg != "" {
			return cronFields[i].name + " field " + strconv.Quote(f) + ": " + msg
		}
	}
	return ""
}

func (c cronField) check(f string) string {
	for part := range strings.SplitSeq(f, ",") {
		base, step, hasStep := strings.Cut(part, "/")
		if hasStep {
			n, ok := cronNumber(step)
			if !ok || n < 1 || n > c.hi-c.lo+1 {
				return fmt.Sprintf("the step must be a number from 1 to %d", c.hi-c.lo+1)
			}
		}
		if base == "*" {
			continue
		}
		from, to, isRange := strings.Cut(base, "-")
		start, ok := c.value(from)
		if !ok {
			return c.valuesMessage()
		}
		if isRange {
			end, ok := c.value(to)
			if !ok {
				return c.valuesMessage()
			}
			if end < start {
				return "a range must not end before it starts"
			}
		}
	}
	return ""
}

func (c cronField) value(s string) (int, bool) {
	if n, ok := cronNumber(s); ok {
		return n, n >= c.lo && n <= c.hi
	}
	for i, name := range c.names {
		if strings.EqualFold(s, name) {
			return c.lo + i, true
		}
	}
	return 0, false
}

func (c cronField) valuesMessage() string {
	msg := fmt.Sprintf("values must be *, numbers from %d to %d", c.lo, c.hi)
	if c.names != nil {
		msg += " or names (" + strings.ToUpper(c.names[0]) + "-" + strings.ToUpper(c.names[len(c.names)-1]) + ")"
	}
	return msg + ", ranges a-b, steps /n and lists a,b"
}

// cronNumber is a number of one or two digits.
func cronNumber(s string) (int, bool) {
	if len(s) == 0 || len(s) > 2 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
