package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/httpapi/oapi"
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
	http.StatusRequestEntityTooLarge: "body_too_large",
	http.StatusUnsupportedMediaType:  "unsupported_media_type",
	http.StatusServiceUnavailable:    "unavailable",
	http.StatusGatewayTimeout:        "timeout",
}

// errorHandler is the one place errors become responses: RFC 9457
// problem+json with a stable code and the request ID. Internal details are
// logged, never sent.
func errorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		p := toProblem(err)
		p.RequestId = c.Response().Header().Get(echo.HeaderXRequestID)
		level := slog.LevelDebug
		if p.Status >= 500 {
			level = slog.LevelError
		}
		log.Log(c.Request().Context(), level, "request failed", "status", p.Status, "code", p.Code,
			"method", c.Request().Method, "route", c.Path(), "requestId", p.RequestId, "err", err.Error())
		h := c.Response().Header()
		switch p.Status {
		case http.StatusUnauthorized:
			h.Set("WWW-Authenticate", `Bearer realm="tenantd", error="invalid_token"`)
		case http.StatusServiceUnavailable:
			h.Set("Retry-After", strconv.Itoa(1))
		}
		h.Set(echo.HeaderContentType, "application/problem+json")
		if c.Request().Method == http.MethodHead {
			_ = c.NoContent(p.Status)
			return
		}
		c.Response().WriteHeader(p.Status)
		_ = jsonEncode(c.Response(), p)
	}
}

func toProblem(err error) oapi.Problem {
	if e, ok := errs.As(err); ok {
		status := kindStatus[e.Kind]
		p := oapi.Problem{Type: problemType + e.Code, Title: http.StatusText(status), Status: status, Code: e.Code, Detail: e.Message}
		if e.Kind == errs.Internal {
			p.Code, p.Detail, p.Type = "internal", "an unexpected error occurred", problemType+"internal"
		}
		if e.Field != "" {
			p.Errors = &[]oapi.FieldError{{Field: e.Field, Message: e.Message}}
			p.Detail = e.Field + ": " + e.Message
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
		return oapi.Problem{Type: problemType + code, Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
	}
	return oapi.Problem{Type: problemType + "internal", Title: http.StatusText(500), Status: 500, Code: "internal",
		Detail: "an unexpected error occurred"}
}
