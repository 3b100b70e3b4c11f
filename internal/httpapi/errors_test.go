package httpapi_test

// The errors every operation answers alike, each a spec-driven test with a
// subtest per operation that documents it: 401 (authentication), 413 (the
// body limit), 500 (an unexpected failure); and the helpers the resource
// tests share for their refusals (400, 403, 404, 409, 412).

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/golang-jwt/jwt/v5"

	"github.com/tenantd/tenantd/client"
	"github.com/tenantd/tenantd/internal/httpapi"
)

const jsonType = "application/json"

// refusedBody is a request body an operation refuses with a 400.
type refusedBody struct {
	name string // "<operationId>/<what is wrong>"
	do   func(body io.Reader) (statusCoder, error)
	body string
}

// wantRefusedBodies sends each body: a 400, and the world unchanged.
func wantRefusedBodies(t *testing.T, w *world, cases []refusedBody) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			before := worldSnapshot(t, w)
			r, err := c.do(strings.NewReader(c.body))
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if after := worldSnapshot(t, w); after != before {
				t.Errorf("a refused request changed data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// refusedRequest is a request (an invalid ID, query parameter...) an
// operation refuses with a 400 before any DynamoDB call.
type refusedRequest struct {
	name string // "<operationId>/<what is wrong>"
	do   func() (statusCoder, error)
}

// wantRefused sends each request: a 400 problem, and no DynamoDB call.
func wantRefused(t *testing.T, ts *testServer, cases []refusedRequest) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			ts.Rec.Reset()
			r, err := c.do()
			wantProblem(t, r, err, http.StatusBadRequest, "")
			if got := ts.Rec.Count(); got != 0 {
				t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
			}
		})
	}
}

// forbiddenCase is a request its caller's role does not allow.
type forbiddenCase struct {
	name string // "<operationId>/<who>"
	do   func(t *testing.T) (statusCoder, error)
	// check, when set, re-reads what the request must not have changed.
	check func(t *testing.T)
}

// wantForbidden sends each request: a 403 forbidden, and nothing changed.
func wantForbidden(t *testing.T, cases []forbiddenCase) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusForbidden, "forbidden")
			if c.check != nil {
				c.check(t)
			}
		})
	}
}

// notFoundCase is a request for something that is not there (for the
// caller).
type notFoundCase struct {
	name, code string // code "" for any
	do         func() (statusCoder, error)
}

// wantNotFound sends each request: a 404 (with code, when set).
func wantNotFound(t *testing.T, cases []notFoundCase) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusNotFound, c.code)
		})
	}
}

// conflictCase is a request the current state refuses with code.
type conflictCase struct {
	name, code string
	do         func(t *testing.T) (statusCoder, error)
}

// wantConflicts sends each request: a 409 with its code.
func wantConflicts(t *testing.T, cases []conflictCase) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			r, err := c.do(t)
			wantProblem(t, r, err, http.StatusConflict, c.code)
		})
	}
}

// staleCase is a write with an If-Match that is not the current ETag.
type staleCase struct {
	name string
	do   func() (statusCoder, error)
}

// wantStale sends each write: a 412 version_mismatch.
func wantStale(t *testing.T, cases []staleCase) {
	t.Helper()
	for _, c := range cases {
		spec(t, c.name, func(t *testing.T) {
			r, err := c.do()
			wantProblem(t, r, err, http.StatusPreconditionFailed, "version_mismatch")
		})
	}
}

// teamsCursor adds three teams to the world's org and returns the cursor
// of the first page (one team) of its listing.
func teamsCursor(t *testing.T, ts *testServer, w *world) string {
	t.Helper()
	for range 3 {
		MustTeam(t, w.Owner.C, w.Org.Id, ts.UniqueID("team"))
	}
	first, err := w.Owner.C.ListTeamsWithResponse(bg, w.Org.Id, &client.ListTeamsParams{Limit: ptr(1)})
	mustStatus(t, first, err, http.StatusOK)
	if first.JSON200.NextCursor == nil {
		t.Fatal("no nextCursor with limit=1")
	}
	return *first.JSON200.NextCursor
}

// wantKeyInUse sends a create twice with one Idempotency-Key while the
// first is held in its transaction (g armed with marker, a string of the
// create's body): the second is a 409 idempotency_in_progress; the first,
// let go, creates (201), and the key then replays it.
func wantKeyInUse(t *testing.T, g *gate, marker string, send func() apiRespE) {
	t.Helper()
	g.arm(marker)
	first := make(chan apiRespE, 1)
	go func() { first <- send() }()
	select {
	case <-g.held:
	case r := <-first:
		t.Fatalf("the first request was answered (%d %v %s) without its transaction held", r.Status, r.Err, truncate(r.Body))
	}
	second := send()
	close(g.open)
	if second.Err != nil || second.Status != http.StatusConflict || problemCode(second.Body) != "idempotency_in_progress" {
		t.Errorf("the key while its first request runs: %d %v %s, want 409 idempotency_in_progress", second.Status, second.Err, truncate(second.Body))
	}
	if r := <-first; r.Err != nil || r.Status != http.StatusCreated {
		t.Errorf("the first request: %d %v %s, want 201", r.Status, r.Err, truncate(r.Body))
	}
	if r := send(); r.Err != nil || r.Status != http.StatusCreated || r.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("the key once its request is done: %d %v replayed=%q, want the 201 replayed", r.Status, r.Err, r.Header.Get("Idempotent-Replayed"))
	}
}

// opsDocumenting are the operations of openapi.yaml that document status,
// but those unexercised explains.
func opsDocumenting(t *testing.T, status int) []specOp {
	t.Helper()
	doc, _ := loadSpec(t)
	var out []specOp
	for _, op := range specOperations(doc) {
		if doc.Paths.Value(op.Path).GetOperation(op.Method).Responses.Status(status) == nil {
			continue
		}
		if _, ok := unexercised[fmt.Sprintf("%d/%s", status, op.ID)]; ok {
			continue
		}
		if _, ok := requests[op.ID]; !ok {
			t.Errorf("%s documents %d but has no request builder in matrix_test.go", op.ID, status)
			continue
		}
		out = append(out, op)
	}
	if len(out) == 0 {
		t.Fatalf("no operation documents %d", status)
	}
	return out
}

// worldIDs are the IDs of w for every operation's path: the world's, with
// a pending invitation's ID and another's token.
func worldIDs(t *testing.T, w *world) opIDs {
	t.Helper()
	ids := idsOf(w)
	ids.InvitationID = MustInvitation(t, w.Owner.C, w.Org.Id, "pending-"+w.Org.Id+"@example.com", client.RoleMember).Id
	ids.Token = MustInvitation(t, w.Owner.C, w.Org.Id, "accepting-"+w.Org.Id+"@example.com", client.RoleMember, w.Team.Id).Token
	r, err := w.Owner.C.CreateWebhookWithResponse(bg, w.Org.Id, nil, client.WebhookCreate{Url: "https://hooks.example.com/" + w.Org.Id, Events: []string{"*"}})
	mustStatus(t, r, err, http.StatusCreated)
	ids.WebhookID, ids.DeliveryID = r.JSON201.Id, randULID()
	ids.KeyID = mustAPIKey(t, w, client.ApiKeyCreateRoleMember).Id
	return ids
}

// doOp sends op with ids through hc, with body (Content-Type
// application/json unless header says otherwise) and header, reporting
// failures of the validating client to t.
func doOp(t *testing.T, hc *http.Client, base string, op specOp, ids opIDs, body io.Reader, header http.Header) apiResp {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithValue(context.Background(), tbKey{}, t), op.Method, base+pathOf(op, ids), body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", jsonType)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", op.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return apiResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// bodyOfOp is the body of a valid request of op, nil for none.
func bodyOfOp(op specOp, ids opIDs) io.Reader {
	if b := requests[op.ID](ids); b != "" {
		return strings.NewReader(b)
	}
	return nil
}

// TestAuthentication: every operation that documents 401 answers it, with
// a Bearer challenge and the code invalid_token, to a request without a
// valid token (missing, malformed, expired, forged...), before any
// DynamoDB call.
func TestAuthentication(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Hooli")
	ids := worldIDs(t, w)
	now := ts.Clock.Now()
	claims := func(sub string, iat, exp time.Time) httpapi.Claims {
		return httpapi.Claims{Email: "x@example.com", RegisteredClaims: jwt.RegisteredClaims{Subject: sub,
			IssuedAt: jwt.NewNumericDate(iat), ExpiresAt: jwt.NewNumericDate(exp)}}
	}
	algNone, err := jwt.NewWithClaims(jwt.SigningMethodNone, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	wrongSecret, err := httpapi.MintHS256("another-secret-another-secret-another-secret", claims(w.Owner.ID, now, now.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	hs384, err := jwt.NewWithClaims(jwt.SigningMethodHS384, claims(w.Owner.ID, now, now.Add(time.Hour))).SignedString([]byte(testSecret))
	if err != nil {
		t.Fatal(err)
	}
	valid := ts.Token(t, w.Owner.ID, w.Owner.Email, w.Owner.Name)
	cases := []struct{ name, header string }{
		{"missing", ""},
		{"garbage", "Bearer garbage"},
		{"not bearer", "Basic " + base64.StdEncoding.EncodeToString([]byte("owner:pw"))},
		{"bearer without token", "Bearer "},
		{"token without scheme", valid},
		{"expired", "Bearer " + ts.Mint(t, claims(w.Owner.ID, now.Add(-3*time.Hour), now.Add(-2*time.Hour)))},
		{"no exp", "Bearer " + ts.Mint(t, httpapi.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: w.Owner.ID, IssuedAt: jwt.NewNumericDate(now)}})},
		{"issued in the future", "Bearer " + ts.Mint(t, claims(w.Owner.ID, now.Add(time.Hour), now.Add(2*time.Hour)))},
		{"alg none", "Bearer " + algNone},
		{"wrong secret", "Bearer " + wrongSecret},
		{"HS384", "Bearer " + hs384},
		{"tampered payload", "Bearer " + tamperJWT(t, valid)},
		{"invalid sub", "Bearer " + ts.Mint(t, claims("a#b", now, now.Add(time.Hour)))},
		{"empty sub", "Bearer " + ts.Mint(t, claims("", now, now.Add(time.Hour)))},
		{"two Authorization lines", "Bearer " + valid + "\nBearer " + valid}, // which caller? neither
	}
	for _, op := range opsDocumenting(t, http.StatusUnauthorized) {
		for _, c := range cases {
			spec(t, "401/"+op.ID+"/"+c.name, func(t *testing.T) {
				var h http.Header
				if c.header != "" {
					h = http.Header{"Authorization": strings.Split(c.header, "\n")}
				}
				ts.Rec.Reset()
				r := doOp(t, ts.HTTPClient(t, ""), ts.URL, op, ids, bodyOfOp(op, ids), h)
				if got, want := r.Status, http.StatusUnauthorized; got != want {
					t.Fatalf("status: got %d, want %d: %s", got, want, r.Body)
				}
				if got := r.Header.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate: got %q, want a Bearer challenge", got)
				}
				if got, want := problemOf(t, r.Body).Code, "invalid_token"; got != want {
					t.Errorf("code: got %q, want %q", got, want)
				}
				if got := ts.Rec.Count(); got != 0 {
					t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
				}
			})
		}
	}
	spec(t, "401/getMe/the generated client without a token", func(t *testing.T) {
		r, err := ts.Client(t, "").GetMeWithResponse(bg, nil)
		wantProblem(t, r, err, http.StatusUnauthorized, "invalid_token")
		if r.Headers401 == nil || !strings.HasPrefix(r.Headers401.WWWAuthenticate, "Bearer") {
			t.Errorf("WWW-Authenticate: got %+v", r.Headers401)
		}
	})
	spec(t, "200/getMe/a token expired within the leeway", func(t *testing.T) {
		tok := ts.Mint(t, claims(w.Owner.ID, now.Add(-time.Hour), ts.Clock.Now().Add(-10*time.Second)))
		r, err := ts.Client(t, tok).GetMeWithResponse(bg, nil)
		mustStatus(t, r, err, http.StatusOK)
	})
}

// tamperJWT changes the payload's subject while keeping the signature.
func tamperJWT(t *testing.T, tok string) string {
	t.Helper()
	parts := strings.Split(tok, ".")
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["sub"] = "someone-else"
	b, _ = json.Marshal(m)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

// TestBodyLimit: every operation that documents 413 refuses a body over
// httpapi.MaxBodyBytes, with or without a Content-Length, before any
// DynamoDB call, and nothing changes.
func TestBodyLimit(t *testing.T) {
	ts := MustServer(t)
	w := MustWorld(t, ts, "Massive")
	ids := worldIDs(t, w)
	hc := ts.HTTPClient(t, w.Owner.Token)
	big := func() string { return `{"title":"` + strings.Repeat("x", httpapi.MaxBodyBytes) + `"}` }
	before := worldSnapshot(t, w)
	for _, op := range opsDocumenting(t, http.StatusRequestEntityTooLarge) {
		for _, c := range []struct {
			name string
			body func() io.Reader
		}{
			{"Content-Length", func() io.Reader { return strings.NewReader(big()) }},
			// A reader of unknown length: the request is sent chunked, with
			// no Content-Length for the server to check up front.
			{"chunked", func() io.Reader { return io.MultiReader(strings.NewReader(big())) }},
		} {
			spec(t, "413/"+op.ID+"/"+c.name, func(t *testing.T) {
				ts.Rec.Reset()
				r := doOp(t, hc, ts.URL, op, ids, c.body(), nil)
				if r.Status != http.StatusRequestEntityTooLarge || problemCode(r.Body) != "body_too_large" {
					t.Errorf("status %d (%s), want 413 body_too_large", r.Status, truncate(r.Body))
				}
				if got := ts.Rec.Count(); got != 0 {
					t.Errorf("DynamoDB calls: got %d (%s), want 0", got, ts.Rec.Names())
				}
			})
		}
	}
	t.Run("nothing changed", func(t *testing.T) {
		g, err := w.Owner.C.GetTicketWithResponse(bg, w.Org.Id, w.Ticket.Id, nil)
		mustStatus(t, g, err, http.StatusOK)
		if g.JSON200.Version != 1 || g.JSON200.CommentCount != 0 {
			t.Errorf("ticket changed: %+v", g.JSON200)
		}
		if after := worldSnapshot(t, w); after != before {
			t.Errorf("a refused request changed data:\nbefore %s\nafter  %s", before, after)
		}
	})
}

// failingDB, once armed, fails every DynamoDB call of the server with an
// error DynamoDB never gives: a failure nobody planned for.
type failingDB struct{ armed atomic.Bool }

var errUnplanned = errors.New("injected: the unplanned failure of a dependency")

func (f *failingDB) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("httpapi_test.failingDB",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if f.armed.Load() {
				return middleware.InitializeOutput{}, middleware.Metadata{}, errUnplanned
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.Before)
}

// TestInternalError: every operation that documents 500 answers an
// unexpected failure with it: code internal, a generic detail, nothing of
// the failure itself.
func TestInternalError(t *testing.T) {
	f := &failingDB{}
	ts := MustServer(t, withAPIOptions(f.middleware))
	w := MustWorld(t, ts, "Unexpected")
	ids := worldIDs(t, w)
	f.armed.Store(true)
	defer f.armed.Store(false)
	for _, op := range opsDocumenting(t, http.StatusInternalServerError) {
		spec(t, "500/"+op.ID+"/an unplanned DynamoDB failure", func(t *testing.T) {
			r := doOp(t, w.Owner.HTTP, ts.URL, op, ids, bodyOfOp(op, ids), nil)
			if r.Status != http.StatusInternalServerError {
				t.Fatalf("status %d, want 500: %s", r.Status, truncate(r.Body))
			}
			p := problemOf(t, r.Body)
			if p.Code != "internal" || p.Detail != "an unexpected error occurred" {
				t.Errorf("problem: code %q detail %q, want internal and a generic detail", p.Code, p.Detail)
			}
			if bytes.Contains(r.Body, []byte("injected")) || bytes.Contains(r.Body, []byte("unplanned")) {
				t.Errorf("the problem shows the failure: %s", r.Body)
			}
		})
	}
}

// TestUnroutedPath: a path that is no operation's is a 404, whoever asks.
func TestUnroutedPath(t *testing.T) {
	ts := MustServer(t)
	a := ts.Actor(t, "lost")
	resp, err := a.HTTP.Get(ts.URL + "/v1/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusNotFound; got != want {
		t.Errorf("status: got %d, want %d", got, want)
	}
}
