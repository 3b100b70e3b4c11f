// Package authz is tenantd's pure policy: who is calling (Identity, from a
// verified bearer token), their role in an org (Role, on their OrgUser
// edge), the org-level decision every transport makes once per request
// (Admit), and the one authorization matrix (Authorize, Permit). It reads
// nothing: the authorization read happens in the transports' middleware.
package authz

import (
	"github.com/tenantd/tenantd/internal/errs"
)

// Role is a role on an org or a team membership edge. Owner > Admin > Member.
type Role string

// The roles, shared by org users and team members.
const (
	Owner  Role = "owner"
	Admin  Role = "admin"
	Member Role = "member"
)

func (r Role) rank() int {
	switch r {
	case Owner:
		return 3
	case Admin:
		return 2
	case Member:
		return 1
	}
	return 0
}

// Valid reports whether r is one of the known roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AtLeast reports whether r grants at least what min grants. An unknown or
// empty role grants nothing.
func (r Role) AtLeast(min Role) bool { return r.rank() > 0 && r.rank() >= min.rank() }

// Check is the one validation of a role from input: nil, or the invalid
// field's error.
func (r Role) Check(field string) error {
	if !r.Valid() {
		return errs.InvalidField(field, "invalid_role", "must be one of owner, admin, member")
	}
	return nil
}
