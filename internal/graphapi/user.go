package graphapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/tenant"
)

// Users resolves Org.users (GET /v1/orgs/{orgId}/users).
func (r orgResolver) Users(ctx context.Context, obj *Org, first *int, after *string) (*OrgUserConnection, error) {
	return connection(ctx, obj.p.OrgID, "listOrgUsers", first, after,
		func(pr page.Request) (page.Result[tenant.User], error) {
			return r.s.d.Orgs.ListOrgUsers(ctx, obj.p, pr)
		},
		func(u tenant.User) *OrgUser { return &OrgUser{User: u, p: obj.p} })
}

// User resolves Org.user (GET /v1/orgs/{orgId}/users/{userId}).
func (r orgResolver) User(ctx context.Context, obj *Org, id string) (*OrgUser, error) {
	u, err := do(ctx, state(ctx), func() (tenant.User, error) { return r.s.d.Orgs.GetOrgUser(ctx, obj.p, id, nil) })
	if err != nil {
		return nil, err
	}
	return &OrgUser{User: u, p: obj.p}, nil
}

// orgUser loads one of the org's users through the request's user loader:
// the users a level asks for are read together. nil: not in the org.
func orgUser(ctx context.Context, p authz.Principal, userID string) (*OrgUser, error) {
	if userID == "" {
		return nil, nil
	}
	u, err := state(ctx).loaders.users.Load(ctx, ref{OrgID: p.OrgID, ID: userID})
	if err != nil || u == nil {
		return nil, err
	}
	return &OrgUser{User: *u, p: p}, nil
}
