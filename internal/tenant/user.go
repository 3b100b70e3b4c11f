package tenant

import (
	"context"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/optional"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// User is an identity's membership in one org: the role lives on this edge,
// so the same person can be an owner in one org and a member in another.
type User struct {
	OrgID     string
	UserID    string
	Email     string
	Name      string
	Role      authz.Role
	JoinedAt  time.Time
	UpdatedAt time.Time
	Version   int64
	// AddedBy is the ID the idempotent request that added the user gave it,
	// if any: a retry of that request finds the user, not user_exists.
	AddedBy string
}

// UserPatch is a partial update of an OrgUser; nil fields stay as they are.
type UserPatch struct {
	Name  *string
	Email *string
	Role  *authz.Role
}

// NewUser is an existing identity being added to an org.
type NewUser struct {
	UserID, Email, Name string
	Role                authz.Role
	// ResourceID, when set, is an idempotent request's ID: if the user was
	// added by it already, they are returned as is.
	ResourceID string
}

// Validate checks a user's fields (the rules, not the shapes the API
// schema already checks: an invitation's acceptance builds a User too).
func Validate(u User) error {
	if err := ids.User("userId", u.UserID); err != nil {
		return err
	}
	if authz.KeyActor(u.UserID) {
		return errs.InvalidField("userId", "invalid_id", "must not start with %q: API keys act under such ids", authz.KeyActorPrefix)
	}
	if err := validate.Email("email", u.Email, MaxEmailLen); err != nil {
		return err
	}
	if err := validate.Name("name", u.Name, MaxNameLen); err != nil {
		return err
	}
	return u.Role.Check("role")
}

// NormalizeEmail is the form an email is compared and claimed in. Only ASCII
// letters are folded: strings.ToLower would also turn the Kelvin sign U+212A
// into "k", so that "\u212aate@example.com" would pass for kate@example.com.
func NormalizeEmail(s string) string {
	b := []byte(strings.TrimSpace(s))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// ListOrgUsers pages through the org's users.
func (s *Service) ListOrgUsers(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[User], error) {
	if err := authz.Authorize(p, authz.UserRead, authz.Facts{}); err != nil {
		return page.Result[User]{}, err
	}
	return s.store.ListOrgUsers(ctx, p.OrgID, pr)
}

// GetOrgUser returns one of the org's users (loaded: as the authorization
// read loaded it; nil: read it).
func (s *Service) GetOrgUser(ctx context.Context, p authz.Principal, userID string, loaded *User) (User, error) {
	if err := authz.Authorize(p, authz.UserRead, authz.Facts{}); err != nil {
		return User{}, err
	}
	if loaded != nil {
		return *loaded, nil
	}
	return s.store.GetOrgUser(ctx, p.OrgID, userID)
}

// BatchGetOrgUsers reads many of the org's users at once (one BatchGetItem
// per 100 distinct IDs); users not in the org are left out of the map.
func (s *Service) BatchGetOrgUsers(ctx context.Context, p authz.Principal, userIDs []string) (map[string]User, error) {
	if err := authz.Authorize(p, authz.UserRead, authz.Facts{}); err != nil {
		return nil, err
	}
	return s.store.BatchGetOrgUsers(ctx, p.OrgID, userIDs)
}

// AddOrgUser adds an existing identity to the org (admin+; owner to add an
// owner).
func (s *Service) AddOrgUser(ctx context.Context, p authz.Principal, in NewUser) (User, error) {
	g, err := authz.Permit(p, authz.UserAdd, authz.Facts{OwnerRole: in.Role == authz.Owner})
	if err != nil {
		return User{}, err
	}
	now := s.now()
	u := User{OrgID: p.OrgID, UserID: in.UserID, Email: in.Email, Name: in.Name, Role: in.Role,
		JoinedAt: now, UpdatedAt: now, Version: 1, AddedBy: in.ResourceID}
	if err := Validate(u); err != nil {
		return User{}, err
	}
	ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "user.add", "user", u.UserID, now, audit.Diff(
		audit.F("email", nil, u.Email), audit.F("name", nil, u.Name), audit.F("role", nil, string(u.Role))))
	if err := s.store.AddOrgUser(ctx, u, ev); err != nil {
		if errs.CodeOf(err) == "user_exists" && in.ResourceID != "" {
			if cur, gerr := s.store.GetOrgUser(ctx, p.OrgID, u.UserID); gerr == nil && cur.AddedBy == in.ResourceID {
				return cur, nil
			}
		}
		return User{}, err
	}
	return u, nil
}

// UpdateOrgUser changes a user's name, email or role. Only an owner grants
// the owner role, or changes anything of an owner. loaded is the user as the
// authorization read loaded them (nil: read them).
func (s *Service) UpdateOrgUser(ctx context.Context, p authz.Principal, userID string, loaded *User, patch UserPatch, ifMatch ifmatch.Match) (User, error) {
	if patch.Name == nil && patch.Email == nil && patch.Role == nil {
		return User{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	self, profileOnly := userID == p.UserID, patch.Email == nil && patch.Role == nil
	if err := authz.Authorize(p, authz.UserUpdate, authz.Facts{Self: self, ProfileOnly: profileOnly}); err != nil {
		return User{}, err
	}
	read := func(ctx context.Context) (User, error) { return s.store.GetOrgUser(ctx, p.OrgID, userID) }
	return ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev User) (User, error) {
		next := prev
		optional.Set(&next.Name, patch.Name)
		optional.Set(&next.Email, patch.Email)
		optional.Set(&next.Role, patch.Role)
		touchesOwner := prev.Role == authz.Owner || next.Role == authz.Owner
		g, err := authz.Permit(p, authz.UserUpdate,
			authz.Facts{Self: self, ProfileOnly: profileOnly, OwnerRole: touchesOwner && !(self && profileOnly)})
		if err != nil {
			return User{}, err
		}
		if err := ifMatch.Check(prev.Version); err != nil {
			return User{}, err
		}
		if err := Validate(next); err != nil {
			return User{}, err
		}
		next.Version, next.UpdatedAt = prev.Version+1, s.now()
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "user.update", "user", userID, next.UpdatedAt, audit.Diff(
			audit.F("email", prev.Email, next.Email), audit.F("name", prev.Name, next.Name),
			audit.F("role", string(prev.Role), string(next.Role))))
		return audit.Update(ctx, s.store.UpdateOrgUser, prev, next, ev)
	})
}

// RemoveOrgUser removes a user from the org with their team memberships.
// Admins remove anyone but owners, owners anyone, members themselves; the
// last owner stays. loaded is the user as the authorization read loaded
// them (nil: read them).
func (s *Service) RemoveOrgUser(ctx context.Context, p authz.Principal, userID string, loaded *User, ifMatch ifmatch.Match) error {
	self := userID == p.UserID
	if err := authz.Authorize(p, authz.UserRemove, authz.Facts{Self: self}); err != nil {
		return err
	}
	read := func(ctx context.Context) (User, error) { return s.store.GetOrgUser(ctx, p.OrgID, userID) }
	_, err := ifmatch.Retry(ctx, ifMatch, loaded, read, func(u User) (struct{}, error) {
		g, err := authz.Permit(p, authz.UserRemove, authz.Facts{Self: self, OwnerRole: u.Role == authz.Owner})
		if err != nil {
			return struct{}{}, err
		}
		if err := ifMatch.Check(u.Version); err != nil {
			return struct{}{}, err
		}
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "user.remove", "user", userID, s.now(), audit.Diff(
			audit.F("email", u.Email, nil), audit.F("role", string(u.Role), nil)))
		return struct{}{}, s.store.RemoveOrgUser(ctx, u, ev)
	})
	return err
}
