package store_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/invitation"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/store/storetest"
	orgpkg "github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/ticket"
)

// The invariant checker's tests write the table with raw PutItem and
// UpdateItem calls, not with the store: the layout the checker enforces is
// spelled out here, independently of the code that writes it (and includes
// what the store does not write yet: team ownerCount, claim GSI1 keys,
// deleting markers).

type attrs = map[string]types.AttributeValue

func avS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func avN(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
func avB(b bool) types.AttributeValue       { return &types.AttributeValueMemberBOOL{Value: b} }
func avSS(v ...string) types.AttributeValue { return &types.AttributeValueMemberSS{Value: v} }

// world is a small healthy table: org Acme with owner Alice and member Bob,
// their email claims (Alice's with GSI1 keys, Bob's legacy without), team
// Eng with both as members (Alice owns it), ticket K (requested by Alice,
// assigned to Bob, routed to Eng, two comments), ticket K2 (Bob's, no
// assignee, no team, no comments), a pending invitation for Carol with its
// email pointer, an audit event, an org-scoped and a user-scoped
// idempotency record, and the counts of the orgs Alice (1) and Bob (0) own.
type world struct {
	f   *fixture
	ctx context.Context
	now time.Time

	org, team, tk, tk2, c1, c2, inv, event string
	orgHash, userHash                      string
	// spare and spare2 are ULIDs no item uses, for the cases to make up
	// items with.
	spare, spare2 string
	// keys holds item keys a case saved for its expectations.
	keys [][2]string
}

func newWorld(tb testing.TB) *world {
	tb.Helper()
	f := MustFixture(tb)
	w := &world{f: f, ctx: context.Background(), now: f.now,
		org: f.ids.New(), team: f.ids.New(), tk: f.ids.New(), tk2: f.ids.New(), c1: f.ids.New(), c2: f.ids.New(),
		inv: f.ids.New(), event: f.ids.New(), spare: f.ids.New(), spare2: f.ids.New(),
		orgHash: strings.Repeat("ab", 32), userHash: strings.Repeat("cd", 32)}
	ts := avS(w.now.Format(time.RFC3339Nano))
	o := w.orgPK()
	items := []attrs{
		{"pk": avS(o), "sk": avS("#METADATA"), "type": avS("Org"), "orgId": avS(w.org), "name": avS("Acme"),
			"ownerCount": avN(1), "createdBy": avS("u_alice"), "version": avN(1), "createdAt": ts, "updatedAt": ts},
		w.orgUser("u_alice", "Alice@Example.com", "owner"),
		w.orgUser("u_bob", "bob@example.com", "member"),
		{"pk": avS(w.claimPK("alice@example.com")), "sk": avS("#CLAIM"), "type": avS("EmailClaim"),
			"gsi1pk": avS(o), "gsi1sk": avS("EMAIL#alice@example.com"),
			"orgId": avS(w.org), "userId": avS("u_alice"), "email": avS("alice@example.com")},
		{"pk": avS(w.claimPK("bob@example.com")), "sk": avS("#CLAIM"), "type": avS("EmailClaim"), // legacy: no GSI1
			"orgId": avS(w.org), "userId": avS("u_bob"), "email": avS("bob@example.com")},
		{"pk": avS(w.teamPK()), "sk": avS("#METADATA"), "type": avS("Team"), "gsi1pk": avS(o), "gsi1sk": avS("TEAM#" + w.team),
			"orgId": avS(w.org), "teamId": avS(w.team), "name": avS("Engineering"), "memberCount": avN(2), "ownerCount": avN(1),
			"version": avN(1), "createdAt": ts, "updatedAt": ts},
		w.edge("u_alice", "owner"),
		w.edge("u_bob", "member"),
		{"pk": avS(w.ticketPK(w.tk)), "sk": avS("#METADATA"), "type": avS("Ticket"),
			"gsi1pk": avS(o), "gsi1sk": avS("TICKET#" + w.tk),
			"gsi2pk": avS(o + "#USER#u_alice"), "gsi2sk": avS("TICKET#" + w.tk),
			"gsi3pk": avS(o), "gsi3sk": avS("STATUS#open#" + w.tk),
			"gsi4pk": avS(o + "#ASSIGNEE#u_bob"), "gsi4sk": avS("TICKET#" + w.tk),
			"gsi5pk": avS(w.teamPK()), "gsi5sk": avS("STATUS#open#" + w.tk),
			"gsi6pk": avS(o + "#PRIORITY#normal"), "gsi6sk": avS("STATUS#open#" + w.tk),
			"gsi7pk": avS(o + "#ASSIGNEE#u_bob"), "gsi7sk": avS("STATUS#open#" + w.tk),
			"orgId": avS(w.org), "ticketId": avS(w.tk), "title": avS("Login broken"), "status": avS("open"),
			"priority": avS("normal"), "requesterId": avS("u_alice"), "assigneeId": avS("u_bob"), "teamId": avS(w.team),
			"commentCount": avN(2), "version": avN(1), "createdAt": ts, "updatedAt": ts},
		w.comment(w.c1, "u_bob"),
		w.comment(w.c2, "u_alice"),
		{"pk": avS(w.ticketPK(w.tk2)), "sk": avS("#METADATA"), "type": avS("Ticket"),
			"gsi1pk": avS(o), "gsi1sk": avS("TICKET#" + w.tk2),
			"gsi2pk": avS(o + "#USER#u_bob"), "gsi2sk": avS("TICKET#" + w.tk2),
			"gsi3pk": avS(o), "gsi3sk": avS("STATUS#new#" + w.tk2),
			"gsi6pk": avS(o + "#PRIORITY#low"), "gsi6sk": avS("STATUS#new#" + w.tk2),
			"orgId": avS(w.org), "ticketId": avS(w.tk2), "title": avS("Dark mode"), "status": avS("new"),
			"priority": avS("low"), "requesterId": avS("u_bob"),
			"commentCount": avN(0), "version": avN(1), "createdAt": ts, "updatedAt": ts},
		{"pk": avS(w.invitePK()), "sk": avS("#INVITE"), "type": avS("Invitation"),
			"gsi1pk": avS(o), "gsi1sk": avS("INVITE#" + w.inv),
			"orgId": avS(w.org), "invitationId": avS(w.inv), "email": avS("Carol@Example.com"), "role": avS("member"),
			"teamIds":   &types.AttributeValueMemberL{Value: []types.AttributeValue{avS(w.team)}},
			"invitedBy": avS("u_alice"), "tokenHash": avS("h"), "createdAt": ts, "expiresAt": avN(w.expiry())},
		{"pk": avS(w.pointerPK("carol@example.com")), "sk": avS("#INVITE"), "type": avS("InvitationEmail"),
			"gsi1pk": avS(o), "gsi1sk": avS("EMAILINVITE#carol@example.com"),
			"orgId": avS(w.org), "invitationId": avS(w.inv), "expiresAt": avN(w.expiry())},
		{"pk": avS(w.auditPK()), "sk": avS("EVENT#" + w.event), "type": avS("AuditEvent"),
			"orgId": avS(w.org), "eventId": avS(w.event), "actorId": avS("u_alice"), "action": avS("team.create"),
			"targetType": avS("team"), "targetId": avS(w.team), "at": ts, "changes": avS("[]")},
		{"pk": avS(o + "#IDEMPOTENCY#" + w.orgHash), "sk": avS("#IDEMPOTENCY"), "type": avS("IdempotencyRecord"),
			"gsi1pk": avS(o), "gsi1sk": avS(o + "#IDEMPOTENCY#" + w.orgHash),
			"orgId": avS(w.org), "userId": avS("u_alice"), "fingerprint": avS("f"), "done": avB(true), "status": avN(201)},
		{"pk": avS("USER#u_carol#IDEMPOTENCY#" + w.userHash), "sk": avS("#IDEMPOTENCY"), "type": avS("IdempotencyRecord"),
			"userId": avS("u_carol"), "fingerprint": avS("f"), "done": avB(false), "status": avN(0)},
		{"pk": avS("USER#u_alice#ORGS"), "sk": avS("#OWNED"), "type": avS("OwnedOrgs"), "userId": avS("u_alice"), "owned": avN(1)},
		// Bob's orgs are all deleted: his count stays, at 0.
		{"pk": avS("USER#u_bob#ORGS"), "sk": avS("#OWNED"), "type": avS("OwnedOrgs"), "userId": avS("u_bob"), "owned": avN(0)},
	}
	for _, it := range items {
		w.put(tb, it)
	}
	return w
}

func (w *world) orgPK() string                 { return "ORG#" + w.org }
func (w *world) claimPK(email string) string   { return w.orgPK() + "#EMAIL#" + email }
func (w *world) teamPK() string                { return w.orgPK() + "#TEAM#" + w.team }
func (w *world) ticketPK(id string) string     { return w.orgPK() + "#TICKET#" + id }
func (w *world) invitePK() string              { return w.orgPK() + "#INVITE#" + w.inv }
func (w *world) pointerPK(email string) string { return w.orgPK() + "#INVITEEMAIL#" + email }
func (w *world) auditPK() string               { return w.orgPK() + "#AUDIT#" + w.now.Format("2006-01") }
func (w *world) expiry() int64                 { return w.now.Add(7 * 24 * time.Hour).Unix() }

func (w *world) orgUser(userID, email, role string) attrs {
	ts := avS(w.now.Format(time.RFC3339Nano))
	return attrs{"pk": avS(w.orgPK()), "sk": avS("USER#" + userID), "type": avS("OrgUser"),
		"gsi1pk": avS("USER#" + userID), "gsi1sk": avS(w.orgPK()),
		"gsi2pk": avS(w.orgPK() + "#USER#" + userID), "gsi2sk": avS("USER#" + userID),
		"orgId": avS(w.org), "userId": avS(userID), "email": avS(email), "name": avS(userID), "role": avS(role),
		"teamIds": avSS(w.team), "edgeSeq": avN(1), "version": avN(1), "joinedAt": ts, "updatedAt": ts}
}

func (w *world) edge(userID, role string) attrs {
	ts := avS(w.now.Format(time.RFC3339Nano))
	return attrs{"pk": avS(w.teamPK()), "sk": avS("MEMBER#" + userID), "type": avS("Membership"),
		"gsi1pk": avS("USER#" + userID), "gsi1sk": avS("TEAM#" + w.org + "#" + w.team),
		"orgId": avS(w.org), "teamId": avS(w.team), "userId": avS(userID), "role": avS(role),
		"version": avN(1), "joinedAt": ts, "updatedAt": ts}
}

func (w *world) comment(id, author string) attrs {
	ts := avS(w.now.Format(time.RFC3339Nano))
	return attrs{"pk": avS(w.ticketPK(w.tk)), "sk": avS("COMMENT#" + id), "type": avS("Comment"),
		"orgId": avS(w.org), "ticketId": avS(w.tk), "commentId": avS(id), "authorId": avS(author),
		"body": avS("text"), "createdAt": ts, "updatedAt": ts}
}

func (w *world) table() *string { return aws.String(w.f.DB.TableName()) }

func (w *world) put(tb testing.TB, it attrs) {
	tb.Helper()
	if _, err := w.f.raw.PutItem(w.ctx, &dynamodb.PutItemInput{TableName: w.table(), Item: it}); err != nil {
		tb.Fatalf("put %v: %v", it["pk"], err)
	}
}

func primaryKey(pk, sk string) attrs { return attrs{"pk": avS(pk), "sk": avS(sk)} }

func (w *world) del(tb testing.TB, pk, sk string) {
	tb.Helper()
	if _, err := w.f.raw.DeleteItem(w.ctx, &dynamodb.DeleteItemInput{TableName: w.table(), Key: primaryKey(pk, sk)}); err != nil {
		tb.Fatalf("delete %s/%s: %v", pk, sk, err)
	}
}

// set writes attributes of an existing item with a raw UpdateItem.
func (w *world) set(tb testing.TB, pk, sk string, set attrs) {
	tb.Helper()
	var parts []string
	names, values := map[string]string{}, attrs{}
	i := 0
	for name, v := range set {
		parts = append(parts, fmt.Sprintf("#a%d = :v%d", i, i))
		names[fmt.Sprintf("#a%d", i)], values[fmt.Sprintf(":v%d", i)] = name, v
		i++
	}
	w.update(tb, pk, sk, "SET "+strings.Join(parts, ", "), names, values)
}

// remove deletes attributes of an existing item with a raw UpdateItem.
func (w *world) remove(tb testing.TB, pk, sk string, attrNames ...string) {
	tb.Helper()
	var parts []string
	names := map[string]string{}
	for i, name := range attrNames {
		parts = append(parts, fmt.Sprintf("#a%d", i))
		names[fmt.Sprintf("#a%d", i)] = name
	}
	w.update(tb, pk, sk, "REMOVE "+strings.Join(parts, ", "), names, nil)
}

func (w *world) update(tb testing.TB, pk, sk, expr string, names map[string]string, values attrs) {
	tb.Helper()
	_, err := w.f.raw.UpdateItem(w.ctx, &dynamodb.UpdateItemInput{TableName: w.table(), Key: primaryKey(pk, sk),
		UpdateExpression: aws.String(expr), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
		ConditionExpression: aws.String("attribute_exists(pk)")})
	if err != nil {
		tb.Fatalf("update %s/%s %s: %v", pk, sk, expr, err)
	}
}

func (w *world) check(tb testing.TB, o storetest.CheckOptions) []storetest.Violation {
	tb.Helper()
	vs, err := storetest.CheckInvariants(w.ctx, w.f.raw, w.f.DB.TableName(), o)
	if err != nil {
		tb.Fatalf("check invariants: %v", err)
	}
	return vs
}

// at is a violation expected at an item; its detail is not compared.
func at(rule, pk, sk string) storetest.Violation {
	return storetest.Violation{Rule: rule, PK: pk, SK: sk}
}

// sameViolations compares rules and items (as multisets), not details.
func sameViolations(tb testing.TB, got, want []storetest.Violation) {
	tb.Helper()
	key := func(v storetest.Violation) string { return v.Rule + " [" + v.PK + " | " + v.SK + "]" }
	var g, wnt []string
	for _, v := range got {
		g = append(g, key(v))
	}
	for _, v := range want {
		wnt = append(wnt, key(v))
	}
	sort.Strings(g)
	sort.Strings(wnt)
	if strings.Join(g, "\n") != strings.Join(wnt, "\n") {
		var lines []string
		for _, v := range got {
			lines = append(lines, "  "+v.String())
		}
		tb.Fatalf("violations:\n%s\nwant:\n  %s", strings.Join(lines, "\n"), strings.Join(wnt, "\n  "))
	}
}

func TestInvariantsHealthy(t *testing.T) {
	w := newWorld(t)
	sameViolations(t, w.check(t, storetest.CheckOptions{Now: w.now}), nil)
	// The same table is healthy at any time: nothing depends on Now while
	// the invitation is pending, and the zero Now expires nothing.
	sameViolations(t, w.check(t, storetest.CheckOptions{}), nil)
}

// TestInvariantsBroken breaks the healthy world in exactly one way per case
// and checks that exactly the expected violations are reported.
func TestInvariantsBroken(t *testing.T) {
	const metadata = "#METADATA"
	cases := []struct {
		name string
		// progress sets AllowInProgress; lateNow checks after the
		// invitation expired.
		progress, lateNow bool
		brk               func(t *testing.T, w *world)
		want              func(w *world) []storetest.Violation
	}{
		// Types, keys, IDs, redundant attributes.
		{name: "unknown type",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS(w.orgPK() + "#WIDGET#1"), "sk": avS(metadata), "type": avS("Widget")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUnknownType, w.orgPK()+"#WIDGET#1", metadata)}
			}},
		{name: "type attribute removed",
			brk: func(t *testing.T, w *world) { w.remove(t, w.auditPK(), "EVENT#"+w.event, "type") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUnknownType, w.auditPK(), "EVENT#"+w.event)}
			}},
		{name: "team ID in key is not a ULID",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS(w.orgPK() + "#TEAM#eng"), "sk": avS(metadata), "type": avS("Team"),
					"orgId": avS(w.org), "teamId": avS("eng"), "memberCount": avN(0), "ownerCount": avN(0)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadKey, w.orgPK()+"#TEAM#eng", metadata)}
			}},
		{name: "comment stored in a team partition",
			brk: func(t *testing.T, w *world) {
				c := w.comment(w.spare, "u_bob")
				c["pk"] = avS(w.teamPK())
				w.put(t, c)
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadKey, w.teamPK(), "COMMENT#"+w.spare)}
			}},
		{name: "claim key not normalized",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS(w.claimPK("Dave@example.com")), "sk": avS("#CLAIM"), "type": avS("EmailClaim"),
					"orgId": avS(w.org), "userId": avS("u_dave"), "email": avS("Dave@example.com")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadKey, w.claimPK("Dave@example.com"), "#CLAIM")}
			}},
		{name: "membership teamId differs from its key",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.teamPK(), "MEMBER#u_bob", attrs{"teamId": avS(w.spare)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleAttrMismatch, w.teamPK(), "MEMBER#u_bob")}
			}},
		{name: "ticket without orgId",
			brk: func(t *testing.T, w *world) { w.remove(t, w.ticketPK(w.tk), metadata, "orgId") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleAttrMismatch, w.ticketPK(w.tk), metadata)}
			}},
		{name: "user-scoped idempotency record with an orgId",
			brk: func(t *testing.T, w *world) {
				w.set(t, "USER#u_carol#IDEMPOTENCY#"+w.userHash, "#IDEMPOTENCY", attrs{"orgId": avS(w.org)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleAttrMismatch, "USER#u_carol#IDEMPOTENCY#"+w.userHash, "#IDEMPOTENCY")}
			}},
		// The count of the orgs a user created that exist.
		{name: "owned orgs count off by one",
			brk: func(t *testing.T, w *world) { w.set(t, "USER#u_alice#ORGS", "#OWNED", attrs{"owned": avN(2)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOwnedOrgsCount, "USER#u_alice#ORGS", "#OWNED")}
			}},
		{name: "an org credited to a creator who did not pay for it",
			brk: func(t *testing.T, w *world) { w.set(t, w.orgPK(), metadata, attrs{"createdBy": avS("u_bob")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOwnedOrgsCount, "USER#u_alice#ORGS", "#OWNED"),
					at(storetest.RuleOwnedOrgsCount, "USER#u_bob#ORGS", "#OWNED")}
			}},
		{name: "an org without createdBy counts against nobody",
			brk: func(t *testing.T, w *world) { w.remove(t, w.orgPK(), metadata, "createdBy") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOwnedOrgsCount, "USER#u_alice#ORGS", "#OWNED")}
			}},
		{name: "a creator without a count",
			brk: func(t *testing.T, w *world) { w.del(t, "USER#u_alice#ORGS", "#OWNED") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOwnedOrgsMissing, w.orgPK(), metadata)}
			}},
		{name: "owned orgs count of a malformed user ID",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS("USER#u bad#ORGS"), "sk": avS("#OWNED"), "type": avS("OwnedOrgs"), "userId": avS("u bad"), "owned": avN(0)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadKey, "USER#u bad#ORGS", "#OWNED")}
			}},
		{name: "audit event in another month's bucket",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.auditPK(), "EVENT#"+w.event, attrs{"at": avS(w.now.AddDate(0, -1, 0).Format(time.RFC3339Nano))})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleAttrMismatch, w.auditPK(), "EVENT#"+w.event)}
			}},
		{name: "comment author malformed",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk), "COMMENT#"+w.c1, attrs{"authorId": avS("bob smith")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadAttr, w.ticketPK(w.tk), "COMMENT#"+w.c1)}
			}},

		{name: "org item with index keys",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.orgPK(), metadata, attrs{"gsi1pk": avS(w.orgPK()), "gsi1sk": avS("ORG#" + w.org)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOrgGSIKeys, w.orgPK(), metadata)}
			}},
		{name: "comment with index keys",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk), "COMMENT#"+w.c1, attrs{"gsi1pk": avS("USER#u_bob"), "gsi1sk": avS("COMMENT#" + w.c1)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleCommentGSIKeys, w.ticketPK(w.tk), "COMMENT#"+w.c1)}
			}},
		{name: "audit event with index keys",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.auditPK(), "EVENT#"+w.event, attrs{"gsi1pk": avS(w.orgPK()), "gsi1sk": avS("EVENT#" + w.event)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleAuditGSIKeys, w.auditPK(), "EVENT#"+w.event)}
			}},
		{name: "idempotency hash malformed",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS(w.orgPK() + "#IDEMPOTENCY#my-key"), "sk": avS("#IDEMPOTENCY"), "type": avS("IdempotencyRecord"),
					"orgId": avS(w.org), "userId": avS("u_alice")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadKey, w.orgPK()+"#IDEMPOTENCY#my-key", "#IDEMPOTENCY")}
			}},
		{name: "count not a number",
			brk: func(t *testing.T, w *world) { w.set(t, w.ticketPK(w.tk2), metadata, attrs{"commentCount": avS("0")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleBadAttr, w.ticketPK(w.tk2), metadata)}
			}},

		// Deleting markers.
		{name: "offboarding at quiescence",
			brk: func(t *testing.T, w *world) { w.markOffboarding(t) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUnfinishedDeletion, w.orgPK(), metadata),
					at(storetest.RuleUnfinishedDeletion, w.orgPK(), "USER#u_alice")}
			}},
		{name: "offboarding in progress", progress: true,
			brk:  func(t *testing.T, w *world) { w.markOffboarding(t) },
			want: func(*world) []storetest.Violation { return nil }},
		{name: "offboarding half done, in progress", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markOffboarding(t)
				w.offboardHalfway(t)
			},
			want: func(*world) []storetest.Violation { return nil }},
		{name: "offboarding half done, at quiescence",
			brk: func(t *testing.T, w *world) {
				w.markOffboarding(t)
				w.offboardHalfway(t)
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUnfinishedDeletion, w.orgPK(), metadata),
					at(storetest.RuleUnfinishedDeletion, w.orgPK(), "USER#u_alice"),
					at(storetest.RuleUserTeamIDs, w.orgPK(), "USER#u_alice"),
					at(storetest.RuleMemberTeamMissing, w.teamPK(), "MEMBER#u_bob"),
					at(storetest.RuleMemberUserMissing, w.teamPK(), "MEMBER#u_bob"),
					at(storetest.RuleCommentTicketMissing, w.ticketPK(w.tk), "COMMENT#"+w.c1),
					at(storetest.RuleCommentTicketMissing, w.ticketPK(w.tk), "COMMENT#"+w.c2),
					at(storetest.RulePointerInviteMissing, w.pointerPK("carol@example.com"), "#INVITE")}
			}},
		{name: "offboarding half done still checks index keys", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markOffboarding(t)
				w.offboardHalfway(t)
				w.set(t, w.teamPK(), "MEMBER#u_bob", attrs{"gsi1sk": avS("TEAM#" + w.team)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleMemberGSIKeys, w.teamPK(), "MEMBER#u_bob")}
			}},
		{name: "offboarding deleted another owner, in progress", progress: true,
			brk: func(t *testing.T, w *world) {
				w.set(t, w.orgPK(), "USER#u_bob", attrs{"role": avS("owner")})
				w.set(t, w.orgPK(), "#METADATA", attrs{"ownerCount": avN(2)})
				w.markOffboarding(t)
				w.del(t, w.orgPK(), "USER#u_bob")
				w.del(t, w.claimPK("bob@example.com"), "#CLAIM")
			},
			want: func(*world) []storetest.Violation { return nil }},
		{name: "team deletion at quiescence",
			brk: func(t *testing.T, w *world) { w.markTeamDeleting(t) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUnfinishedDeletion, w.teamPK(), metadata)}
			}},
		{name: "team deletion in progress lost its owner edge", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markTeamDeleting(t)
				w.dropEdge(t, "u_alice")
				w.set(t, w.teamPK(), metadata, attrs{"memberCount": avN(1), "ownerCount": avN(0)})
			},
			want: func(*world) []storetest.Violation { return nil }},
		{name: "team deletion in progress keeps counts exact", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markTeamDeleting(t)
				w.dropEdge(t, "u_alice")
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamMemberCount, w.teamPK(), metadata),
					at(storetest.RuleTeamOwnerCount, w.teamPK(), metadata)}
			}},
		{name: "ticket deletion in progress", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markTicketDeleting(t)
				w.del(t, w.ticketPK(w.tk), "COMMENT#"+w.c1)
				w.set(t, w.ticketPK(w.tk), metadata, attrs{"commentCount": avN(1)})
			},
			want: func(*world) []storetest.Violation { return nil }},
		{name: "ticket deletion in progress keeps commentCount exact", progress: true,
			brk: func(t *testing.T, w *world) {
				w.markTicketDeleting(t)
				w.del(t, w.ticketPK(w.tk), "COMMENT#"+w.c1)
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketCommentCount, w.ticketPK(w.tk), metadata)}
			}},
		{name: "deleting team without its marker", progress: true,
			brk: func(t *testing.T, w *world) { w.set(t, w.teamPK(), metadata, attrs{"deleting": avB(true)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleDeletingMarker, w.teamPK(), metadata)}
			}},
		{name: "deleting marker without the flag",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk), metadata, attrs{"gsi3pk": avS("DELETING"), "gsi3sk": avS("TICKET#" + w.org + "#" + w.tk)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleDeletingMarker, w.ticketPK(w.tk), metadata)}
			}},
		{name: "a comment is never deleting", progress: true,
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk), "COMMENT#"+w.c1, attrs{"deleting": avB(true)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleDeletingMarker, w.ticketPK(w.tk), "COMMENT#"+w.c1)}
			}},
		{name: "deleting owner of an org not being deleted", progress: true,
			brk: func(t *testing.T, w *world) {
				w.set(t, w.orgPK(), "USER#u_alice", attrs{"deleting": avB(true)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserDeletingMismatch, w.orgPK(), "USER#u_alice")}
			}},

		// Orphans.
		{name: "org item deleted",
			brk: func(t *testing.T, w *world) {
				w.keys = w.orgItemKeys(t)
				w.del(t, w.orgPK(), metadata)
			},
			want: func(w *world) []storetest.Violation {
				// Every other item of the org; not the user-scoped
				// idempotency record; and the creator's count, no longer
				// matched by an org.
				vs := []storetest.Violation{at(storetest.RuleOwnedOrgsCount, "USER#u_alice#ORGS", "#OWNED")}
				for _, k := range w.keys {
					if k != [2]string{w.orgPK(), metadata} {
						vs = append(vs, at(storetest.RuleOrphanOrg, k[0], k[1]))
					}
				}
				return vs
			}},
		{name: "audit event of an org that never existed",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS("ORG#" + w.spare + "#AUDIT#2026-11"), "sk": avS("EVENT#" + w.spare2), "type": avS("AuditEvent"),
					"orgId": avS(w.spare), "eventId": avS(w.spare2), "at": avS(w.now.Format(time.RFC3339Nano))})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOrphanOrg, "ORG#"+w.spare+"#AUDIT#2026-11", "EVENT#"+w.spare2)}
			}},

		// OrgUser.
		{name: "claim missing",
			brk: func(t *testing.T, w *world) { w.del(t, w.claimPK("alice@example.com"), "#CLAIM") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserClaimMissing, w.orgPK(), "USER#u_alice")}
			}},
		{name: "claim names another user",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.claimPK("bob@example.com"), "#CLAIM", attrs{"userId": avS("u_alice")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserClaimMismatch, w.orgPK(), "USER#u_bob"),
					at(storetest.RuleClaimEmailMismatch, w.claimPK("bob@example.com"), "#CLAIM")}
			}},
		{name: "teamIds missing a team",
			brk: func(t *testing.T, w *world) { w.remove(t, w.orgPK(), "USER#u_bob", "teamIds") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserTeamIDs, w.orgPK(), "USER#u_bob")}
			}},
		{name: "teamIds holding a team without an edge",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.orgPK(), "USER#u_alice", attrs{"teamIds": avSS(w.team, w.spare)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserTeamIDs, w.orgPK(), "USER#u_alice")}
			}},
		{name: "org user role invalid",
			brk: func(t *testing.T, w *world) { w.set(t, w.orgPK(), "USER#u_bob", attrs{"role": avS("root")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserBadRole, w.orgPK(), "USER#u_bob")}
			}},
		{name: "org user GSI2 sort key wrong",
			brk: func(t *testing.T, w *world) { w.set(t, w.orgPK(), "USER#u_alice", attrs{"gsi2sk": avS("USER#u_bob")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleUserGSIKeys, w.orgPK(), "USER#u_alice")}
			}},

		// EmailClaim.
		{name: "claim of a user who does not exist",
			brk: func(t *testing.T, w *world) {
				w.put(t, attrs{"pk": avS(w.claimPK("dave@example.com")), "sk": avS("#CLAIM"), "type": avS("EmailClaim"),
					"orgId": avS(w.org), "userId": avS("u_dave"), "email": avS("dave@example.com")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleClaimUserMissing, w.claimPK("dave@example.com"), "#CLAIM")}
			}},
		{name: "claim GSI1 keys wrong",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.claimPK("alice@example.com"), "#CLAIM", attrs{"gsi1sk": avS("alice@example.com")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleClaimGSIKeys, w.claimPK("alice@example.com"), "#CLAIM")}
			}},
		{name: "claim with half its GSI1 keys",
			brk: func(t *testing.T, w *world) { w.remove(t, w.claimPK("alice@example.com"), "#CLAIM", "gsi1sk") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleClaimGSIKeys, w.claimPK("alice@example.com"), "#CLAIM")}
			}},

		// Org.
		{name: "org ownerCount 0 with an owner",
			brk: func(t *testing.T, w *world) { w.set(t, w.orgPK(), metadata, attrs{"ownerCount": avN(0)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOrgOwnerCount, w.orgPK(), metadata)}
			}},
		{name: "org ownerCount 2 with one owner",
			brk: func(t *testing.T, w *world) { w.set(t, w.orgPK(), metadata, attrs{"ownerCount": avN(2)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOrgOwnerCount, w.orgPK(), metadata)}
			}},
		{name: "org without an owner",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.orgPK(), "USER#u_alice", attrs{"role": avS("admin")})
				w.set(t, w.orgPK(), metadata, attrs{"ownerCount": avN(0)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleOrgNoOwner, w.orgPK(), metadata)}
			}},

		// Membership.
		{name: "team item deleted, edges left",
			brk: func(t *testing.T, w *world) { w.del(t, w.teamPK(), metadata) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleMemberTeamMissing, w.teamPK(), "MEMBER#u_alice"),
					at(storetest.RuleMemberTeamMissing, w.teamPK(), "MEMBER#u_bob")}
			}},
		{name: "edge of a user not in the org",
			brk: func(t *testing.T, w *world) {
				w.put(t, w.edge("u_zed", "member"))
				w.set(t, w.teamPK(), metadata, attrs{"memberCount": avN(3)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleMemberUserMissing, w.teamPK(), "MEMBER#u_zed")}
			}},
		{name: "edge role invalid",
			brk: func(t *testing.T, w *world) { w.set(t, w.teamPK(), "MEMBER#u_bob", attrs{"role": avS("boss")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleMemberBadRole, w.teamPK(), "MEMBER#u_bob")}
			}},
		{name: "edge GSI1 sort key without the org",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.teamPK(), "MEMBER#u_bob", attrs{"gsi1sk": avS("TEAM#" + w.team)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleMemberGSIKeys, w.teamPK(), "MEMBER#u_bob")}
			}},

		// Team.
		{name: "team memberCount wrong",
			brk: func(t *testing.T, w *world) { w.set(t, w.teamPK(), metadata, attrs{"memberCount": avN(3)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamMemberCount, w.teamPK(), metadata)}
			}},
		{name: "team ownerCount 0 with an owner edge",
			brk: func(t *testing.T, w *world) { w.set(t, w.teamPK(), metadata, attrs{"ownerCount": avN(0)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamOwnerCount, w.teamPK(), metadata)}
			}},
		{name: "team without ownerCount (today's layout)",
			brk: func(t *testing.T, w *world) { w.remove(t, w.teamPK(), metadata, "ownerCount") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamOwnerCount, w.teamPK(), metadata)}
			}},
		{name: "team without an owner",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.teamPK(), "MEMBER#u_alice", attrs{"role": avS("admin")})
				w.set(t, w.teamPK(), metadata, attrs{"ownerCount": avN(0)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamNoOwner, w.teamPK(), metadata)}
			}},
		{name: "team GSI1 keys missing",
			brk: func(t *testing.T, w *world) { w.remove(t, w.teamPK(), metadata, "gsi1pk", "gsi1sk") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTeamGSIKeys, w.teamPK(), metadata)}
			}},

		// Ticket.
		{name: "ticket commentCount wrong",
			brk: func(t *testing.T, w *world) { w.set(t, w.ticketPK(w.tk2), metadata, attrs{"commentCount": avN(1)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketCommentCount, w.ticketPK(w.tk2), metadata)}
			}},
		{name: "gsi4 left after unassigning",
			brk: func(t *testing.T, w *world) { w.remove(t, w.ticketPK(w.tk), metadata, "assigneeId") },
			want: func(w *world) []storetest.Violation { // GSI4 and GSI7
				return []storetest.Violation{at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk), metadata),
					at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk), metadata)}
			}},
		{name: "assigned without gsi4",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk2), metadata, attrs{"assigneeId": avS("u_alice")})
			},
			want: func(w *world) []storetest.Violation { // GSI4 and GSI7
				return []storetest.Violation{at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk2), metadata),
					at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk2), metadata)}
			}},
		{name: "status changed without its index keys",
			brk: func(t *testing.T, w *world) { w.set(t, w.ticketPK(w.tk), metadata, attrs{"status": avS("solved")}) },
			want: func(w *world) []storetest.Violation { // GSI3, GSI5, GSI6 and GSI7
				v := at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk), metadata)
				return []storetest.Violation{v, v, v, v}
			}},
		{name: "requester changed without gsi2",
			brk: func(t *testing.T, w *world) { w.set(t, w.ticketPK(w.tk), metadata, attrs{"requesterId": avS("u_bob")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk), metadata)}
			}},
		{name: "team removed with gsi5 left",
			brk: func(t *testing.T, w *world) { w.remove(t, w.ticketPK(w.tk), metadata, "teamId") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketGSIKeys, w.ticketPK(w.tk), metadata)}
			}},
		{name: "ticket status invalid",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk2), metadata, attrs{"status": avS("wip"), "gsi3sk": avS("STATUS#wip#" + w.tk2),
					"gsi6sk": avS("STATUS#wip#" + w.tk2)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketBadStatus, w.ticketPK(w.tk2), metadata)}
			}},
		{name: "ticket priority invalid",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.ticketPK(w.tk2), metadata, attrs{"priority": avS("asap"), "gsi6pk": avS("ORG#" + w.org + "#PRIORITY#asap")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleTicketBadPriority, w.ticketPK(w.tk2), metadata)}
			}},

		// Comment.
		{name: "comments without their ticket",
			brk: func(t *testing.T, w *world) { w.del(t, w.ticketPK(w.tk), metadata) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleCommentTicketMissing, w.ticketPK(w.tk), "COMMENT#"+w.c1),
					at(storetest.RuleCommentTicketMissing, w.ticketPK(w.tk), "COMMENT#"+w.c2)}
			}},

		// Invitation and its pointer.
		{name: "invitation without its pointer",
			brk: func(t *testing.T, w *world) { w.del(t, w.pointerPK("carol@example.com"), "#INVITE") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleInvitePointerMissing, w.invitePK(), "#INVITE")}
			}},
		{name: "expired invitation without its pointer", lateNow: true,
			brk:  func(t *testing.T, w *world) { w.del(t, w.pointerPK("carol@example.com"), "#INVITE") },
			want: func(*world) []storetest.Violation { return nil }},
		{name: "pointer at another invitation",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.pointerPK("carol@example.com"), "#INVITE", attrs{"invitationId": avS(w.spare)})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleInvitePointerMismatch, w.invitePK(), "#INVITE"),
					at(storetest.RulePointerInviteMissing, w.pointerPK("carol@example.com"), "#INVITE")}
			}},
		{name: "pointer left after its invitation",
			brk: func(t *testing.T, w *world) { w.del(t, w.invitePK(), "#INVITE") },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RulePointerInviteMissing, w.pointerPK("carol@example.com"), "#INVITE")}
			}},
		{name: "expired pointer left after its invitation", lateNow: true,
			brk:  func(t *testing.T, w *world) { w.del(t, w.invitePK(), "#INVITE") },
			want: func(*world) []storetest.Violation { return nil }},
		{name: "invitation role invalid",
			brk: func(t *testing.T, w *world) { w.set(t, w.invitePK(), "#INVITE", attrs{"role": avS("guest")}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleInviteBadRole, w.invitePK(), "#INVITE")}
			}},
		{name: "invitation GSI1 sort key without its prefix",
			brk: func(t *testing.T, w *world) { w.set(t, w.invitePK(), "#INVITE", attrs{"gsi1sk": avS(w.inv)}) },
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleInviteGSIKeys, w.invitePK(), "#INVITE")}
			}},
		{name: "pointer without GSI1 keys",
			brk: func(t *testing.T, w *world) {
				w.remove(t, w.pointerPK("carol@example.com"), "#INVITE", "gsi1pk", "gsi1sk")
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RulePointerGSIKeys, w.pointerPK("carol@example.com"), "#INVITE")}
			}},
		{name: "invitation email changed",
			brk: func(t *testing.T, w *world) {
				w.set(t, w.invitePK(), "#INVITE", attrs{"email": avS("dan@example.com")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleInvitePointerMissing, w.invitePK(), "#INVITE"),
					at(storetest.RulePointerEmailMismatch, w.pointerPK("carol@example.com"), "#INVITE")}
			}},

		// Idempotency records.
		{name: "org-scoped idempotency record without gsi1",
			brk: func(t *testing.T, w *world) {
				w.remove(t, w.orgPK()+"#IDEMPOTENCY#"+w.orgHash, "#IDEMPOTENCY", "gsi1pk", "gsi1sk")
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleIdempotencyGSIKeys, w.orgPK()+"#IDEMPOTENCY#"+w.orgHash, "#IDEMPOTENCY")}
			}},
		{name: "user-scoped idempotency record with gsi1",
			brk: func(t *testing.T, w *world) {
				w.set(t, "USER#u_carol#IDEMPOTENCY#"+w.userHash, "#IDEMPOTENCY", attrs{"gsi1pk": avS("USER#u_carol"), "gsi1sk": avS("x")})
			},
			want: func(w *world) []storetest.Violation {
				return []storetest.Violation{at(storetest.RuleIdempotencyGSIKeys, "USER#u_carol#IDEMPOTENCY#"+w.userHash, "#IDEMPOTENCY")}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			tc.brk(t, w)
			o := storetest.CheckOptions{AllowInProgress: tc.progress, Now: w.now}
			if tc.lateNow {
				o.Now = time.Unix(w.expiry(), 0)
			}
			got := w.check(t, o)
			sameViolations(t, got, tc.want(w))
		})
	}
}

// markOffboarding is DeleteOrg's first step: the org and the acting owner
// marked deleting, the org with its GSI3 marker.
func (w *world) markOffboarding(tb testing.TB) {
	w.set(tb, w.orgPK(), "#METADATA", attrs{"deleting": avB(true), "gsi3pk": avS("DELETING"), "gsi3sk": avS("ORG#" + w.org)})
	w.set(tb, w.orgPK(), "USER#u_alice", attrs{"deleting": avB(true)})
}

// offboardHalfway deletes what an offboarding deletes in bulk, in an order
// that leaves relations broken: Bob's edge to the org and claim, the team
// item and Alice's edge (not Bob's, nor the team in Alice's set), ticket K
// (not its comments), the invitation (not its pointer), the audit event.
func (w *world) offboardHalfway(tb testing.TB) {
	w.del(tb, w.orgPK(), "USER#u_bob")
	w.del(tb, w.claimPK("bob@example.com"), "#CLAIM")
	w.del(tb, w.teamPK(), "#METADATA")
	w.del(tb, w.teamPK(), "MEMBER#u_alice")
	w.del(tb, w.ticketPK(w.tk), "#METADATA")
	w.del(tb, w.invitePK(), "#INVITE")
	w.del(tb, w.auditPK(), "EVENT#"+w.event)
}

func (w *world) markTeamDeleting(tb testing.TB) {
	w.set(tb, w.teamPK(), "#METADATA", attrs{"deleting": avB(true), "gsi3pk": avS("DELETING"),
		"gsi3sk": avS("TEAM#" + w.org + "#" + w.team)})
}

func (w *world) markTicketDeleting(tb testing.TB) {
	w.set(tb, w.ticketPK(w.tk), "#METADATA", attrs{"deleting": avB(true), "gsi3pk": avS("DELETING"),
		"gsi3sk": avS("TICKET#" + w.org + "#" + w.tk)})
}

// dropEdge removes a user's edge to the team and the team from their set,
// as one step of a team deletion does (the team's counts are left alone).
func (w *world) dropEdge(tb testing.TB, userID string) {
	w.del(tb, w.teamPK(), "MEMBER#"+userID)
	w.remove(tb, w.orgPK(), "USER#"+userID, "teamIds")
}

// orgItemKeys lists the keys of every item of the org (a consistent Scan).
func (w *world) orgItemKeys(tb testing.TB) [][2]string {
	tb.Helper()
	var keys [][2]string
	p := dynamodb.NewScanPaginator(w.f.raw, &dynamodb.ScanInput{TableName: w.table(), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		out, err := p.NextPage(w.ctx)
		if err != nil {
			tb.Fatalf("scan: %v", err)
		}
		for _, it := range out.Items {
			pk := it["pk"].(*types.AttributeValueMemberS).Value
			if pk == w.orgPK() || strings.HasPrefix(pk, w.orgPK()+"#") {
				keys = append(keys, [2]string{pk, it["sk"].(*types.AttributeValueMemberS).Value})
			}
		}
	}
	return keys
}

// TestInvariantsStoreWrites checks data written by the store itself, so the
// checker's idea of the layout is the store's: every write path of the
// store, then the org's offboarding, with no violation at any point.
func TestInvariantsStoreWrites(t *testing.T) {
	f := MustFixture(t)
	ctx := context.Background()
	org := f.ids.New()
	audited := func(action string) audit.Event {
		return audit.NewEvent(ctx, f.ids, audit.Outsider(org, "u_alice"), action, "test", "test", f.now, nil)
	}
	var s sample
	s.Org = orgpkg.Org{ID: org, Name: "Acme", Version: 1, CreatedAt: f.now, UpdatedAt: f.now}
	s.Alice = f.user(org, "u_alice", "alice@example.com", "Alice Chen", authz.Owner)
	s.Bob = f.user(org, "u_bob", "bob@example.com", "Bob Park", authz.Member)
	must(t, f.Orgs.CreateOrg(ctx, s.Org, s.Alice, audited("org.create")))
	must(t, f.Orgs.AddOrgUser(ctx, s.Bob, audited("user.create")))
	s.Eng, s.Design = f.team(org, "Engineering"), f.team(org, "Design")
	must(t, f.Teams.CreateTeam(ctx, s.Eng, f.member(s.Eng, "u_alice", authz.Owner), audited("team.create")))
	must(t, f.Teams.AddTeamMember(ctx, f.member(s.Eng, "u_bob", authz.Member), audited("member.create")))
	must(t, f.Teams.CreateTeam(ctx, s.Design, f.member(s.Design, "u_alice", authz.Owner), audited("team.create")))

	// Users: a new owner, an email change (the claim moves), a removal.
	carl := f.user(org, "u_carl", "Carl@Example.com", "Carl", authz.Owner)
	must(t, f.Orgs.AddOrgUser(ctx, carl, audited("user.create")))
	bob2 := s.Bob
	bob2.Email, bob2.Version = "robert@example.com", 2
	must(t, f.Orgs.UpdateOrgUser(ctx, s.Bob, bob2, audited("user.update")))
	// Teams: a member added, promoted and removed.
	must(t, f.Teams.AddTeamMember(ctx, f.member(s.Design, "u_carl", authz.Member), audited("member.create")))
	prev := f.member(s.Design, "u_carl", authz.Member)
	next := prev
	next.Role, next.Version = authz.Admin, 2
	must(t, f.Teams.UpdateTeamMember(ctx, prev, next, audited("member.update")))
	must(t, f.Teams.RemoveTeamMember(ctx, next, audited("member.delete")))
	must(t, f.Orgs.RemoveOrgUser(ctx, carl, audited("user.delete")))
	// Tickets: assigned and routed, commented, then unassigned and solved.
	t1 := f.ticket(org, "u_alice", "Login broken", ticket.StatusOpen)
	t1.AssigneeID, t1.TeamID = "u_bob", s.Eng.ID
	must(t, f.Tickets.CreateTicket(ctx, t1, audited("ticket.create")))
	must(t, f.Tickets.CreateTicket(ctx, f.ticket(org, "u_bob", "Dark mode", ticket.StatusNew), audited("ticket.create")))
	must(t, f.Tickets.CreateComment(ctx,
		ticket.Comment{OrgID: org, TicketID: t1.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "Same here", CreatedAt: f.now}, audited("comment.create")))
	t1b := t1
	t1b.AssigneeID, t1b.Status, t1b.Version = "", ticket.StatusSolved, 2
	must(t, f.Tickets.UpdateTicket(ctx, t1, t1b, audited("ticket.update")))
	// Invitations: one replaced by another for the same email.
	inv := invitation.Invitation{OrgID: org, ID: f.ids.New(), Email: "Dana@example.com", Role: authz.Member,
		TeamIDs: []string{s.Design.ID}, InvitedBy: "u_alice", TokenHash: "h", CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour)}
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv, audited("invitation.create"))))
	inv2 := inv
	inv2.ID = f.ids.New()
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv2, audited("invitation.create"))))
	dana := f.user(org, "u_dana", "Dana@example.com", "Dana", authz.Member)
	_, err := f.Invitations.AcceptInvitation(ctx, inv2, dana, audited("invitation.accept"))
	must(t, err)
	inv3 := inv
	inv3.ID, inv3.Email = f.ids.New(), "erin@example.com"
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv3, audited("invitation.create"))))
	// Owners made every way but creating: Bob promoted, Fay invited as one.
	bob3 := bob2
	bob3.Role, bob3.Version = authz.Owner, 3
	must(t, f.Orgs.UpdateOrgUser(ctx, bob2, bob3, audited("user.update")))
	inv4 := inv
	inv4.ID, inv4.Email, inv4.Role, inv4.TeamIDs = f.ids.New(), "fay@example.com", authz.Owner, nil
	must(t, errOf(f.Invitations.CreateInvitation(ctx, inv4, audited("invitation.create"))))
	_, err = f.Invitations.AcceptInvitation(ctx, inv4, f.user(org, "u_fay", "fay@example.com", "Fay", authz.Owner), audited("invitation.accept"))
	must(t, err)
	owned := func(want map[string]int) {
		t.Helper()
		for user, n := range want {
			got, err := f.Orgs.OwnedOrgs(ctx, user)
			must(t, err)
			if got != n {
				t.Errorf("%s owns %d orgs by the count, want %d", user, got, n)
			}
		}
	}
	// Only creating counts: Alice created the org; owners made otherwise,
	// or removed, count nothing.
	owned(map[string]int{"u_alice": 1, "u_bob": 0, "u_carl": 0, "u_fay": 0, "u_dana": 0})
	// A team and a ticket deleted.
	ops := f.team(org, "Ops")
	must(t, f.Teams.CreateTeam(ctx, ops, f.member(ops, "u_alice", authz.Owner), audited("team.create")))
	must(t, f.Teams.AddTeamMember(ctx, f.member(ops, "u_bob", authz.Member), audited("member.create")))
	must(t, f.Teams.DeleteTeam(ctx, org, ops.ID, 0, audited("team.delete")))
	t3 := f.ticket(org, "u_bob", "Typo", ticket.StatusNew)
	must(t, f.Tickets.CreateTicket(ctx, t3, audited("ticket.create")))
	must(t, f.Tickets.CreateComment(ctx,
		ticket.Comment{OrgID: org, TicketID: t3.ID, ID: f.ids.New(), AuthorID: "u_bob", Body: "Fixed", CreatedAt: f.now}, audited("comment.create")))
	must(t, f.Tickets.DeleteTicket(ctx, org, t3.ID, 0, audited("ticket.delete")))
	// Idempotency records, in the org and outside any.
	idem := &store.Idempotency{DB: f.DB}
	for _, orgID := range []string{org, ""} {
		_, _, err := idem.Begin(ctx, idempotency.Record{OrgID: orgID, UserID: "u_alice", Key: "k", Fingerprint: "f",
			Owner: "o", CreatedAt: f.now, ExpiresAt: f.now.Add(24 * time.Hour)})
		must(t, err)
	}

	vs, err := storetest.CheckInvariants(ctx, f.raw, f.DB.TableName(), storetest.CheckOptions{Now: f.now})
	must(t, err)
	sameViolations(t, vs, nil)

	// Offboarding leaves nothing of the org behind, and refunds its
	// creator.
	f.offboard(t, org, "u_alice")
	vs, err = storetest.CheckInvariants(ctx, f.raw, f.DB.TableName(), storetest.CheckOptions{Now: f.now})
	must(t, err)
	sameViolations(t, vs, nil)
	owned(map[string]int{"u_alice": 0, "u_bob": 0, "u_carl": 0, "u_fay": 0})
}
