package httpapi_test

// Service overhead without the database: the request path with DynamoDB
// answered by an in-process stub HTTP endpoint (canned responses), against a
// bare Echo handler making the same SDK calls. Run with
//
//	go test -run '^$' -bench . -benchmem ./internal/httpapi/
//
// allocs/op counts every allocation of the process, the stub's included;
// the stub's share is what "SDK only" shows, so compare rows, not absolutes.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"runtime/debug"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsratelimit "github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	smithyendpoints "github.com/aws/smithy-go/endpoints"
	"github.com/aws/smithy-go/middleware"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/golang-jwt/jwt/v5"
	"github.com/guregu/dynamo/v2"
	"github.com/labstack/echo/v4"
	echomw "github.com/oapi-codegen/echo-middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenantd/tenantd/internal/app"
	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/httpapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/membership"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/ratelimit"
	"github.com/tenantd/tenantd/internal/store"
	"github.com/tenantd/tenantd/internal/tenant"
	"github.com/tenantd/tenantd/internal/testkit"
	"github.com/tenantd/tenantd/internal/ticket"
)

const (
	benchTable  = "tenantd"
	benchSecret = "tenantd-httpapi-bench-secret-0123456789abcdef"
	benchOrgID  = "01HZX3J6Q8W9E2R4T6Y8V0K2M4"
	benchTeamID = "01HZX3J6Q8W9E2R4T6Y8V0K2M5"
	benchTicket = "01HZX3J6Q8W9E2R4T6Y8V0K2M6"
	benchUser   = "u_owner"
)

var benchCursorKey = []byte("tenantd-httpapi-bench-cursor-key-0123456789")

// ---- the stub DynamoDB ----

type benchItem struct {
	av   map[string]types.AttributeValue
	wire json.RawMessage
}

// benchStub answers GetItem and Query from items the store's own write
// methods produced (captured, see benchCaptureItems).
type benchStub struct {
	byKey map[string]*benchItem // pk \x00 sk
	items []*benchItem
}

func benchS(av types.AttributeValue) string {
	if s, ok := av.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// benchWire is an attribute value in DynamoDB's JSON wire format.
func benchWire(av types.AttributeValue) any {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return map[string]any{"S": v.Value}
	case *types.AttributeValueMemberN:
		return map[string]any{"N": v.Value}
	case *types.AttributeValueMemberBOOL:
		return map[string]any{"BOOL": v.Value}
	case *types.AttributeValueMemberNULL:
		return map[string]any{"NULL": true}
	case *types.AttributeValueMemberB:
		return map[string]any{"B": v.Value}
	case *types.AttributeValueMemberSS:
		return map[string]any{"SS": v.Value}
	case *types.AttributeValueMemberNS:
		return map[string]any{"NS": v.Value}
	case *types.AttributeValueMemberL:
		l := make([]any, len(v.Value))
		for i, x := range v.Value {
			l[i] = benchWire(x)
		}
		return map[string]any{"L": l}
	case *types.AttributeValueMemberM:
		return map[string]any{"M": benchWireMap(v.Value)}
	}
	panic(fmt.Sprintf("benchWire: %T", av))
}

func benchWireMap(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = benchWire(v)
	}
	return out
}

func newBenchStub(items []map[string]types.AttributeValue) *benchStub {
	s := &benchStub{byKey: map[string]*benchItem{}}
	for _, it := range items {
		w, err := json.Marshal(benchWireMap(it))
		if err != nil {
			panic(err)
		}
		bi := &benchItem{av: it, wire: w}
		k := benchS(it["pk"]) + "\x00" + benchS(it["sk"])
		if _, dup := s.byKey[k]; !dup {
			s.items = append(s.items, bi)
		}
		s.byKey[k] = bi
	}
	return s
}

type benchSVal struct {
	S string `json:"S"`
}

var (
	benchEqRE    = regexp.MustCompile(`(#?\w+)\s*=\s*(:\w+)`)
	benchBeginRE = regexp.MustCompile(`begins_with\(\s*(#?\w+)\s*,\s*(:\w+)\s*\)`)
)

func (s *benchStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.IndexByte(target, '.')+1:]
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	capacity := `{"TableName":"` + benchTable + `","CapacityUnits":0.5}`
	switch op {
	case "GetItem":
		var in struct {
			Key map[string]benchSVal
		}
		if err := json.Unmarshal(body, &in); err != nil {
			benchStubError(w, err.Error())
			return
		}
		it := s.byKey[in.Key["pk"].S+"\x00"+in.Key["sk"].S]
		if it == nil {
			_, _ = io.WriteString(w, `{"ConsumedCapacity":`+capacity+`}`)
			return
		}
		_, _ = io.WriteString(w, `{"ConsumedCapacity":`+capacity+`,"Item":`+string(it.wire)+`}`)
	case "Query":
		s.query(w, body, capacity)
	case "BatchGetItem":
		var in struct {
			RequestItems map[string]struct {
				Keys []map[string]benchSVal
			}
		}
		if err := json.Unmarshal(body, &in); err != nil {
			benchStubError(w, err.Error())
			return
		}
		var found []string
		n := 0
		for _, req := range in.RequestItems {
			for _, k := range req.Keys {
				n++
				if it := s.byKey[k["pk"].S+"\x00"+k["sk"].S]; it != nil {
					found = append(found, string(it.wire))
				}
			}
		}
		_, _ = fmt.Fprintf(w, `{"ConsumedCapacity":[{"TableName":%q,"CapacityUnits":%d}],"Responses":{%q:[%s]},"UnprocessedKeys":{}}`,
			benchTable, n, benchTable, strings.Join(found, ","))
	default:
		benchStubError(w, "stub: unsupported operation "+op)
	}
}

func benchStubError(w http.ResponseWriter, msg string) {
	w.WriteHeader(http.StatusBadRequest)
	_, _ = fmt.Fprintf(w, `{"__type":"com.amazon.coral.validate#ValidationException","message":%q}`, msg)
}

// query serves a key-condition Query: partition = value, optional
// begins_with on the sort key, order, Limit and ExclusiveStartKey.
func (s *benchStub) query(w http.ResponseWriter, body []byte, capacity string) {
	var in struct {
		IndexName                 string
		KeyConditionExpression    string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]benchSVal
		ExclusiveStartKey         map[string]benchSVal
		Limit                     int
		ScanIndexForward          *bool
		KeyConditions             map[string]struct {
			AttributeValueList []benchSVal
			ComparisonOperator string
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		benchStubError(w, err.Error())
		return
	}
	name := func(n string) string {
		if strings.HasPrefix(n, "#") {
			return in.ExpressionAttributeNames[n]
		}
		return n
	}
	pkAttr, skAttr := "pk", "sk"
	if in.IndexName != "" {
		lower := strings.ToLower(in.IndexName)
		pkAttr, skAttr = lower+"pk", lower+"sk"
	}
	var pv, prefix string
	if m := benchBeginRE.FindStringSubmatch(in.KeyConditionExpression); m != nil {
		prefix = in.ExpressionAttributeValues[m[2]].S
	}
	for _, m := range benchEqRE.FindAllStringSubmatch(in.KeyConditionExpression, -1) {
		if name(m[1]) == pkAttr {
			pv = in.ExpressionAttributeValues[m[2]].S
		}
	}
	for attr, kc := range in.KeyConditions { // the legacy form guregu/dynamo sends
		if len(kc.AttributeValueList) == 0 {
			continue
		}
		switch {
		case attr == pkAttr && kc.ComparisonOperator == "EQ":
			pv = kc.AttributeValueList[0].S
		case attr == skAttr && kc.ComparisonOperator == "BEGINS_WITH":
			prefix = kc.AttributeValueList[0].S
		}
	}
	var hits []*benchItem
	for _, it := range s.items {
		if benchS(it.av[pkAttr]) == pv && strings.HasPrefix(benchS(it.av[skAttr]), prefix) && it.av[skAttr] != nil {
			hits = append(hits, it)
		}
	}
	sort.Slice(hits, func(i, j int) bool { return benchS(hits[i].av[skAttr]) < benchS(hits[j].av[skAttr]) })
	if in.ScanIndexForward != nil && !*in.ScanIndexForward {
		for i, j := 0, len(hits)-1; i < j; i, j = i+1, j-1 {
			hits[i], hits[j] = hits[j], hits[i]
		}
	}
	if esk := in.ExclusiveStartKey; esk != nil {
		for i, it := range hits {
			if benchS(it.av[skAttr]) == esk[skAttr].S && benchS(it.av["pk"]) == esk["pk"].S && benchS(it.av["sk"]) == esk["sk"].S {
				hits = hits[i+1:]
				break
			}
		}
	}
	var last *benchItem
	if in.Limit > 0 && len(hits) > in.Limit {
		hits = hits[:in.Limit]
		last = hits[len(hits)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"ConsumedCapacity":%s,"Count":%d,"ScannedCount":%d,"Items":[`, capacity, len(hits), len(hits))
	for i, it := range hits {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(it.wire)
	}
	b.WriteByte(']')
	if last != nil {
		key := map[string]any{}
		for _, a := range []string{"pk", "sk", pkAttr, skAttr} {
			key[a] = benchWire(last.av[a])
		}
		k, _ := json.Marshal(key)
		fmt.Fprintf(&b, `,"LastEvaluatedKey":%s`, k)
	}
	b.WriteByte('}')
	_, _ = io.WriteString(w, b.String())
}

// ---- items from the store's own write methods ----

type benchCaptureKey struct{}

// benchCapture short-circuits calls whose context carries a *[]any: the
// input is kept, an empty output returned, nothing is sent.
func benchCapture(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("bench.capture",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			box, ok := ctx.Value(benchCaptureKey{}).(*[]any)
			if !ok {
				return next.HandleInitialize(ctx, in)
			}
			*box = append(*box, in.Parameters)
			switch in.Parameters.(type) {
			case *dynamodb.TransactWriteItemsInput:
				return middleware.InitializeOutput{Result: &dynamodb.TransactWriteItemsOutput{}}, middleware.Metadata{}, nil
			case *dynamodb.PutItemInput:
				return middleware.InitializeOutput{Result: &dynamodb.PutItemOutput{}}, middleware.Metadata{}, nil
			}
			return middleware.InitializeOutput{}, middleware.Metadata{}, fmt.Errorf("bench capture: %T", in.Parameters)
		}), middleware.Before)
}

// benchCaptureItems returns the items of the bench data set, as the store's
// write methods build them: an org with its owner, a team with 40 members
// and a ticket.
func benchCaptureItems(b testing.TB) []map[string]types.AttributeValue {
	b.Helper()
	c := benchClient("http://capture.invalid", benchCapture)
	db := store.Open(c, benchTable)
	orgs, teams, tickets := &store.Orgs{DB: db}, &store.Teams{DB: db}, &store.Tickets{DB: db}
	var box []any
	ctx := context.WithValue(context.Background(), benchCaptureKey{}, &box)
	now := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	evIDs := ids.NewGenerator(func() time.Time { return now })
	ev := func(action string) audit.Event { // the events' items are dropped below: the data set is not audited
		return audit.NewEvent(ctx, evIDs, audit.Outsider(benchOrgID, benchUser), action, "bench", "bench", now, nil)
	}
	must(orgs.CreateOrg(ctx, tenant.Org{ID: benchOrgID, Name: "Bench", Version: 1, CreatedAt: now, UpdatedAt: now},
		tenant.User{OrgID: benchOrgID, UserID: benchUser, Email: "owner@bench.example", Name: "Owner", Role: authz.Owner,
			JoinedAt: now, UpdatedAt: now, Version: 1}, ev("org.create")))
	member := func(uid string, r authz.Role) membership.Membership {
		return membership.Membership{OrgID: benchOrgID, TeamID: benchTeamID, UserID: uid, Role: r, JoinedAt: now, UpdatedAt: now, Version: 1}
	}
	must(teams.CreateTeam(ctx, membership.Team{OrgID: benchOrgID, ID: benchTeamID, Name: "Support", MemberCount: 41, Version: 1,
		CreatedAt: now, UpdatedAt: now}, member(benchUser, authz.Owner), ev("team.create")))
	for i := range 40 {
		must(teams.AddTeamMember(ctx, member(fmt.Sprintf("m-%03d", i), authz.Member), ev("member.add")))
	}
	must(tickets.CreateTicket(ctx, ticket.Ticket{OrgID: benchOrgID, ID: benchTicket, Title: "Export times out",
		Description: "Exporting a large report from the dashboard times out after about thirty seconds.",
		Status:      ticket.StatusOpen, Priority: ticket.PriorityHigh, RequesterID: benchUser, TeamID: benchTeamID,
		Tags: []string{"export", "bug"}, Version: 3, CreatedAt: now, UpdatedAt: now}, ev("ticket.create")))
	var items []map[string]types.AttributeValue
	for _, p := range box {
		switch in := p.(type) {
		case *dynamodb.TransactWriteItemsInput:
			for _, ti := range in.TransactItems {
				if ti.Put != nil && ti.Put.Item["type"].(*types.AttributeValueMemberS).Value != "AuditEvent" {
					items = append(items, ti.Put.Item)
				}
			}
		case *dynamodb.PutItemInput:
			items = append(items, in.Item)
		}
	}
	return items
}

// benchClient is the SDK client as cmd/api builds it (store.NewClient),
// pointed at endpoint.
func benchClient(endpoint string, apiOptions ...func(*middleware.Stack) error) *dynamodb.Client {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")}
	return store.NewClient(cfg, store.Options{Endpoint: endpoint, APIOptions: apiOptions})
}

// benchEnv is the stub and what the benchmarks call.
type benchEnv struct {
	stub    *httptest.Server
	handler *benchStub
	items   map[string]map[string]types.AttributeValue // by type
	token   string
	orgKey  map[string]types.AttributeValue // the org item's key
	userKey map[string]types.AttributeValue // the caller's OrgUser key
	tickKey map[string]types.AttributeValue // the ticket's key
}

// calls are the DynamoDB calls tenantd makes for GET ticket, without it:
// the authorization read, one consistent BatchGetItem of the org item, the
// caller's edge and the ticket. It returns the ticket, nil when the
// caller's edge or the ticket is missing.
func (env *benchEnv) calls(ctx context.Context, c *dynamodb.Client) (map[string]types.AttributeValue, error) {
	a, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		benchTable: {Keys: []map[string]types.AttributeValue{env.orgKey, env.userKey, env.tickKey}, ConsistentRead: aws.Bool(true)}}})
	if err != nil {
		return nil, err
	}
	items := a.Responses[benchTable]
	if len(items) != 3 {
		return nil, nil
	}
	for _, it := range items {
		if pk, ok := it["pk"].(*types.AttributeValueMemberS); ok && pk.Value == env.tickKey["pk"].(*types.AttributeValueMemberS).Value {
			return it, nil
		}
	}
	return nil, nil
}

func newBenchEnv(b testing.TB) *benchEnv {
	b.Helper()
	items := benchCaptureItems(b)
	h := newBenchStub(items)
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	env := &benchEnv{stub: srv, handler: h, items: map[string]map[string]types.AttributeValue{}}
	key := func(it map[string]types.AttributeValue) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": it["pk"], "sk": it["sk"]}
	}
	for _, it := range items {
		switch benchS(it["type"]) {
		case "Org":
			env.orgKey = key(it)
		case "OrgUser":
			if benchS(it["userId"]) == benchUser {
				env.userKey = key(it)
			}
		case "Ticket":
			env.tickKey = key(it)
		}
	}
	if env.orgKey == nil || env.userKey == nil || env.tickKey == nil {
		b.Fatal("bench data set lacks the Org, the OrgUser or the Ticket item")
	}
	now := time.Now()
	tok, err := httpapi.MintHS256(benchSecret, httpapi.Claims{Email: "owner@bench.example", Name: "Owner",
		RegisteredClaims: jwt.RegisteredClaims{Subject: benchUser, IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))}})
	if err != nil {
		b.Fatal(err)
	}
	env.token = tok
	return env
}

// server wires tenantd as cmd/api does (JSON log at warn, metrics,
// limiter off as RATE_LIMIT_RPS=0, idempotency), against the stub.
// client is the SDK client of the benchmarks, configured as cmd/api does
// (store.NewClient): over loopback to the stub's httptest.Server, or, with
// inproc, answered by the stub's handler in process (no sockets, so less
// scheduling noise: ns/op is then close to CPU time).
func (env *benchEnv) client(inproc bool, apiOptions ...func(*middleware.Stack) error) *dynamodb.Client {
	if !inproc {
		return benchClient(env.stub.URL, apiOptions...)
	}
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient: &http.Client{Transport: benchTransport{env.handler}}}
	return store.NewClient(cfg, store.Options{Endpoint: "http://stub.invalid", APIOptions: apiOptions})
}

func (env *benchEnv) server(b testing.TB, withMetrics, inproc bool) *echo.Echo {
	b.Helper()
	return env.serverWith(b, withMetrics, inproc, nil)
}

// serverWith is server with the dependencies changed by change (nil: none)
// before the server is built, and tracing's DynamoDB options, if
// change sets Tracing, on its client.
func (env *benchEnv) serverWith(b testing.TB, withMetrics, inproc bool, change func(*httpapi.Deps)) *echo.Echo {
	b.Helper()
	var probe httpapi.Deps
	if change != nil {
		change(&probe)
	}
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	var metrics *obs.Metrics
	var opts []func(*middleware.Stack) error
	if withMetrics {
		metrics = obs.NewMetrics(reg)
		opts = append(opts, metrics.DynamoDB)
	}
	if probe.Tracing != nil {
		opts = append(opts, probe.Tracing.DynamoDB()...)
	}
	db := store.Open(env.client(inproc, opts...), benchTable)
	verifier, err := httpapi.NewVerifier(ctx, httpapi.VerifierConfig{HS256Secret: benchSecret, Leeway: 30 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	d := app.Deps(db, nil, app.Options{})
	d.Verifier, d.CursorKey, d.Registry, d.Metrics = verifier, benchCursorKey, reg, metrics
	d.Logger = slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	d.RateLimit = ratelimit.New(ratelimit.Options{PerSecond: 0, Burst: 200})
	d.RequestTimeout, d.DocsUI = 10*time.Second, true
	if change != nil {
		change(&d)
	}
	e, err := httpapi.New(d)
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// bareGetTicket is the baseline: Echo, one route, the same two calls as
// tenantd (env.calls: the authorization BatchGetItem with the ticket) through the same client configuration, the item encoded as JSON.
func (env *benchEnv) bareGetTicket(client *dynamodb.Client, validate bool, b *testing.B) *echo.Echo {
	e := echo.New()
	if validate {
		spec, err := oapi.GetSpec()
		if err != nil {
			b.Fatal(err)
		}
		spec.Servers = nil
		e.Use(echomw.OapiRequestValidatorWithOptions(spec, &echomw.Options{
			Options:              openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
			DoNotValidateServers: true,
		}))
	}
	e.GET("/v1/orgs/:orgId/tickets/:ticketId", func(c echo.Context) error {
		t, err := env.calls(c.Request().Context(), client)
		if err != nil {
			return err
		}
		if t == nil {
			return echo.ErrNotFound
		}
		return c.JSON(http.StatusOK, benchPlain(t))
	})
	return e
}

// benchPlain turns an item into plain Go values for JSON.
func benchPlain(m map[string]types.AttributeValue) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		switch x := v.(type) {
		case *types.AttributeValueMemberS:
			out[k] = x.Value
		case *types.AttributeValueMemberN:
			out[k] = json.Number(x.Value)
		case *types.AttributeValueMemberBOOL:
			out[k] = x.Value
		case *types.AttributeValueMemberL:
			l := make([]any, len(x.Value))
			for i, e := range x.Value {
				l[i] = benchPlain(map[string]types.AttributeValue{"v": e})["v"]
			}
			out[k] = l
		}
	}
	return out
}

// benchLoop runs f b.N times (b.Loop) and also reports the process CPU
// time per op (this process: the service, the SDK and the stub), which
// scheduling noise on a shared machine disturbs less than ns/op.
func benchLoop(b *testing.B, f func()) {
	b.ReportAllocs()
	c0 := testkit.ProcessCPU()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	b.ReportMetric(float64(testkit.ProcessCPU()-c0)/float64(max(n, 1)), "cpu-ns/op")
}

func (env *benchEnv) serve(b testing.TB, h http.Handler, method, target, token string, want int) {
	req := httptest.NewRequest(method, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body.String())
	}
}

// BenchmarkGetTicket is GET /v1/orgs/{orgId}/tickets/{ticketId}: tenantd as
// cmd/api wires it, against the bare Echo baseline (target: tenantd <= 2x).
// "sdk-only" is tenantd's two calls alone (env.calls: client + stub, no
// HTTP server).
// "loopback" reaches the stub's httptest.Server over TCP; "inproc" answers
// from its handler in process (steadier: no socket round trips).
func BenchmarkGetTicket(b *testing.B) {
	env := newBenchEnv(b)
	path := "/v1/orgs/" + benchOrgID + "/tickets/" + benchTicket
	sdkOnly := func(inproc bool) func(*testing.B) {
		return func(b *testing.B) {
			c := env.client(inproc)
			ctx := context.Background()
			benchLoop(b, func() {
				if t, err := env.calls(ctx, c); err != nil || t == nil {
					b.Fatalf("the calls: %v, ticket %v", err, t)
				}
			})
		}
	}
	tenantd := func(withMetrics, inproc bool) func(*testing.B) {
		return func(b *testing.B) {
			e := env.server(b, withMetrics, inproc)
			benchLoop(b, func() { env.serve(b, e, http.MethodGet, path, env.token, http.StatusOK) })
		}
	}
	for _, tr := range []string{"loopback", "inproc"} {
		inproc := tr == "inproc"
		b.Run(tr+"/sdk-only", sdkOnly(inproc))
		b.Run(tr+"/bare-echo", func(b *testing.B) {
			e := env.bareGetTicket(env.client(inproc), false, b)
			benchLoop(b, func() { env.serve(b, e, http.MethodGet, path, "", http.StatusOK) })
		})
		b.Run(tr+"/bare-echo+openapi-validator", func(b *testing.B) {
			e := env.bareGetTicket(env.client(inproc), true, b)
			benchLoop(b, func() { env.serve(b, e, http.MethodGet, path, "", http.StatusOK) })
		})
		b.Run(tr+"/tenantd", tenantd(true, inproc))
		b.Run(tr+"/tenantd-without-obs-metrics", tenantd(false, inproc))
	}
	// cmd/api runs with GOGC=400 unless told otherwise (main.go); go test
	// with Go's 100. The collector's share grows with what a request
	// allocates, so the service's overhead over the SDK's calls is
	// measured at both.
	atGOGC400 := func(f func(*testing.B)) func(*testing.B) {
		return func(b *testing.B) {
			defer debug.SetGCPercent(debug.SetGCPercent(400))
			f(b)
		}
	}
	b.Run("inproc-gogc400/sdk-only", atGOGC400(sdkOnly(true)))
	b.Run("inproc-gogc400/tenantd", atGOGC400(tenantd(true, true)))
}

// BenchmarkAuthorizeOrgGetItem is the AuthorizeOrg middleware with its real
// role read: store.Orgs.OrgAccess's consistent BatchGetItem, answered by the
// stub in process (authz/middleware_bench_test.go has it without the
// database).
func BenchmarkAuthorizeOrgGetItem(b *testing.B) {
	env := newBenchEnv(b)
	orgs := &store.Orgs{DB: store.Open(env.client(true), benchTable)}
	h := httpapi.AuthorizeOrg(httpapi.Authorizer{Reader: orgs})(func(c echo.Context) error { return nil })
	e := echo.New()
	req := httptest.NewRequest(http.MethodGet, "/v1/orgs/"+benchOrgID+"/tickets", nil)
	req = req.WithContext(httpapi.WithIdentity(req.Context(), authz.Identity{UserID: benchUser}))
	c := e.NewContext(req, httptest.NewRecorder())
	c.SetPath("/v1/orgs/:orgId/tickets")
	c.SetParamNames("orgId")
	c.SetParamValues(benchOrgID)
	benchLoop(b, func() {
		c.SetRequest(req)
		if err := h(c); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkListTeamMembers is AP1 through tenantd: the first page (signs a
// cursor) and the second page (verifies one, signs the next). The cursor
// code is unexported; the difference between the two is its decode side.
func BenchmarkListTeamMembers(b *testing.B) {
	env := newBenchEnv(b)
	e := env.server(b, true, true)
	path := "/v1/orgs/" + benchOrgID + "/teams/" + benchTeamID + "/members?limit=10"
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+env.token)
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	var first struct {
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &first); err != nil || first.NextCursor == "" || rec.Code != http.StatusOK {
		b.Fatalf("first page: %d %s (%v)", rec.Code, rec.Body.String(), err)
	}
	b.Run("page1-encode-cursor", func(b *testing.B) {
		benchLoop(b, func() { env.serve(b, e, http.MethodGet, path, env.token, http.StatusOK) })
	})
	b.Run("page2-decode-and-encode-cursor", func(b *testing.B) {
		p2 := path + "&cursor=" + url.QueryEscape(first.NextCursor)
		benchLoop(b, func() { env.serve(b, e, http.MethodGet, p2, env.token, http.StatusOK) })
	})
}

// BenchmarkStubGetItem is the stub's own share of a GetItem (its handler
// alone, no network): subtract it from the rows above to get the client's.
func BenchmarkStubGetItem(b *testing.B) {
	env := newBenchEnv(b)
	stub := newBenchStub(benchCaptureItems(b))
	body := fmt.Sprintf(`{"ConsistentRead":true,"Key":{"pk":{"S":%q},"sk":{"S":%q}},"ReturnConsumedCapacity":"TOTAL","TableName":"tenantd"}`,
		benchS(env.userKey["pk"]), benchS(env.userKey["sk"]))
	benchLoop(b, func() {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
		rec := httptest.NewRecorder()
		stub.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"Item"`) {
			b.Fatalf("stub: %d %s", rec.Code, rec.Body.String())
		}
	})
}

// benchTransport answers the SDK in process, from the stub's handler: no
// sockets, no net/http server.
type benchTransport struct{ h http.Handler }

func (t benchTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// BenchmarkSDKGetItem is one GetItem through the SDK client as tenantd
// configures it, answered in process (benchTransport); minus
// BenchmarkStubGetItem it is the client's cost. The variants measure client
// options tenantd does not set today: the obs middleware, a static
// EndpointResolverV2 (no rules engine per call) and a retryer without the
// client-side retry token bucket.
func BenchmarkSDKGetItem(b *testing.B) {
	env := newBenchEnv(b)
	variants := []struct {
		name string
		obs  bool
		opt  func(*dynamodb.Options)
	}{
		{"client", false, nil},
		{"client+obs", true, nil},
		{"client+static-endpoint", false, func(o *dynamodb.Options) {
			o.EndpointResolverV2 = benchStaticEndpoint{}
		}},
		{"client+no-retry-token-bucket", false, func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(dynamo.RetryTxConflicts, func(so *retry.StandardOptions) { so.RateLimiter = awsratelimit.None })
		}},
	}
	for _, v := range variants {
		var opts []func(*middleware.Stack) error
		if v.obs {
			opts = append(opts, obs.NewMetrics(prometheus.NewRegistry()).DynamoDB)
		}
		b.Run(v.name, func(b *testing.B) {
			c := env.client(true, opts...)
			if v.opt != nil {
				c = dynamodb.New(c.Options(), v.opt)
			}
			ctx := context.Background()
			in := &dynamodb.GetItemInput{TableName: aws.String(benchTable), Key: env.userKey, ConsistentRead: aws.Bool(true)}
			benchLoop(b, func() {
				out, err := c.GetItem(ctx, in)
				if err != nil || out.Item == nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// benchStaticEndpoint resolves every call to the stub's URL.
type benchStaticEndpoint struct{}

func (benchStaticEndpoint) ResolveEndpoint(context.Context, dynamodb.EndpointParameters) (smithyendpoints.Endpoint, error) {
	u, _ := url.Parse("http://stub.invalid")
	return smithyendpoints.Endpoint{URI: *u}, nil
}

// BenchmarkGetTicketOverhead serves, in turn within each iteration, one
// request of: the bare Echo baseline, the baseline behind the OpenAPI
// request validator tenantd uses, tenantd without the obs metrics, and
// tenantd as cmd/api wires it. It reports each one's mean time and
// tenantd/bare: all four see the same machine noise, so these are steadier
// than comparing separate benchmarks (the target: tenantd <= 2x bare).
func BenchmarkGetTicketOverhead(b *testing.B) {
	env := newBenchEnv(b)
	path := "/v1/orgs/" + benchOrgID + "/tickets/" + benchTicket
	for _, tr := range []string{"inproc", "loopback"} {
		inproc := tr == "inproc"
		b.Run(tr, func(b *testing.B) {
			hs := []struct {
				unit  string
				h     http.Handler
				token string
			}{
				{"bare-ns/op", env.bareGetTicket(env.client(inproc), false, b), ""},
				{"bare+validator-ns/op", env.bareGetTicket(env.client(inproc), true, b), ""},
				{"tenantd-no-obs-ns/op", env.server(b, false, inproc), env.token},
				{"tenantd-ns/op", env.server(b, true, inproc), env.token},
			}
			took := make([]time.Duration, len(hs))
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				for i, h := range hs {
					t0 := time.Now()
					env.serve(b, h.h, http.MethodGet, path, h.token, http.StatusOK)
					took[i] += time.Since(t0)
				}
				n++
			}
			for i, h := range hs {
				b.ReportMetric(float64(took[i].Nanoseconds())/float64(n), h.unit)
			}
			b.ReportMetric(float64(took[3])/float64(took[0]), "tenantd/bare")
		})
	}
}
