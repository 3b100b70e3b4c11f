package graphapi

import (
	"context"
	"errors"
	"strings"

	"github.com/tenantd/tenantd/internal/errs"
)

// errorExtensions is a field error as GraphQL clients get it: the REST
// API's code, its kind (NOT_FOUND), and every bad field of invalid input
// ("in": "argument" or "input"). internal reports an error to log and hide.
func errorExtensions(err error) (ext map[string]any, message string, internal bool) {
	var ie inputError
	if errors.As(err, &ie) {
		var fields []map[string]any
		for _, f := range ie {
			fields = append(fields, map[string]any{"in": "input", "field": f.Field, "code": f.Code, "message": f.Message})
		}
		return map[string]any{"code": "invalid_request", "kind": "INVALID", "errors": fields}, ie.Error(), false
	}
	if e, ok := errs.As(err); ok && e.Kind != errs.Internal {
		ext = map[string]any{"code": e.Code, "kind": strings.ToUpper(e.Kind.String())}
		if e.Field != "" {
			in := "argument"
			if e.In == "" || e.In == "body" {
				in = "input"
			}
			var fields []map[string]any
			for _, f := range append([]string{e.Field}, e.Also...) {
				fields = append(fields, map[string]any{"in": in, "field": f, "code": e.Code, "message": e.Message})
			}
			ext["errors"] = fields
		}
		return ext, e.Message, false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return map[string]any{"code": "timeout", "kind": "UNAVAILABLE"}, "the request took too long; retry later", false
	case errors.Is(err, context.Canceled):
		return map[string]any{"code": "client_closed_request", "kind": "UNAVAILABLE"}, "the client closed the request before it was answered", false
	}
	return map[string]any{"code": "internal", "kind": "INTERNAL"}, "an unexpected error occurred", true
}

var errLimited = errs.E(errs.TooManyRequests, "rate_limited", "this organization is sending requests too fast; retry later")

// FieldError is a problem of one field of a mutation's input, as the REST
// API lists it in a 400's errors[].
type FieldError struct{ Field, Code, Message string }

// inputError is a mutation's input that the REST API's request schema
// refuses: REST's code (invalid_request) and its errors, field by field.
type inputError []FieldError

func (e inputError) Error() string {
	parts := make([]string, len(e))
	for i, f := range e {
		parts[i] = f.Field + ": " + f.Message
	}
	return strings.Join(parts, "; ")
}

// checkInput refuses value as the REST API refuses field of the body
// schema names (Deps.CheckInput).
func (s *Server) checkInput(schema, field string, value any) error {
	if fs := s.d.CheckInput(schema, field, value); len(fs) > 0 {
		return inputError(fs)
	}
	return nil
}
