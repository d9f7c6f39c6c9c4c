package carriers

import (
	"strings"
	"time"
	_ "time/tzdata" // pickup locations' zones, whatever the host has installed
)

// Pickup times are the pickup location's wall-clock time. The carriers
// take no time zone, so the adapters derive one from the address: the
// zone most of a US state or Canadian province lives in (split states get
// their majority zone), nil when unknown.
var regionZones = map[string]string{
	"US|AL": "America/Chicago", "US|AK": "America/Anchorage", "US|AZ": "America/Phoenix", "US|AR": "America/Chicago",
	"US|CA": "America/Los_Angeles", "US|CO": "America/Denver", "US|CT": "America/New_York", "US|DE": "America/New_York",
	"US|DC": "America/New_York", "US|FL": "America/New_York", "US|GA": "America/New_York", "US|HI": "Pacific/Honolulu",
	"US|ID": "America/Boise", "US|IL": "America/Chicago", "US|IN": "America/Indiana/Indianapolis", "US|IA": "America/Chicago",
	"US|KS": "America/Chicago", "US|KY": "America/New_York", "US|LA": "America/Chicago", "US|ME": "America/New_York",
	"US|MD": "America/New_York", "US|MA": "America/New_York", "US|MI": "America/Detroit", "US|MN": "America/Chicago",
	"US|MS": "America/Chicago", "US|MO": "America/Chicago", "US|MT": "America/Denver", "US|NE": "America/Chicago",
	"US|NV": "America/Los_Angeles", "US|NH": "America/New_York", "US|NJ": "America/New_York", "US|NM": "America/Denver",
	"US|NY": "America/New_York", "US|NC": "America/New_York", "US|ND": "America/Chicago", "US|OH": "America/New_York",
	"US|OK": "America/Chicago", "US|OR": "America/Los_Angeles", "US|PA": "America/New_York", "US|RI": "America/New_York",
	"US|SC": "America/New_York", "US|SD": "America/Chicago", "US|TN": "America/Chicago", "US|TX": "America/Chicago",
	"US|UT": "America/Denver", "US|VT": "America/New_York", "US|VA": "America/New_York", "US|WA": "America/Los_Angeles",
	"US|WV": "America/New_York", "US|WI": "America/Chicago", "US|WY": "America/Denver", "US|PR": "America/Puerto_Rico",
	"US|GU": "Pacific/Guam", "US|VI": "America/St_Thomas",
	"CA|AB": "America/Edmonton", "CA|BC": "America/Vancouver", "CA|MB": "America/Winnipeg", "CA|NB": "America/Moncton",
	"CA|NL": "America/St_Johns", "CA|NS": "America/Halifax", "CA|NT": "America/Yellowknife", "CA|NU": "America/Iqaluit",
	"CA|ON": "America/Toronto", "CA|PE": "America/Halifax", "CA|QC": "America/Toronto", "CA|SK": "America/Regina",
	"CA|YT": "America/Whitehorse",
}

// addressZone returns the time zone of an address, nil when unknown.
func addressZone(a Address) *time.Location {
	name, ok := regionZones[countryCode(a)+"|"+strings.ToUpper(stateCode(a))]
	if !ok {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil
	}
	return loc
}

// localPickupTime is the carrier's readyDateTimestamp for a pickup date
// and HH:MM time at the address: the wall-clock time with the location's
// UTC offset ("2026-03-10T09:00:00-05:00"), or without any offset when
// the zone is unknown (never a "Z", which would claim UTC). sameDay tells
// whether date is today at the location.
func localPickupTime(a Address, date, hhmm string, now time.Time) (stamp string, sameDay bool) {
	sameDay = LocalToday(a, now) == date
	loc := addressZone(a)
	if loc == nil {
		return date + "T" + hhmm + ":00", sameDay
	}
	t, err := time.ParseInLocation("2006-01-02 15:04", date+" "+hhmm, loc)
	if err != nil {
		return date + "T" + hhmm + ":00", sameDay
	}
	return t.Format("2006-01-02T15:04:05-07:00"), sameDay
}

// LocalToday is today's date (YYYY-MM-DD) at an address: its time zone's
// calendar when known (US states, Canadian provinces), else UTC's. Pickup
// dates are the pickup location's, so "in the past" and "same day" are
// judged with it.
func LocalToday(a Address, now time.Time) string {
	if loc := addressZone(a); loc != nil {
		return now.In(loc).Format("2006-01-02")
	}
	return now.UTC().Format("2006-01-02")
}
