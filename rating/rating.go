// Package rating quotes a shipment with several carrier accounts at once:
// one concurrent adapter call per account, each under its own deadline, so
// that the whole fan-out costs about as much as the slowest carrier and a
// carrier that hangs costs at most the deadline. The rates API uses it now;
// rate comparisons can use it for their per-item quotes.
package rating

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fos-dev/fos/carriers"
)

// DefaultTimeout is the per-carrier deadline used when Quote is given none.
const DefaultTimeout = 10 * time.Second

// ErrTimeout: the carrier did not answer within the per-carrier deadline.
var ErrTimeout = errors.New("rating: carrier did not answer in time")

// Result is one account's answer. Exactly one of Quotes and Err is
// meaningful: Err nil means the carrier answered (Quotes may then be
// empty, e.g. no service matched), Quotes is never nil on success.
type Result struct {
	AccountID string
	Carrier   string
	Quotes    []carriers.Quote
	// Err is the adapter's error (usually a *carriers.Error), an error
	// matching ErrTimeout, or a setup problem (unknown carrier code).
	Err error
	// Duration is how long the call took.
	Duration time.Duration
}

// Quote rates req with every account concurrently and returns one Result
// per account, in the order of accounts. Each call runs under its own
// timeout (DefaultTimeout when timeout <= 0) derived from ctx; cancelling
// ctx stops them all. Accounts hold decrypted credentials: they are never
// logged or put into an error here.
//
// Service codes are carrier specific. When req.ServiceType is set and the
// accounts span more than one carrier, every carrier is asked for all its
// services and only the quotes of that service are kept (a carrier without
// it answers no quotes instead of an error); with one carrier, the code is
// sent to the carrier, which refuses an unknown one.
func Quote(ctx context.Context, reg *carriers.Registry, accounts []carriers.Account, req carriers.RateRequest, timeout time.Duration) []Result {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	out := make([]Result, len(accounts))
	filter := ""
	if req.ServiceType != "" && spansCarriers(accounts) {
		filter, req.ServiceType = req.ServiceType, ""
	}
	var wg sync.WaitGroup
	for i, acct := range accounts {
		out[i] = Result{AccountID: acct.ID, Carrier: acct.Carrier}
		wg.Add(1)
		go func(res *Result, acct carriers.Account) {
			defer wg.Done()
			start := time.Now()
			res.Quotes, res.Err = quoteOne(ctx, reg, acct, req, timeout)
			res.Duration = time.Since(start)
			if res.Err != nil {
				res.Quotes = nil
				return
			}
			if filter != "" {
				kept := make([]carriers.Quote, 0, 1)
				for _, q := range res.Quotes {
					if q.ServiceType == filter {
						kept = append(kept, q)
					}
				}
				res.Quotes = kept
			}
			if res.Quotes == nil {
				res.Quotes = []carriers.Quote{}
			}
		}(&out[i], acct)
	}
	wg.Wait()
	return out
}

// quoteOne is one adapter call under its deadline. A panicking adapter
// fails its own call, not the process.
func quoteOne(ctx context.Context, reg *carriers.Registry, acct carriers.Account, req carriers.RateRequest, timeout time.Duration) (quotes []carriers.Quote, err error) {
	defer func() {
		if p := recover(); p != nil {
			quotes, err = nil, fmt.Errorf("rating: the %s adapter failed unexpectedly", acct.Carrier)
		}
	}()
	if reg == nil {
		return nil, errors.New("rating: no carrier registry configured")
	}
	c, err := reg.Get(acct.Carrier)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	quotes, err = c.Rate(callCtx, acct, req)
	if err != nil && ctx.Err() == nil && errors.Is(callCtx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("%w: %s did not answer within %s", ErrTimeout, acct.Carrier, timeout)
	}
	return quotes, err
}

func spansCarriers(accounts []carriers.Account) bool {
	if len(accounts) < 2 {
		return false
	}
	for _, a := range accounts[1:] {
		if a.Carrier != accounts[0].Carrier {
			return true
		}
	}
	return false
}

// Failed reports whether every result failed (false for no results).
func Failed(results []Result) bool {
	for _, r := range results {
		if r.Err == nil {
			return false
		}
	}
	return len(results) > 0
}
