package graphapi

import (
	"context"
	"slices"

	"github.com/99designs/gqlgen/graphql"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Me resolves Query.me: the caller, from their token alone.
func (r queryResolver) Me(ctx context.Context) (*Me, error) { return &Me{id: state(ctx).id}, nil }

// Org resolves Query.org: the authorization read, then the org item only
// if the query asks for one of its fields.
func (r queryResolver) Org(ctx context.Context, id string) (*Org, error) { return r.s.getOrg(ctx, id) }

// Orgs resolves Me.orgs (GET /v1/orgs).
func (r meResolver) Orgs(ctx context.Context, obj *Me, first *int, after *string) (*MeOrgConnection, error) {
	return connection(ctx, "user:"+obj.id.UserID, "listOrgs", first, after,
		func(pr page.Request) (page.Result[tenant.Membership], error) {
			return r.s.d.Orgs.ListOrgs(ctx, obj.id, pr)
		},
		func(m tenant.Membership) *MeOrg { return &MeOrg{Membership: m} })
}

// Org resolves MeOrg.org.
func (r meOrgResolver) Org(ctx context.Context, obj *MeOrg) (*Org, error) {
	return r.s.getOrg(ctx, obj.OrgID)
}

// orgItemFields are the Org fields read from the org's item; the others
// are listings of its own.
var orgItemFields = []string{"name", "version", "createdAt", "updatedAt"}

// getOrg is the caller's view of an org (GET /v1/orgs/{orgId}).
func (s *Server) getOrg(ctx context.Context, orgID string) (*Org, error) {
	p, err := state(ctx).principal(ctx, orgID)
	if err != nil {
		return nil, err
	}
	o := &Org{Org: tenant.Org{ID: orgID}, p: p}
	for _, f := range graphql.CollectFieldsCtx(ctx, nil) {
		if slices.Contains(orgItemFields, f.Name) {
			o.Org, err = do(ctx, state(ctx), func() (tenant.Org, error) {
				got, _, err := s.d.Orgs.GetOrg(ctx, p, nil, false)
				return got, err
			})
			if err != nil {
				return nil, err
			}
			break
		}
	}
	return o, nil
}
