package authz

import (
	"strings"

	"github.com/tenantd/tenantd/internal/errs"
)

// Identity is the caller, as a verified bearer token describes them.
type Identity struct {
	UserID string // the token's sub
	Email  string // optional email claim
	// EmailUnverified: the token says its email is not verified
	// (email_verified false); such an email proves nothing.
	EmailUnverified bool
	Name            string // optional name claim
	// Key is set when the caller is an org's API key rather than a person:
	// UserID is then KeyActorPrefix and the key's id.
	Key *APIKey
}

// Caller is the subject of id's per-caller rate limit: the person, or
// every API key of the key's org together, so that a bearer of revoked
// keys (each still a token the service minted, each costing a read to be
// refused) spends one budget of that org, not a fresh one per key. The
// keys' caller is in their namespace (KeyActorPrefix), where no person's
// subject may be: no person shares an org's keys' budget.
func (id Identity) Caller() string {
	if id.Key != nil {
		return KeyActorPrefix + "org:" + id.Key.OrgID
	}
	return id.UserID
}

// KeyActorPrefix starts the user id every API key acts as
// ("apiKey:<keyId>"); no person's token may carry one.
const KeyActorPrefix = "apiKey:"

// KeyActor reports whether userID is in the API keys' namespace, in any
// case: no person (a token's subject, a user added to an org) may be
// named so, or edges made for them would be a key's.
func KeyActor(userID string) bool {
	return len(userID) >= len(KeyActorPrefix) && strings.EqualFold(userID[:len(KeyActorPrefix)], KeyActorPrefix)
}

// APIKey is an API key as its bearer presents it: the org and id its token
// names, and the SHA-256 of the token, which the key's stored hash must
// equal.
type APIKey struct {
	OrgID, ID string
	Hash      [32]byte
}

// Access is what the authorization read finds about a caller in an org.
type Access struct {
	Role         Role // on the caller's OrgUser edge; none when there is no edge or no org
	OrgDeleting  bool // the org is being offboarded
	EdgeDeleting bool // the caller is the owner offboarding it
}

// Principal is a caller acting inside one org, with the role the
// authorization read found on their OrgUser edge.
type Principal struct {
	Identity
	OrgID   string
	OrgRole Role
	// Team, when set, is the caller's role on one team as the
	// authorization read found it (a team-scoped write reads it there), so
	// that the service does not read their team edge again.
	Team *TeamRole
}

// TeamRole is a caller's role on one team ("": they are not on it).
type TeamRole struct {
	TeamID string
	Role   Role
}

// ErrOrgNotFound is the decision on a caller who may not act in an org:
// not a member, no such org, or an org being offboarded. The same 404 for
// each, so that a stranger learns nothing of other tenants' orgs.
var ErrOrgNotFound = errs.E(errs.NotFound, "org_not_found", "organization not found")

// ErrKeyRevoked refuses an API key that no longer exists: revoked, also
// when that happens while its request is being written (the write's fence
// finds the key gone), or never made.
var ErrKeyRevoked = errs.E(errs.Unauthenticated, "invalid_token", "the API key is revoked or does not exist")

// Admit is the org-level decision on id acting in orgID, made once per
// request from the authorization read (a) by every transport: members get
// a Principal with their org role, everyone else ErrOrgNotFound. An org
// whose offboarding has begun exists for nobody, except that its owners
// may follow the offboarding (offboarding: the request repeats the org's
// DELETE or reads its progress).
func Admit(id Identity, orgID string, a Access, offboarding bool) (Principal, error) {
	if !a.Role.Valid() || (a.OrgDeleting || a.EdgeDeleting) && !(offboarding && a.Role == Owner) {
		return Principal{}, ErrOrgNotFound
	}
	return Principal{Identity: id, OrgID: orgID, OrgRole: a.Role}, nil
}

// Action is something a principal may attempt on an org's resources.
type Action string

// Every action of the API. The README's role matrix lists the same rules.
const (
	OrgRead       Action = "org.read"
	OrgUpdate     Action = "org.update"
	OrgDelete     Action = "org.delete"
	OrgExport     Action = "org.export"
	UserRead      Action = "user.read"
	UserAdd       Action = "user.add"
	UserUpdate    Action = "user.update"
	UserRemove    Action = "user.remove"
	TeamRead      Action = "team.read"
	TeamCreate    Action = "team.create"
	TeamUpdate    Action = "team.update"
	TeamDelete    Action = "team.delete"
	MemberWrite   Action = "member.write"
	TicketRead    Action = "ticket.read"
	TicketCreate  Action = "ticket.create"
	TicketUpdate  Action = "ticket.update"
	TicketDelete  Action = "ticket.delete"
	CommentCreate Action = "comment.create"

	InvitationManage Action = "invitation.manage"
	APIKeyManage     Action = "apikey.manage"
	AuditRead        Action = "audit.read"
	WebhookManage    Action = "webhook.manage"
)

// Facts are what the rules need to know about the target beyond the
// caller's org role. Services fill only what the action's rule reads.
type Facts struct {
	Self bool // the target user is the caller
	// ProfileOnly: the change touches only the target user's own profile
	// (their name), not their email or role.
	ProfileOnly bool
	OwnerRole   bool // the change grants, removes or touches an org owner (or changes an owner's user)
	// TeamOwnerRole: the change grants, removes or changes a team owner's
	// role. Only a team owner or an org admin (and above) may.
	TeamOwnerRole bool
	TeamRole      Role // the caller's role on the target team ("" if none)
	// TeamID is the team whose edge TeamRole or TeamMember were read from.
	TeamID     string
	Requester  bool // the caller requested the ticket
	Assignee   bool // the caller is assigned the ticket
	TeamMember bool // the caller is a member of the ticket's team
}

// Rule is one row of the matrix: the org role that always suffices, and
// what else lets a lesser role through.
type Rule struct {
	Min    Role
	Also   func(p Principal, f Facts) bool
	Reason string // for the 403 message and the README
}

// Matrix is tenantd's authorization policy, encoded once.
var Matrix = map[Action]Rule{
	OrgRead:   {Min: Member, Reason: "any member may read the organization"},
	OrgUpdate: {Min: Admin, Reason: "only admins and owners may change the organization"},
	OrgDelete: {Min: Owner, Reason: "only owners may delete the organization"},
	OrgExport: {Min: Owner, Reason: "only owners may export the organization"},
	UserRead:  {Min: Member, Reason: "any member may read the organization's users"},
	UserAdd:   {Min: Admin, Reason: "only admins and owners may add users; only owners may add owners"},
	UserUpdate: {Min: Admin, Also: func(_ Principal, f Facts) bool { return f.Self && f.ProfileOnly },
		Reason: "only admins and owners may change users (members may change their own name); only owners may grant an owner role or change an owner"},
	UserRemove: {Min: Admin, Also: func(_ Principal, f Facts) bool { return f.Self },
		Reason: "only admins and owners may remove users (members may remove themselves); only owners may remove owners"},
	TeamRead:   {Min: Member, Reason: "any member may read teams"},
	TeamCreate: {Min: Admin, Reason: "only organization admins and owners may create teams"},
	TeamUpdate: {Min: Admin, Also: teamManager, Reason: "only team owners/admins or organization admins may change the team"},
	TeamDelete: {Min: Admin, Also: teamManager, Reason: "only team owners/admins or organization admins may delete the team"},
	MemberWrite: {Min: Admin, Also: teamManager,
		Reason: "only team owners/admins or organization admins may change the team's members; only team owners or organization admins may grant, change or remove a team owner"},
	TicketRead:   {Min: Member, Reason: "any member may read tickets"},
	TicketCreate: {Min: Member, Reason: "any member may create tickets"},
	TicketUpdate: {Min: Admin, Also: func(_ Principal, f Facts) bool { return f.Requester || f.Assignee || f.TeamMember },
		Reason: "only the requester, the assignee, a member of the ticket's team or an organization admin may change the ticket"},
	TicketDelete: {Min: Admin, Also: func(_ Principal, f Facts) bool { return f.Requester },
		Reason: "only the requester or an organization admin may delete the ticket"},
	CommentCreate: {Min: Member, Reason: "any member may comment"},

	InvitationManage: {Min: Admin, Reason: "only admins and owners may manage invitations; only owners may invite owners"},
	APIKeyManage:     {Min: Admin, Reason: "only admins and owners, as people, may mint, list and revoke API keys"},
	AuditRead:        {Min: Admin, Reason: "only admins and owners may read the audit log"},
	WebhookManage:    {Min: Admin, Reason: "only admins and owners may manage webhooks and read their deliveries"},
}

func teamManager(_ Principal, f Facts) bool { return f.TeamRole.AtLeast(Admin) }

// Authorize returns nil if p may do a with facts f, otherwise a Forbidden
// error. Touching an owner role always takes an owner: whatever else the
// rule allows, only owners make, unmake or edit owners. Likewise a team
// owner's role is only for team owners and org admins (and above).
func Authorize(p Principal, a Action, f Facts) error {
	rule, ok := Matrix[a]
	if !ok {
		return errs.E(errs.Internal, "unknown_action", "no rule for action %s", a)
	}
	if !p.OrgRole.Valid() {
		return errs.E(errs.Forbidden, "forbidden", "%s", rule.Reason)
	}
	allowed := p.OrgRole.AtLeast(rule.Min) || (rule.Also != nil && rule.Also(p, f))
	if allowed && f.OwnerRole && !p.OrgRole.AtLeast(Owner) {
		allowed = false
	}
	if allowed && f.TeamOwnerRole && !p.OrgRole.AtLeast(Admin) && f.TeamRole != Owner {
		allowed = false
	}
	if !allowed {
		return errs.E(errs.Forbidden, "forbidden", "%s", rule.Reason)
	}
	return nil
}

// Grant is a decision that p may do an action. Floor is the lowest org role
// with which the same request would still be allowed: a write made on the
// grant commits only while the actor's OrgUser edge still exists with at
// least that role (the actor fence, checked in the write's transaction), so
// a member removed or demoted a moment earlier cannot write.
//
// When the decision rested on the caller's team edge (a team admin who is
// only an org member, a member of a ticket's team), TeamID names the team
// and TeamFloor is the lowest team role with which it would still be
// allowed: the write is fenced on that edge too (the team fence), so a
// member taken off the team a moment earlier cannot write either.
type Grant struct {
	Floor     Role
	TeamID    string
	TeamFloor Role
}

// Permit is Authorize returning the Grant of an allowed action.
func Permit(p Principal, a Action, f Facts) (Grant, error) {
	if err := Authorize(p, a, f); err != nil {
		return Grant{}, err
	}
	g := Grant{Floor: Owner}
	for _, r := range []Role{Member, Admin, Owner} {
		q := p
		q.OrgRole = r
		if Authorize(q, a, f) == nil {
			g.Floor = r
			break
		}
	}
	if f.TeamID == "" || (f.TeamRole == "" && !f.TeamMember) {
		return g, nil
	}
	without := f
	without.TeamRole, without.TeamMember = "", false
	if Authorize(p, a, without) == nil {
		return g, nil // the org role decided alone
	}
	g.TeamID, g.TeamFloor = f.TeamID, Owner
	for _, r := range []Role{Member, Admin, Owner} {
		with := without
		with.TeamRole, with.TeamMember = r, true
		if Authorize(p, a, with) == nil {
			g.TeamFloor = r
			break
		}
	}
	return g, nil
}

// RolesFrom lists the roles at least r, lowest first.
func RolesFrom(r Role) []Role {
	var out []Role
	for _, x := range []Role{Member, Admin, Owner} {
		if x.AtLeast(r) {
			out = append(out, x)
		}
	}
	return out
}

// NeedsTeamRole reports whether deciding a for p may need the caller's
// team role: only when the org role alone does not settle it. Services use
// it to skip the team edge GetItem for org admins.
func NeedsTeamRole(p Principal, a Action) bool {
	return !p.OrgRole.AtLeast(Matrix[a].Min)
}
