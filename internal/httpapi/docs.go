package httpapi

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
)

// The pages served when Deps.DocsUI is set: GET /docs (Swagger UI over
// /openapi.yaml) and GraphiQL on a browser's GET /v1/graphql. Their assets
// are embedded (npm bundles as package-lock.json pins them), so the pages
// fetch nothing from another origin.
//
//go:embed docs/reference.html docs/graphiql.html docs/assets
var docsFiles embed.FS

// The routes of the pages, outside openapi.yaml: they are no operation of
// the API (TestRoutesMatchSpec lists them as such).
const (
	DocsRoute       = "/docs"
	DocsAssetsRoute = "/docs/assets/:name"
)

// docFile is an embedded file as it is answered: its strong entity tag is
// the digest of its content.
type docFile struct {
	name string
	body []byte
	etag string
}

// docsByName are the embedded files by their path in docsFiles, read
// (and digested) on first use.
var docsByName = sync.OnceValue(func() map[string]docFile {
	out := map[string]docFile{}
	err := fs.WalkDir(docsFiles, "docs", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := docsFiles.ReadFile(p)
		sum := sha256.Sum256(b)
		out[p] = docFile{name: path.Base(p), body: b, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
		return err
	})
	if err != nil {
		panic("httpapi: embedded docs: " + err.Error())
	}
	return out
})

// docsCSP lets the pages load and call this origin only (inline styles
// too: the libraries set some); no frame may embed them.
const docsCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// serveDoc answers the embedded file at p (404 if there is none), with its
// entity tag (If-None-Match: 304), revalidated on every use.
func serveDoc(c echo.Context, p string) error {
	f, ok := docsByName()[p]
	if !ok {
		return echo.ErrNotFound
	}
	h := c.Response().Header()
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	http.ServeContent(c.Response(), c.Request(), f.name, time.Time{}, bytes.NewReader(f.body))
	return nil
}

// registerDocs routes GET /docs and its assets.
func registerDocs(e *echo.Echo) {
	e.GET(DocsRoute, func(c echo.Context) error { return serveDoc(c, "docs/reference.html") })
	e.GET(DocsAssetsRoute, func(c echo.Context) error { return serveDoc(c, "docs/assets/"+c.Param("name")) })
}

// graphiQL answers a GET /v1/graphql whose Accept prefers text/html (a
// browser's navigation, which carries no token) with GraphiQL, before the
// request is authenticated.
func graphiQL(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Path() != "/v1/graphql" || c.Request().Method != http.MethodGet {
			return next(c)
		}
		q := acceptQ(c.Request().Header.Get(echo.HeaderAccept))
		if html := q["text/html"]; html == 0 || html <= q[mediaJSON] || html <= q[mediaGraphQLResponse] {
			return next(c)
		}
		c.Response().Header().Add("Vary", "Accept")
		return serveDoc(c, "docs/graphiql.html")
	}
}
