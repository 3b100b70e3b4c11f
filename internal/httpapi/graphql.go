package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/99designs/gqlgen/graphql"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/obs"
)

// Graphql serves POST /v1/graphql. The body went through the same checks
// as every other (one JSON value, the GraphQLRequest schema, 64 KiB);
// graphapi runs it as the caller, and the answer is 200 with the GraphQL
// response from then on (its errors inside).
func (h *handlers) Graphql(ctx context.Context, req oapi.GraphqlRequestObject) (oapi.GraphqlResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var r graphapi.Request
	set(&r.Query, b.Query)
	set(&r.OperationName, b.OperationName)
	if b.Extensions != nil && b.Extensions.PersistedQuery != nil {
		pq := b.Extensions.PersistedQuery
		r.Extensions = map[string]any{"persistedQuery": map[string]any{"version": int64(pq.Version), "sha256Hash": pq.Sha256Hash}}
	}
	if r.Query == "" && r.Extensions == nil {
		return nil, errs.InvalidField("query", "required", "a GraphQL document is required (or extensions.persistedQuery naming one)")
	}
	if b.Variables != nil && !bytes.Equal(*b.Variables, []byte("null")) {
		// GraphQL's Int wants integers: decode numbers as json.Number.
		dec := json.NewDecoder(bytes.NewReader(*b.Variables))
		dec.UseNumber()
		if err := dec.Decode(&r.Variables); err != nil {
			return nil, errs.InvalidField("variables", "invalid_variables", "must be a JSON object")
		}
	}
	res := h.graphQL.Execute(ctx, id, r)
	obs.SetOperation(ctx, res.Operation)
	if d := res.Limited; d != nil {
		// The caller's limit refused the document's cost: 429 as REST
		// answers, nothing ran.
		p := toProblem(errCallerLimited)
		p.RequestId = audit.RequestID(ctx)
		f := rateLimitFields(h.CallerRateLimit, "caller", *d)
		return oapi.Graphql429ApplicationProblemPlusJSONResponse{TooManyRequestsApplicationProblemPlusJSONResponse: oapi.TooManyRequestsApplicationProblemPlusJSONResponse{
			Body: p, Headers: oapi.TooManyRequestsResponseHeaders{RetryAfter: &f.retryAfter, RateLimit: &f.limit}}}, nil
	}
	if err := unavailable(res.Response); err != nil {
		return nil, err
	}
	return graphqlAnswer{res.Response}, nil
}

// unavailable is the answer to a request that failed whole (no data, every
// error of one kind): DynamoDB's unavailability is a 503 with Retry-After
// and an org's rate limit a 429 with Retry-After, as REST answers, so
// clients and proxies back off and retry; a request that got any data
// answers it, with its errors.
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
	if !bytes.Equal(r.Data, []byte("null")) {
		var roots map[string]json.RawMessage
		if json.Unmarshal(r.Data, &roots) != nil {
			return nil
		}
		for _, v := range roots {
			if !bytes.Equal(v, []byte("null")) {
				return nil
			}
		}
	}
	code, _ := r.Errors[0].Extensions["code"].(string)
	if kind == "TOO_MANY_REQUESTS" {
		return errs.E(errs.TooManyRequests, code, "%s", r.Errors[0].Message)
	}
	return errs.E(errs.Unavailable, code, "%s", r.Errors[0].Message)
}

// graphqlAnswer writes a GraphQL response.
type graphqlAnswer struct{ r *graphql.Response }

func (a graphqlAnswer) VisitGraphqlResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(a.r)
}
