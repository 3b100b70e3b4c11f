package tenant

import (
	"context"
	"time"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/deletion"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/validate"
)

// Service applies the rules of orgs and their users on top of a Storer.
type Service struct {
	store     Storer
	deletions *deletion.Worker
	ids       *ids.Generator
	now       clock.Clock
}

// NewService returns a Service over s whose offboardings run on deletions;
// now may be nil for the system clock.
func NewService(s Storer, deletions *deletion.Worker, now clock.Clock) *Service {
	now = clock.Or(now)
	return &Service{store: s, deletions: deletions, ids: ids.NewGenerator(now), now: now}
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
	// ResourceID, when set, is an idempotent request's ID (see
	// idempotency.Record.ResourceID): if the user exists already and was
	// added by it, the add happened, and the user is returned as is.
	ResourceID string
}

// Validate checks a user's fields (the rules, not the shapes the API
// schema already checks: an invitation's acceptance builds a User too).
func Validate(u User) error {
	if err := ids.User("userId", u.UserID); err != nil {
		return err
	}
	if err := validate.Email("email", u.Email, MaxEmailLen); err != nil {
		return err
	}
	if err := validate.Name("name", u.Name, MaxNameLen); err != nil {
		return err
	}
	if !u.Role.Valid() {
		return errs.InvalidField("role", "invalid_role", "must be one of owner, admin, member")
	}
	return nil
}

// event is the audit event of a change by actor, at at.
func (s *Service) event(ctx context.Context, actor audit.Actor, action, targetType, targetID string, at time.Time, changes []audit.Change) audit.Event {
	return audit.NewEvent(ctx, s.ids.NewAt(at), actor, action, audit.Target{Type: targetType, ID: targetID}, at, changes)
}

// CreateOrg creates an org whose first owner is the caller. The owner's
// email and name come from the token's claims.
//
// orgID, when set, is the org's ID (an idempotent request's, see
// idempotency.Record.ResourceID); otherwise one is minted. If the caller
// already owns an org with it, it was created already: it is returned as is.
func (s *Service) CreateOrg(ctx context.Context, id authz.Identity, orgID, name string) (Org, User, error) {
	if err := validate.Name("name", name, MaxNameLen); err != nil {
		return Org{}, User{}, err
	}
	if id.Email == "" {
		return Org{}, User{}, errs.E(errs.Invalid, "email_claim_required", "the token has no email claim; the owner of a new organization needs one")
	}
	now := s.now()
	if orgID == "" {
		orgID = s.ids.New()
	}
	o := Org{ID: orgID, Name: name, Version: 1, CreatedAt: now, UpdatedAt: now}
	owner := User{OrgID: o.ID, UserID: id.UserID, Email: id.Email, Name: id.Name, Role: authz.Owner,
		JoinedAt: now, UpdatedAt: now, Version: 1}
	if owner.Name == "" {
		owner.Name = id.UserID
	}
	if err := Validate(owner); err != nil {
		return Org{}, User{}, &errs.Error{Kind: errs.Invalid, Code: "invalid_identity", Message: "the token's claims are not a valid user", Err: err}
	}
	ev := s.event(ctx, audit.Outsider(o.ID, id.UserID), "org.create", "org", o.ID, now, audit.Diff(audit.F("name", nil, o.Name)))
	if err := s.store.CreateOrg(ctx, o, owner, ev); err != nil {
		if errs.CodeOf(err) == "org_exists" {
			return s.createdOrg(ctx, id, o.ID)
		}
		return Org{}, User{}, err
	}
	return o, owner, nil
}

// createdOrg returns the org an earlier attempt of the same idempotent
// create made, with the caller's edge in it (NotFound once they left it).
func (s *Service) createdOrg(ctx context.Context, id authz.Identity, orgID string) (Org, User, error) {
	u, err := s.store.GetOrgUser(ctx, orgID, id.UserID)
	if err != nil {
		return Org{}, User{}, err
	}
	o, err := s.store.GetOrg(ctx, orgID)
	if err != nil {
		return Org{}, User{}, err
	}
	return o, u, nil
}

// ListOrgs lists the orgs the caller belongs to, with their role. Names come
// from one BatchGetItem for the whole page.
func (s *Service) ListOrgs(ctx context.Context, id authz.Identity, p page.Request) (page.Result[Membership], error) {
	r, err := s.store.ListOrgs(ctx, id.UserID, p)
	if err != nil || len(r.Items) == 0 {
		return r, err
	}
	orgs, err := s.store.BatchGetOrgs(ctx, page.Keys(r.Items, func(m Membership) string { return m.OrgID }))
	if err != nil {
		return page.Result[Membership]{}, err
	}
	kept := r.Items[:0]
	for _, m := range r.Items {
		if o, ok := orgs[m.OrgID]; ok { // absent: the org is being deleted
			m.Name = o.Name
			kept = append(kept, m)
		}
	}
	r.Items = kept
	return r, nil
}

// GetOrg returns the org (first: as the caller read it already; nil: read
// it); withUsers adds its first users, read with one Query.
func (s *Service) GetOrg(ctx context.Context, p authz.Principal, first *Org, withUsers bool) (Org, []User, error) {
	if err := authz.Authorize(p, authz.OrgRead, authz.Facts{}); err != nil {
		return Org{}, nil, err
	}
	if withUsers && first == nil {
		return s.store.GetOrgWithUsers(ctx, p.OrgID, page.MaxLimit)
	}
	o, err := readFirst(ctx, first, func(ctx context.Context) (Org, error) { return s.store.GetOrg(ctx, p.OrgID) })
	if err != nil || !withUsers {
		return o, nil, err
	}
	users, err := s.store.ListOrgUsers(ctx, p.OrgID, page.Request{Limit: page.MaxLimit})
	return o, users.Items, err
}

// readFirst is *first, or what read reads when first is nil.
func readFirst[T any](ctx context.Context, first *T, read func(context.Context) (T, error)) (T, error) {
	if first != nil {
		return *first, nil
	}
	return read(ctx)
}

// UpdateOrg renames the org (admin+); first is the org as the caller read
// it already (nil: read it).
func (s *Service) UpdateOrg(ctx context.Context, p authz.Principal, first *Org, name string, ifMatch ifmatch.Match) (Org, error) {
	g, err := authz.Permit(p, authz.OrgUpdate, authz.Facts{})
	if err != nil {
		return Org{}, err
	}
	if err := validate.Name("name", name, MaxNameLen); err != nil {
		return Org{}, err
	}
	read := func(ctx context.Context) (Org, error) { return s.store.GetOrg(ctx, p.OrgID) }
	return ifmatch.Retry(ctx, ifMatch, first, read, func(prev Org) (Org, error) { return s.updateOrg(ctx, p, g, prev, name, ifMatch) })
}

// updateOrg is one attempt of UpdateOrg.
func (s *Service) updateOrg(ctx context.Context, p authz.Principal, g authz.Grant, prev Org, name string, ifMatch ifmatch.Match) (Org, error) {
	if err := ifMatch.Check(prev.Version); err != nil {
		return Org{}, err
	}
	next := prev
	next.Name, next.Version, next.UpdatedAt = name, prev.Version+1, s.now()
	ev := s.event(ctx, audit.By(p, g), "org.update", "org", p.OrgID, next.UpdatedAt, audit.Diff(audit.F("name", prev.Name, next.Name)))
	return audit.Update(ctx, s.store.UpdateOrg, prev, next, ev)
}

// DeleteOrg offboards the org (owner only): it marks the org deleting, so
// that from then on no member reads or writes it, and cuts every member
// off; then the rest (teams, tickets, invitations, the audit log...) is
// deleted in the background. It returns once the members are cut off and
// either the offboarding finished (done) or wait has passed. A repeated
// DELETE returns the offboarding under way (and resumes it if its run
// died).
func (s *Service) DeleteOrg(ctx context.Context, p authz.Principal, ifMatch ifmatch.Match, wait time.Duration) (j deletion.Job, done bool, err error) {
	if err := authz.Authorize(p, authz.OrgDelete, authz.Facts{}); err != nil {
		return j, false, err
	}
	version, single := ifMatch.Single()
	if ifMatch.Set() && !single { // "*" or several tags: read the org to decide
		o, err := s.store.GetOrg(ctx, p.OrgID)
		if err != nil {
			return j, false, err
		}
		if err := ifMatch.Check(o.Version); err != nil {
			return j, false, err
		}
		version = ifMatch.Pin(o.Version)
	}
	owner := deletion.NewOwner()
	j, started, err := s.store.StartOffboarding(ctx, p.OrgID, p.UserID, version, owner, s.now())
	if err != nil {
		return j, false, err
	}
	if !started { // another run holds it
		return s.afterCutoff(ctx, p.OrgID, j)
	}
	// Cut the members off before answering: once the DELETE is answered,
	// no member's write can commit any more.
	err = s.store.CutOff(ctx, p.OrgID, owner)
	if errs.CodeOf(err) == "lease_lost" { // a worker took the job over
		return s.afterCutoff(ctx, p.OrgID, j)
	}
	if err != nil {
		// Let a repeated DELETE (or the worker) take over at once.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = s.store.ReleaseOffboarding(rctx, p.OrgID, owner)
		return j, false, err
	}
	result := s.deletions.Go(j, owner)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case err := <-result:
		if err == nil {
			return j, true, nil
		}
		// It failed in part: a worker takes it over; it is under way.
	case <-t.C:
	case <-ctx.Done():
	}
	if cur, err := s.store.GetOffboarding(ctx, p.OrgID); err == nil {
		j = cur // how far it got
	} else if errs.Is(err, errs.NotFound) {
		return j, true, nil // it just finished
	}
	return j, false, nil
}

// afterCutoff waits until the offboarding another run holds is past its
// cut-off (or over), so that the DELETE never answers while members may
// still write; it returns the offboarding as it then is.
func (s *Service) afterCutoff(ctx context.Context, orgID string, j deletion.Job) (deletion.Job, bool, error) {
	for {
		cur, err := s.store.GetOffboarding(ctx, orgID)
		switch {
		case errs.Is(err, errs.NotFound):
			return j, true, nil // over
		case err != nil:
			return j, false, err
		case cur.Phase != "cutoff":
			return cur, false, nil
		}
		select {
		case <-ctx.Done():
			return j, false, &errs.Error{Kind: errs.Unavailable, Code: "timeout", Message: "the offboarding is still cutting members off; retry", Err: ctx.Err()}
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// GetOffboarding reads the progress of the org's offboarding (owner only).
func (s *Service) GetOffboarding(ctx context.Context, p authz.Principal) (deletion.Job, error) {
	if err := authz.Authorize(p, authz.OrgDelete, authz.Facts{}); err != nil {
		return deletion.Job{}, err
	}
	return s.store.GetOffboarding(ctx, p.OrgID)
}

// ListOrgUsers pages through the org's users.
func (s *Service) ListOrgUsers(ctx context.Context, p authz.Principal, pr page.Request) (page.Result[User], error) {
	if err := authz.Authorize(p, authz.UserRead, authz.Facts{}); err != nil {
		return page.Result[User]{}, err
	}
	return s.store.ListOrgUsers(ctx, p.OrgID, pr)
}

// GetOrgUser returns one of the org's users (first: as the caller read it
// already; nil: read it).
func (s *Service) GetOrgUser(ctx context.Context, p authz.Principal, userID string, first *User) (User, error) {
	if err := authz.Authorize(p, authz.UserRead, authz.Facts{}); err != nil {
		return User{}, err
	}
	return readFirst(ctx, first, func(ctx context.Context) (User, error) { return s.store.GetOrgUser(ctx, p.OrgID, userID) })
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
	ev := s.event(ctx, audit.By(p, g), "user.add", "user", u.UserID, now, audit.Diff(
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
// the owner role, or changes anything of an owner. first is the user as the
// caller read them already (nil: read them).
func (s *Service) UpdateOrgUser(ctx context.Context, p authz.Principal, userID string, first *User, patch UserPatch, ifMatch ifmatch.Match) (User, error) {
	if patch.Name == nil && patch.Email == nil && patch.Role == nil {
		return User{}, errs.E(errs.Invalid, "empty_patch", "nothing to change")
	}
	self, profileOnly := userID == p.UserID, patch.Email == nil && patch.Role == nil
	if err := authz.Authorize(p, authz.UserUpdate, authz.Facts{Self: self, ProfileOnly: profileOnly}); err != nil {
		return User{}, err
	}
	read := func(ctx context.Context) (User, error) { return s.store.GetOrgUser(ctx, p.OrgID, userID) }
	return ifmatch.Retry(ctx, ifMatch, first, read, func(prev User) (User, error) { return s.updateOrgUser(ctx, p, prev, patch, ifMatch) })
}

// updateOrgUser is one attempt of UpdateOrgUser.
func (s *Service) updateOrgUser(ctx context.Context, p authz.Principal, prev User, patch UserPatch, ifMatch ifmatch.Match) (User, error) {
	userID := prev.UserID
	self, profileOnly := userID == p.UserID, patch.Email == nil && patch.Role == nil
	next := prev
	if patch.Name != nil {
		next.Name = *patch.Name
	}
	if patch.Email != nil {
		next.Email = *patch.Email
	}
	if patch.Role != nil {
		next.Role = *patch.Role
	}
	touchesOwner := prev.Role == authz.Owner || next.Role == authz.Owner
	g, err := authz.Permit(p, authz.UserUpdate, authz.Facts{Self: self, ProfileOnly: profileOnly, OwnerRole: touchesOwner && !(self && profileOnly)})
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
	ev := s.event(ctx, audit.By(p, g), "user.update", "user", userID, next.UpdatedAt, audit.Diff(
		audit.F("email", prev.Email, next.Email), audit.F("name", prev.Name, next.Name),
		audit.F("role", string(prev.Role), string(next.Role))))
	return audit.Update(ctx, s.store.UpdateOrgUser, prev, next, ev)
}

// RemoveOrgUser removes a user from the org with their team memberships.
// Admins remove anyone but owners, owners anyone, members themselves; the
// last owner stays. first is the user as the caller read them already (nil:
// read them).
func (s *Service) RemoveOrgUser(ctx context.Context, p authz.Principal, userID string, first *User, ifMatch ifmatch.Match) error {
	self := userID == p.UserID
	if err := authz.Authorize(p, authz.UserRemove, authz.Facts{Self: self}); err != nil {
		return err
	}
	read := func(ctx context.Context) (User, error) { return s.store.GetOrgUser(ctx, p.OrgID, userID) }
	_, err := ifmatch.Retry(ctx, ifMatch, first, read, func(u User) (struct{}, error) {
		g, err := authz.Permit(p, authz.UserRemove, authz.Facts{Self: self, OwnerRole: u.Role == authz.Owner})
		if err != nil {
			return struct{}{}, err
		}
		if err := ifMatch.Check(u.Version); err != nil {
			return struct{}{}, err
		}
		ev := s.event(ctx, audit.By(p, g), "user.remove", "user", userID, s.now(), audit.Diff(
			audit.F("email", u.Email, nil), audit.F("role", string(u.Role), nil)))
		return struct{}{}, s.store.RemoveOrgUser(ctx, u, ev)
	})
	return err
}
