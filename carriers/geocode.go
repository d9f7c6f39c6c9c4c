package carriers

import "strings"

// Carrier scans carry no coordinates, so the adapters fill in tracking
// coordinates from this coarse built-in gazetteer: a city's coordinates
// when the city is one of the larger US cities listed, else the centroid of
// its US state, else none (a few Canadian cities are known too).

type latLng struct{ lat, lng float64 }

var usCities = map[string]latLng{
	"NEW YORK|NY": {40.7506, -73.9972}, "LOS ANGELES|CA": {34.0614, -118.2385},
	"CHICAGO|IL": {41.8853, -87.6229}, "HOUSTON|TX": {29.7569, -95.3625},
	"PHOENIX|AZ": {33.4515, -112.0685}, "PHILADELPHIA|PA": {39.9529, -75.1741},
	"SAN ANTONIO|TX": {29.4237, -98.4925}, "SAN DIEGO|CA": {32.7194, -117.1628},
	"DALLAS|TX": {32.7876, -96.7994}, "SAN JOSE|CA": {37.3337, -121.8907},
	"AUSTIN|TX": {30.2713, -97.7426}, "JACKSONVILLE|FL": {30.3297, -81.6548},
	"COLUMBUS|OH": {39.9653, -83.0044}, "CHARLOTTE|NC": {35.2285, -80.8423},
	"INDIANAPOLIS|IN": {39.7716, -86.1568}, "SAN FRANCISCO|CA": {37.7726, -122.4099},
	"SEATTLE|WA": {47.6114, -122.3305}, "DENVER|CO": {39.7527, -104.9992},
	"NASHVILLE|TN": {36.1502, -86.7887}, "BOSTON|MA": {42.3576, -71.0643},
	"PORTLAND|OR": {45.5187, -122.6774}, "LAS VEGAS|NV": {36.1720, -115.1224},
	"MEMPHIS|TN": {35.1441, -90.0508}, "LOUISVILLE|KY": {38.2527, -85.7501},
	"BALTIMORE|MD": {39.2963, -76.6079}, "MILWAUKEE|WI": {43.0433, -87.8984},
	"ATLANTA|GA": {33.7527, -84.3917}, "MIAMI|FL": {25.7676, -80.2041},
	"MINNEAPOLIS|MN": {44.9833, -93.2703}, "SALT LAKE CITY|UT": {40.7563, -111.9002},
	"KANSAS CITY|MO": {39.1025, -94.5867}, "PITTSBURGH|PA": {40.4469, -79.9925},
	"BROOKLYN|NY": {40.6928, -73.9903},
	// A few Canadian cities (keyed by province).
	"TORONTO|ON": {43.6532, -79.3832}, "VANCOUVER|BC": {49.2827, -123.1207}, "MONTREAL|QC": {45.5019, -73.5674},
}

var usStates = map[string]latLng{
	"AL": {32.806671, -86.791130}, "AK": {61.370716, -152.404419}, "AZ": {33.729759, -111.431221},
	"AR": {34.969704, -92.373123}, "CA": {36.116203, -119.681564}, "CO": {39.059811, -105.311104},
	"CT": {41.597782, -72.755371}, "DE": {39.318523, -75.507141}, "DC": {38.897438, -77.026817},
	"FL": {27.766279, -81.686783}, "GA": {33.040619, -83.643074}, "HI": {21.094318, -157.498337},
	"ID": {44.240459, -114.478828}, "IL": {40.349457, -88.986137}, "IN": {39.849426, -86.258278},
	"IA": {42.011539, -93.210526}, "KS": {38.526600, -96.726486}, "KY": {37.668140, -84.670067},
	"LA": {31.169546, -91.867805}, "ME": {44.693947, -69.381927}, "MD": {39.063946, -76.802101},
	"MA": {42.230171, -71.530106}, "MI": {43.326618, -84.536095}, "MN": {45.694454, -93.900192},
	"MS": {32.741646, -89.678696}, "MO": {38.456085, -92.288368}, "MT": {46.921925, -110.454353},
	"NE": {41.125370, -98.268082}, "NV": {38.313515, -117.055374}, "NH": {43.452492, -71.563896},
	"NJ": {40.298904, -74.521011}, "NM": {34.840515, -106.248482}, "NY": {42.165726, -74.948051},
	"NC": {35.630066, -79.806419}, "ND": {47.528912, -99.784012}, "OH": {40.388783, -82.764915},
	"OK": {35.565342, -96.928917}, "OR": {44.572021, -122.070938}, "PA": {40.590752, -77.209755},
	"RI": {41.680893, -71.511780}, "SC": {33.856892, -80.945007}, "SD": {44.299782, -99.438828},
	"TN": {35.747845, -86.692345}, "TX": {31.054487, -97.563461}, "UT": {40.150032, -111.862434},
	"VT": {44.045876, -72.710686}, "VA": {37.769337, -78.169968}, "WA": {47.400902, -121.490494},
	"WV": {38.491226, -80.954453}, "WI": {44.268543, -89.616508}, "WY": {42.755966, -107.302490},
	"PR": {18.220833, -66.590149},
}

// Geocode returns coarse coordinates of a place from the built-in
// gazetteer: the city's when it is one of the listed cities, else (US only)
// its state's centroid; ok is false when the place is unknown or outside
// the US and Canada. state is a two-letter state or province code;
// countryCode an ISO 3166-1 alpha-2 code ("" means US).
func Geocode(city, state, countryCode string) (lat, lng float64, ok bool) {
	la, ln := geocode(city, state, countryCode)
	if la == nil || ln == nil {
		return 0, 0, false
	}
	return *la, *ln, true
}

// geocode returns coarse coordinates for a place, or nils.
func geocode(city, state, country string) (*float64, *float64) {
	country = strings.ToUpper(strings.TrimSpace(country))
	if country != "" && country != "US" && country != "CA" {
		return nil, nil
	}
	state = strings.ToUpper(strings.TrimSpace(state))
	city = strings.ToUpper(strings.Join(strings.Fields(city), " "))
	if p, ok := usCities[city+"|"+state]; ok {
		lat, lng := p.lat, p.lng
		return &lat, &lng
	}
	if country == "CA" {
		return nil, nil
	}
	if p, ok := usStates[state]; ok {
		lat, lng := p.lat, p.lng
		return &lat, &lng
	}
	return nil, nil
}

// withCoordinates fills in an address's coordinates when missing.
func withCoordinates(a *Address) *Address {
	if a == nil || (a.Latitude != nil && a.Longitude != nil) {
		return a
	}
	a.Latitude, a.Longitude = geocode(a.City, stateCode(*a), countryCode(*a))
	return a
}
