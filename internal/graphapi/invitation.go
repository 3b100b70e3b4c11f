package graphapi

import (
	"context"

	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/page"
)

// Invitations resolves Org.invitations (GET /v1/orgs/{orgId}/invitations).
func (r orgResolver) Invitations(ctx context.Context, obj *Org, first *int, after *string) (*InvitationConnection, error) {
	return connection(ctx, obj.p.OrgID, "listInvitations", first, after,
		func(pr page.Request) (page.Result[invitation.Invitation], error) {
			return r.s.d.Invitations.ListInvitations(ctx, obj.p, pr)
		},
		func(inv invitation.Invitation) *Invitation { return &Invitation{Invitation: inv} })
}
