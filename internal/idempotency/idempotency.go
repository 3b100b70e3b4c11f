// Package idempotency makes POSTs that create safe to retry, with Stripe's
// semantics: the first request with an Idempotency-Key runs and its
// response is kept for 24 hours; a retry with the same key and body gets the
// same status and body back without running again; the same key with a
// different request is refused (422); a retry while the first is still
// running gets 409. Keys are scoped to the tenant and the caller: another
// tenant or user with the same key never sees the response.
package idempotency

import (
	"cmp"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/tenantd/tenantd/internal/clock"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
)

// Header is the request header that carries the client's key.
const Header = "Idempotency-Key"

// StatusClientClosedRequest is the status of a request whose client went
// away before its answer (nginx's 499): its outcome is unknown to the
// client, so like a 5xx it releases the key for the retry.
const StatusClientClosedRequest = 499

// MaxKeyLen bounds a client's key.
const MaxKeyLen = 255

// Record is a request seen under one key, and once done, its response.
type Record struct {
	OrgID, UserID, Key string
	// Role is the caller's org role (when OrgID is set): like every write of
	// a member, the record is written only while the caller still has it.
	Role        string
	Fingerprint string // hash of method, route, path and body
	Owner       string // random per attempt: recognizes our own write when its response was lost
	// ResourceID is the ID the request gives what it creates (a ticket, a
	// team...), kept by every later attempt under the key: a retry after an
	// outcome the server could not know (a timeout, a crash) meets what the
	// first attempt created instead of creating it again.
	ResourceID string
	// Released marks an attempt that ended in a server error: the key is
	// open to a retry at once.
	Released    bool
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
	// Begin stores r unless an unexpired record exists for its key; then it
	// returns that record and started=false. Returns NotFound
	// (org_not_found) if the caller no longer belongs to the org with r.Role.
	Begin(ctx context.Context, r Record) (existing Record, started bool, err error)
	// TakeOver replaces with r the unfinished record of r's key whose owner
	// is prevOwner. Returns Conflict if it is no longer that (taken over,
	// finished), NotFound as Begin.
	TakeOver(ctx context.Context, r Record, prevOwner string) error
	// Complete stores the response of a begun record, only if it is still
	// there (an offboarding may have deleted it).
	Complete(ctx context.Context, r Record) error
	// Release marks a begun, unfinished record open to a retry.
	Release(ctx context.Context, r Record) error
}

// StaleAfter is how long an unfinished attempt holds its key by default: a
// retry meanwhile gets 409; after it, a retry takes over from an attempt
// that died (a crash) without answering.
const StaleAfter = time.Minute

// ttl is how long a response is replayable.
const ttl = 24 * time.Hour

// Options tune the middleware.
type Options struct {
	// StaleAfter is how long an unfinished attempt holds its key: the
	// longest a request can run and a little more, as an attempt older than
	// that cannot still be running.
	StaleAfter time.Duration
	Now        clock.Clock
}

var (
	errKeyInvalid = errs.InvalidHeader(Header, "invalid_idempotency_key", "must be 1-255 printable ASCII characters")
	errReused     = errs.E(errs.Unprocessable, "idempotency_key_reused", "this Idempotency-Key was used with a different request")
	errInProgress = errs.E(errs.Conflict, "idempotency_in_progress", "a request with this Idempotency-Key is still being processed; retry later")
	errUnreadable = errs.E(errs.Conflict, "idempotency_unreadable", "the response kept for this Idempotency-Key cannot be replayed; use a new key")
)

// bodyCipher seals a record's response under an AES-256 key derived from
// the caller and their Idempotency-Key, which the table never holds:
// reading the table is not enough to read a kept response.
func bodyCipher(r Record) cipher.AEAD {
	key := sha256.Sum256([]byte("tenantd/idempotency/body/v1\x00" + r.UserID + "\x00" + r.Key))
	b, _ := aes.NewCipher(key[:]) // 32 bytes: never fails
	gcm, _ := cipher.NewGCM(b)
	return gcm
}

func seal(r Record, plain []byte) []byte {
	if len(plain) == 0 {
		return nil
	}
	gcm := bodyCipher(r)
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return gcm.Seal(nonce, nonce, plain, []byte(r.Fingerprint))
}

func open(r Record, sealed []byte) ([]byte, error) {
	if len(sealed) == 0 {
		return nil, nil
	}
	gcm := bodyCipher(r)
	n := gcm.NonceSize()
	if len(sealed) < n {
		return nil, errUnreadable
	}
	return gcm.Open(nil, sealed[:n], sealed[n:], []byte(r.Fingerprint))
}

// Keeper runs the protocol on a Storer: Begin before the request, Finish
// with its response. It knows nothing of HTTP: the HTTP layer adapts it.
type Keeper struct {
	store Storer
	stale time.Duration
	now   clock.Clock
	ids   *ids.Generator
}

// NewKeeper returns a Keeper.
func NewKeeper(s Storer, o Options) *Keeper {
	if o.StaleAfter <= 0 {
		o.StaleAfter = StaleAfter
	}
	now := clock.Or(o.Now)
	return &Keeper{store: s, stale: o.StaleAfter, now: now, ids: ids.NewGenerator(now)}
}

// CheckKey returns the one valid key among a request's header values: 1 to
// MaxKeyLen printable ASCII characters.
func CheckKey(values []string) (string, error) {
	if len(values) != 1 || len(values[0]) == 0 || len(values[0]) > MaxKeyLen ||
		strings.ContainsFunc(values[0], func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		return "", errKeyInvalid
	}
	return values[0], nil
}

// Fingerprint identifies a request: its parts (method, route, path, query)
// and its body.
func Fingerprint(body []byte, parts ...string) string {
	h := sha256.New()
	for _, part := range parts {
		h.Write([]byte(part))
		h.Write([]byte{0})
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Begin records that the request (orgID, userID, key) with fingerprint
// starts, for a caller with role in orgID ("" outside an org). With kept ==
// nil, the request is to run, giving what it creates rec.ResourceID, and rec
// is to be finished; otherwise kept is the response to replay. Errors: the
// key was used with another request (422), an earlier attempt still runs
// (409). An attempt that ended in a server error, or ran longer than
// StaleAfter (it died), is taken over, keeping its ResourceID.
func (k *Keeper) Begin(ctx context.Context, orgID, userID, role, key, fingerprint string) (rec Record, kept *Record, err error) {
	t := k.now()
	owner := make([]byte, 16)
	_, _ = rand.Read(owner)
	rec = Record{OrgID: orgID, UserID: userID, Role: role, Key: key, Fingerprint: fingerprint,
		Owner: hex.EncodeToString(owner), ResourceID: k.ids.NewAt(t), CreatedAt: t, ExpiresAt: t.Add(ttl)}
	existing, started, err := k.store.Begin(ctx, rec)
	if err != nil {
		// The record's write may have landed though its answer did not:
		// release it (ours only: harmless when nothing landed), so the
		// retry need not wait StaleAfter.
		go func() { _ = k.release(ctx, rec) }()
		return rec, nil, err
	}
	switch {
	case started:
		return rec, nil, nil
	case existing.Fingerprint != rec.Fingerprint:
		return rec, nil, errReused
	case !existing.Done && (existing.Released || existing.CreatedAt.Before(t.Add(-k.stale))):
		rec.ResourceID = cmp.Or(existing.ResourceID, rec.ResourceID)
		if err := k.store.TakeOver(ctx, rec, existing.Owner); err != nil {
			if errs.Is(err, errs.Conflict) {
				return rec, nil, errInProgress
			}
			return rec, nil, err
		}
		return rec, nil, nil
	case !existing.Done:
		return rec, nil, errInProgress
	}
	plain, err := open(rec, existing.Body)
	if err != nil {
		return rec, nil, errUnreadable
	}
	existing.Body = plain
	return rec, &existing, nil
}

// Finish ends a begun request with its response: a 5xx, 429 or 499
// (nothing durable happened, or it cannot be told) releases the key for a
// retry (in the background when the request ran out of time); anything else
// is kept, its body sealed with a key only the client's Idempotency-Key
// gives (it may hold a secret, an invitation's token), never in clear.
func (k *Keeper) Finish(ctx context.Context, rec Record, status int, contentType, etag string, body []byte) error {
	if status >= 500 || status == http.StatusTooManyRequests || status == StatusClientClosedRequest {
		if ctx.Err() != nil {
			go func() { _ = k.release(ctx, rec) }()
			return nil
		}
		return k.release(ctx, rec)
	}
	rec.Done, rec.Status, rec.ContentType, rec.ETag = true, status, contentType, etag
	rec.Body = seal(rec, body)
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	return k.store.Complete(bctx, rec)
}

// release opens rec's key to a retry, in a bookkeeping context.
func (k *Keeper) release(ctx context.Context, rec Record) error {
	bctx, cancel := bookkeeping(ctx)
	defer cancel()
	return k.store.Release(bctx, rec)
}

// bookkeeping is the context of the record's last write: it outlives a
// cancelled request but is bounded, so a hung database cannot hold it open.
func bookkeeping(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
}
