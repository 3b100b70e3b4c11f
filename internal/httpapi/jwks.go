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

// JWKSRefresh is how often the JWKS is fetched whatever tokens arrive: a
// withdrawn key stops verifying new tokens within this long.
const JWKSRefresh = time.Minute

// jwksTimeout bounds one fetch of the JWKS.
const jwksTimeout = 10 * time.Second

// jwks is the key set of AUTH_JWKS_URL with its rule for a kid it does not
// hold: when the last fetch started at least gap ago, the token starts a
// fetch and waits for it; otherwise it is refused at once. A new key is
// accepted within gap of its publication, and a flood of random kids costs
// the identity provider one fetch per gap.
type jwks struct {
	jwkset.Storage // the keys of the last fetch that succeeded
	ctx            context.Context
	url            string
	gap            time.Duration

	mu   sync.Mutex
	last time.Time // when the last fetch started

	fetching sync.Mutex // one fetch at a time: an older answer never replaces a newer one
}

// newJWKS fetches the JWKS once (a failure is logged, and tokens get 401
// until a fetch succeeds), then every JWKSRefresh until ctx ends.
func newJWKS(ctx context.Context, url string, gap time.Duration) *jwks {
	k := &jwks{Storage: jwkset.NewMemoryStorage(), ctx: ctx, url: url, gap: gap}
	k.due()
	k.refresh()
	go func() {
		t := time.NewTicker(JWKSRefresh)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				k.due()
				k.refresh()
			}
		}
	}()
	return k
}

// KeyRead returns the key named kid, after a new fetch when the keys held
// do not have it and are older than gap.
func (k *jwks) KeyRead(ctx context.Context, kid string) (jwkset.JWK, error) {
	key, err := k.Storage.KeyRead(ctx, kid)
	if !errors.Is(err, jwkset.ErrKeyNotFound) || !k.due() {
		return key, err
	}
	done := make(chan struct{})
	go func() { defer close(done); k.refresh() }()
	select {
	case <-done:
	case <-ctx.Done():
		return jwkset.JWK{}, ctx.Err()
	}
	return k.Storage.KeyRead(ctx, kid)
}

// due reports whether the last fetch started gap ago or more, and if so
// records that the caller starts one now.
func (k *jwks) due() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if time.Since(k.last) < k.gap {
		return false
	}
	k.last = time.Now()
	return true
}

// refresh fetches the JWKS, logging a failure: the keys of the last fetch
// stay.
func (k *jwks) refresh() {
	k.fetching.Lock()
	defer k.fetching.Unlock()
	if err := k.fetch(); err != nil && k.ctx.Err() == nil {
		slog.ErrorContext(k.ctx, "jwks: fetch failed; the keys of the last fetch stay", "url", k.url, "error", err)
	}
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
