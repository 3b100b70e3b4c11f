package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/labstack/echo/v4"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/obs"
	"github.com/tenantd/tenantd/internal/optional"
)

// Graphql serves POST /v1/graphql, its body checked as every other; a
// null operationName, variables, extensions or persistedQuery is none.
func (h *handlers) Graphql(ctx context.Context, req oapi.GraphqlRequestObject) (oapi.GraphqlResponseObject, error) {
	b := req.Body
	var r graphapi.Request
	optional.Set(&r.Query, b.Query)
	r.OperationName, _ = b.OperationName.Get()
	if ext, err := b.Extensions.Get(); err == nil {
		r.Extensions = persistedQuery(ext)
	}
	vars, _ := b.Variables.Get()
	return h.graphql(ctx, r, vars)
}

// GraphqlGet serves GET /v1/graphql: a query from the URL, run as POST
// runs it; graphapi refuses a mutation (405) before it runs.
func (h *handlers) GraphqlGet(ctx context.Context, req oapi.GraphqlGetRequestObject) (oapi.GraphqlGetResponseObject, error) {
	p := req.Params
	r := graphapi.Request{QueryOnly: true}
	optional.Set(&r.Query, p.Query)
	optional.Set(&r.OperationName, p.OperationName)
	if p.Extensions != nil {
		var ext oapi.GraphQLRequest_Extensions // POST's, which its schema checks
		if err := json.Unmarshal([]byte(*p.Extensions), &ext); err != nil {
			return nil, errs.InvalidParam("extensions", "invalid_extensions", "must be a JSON object")
		}
		if pq, err := ext.PersistedQuery.Get(); err == nil && (pq.Version != 1 || !sha256Hex.MatchString(pq.Sha256Hash)) {
			return nil, errs.InvalidParam("extensions", "invalid_extensions", "persistedQuery must be {\"version\":1,\"sha256Hash\":\"<64 lower-case hex digits>\"}")
		}
		r.Extensions = persistedQuery(ext)
	}
	var vars []byte
	if p.Variables != nil {
		vars = []byte(*p.Variables)
	}
	return h.graphql(ctx, r, vars)
}

// sha256Hex is a persisted query's hash.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// persistedQuery is the extensions graphapi reads: ext's persistedQuery,
// or none.
func persistedQuery(ext oapi.GraphQLRequest_Extensions) map[string]any {
	pq, err := ext.PersistedQuery.Get()
	if err != nil {
		return nil
	}
	return map[string]any{"persistedQuery": map[string]any{"version": int64(pq.Version), "sha256Hash": pq.Sha256Hash}}
}

// graphql runs r as the caller, with vars (a JSON object, or null or none)
// as its variables: the GraphQL response, or the problem of a request
// refused whole (429, 503 or 429 from unavailable, 405 for a mutation over
// GET).
func (h *handlers) graphql(ctx context.Context, r graphapi.Request, vars []byte) (graphqlAnswer, error) {
	id := caller(ctx)
	if r.Query == "" && r.Extensions == nil {
		return graphqlAnswer{}, errs.InvalidField("query", "required", "a GraphQL document is required (or extensions.persistedQuery naming one)")
	}
	if len(vars) > 0 && !bytes.Equal(vars, []byte("null")) {
		// GraphQL's Int wants integers: decode numbers as json.Number.
		dec := json.NewDecoder(bytes.NewReader(vars))
		dec.UseNumber()
		if err := dec.Decode(&r.Variables); err != nil || r.Variables == nil {
			return graphqlAnswer{}, errs.InvalidField("variables", "invalid_variables", "must be a JSON object")
		}
	}
	res := h.graphQL.Execute(ctx, id, r)
	obs.SetOperation(ctx, res.Operation)
	if d := res.Limited; d != nil {
		// The caller's limit refused the document's cost: 429 as REST
		// answers, nothing ran.
		_, limit, retryAfter := rateLimitFields(h.CallerRateLimit, "caller", *d)
		return graphqlAnswer{}, &withHeader{errCallerLimited, map[string]string{"Retry-After": strconv.Itoa(retryAfter), "RateLimit": limit}}
	}
	if res.NotAQuery { // (GET only)
		return graphqlAnswer{}, &withHeader{echo.NewHTTPError(http.StatusMethodNotAllowed, "GET runs queries only: send a mutation with POST"),
			map[string]string{echo.HeaderAllow: http.MethodPost}}
	}
	if err := unavailable(res.Response); err != nil {
		return graphqlAnswer{}, err
	}
	return graphqlAnswer{r: res.Response, executed: res.Executed, media: graphqlMedia(original(ctx).Header.Get("Accept"))}, nil
}

// The media types of a GraphQL answer (GraphQL over HTTP).
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// graphqlMedia is the media type to answer a GraphQL request in:
// application/graphql-response+json when Accept lists it at a quality at
// least that of application/json, application/json otherwise.
func graphqlMedia(accept string) string {
	q := acceptQ(accept)
	if g := q[mediaGraphQLResponse]; g > 0 && g >= q[mediaJSON] {
		return mediaGraphQLResponse
	}
	return mediaJSON
}

// acceptQ is the quality an Accept header gives each media type it names
// (ranges such as */* are kept as written, not expanded).
func acceptQ(accept string) map[string]float64 {
	q := map[string]float64{}
	for _, part := range strings.Split(accept, ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		w := 1.0
		if v, ok := params["q"]; ok {
			if w, err = strconv.ParseFloat(v, 64); err != nil {
				continue
			}
		}
		q[mt] = max(q[mt], w)
	}
	return q
}

// unavailable is the answer to a request that failed whole (no data, every
// error of one kind): a 503 for DynamoDB's unavailability, a 429 for an
// org's rate limit, as REST answers; any data is answered, with its errors.
func unavailable(r *graphql.Response) error {
	if r == nil || len(r.Errors) == 0 {
		return nil
	}
	kind, _ := r.Errors[0].Extensions["kind"].(string)
	if kind != "UNAVAILABLE" && kind != "TOO_MANY_REQUESTS" {
		return nil
	}
	for _, e := range r.Errors {
		if e.Extensions["kind"] != kind {
			return nil
		}
	}
	var roots map[string]json.RawMessage // (data null: none)
	if json.Unmarshal(r.Data, &roots) != nil {
		return nil
	}
	for _, v := range roots {
		if !bytes.Equal(v, []byte("null")) {
			return nil
		}
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	if kind == "TOO_MANY_REQUESTS" {
		return errs.E(errs.TooManyRequests, code, "%s", r.Errors[0].Message)
	}
	return errs.E(errs.Unavailable, code, "%s", r.Errors[0].Message)
}

// graphqlAnswer writes a GraphQL response in media. A request that never
// executed has no data entry, and is a 400 in
// application/graphql-response+json (a 200 in application/json).
type graphqlAnswer struct {
	r        *graphql.Response
	executed bool
	media    string
}

func (a graphqlAnswer) VisitGraphqlResponse(w http.ResponseWriter) error {
	body := struct {
		Errors     gqlerror.List   `json:"errors,omitempty"`
		Data       json.RawMessage `json:"data,omitempty"`
		Extensions map[string]any  `json:"extensions,omitempty"`
	}{a.r.Errors, a.r.Data, a.r.Extensions}
	status := http.StatusOK
	if !a.executed {
		body.Data = nil
		if a.media == mediaGraphQLResponse {
			status = http.StatusBadRequest
		}
	}
	w.Header().Set("Content-Type", a.media)
	w.Header().Set("Vary", "Accept")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(body)
}

// VisitGraphqlGetResponse writes the answer of a query over GET with a
// strong ETag (its digest, from conditional) and Cache-Control: private,
// no-cache: no shared cache stores it, a browser's revalidates it.
func (a graphqlAnswer) VisitGraphqlGetResponse(w http.ResponseWriter) error {
	if a.executed {
		w.Header().Set("ETag", digestOnly)
		w.Header().Set("Cache-Control", "private, no-cache")
	}
	return a.VisitGraphqlResponse(w)
}
