// Package tenant holds organizations (the tenants of tenantd, org.go) and
// the users that belong to them (user.go), each user's edge carrying their
// org role: the types, the rules that keep them valid, and the Service both
// APIs call. An org's offboarding (its deletion) lives here too.
package tenant

import (
	"cmp"
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

// Org is a tenant.
type Org struct {
	ID        string
	Name      string
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OrgMembership is one of a user's orgs, as "my orgs" lists them (the API's
// OrgMembership; a user's place on a team is membership.Membership).
type OrgMembership struct {
	OrgID    string
	Name     string // the org's
	UserName string // the user's name in the org
	Role     authz.Role
	JoinedAt time.Time
}

// Limits of text fields.
const (
	MaxNameLen  = 200
	MaxEmailLen = 254
)

// Storer is what the org service needs from persistence. Every write takes
// the audit event of the change, written in the same transaction. An org
// being offboarded is NotFound to every read and write but the offboarding's.
type Storer interface {
	// CreateOrg writes the org, its owner and the owner's email claim
	// atomically. Returns Conflict if the org ID is taken.
	CreateOrg(ctx context.Context, o Org, owner User, ev audit.Event) error
	// GetOrg returns NotFound if the org does not exist.
	GetOrg(ctx context.Context, orgID string) (Org, error)
	// GetOrgWithUsers reads the org and up to limit of its users in one
	// Query. Returns NotFound if the org does not exist.
	GetOrgWithUsers(ctx context.Context, orgID string, limit int) (Org, []User, error)
	// UpdateOrg replaces the org's mutable fields if its version is still
	// prev.Version. Returns NotFound or PreconditionFailed.
	UpdateOrg(ctx context.Context, prev, next Org, ev audit.Event) error
	// ListOrgs pages through the orgs userID belongs to, without their names.
	ListOrgs(ctx context.Context, userID string, p page.Request) (page.Result[OrgMembership], error)
	// BatchGetOrgs reads many orgs; absent ones are left out.
	BatchGetOrgs(ctx context.Context, orgIDs []string) (map[string]Org, error)

	// GetOrgUser returns NotFound if the user is not in the org.
	GetOrgUser(ctx context.Context, orgID, userID string) (User, error)
	// ListOrgUsers pages through an org's users, ordered by user ID.
	ListOrgUsers(ctx context.Context, orgID string, p page.Request) (page.Result[User], error)
	// BatchGetOrgUsers reads many of an org's users; absent ones are left out.
	BatchGetOrgUsers(ctx context.Context, orgID string, userIDs []string) (map[string]User, error)
	// AddOrgUser writes the user and their email claim atomically. Returns
	// NotFound (the org), Conflict (user_exists, email_taken).
	AddOrgUser(ctx context.Context, u User, ev audit.Event) error
	// UpdateOrgUser replaces prev by next if prev.Version is current,
	// swapping the email claim and the org's owner count as needed. Returns
	// NotFound, PreconditionFailed, Conflict (email_taken, last_owner).
	UpdateOrgUser(ctx context.Context, prev, next User, ev audit.Event) error
	// RemoveOrgUser deletes the user, their claim and their team
	// memberships in the org (with the teams' counts); a team that no
	// longer exists never blocks it. Returns NotFound, PreconditionFailed or
	// Conflict (last_owner, last_team_owner).
	RemoveOrgUser(ctx context.Context, u User, ev audit.Event) error

	// StartOffboarding marks the org as being offboarded by actorID, an
	// owner who alone keeps access (to repeat the DELETE or read progress),
	// and takes the job's lease for owner. On an org being offboarded it
	// returns that job, with started true only if its lease had expired and
	// owner took it over. Returns NotFound, PreconditionFailed (ifVersion > 0).
	StartOffboarding(ctx context.Context, orgID, actorID string, ifVersion int64, owner string, now time.Time) (j deletion.Job, started bool, err error)
	// CutOff deletes every member's edge but the actor's, if owner's run
	// has not done it yet. Returns Conflict (lease_lost).
	CutOff(ctx context.Context, orgID, owner string) error
	// ReleaseOffboarding gives up owner's lease on the offboarding.
	ReleaseOffboarding(ctx context.Context, orgID, owner string) error
	// GetOffboarding reads an org's offboarding. Returns NotFound if there is none.
	GetOffboarding(ctx context.Context, orgID string) (deletion.Job, error)
}

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

// CreateOrg creates an org whose first owner is the caller, with the email
// and name of the token's claims. orgID, when set, is the org's ID (an
// idempotent request's, idempotency.Record.ResourceID; otherwise one is
// minted): if it exists, it was created already and is returned as is.
func (s *Service) CreateOrg(ctx context.Context, id authz.Identity, orgID, name string) (Org, User, error) {
	if err := validate.Name("name", name, MaxNameLen); err != nil {
		return Org{}, User{}, err
	}
	if id.Email == "" {
		return Org{}, User{}, &errs.Error{Kind: errs.Invalid, Code: "email_claim_required", In: "header", Field: "Authorization",
			Message: "the token has no email claim; the owner of a new organization needs one"}
	}
	now := s.now()
	if orgID == "" {
		orgID = s.ids.New()
	}
	o := Org{ID: orgID, Name: name, Version: 1, CreatedAt: now, UpdatedAt: now}
	owner := User{OrgID: o.ID, UserID: id.UserID, Email: id.Email, Name: cmp.Or(id.Name, id.UserID), Role: authz.Owner,
		JoinedAt: now, UpdatedAt: now, Version: 1}
	if err := Validate(owner); err != nil {
		return Org{}, User{}, &errs.Error{Kind: errs.Invalid, Code: "invalid_identity", In: "header", Field: "Authorization",
			Message: "the token's claims are not a valid user", Err: err}
	}
	ev := audit.NewEvent(ctx, s.ids, audit.Outsider(o.ID, id.UserID), "org.create", "org", o.ID, now, audit.Diff(audit.F("name", nil, o.Name)))
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
func (s *Service) ListOrgs(ctx context.Context, id authz.Identity, p page.Request) (page.Result[OrgMembership], error) {
	r, err := s.store.ListOrgs(ctx, id.UserID, p)
	if err != nil || len(r.Items) == 0 {
		return r, err
	}
	orgs, err := s.store.BatchGetOrgs(ctx, page.Keys(r.Items, func(m OrgMembership) string { return m.OrgID }))
	if err != nil {
		return page.Result[OrgMembership]{}, err
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

// GetOrg returns the org (loaded: as the authorization read loaded it;
// nil: read it); withUsers reads the org's item collection instead, the org
// and its first users in one Query.
func (s *Service) GetOrg(ctx context.Context, p authz.Principal, loaded *Org, withUsers bool) (Org, []User, error) {
	if err := authz.Authorize(p, authz.OrgRead, authz.Facts{}); err != nil {
		return Org{}, nil, err
	}
	switch {
	case withUsers: // the org's item collection: the org and its users in one Query
		return s.store.GetOrgWithUsers(ctx, p.OrgID, page.MaxLimit)
	case loaded != nil:
		return *loaded, nil, nil
	}
	o, err := s.store.GetOrg(ctx, p.OrgID)
	return o, nil, err
}

// UpdateOrg renames the org (admin+); loaded is the org as the authorization
// read loaded it (nil: read it).
func (s *Service) UpdateOrg(ctx context.Context, p authz.Principal, loaded *Org, name string, ifMatch ifmatch.Match) (Org, error) {
	g, err := authz.Permit(p, authz.OrgUpdate, authz.Facts{})
	if err != nil {
		return Org{}, err
	}
	if err := validate.Name("name", name, MaxNameLen); err != nil {
		return Org{}, err
	}
	read := func(ctx context.Context) (Org, error) { return s.store.GetOrg(ctx, p.OrgID) }
	return ifmatch.Retry(ctx, ifMatch, loaded, read, func(prev Org) (Org, error) {
		if err := ifMatch.Check(prev.Version); err != nil {
			return Org{}, err
		}
		next := prev
		next.Name, next.Version, next.UpdatedAt = name, prev.Version+1, s.now()
		ev := audit.NewEvent(ctx, s.ids, audit.By(p, g), "org.update", "org", p.OrgID, next.UpdatedAt,
			audit.Diff(audit.F("name", prev.Name, next.Name)))
		return audit.Update(ctx, s.store.UpdateOrg, prev, next, ev)
	})
}

// DeleteOrg offboards the org (owner only): it marks the org deleting and
// cuts every member off, then deletes the rest in the background. It
// returns once the members are cut off and either the offboarding finished
// (done) or wait has passed. A repeated DELETE returns the offboarding
// under way (resuming it if its run died).
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
	select {
	case err := <-result:
		if err == nil {
			return j, true, nil
		}
		// It failed in part: a worker takes it over; it is under way.
	case <-time.After(wait):
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
