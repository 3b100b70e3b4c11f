package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
	"github.com/tenantd/tenantd/internal/idempotency"
	"github.com/tenantd/tenantd/internal/obs"
)

// problemType is the base of every problem's type URI; the code completes it.
const problemType = "https://tenantd.dev/problems/"

var kindStatus = map[errs.Kind]int{
	errs.Internal:           http.StatusInternalServerError,
	errs.Invalid:            http.StatusBadRequest,
	errs.Unauthenticated:    http.StatusUnauthorized,
	errs.Forbidden:          http.StatusForbidden,
	errs.NotFound:           http.StatusNotFound,
	errs.Conflict:           http.StatusConflict,
	errs.PreconditionFailed: http.StatusPreconditionFailed,
	errs.Unavailable:        http.StatusServiceUnavailable,
	errs.Unprocessable:      http.StatusUnprocessableEntity,
	errs.TooManyRequests:    http.StatusTooManyRequests,
}

// httpCodes gives a stable code to errors Echo or the request validator
// raise by status.
var httpCodes = map[int]string{
	http.StatusBadRequest:            "invalid_request",
	http.StatusUnauthorized:          "invalid_token",
	http.StatusForbidden:             "forbidden",
	http.StatusNotFound:              "not_found",
	http.StatusMethodNotAllowed:      "method_not_allowed",
	http.StatusRequestTimeout:        "request_timeout",
	http.StatusRequestEntityTooLarge: "body_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusGatewayTimeout:        "timeout",
}

// clientClosed is the problem of a request whose client went away before
// it was answered (nginx's 499): no server error, and nobody reads it.
var clientClosed = oapi.Problem{Type: problemType + "client_closed_request", Title: "Client Closed Request",
	Status: idempotency.StatusClientClosedRequest, Code: "client_closed_request", Detail: "the client closed the request before it was answered"}

// clientGone reports whether the request's client went away: the context
// net/http gave the request (withRequest kept it) is cancelled.
func clientGone(c echo.Context) bool {
	return errors.Is(original(c.Request().Context()).Context().Err(), context.Canceled)
}

// errorHandler is the one place errors become responses: RFC 9457
// problem+json with a stable code and the request ID; internal details are
// logged, never sent. A failure once the client has gone is a 499.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := toProblem(err)
		if (p.Status >= 500 || errors.Is(err, context.Canceled)) && clientGone(c) {
			p = clientClosed
		}
		p.RequestId = c.Response().Header().Get(echo.HeaderXRequestID)
		level := slog.LevelDebug
		switch {
		case errors.Is(err, ErrShuttingDown):
			level = slog.LevelInfo // a drain's planned 503
		case p.Status >= 500:
			level = slog.LevelError
		}
		attrs := []any{"status", p.Status, "code", p.Code, "method", obs.Method(c.Request().Method), "route", c.Path(),
			"requestId", p.RequestId, "err", err.Error()}
		if cid := audit.ClientRequestID(c.Request().Context()); cid != "" {
			attrs = append(attrs, "clientRequestId", cid)
		}
		log.Log(c.Request().Context(), level, "request failed", attrs...)
		h := c.Response().Header()
		var wh *withHeader
		if errors.As(err, &wh) {
			for k, v := range wh.header {
				h.Set(k, v)
			}
		}
		switch p.Status {
		case http.StatusUnauthorized:
			h.Set("WWW-Authenticate", `Bearer realm="tenantd", error="invalid_token"`)
			// Bad tokens sent in a loop on kept-alive connections hold no
			// connection slot (MAX_CONNECTIONS) that clients with tokens need.
			h.Set("Connection", "close")
		case http.StatusServiceUnavailable, http.StatusTooManyRequests:
			if h.Get("Retry-After") == "" { // a limit that said no sooner keeps its own
				h.Set("Retry-After", "1")
			}
		}
		h.Set(echo.HeaderContentType, "application/problem+json")
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(p.Status)
			return
		}
		c.Response().WriteHeader(p.Status)
		_ = json.NewEncoder(c.Response()).Encode(p)
	}
}

// withHeader is an error whose answer carries header fields (a refusal's
// Retry-After or Allow).
type withHeader struct {
	error
	header map[string]string
}

func (e *withHeader) Unwrap() error { return e.error }

// problem is a problem of status whose code completes its type.
func problem(status int, code, detail string) oapi.Problem {
	return oapi.Problem{Type: problemType + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
}

// errInternal is the one problem of every internal error: what failed is
// logged, never sent.
var errInternal = problem(http.StatusInternalServerError, "internal", "an unexpected error occurred")

func toProblem(err error) oapi.Problem {
	var ve *validationError
	if errors.As(err, &ve) {
		return ve.problem()
	}
	if e, ok := errs.As(err); ok {
		status := kindStatus[e.Kind]
		p := problem(status, e.Code, e.Message)
		if e.Kind == errs.Internal {
			p = errInternal
		}
		in := oapi.FieldErrorInBody
		if e.In != "" {
			in = oapi.FieldErrorIn(e.In)
		}
		if e.Field == "" && status == http.StatusBadRequest {
			// A problem of the request as a whole (a body that is not
			// JSON, an empty patch): one error, of the body itself
			// (field "", its JSON Pointer root) unless it says where.
			p.Errors = &[]oapi.FieldError{{In: in, Field: "", Code: e.Code, Message: e.Message}}
		}
		if e.Field != "" {
			fs := []oapi.FieldError{{In: in, Field: e.Field, Code: e.Code, Message: e.Message}}
			for _, f := range e.Also {
				fs = append(fs, oapi.FieldError{In: in, Field: f, Code: e.Code, Message: e.Message})
			}
			p.Errors = &fs
			p.Detail = strings.Join(append([]string{e.Field}, e.Also...), ", ") + ": " + e.Message
		}
		return p
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		status := he.Code
		code := httpCodes[status]
		if code == "" {
			code = "http_" + strconv.Itoa(status)
		}
		detail := http.StatusText(status)
		if msg, ok := he.Message.(string); ok && status < 500 && msg != "" {
			detail = msg
		}
		if status == http.StatusRequestEntityTooLarge {
			detail = "the request body exceeds 64 KiB"
		}
		p := problem(status, code, detail)
		if status == http.StatusBadRequest {
			p.Errors = &[]oapi.FieldError{{In: oapi.FieldErrorInBody, Field: "", Code: code, Message: detail}}
		}
		return p
	}
	if errors.Is(err, context.DeadlineExceeded) {
		// A deadline no layer below translated: still the request's
		// timeout, retryable, not a bug.
		return problem(http.StatusServiceUnavailable, "timeout", "the request took too long; retry later")
	}
	return errInternal
}
