// Package storetest checks a tenantd table against the rules of its data
// model (docs/data-model.md), for tests. It Scans, which the product never
// does. It reads raw attribute maps and spells every key itself, apart from
// the store's code, so it checks what is really stored.
package storetest

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
	"github.com/tenantd/tenantd/internal/webhook"
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
	RuleTeamOwnerCount  = "team.owner_count"  // ownerCount missing or differs from the team's owner edges
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

	RuleOwnedOrgsCount   = "owned_orgs.count"   // owned differs from the orgs whose createdBy is the user
	RuleOwnedOrgsMissing = "owned_orgs.missing" // an org whose createdBy user has no OwnedOrgs item

	RuleAuditGSIKeys       = "audit_event.gsi_keys"
	RuleIdempotencyGSIKeys = "idempotency.gsi_keys"
	RuleRateLimitGSIKeys   = "rate_limit.gsi_keys"

	RuleWebhookGSIKeys   = "webhook.gsi_keys"
	RuleAPIKeyGSIKeys    = "api_key.gsi_keys"
	RuleAPIKeyBadRole    = "api_key.bad_role"          // role not admin or member
	RuleAPIKeyBadHash    = "api_key.bad_hash"          // hash not a SHA-256 in lower-case hex
	RuleOrgAPIKeyCount   = "org.api_key_count"         // apiKeyCount differs from the org's APIKey items
	RuleDeliveryGSIKeys  = "webhook_delivery.gsi_keys" // its GSI1 entry, and its endpoint's queue entry while pending
	RuleDeliveryBadState = "webhook_delivery.bad_state"
	RuleDueGSIKeys       = "webhook_due.gsi_keys" // its GSI1 entry and its due-shard entry

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
	// AllowInProgress tolerates items marked deleting (a deletion still
	// running). The relational rules (counts, claims, team sets, parents,
	// invitation pointers) are then skipped for the items of an org being
	// offboarded, which deletes in bulk outside transactions. A deleting
	// Team or Ticket may lack an owner, but its counts must match what is
	// left of it.
	AllowInProgress bool
	// Now expires invitations and their pointers, which may then dangle
	// (TTL deletes them later). The zero time expires nothing.
	Now time.Time
}

// CheckInvariants Scans the base table (consistently) and every index, and
// returns every violation, sorted by rule, pk, sk; none means healthy. The
// scans are not one snapshot: call it when nothing writes to the table.
func CheckInvariants(ctx context.Context, client *dynamodb.Client, table string, o CheckOptions) ([]Violation, error) {
	base, err := scan(ctx, client, table, "")
	if err != nil {
		return nil, err
	}
	c := newChecker(o, base)
	c.checkItems()
	for _, ix := range store.Schema.Indexes {
		entries, err := scan(ctx, client, table, ix.Name)
		if err != nil {
			return nil, err
		}
		c.checkIndex(ix, entries)
	}
	slices.SortFunc(c.out, func(a, b Violation) int {
		return cmp.Or(strings.Compare(a.Rule, b.Rule), strings.Compare(a.PK, b.PK),
			strings.Compare(a.SK, b.SK), strings.Compare(a.Detail, b.Detail))
	})
	return c.out, nil
}

type attrs = map[string]types.AttributeValue

// scan reads every item of the table (index "", consistently) or of index.
func scan(ctx context.Context, client *dynamodb.Client, table, index string) ([]attrs, error) {
	in := &dynamodb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(index == "")}
	if index != "" {
		in.IndexName = &index
	}
	var items []attrs
	for p := dynamodb.NewScanPaginator(client, in); p.HasMorePages(); {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("check invariants: scan %s: %w", cmp.Or(index, table), err)
		}
		items = append(items, out.Items...)
	}
	return items, nil
}

// EntityTypes are the item types of the table (the type attribute), sorted:
// what docs/data-model.md must chart.
func EntityTypes() []string { return slices.Sorted(maps.Keys(entities)) }

const metadata = "#METADATA"

// entity is what the checker knows of one item type.
type entity struct {
	kind      string                // the pk after ORG#<orgId>: "" for the org's partition, TEAM for ORG#<orgId>#TEAM#<teamId>...
	sk        string                // the sk, or its prefix when skID is set
	skID      string                // the key part the sk ends with: userId, commentId or eventId
	attrs     []string              // redundant attributes, equal to the key's parts ("" = absent)
	gsiRule   string                // the rule of wrong index keys
	gsis      func(*item) gsiKeys   // the index keys the item must carry; nil: none
	canDelete bool                  // the item may be marked deleting
	check     func(*checker, *item) // the entity's rules, once every item is indexed
}

var entities = map[string]*entity{
	"Org": {sk: metadata, attrs: []string{"orgId"}, gsiRule: RuleOrgGSIKeys, canDelete: true, check: (*checker).checkOrg,
		gsis: func(it *item) gsiKeys { return deletingMarker(it, gsiKeys{}, "ORG#"+it.k.org) }},
	"OrgUser": {sk: "USER#", skID: "userId", attrs: []string{"orgId", "userId"}, gsiRule: RuleUserGSIKeys, canDelete: true,
		check: (*checker).checkOrgUser, gsis: func(it *item) gsiKeys {
			o, u := "ORG#"+it.k.org, "USER#"+it.k.user
			return gsiKeys{1: {pk: u, sk: o}, 2: {pk: o + "#" + u, sk: u}}
		}},
	"EmailClaim": {kind: "EMAIL", sk: "#CLAIM", attrs: []string{"orgId", "email"}, gsiRule: RuleClaimGSIKeys,
		check: (*checker).checkClaim, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "EMAIL#" + it.k.email, optional: true}}
		}},
	"Team": {kind: "TEAM", sk: metadata, attrs: []string{"orgId", "teamId"}, gsiRule: RuleTeamGSIKeys, canDelete: true,
		check: (*checker).checkTeam, gsis: func(it *item) gsiKeys {
			return deletingMarker(it, gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "TEAM#" + it.k.team}}, "TEAM#"+it.k.org+"#"+it.k.team)
		}},
	"Membership": {kind: "TEAM", sk: "MEMBER#", skID: "userId", attrs: []string{"orgId", "teamId", "userId"},
		gsiRule: RuleMemberGSIKeys, check: (*checker).checkMembership, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "USER#" + it.k.user, sk: "TEAM#" + it.k.org + "#" + it.k.team}}
		}},
	"Ticket": {kind: "TICKET", sk: metadata, attrs: []string{"orgId", "ticketId"}, gsiRule: RuleTicketGSIKeys, canDelete: true,
		check: (*checker).checkTicket, gsis: ticketGSIs},
	"Comment": {kind: "TICKET", sk: "COMMENT#", skID: "commentId", attrs: []string{"orgId", "ticketId", "commentId"},
		gsiRule: RuleCommentGSIKeys, check: (*checker).checkComment},
	"Invitation": {kind: "INVITE", sk: "#INVITE", attrs: []string{"orgId", "invitationId"}, gsiRule: RuleInviteGSIKeys,
		check: (*checker).checkInvitation, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "INVITE#" + it.k.invitation}}
		}},
	"InvitationEmail": {kind: "INVITEEMAIL", sk: "#INVITE", attrs: []string{"orgId"}, gsiRule: RulePointerGSIKeys,
		check: (*checker).checkInvitationEmail, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "EMAILINVITE#" + it.k.email}}
		}},
	"AuditEvent": {kind: "AUDIT", sk: "EVENT#", skID: "eventId", attrs: []string{"orgId", "eventId"},
		gsiRule: RuleAuditGSIKeys, check: (*checker).checkAudit},
	"OwnedOrgs": {kind: "ORGS", sk: "#OWNED", attrs: []string{"userId"}, check: (*checker).checkOwnedOrgs},
	"IdempotencyRecord": {kind: "IDEMPOTENCY", sk: "#IDEMPOTENCY", attrs: []string{"orgId"}, gsiRule: RuleIdempotencyGSIKeys,
		check: (*checker).checkIdempotency, gsis: func(it *item) gsiKeys {
			if it.k.org == "" { // a user's record, outside any org
				return gsiKeys{}
			}
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: it.pk}}
		}},
	"Webhook": {kind: "WEBHOOK", sk: metadata, attrs: []string{"orgId", "webhookId"}, gsiRule: RuleWebhookGSIKeys,
		check: func(*checker, *item) {}, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "WEBHOOK#" + it.k.webhook}}
		}},
	"WebhookDelivery": {kind: "WEBHOOK", sk: "DELIVERY#", skID: "eventId", attrs: []string{"orgId", "webhookId", "eventId"},
		gsiRule: RuleDeliveryGSIKeys, check: (*checker).checkDelivery, gsis: func(it *item) gsiKeys {
			g := gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "WHDELIVERY#" + it.k.webhook + "#" + it.k.event}}
			if it.s("state") == string(webhook.Pending) {
				queued, _ := strconv.ParseInt(it.n("queuedAt"), 10, 64)
				g[3] = gsiKey{pk: "WEBHOOKQUEUE#" + it.k.org + "#" + it.k.webhook, sk: fmt.Sprintf("%013d#%s", queued, it.k.event)}
			}
			return g
		}},
	"WebhookDue": {kind: "WEBHOOK", sk: "#DUE", attrs: []string{"orgId", "webhookId"}, gsiRule: RuleDueGSIKeys,
		check: func(*checker, *item) {}, gsis: func(it *item) gsiKeys {
			g := gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "WHDUE#" + it.k.webhook}}
			if sk := it.s("gsi3sk"); strings.HasSuffix(sk, "#"+it.k.org+"#"+it.k.webhook) {
				g[3] = gsiKey{pk: "WEBHOOKDUE#" + strconv.Itoa(webhook.Shard(it.k.org, it.k.webhook)), sk: sk}
			}
			return g
		}},
	"APIKey": {kind: "APIKEY", sk: "#APIKEY", attrs: []string{"orgId", "keyId"}, gsiRule: RuleAPIKeyGSIKeys,
		check: (*checker).checkAPIKey, gsis: func(it *item) gsiKeys {
			return gsiKeys{1: {pk: "ORG#" + it.k.org, sk: "APIKEY#" + it.k.key}}
		}},
	"StreamCheckpoint": {kind: "STREAM", sk: "SHARD#", check: func(*checker, *item) {}},
	"ServerKey":        {kind: "SERVER", sk: "#APIKEYMAC", check: func(*checker, *item) {}},
	"RateLimit":        {kind: "LIMIT", sk: "#LIMIT", gsiRule: RuleRateLimitGSIKeys, check: (*checker).checkRateLimit},
}

// kinds are the partitions ORG#<orgId>#<KIND>#<value>: the key part value
// is, and its check.
var kinds = map[string]struct {
	part  string
	valid func(string) bool
}{
	"TEAM": {"teamId", ids.ValidResource}, "TICKET": {"ticketId", ids.ValidResource}, "INVITE": {"invitationId", ids.ValidResource},
	"EMAIL": {"email", normalizedEmail}, "INVITEEMAIL": {"email", normalizedEmail}, "WEBHOOK": {"webhookId", ids.ValidResource},
	"APIKEY": {"keyId", ids.ValidResource},
	"AUDIT":  {"bucket", func(v string) bool { m, err := time.Parse("2006-01", v); return err == nil && m.Format("2006-01") == v }},
	"IDEMPOTENCY": {"hash", func(v string) bool { // a SHA-256 in lower-case hex
		return len(v) == 64 && strings.Trim(v, "0123456789abcdef") == ""
	}},
}

// keyParts are the values a key holds; which are set depends on the type.
type keyParts struct{ org, user, team, ticket, comment, invitation, event, email, bucket, webhook, key string }

// part is the key part an attribute name (or "bucket") stands for; nil for
// one the checker does not keep.
func (k *keyParts) part(name string) *string {
	return map[string]*string{"orgId": &k.org, "userId": &k.user, "teamId": &k.team, "ticketId": &k.ticket,
		"commentId": &k.comment, "invitationId": &k.invitation, "eventId": &k.event, "email": &k.email, "bucket": &k.bucket, "webhookId": &k.webhook, "keyId": &k.key}[name]
}

// parseKey checks that pk and sk have the shape e requires and returns the
// parts they hold. Partition keys are ORG#<orgId>[#<KIND>#<value>], or, for
// a user's idempotency records, USER#<userId>#IDEMPOTENCY#<hash>, or the
// count of the orgs a user owns, USER#<userId>#ORGS.
func parseKey(e *entity, pk, sk string) (keyParts, error) {
	var k keyParts
	p := strings.Split(pk, "#")
	var kind, value string
	if e.kind == "STREAM" { // the stream reader's checkpoints: no tenant's
		if pk != "WEBHOOKSTREAM" || !strings.HasPrefix(sk, e.sk) {
			return k, fmt.Errorf("key %q / %q is not WEBHOOKSTREAM / SHARD#<shardId>", pk, sk)
		}
		return k, nil
	}
	if e.kind == "SERVER" { // the server key of the API keys' MACs: no tenant's
		if pk != "SERVERKEY" || sk != e.sk {
			return k, fmt.Errorf("key %q / %q is not SERVERKEY / #APIKEYMAC", pk, sk)
		}
		return k, nil
	}
	switch {
	case len(p) == 2 && p[0] == "ORG":
		k.org = p[1]
	case len(p) == 4 && p[0] == "ORG":
		k.org, kind, value = p[1], p[2], p[3]
	case len(p) == 4 && p[0] == "USER" && p[2] == "IDEMPOTENCY" && e.kind == "IDEMPOTENCY",
		len(p) == 3 && p[0] == "USER" && p[2] == "ORGS" && e.kind == "ORGS":
		if !ids.ValidUser(p[1]) {
			return k, fmt.Errorf("user ID %q in pk is malformed", p[1])
		}
		k.user, kind = p[1], p[2]
		if len(p) == 4 {
			value = p[3]
		}
	case len(p) == 3 && p[0] == "LIMIT" && e.kind == "LIMIT": // a global rate-limit bucket
		if ok := p[1] == "org" && ids.ValidResource(p[2]) || (p[1] == "user" || p[1] == "caller") && ids.ValidUser(p[2]); !ok {
			return k, fmt.Errorf("pk %q is not LIMIT#<org|user|caller>#<id>", pk)
		}
		if sk != e.sk {
			return k, fmt.Errorf("sk %q is not %q", sk, e.sk)
		}
		return k, nil
	default:
		return k, fmt.Errorf("pk %q is not ORG#<orgId>[#<KIND>#<value>]", pk)
	}
	if k.user == "" && !ids.ValidResource(k.org) {
		return k, fmt.Errorf("org ID %q in pk is not a ULID", k.org)
	}
	if kind != e.kind {
		return k, fmt.Errorf("pk %q is not in a partition of kind %q", pk, e.kind)
	}
	if kd, ok := kinds[kind]; ok {
		if !kd.valid(value) {
			return k, fmt.Errorf("%s %q in pk is malformed", kd.part, value)
		}
		if p := k.part(kd.part); p != nil {
			*p = value
		}
	}
	if e.skID == "" {
		if sk != e.sk {
			return k, fmt.Errorf("sk %q is not %q", sk, e.sk)
		}
		return k, nil
	}
	valid := ids.ValidResource
	if e.skID == "userId" {
		valid = ids.ValidUser
	}
	id, ok := strings.CutPrefix(sk, e.sk)
	if !ok || !valid(id) {
		return k, fmt.Errorf("sk %q is not %s<%s>", sk, e.sk, e.skID)
	}
	*k.part(e.skID) = id
	return k, nil
}

func normalizedEmail(s string) bool {
	return s != "" && s == tenant.NormalizeEmail(s) && !strings.ContainsFunc(s, func(r rune) bool { return r == '#' || r < 0x20 })
}

// gsiKey is the pair of keys an item must carry in one index; the zero
// value means none.
type gsiKey struct {
	pk, sk   string
	optional bool // absent is fine too (legacy claims)
}

// gsiKeys are an item's keys by index number, GSI1 to GSI7.
type gsiKeys [8]gsiKey

// deletingMarker sets GSI3 to the DELETING marker of a deleting item.
func deletingMarker(it *item, g gsiKeys, sk string) gsiKeys {
	if it.deleting {
		g[3] = gsiKey{pk: "DELETING", sk: sk}
	}
	return g
}

func ticketGSIs(it *item) gsiKeys {
	o, id := "ORG#"+it.k.org, it.k.ticket
	queue := "STATUS#" + it.s("status") + "#" + id
	g := gsiKeys{
		1: {pk: o, sk: "TICKET#" + id},
		2: {pk: o + "#USER#" + it.s("requesterId"), sk: "TICKET#" + id},
		3: {pk: o, sk: queue},
		6: {pk: o + "#PRIORITY#" + it.s("priority"), sk: queue},
	}
	if a := it.s("assigneeId"); a != "" {
		g[4] = gsiKey{pk: o + "#ASSIGNEE#" + a, sk: "TICKET#" + id}
		g[7] = gsiKey{pk: o + "#ASSIGNEE#" + a, sk: queue}
	}
	if t := it.s("teamId"); t != "" {
		g[5] = gsiKey{pk: o + "#TEAM#" + t, sk: queue}
	}
	return deletingMarker(it, g, "TICKET#"+it.k.org+"#"+id)
}

// item is one base-table item with what its key says.
type item struct {
	av       attrs
	pk, sk   string
	typ      string
	e        *entity // nil: unknown type
	k        keyParts
	ok       bool // known type and well-formed key: the entity's rules apply
	deleting bool
}

// s returns a string attribute, or "".
// n is a number attribute's digits ("" when absent).
func (it *item) n(name string) string {
	v, _ := it.av[name].(*types.AttributeValueMemberN)
	if v == nil {
		return ""
	}
	return v.Value
}

func (it *item) s(name string) string {
	v, _ := str(it.av, name)
	return v
}

type key struct{ pk, sk string }

// checker holds the scanned items, what the relational rules count, and
// the violations found.
type checker struct {
	o        CheckOptions
	out      []Violation
	items    []*item
	byKey    map[key]*item
	owners   map[string]int          // org or team pk -> its owner OrgUsers or edges (they share its pk)
	keys     map[string]int          // org pk -> its APIKey items
	children map[string]int          // team or ticket pk -> its edges or comments
	teamsOf  map[key]map[string]bool // OrgUser key -> the teams the user has an edge in
	ownedBy  map[string]int          // user ID -> the orgs whose createdBy they are
}

func newChecker(o CheckOptions, base []attrs) *checker {
	c := &checker{o: o, byKey: map[key]*item{}, owners: map[string]int{}, keys: map[string]int{}, children: map[string]int{}, teamsOf: map[key]map[string]bool{}, ownedBy: map[string]int{}}
	for _, av := range base {
		it := &item{av: av}
		it.pk, it.sk = it.s(store.Schema.PK), it.s(store.Schema.SK)
		c.items = append(c.items, it)
		c.byKey[key{it.pk, it.sk}] = it
	}
	return c
}

// get returns the well-formed item of type typ at pk/sk, or nil.
func (c *checker) get(typ, pk, sk string) *item {
	if it := c.byKey[key{pk, sk}]; it != nil && it.ok && it.typ == typ {
		return it
	}
	return nil
}

func (c *checker) report(it *item, rule, format string, args ...any) {
	c.out = append(c.out, Violation{Rule: rule, PK: it.pk, SK: it.sk, Detail: fmt.Sprintf(format, args...)})
}

// relational reports a relational rule, unless the item's org is being
// offboarded and AllowInProgress is set.
func (c *checker) relational(it *item, rule, format string, args ...any) {
	if org := c.get("Org", "ORG#"+it.k.org, metadata); c.o.AllowInProgress && org != nil && org.deleting {
		return
	}
	c.report(it, rule, format, args...)
}

// checkItems checks each item alone and indexes the well-formed ones, then
// runs the rules that relate items to one another.
func (c *checker) checkItems() {
	for _, it := range c.items {
		c.checkShape(it)
	}
	for _, it := range c.items {
		// Every item under ORG#<orgId> belongs to an org, which must exist.
		if rest, ok := strings.CutPrefix(it.pk, "ORG#"); ok {
			if org, _, _ := strings.Cut(rest, "#"); org != "" && c.get("Org", "ORG#"+org, metadata) == nil {
				c.report(it, RuleOrphanOrg, "org %s has no Org item", org)
			}
		}
		if it.ok {
			it.e.check(c, it)
		}
	}
}

// checkShape checks an item's deleting flag, type, key, redundant
// attributes and index keys, and indexes it if well-formed.
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
	it.typ = it.s("type")
	if it.e = entities[it.typ]; it.e == nil {
		c.report(it, RuleUnknownType, "type %q is not a known entity", it.typ)
		return
	}
	if it.deleting && !it.e.canDelete {
		c.report(it, RuleDeletingMarker, "a %s is never marked deleting", it.typ)
	}
	var err error
	if it.k, err = parseKey(it.e, it.pk, it.sk); err != nil {
		c.report(it, RuleBadKey, "%s: %v", it.typ, err)
		return
	}
	it.ok = true
	for _, a := range it.e.attrs {
		c.wantAttr(it, a, *it.k.part(a))
	}
	c.checkGSIKeys(it)

	if (it.typ == "OrgUser" || it.typ == "Membership") && it.s("role") == string(authz.Owner) {
		c.owners[it.pk]++
	}
	if it.typ == "APIKey" {
		c.keys["ORG#"+it.k.org]++
	}
	if by := it.s("createdBy"); it.typ == "Org" && by != "" {
		c.ownedBy[by]++
	}
	if it.typ == "Membership" || it.typ == "Comment" {
		c.children[it.pk]++
	}
	if it.typ == "Membership" {
		u := key{"ORG#" + it.k.org, "USER#" + it.k.user}
		if c.teamsOf[u] == nil {
			c.teamsOf[u] = map[string]bool{}
		}
		c.teamsOf[u][it.k.team] = true
	}
}

// wantAttr checks a redundant attribute: equal to want, or absent when want
// is "".
func (c *checker) wantAttr(it *item, name, want string) {
	if v, present := it.av[name]; want == "" && present || want != "" && it.s(name) != want {
		c.report(it, RuleAttrMismatch, "%s is %s, the key says %q", name, render(v), want)
	}
}

// checkGSIKeys compares an item's index keys with those its type and
// fields require. A wrong or missing DELETING marker is RuleDeletingMarker.
func (c *checker) checkGSIKeys(it *item) {
	var want gsiKeys
	if it.e.gsis != nil {
		want = it.e.gsis(it)
	}
	for i, ix := range store.Schema.Indexes {
		w := want[i+1]
		pk, hasPK := it.av[ix.PK]
		sk, hasSK := it.av[ix.SK]
		if !hasPK && !hasSK && (w.pk == "" || w.optional) ||
			w.pk != "" && it.s(ix.PK) == w.pk && it.s(ix.SK) == w.sk {
			continue
		}
		rule := it.e.gsiRule
		if i+1 == 3 && (w.pk == "DELETING" || it.s(ix.PK) == "DELETING") {
			rule = RuleDeletingMarker
		}
		c.report(it, rule, "%s keys are %s / %s, want %q / %q", ix.Name, render(pk), render(sk), w.pk, w.sk)
	}
}

// checkIndex checks one index: every entry is a base item with the same
// index keys, and every base item with both index keys is an entry.
func (c *checker) checkIndex(ix store.Index, entries []attrs) {
	seen := map[key]int{}
	for _, av := range entries {
		e := &item{av: av}
		k, ipk, isk := key{e.s(store.Schema.PK), e.s(store.Schema.SK)}, e.s(ix.PK), e.s(ix.SK)
		seen[k]++
		v := Violation{Rule: RuleGSIUnexplained, PK: k.pk, SK: k.sk}
		switch base := c.byKey[k]; {
		case base == nil:
			v.Detail = fmt.Sprintf("%s entry %q / %q has no base item", ix.Name, ipk, isk)
		case seen[k] > 1:
			v.Detail = fmt.Sprintf("%s holds the item more than once", ix.Name)
		case base.s(ix.PK) == ipk && base.s(ix.SK) == isk:
			continue
		default:
			v.Detail = fmt.Sprintf("%s entry %q / %q, but the base item has %q / %q", ix.Name, ipk, isk, base.s(ix.PK), base.s(ix.SK))
		}
		c.out = append(c.out, v)
	}
	for _, it := range c.items {
		_, okPK := str(it.av, ix.PK)
		_, okSK := str(it.av, ix.SK)
		if okPK && okSK && seen[key{it.pk, it.sk}] == 0 {
			c.report(it, RuleGSIMissing, "%s lacks the item", ix.Name)
		}
	}
}

// checkOrg: ownerCount counts the org's owner OrgUsers, and there is one;
// the user who created it (createdBy, absent on orgs older than it) has an
// OwnedOrgs item counting it.
func (c *checker) checkOrg(it *item) {
	if by := it.s("createdBy"); by != "" && c.get("OwnedOrgs", "USER#"+by+"#ORGS", "#OWNED") == nil {
		c.report(it, RuleOwnedOrgsMissing, "the org's creator %s has no OwnedOrgs item counting it", by)
	}
	owners := c.owners[it.pk]
	if n := c.num(it, "ownerCount"); n != owners {
		c.relational(it, RuleOrgOwnerCount, "ownerCount is %d, the org has %d owner OrgUsers", n, owners)
	}
	if owners < 1 && !it.deleting {
		c.relational(it, RuleOrgNoOwner, "the org has no owner OrgUser")
	}
	if n, keys := c.num(it, "apiKeyCount"), c.keys[it.pk]; n != keys {
		c.relational(it, RuleOrgAPIKeyCount, "apiKeyCount is %d, the org has %d APIKey items", n, keys)
	}
}

// checkAPIKey: a key's role is admin or member, and it holds a SHA-256 of
// its token, never the token.
func (c *checker) checkAPIKey(it *item) {
	if r := authz.Role(it.s("role")); r != authz.Admin && r != authz.Member {
		c.report(it, RuleAPIKeyBadRole, "role %q is not admin or member", r)
	}
	if h := it.s("hash"); len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		c.report(it, RuleAPIKeyBadHash, "hash %q is not a SHA-256 in lower-case hex", h)
	}
}

// checkOrgUser: the user's email is claimed for them, their teamIds are
// exactly the teams they have an edge in, and a deleting user is an owner
// offboarding the org.
func (c *checker) checkOrgUser(it *item) {
	role := c.role(it, RuleUserBadRole)
	if it.deleting {
		if org := c.get("Org", it.pk, metadata); org != nil && !org.deleting {
			c.report(it, RuleUserDeletingMismatch, "the user is marked deleting, the org is not")
		}
		if role != string(authz.Owner) {
			c.report(it, RuleUserDeletingMismatch, "the user is marked deleting but is %q, not an owner", role)
		}
	}
	if email, ok := c.email(it); ok {
		if claim := c.get("EmailClaim", it.pk+"#EMAIL#"+email, "#CLAIM"); claim == nil {
			c.relational(it, RuleUserClaimMissing, "no EmailClaim for %s", email)
		} else if u := claim.s("userId"); u != it.k.user {
			c.relational(it, RuleUserClaimMismatch, "EmailClaim %s names user %q", claim.pk, u)
		}
	}
	has := map[string]bool{}
	for _, t := range c.stringSet(it, "teamIds") {
		if !ids.ValidResource(t) {
			c.report(it, RuleBadAttr, "teamIds holds %q, not a ULID", t)
		}
		has[t] = true
	}
	if edges := c.teamsOf[key{it.pk, it.sk}]; !maps.Equal(has, edges) {
		c.relational(it, RuleUserTeamIDs, "teamIds is %v, the user has edges in %v",
			slices.Sorted(maps.Keys(has)), slices.Sorted(maps.Keys(edges)))
	}
}

// checkClaim: the claim's user exists and has the claimed email.
func (c *checker) checkClaim(it *item) {
	if !c.validID(it, "userId", ids.ValidUser) {
		return
	}
	u := c.get("OrgUser", "ORG#"+it.k.org, "USER#"+it.s("userId"))
	if u == nil {
		c.relational(it, RuleClaimUserMissing, "no OrgUser %s", it.s("userId"))
	} else if email := u.s("email"); tenant.NormalizeEmail(email) != it.k.email {
		c.relational(it, RuleClaimEmailMismatch, "OrgUser %s has email %q", u.sk, email)
	}
}

// checkTeam: memberCount and ownerCount count the team's edges and owner
// edges (also while it is being deleted), and it has an owner unless it is
// being deleted.
func (c *checker) checkTeam(it *item) {
	edges, owners := c.children[it.pk], c.owners[it.pk]
	if n := c.num(it, "memberCount"); n != edges {
		c.relational(it, RuleTeamMemberCount, "memberCount is %d, the team has %d edges", n, edges)
	}
	if _, present := it.av["ownerCount"]; !present {
		c.relational(it, RuleTeamOwnerCount, "ownerCount is missing, the team has %d owner edges", owners)
	} else if n := c.num(it, "ownerCount"); n != owners {
		c.relational(it, RuleTeamOwnerCount, "ownerCount is %d, the team has %d owner edges", n, owners)
	}
	if owners < 1 && !it.deleting {
		c.relational(it, RuleTeamNoOwner, "the team has no owner edge")
	}
}

// checkMembership: the edge's team and user exist.
func (c *checker) checkMembership(it *item) {
	c.role(it, RuleMemberBadRole)
	if c.get("Team", it.pk, metadata) == nil {
		c.relational(it, RuleMemberTeamMissing, "no Team item")
	}
	if c.get("OrgUser", "ORG#"+it.k.org, "USER#"+it.k.user) == nil {
		c.relational(it, RuleMemberUserMissing, "no OrgUser %s", it.k.user)
	}
}

// checkTicket: commentCount counts its comments; status, priority and
// references are well-formed.
func (c *checker) checkTicket(it *item) {
	if s := it.s("status"); !ticket.Status(s).Valid() {
		c.report(it, RuleTicketBadStatus, "status %q is not one of %v", s, ticket.Statuses)
	}
	if p := it.s("priority"); !ticket.Priority(p).Valid() {
		c.report(it, RuleTicketBadPriority, "priority %q is not low, normal, high or urgent", p)
	}
	c.validID(it, "requesterId", ids.ValidUser)
	if _, ok := str(it.av, "assigneeId"); ok {
		c.validID(it, "assigneeId", ids.ValidUser)
	}
	if _, ok := str(it.av, "teamId"); ok {
		c.validID(it, "teamId", ids.ValidResource)
	}
	if n, comments := c.num(it, "commentCount"), c.children[it.pk]; n != comments {
		c.relational(it, RuleTicketCommentCount, "commentCount is %d, the ticket has %d comments", n, comments)
	}
}

// checkComment: the comment's ticket exists.
func (c *checker) checkComment(it *item) {
	c.validID(it, "authorId", ids.ValidUser)
	if c.get("Ticket", it.pk, metadata) == nil {
		c.relational(it, RuleCommentTicketMissing, "no Ticket item")
	}
}

// checkInvitation: a live invitation's email points at it.
func (c *checker) checkInvitation(it *item) {
	c.role(it, RuleInviteBadRole)
	live := c.live(it)
	email, ok := c.email(it)
	if !ok || !live {
		return
	}
	if p := c.get("InvitationEmail", "ORG#"+it.k.org+"#INVITEEMAIL#"+email, "#INVITE"); p == nil {
		c.relational(it, RuleInvitePointerMissing, "no InvitationEmail for %s", email)
	} else if id := p.s("invitationId"); id != it.k.invitation {
		c.relational(it, RuleInvitePointerMismatch, "InvitationEmail %s points at invitation %q", p.pk, id)
	}
}

// checkInvitationEmail: a live pointer's invitation exists and has the
// pointer's email.
func (c *checker) checkInvitationEmail(it *item) {
	live := c.live(it)
	if !c.validID(it, "invitationId", ids.ValidResource) || !live {
		return
	}
	id := it.s("invitationId")
	if inv := c.get("Invitation", "ORG#"+it.k.org+"#INVITE#"+id, "#INVITE"); inv == nil {
		c.relational(it, RulePointerInviteMissing, "no Invitation %s", id)
	} else if email := inv.s("email"); tenant.NormalizeEmail(email) != it.k.email {
		c.relational(it, RulePointerEmailMismatch, "Invitation %s has email %q", id, email)
	}
}

// checkAudit: an event lies in the bucket of the month it happened.
func (c *checker) checkAudit(it *item) {
	at, err := time.Parse(time.RFC3339Nano, it.s("at"))
	if err != nil {
		c.report(it, RuleBadAttr, "at %q is not an RFC 3339 time", it.s("at"))
	} else if b := at.UTC().Format("2006-01"); b != it.k.bucket {
		c.report(it, RuleAttrMismatch, "at %s is in bucket %s, the key says %s", it.s("at"), b, it.k.bucket)
	}
}

// checkOwnedOrgs: owned counts the orgs whose createdBy is the user, those
// being offboarded included: the org item and its refund go in one
// transaction.
func (c *checker) checkOwnedOrgs(it *item) {
	if n, want := c.num(it, "owned"), c.ownedBy[it.k.user]; n != want {
		c.report(it, RuleOwnedOrgsCount, "owned is %d, the user created %d orgs that exist", n, want)
	}
}

// checkIdempotency: a user's record carries its key's userId, an org's
// record a valid one.
// checkDelivery: a delivery's state is one of the three. (A pending one
// may outlive its webhook: a worker settles it as failed, or TTL deletes
// it.)
func (c *checker) checkDelivery(it *item) {
	switch webhook.State(it.s("state")) {
	case webhook.Pending, webhook.Delivered, webhook.Failed:
	default:
		c.report(it, RuleDeliveryBadState, "state %q", it.s("state"))
	}
}

func (c *checker) checkIdempotency(it *item) {
	if it.k.org == "" {
		c.wantAttr(it, "userId", it.k.user)
	} else {
		c.validID(it, "userId", ids.ValidUser)
	}
}

// checkRateLimit: a bucket holds its TAT and its expiry, both numbers.
func (c *checker) checkRateLimit(it *item) {
	for _, name := range []string{"tat", "expiresAt"} {
		if _, ok := it.av[name].(*types.AttributeValueMemberN); !ok {
			c.report(it, RuleBadAttr, "%s is not a number", name)
		}
	}
}

// role returns the item's role, reporting rule if it is not a valid one.
func (c *checker) role(it *item, rule string) string {
	role := it.s("role")
	if !authz.Role(role).Valid() {
		c.report(it, rule, "role %q is not owner, admin or member", role)
	}
	return role
}

// email returns the item's normalized email, and whether a key can hold it.
func (c *checker) email(it *item) (string, bool) {
	email := it.s("email")
	norm := tenant.NormalizeEmail(email)
	ok := normalizedEmail(norm)
	if !ok {
		c.report(it, RuleBadAttr, "email %q is empty or has '#' or control characters", email)
	}
	return norm, ok
}

// validID reports whether attribute name holds an ID that valid accepts,
// reporting it if not.
func (c *checker) validID(it *item, name string, valid func(string) bool) bool {
	if v := it.s(name); !valid(v) {
		c.report(it, RuleBadAttr, "%s %q is malformed", name, v)
		return false
	}
	return true
}

// live reports whether an invitation or its pointer has not expired at Now
// (TTL deletes it some time later).
func (c *checker) live(it *item) bool {
	if _, present := it.av["expiresAt"]; !present {
		c.report(it, RuleBadAttr, "expiresAt is missing")
	}
	return c.o.Now.IsZero() || c.o.Now.Before(time.Unix(int64(c.num(it, "expiresAt")), 0))
}

// str returns a string attribute, and whether it is one.
func str(av attrs, name string) (string, bool) {
	s, ok := av[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return s.Value, true
}

// num returns an integer attribute (0 when absent), reporting one that is
// not an integer.
func (c *checker) num(it *item, name string) int {
	v, present := it.av[name]
	if !present {
		return 0
	}
	if n, ok := v.(*types.AttributeValueMemberN); ok {
		if x, err := strconv.Atoi(n.Value); err == nil {
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
