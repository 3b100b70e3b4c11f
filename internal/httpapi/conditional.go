package httpapi

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/errs"
)

// conditional turns a handler's ETag `"<version>"` into the entity tag of
// the representation, `"<version>-<digest>"` (the body's digest: it moves
// with anything the answer shows, while If-Match compares versions only),
// or `"<digest>"` for digestOnly; a GET whose If-None-Match names it is
// answered 304. A write with If-None-Match (no write is create-only), or
// with an If-Match outside RFC 9110's grammar, is refused (400), after the
// authorization decision.
func conditional(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if m := req.Method; m != http.MethodGet && m != http.MethodHead {
			if req.Header.Get("If-None-Match") != "" {
				return errs.InvalidHeader("If-None-Match", "unsupported_precondition",
					"If-None-Match applies to GET only: no write is create-only; use If-Match with the version you read")
			}
			if h, ok := req.Header["If-Match"]; ok && !ifMatchSyntax.MatchString(strings.Join(h, ",")) {
				return errs.InvalidHeader("If-Match", "malformed_if_match", `is neither "*" nor a list of quoted entity tags (RFC 9110 13.1.1)`)
			}
		}
		res := c.Response()
		w := &bufferedWriter{ResponseWriter: res.Writer, status: http.StatusOK}
		res.Writer = w
		defer func() { res.Writer = w.ResponseWriter }()
		if err := next(c); err != nil {
			c.Error(err) // rendered into the buffer, then passed on below
		}
		if w.through {
			return nil
		}
		h := w.Header()
		if v, ok := tagged(h.Get("ETag")); ok && w.status >= 200 && w.status < 300 {
			d := fnv.New64a()
			d.Write(w.body.Bytes())
			tag := fmt.Sprintf(`"%d-%016x"`, v, d.Sum64())
			if v == 0 {
				tag = fmt.Sprintf(`"%016x"`, d.Sum64())
			}
			h.Set("ETag", tag)
			if c.Request().Method == http.MethodGet && noneMatch(c.Request().Header.Get("If-None-Match"), tag) {
				h.Del("Content-Type")
				h.Del("Content-Length")
				w.ResponseWriter.WriteHeader(http.StatusNotModified)
				return nil
			}
		}
		w.ResponseWriter.WriteHeader(w.status)
		_, err := w.ResponseWriter.Write(w.body.Bytes())
		return err
	}
}

// bufferedWriter holds an answer with a version until conditional has
// seen it whole; any other answer goes straight through.
type bufferedWriter struct {
	http.ResponseWriter
	status  int
	body    bytes.Buffer
	through bool
}

func (w *bufferedWriter) WriteHeader(status int) {
	w.status = status
	if _, ok := tagged(w.Header().Get("ETag")); !ok || status < 200 || status >= 300 {
		w.through = true
		w.ResponseWriter.WriteHeader(status)
	}
}

func (w *bufferedWriter) Write(b []byte) (int, error) {
	if w.through {
		return w.ResponseWriter.Write(b)
	}
	return w.body.Write(b)
}

// Unwrap lets http.ResponseController reach the connection: a streamed
// answer (an export) flushes and extends its write deadline.
func (w *bufferedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// digestOnly is the ETag a handler sets on an answer that has no version
// but is to be tagged by its digest all the same.
const digestOnly = `"-"`

// tagged reads the version a handler's ETag names: `"<version>"`, or 0
// for digestOnly; ok is false for any other ETag (or none).
func tagged(etag string) (int64, bool) {
	if etag == digestOnly {
		return 0, true
	}
	return tagVersion(etag)
}

// tagVersion is the version a strong entity tag names: the digits before
// the dash of `"<version>-<digest>"`, or of a handler's bare `"<version>"`.
// A weak tag names none (If-Match uses the strong comparison).
func tagVersion(tag string) (int64, bool) {
	if strings.HasPrefix(tag, "W/") {
		return 0, false
	}
	s := strings.Trim(tag, `"`)
	s, _, _ = strings.Cut(s, "-")
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v > 0
}

// ifMatchSyntax is an If-Match header's grammar (RFC 9110 13.1.1): "*",
// or a list of entity tags, each [W/] then a quoted run of etagc.
var ifMatchSyntax = regexp.MustCompile(`^[ \t]*(\*|(W/)?"[^"\x00-\x20\x7f]*"([ \t]*,[ \t]*(W/)?"[^"\x00-\x20\x7f]*")*)[ \t]*$`)

// entityTags splits an If-Match or If-None-Match list: entity tags are
// quoted and hold no comma (ours are digits, a dash and hex).
func entityTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// noneMatch reports whether If-None-Match h matches tag (the weak
// comparison: W/ is ignored on either side).
func noneMatch(h, tag string) bool {
	h = strings.TrimSpace(h)
	if h == "" {
		return false
	}
	if h == "*" {
		return true
	}
	for _, t := range entityTags(h) {
		if strings.TrimPrefix(t, "W/") == strings.TrimPrefix(tag, "W/") {
			return true
		}
	}
	return false
}
