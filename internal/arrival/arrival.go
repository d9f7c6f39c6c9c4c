// Package arrival carries when a request arrived in its context: the API's
// outermost middleware sets it, and the caches that a listener keeps fresh
// (store.Listener) serve a request from memory only once they have heard of
// every change committed before it.
package arrival

import (
	"context"
	"time"
)

type key struct{}

// With is ctx of a request that arrived at t.
func With(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, key{}, t)
}

// Of is when the request of ctx arrived (false: ctx does not say).
func Of(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(key{}).(time.Time)
	return t, ok
}
