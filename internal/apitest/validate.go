package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/client"
)

// validatingTransport checks each response with kin-openapi's
// openapi3filter.ValidateResponse (undocumented statuses included), and
// every problem for the fields the API promises.
type validatingTransport struct {
	tb     testing.TB
	base   http.RoundTripper
	router routers.Router
	token  string
}

// TBKey carries, in a request's context, the test to fail instead of the
// one the client was made for (a subtest, for precise reports):
// context.WithValue(ctx, apitest.TBKey{}, t).
type TBKey struct{}

// RoundTrip sends req (with the token, unless it has an Authorization
// header), reads the whole answer and validates it against openapi.yaml.
func (v *validatingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tb := v.tb
	if t, ok := req.Context().Value(TBKey{}).(testing.TB); ok {
		tb = t
	}
	if v.token != "" && req.Header.Get("Authorization") == "" {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+v.token)
	}
	resp, err := v.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return resp, err
	}
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), resp.StatusCode)
	if req.Method == http.MethodHead {
		// Every GET operation answers HEAD too (openapi.yaml's info): the
		// GET's status and header fields, no content.
		get := req.Clone(req.Context())
		get.Method = http.MethodGet
		if _, _, err := v.router.FindRoute(get); err != nil && resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			tb.Errorf("%s: request matches no GET operation of openapi.yaml (%v) but was answered", what, err)
		}
		if len(body) > 0 {
			tb.Errorf("%s: a HEAD answered with content: %s", what, Truncate(body))
		}
		return resp, nil
	}
	if req.Method == http.MethodOptions && resp.StatusCode == http.StatusNoContent {
		// Echo answers OPTIONS of every path with its Allow (openapi.yaml's
		// info): no content.
		if resp.Header.Get("Allow") == "" || len(body) > 0 {
			tb.Errorf("%s: an OPTIONS answer without Allow, or with content", what)
		}
		return resp, nil
	}
	// Every error is a problem, but a GraphQL request error answered in
	// application/graphql-response+json (GraphQL over HTTP; the spec
	// documents it, validated below).
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode >= 400 &&
		!(mt == "application/graphql-response+json" && req.URL.Path == "/v1/graphql" && resp.StatusCode == http.StatusBadRequest) {
		checkProblem(tb, what, resp, body)
	}
	route, params, err := v.router.FindRoute(req)
	if err != nil {
		// Not an operation of the spec (a routing test): only Echo's own
		// not-found/method-not-allowed answers are acceptable.
		if resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed {
			tb.Errorf("%s: request matches no operation of openapi.yaml (%v) but was answered", what, err)
		}
		return resp, nil
	}
	record(route.Operation.OperationID, resp.StatusCode)
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 resp.StatusCode,
		Header:                 resp.Header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		tb.Errorf("%s (%s): response does not match openapi.yaml: %v\nbody: %s", what, route.Operation.OperationID, err, Truncate(body))
	}
	return resp, nil
}

// checkProblem asserts an error response is RFC 9457 problem+json with
// every field the API promises.
func checkProblem(tb testing.TB, what string, resp *http.Response, body []byte) {
	tb.Helper()
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != ProblemJSON {
		tb.Errorf("%s: content type %q, want %s", what, resp.Header.Get("Content-Type"), ProblemJSON)
		return
	}
	var p map[string]any
	if err := json.Unmarshal(body, &p); err != nil {
		tb.Errorf("%s: problem is not JSON: %v: %s", what, err, Truncate(body))
		return
	}
	for _, f := range []string{"type", "title", "detail", "code", "requestId"} {
		if s, _ := p[f].(string); s == "" {
			tb.Errorf("%s: problem field %q is missing or empty: %s", what, f, Truncate(body))
		}
	}
	if got, want := p["status"], float64(resp.StatusCode); got != want {
		tb.Errorf("%s: problem status %v, want %v", what, got, want)
	}
	// A problem replayed to an Idempotency-Key is the first answer as it
	// was sent: its requestId is the first request's (openapi.yaml's
	// Problem.requestId).
	if got, want := p["requestId"], resp.Header.Get(echo.HeaderXRequestID); got != want && resp.Header.Get("Idempotent-Replayed") != "true" {
		tb.Errorf("%s: problem requestId %v, want the X-Request-Id header %q", what, got, want)
	}
}

// Truncate renders b as text, cut after 2000 bytes.
func Truncate(b []byte) string {
	if len(b) > 2000 {
		return string(b[:2000]) + "..."
	}
	return string(b)
}

// ProblemOf decodes a problem body.
func ProblemOf(tb testing.TB, body []byte) client.Problem {
	tb.Helper()
	var p client.Problem
	if err := json.Unmarshal(body, &p); err != nil {
		tb.Fatalf("problem: %v: %s", err, body)
	}
	return p
}

// StatusCoder is what every generated response has.
type StatusCoder interface {
	StatusCode() int
	GetBody() []byte
}

// MustStatus fails now unless r has status want. r is a generated response.
func MustStatus(tb testing.TB, r StatusCoder, err error, want int) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("request: %v", err)
	}
	if got := r.StatusCode(); got != want {
		tb.Fatalf("status: got %d, want %d; body: %s", got, want, BodyOf(r))
	}
}

// WantProblem asserts status and problem code of a generated response.
func WantProblem(tb testing.TB, r StatusCoder, err error, status int, code string) {
	tb.Helper()
	MustStatus(tb, r, err, status)
	p := ProblemOf(tb, BodyOf(r))
	if code != "" && p.Code != code {
		tb.Errorf("problem code: got %q, want %q (detail %q)", p.Code, code, p.Detail)
	}
}

// BodyOf is a generated response's body.
func BodyOf(r StatusCoder) []byte { return r.GetBody() }

// DecodeJSON unmarshals a JSON response body into v.
func DecodeJSON(tb testing.TB, body []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(body, v); err != nil {
		tb.Fatalf("decode %s: %v", Truncate(body), err)
	}
}

// Ptr returns a pointer to v.
func Ptr[T any](v T) *T { return &v }

// bg is the context of the helpers' requests.
var bg = context.Background()
