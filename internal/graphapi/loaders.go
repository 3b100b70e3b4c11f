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

// loaders are one request's DataLoaders: each serves the lookups of one
// nesting level with one DynamoDB operation per org, or, for comments, one
// round of concurrent Queries.
type loaders struct {
	users    *dataloadgen.Loader[ref, *tenant.User]
	teams    *dataloadgen.Loader[ref, *membership.Team]
	comments *dataloadgen.Loader[commentsKey, page.Result[ticket.Comment]]
}

// batchLoader loads items by ID with get, as the caller authorized in
// their org: one read per org of the batch, concurrently. A ref the read
// did not return is nil: the item does not exist.
func batchLoader[V any](rs *requestState, wait dataloadgen.Option,
	get func(context.Context, authz.Principal, []string) (map[string]V, error)) *dataloadgen.Loader[ref, *V] {
	return dataloadgen.NewLoader(func(ctx context.Context, keys []ref) ([]*V, []error) {
		idsOf := map[string][]string{}
		for _, k := range keys {
			idsOf[k.OrgID] = append(idsOf[k.OrgID], k.ID)
		}
		type result struct {
			got map[string]V
			err error
		}
		results := make(map[string]*result, len(idsOf))
		var wg sync.WaitGroup
		for org, ids := range idsOf {
			r := &result{}
			results[org] = r
			wg.Go(func() {
				p, err := rs.principal(ctx, org)
				if err == nil {
					r.got, err = do(ctx, rs, func() (map[string]V, error) { return get(ctx, p, ids) })
				}
				r.err = err
			})
		}
		wg.Wait()
		out, errs := make([]*V, len(keys)), make([]error, len(keys))
		for i, k := range keys {
			r := results[k.OrgID]
			if v, ok := r.got[k.ID]; ok {
				out[i] = &v
			}
			errs[i] = r.err
		}
		return out, errs
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
