package httpapi

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/obs"
)

// countRequests counts each request once its response is written (an error
// rendered first), so the code label is the status the client got.
func countRequests(m *obs.HTTP, route func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			m.Observe(obs.Method(c.Request().Method), route(c), c.Response().Status, time.Since(start))
			return nil
		}
	}
}

// logRequests counts a request's DynamoDB calls and writes one log line for
// it (ids, route template, status, latency, the DynamoDB cost, its trace).
// It never logs headers or raw paths, so tokens stay out of the logs.
func logRequests(m *obs.Metrics, log *slog.Logger, route func(echo.Context) string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			ctx, calls := obs.WithCalls(c.Request().Context())
			c.SetRequest(c.Request().WithContext(ctx))
			if err := next(c); err != nil {
				c.Error(err) // write the response now, so its status is logged
			}
			n, attempts, capacity := calls.Snapshot()
			route, method := route(c), obs.Method(c.Request().Method)
			if op := calls.OperationOf(); op != "" {
				route += " " + op // a GraphQL operation, from the schema's root fields: bounded
			}
			m.ObserveRequest(method, route, n, capacity)
			attrs := make([]slog.Attr, 0, 14)
			attrs = append(attrs, slog.String("requestId", c.Response().Header().Get(echo.HeaderXRequestID)),
				slog.String("method", method), slog.String("route", route), slog.Int("status", c.Response().Status),
				slog.Float64("latencyMs", float64(time.Since(start).Microseconds())/1000),
				slog.Int("dynamodbCalls", n), slog.Int("dynamodbAttempts", attempts), slog.Float64("dynamodbCapacity", capacity))
			if cid := audit.ClientRequestID(c.Request().Context()); cid != "" {
				attrs = append(attrs, slog.String("clientRequestId", cid))
			}
			if org := c.Param("orgId"); ids.ValidResource(org) {
				attrs = append(attrs, slog.String("orgId", org))
			}
			if id, ok := IdentityFrom(c.Request().Context()); ok {
				attrs = append(attrs, slog.String("userId", id.UserID))
			}
			if tid := obs.TraceID(c.Request().Context(), c.Request().Header.Get("Traceparent")); tid != "" {
				attrs = append(attrs, slog.String("traceId", tid))
			}
			log.LogAttrs(c.Request().Context(), slog.LevelInfo, "request", attrs...)
			return nil
		}
	}
}
