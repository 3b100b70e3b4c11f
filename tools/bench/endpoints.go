package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/page"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/ticket"
)

// endpoint is one key endpoint: how to call it over HTTP, and the raw
// DynamoDB operations it needs (the same inputs the store builds, replayed
// through the SDK client without the service).
type endpoint struct {
	name   string
	method string
	want   int
	// chart is the access-pattern chart's number of calls: the
	// authorization read (with the route's target) and what follows.
	chart int
	// http returns the path (under the API URL) and body of request i.
	http func(r *rand.Rand, w int, i int64) (string, []byte)
	// raw makes the endpoint's DynamoDB operations for request i through
	// c, as the service sends them: one after the other.
	raw func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error
	// creates counts successful calls in env.created (tickets).
	creates bool
	// whatIf are raw variants of the endpoint's operations that the
	// product could adopt (measured, not implemented).
	whatIf []variant
}

// variant is one way of making an endpoint's DynamoDB operations.
type variant struct {
	name string
	raw  func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error
}

// batchOf merges the keys of GetItem and BatchGetItem inputs of one table
// into one consistent BatchGetItem, each key once (as the store sends a
// target that is the caller's own edge).
func batchOf(gets ...any) any {
	var keys []map[string]types.AttributeValue
	var table *string
	seen := map[string]bool{}
	add := func(k map[string]types.AttributeValue) {
		pk, _ := k["pk"].(*types.AttributeValueMemberS)
		sk, _ := k["sk"].(*types.AttributeValueMemberS)
		if pk == nil || sk == nil || !seen[pk.Value+"\x00"+sk.Value] {
			keys = append(keys, k)
		}
		if pk != nil && sk != nil {
			seen[pk.Value+"\x00"+sk.Value] = true
		}
	}
	for _, g := range gets {
		switch in := g.(type) {
		case *dynamodb.GetItemInput:
			table = in.TableName
			add(in.Key)
		case *dynamodb.BatchGetItemInput:
			for t, ka := range in.RequestItems {
				table = aws.String(t)
				for _, k := range ka.Keys {
					add(k)
				}
			}
		default:
			panic(fmt.Sprintf("bench: batchOf(%T)", g))
		}
	}
	return &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		*table: {Keys: keys, ConsistentRead: aws.Bool(true)}}}
}

// env is what the endpoints are built from.
type env struct {
	ds      *Dataset
	client  *dynamodb.Client // raw: the API's SDK configuration
	capDB   *store.DB        // capturing
	ids     *idGen
	tokens  map[string]string // user -> bearer token
	authzIn map[string]any    // "org/user" -> the authorization read's input
	mu      sync.Mutex
	created atomic.Int64 // tickets created by the load
}

func (e *env) token(userID string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if t, ok := e.tokens[userID]; ok {
		return t
	}
	now := time.Now()
	t, err := httpapi.MintHS256(jwtSecret, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: userID,
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(2 * time.Hour))},
		Email: userID + "@bench.example", Name: "Bench " + userID})
	if err != nil {
		panic(err)
	}
	e.tokens[userID] = t
	return t
}

// authz is the authorization read of (org, user): Tenants.OrgAccess BatchGetItem.
func (e *env) authz(orgID, userID string) any {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := orgID + "/" + userID
	if in, ok := e.authzIn[k]; ok {
		return in
	}
	orgs := &store.Orgs{DB: e.capDB}
	in := one(capture(func(ctx context.Context) error {
		_, err := orgs.OrgAccess(ctx, orgID, userID, access.Target{})
		return err
	}))
	e.authzIn[k] = in
	return in
}

func (e *env) teams() *store.Teams     { return &store.Teams{DB: e.capDB} }
func (e *env) tickets() *store.Tickets { return &store.Tickets{DB: e.capDB} }

// event is the audit event the service would give a write of actor, an
// org member (the store writes it, and the actor fence, in the write's
// transaction).
func (e *env) event(org, actor, action, targetType, targetID string, at time.Time, changes []audit.Change) audit.Event {
	return audit.NewEvent(context.Background(), e.ids.g, audit.Actor{OrgID: org, UserID: actor, Floor: authz.Member}, action,
		targetType, targetID, at, changes)
}

// pool captures n inputs of f (for random keys) once.
func pool(n int, f func(i int) any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = f(i)
	}
	return out
}

func pick[T any](r *rand.Rand, s []T) T { return s[r.IntN(len(s))] }

// edge is a team edge's role and version, tracked by the raw PUT steps.
type edge struct {
	role    authz.Role
	version int64
}

// keyEndpoints are the endpoints of the load table, on the big org.
func (e *env) keyEndpoints() []*endpoint {
	big := e.ds.Big
	org := big.ID
	caller := func(w int) string { return big.Callers[w%len(big.Callers)] }
	team0 := big.Teams[0]
	members := big.Members[team0][1:] // the owner's edge stays owner
	half := len(members) / 2
	putHTTP, putRaw := members[:half], members[half:]

	// Raw inputs of the reads, for random keys.
	ticketGets := pool(2048, func(int) any {
		id := big.Tickets[rand.IntN(len(big.Tickets))]
		return one(capture(func(ctx context.Context) error { _, err := e.tickets().GetTicket(ctx, org, id); return err }))
	})
	memberGets := pool(2048, func(int) any {
		uid := members[rand.IntN(len(members))]
		return one(capture(func(ctx context.Context) error { _, err := e.teams().GetTeamMember(ctx, org, team0, uid); return err }))
	})
	userGets := pool(2048, func(int) any {
		uid := members[rand.IntN(len(members))]
		return one(capture(func(ctx context.Context) error {
			_, err := (&store.Orgs{DB: e.capDB}).GetOrgUser(ctx, org, uid)
			return err
		}))
	})
	teamGet := one(capture(func(ctx context.Context) error { _, err := e.teams().GetTeam(ctx, org, team0); return err }))
	ap1 := listing(capture(func(ctx context.Context) error {
		_, err := e.teams().ListTeamMembers(ctx, org, team0, page.Request{Limit: page.DefaultLimit})
		return err
	}))
	userTeams := map[string][]string{}
	for _, t := range big.Teams {
		for _, u := range big.Members[t] {
			userTeams[u] = append(userTeams[u], t)
		}
	}
	type ap2in struct {
		user         string
		query, batch any
	}
	ap2 := make([]ap2in, 512)
	for i := range ap2 {
		u := big.MultiTeam[rand.IntN(len(big.MultiTeam))]
		q := listing(capture(func(ctx context.Context) error {
			_, err := e.teams().ListUserTeams(ctx, org, u, page.Request{Limit: page.DefaultLimit})
			return err
		}))
		bg := one(capture(func(ctx context.Context) error { _, err := e.teams().BatchGetTeams(ctx, org, userTeams[u]); return err }))
		ap2[i] = ap2in{u, q, bg}
	}
	queue := one(capture(func(ctx context.Context) error {
		_, err := e.tickets().ListTickets(ctx, org, ticket.Filter{Status: ticket.StatusOpen}, page.Request{Limit: page.DefaultLimit})
		return err
	}))

	// PUT member: each request flips a member's role, so each one writes.
	// The HTTP and raw steps use disjoint halves of the team; the raw
	// half's versions are tracked here (nobody else writes them).
	var rawMu sync.Mutex
	rawEdges := map[string]*edge{}
	for _, u := range putRaw {
		rawEdges[u] = &edge{authz.Member, 1}
	}
	putMember := e.putMemberRaw(org, team0, caller, putRaw, rawEdges, &rawMu)
	// Each HTTP PUT flips its member's role from the one the last PUT of
	// that member asked for (members start as members), whatever phase
	// sent it, so every PUT writes.
	var flipMu sync.Mutex
	admin := map[string]bool{}
	flip := func(u string) string {
		flipMu.Lock()
		defer flipMu.Unlock()
		admin[u] = !admin[u]
		if admin[u] {
			return "admin"
		}
		return "member"
	}

	return []*endpoint{
		{name: "GET ticket", method: http.MethodGet, want: 200, chart: 1,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/tickets/%s", org, pick(r, big.Tickets)), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, batchOf(e.authz(org, caller(w)), pick(r, ticketGets)))
			}},
		{name: "GET team member (AP3)", method: http.MethodGet, want: 200, chart: 1,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/teams/%s/members/%s", org, team0, pick(r, members)), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, batchOf(e.authz(org, caller(w)), pick(r, memberGets)))
			}},
		{name: "GET org user", method: http.MethodGet, want: 200, chart: 1,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/users/%s", org, pick(r, members)), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, batchOf(e.authz(org, caller(w)), pick(r, userGets)))
			}},
		{name: "GET team", method: http.MethodGet, want: 200, chart: 1,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/teams/%s", org, team0), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, batchOf(e.authz(org, caller(w)), teamGet))
			}},
		{name: "GET org", method: http.MethodGet, want: 200, chart: 1,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s", org), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return send(ctx, c, e.authz(org, caller(w))) // the org item is one of the authorization keys
			}},
		{name: "list team members, 1st page (AP1)", method: http.MethodGet, want: 200, chart: 2,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/teams/%s/members", org, team0), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return sendAll(ctx, c, e.authz(org, caller(w)), ap1)
			}},
		{name: "a user's teams (AP2)", method: http.MethodGet, want: 200, chart: 2,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/users/%s/teams", org, pick(r, ap2).user), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return sendAll(ctx, c, e.authz(org, caller(w)), pick(r, ap2).query)
			},
			whatIf: []variant{
				{"with ?expand=team: authz + AP2 Query + BatchGetItem of the names (3 ops)", func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
					a := pick(r, ap2)
					return sendAll(ctx, c, e.authz(org, caller(w)), a.query, a.batch)
				}},
			}},
		{name: "org ticket queue, status=open", method: http.MethodGet, want: 200, chart: 2,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/tickets?status=open", org), nil
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return sendAll(ctx, c, e.authz(org, caller(w)), queue)
			}},
		{name: "create ticket", method: http.MethodPost, want: 201, chart: 2, creates: true,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/tickets", org),
					fmt.Appendf(nil, `{"title":"Bench ticket %d","description":"%s","priority":"high","teamId":"%s"}`, i, sentence(r, 20), pick(r, big.Teams[1:]))
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				now := time.Now().UTC()
				t := ticket.Ticket{OrgID: org, ID: e.ids.at(now), Title: fmt.Sprintf("Bench ticket %d", i), Description: sentence(r, 20),
					Status: ticket.StatusNew, Priority: ticket.PriorityHigh, RequesterID: caller(w), TeamID: pick(r, big.Teams[1:]),
					Tags: []string{}, Version: 1, CreatedAt: now, UpdatedAt: now}
				ev := e.event(org, caller(w), "ticket.create", "ticket", t.ID, now, audit.Diff(audit.F("title", nil, t.Title),
					audit.F("status", nil, string(t.Status)), audit.F("priority", nil, string(t.Priority)), audit.F("teamId", nil, t.TeamID)))
				tx := one(capture(func(ctx context.Context) error { return e.tickets().CreateTicket(ctx, t, ev) }))
				return sendAll(ctx, c, e.authz(org, caller(w)), tx)
			}},
		{name: "add comment", method: http.MethodPost, want: 201, chart: 2,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				return fmt.Sprintf("/v1/orgs/%s/tickets/%s/comments", org, pick(r, big.Tickets)),
					fmt.Appendf(nil, `{"body":"%s"}`, sentence(r, 25))
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				cm := ticket.Comment{OrgID: org, TicketID: pick(r, big.Tickets), ID: e.ids.at(time.Now()), AuthorID: caller(w),
					Body: sentence(r, 25), CreatedAt: time.Now().UTC()}
				ev := e.event(org, caller(w), "comment.create", "comment", cm.TicketID+"/"+cm.ID, cm.CreatedAt, audit.Diff(audit.F("body", nil, cm.Body)))
				tx := one(capture(func(ctx context.Context) error { return e.tickets().CreateComment(ctx, cm, ev) }))
				return sendAll(ctx, c, e.authz(org, caller(w)), tx)
			}},
		{name: "PUT team member (role change)", method: http.MethodPut, want: 200, chart: 2,
			http: func(r *rand.Rand, w int, i int64) (string, []byte) {
				u := putHTTP[i%int64(len(putHTTP))]
				return fmt.Sprintf("/v1/orgs/%s/teams/%s/members/%s", org, team0, u), fmt.Appendf(nil, `{"role":"%s"}`, flip(u))
			},
			raw: func(ctx context.Context, c *dynamodb.Client, r *rand.Rand, w int, i int64) error {
				return putMember(ctx, c, w, i)
			}},
	}
}

func (e *env) putMemberRaw(org, team0 string, caller func(int) string, putRaw []string, rawEdges map[string]*edge, rawMu *sync.Mutex) func(ctx context.Context, c *dynamodb.Client, w int, i int64) error {
	return func(ctx context.Context, c *dynamodb.Client, w int, i int64) error {
		u := putRaw[i%int64(len(putRaw))]
		get := one(capture(func(ctx context.Context) error { _, err := e.teams().GetTeamMember(ctx, org, team0, u); return err }))
		rawMu.Lock()
		ed := rawEdges[u]
		prev := membership.Membership{OrgID: org, TeamID: team0, UserID: u, Role: ed.role, Version: ed.version}
		next := prev
		next.Role, next.Version, next.UpdatedAt = authz.Admin, prev.Version+1, time.Now().UTC()
		if prev.Role == authz.Admin {
			next.Role = authz.Member
		}
		ed.role, ed.version = next.Role, next.Version
		rawMu.Unlock()
		ev := e.event(org, caller(w), "member.update", "member", team0+"/"+u, next.UpdatedAt,
			audit.Diff(audit.F("role", string(prev.Role), string(next.Role))))
		upd := one(capture(func(ctx context.Context) error { return e.teams().UpdateTeamMember(ctx, prev, next, ev) }))
		// The authorization read loads the edge (its target), then the update.
		return sendAll(ctx, c, batchOf(e.authz(org, caller(w)), get), upd)
	}
}
