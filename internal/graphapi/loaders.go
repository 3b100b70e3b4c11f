package graphapi

import (
	"context"
	"sync"

	"github.com/vikstrous/dataloadgen"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// ref names an item of an org by its ID.
type ref struct{ OrgID, ID string }

// commentsKey is one page of one ticket's comments.
type commentsKey struct {
	OrgID, TicketID string
	Page            page.Request
}

// loaders are one request's DataLoaders: each collects the lookups that
// the resolvers of one nesting level make at once and serves them with one
// DynamoDB operation per org (BatchGetItem, 100 keys a call), or, for
// comments, one round of concurrent Queries. Their caches last the request.
type loaders struct {
	users    *dataloadgen.Loader[ref, *tenant.User]
	teams    *dataloadgen.Loader[ref, *membership.Team]
	comments *dataloadgen.Loader[commentsKey, page.Result[ticket.Comment]]
}

// batchLoader loads an org's items by ID with get, one batch per org, as
// the caller authorized in that org.
func batchLoader[V any](rs *requestState, wait dataloadgen.Option,
	get func(context.Context, authz.Principal, []string) (map[string]V, error)) *dataloadgen.Loader[ref, *V] {
	return dataloadgen.NewLoader(func(ctx context.Context, keys []ref) ([]*V, []error) {
		return byOrg(ctx, keys, func(ctx context.Context, orgID string, ids []string) (map[string]*V, error) {
			p, err := rs.principal(ctx, orgID)
			if err != nil {
				return nil, err
			}
			got, err := do(ctx, rs, func() (map[string]V, error) { return get(ctx, p, ids) })
			return pointers(got), err
		})
	}, wait)
}

func newLoaders(rs *requestState) *loaders {
	wait := dataloadgen.WithWait(rs.s.d.Limits.BatchWait)
	return &loaders{
		users: batchLoader(rs, wait, func(ctx context.Context, p authz.Principal, ids []string) (map[string]tenant.User, error) {
			return rs.s.d.Orgs.BatchGetOrgUsers(ctx, p, ids)
		}),
		teams: batchLoader(rs, wait, func(ctx context.Context, p authz.Principal, ids []string) (map[string]membership.Team, error) {
			return rs.s.d.Teams.BatchGetTeams(ctx, p, ids)
		}),
		comments: dataloadgen.NewLoader(func(ctx context.Context, keys []commentsKey) ([]page.Result[ticket.Comment], []error) {
			out, errs := make([]page.Result[ticket.Comment], len(keys)), make([]error, len(keys))
			var wg sync.WaitGroup
			for i, k := range keys { // concurrently, within the request's bound (do)
				wg.Go(func() {
					p, err := rs.principal(ctx, k.OrgID)
					if err == nil {
						out[i], err = do(ctx, rs, func() (page.Result[ticket.Comment], error) {
							return rs.s.d.Tickets.ListComments(ctx, p, k.TicketID, k.Page)
						})
					}
					errs[i] = err
				})
			}
			wg.Wait()
			return out, errs
		}, wait),
	}
}

// byOrg serves a batch of refs with one read per org (a request reads few
// orgs; each org's read is one BatchGetItem of its distinct IDs). A ref the
// read did not return is nil: the item does not exist.
func byOrg[V any](ctx context.Context, keys []ref,
	read func(ctx context.Context, orgID string, ids []string) (map[string]*V, error)) ([]*V, []error) {
	idsOf := map[string][]string{}
	for _, k := range keys {
		idsOf[k.OrgID] = append(idsOf[k.OrgID], k.ID)
	}
	type result struct {
		got map[string]*V
		err error
	}
	results := make(map[string]*result, len(idsOf))
	var wg sync.WaitGroup
	for org, ids := range idsOf { // concurrently
		r := &result{}
		results[org] = r
		wg.Go(func() { r.got, r.err = read(ctx, org, ids) })
	}
	wg.Wait()
	out, errs := make([]*V, len(keys)), make([]error, len(keys))
	for i, k := range keys {
		out[i], errs[i] = results[k.OrgID].got[k.ID], results[k.OrgID].err
	}
	return out, errs
}

func pointers[K comparable, V any](m map[K]V) map[K]*V {
	out := make(map[K]*V, len(m))
	for k, v := range m {
		out[k] = &v
	}
	return out
}
