// Package page carries pagination between the HTTP layer and the store: the
// store speaks in opaque start keys, which the API layers wrap in signed
// cursors bound to the tenant and the listing (Cursors), so neither the
// domain nor clients ever see key strings.
package page

import (
	"cmp"

	"github.com/tenantd/tenantd/internal/errs"
)

// Limits of a page size.
const (
	DefaultLimit = 25
	MaxLimit     = 100
)

// Request asks for up to Limit items after the position After ("" = start).
type Request struct {
	Limit int
	After string
}

// Result is one page of items and the position to continue from ("" when
// this is the last page).
type Result[T any] struct {
	Items []T
	Next  string
	// After holds, for each item, the position just after it: a start key
	// that continues the listing past that item (GraphQL's edge cursors).
	// The last item's is set even on the last page.
	After []string
}

// Check validates the limit, applying DefaultLimit when it is zero.
func (r Request) Check() (Request, error) {
	r.Limit = cmp.Or(r.Limit, DefaultLimit)
	if r.Limit < 1 || r.Limit > MaxLimit {
		return r, errs.InvalidParam("limit", "invalid_limit", "must be between 1 and %d", MaxLimit)
	}
	return r, nil
}

// Keys returns key of each item, in order: the IDs a page's join reads in
// one batch.
func Keys[T any](items []T, key func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = key(it)
	}
	return out
}
