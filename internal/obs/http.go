package obs

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Unmatched is the route label of every request that matched no route: the
// raw path is never a label (it would carry whatever a client sends, tokens
// included, and grow the series without bound).
const Unmatched = "unmatched"

// Method is the method label of a request: one of the methods the API
// knows, or "other". Clients choose methods freely; labels must not.
func Method(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// HTTP are the request metrics. Every label comes from a bounded set: the
// route template (or Unmatched), the Method set and the status code the
// server wrote. There is no host or URL label.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP registers the request metrics with reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenantd_requests_total", Help: "HTTP requests by method, route template and the status code sent.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tenantd_request_duration_seconds", Help: "HTTP request latency by method and route template.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"method", "route"}),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// Observe counts one request, once its response is written: code is the
// status the client got, route the route template (or Unmatched).
func (h *HTTP) Observe(method, route string, code int, d time.Duration) {
	h.requests.WithLabelValues(method, route, strconv.Itoa(code)).Inc()
	h.duration.WithLabelValues(method, route).Observe(d.Seconds())
}
