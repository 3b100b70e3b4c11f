package graphapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/apikey"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Me resolves Query.me: the caller, from their token alone; an API key is
// no person.
func (r queryResolver) Me(ctx context.Context) (*Me, error) {
	if id := state(ctx).id; id.Key == nil {
		return &Me{id: id}, nil
	}
	return nil, apikey.ErrNotAllowed
}

// Org resolves Query.org: the authorization read, which has the org item.
func (r queryResolver) Org(ctx context.Context, id string) (*Org, error) { return r.s.getOrg(ctx, id) }

// Orgs resolves Me.orgs (GET /v1/orgs).
func (r meResolver) Orgs(ctx context.Context, obj *Me, first *int, after *string) (*MeOrgConnection, error) {
	return connection(ctx, "user:"+obj.id.UserID, "listOrgs", first, after,
		func(pr page.Request) (page.Result[tenant.OrgMembership], error) {
			return r.s.d.Orgs.ListOrgs(ctx, obj.id, pr)
		},
		func(m tenant.OrgMembership) *MeOrg { return &MeOrg{OrgMembership: m} })
}

// Org resolves MeOrg.org.
func (r meOrgResolver) Org(ctx context.Context, obj *MeOrg) (*Org, error) {
	return r.s.getOrg(ctx, obj.OrgID)
}

// getOrg is the caller's view of an org (GET /v1/orgs/{orgId}): the org
// item as the authorization read found it.
func (s *Server) getOrg(ctx context.Context, orgID string) (*Org, error) {
	p, err := state(ctx).principal(ctx, orgID)
	if err != nil {
		return nil, err
	}
	o, _, err := s.d.Orgs.GetOrg(ctx, p, state(ctx).org(orgID), false)
	if err != nil {
		return nil, err
	}
	return &Org{Org: o, p: p}, nil
}
