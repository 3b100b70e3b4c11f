package httpapi

import (
	"encoding/json"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
)

// replayActions are the org-scoped creating POSTs an Idempotency-Key can
// replay, with the action each is authorized as (the handlers' services
// decide the same).
var replayActions = map[string]authz.Action{
	"/v1/orgs/:orgId/users":                      authz.UserAdd,
	"/v1/orgs/:orgId/teams":                      authz.TeamCreate,
	"/v1/orgs/:orgId/tickets":                    authz.TicketCreate,
	"/v1/orgs/:orgId/tickets/:ticketId/comments": authz.CommentCreate,
	"/v1/orgs/:orgId/invitations":                authz.InvitationManage,
	"/v1/orgs/:orgId/webhooks":                   authz.WebhookManage,
}

// authorizeReplay decides a replay of a kept response to an org's route
// like a new request: the caller's role now must still allow it, body
// included (granting an owner role takes an owner). A route without a rule
// is refused.
func authorizeReplay(p authz.Principal, route string, body []byte) error {
	a, ok := replayActions[route]
	if !ok {
		return errs.E(errs.Forbidden, "forbidden", "this request cannot be replayed")
	}
	var in struct {
		Role string `json:"role"`
	}
	_ = json.Unmarshal(body, &in) // the body was validated when first sent
	return authz.Authorize(p, a, authz.Facts{OwnerRole: in.Role == string(authz.Owner)})
}
