package httpapi

import (
	"github.com/labstack/echo/v4"
	//lint:ignore SA1019 the contrib instrumentation of Echo the project uses; its successor (labstack/echo-opentelemetry) is not served by the module proxy here
	"go.opentelemetry.io/contrib/instrumentation/github.com/labstack/echo/otelecho"
	"go.opentelemetry.io/otel/attribute"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/obs"
)

// traceRequests gives each request its server span (otelecho), named by
// its method and route template. The span never carries the raw path,
// which may hold an invitation's token (url.path is the template too), nor
// a header, a query or a body; otelecho's metrics are off.
func traceRequests(t *obs.Tracing, route func(echo.Context) string) []echo.MiddlewareFunc {
	server := otelecho.Middleware(obs.ServiceName, otelecho.WithTracerProvider(t.Provider), otelecho.WithPropagators(t.Propagator),
		otelecho.WithMeterProvider(metricnoop.NewMeterProvider()))
	name := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			span := trace.SpanFromContext(c.Request().Context())
			if span.IsRecording() {
				r := route(c)
				span.SetName(obs.Method(c.Request().Method) + " " + r)
				span.SetAttributes(semconv.HTTPRoute(r), semconv.URLPath(r),
					attribute.String("tenantd.request_id", audit.RequestID(c.Request().Context())))
			}
			return next(c)
		}
	}
	return []echo.MiddlewareFunc{server, name}
}
