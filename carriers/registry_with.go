package carriers

// With returns a registry holding r's adapters with cs in place of the
// adapters of the same codes (added, for a code r lacks); r is unchanged.
// It plugs in an adapter the package does not build itself: a carrier
// product the built-in adapters do not speak, or a test double (package
// carrierstest) standing in for a capability no real carrier offers yet.
func (r *Registry) With(cs ...Carrier) *Registry {
	out := &Registry{carriers: make(map[string]Carrier, len(r.carriers)+len(cs))}
	for code, c := range r.carriers {
		out.carriers[code] = c
	}
	for _, c := range cs {
		out.carriers[c.Code()] = c
	}
	return out
}
