package store

// This file is a test aid: CheckInvariants scans the whole table and every
// index and reports each broken rule of the data model (docs/data-model.md).
// Product code never calls it (the product never scans); tests of this and
// other packages call it after exercising the store or the API, to prove
// that no sequence of writes left the table inconsistent.
//
// It works on raw attribute maps, not on the item structs, so that it checks
// what is really stored (including attributes the structs would drop) and
// so that it can check layout changes before the store writes them:
//
//   - Team items carry ownerCount, the number of their owner edges.
//   - EmailClaim items may carry gsi1pk = ORG#<orgId>, gsi1sk =
//     EMAIL#<normalizedEmail>; a claim without them is legacy and fine.
//   - Items being deleted carry deleting = true. An Org, Team or Ticket
//     being deleted also carries gsi3pk = DELETING and gsi3sk =
//     ORG#<orgId>, TEAM#<orgId>#<teamId> or TICKET#<orgId>#<ticketId>
//     (a ticket's usual gsi3 is its status queue entry).

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// Rule names reported by CheckInvariants. They are stable: tests compare
// them.
const (
	// Every item.
	RuleUnknownType        = "item.unknown_type"   // type missing or not one of the known entities
	RuleBadKey             = "item.bad_key"        // pk/sk not the shape the type requires, or a malformed ID in them
	RuleAttrMismatch       = "item.attr_mismatch"  // a redundant attribute (orgId, teamId, ...) differs from the key
	RuleBadAttr            = "item.bad_attr"       // an attribute of the wrong type or a malformed value
	RuleUnfinishedDeletion = "unfinished_deletion" // an item marked deleting, with AllowInProgress false
	RuleDeletingMarker     = "deleting.marker"     // deleting flag and GSI3 DELETING marker disagree
	RuleOrphanOrg          = "orphan.org_missing"  // an item of an org whose Org item does not exist

	RuleOrgOwnerCount = "org.owner_count" // ownerCount differs from the org's owner OrgUsers
	RuleOrgNoOwner    = "org.no_owner"    // the org has no owner (and is not being deleted)
	RuleOrgGSIKeys    = "org.gsi_keys"

	RuleUserClaimMissing     = "org_user.claim_missing"     // no EmailClaim for the user's normalized email
	RuleUserClaimMismatch    = "org_user.claim_mismatch"    // the claim of the user's email names another user
	RuleUserTeamIDs          = "org_user.team_ids"          // teamIds differs from the teams with a MEMBER#<userId> edge
	RuleUserBadRole          = "org_user.bad_role"          // role not owner, admin or member
	RuleUserDeletingMismatch = "org_user.deleting_mismatch" // a deleting OrgUser that is not an owner of a deleting org
	RuleUserGSIKeys          = "org_user.gsi_keys"

	RuleClaimUserMissing   = "email_claim.user_missing"   // no OrgUser with the claim's userId
	RuleClaimEmailMismatch = "email_claim.email_mismatch" // that OrgUser's normalized email is not the claim's
	RuleClaimGSIKeys       = "email_claim.gsi_keys"

	RuleTeamMemberCount = "team.member_count" // memberCount differs from the team's edges
	RuleTeamOwnerCount  = "team.owner_count"  // ownerCount differs from the team's owner edges
	RuleTeamNoOwner     = "team.no_owner"     // no owner edge (and the team is not being deleted)
	RuleTeamGSIKeys     = "team.gsi_keys"

	RuleMemberTeamMissing = "membership.team_missing" // the edge's Team item does not exist
	RuleMemberUserMissing = "membership.user_missing" // the edge's OrgUser does not exist
	RuleMemberBadRole     = "membership.bad_role"
	RuleMemberGSIKeys     = "membership.gsi_keys"

	RuleTicketCommentCount = "ticket.comment_count" // commentCount differs from the ticket's comments
	RuleTicketBadStatus    = "ticket.bad_status"
	RuleTicketBadPriority  = "ticket.bad_priority"
	RuleTicketGSIKeys      = "ticket.gsi_keys"

	RuleCommentTicketMissing = "comment.ticket_missing" // the comment's Ticket item does not exist
	RuleCommentGSIKeys       = "comment.gsi_keys"

	RuleInvitePointerMissing  = "invitation.pointer_missing"  // no InvitationEmail for a live invitation's email
	RuleInvitePointerMismatch = "invitation.pointer_mismatch" // that pointer names another invitation
	RuleInviteBadRole         = "invitation.bad_role"
	RuleInviteGSIKeys         = "invitation.gsi_keys"

	RulePointerInviteMissing = "invitation_email.invitation_missing" // a live pointer's invitation does not exist
	RulePointerEmailMismatch = "invitation_email.email_mismatch"     // the invitation it names has another email
	RulePointerGSIKeys       = "invitation_email.gsi_keys"

	RuleAuditGSIKeys       = "audit_event.gsi_keys"
	RuleIdempotencyGSIKeys = "idempotency.gsi_keys"

	RuleGSIUnexplained = "gsi.unexplained" // an index entry with no base item carrying the same index keys
	RuleGSIMissing     = "gsi.missing"     // a base item with both index keys that the index lacks
)

// Violation is one broken rule found in the table.
type Violation struct {
	Rule   string
	PK, SK string
	Detail string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s [%s | %s]: %s", v.Rule, v.PK, v.SK, v.Detail)
}

// CheckOptions tune what CheckInvariants tolerates.
type CheckOptions struct {
	// AllowInProgress tolerates items marked `deleting` (an offboarding or a
	// large delete still running) and what they imply; at quiescence tests
	// pass false.
	//
	// With true, the relational rules (counts, claims, team sets, parents,
	// invitation pointers) are not checked for the items of an org that is
	// being offboarded, since offboarding deletes in bulk, outside
	// transactions. The structural rules (types, keys, attributes, index
	// keys, index contents) and orphan.org_missing still are. A deleting
	// Team or Ticket is checked as any other, except that it may have no
	// owner; its counts must equal its remaining children.
	AllowInProgress bool
	// Now decides which invitations are expired (TTL lag): expired
	// invitations/pointers are tolerated as dangling. The zero time expires
	// nothing.
	Now time.Time
}

// CheckInvariants does a consistent Scan of the base table and of every GSI
// (test-only: the product never scans) and returns every violated rule
// (empty = healthy), sorted by rule, pk, sk.
//
// The scans are not one snapshot: call it when nothing else writes to the
// table (an offboarding that is parked mid-way is fine, with
// AllowInProgress).
func CheckInvariants(ctx context.Context, client *dynamodb.Client, table string, o CheckOptions) ([]Violation, error) {
	base, err := scanAll(ctx, client, table, "")
	if err != nil {
		return nil, err
	}
	c := newChecker(o, base)
	c.checkItems()
	for i, ix := range Schema.Indexes {
		entries, err := scanAll(ctx, client, table, ix.Name)
		if err != nil {
			return nil, err
		}
		c.checkIndex(i+1, ix, entries)
	}
	sort.SliceStable(c.out, func(i, j int) bool {
		a, b := c.out[i], c.out[j]
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		if a.PK != b.PK {
			return a.PK < b.PK
		}
		if a.SK != b.SK {
			return a.SK < b.SK
		}
		return a.Detail < b.Detail
	})
	return c.out, nil
}

// scanAll reads every item of the table (index "") or of one index. Base
// table scans are consistent; index scans cannot be.
func scanAll(ctx context.Context, client *dynamodb.Client, table, index string) ([]map[string]types.AttributeValue, error) {
	in := &dynamodb.ScanInput{TableName: aws.String(table)}
	if index == "" {
		in.ConsistentRead = aws.Bool(true)
	} else {
		in.IndexName = aws.String(index)
	}
	var items []map[string]types.AttributeValue
	p := dynamodb.NewScanPaginator(client, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			what := "table"
			if index != "" {
				what = index
			}
			return nil, fmt.Errorf("check invariants: scan %s: %w", what, err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// item is one base-table item with what its key says.
type item struct {
	av       map[string]types.AttributeValue
	pk, sk   string
	typ      string
	spec     *entitySpec // nil: unknown type
	k        keyParts
	ok       bool // known type and well-formed key: the relational rules apply
	deleting bool
}

// keyParts are the values a key holds; which are set depends on the type.
type keyParts struct {
	org, user, team, ticket, comment, invitation, event string
	email, bucket, hash                                 string
}

// ref names a child of an org: a user, team, ticket, email...
type ref struct{ org, id string }

// checker holds the scanned items, indexed for the relational rules, and
// the violations found.
type checker struct {
	o     CheckOptions
	out   []Violation
	items []*item
	byKey map[key]*item

	orgs      map[string]*item
	users     map[ref]*item          // (org, userId)
	owners    map[string]int         // org -> OrgUsers with role owner
	claims    map[ref]*item          // (org, normalized email)
	teams     map[ref]*item          // (org, teamId)
	edges     map[ref][]*item        // (org, teamId) -> Membership edges
	userEdges map[ref]map[string]int // (org, userId) -> teams with an edge
	tickets   map[ref]*item          // (org, ticketId)
	comments  map[ref]int            // (org, ticketId) -> comments
	invites   map[ref]*item          // (org, invitationId)
	pointers  map[ref]*item          // (org, normalized email)
}

func newChecker(o CheckOptions, base []map[string]types.AttributeValue) *checker {
	c := &checker{o: o, byKey: map[key]*item{},
		orgs: map[string]*item{}, users: map[ref]*item{}, owners: map[string]int{}, claims: map[ref]*item{},
		teams: map[ref]*item{}, edges: map[ref][]*item{}, userEdges: map[ref]map[string]int{},
		tickets: map[ref]*item{}, comments: map[ref]int{}, invites: map[ref]*item{}, pointers: map[ref]*item{}}
	for _, av := range base {
		it := &item{av: av}
		it.pk, _ = str(av, attrPK)
		it.sk, _ = str(av, attrSK)
		c.items = append(c.items, it)
		c.byKey[key{it.pk, it.sk}] = it
	}
	return c
}

func (c *checker) report(it *item, rule, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: rule, PK: it.pk, SK: it.sk, Detail: fmt.Sprintf(format, args...)})
}

// relational reports a relational rule, unless the item belongs to an org
// being offboarded and in-progress deletions are allowed.
func (c *checker) relational(it *item, rule, format string, args ...any) {
	if c.o.AllowInProgress {
		if org := c.orgs[it.k.org]; org != nil && org.deleting {
			return
		}
	}
	c.report(it, rule, format, args...)
}

// checkItems runs every rule on the base items: first the rules of each
// item alone (and the indexing of the well-formed ones), then the rules
// that relate items to one another.
func (c *checker) checkItems() {
	for _, it := range c.items {
		c.checkShape(it)
	}
	for _, it := range c.items {
		c.checkOrphan(it)
		if it.ok && it.spec.check != nil {
			it.spec.check(c, it)
		}
	}
}

// checkShape is rule 1 (type, key shape, IDs, redundant attributes, index
// keys) and the deleting flag, for one item; it indexes well-formed items.
func (c *checker) checkShape(it *item) {
	if v, present := it.av["deleting"]; present {
		b, isBool := v.(*types.AttributeValueMemberBOOL)
		if !isBool {
			c.report(it, RuleBadAttr, "deleting is not a boolean")
		}
		it.deleting = isBool && b.Value
	}
	if it.deleting && !c.o.AllowInProgress {
		c.report(it, RuleUnfinishedDeletion, "item is marked deleting")
	}

	it.typ, _ = str(it.av, "type")
	it.spec = entities[it.typ]
	if it.spec == nil {
		c.report(it, RuleUnknownType, "type %q is not a known entity", it.typ)
		return
	}
	if it.deleting && !it.spec.canDelete {
		c.report(it, RuleDeletingMarker, "a %s is never marked deleting", it.typ)
	}
	k, err := parseKey(it.spec, it.pk, it.sk)
	if err != nil {
		c.report(it, RuleBadKey, "%s: %v", it.typ, err)
		return
	}
	it.k, it.ok = k, true
	for _, a := range it.spec.attrs(k) {
		c.wantAttr(it, a[0], a[1])
	}
	c.checkGSIKeys(it)
	c.index(it)
}

// wantAttr checks a redundant attribute: equal to want, or absent when want
// is "".
func (c *checker) wantAttr(it *item, name, want string) {
	v, present := it.av[name]
	got, isStr := str(it.av, name)
	switch {
	case want == "" && present:
		c.report(it, RuleAttrMismatch, "%s is set, the key says none", name)
	case want != "" && !present:
		c.report(it, RuleAttrMismatch, "%s is missing, the key says %q", name, want)
	case want != "" && (!isStr || got != want):
		c.report(it, RuleAttrMismatch, "%s is %s, the key says %q", name, render(v), want)
	}
}

// index records a well-formed item for the relational rules.
func (c *checker) index(it *item) {
	k := it.k
	switch it.typ {
	case typeOrg:
		c.orgs[k.org] = it
	case typeOrgUser:
		c.users[ref{k.org, k.user}] = it
		if role, _ := str(it.av, "role"); role == string(authz.Owner) {
			c.owners[k.org]++
		}
	case typeEmailClaim:
		c.claims[ref{k.org, k.email}] = it
	case typeTeam:
		c.teams[ref{k.org, k.team}] = it
	case typeMembership:
		c.edges[ref{k.org, k.team}] = append(c.edges[ref{k.org, k.team}], it)
		u := ref{k.org, k.user}
		if c.userEdges[u] == nil {
			c.userEdges[u] = map[string]int{}
		}
		c.userEdges[u][k.team]++
	case typeTicket:
		c.tickets[ref{k.org, k.ticket}] = it
	case typeComment:
		c.comments[ref{k.org, k.ticket}]++
	case typeInvitation:
		c.invites[ref{k.org, k.invitation}] = it
	case typeInviteMail:
		c.pointers[ref{k.org, k.email}] = it
	}
}

// checkOrphan is rule 2: an item whose partition key starts with
// ORG#<orgId> belongs to that org, which must exist. Idempotency records
// under USER#<userId> belong to users, not orgs.
func (c *checker) checkOrphan(it *item) {
	rest, ok := trimPrefix(it.pk, prefixOrg)
	if !ok {
		return
	}
	org, _, _ := strings.Cut(rest, "#")
	if org == "" || c.orgs[org] != nil {
		return
	}
	c.report(it, RuleOrphanOrg, "org %s has no Org item (%s/%s)", org, orgPK(org), skMetadata)
}

// ---------------------------------------------------------------------------
// Entities: key shapes, redundant attributes, index keys and rules.

// entitySpec is what CheckInvariants knows of one entity type.
type entitySpec struct {
	// kind is the part of the partition key after ORG#<orgId>: "" for the
	// org's own partition, "TEAM" for ORG#<orgId>#TEAM#<teamId>...
	kind string
	// sk parses the sort key into k.
	sk func(sk string, k *keyParts) error
	// attrs lists the redundant attributes and the values the key implies
	// ("" = must be absent).
	attrs func(k keyParts) [][2]string
	// gsiRule is the rule reported for wrong index keys; gsis returns the
	// index keys the item must carry.
	gsiRule string
	gsis    func(it *item) gsiKeys
	// canDelete: the item may carry deleting = true.
	canDelete bool
	// check runs the value and relational rules, once every item is indexed.
	check func(c *checker, it *item)
}

// EntityTypes are the item types of the table (the type attribute), sorted:
// what docs/data-model.md must chart (a test compares them).
func EntityTypes() []string {
	out := make([]string, 0, len(entities))
	for t := range entities {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

var entities = map[string]*entitySpec{
	typeOrg: {
		kind:      "",
		sk:        exactSK(skMetadata),
		attrs:     func(k keyParts) [][2]string { return [][2]string{{"orgId", k.org}} },
		gsiRule:   RuleOrgGSIKeys,
		gsis:      func(it *item) gsiKeys { return deletingMarker(it, gsiKeys{}, prefixOrg+it.k.org) },
		canDelete: true,
		check:     (*checker).checkOrg,
	},
	typeOrgUser: {
		kind: "",
		sk:   idSK(prefixUser, "user", ids.ValidUser, func(k *keyParts, v string) { k.user = v }),
		attrs: func(k keyParts) [][2]string {
			return [][2]string{{"orgId", k.org}, {"userId", k.user}}
		},
		gsiRule: RuleUserGSIKeys,
		gsis: func(it *item) gsiKeys {
			k := it.k
			return gsiKeys{1: {pk: userPK(k.user), sk: orgPK(k.org)}, 2: {pk: orgUserPK(k.org, k.user), sk: userSK(k.user)}}
		},
		canDelete: true,
		check:     (*checker).checkOrgUser,
	},
	typeEmailClaim: {
		kind:  "EMAIL",
		sk:    exactSK(skClaim),
		attrs: func(k keyParts) [][2]string { return [][2]string{{"orgId", k.org}, {"email", k.email}} },
		// Claims written before they had index keys are legacy and fine.
		gsiRule: RuleClaimGSIKeys,
		gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: orgPK(it.k.org), sk: "EMAIL#" + it.k.email, optional: true}}
		},
		check: (*checker).checkClaim,
	},
	typeTeam: {
		kind:    "TEAM",
		sk:      exactSK(skMetadata),
		attrs:   func(k keyParts) [][2]string { return [][2]string{{"orgId", k.org}, {"teamId", k.team}} },
		gsiRule: RuleTeamGSIKeys,
		gsis: func(it *item) gsiKeys {
			k := it.k
			return deletingMarker(it, gsiKeys{1: {pk: orgPK(k.org), sk: teamSK(k.team)}}, prefixTeam+k.org+"#"+k.team)
		},
		canDelete: true,
		check:     (*checker).checkTeam,
	},
	typeMembership: {
		kind: "TEAM",
		sk:   idSK(prefixMember, "user", ids.ValidUser, func(k *keyParts, v string) { k.user = v }),
		attrs: func(k keyParts) [][2]string {
			return [][2]string{{"orgId", k.org}, {"teamId", k.team}, {"userId", k.user}}
		},
		gsiRule: RuleMemberGSIKeys,
		gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: userPK(it.k.user), sk: userTeamSK(it.k.org, it.k.team)}}
		},
		check: (*checker).checkMembership,
	},
	typeTicket: {
		kind:      "TICKET",
		sk:        exactSK(skMetadata),
		attrs:     func(k keyParts) [][2]string { return [][2]string{{"orgId", k.org}, {"ticketId", k.ticket}} },
		gsiRule:   RuleTicketGSIKeys,
		gsis:      ticketGSIs,
		canDelete: true,
		check:     (*checker).checkTicket,
	},
	typeComment: {
		kind: "TICKET",
		sk:   idSK(prefixComment, "comment", ids.ValidResource, func(k *keyParts, v string) { k.comment = v }),
		attrs: func(k keyParts) [][2]string {
			return [][2]string{{"orgId", k.org}, {"ticketId", k.ticket}, {"commentId", k.comment}}
		},
		gsiRule: RuleCommentGSIKeys,
		gsis:    func(*item) gsiKeys { return gsiKeys{} },
		check:   (*checker).checkComment,
	},
	typeInvitation: {
		kind: "INVITE",
		sk:   exactSK("#INVITE"),
		attrs: func(k keyParts) [][2]string {
			return [][2]string{{"orgId", k.org}, {"invitationId", k.invitation}}
		},
		gsiRule: RuleInviteGSIKeys,
		gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: orgPK(it.k.org), sk: prefixInvite + it.k.invitation}}
		},
		check: (*checker).checkInvitation,
	},
	typeInviteMail: {
		kind:    "INVITEEMAIL",
		sk:      exactSK("#INVITE"),
		attrs:   func(k keyParts) [][2]string { return [][2]string{{"orgId", k.org}} },
		gsiRule: RulePointerGSIKeys,
		gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: orgPK(it.k.org), sk: invitationEmailGSI1SK(it.k.email)}}
		},
		check: (*checker).checkInvitationEmail,
	},
	typeAudit: {
		kind: "AUDIT",
		sk:   idSK(prefixEvent, "event", ids.ValidResource, func(k *keyParts, v string) { k.event = v }),
		attrs: func(k keyParts) [][2]string {
			return [][2]string{{"orgId", k.org}, {"eventId", k.event}}
		},
		gsiRule: RuleAuditGSIKeys,
		gsis:    func(*item) gsiKeys { return gsiKeys{} },
		check:   (*checker).checkAudit,
	},
	typeIdempotent: {
		kind: "IDEMPOTENCY",
		sk:   exactSK("#IDEMPOTENCY"),
		attrs: func(k keyParts) [][2]string {
			if k.org == "" { // a user's record, outside any org
				return [][2]string{{"orgId", ""}, {"userId", k.user}}
			}
			return [][2]string{{"orgId", k.org}}
		},
		gsiRule: RuleIdempotencyGSIKeys,
		gsis: func(it *item) gsiKeys {
			if it.k.org == "" {
				return gsiKeys{}
			}
			return gsiKeys{1: {pk: orgPK(it.k.org), sk: it.pk}}
		},
		check: (*checker).checkIdempotency,
	},
}

// parseKey checks that pk and sk have the shape spec requires and returns
// the IDs they hold. Partition keys are ORG#<orgId>[#<KIND>#<value>], or,
// for a user's idempotency records, USER#<userId>#IDEMPOTENCY#<hash>.
func parseKey(spec *entitySpec, pk, sk string) (keyParts, error) {
	var k keyParts
	parts := strings.Split(pk, "#")
	var kind, value string
	switch {
	case len(parts) == 2 && parts[0] == "ORG":
		k.org = parts[1]
	case len(parts) == 4 && parts[0] == "ORG":
		k.org, kind, value = parts[1], parts[2], parts[3]
	case len(parts) == 4 && parts[0] == "USER" && parts[2] == "IDEMPOTENCY" && spec.kind == "IDEMPOTENCY":
		if !ids.ValidUser(parts[1]) {
			return k, fmt.Errorf("user ID %q in pk is malformed", parts[1])
		}
		k.user, kind, value = parts[1], parts[2], parts[3]
	default:
		return k, fmt.Errorf("pk %q is not ORG#<orgId>[#<KIND>#<value>]", pk)
	}
	if k.user == "" && !ids.ValidResource(k.org) {
		return k, fmt.Errorf("org ID %q in pk is not a ULID", k.org)
	}
	if kind != spec.kind {
		if spec.kind == "" {
			return k, fmt.Errorf("pk %q is not the org partition ORG#<orgId>", pk)
		}
		return k, fmt.Errorf("pk %q is not ORG#<orgId>#%s#<value>", pk, spec.kind)
	}
	switch kind {
	case "EMAIL", "INVITEEMAIL":
		if !normalizedEmail(value) {
			return k, fmt.Errorf("email %q in pk is not a normalized email", value)
		}
		k.email = value
	case "TEAM", "TICKET", "INVITE":
		if !ids.ValidResource(value) {
			return k, fmt.Errorf("%s ID %q in pk is not a ULID", strings.ToLower(kind), value)
		}
		switch kind {
		case "TEAM":
			k.team = value
		case "TICKET":
			k.ticket = value
		default:
			k.invitation = value
		}
	case "AUDIT":
		if m, err := time.Parse("2006-01", value); err != nil || m.Format("2006-01") != value {
			return k, fmt.Errorf("audit bucket %q in pk is not yyyy-mm", value)
		}
		k.bucket = value
	case "IDEMPOTENCY":
		if !isHex64(value) {
			return k, fmt.Errorf("idempotency hash %q in pk is not 64 lower-case hex digits", value)
		}
		k.hash = value
	}
	if err := spec.sk(sk, &k); err != nil {
		return k, err
	}
	return k, nil
}

// exactSK accepts only the sort key want.
func exactSK(want string) func(string, *keyParts) error {
	return func(sk string, _ *keyParts) error {
		if sk != want {
			return fmt.Errorf("sk %q is not %q", sk, want)
		}
		return nil
	}
}

// idSK accepts prefix + an ID that valid accepts, and stores the ID.
func idSK(prefix, what string, valid func(string) bool, set func(*keyParts, string)) func(string, *keyParts) error {
	return func(sk string, k *keyParts) error {
		id, ok := trimPrefix(sk, prefix)
		if !ok {
			return fmt.Errorf("sk %q is not %s<%sId>", sk, prefix, what)
		}
		if !valid(id) {
			return fmt.Errorf("%s ID %q in sk is malformed", what, id)
		}
		set(k, id)
		return nil
	}
}

func normalizedEmail(s string) bool {
	if s == "" || s != tenant.NormalizeEmail(s) {
		return false
	}
	for _, r := range s {
		if r == '#' || r < 0x20 {
			return false
		}
	}
	return true
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if (s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f') {
			return false
		}
	}
	return true
}

// ---------------------------------------------------------------------------
// Index keys.

// markerPK is the GSI3 partition of every Org, Team and Ticket being deleted.
const markerPK = "DELETING"

// gsiKey is the pair of keys an item must carry for one index; the zero
// value means none.
type gsiKey struct {
	pk, sk   string
	optional bool // absent is fine too (legacy items)
}

// gsiKeys are an item's keys of GSI1..GSI5 (index 0 is unused).
type gsiKeys [8]gsiKey // by index number, 1 to 7

// deletingMarker sets GSI3 to the DELETING marker of a deleting item.
func deletingMarker(it *item, g gsiKeys, sk string) gsiKeys {
	if it.deleting {
		g[3] = gsiKey{pk: markerPK, sk: sk}
	}
	return g
}

func ticketGSIs(it *item) gsiKeys {
	k := it.k
	status, _ := str(it.av, "status")
	requester, _ := str(it.av, "requesterId")
	priority, _ := str(it.av, "priority")
	g := gsiKeys{
		1: {pk: orgPK(k.org), sk: ticketSK(k.ticket)},
		2: {pk: orgUserPK(k.org, requester), sk: ticketSK(k.ticket)},
		3: {pk: orgPK(k.org), sk: statusSK(status, k.ticket)},
		6: {pk: priorityPK(k.org, priority), sk: statusSK(status, k.ticket)},
	}
	if a, _ := str(it.av, "assigneeId"); a != "" {
		g[4] = gsiKey{pk: assigneePK(k.org, a), sk: ticketSK(k.ticket)}
		g[7] = gsiKey{pk: assigneePK(k.org, a), sk: statusSK(status, k.ticket)}
	}
	if t, _ := str(it.av, "teamId"); t != "" {
		g[5] = gsiKey{pk: teamTicketsPK(k.org, t), sk: statusSK(status, k.ticket)}
	}
	return deletingMarker(it, g, prefixTicket+k.org+"#"+k.ticket)
}

// checkGSIKeys compares an item's index keys with those its type and
// fields require. A wrong or missing DELETING marker is deleting.marker.
func (c *checker) checkGSIKeys(it *item) {
	want := it.spec.gsis(it)
	for n := 1; n <= len(Schema.Indexes); n++ {
		pkAttr, skAttr := fmt.Sprintf("gsi%dpk", n), fmt.Sprintf("gsi%dsk", n)
		_, hasPK := it.av[pkAttr]
		_, hasSK := it.av[skAttr]
		gotPK, _ := str(it.av, pkAttr)
		gotSK, _ := str(it.av, skAttr)
		w := want[n]
		switch {
		case w.optional && !hasPK && !hasSK:
			continue
		case w.pk == "" && !hasPK && !hasSK:
			continue
		case w.pk != "" && hasPK && hasSK && gotPK == w.pk && gotSK == w.sk:
			continue
		}
		rule := it.spec.gsiRule
		if n == 3 && (w.pk == markerPK || gotPK == markerPK) {
			rule = RuleDeletingMarker
		}
		got := "absent"
		if hasPK || hasSK {
			got = render(it.av[pkAttr]) + " / " + render(it.av[skAttr])
		}
		if w.pk == "" {
			c.report(it, rule, "GSI%d keys are %s, want none", n, got)
		} else {
			c.report(it, rule, "GSI%d keys are %s, want %q / %q", n, got, w.pk, w.sk)
		}
	}
}

// checkIndex is rule 12 for one index: every entry is a base item with the
// same index keys, and every base item with both index keys is an entry.
func (c *checker) checkIndex(n int, ix Index, entries []map[string]types.AttributeValue) {
	seen := map[key]int{}
	for _, e := range entries {
		pk, _ := str(e, attrPK)
		sk, _ := str(e, attrSK)
		ipk, _ := str(e, ix.PK)
		isk, _ := str(e, ix.SK)
		k := key{pk, sk}
		seen[k]++
		v := Violation{Rule: RuleGSIUnexplained, PK: pk, SK: sk}
		base := c.byKey[k]
		switch {
		case base == nil:
			v.Detail = fmt.Sprintf("%s entry %q / %q has no base item", ix.Name, ipk, isk)
		case seen[k] > 1:
			v.Detail = fmt.Sprintf("%s holds the item more than once", ix.Name)
		default:
			bpk, _ := str(base.av, ix.PK)
			bsk, _ := str(base.av, ix.SK)
			if bpk == ipk && bsk == isk {
				continue
			}
			v.Detail = fmt.Sprintf("%s entry %q / %q, but the base item has %q / %q", ix.Name, ipk, isk, bpk, bsk)
		}
		c.out = append(c.out, v)
	}
	for _, it := range c.items {
		_, okPK := str(it.av, ix.PK)
		_, okSK := str(it.av, ix.SK)
		if okPK && okSK && seen[key{it.pk, it.sk}] == 0 {
			c.report(it, RuleGSIMissing, "GSI%d lacks the item", n)
		}
	}
}

// ---------------------------------------------------------------------------
// Rules of each entity (rules 3 to 11).

// checkOrg is rule 5: ownerCount counts the org's owners, and there is one.
func (c *checker) checkOrg(it *item) {
	count, owners := c.num(it, "ownerCount"), c.owners[it.k.org]
	if count != int64(owners) {
		c.relational(it, RuleOrgOwnerCount, "ownerCount is %d, the org has %d owner OrgUsers", count, owners)
	}
	if owners < 1 && !it.deleting {
		c.relational(it, RuleOrgNoOwner, "the org has no owner OrgUser")
	}
}

// checkOrgUser is rule 3: the user's email is claimed for them, their team
// set is exactly the teams they have an edge in (this also covers rule 6's
// "the OrgUser's teamIds contains the edge's team"), a deleting user is the
// owner offboarding the org, and the role is valid.
func (c *checker) checkOrgUser(it *item) {
	k := it.k
	role, _ := str(it.av, "role")
	if !authz.Role(role).Valid() {
		c.report(it, RuleUserBadRole, "role %q is not owner, admin or member", role)
	}
	if it.deleting {
		if org := c.orgs[k.org]; org != nil && !org.deleting {
			c.report(it, RuleUserDeletingMismatch, "the user is marked deleting, the org is not")
		}
		if role != string(authz.Owner) {
			c.report(it, RuleUserDeletingMismatch, "the user is marked deleting but is %q, not an owner", role)
		}
	}

	email, _ := str(it.av, "email")
	if norm := tenant.NormalizeEmail(email); !normalizedEmail(norm) {
		c.report(it, RuleBadAttr, "email %q is empty or has '#' or control characters", email)
	} else if claim := c.claims[ref{k.org, norm}]; claim == nil {
		c.relational(it, RuleUserClaimMissing, "no EmailClaim %s", claimKey(k.org, norm).PK)
	} else if owner, _ := str(claim.av, "userId"); owner != k.user {
		c.relational(it, RuleUserClaimMismatch, "EmailClaim %s names user %q", claim.pk, owner)
	}

	has := map[string]bool{}
	for _, t := range c.stringSet(it, "teamIds") {
		if !ids.ValidResource(t) {
			c.report(it, RuleBadAttr, "teamIds holds %q, not a ULID", t)
		}
		has[t] = true
	}
	edges := c.userEdges[ref{k.org, k.user}]
	var missing, extra []string
	for t := range edges {
		if !has[t] {
			missing = append(missing, t)
		}
	}
	for t := range has {
		if edges[t] == 0 {
			extra = append(extra, t)
		}
	}
	if len(missing) > 0 || len(extra) > 0 {
		sort.Strings(missing)
		sort.Strings(extra)
		c.relational(it, RuleUserTeamIDs, "teamIds lacks teams the user has an edge in %v, and holds teams without an edge %v", missing, extra)
	}
}

// checkClaim is rule 4: the claim's user exists and has the claimed email.
func (c *checker) checkClaim(it *item) {
	userID, _ := str(it.av, "userId")
	if !ids.ValidUser(userID) {
		c.report(it, RuleBadAttr, "userId %q is malformed", userID)
		return
	}
	u := c.users[ref{it.k.org, userID}]
	if u == nil {
		c.relational(it, RuleClaimUserMissing, "no OrgUser %s/%s", orgPK(it.k.org), userSK(userID))
		return
	}
	if email, _ := str(u.av, "email"); tenant.NormalizeEmail(email) != it.k.email {
		c.relational(it, RuleClaimEmailMismatch, "OrgUser %s has email %q", userID, email)
	}
}

// checkTeam is rule 7: memberCount and ownerCount count the team's edges
// and owner edges exactly (also while the team is being deleted), and the
// team has an owner unless it is being deleted.
func (c *checker) checkTeam(it *item) {
	edges := c.edges[ref{it.k.org, it.k.team}]
	owners := 0
	for _, e := range edges {
		if role, _ := str(e.av, "role"); role == string(authz.Owner) {
			owners++
		}
	}
	if n := c.num(it, "memberCount"); n != int64(len(edges)) {
		c.relational(it, RuleTeamMemberCount, "memberCount is %d, the team has %d edges", n, len(edges))
	}
	if _, present := it.av["ownerCount"]; !present {
		c.relational(it, RuleTeamOwnerCount, "ownerCount is missing, the team has %d owner edges", owners)
	} else if n := c.num(it, "ownerCount"); n != int64(owners) {
		c.relational(it, RuleTeamOwnerCount, "ownerCount is %d, the team has %d owner edges", n, owners)
	}
	if owners < 1 && !it.deleting {
		c.relational(it, RuleTeamNoOwner, "the team has no owner edge")
	}
}

// checkMembership is rule 6: the edge's team and user exist, and its role
// is valid. (The user's team set is checked from the user's side.)
func (c *checker) checkMembership(it *item) {
	k := it.k
	if role, _ := str(it.av, "role"); !authz.Role(role).Valid() {
		c.report(it, RuleMemberBadRole, "role %q is not owner, admin or member", role)
	}
	if c.teams[ref{k.org, k.team}] == nil {
		c.relational(it, RuleMemberTeamMissing, "no Team item %s/%s", it.pk, skMetadata)
	}
	if c.users[ref{k.org, k.user}] == nil {
		c.relational(it, RuleMemberUserMissing, "no OrgUser %s/%s", orgPK(k.org), userSK(k.user))
	}
}

// checkTicket is rule 8 (its index keys are checked with its shape):
// commentCount counts its comments; status, priority and references are
// well-formed.
func (c *checker) checkTicket(it *item) {
	if status, _ := str(it.av, "status"); !ticket.Status(status).Valid() {
		c.report(it, RuleTicketBadStatus, "status %q is not one of %v", status, ticket.Statuses)
	}
	if p, _ := str(it.av, "priority"); !ticket.Priority(p).Valid() {
		c.report(it, RuleTicketBadPriority, "priority %q is not low, normal, high or urgent", p)
	}
	if r, _ := str(it.av, "requesterId"); !ids.ValidUser(r) {
		c.report(it, RuleBadAttr, "requesterId %q is malformed", r)
	}
	if a, present := str(it.av, "assigneeId"); present && !ids.ValidUser(a) {
		c.report(it, RuleBadAttr, "assigneeId %q is malformed", a)
	}
	if t, present := str(it.av, "teamId"); present && !ids.ValidResource(t) {
		c.report(it, RuleBadAttr, "teamId %q is not a ULID", t)
	}
	n, comments := c.num(it, "commentCount"), c.comments[ref{it.k.org, it.k.ticket}]
	if n != int64(comments) {
		c.relational(it, RuleTicketCommentCount, "commentCount is %d, the ticket has %d comments", n, comments)
	}
}

// checkComment is rule 9: the comment's ticket exists.
func (c *checker) checkComment(it *item) {
	if a, _ := str(it.av, "authorId"); !ids.ValidUser(a) {
		c.report(it, RuleBadAttr, "authorId %q is malformed", a)
	}
	if c.tickets[ref{it.k.org, it.k.ticket}] == nil {
		c.relational(it, RuleCommentTicketMissing, "no Ticket item %s/%s", it.pk, skMetadata)
	}
}

// expired reports whether an invitation or its pointer has expired at Now
// (TTL deletes it some time later).
func (c *checker) expired(it *item) bool {
	at := c.num(it, "expiresAt")
	return !c.o.Now.IsZero() && !c.o.Now.Before(time.Unix(at, 0))
}

// checkInvitation is rule 10: a live invitation's email points at it.
func (c *checker) checkInvitation(it *item) {
	if role, _ := str(it.av, "role"); !authz.Role(role).Valid() {
		c.report(it, RuleInviteBadRole, "role %q is not owner, admin or member", role)
	}
	if _, present := it.av["expiresAt"]; !present {
		c.report(it, RuleBadAttr, "expiresAt is missing")
	}
	email, _ := str(it.av, "email")
	norm := tenant.NormalizeEmail(email)
	if !normalizedEmail(norm) {
		c.report(it, RuleBadAttr, "email %q is empty or has '#' or control characters", email)
		return
	}
	if c.expired(it) {
		return
	}
	p := c.pointers[ref{it.k.org, norm}]
	if p == nil {
		c.relational(it, RuleInvitePointerMissing, "no InvitationEmail %s", invitationEmailKey(it.k.org, norm).PK)
		return
	}
	if id, _ := str(p.av, "invitationId"); id != it.k.invitation {
		c.relational(it, RuleInvitePointerMismatch, "InvitationEmail %s points at invitation %q", p.pk, id)
	}
}

// checkInvitationEmail is rule 10's other half: a live pointer's invitation
// exists and has the pointer's email.
func (c *checker) checkInvitationEmail(it *item) {
	if _, present := it.av["expiresAt"]; !present {
		c.report(it, RuleBadAttr, "expiresAt is missing")
	}
	id, _ := str(it.av, "invitationId")
	if !ids.ValidResource(id) {
		c.report(it, RuleBadAttr, "invitationId %q is not a ULID", id)
		return
	}
	if c.expired(it) {
		return
	}
	inv := c.invites[ref{it.k.org, id}]
	if inv == nil {
		c.relational(it, RulePointerInviteMissing, "no Invitation %s", invitationKey(it.k.org, id).PK)
		return
	}
	if email, _ := str(inv.av, "email"); tenant.NormalizeEmail(email) != it.k.email {
		c.relational(it, RulePointerEmailMismatch, "Invitation %s has email %q", id, email)
	}
}

// checkAudit: an event lies in the bucket of the month it happened (its
// org's existence is rule 2).
func (c *checker) checkAudit(it *item) {
	at, _ := str(it.av, "at")
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		c.report(it, RuleBadAttr, "at %q is not an RFC 3339 time", at)
		return
	}
	if b := auditBucket(t); b != it.k.bucket {
		c.report(it, RuleAttrMismatch, "at %s is in bucket %s, the key says %s", at, b, it.k.bucket)
	}
}

// checkIdempotency: the record names a valid caller (its org's existence is
// rule 2, its index keys are checked with its shape).
func (c *checker) checkIdempotency(it *item) {
	if it.k.org == "" {
		return // userId is checked against the key
	}
	if u, _ := str(it.av, "userId"); !ids.ValidUser(u) {
		c.report(it, RuleBadAttr, "userId %q is malformed", u)
	}
}

// ---------------------------------------------------------------------------
// Attribute decoding.

// str returns a string attribute, and whether it is one.
func str(av map[string]types.AttributeValue, name string) (string, bool) {
	s, ok := av[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// num returns an integer attribute (0 when absent), reporting one that is
// not an integer.
func (c *checker) num(it *item, name string) int64 {
	v, present := it.av[name]
	if !present {
		return 0
	}
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if x, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
			return x
		}
	}
	c.report(it, RuleBadAttr, "%s is %s, not an integer", name, render(v))
	return 0
}

// stringSet returns a string-set attribute (nil when absent), reporting
// one of another type.
func (c *checker) stringSet(it *item, name string) []string {
	v, present := it.av[name]
	if !present {
		return nil
	}
	if ss, ok := v.(*types.AttributeValueMemberSS); ok {
		return ss.Value
	}
	c.report(it, RuleBadAttr, "%s is %s, not a string set", name, render(v))
	return nil
}

// render shows an attribute value in a violation's detail.
func render(v types.AttributeValue) string {
	switch v := v.(type) {
	case nil:
		return "absent"
	case *types.AttributeValueMemberS:
		return strconv.Quote(v.Value)
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return "BOOL:" + strconv.FormatBool(v.Value)
	case *types.AttributeValueMemberSS:
		return fmt.Sprintf("SS:%q", v.Value)
	default:
		return fmt.Sprintf("%T", v)
	}
}
