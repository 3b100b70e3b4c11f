package httpapi

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/oapi-codegen/nullable"

	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
)

// handlers implements the generated strict server: decode (done by the
// generated code and the validator), call a service, encode.
type handlers struct {
	Deps
	cursors page.Cursors
	graphQL *graphapi.Server
	exports exports // export.go
}

var _ oapi.StrictServerInterface = (*handlers)(nil)

// fetchPage runs one page of a listing: it opens the request's cursor
// (bound to scope and listing), fetches the page, and signs the next one
// ("" on the last page), after the authorization decision: a stranger gets
// the same 404 with a bad cursor as with a good one.
func fetchPage[T any](h *handlers, scope, listing string, limit *int, cursor *string,
	fetch func(page.Request) (page.Result[T], error)) (page.Result[T], string, error) {
	var pr page.Request
	optional.Set(&pr.Limit, limit)
	optional.Set(&pr.After, cursor)
	after, err := h.cursors.Decode(scope, listing, pr.After)
	if err != nil {
		return page.Result[T]{}, "", err
	}
	pr.After = after
	r, err := fetch(pr)
	if err != nil {
		return page.Result[T]{}, "", err
	}
	return r, h.cursors.Encode(scope, listing, r.Next), nil
}

func etag(version int64) string { return `"` + strconv.FormatInt(version, 10) + `"` }

// mapAll converts each of ts with f: a page of domain values into its wire
// form.
func mapAll[T, U any](ts []T, f func(T) U) []U {
	out := make([]U, len(ts))
	for i, t := range ts {
		out[i] = f(t)
	}
	return out
}

// ifMatch parses an If-Match header (RFC 9110): absent, "*", or a list of
// entity tags, each naming a version (conditional.go: `"<version>-<digest>"`).
// Weak tags and tags that name no version match nothing.
func ifMatch(h *string) ifmatch.Match {
	if h == nil {
		return ifmatch.None
	}
	s := strings.TrimSpace(*h)
	if s == "*" {
		return ifmatch.Any()
	}
	var versions []int64
	for _, tag := range entityTags(s) {
		if v, ok := tagVersion(tag); ok {
			versions = append(versions, v)
		}
	}
	return ifmatch.Versions(versions...)
}

// link builds the RFC 8288 Link header for the next page, or nil.
func link(ctx context.Context, next string) *string {
	if next == "" {
		return nil
	}
	u := original(ctx).URL
	q := u.Query()
	q.Set("cursor", next)
	s := fmt.Sprintf(`<%s>; rel="next"`, (&url.URL{Path: u.Path, RawQuery: q.Encode()}).String())
	return &s
}

// strPtr is s, or nil (the field left out) when it is "".
var strPtr = optional.Of[string]

// enum converts an optional enum value of the wire to the domain's type.
func enum[T, U ~string](v *U) *T {
	if v == nil {
		return nil
	}
	t := T(*v)
	return &t
}

// cleared maps a JSON field that may be absent, null or a value to a
// patch's: nil (leave alone), the zero value (clear) or the value.
func cleared[T any](n nullable.Nullable[T]) *T {
	if !n.IsSpecified() {
		return nil
	}
	v := n.GetOrEmpty() // null: the zero value
	return &v
}
