package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/obs"
)

// Graphql serves POST /v1/graphql. The body went through the same checks
// as every other (one JSON value, the GraphQLRequest schema, 64 KiB); a
// null operationName, variables or extensions is none, and extensions
// other than persistedQuery are ignored (GraphQL over HTTP). graphapi runs
// it as the caller; the answer is the GraphQL response in the media type
// the client accepts (graphqlAnswer).
func (h *handlers) Graphql(ctx context.Context, req oapi.GraphqlRequestObject) (oapi.GraphqlResponseObject, error) {
	id, err := identity(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var r graphapi.Request
	set(&r.Query, b.Query)
	r.OperationName, _ = b.OperationName.Get()
	if ext, err := b.Extensions.Get(); err == nil && ext.PersistedQuery != nil {
		pq := ext.PersistedQuery
		r.Extensions = map[string]any{"persistedQuery": map[string]any{"version": int64(pq.Version), "sha256Hash": pq.Sha256Hash}}
	}
	if r.Query == "" && r.Extensions == nil {
		return nil, errs.InvalidField("query", "required", "a GraphQL document is required (or extensions.persistedQuery naming one)")
	}
	if vars, err := b.Variables.Get(); err == nil && !bytes.Equal(vars, []byte("null")) {
		// GraphQL's Int wants integers: decode numbers as json.Number.
		dec := json.NewDecoder(bytes.NewReader(vars))
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
	return graphqlAnswer{r: res.Response, executed: res.Executed, media: graphqlMedia(requestHeader(ctx).Get("Accept"))}, nil
}

// The media types of a GraphQL answer (GraphQL over HTTP).
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// graphqlMedia is the media type to answer a GraphQL request in, given its
// Accept header: application/graphql-response+json when the client lists
// it, at a quality at least that of application/json; application/json
// otherwise (no Accept, */*, application/json: the legacy clients').
func graphqlMedia(accept string) string {
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
	if g := q[mediaGraphQLResponse]; g > 0 && g >= q[mediaJSON] {
		return mediaGraphQLResponse
	}
	return mediaJSON
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

// graphqlAnswer writes a GraphQL response in media. A request that never
// executed (a request error) has no data entry; in
// application/graphql-response+json it is a 400, in application/json a
// 200 as legacy clients expect.
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
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(body)
}
