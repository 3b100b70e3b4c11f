package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/graphapi"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
)

// validateRequests checks every routed request against its operation in
// openapi.yaml (parameters, body, no undocumented query parameter) and
// reports every problem at once, one FieldError each.
func validateRequests(ops map[string]operation) echo.MiddlewareFunc {
	options := &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc, // Authenticate already ran
		KeepValidatedValue: true, MultiError: true}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			o, ok := ops[req.Method+" "+c.Path()]
			if !ok {
				return next(c) // no operation: Echo answers 404 or 405
			}
			params := make(map[string]string, len(c.ParamNames()))
			for i, name := range c.ParamNames() {
				params[name] = c.ParamValues()[i]
			}
			var fields []oapi.FieldError
			query, err := url.ParseQuery(req.URL.RawQuery) // what parses is still checked below
			if err != nil {
				fields = append(fields, oapi.FieldError{In: oapi.FieldErrorInQuery, Code: "malformed_query",
					Message: "is not a well-formed query string: a '%' must start a percent-encoded byte, and ';' separates nothing"})
			}
			for _, name := range slices.Sorted(maps.Keys(query)) {
				single, known := o.query[name]
				switch {
				case !known:
					fields = append(fields, oapi.FieldError{In: oapi.FieldErrorInQuery, Field: name, Code: "unknown_parameter",
						Message: "is not a parameter of this operation"})
				case single && len(query[name]) > 1:
					fields = append(fields, oapi.FieldError{In: oapi.FieldErrorInQuery, Field: name, Code: "repeated_parameter",
						Message: "takes one value: give it once"})
				}
			}
			in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: o.route, Options: options}
			if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
				if errors.Is(err, echo.ErrStatusRequestEntityTooLarge) {
					return echo.ErrStatusRequestEntityTooLarge // a chunked body read past the limit
				}
				if unsupportedMediaType(err) {
					return errUnsupportedMediaType(c, o.route.Operation)
				}
				fields = append(fields, fieldErrors(err)...)
			}
			if len(fields) > 0 {
				return &validationError{fields: fields}
			}
			return next(c)
		}
	}
}

// checkInput checks a GraphQL mutation's input field as validateRequests
// checks the same field of a REST body, with the same schema and errors.
func checkInput(spec *openapi3.T) func(schema, field string, value any) []graphapi.FieldError {
	return func(schema, field string, value any) []graphapi.FieldError {
		s := spec.Components.Schemas[schema]
		if s == nil || s.Value == nil || s.Value.Properties[field] == nil {
			panic("httpapi: no schema " + schema + "." + field)
		}
		// As a body decodes: JSON's types.
		var v any
		b, err := json.Marshal(value)
		if err == nil {
			err = json.Unmarshal(b, &v)
		}
		if err == nil {
			err = s.Value.Properties[field].Value.VisitJSON(v, openapi3.MultiErrors())
		}
		if err == nil {
			return nil
		}
		var out []graphapi.FieldError
		for _, f := range fieldErrors(err) {
			name := field
			if f.Field != "" {
				name += "/" + f.Field
			}
			out = append(out, graphapi.FieldError{Field: name, Code: f.Code, Message: f.Message})
		}
		return out
	}
}

// operation is an operation of openapi.yaml, by the Echo route it has.
type operation struct {
	route *routers.Route
	query map[string]bool // documented query parameters: true when they take one value only
}

// operations are the spec's operations by method and Echo path ("POST /v1/orgs").
func operations(spec *openapi3.T) map[string]operation {
	ops := map[string]operation{}
	for path, item := range spec.Paths.Map() {
		for method, o := range item.Operations() {
			known := map[string]bool{}
			for _, ps := range []openapi3.Parameters{item.Parameters, o.Parameters} {
				for _, p := range ps {
					if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
						array := p.Value.Schema != nil && p.Value.Schema.Value != nil && p.Value.Schema.Value.Type.Is("array")
						known[p.Value.Name] = !array || (p.Value.Explode != nil && !*p.Value.Explode) // single: a list of one value is a,b
					}
				}
			}
			ops[method+" "+echoPath(path)] = operation{route: &routers.Route{Spec: spec, Path: path, PathItem: item, Method: method, Operation: o}, query: known}
		}
	}
	return ops
}

// beforeBody answers what a request's head alone decides before anything
// reads its body (so a client that sent Expect: 100-continue gets it
// instead of 100 Continue): Echo's 404 or 405 for no operation, 415 for a
// media type, charset or content coding the operation does not take.
func beforeBody(ops map[string]operation) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			if req.ContentLength == 0 { // no body (-1 is a chunked one)
				return next(c)
			}
			o, ok := ops[req.Method+" "+c.Path()]
			if !ok {
				return c.Handler()(c)
			}
			if rb := o.route.Operation.RequestBody; rb != nil && rb.Value != nil {
				ct := req.Header.Get(echo.HeaderContentType)
				if rb.Value.Content.Get(ct) == nil {
					return errUnsupportedMediaType(c, o.route.Operation)
				}
				_, params, _ := mime.ParseMediaType(ct)
				if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
					return errCharset
				}
				if contentCoded(req.Header) {
					// Read as JSON, a compressed body would be a 400; an
					// uncompressed one, its header silently ignored.
					c.Response().Header().Set(echo.HeaderAcceptEncoding, "identity") // RFC 9110, 12.5.3
					return echo.NewHTTPError(http.StatusUnsupportedMediaType, "request bodies are read as sent: send it without a Content-Encoding")
				}
			}
			return next(c)
		}
	}
}

// contentCoded reports whether h names a content coding other than
// identity, on any of its Content-Encoding lines.
func contentCoded(h http.Header) bool {
	for _, v := range h.Values(echo.HeaderContentEncoding) {
		for _, coding := range strings.Split(v, ",") {
			if coding = strings.TrimSpace(coding); coding != "" && !strings.EqualFold(coding, "identity") {
				return true
			}
		}
	}
	return false
}

// echoPath is an OpenAPI path template as Echo routes it: {orgId} -> :orgId.
func echoPath(p string) string {
	return pathParam.ReplaceAllString(p, ":$1")
}

var pathParam = regexp.MustCompile(`\{([^}]+)\}`)

func ptrTo[T any](v T) *T { return &v }

// validationError is a 400 listing every problem of a request.
type validationError struct{ fields []oapi.FieldError }

func (e *validationError) Error() string {
	parts := make([]string, len(e.fields))
	for i, f := range e.fields {
		parts[i] = f.Field + ": " + f.Message
	}
	return "invalid request: " + strings.Join(parts, "; ")
}

func (e *validationError) problem() oapi.Problem {
	var parts []string
	for _, f := range e.fields[:min(len(e.fields), 3)] {
		if f.Field == "" {
			parts = append(parts, f.Message)
		} else {
			parts = append(parts, f.Field+": "+f.Message)
		}
	}
	detail := strings.Join(parts, "; ")
	if n := len(e.fields) - len(parts); n > 0 {
		detail += fmt.Sprintf("; and %d more (see errors)", n)
	}
	p := problem(http.StatusBadRequest, "invalid_request", detail)
	p.Errors = &e.fields
	return p
}

// fieldErrors flattens what openapi3filter reports into one FieldError
// per problem, without the schema dumps its messages carry.
func fieldErrors(err error) []oapi.FieldError {
	var out []oapi.FieldError
	me, isMulti := err.(openapi3.MultiError)
	re, isRequest := err.(*openapi3filter.RequestError)
	var se *openapi3.SchemaError
	var pe *openapi3filter.ParseError
	switch {
	case isMulti:
		for _, e := range me {
			out = append(out, fieldErrors(e)...)
		}
	case isRequest:
		inner := fieldErrors(re.Err)
		if re.Err == nil {
			inner = nil
		}
		switch {
		case re.Parameter != nil:
			where := oapi.FieldErrorIn(re.Parameter.In)
			if len(inner) == 0 {
				inner = []oapi.FieldError{{Code: "invalid_value", Message: shortReason(re.Reason)}}
			}
			for i := range inner {
				inner[i].In, inner[i].Pointer = where, nil
				if inner[i].Field == "" {
					inner[i].Field = re.Parameter.Name
				} else {
					inner[i].Field = re.Parameter.Name + "/" + inner[i].Field
				}
				if re.Reason == "must have a value" || strings.Contains(re.Reason, "is required") {
					inner[i].Code, inner[i].Message = "required", "is required"
				}
			}
		default: // the body
			if len(inner) == 0 {
				inner = []oapi.FieldError{{Code: "invalid_body", Message: shortReason(re.Reason)}}
			}
			for i := range inner {
				inner[i].In = oapi.FieldErrorInBody
			}
		}
		out = append(out, inner...)
	case errors.As(err, &se):
		path := se.JSONPointer()
		code, msg := schemaCode(se)
		if se.SchemaField == "properties" { // additionalProperties: false
			if k := quoted(se.Reason); k != "" {
				path = append(path, k)
			}
		}
		f := oapi.FieldError{Field: strings.Join(path, "/"), Code: code, Message: msg}
		if len(path) > 0 {
			var ptr string
			for _, p := range path {
				ptr += "/" + pointerToken.Replace(p)
			}
			f.Pointer = &ptr
		}
		out = append(out, f)
	case errors.As(err, &pe):
		out = append(out, oapi.FieldError{Code: "invalid_value", Message: shortReason(pe.Error())})
	default:
		out = append(out, oapi.FieldError{Code: "invalid_value", Message: shortReason(err.Error())})
	}
	return out
}

// schemaCodes are the stable codes of the schema keywords a value breaks.
var schemaCodes = map[string]string{
	"required": "required", "properties": "unknown_field", "type": "invalid_type", "nullable": "invalid_type",
	"enum": "invalid_value", "format": "invalid_format", "pattern": "invalid_format",
	"minLength": "too_short", "maxLength": "too_long", "minimum": "too_small", "maximum": "too_large",
	"exclusiveMinimum": "too_small", "exclusiveMaximum": "too_large", "minItems": "too_few", "maxItems": "too_many",
	"uniqueItems": "duplicate_items", "minProperties": "too_few", "maxProperties": "too_many", "multipleOf": "invalid_value",
}

func schemaCode(se *openapi3.SchemaError) (code, msg string) {
	code = schemaCodes[se.SchemaField]
	if code == "" {
		code = "invalid_value"
	}
	switch code {
	case "required":
		return code, "is required"
	case "unknown_field":
		return code, "is not a field of this request"
	case "invalid_value":
		if se.SchemaField == "enum" && se.Schema != nil {
			vals := make([]string, 0, len(se.Schema.Enum))
			for _, v := range se.Schema.Enum {
				vals = append(vals, fmt.Sprint(v))
			}
			return code, "must be one of " + strings.Join(vals, ", ")
		}
	}
	return code, shortReason(se.Reason)
}

// shortReason is the first line of a validator message: never the schema
// or the value it dumps after it.
func shortReason(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimSpace(strings.TrimPrefix(s, "value "))
	if s == "" {
		return "is invalid"
	}
	return s
}

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

func quoted(s string) string {
	if m := quotedRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return ""
}

// pointerToken escapes a key as a JSON Pointer's reference token (RFC 6901).
var pointerToken = strings.NewReplacer("~", "~0", "/", "~1")

// errCharset is beforeBody's 415 to a JSON body in another charset.
var errCharset = echo.NewHTTPError(http.StatusUnsupportedMediaType, "JSON request bodies must be UTF-8")

// unsupportedMediaType reports whether err is a body sent with a content
// type the operation does not take.
func unsupportedMediaType(err error) bool {
	var re *openapi3filter.RequestError
	return errors.As(err, &re) && re.RequestBody != nil && strings.HasPrefix(re.Reason, "header Content-Type has unexpected value")
}

// errUnsupportedMediaType is a 415 that says what the operation takes
// (Accept-Post, Accept-Patch: RFC 5789, the W3C LDP Accept-Post).
func errUnsupportedMediaType(c echo.Context, o *openapi3.Operation) error {
	var types []string
	if o.RequestBody != nil && o.RequestBody.Value != nil {
		types = slices.Sorted(maps.Keys(o.RequestBody.Value.Content))
	}
	accept := strings.Join(types, ", ")
	switch c.Request().Method {
	case http.MethodPost:
		c.Response().Header().Set("Accept-Post", accept)
	case http.MethodPatch:
		c.Response().Header().Set("Accept-Patch", accept)
	}
	return echo.NewHTTPError(http.StatusUnsupportedMediaType, "the body must be "+accept)
}
