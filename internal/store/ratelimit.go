package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ratelimit"
)

// Limits is the rate limiter's Ledger: one GCRA token bucket per key
// (docs/data-model.md, RateLimit), leased by conditional UpdateItems whose
// failure returns the item, so a refusal costs no read.
type Limits struct{ DB *DB }

// rateLimitItem is a rate-limit key's global bucket.
type rateLimitItem struct {
	PK        string `dynamo:"pk"`
	SK        string `dynamo:"sk"`
	Type      string `dynamo:"type"`
	TAT       int64  `dynamo:"tat"`       // epoch µs from which on the bucket is full
	ExpiresAt int64  `dynamo:"expiresAt"` // epoch seconds, the TTL attribute: by then the bucket is full, as an absent item is
}

// leaseTries bounds the writes of one Lease: a lost race with another
// replica costs one more.
const leaseTries = 3

var errLeaseContended = errs.E(errs.Unavailable, "rate_limit_contended", "the rate limit's bucket changed under every try")

// Lease spends q.Min to q.Max tokens of key's bucket (key is
// "<policy>:<id>", policy org, user or caller).
func (l *Limits) Lease(ctx context.Context, key string, q ratelimit.Lease) (ratelimit.Grant, error) {
	policy, id, _ := strings.Cut(key, ":")
	var err error
	switch policy {
	case "org":
		err = ids.Resource("orgId", id)
	case "user", "caller":
		err = ids.User("userId", id)
	default:
		err = errs.InvalidField("key", "invalid_key", "not a rate-limit key")
	}
	if err != nil {
		return ratelimit.Grant{}, err
	}
	k := rateLimitKey(policy, id)
	now, iv := q.Now.UnixMicro(), max(1, q.Interval.Microseconds())
	full := now + int64(q.Burst)*iv // the latest TAT the bucket allows
	want, busy := q.Max, q.Busy
	for range leaseTries {
		u := l.DB.table.Update(attrPK, k.PK).Range(attrSK, k.SK).Set("type", typeRateLimit).
			Set(Schema.TTLAttribute, full/1e6+1).IncludeItemInCondCheckFail(true)
		if busy { // the bucket is not full: its TAT moves on by the tokens spent
			u.Add("tat", int64(want)*iv).If("$ > ? AND $ <= ?", "tat", now, "tat", full-int64(want)*iv)
		} else { // the bucket is full (or has no item): its TAT starts from now
			u.Set("tat", now+int64(want)*iv).If("attribute_not_exists($) OR $ <= ?", "tat", "tat", now)
		}
		var it rateLimitItem
		err := u.OnlyUpdatedValue(ctx, &it)
		if err == nil {
			return ratelimit.Grant{Granted: want, TAT: time.UnixMicro(it.TAT)}, nil
		}
		var old rateLimitItem // the zero item when there is none
		if failed, _ := condFailed(err); !failed {
			return ratelimit.Grant{}, fmt.Errorf("lease rate limit: %w", translate(err))
		}
		if _, err := dynamo.UnmarshalItemFromCondCheckFailed(err, &old); err != nil {
			return ratelimit.Grant{}, fmt.Errorf("lease rate limit: %w", err)
		}
		busy = old.TAT > now
		avail := int((full - max(old.TAT, now)) / iv)
		if avail < q.Min {
			return ratelimit.Grant{TAT: time.UnixMicro(max(old.TAT, now))}, nil
		}
		want = min(q.Max, avail)
	}
	return ratelimit.Grant{}, errLeaseContended
}
