// Package idempotency makes POSTs that create safe to retry, with Stripe's
// semantics: the first request with an Idempotency-Key runs and its
// response is kept for 24 hours; a retry with the same key and body gets the
// same status and body back without running again; the same key with a
// different request is refused (422); a retry while the first is still
// running gets 409. Keys are scoped to the tenant and the caller: another
// tenant or user with the same key never sees the response.
package idempotency

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
)

// Header is the request header that carries the client's key.
const Header = "Idempotency-Key"

// MaxKeyLen bounds a client's key.
const MaxKeyLen = 255

// Record is a request seen under one key, and once done, its response.
type Record struct {
	OrgID, UserID, Key string
	// Role is the caller's org role (when OrgID is set): the record is
	// written only while the caller still belongs to the org with it, as
	// every write of a member is (the actor fence).
	Role        string
	Fingerprint string // hash of method, route, path and body
	Owner       string // random per attempt: recognizes our own write when its response was lost
	Done        bool
	Status      int
	ContentType string
	ETag        string
	Body        []byte
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Storer keeps records.
type Storer interface {
	// Begin stores r unless a live record exists for its key; then it
	// returns that record and started=false. Returns NotFound (org_not_found)
	// if the caller no longer belongs to the org with r.Role.
	Begin(ctx context.Context, r Record) (existing Record, started bool, err error)
	// Complete stores the response of a begun record, only if the begun
	// record is still there (an offboarding may have deleted it).
	Complete(ctx context.Context, r Record) error
	// Abandon removes a begun record so that the key can be retried (after
	// a server error).
	Abandon(ctx context.Context, r Record) error
}

// Options tune the middleware.
type Options struct {
	TTL time.Duration // how long a response is replayable (default 24 h)
	Now clock.Clock
	// Authorize decides whether the caller may still make the request, as
	// the handler would decide it now (body is the request's): a replay is
	// authorized like a new request, so a caller demoted since the first
	// one does not get its response (which may hold a secret, such as an
	// invitation's token). nil allows every replay.
	Authorize func(c echo.Context, body []byte) error
}

var (
	errKeyInvalid = errs.InvalidField(Header, "invalid_idempotency_key", "must be 1-255 printable ASCII characters")
	errReused     = errs.E(errs.Unprocessable, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	errInProgress = errs.E(errs.Conflict, "idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry later")
	errUnreadable = errs.E(errs.Conflict, "idempotency_unreadable", "the response kept for this Idempotency-Key cannot be replayed; use a new key")
)

// bodyKey is the AES-256 key a record's response is sealed with: derived
// from the caller and their Idempotency-Key, which the table never holds
// (its key is another hash of them), so reading the table is not enough to
// read a kept response.
func bodyKey(r Record) []byte {
	h := sha256.Sum256([]byte("tenantd/idempotency/body/v1\x00" + r.UserID + "\x00" + r.Key))
	return h[:]
}

func seal(r Record, plain []byte) []byte {
	if len(plain) == 0 {
		return nil
	}
	gcm := newGCM(bodyKey(r))
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return gcm.Seal(nonce, nonce, plain, []byte(r.Fingerprint))
}

func open(r Record, sealed []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	gcm := newGCM(bodyKey(r))
	n := gcm.NonceSize()
	if len(sealed) < n {
		return nil, errUnreadable
	}
	return gcm.Open(nil, sealed[:n], sealed[n:], []byte(r.Fingerprint))
}

func newGCM(key []byte) cipher.AEAD {
	b, _ := aes.NewCipher(key) // 32 bytes: never fails
	gcm, _ := cipher.NewGCM(b)
	return gcm
}

func validKey(k string) bool {
	if len(k) == 0 || len(k) > MaxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// Middleware applies to POST requests carrying an Idempotency-Key. It must
// run after authentication and the org authorization read, so that a key is
// only ever looked up inside the caller's own scope.
func Middleware(s Storer, o Options) echo.MiddlewareFunc {
	if o.TTL == 0 {
		o.TTL = 24 * time.Hour
	}
	now := clock.Or(o.Now)
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			req := c.Request()
			k, ok := req.Header[http.CanonicalHeaderKey(Header)]
			if req.Method != http.MethodPost || !ok {
				return next(c)
			}
			if len(k) != 1 || !validKey(k[0]) {
				return errKeyInvalid
			}
			id, ok := authz.IdentityFrom(req.Context())
			if !ok {
				return next(c)
			}
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			h := sha256.New()
			for _, part := range []string{req.Method, c.Path(), req.URL.Path, req.URL.RawQuery} {
				h.Write([]byte(part))
				h.Write([]byte{0})
			}
			h.Write(body)
			t := now()
			owner := make([]byte, 16)
			_, _ = rand.Read(owner)
			rec := Record{OrgID: c.Param("orgId"), UserID: id.UserID, Key: k[0], Fingerprint: hex.EncodeToString(h.Sum(nil)),
				Owner: hex.EncodeToString(owner), CreatedAt: t, ExpiresAt: t.Add(o.TTL)}
			if p, ok := authz.PrincipalFrom(req.Context()); ok {
				rec.Role = string(p.OrgRole)
			}
			existing, started, err := s.Begin(req.Context(), rec)
			if err != nil {
				return err
			}
			if !started {
				switch {
				case existing.Fingerprint != rec.Fingerprint:
					return errReused
				case !existing.Done:
					return errInProgress
				}
				// A kept success holds what the request made (an invitation's
				// token, say): it is only for a caller still allowed to make
				// it. A kept refusal reveals nothing new and replays as is.
				if o.Authorize != nil && existing.Status < 300 {
					if err := o.Authorize(c, body); err != nil {
						return err
					}
				}
				plain, err := open(rec, existing.Body)
				if err != nil {
					return errUnreadable
				}
				existing.Body = plain
				return replay(c, existing)
			}
			w := &recorder{ResponseWriter: c.Response().Writer}
			c.Response().Writer = w
			err = next(c)
			if err != nil {
				c.Error(err) // render the error now so its response is what gets stored
			}
			status := c.Response().Status
			if status >= 500 || status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
				// Nothing durable happened, or we cannot tell: let the key be
				// retried. If the request ran out of time the database may be
				// what hangs, and the late answer must not wait for it: then
				// the record is released in the background.
				abandon := func() {
					ctx, cancel := bookkeeping(req.Context())
					defer cancel()
					_ = s.Abandon(ctx, rec)
				}
				if req.Context().Err() != nil {
					go abandon()
				} else {
					abandon()
				}
				return nil
			}
			rec.Done, rec.Status = true, status
			rec.ContentType = c.Response().Header().Get(echo.HeaderContentType)
			rec.ETag = c.Response().Header().Get("ETag")
			// The response may hold a secret (an invitation's token): it is
			// stored sealed with a key only the client's Idempotency-Key
			// gives, never in clear.
			rec.Body = seal(rec, w.body.Bytes())
			ctx, cancel := bookkeeping(req.Context())
			defer cancel()
			if err := s.Complete(ctx, rec); err != nil {
				c.Logger().Errorf("idempotency: complete: %v", err)
			}
			return nil
		}
	}
}

// bookkeeping is the context of the record's last write: it outlives a
// cancelled request (the response is already written) but is bounded, so a
// hung database cannot hold the request open.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}

func replay(c echo.Context, r Record) error {
	h := c.Response().Header()
	h.Set("Idempotent-Replayed", "true")
	if r.ETag != "" {
		h.Set("ETag", r.ETag)
	}
	if r.ContentType == "" {
		return c.NoContent(r.Status)
	}
	return c.Blob(r.Status, r.ContentType, r.Body)
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
