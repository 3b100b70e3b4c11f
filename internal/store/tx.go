package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/audit"
	"github.com/tenantd/tenantd/internal/authz"
	"github.com/tenantd/tenantd/internal/errs"
	"github.com/tenantd/tenantd/internal/ids"
	"github.com/tenantd/tenantd/internal/ifmatch"
)

// maxTxItems is DynamoDB's limit of items in one TransactWriteItems.
const maxTxItems = 100

// onFail says what a failed condition of one transaction item means; old is
// the item then (ALL_OLD; nil when it did not exist).
type onFail func(old map[string]types.AttributeValue) error

// txOp is one item of a transaction under construction, added to the
// WriteTx only in run, so a condition can still be ANDed onto it.
type txOp struct {
	k     key
	and   func(expr string, args ...any) // the request's If
	addTo func(*dynamo.WriteTx)
	fail  onFail
	// proof: the item's condition proves the caller's access (a fence):
	// when it failed, it explains the cancellation before any other item's.
	proof bool
}

// txn is a TransactWriteItems under construction that remembers each
// item's key and what its failed condition means (the domain error).
type txn struct {
	d   *DB
	ops []*txOp
	err error // the first failure while building: run returns it without a call
}

// newTx starts a transaction; checks are those of its IDs (checkIDs), the
// first that failed returned by run.
func (d *DB) newTx(checks ...error) *txn { return &txn{d: d, err: checkIDs(checks...)} }

func (t *txn) add(o *txOp) *txn {
	if t.op(o.k) != nil {
		// DynamoDB refuses a transaction that names an item twice.
		t.err = cmp.Or(t.err, fmt.Errorf("transaction touches %s/%s twice", o.k.PK, o.k.SK))
	}
	t.ops = append(t.ops, o)
	return t
}

func (t *txn) put(k key, p *dynamo.Put, f onFail) *txn {
	return t.add(&txOp{k: k, fail: f, and: func(e string, a ...any) { p.If(e, a...) }, addTo: func(tx *dynamo.WriteTx) { tx.Put(p) }})
}
func (t *txn) update(k key, u *dynamo.Update, f onFail) *txn {
	return t.add(&txOp{k: k, fail: f, and: func(e string, a ...any) { u.If(e, a...) }, addTo: func(tx *dynamo.WriteTx) { tx.Update(u) }})
}
func (t *txn) delete(k key, d *dynamo.Delete, f onFail) *txn {
	return t.add(&txOp{k: k, fail: f, and: func(e string, a ...any) { d.If(e, a...) }, addTo: func(tx *dynamo.WriteTx) { tx.Delete(d) }})
}
func (t *txn) check(k key, c *dynamo.ConditionCheck, f onFail) *txn {
	return t.add(&txOp{k: k, fail: f, and: func(e string, a ...any) { c.If(e, a...) }, addTo: func(tx *dynamo.WriteTx) { tx.Check(c) }})
}

// op returns the item of t that writes or checks k, if any.
func (t *txn) op(k key) *txOp {
	for _, o := range t.ops {
		if o.k == k {
			return o
		}
	}
	return nil
}

// run executes the transaction; op names it in wrapped errors.
func (t *txn) run(ctx context.Context, op string) error {
	if t.err != nil {
		return fmt.Errorf("%s: %w", op, t.err)
	}
	if len(t.ops) > maxTxItems {
		return fmt.Errorf("%s: %d items exceed the transaction limit of %d", op, len(t.ops), maxTxItems)
	}
	tx := t.d.db.WriteTx().IncludeAllItemsInCondCheckFail(true)
	for _, o := range t.ops {
		o.addTo(tx)
	}
	err := tx.Run(ctx)
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		// The caller's access first: a caller it refuses learns nothing
		// from the other conditions (whether the ticket they name exists).
		failed := false
		for _, proofs := range []bool{true, false} {
			for i, r := range tce.CancellationReasons {
				if r.Code == nil || *r.Code != "ConditionalCheckFailed" || i >= len(t.ops) || t.ops[i].proof != proofs {
					continue
				}
				failed = true
				if f := t.ops[i].fail; f != nil {
					if derr := f(r.Item); derr != nil {
						return derr
					}
				}
			}
		}
		if failed {
			return errs.E(errs.Conflict, "conflict", "the change conflicts with the current state")
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", op, errOutcomeUnknown(err))
	}
	return fmt.Errorf("%s: %w", op, translate(err))
}

// errOutcomeUnknown is a transaction the request stopped waiting for, which
// DynamoDB may still apply: a blind retry could apply it twice.
func errOutcomeUnknown(err error) error {
	return &errs.Error{Kind: errs.Unavailable, Code: errs.CodeWriteOutcomeUnknown,
		Message: "the request timed out after its write was sent, and the write may still be applied: read the resource before you retry, or retry with If-Match (a create, with the same Idempotency-Key)",
		Err:     err}
}

// failWith returns an onFail that always reports e.
func failWith(e error) onFail { return func(map[string]types.AttributeValue) error { return e } }

// missingOr reads a failed condition of a write to an item that must exist:
// notFound when it does not, else e (its version, say).
func missingOr(notFound, e error) onFail {
	return func(old map[string]types.AttributeValue) error {
		if old == nil {
			return notFound
		}
		return e
	}
}

var errVersion = ifmatch.ErrVersion

// liveItem is the condition of a write that needs its item (an org, team
// or ticket) to exist and not be under deletion.
const liveItem = "attribute_exists(pk) AND attribute_not_exists(deleting)"

// The conditions of an update or delete at the version read: the item
// exists (and, for live*, is not being deleted) with that version.
const (
	existsAtVersion = "attribute_exists(pk) AND version = ?"
	liveAtVersion   = liveItem + " AND version = ?"
)

// gone reports whether an item's old image is absent or marked deleting:
// to every caller, an item under deletion no longer exists.
func gone(old map[string]types.AttributeValue) bool { return old == nil || old["deleting"] != nil }

// goneOr reads a failed condition of a write to a live item (liveItem):
// notFound when it is gone or under deletion, else e.
func goneOr(notFound, e error) onFail {
	return func(old map[string]types.AttributeValue) error {
		if gone(old) {
			return notFound
		}
		return e
	}
}

// Errors of the actor fence, when the caller's membership ended or their
// role no longer allows the write, while the request ran.
var (
	errActorGone    = authz.ErrOrgNotFound
	errActorDemoted = errs.E(errs.Forbidden, "forbidden", "your role in this organization no longer allows this")
)

// fenced wraps the onFail of an item that carries a fence: lost when the
// edge is gone, demoted when its role is outside roles, else inner's.
func fenced(roles []string, lost, demoted error, inner onFail) onFail {
	return func(old map[string]types.AttributeValue) error {
		if gone(old) {
			return lost
		}
		if r, ok := old["role"].(*types.AttributeValueMemberS); !ok || !slices.Contains(roles, r.Value) {
			return demoted
		}
		if inner != nil {
			return inner(old)
		}
		return nil
	}
}

// fenceEdge adds to t a fence on the edge at k: it must exist, not be the
// edge of an owner offboarding the org (deleting), and have a role at least
// floor. When t already touches k, the condition is ANDed onto that item.
func (d *DB) fenceEdge(t *txn, k key, floor string, lost, demoted error) {
	var roles []string
	args := []any{"role"}
	for _, r := range authz.RolesFrom(authz.Role(floor)) {
		roles = append(roles, string(r))
		args = append(args, string(r))
	}
	if len(roles) == 0 {
		t.err = cmp.Or(t.err, fmt.Errorf("fence on %s: unknown role %q", k.SK, floor))
		return
	}
	expr := "attribute_exists(pk) AND attribute_not_exists(deleting) AND $ IN (" +
		strings.Join(slices.Repeat([]string{"?"}, len(roles)), ", ") + ")"
	if o := t.op(k); o != nil {
		o.and(expr, args...)
		o.fail = fenced(roles, lost, demoted, o.fail)
		o.proof = true
		return
	}
	t.check(k, d.checkAt(k).If(expr, args...), fenced(roles, lost, demoted, nil))
	t.ops[len(t.ops)-1].proof = true
}

// audited adds to t the change's audit event and the actor's fences
// (docs/data-model.md, section 4a): on their OrgUser edge (ActorFloor), on
// their team edge (ActorTeamID). A zero Event is refused.
func (d *DB) audited(ev audit.Event, t *txn) *txn {
	if err := ev.Check(); err != nil {
		t.err = cmp.Or(t.err, err)
		return t
	}
	if !ids.ValidResource(ev.ID) {
		t.err = cmp.Or(t.err, fmt.Errorf("audit event ID %q is not a ULID", ev.ID))
		return t
	}
	if ev.ActorFloor != "" {
		d.fence(t, ev.OrgID, ev.ActorID, ev.ActorFloor)
	}
	if ev.ActorTeamID != "" {
		d.teamFence(t, ev.OrgID, ev.ActorTeamID, ev.ActorID, ev.ActorTeamFloor)
	}
	return t.put(key{auditPK(ev.OrgID, ev.At), auditSK(ev.ID)}, d.table.Put(toAuditItem(ev)).If(notExists), nil)
}

// teamFence adds to t the team fence of userID in teamID, whose edge a grant
// rested on (authz.Grant): it must still exist with a role at least floor.
func (d *DB) teamFence(t *txn, orgID, teamID, userID, floor string) {
	if err := checkIDs(ids.Resource("orgId", orgID), ids.Resource("teamId", teamID), ids.User("userId", userID)); err != nil {
		t.err = cmp.Or(t.err, err)
		return
	}
	d.fenceEdge(t, memberKey(orgID, teamID, userID), floor, errTeamRoleLost, errTeamRoleLost)
}

// errTeamRoleLost: the team edge a write was authorized on is gone or lesser.
var errTeamRoleLost = errs.E(errs.Forbidden, "team_role_changed", "your role in this team no longer allows this")

// fence adds to t the actor fence of userID in orgID: their edge (actorKey)
// must still exist, outside any offboarding, with a role at least floor.
func (d *DB) fence(t *txn, orgID, userID, floor string) {
	if err := checkIDs(ids.Resource("orgId", orgID), ids.User("userId", userID)); err != nil {
		t.err = cmp.Or(t.err, err)
		return
	}
	d.fenceEdge(t, actorKey(orgID, userID), floor, actorGone(userID, errActorGone), errActorDemoted)
}
