package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/MicahParks/jwkset"
)

// JWKSMinRefetch is the default least time between two fetches of the JWKS
// that tokens with an unknown kid cause (VerifierConfig.JWKSRefetchGap).
const JWKSMinRefetch = 2 * time.Second

// JWKSRefresh is how often the JWKS is fetched whatever tokens arrive: a key
// the identity provider withdraws stops verifying new tokens within this
// long.
const JWKSRefresh = time.Minute

// jwksTimeout bounds one fetch of the JWKS.
const jwksTimeout = 10 * time.Second

// jwks is the key set of AUTH_JWKS_URL with its rule for a kid it does not
// hold: the token waits for the next fetch that starts after it arrived,
// every token waiting shares that one fetch, and fetches start at least gap
// apart. A new key is accepted on its first token (within gap plus a
// fetch), whatever unauthenticated clients sent before: no token spends a
// refresh that another one needs, as with a rate limiter of burst one. A
// flood of random kids costs the identity provider one fetch per gap.
type jwks struct {
	jwkset.Storage // the keys of the last fetch that succeeded
	ctx            context.Context
	url            string
	gap            time.Duration

	mu   sync.Mutex
	next chan struct{} // closed when the planned fetch (not started yet) has ended; nil when none is planned
	last time.Time     // when the last fetch started

	fetching sync.Mutex // one fetch at a time: an older answer never replaces a newer one
}

// newJWKS fetches the JWKS once (a failure is logged: the server starts and
// tokens get 401 until a fetch succeeds), then every JWKSRefresh until ctx
// ends.
func newJWKS(ctx context.Context, url string, gap time.Duration) *jwks {
	k := &jwks{Storage: jwkset.NewMemoryStorage(), ctx: ctx, url: url, gap: gap}
	<-k.refetch()
	go func() {
		t := time.NewTicker(JWKSRefresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				<-k.refetch()
			}
		}
	}()
	return k
}

// KeyRead returns the key named kid, after a new fetch when the keys held
// do not have it.
func (k *jwks) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	key, err := k.Storage.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) {
		return key, err
	}
	select {
	case <-k.refetch():
	case <-ctx.Done():
		return jwkset.JWK{}, ctx.Err()
	}
	return k.Storage.KeyRead(ctx, kid)
}

// refetch joins the planned fetch, or plans one, and returns a channel
// closed when it has ended. The fetch starts after every caller joined it,
// and no sooner than gap after the one before.
func (k *jwks) refetch() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.next != nil {
		return k.next
	}
	done := make(chan struct{})
	k.next = done
	go func() {
		defer close(done)
		k.fetching.Lock()
		defer k.fetching.Unlock()
		k.mu.Lock()
		wait := time.NewTimer(time.Until(k.last.Add(k.gap)))
		k.mu.Unlock()
		defer wait.Stop()
		select {
		case <-wait.C:
		case <-k.ctx.Done():
			return
		}
		k.mu.Lock()
		k.next, k.last = nil, time.Now() // who comes now waits for the fetch after this one
		k.mu.Unlock()
		if err := k.fetch(); err != nil {
			slog.ErrorContext(k.ctx, "jwks: fetch failed; the keys of the last fetch stay", "url", k.url, "error", err)
		}
	}()
	return done
}

// fetch replaces the keys held with the JWKS's.
func (k *jwks) fetch() error {
	ctx, cancel := context.WithTimeout(k.ctx, jwksTimeout)
	defer cancel()
	got, err := jwkset.NewStorageFromHTTP(k.url, jwkset.HTTPClientStorageOptions{Ctx: ctx, HTTPTimeout: jwksTimeout})
	if err != nil {
		return err
	}
	keys, err := got.KeyReadAll(ctx)
	if err != nil {
		return fmt.Errorf("read fetched keys: %w", err)
	}
	return k.Storage.KeyReplaceAll(ctx, keys)
}
