package httpapi

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/access"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/idempotency"
)

// idempotent adapts the idempotency.Keeper to creating POSTs that carry an
// Idempotency-Key, after the authorization read, so a key is only looked up
// in the caller's own scope. A kept success is replayed only if the caller
// may still make the request (authorizeReplay); a kept refusal as is.
func idempotent(k *idempotency.Keeper) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			values, ok := req.Header[http.CanonicalHeaderKey(idempotency.Header)]
			if req.Method != http.MethodPost || !ok {
				return next(c)
			}
			if c.Path() == "/v1/graphql" {
				return errs.InvalidHeader(idempotency.Header, "idempotency_key_unsupported",
					"GraphQL mutations take an idempotencyKey argument instead: one request may hold several")
			}
			if c.Path() == "/v1/orgs/:orgId/api-keys" {
				return errs.InvalidHeader(idempotency.Header, "idempotency_key_unsupported",
					"a minted API key's answer holds its secret, which tenantd never keeps: mint without a key, and revoke a stray one")
			}
			key, err := idempotency.CheckKey(values)
			if err != nil {
				return err
			}
			id, ok := IdentityFrom(req.Context())
			if !ok {
				return next(c)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			d, inOrg := access.Decided(req.Context()) // outside an org: no role
			rec, kept, err := k.Begin(req.Context(), c.Param("orgId"), id.UserID, string(d.Principal.OrgRole), key,
				idempotency.Fingerprint(body, req.Method, c.Path(), req.URL.Path, req.URL.RawQuery))
			if err != nil {
				return err
			}
			if kept != nil {
				if kept.Status < 300 && inOrg {
					if err := authorizeReplay(d.Principal, c.Path(), body); err != nil {
						return err
					}
				}
				h := c.Response().Header()
				h.Set("Idempotent-Replayed", "true")
				if kept.ETag != "" {
					h.Set("ETag", kept.ETag)
				}
				if kept.ContentType == "" {
					return c.NoContent(kept.Status)
				}
				return c.Blob(kept.Status, kept.ContentType, kept.Body)
			}
			c.SetRequest(req.WithContext(context.WithValue(req.Context(), resourceIDKey{}, rec.ResourceID)))
			w := &recorder{ResponseWriter: c.Response().Writer}
			c.Response().Writer = w
			if err := next(c); err != nil {
				c.Error(err) // render the error now so its response is what gets kept
			}
			resp := c.Response()
			if err := k.Finish(req.Context(), rec, resp.Status, resp.Header().Get(echo.HeaderContentType), resp.Header().Get("ETag"), w.body.Bytes()); err != nil {
				c.Logger().Errorf("idempotency: finish: %v", err)
			}
			return nil
		}
	}
}

type resourceIDKey struct{}

// newResourceID is the ID an idempotent creating request gives what it
// creates (idempotency.Record.ResourceID), the same on every attempt under
// its key; "" without an Idempotency-Key (the service mints one).
func newResourceID(ctx context.Context) string {
	id, _ := ctx.Value(resourceIDKey{}).(string)
	return id
}

// recorder keeps a copy of the response body.
type recorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (w *recorder) Write(b []byte) (int, error) {
	w.body.Write(b)
	return w.ResponseWriter.Write(b)
}
