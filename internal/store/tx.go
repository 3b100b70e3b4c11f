package store

import (
	"context"
	"errors"
	"fmt"
	"slices"

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
// the item as it was when the condition failed (nil when it did not exist),
// returned because every transaction asks for ALL_OLD on failure.
type onFail func(old map[string]types.AttributeValue) error

// txOp is one item of a transaction under construction. Exactly one of the
// four requests is set. Requests are added to the WriteTx only in run, so a
// condition can still be ANDed onto an item already in the transaction
// (guregu/dynamo combines repeated If calls with AND).
type txOp struct {
	k    key
	put  *dynamo.Put
	upd  *dynamo.Update
	del  *dynamo.Delete
	chk  *dynamo.ConditionCheck
	fail onFail
	// proof: the item's condition proves the caller's access (the actor
	// fence): when it failed, it explains the cancellation before any
	// other item's.
	proof bool
}

func (o *txOp) and(expr string, args ...any) {
	switch {
	case o.put != nil:
		o.put.If(expr, args...)
	case o.upd != nil:
		o.upd.If(expr, args...)
	case o.del != nil:
		o.del.If(expr, args...)
	case o.chk != nil:
		o.chk.If(expr, args...)
	}
}

// txn is a TransactWriteItems under construction that remembers, for each
// item, its key and what its failed condition means, so a cancelled
// transaction turns into the domain error that names the condition.
type txn struct {
	d   *DB
	ops []*txOp
	err error // set while building: run returns it without a call
}

func (d *DB) newTx() *txn { return &txn{d: d} }

func (t *txn) add(o *txOp) *txn {
	for _, prev := range t.ops {
		if prev.k == o.k && t.err == nil {
			// DynamoDB refuses a transaction that names an item twice: a
			// bug in the caller, never something to send.
			t.err = fmt.Errorf("transaction touches %s/%s twice", o.k.PK, o.k.SK)
		}
	}
	t.ops = append(t.ops, o)
	return t
}

func (t *txn) put(k key, p *dynamo.Put, f onFail) *txn { return t.add(&txOp{k: k, put: p, fail: f}) }
func (t *txn) update(k key, u *dynamo.Update, f onFail) *txn {
	return t.add(&txOp{k: k, upd: u, fail: f})
}
func (t *txn) delete(k key, del *dynamo.Delete, f onFail) *txn {
	return t.add(&txOp{k: k, del: del, fail: f})
}
func (t *txn) check(k key, c *dynamo.ConditionCheck, f onFail) *txn {
	return t.add(&txOp{k: k, chk: c, fail: f})
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

func (t *txn) len() int { return len(t.ops) }

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
		switch {
		case o.put != nil:
			tx.Put(o.put)
		case o.upd != nil:
			tx.Update(o.upd)
		case o.del != nil:
			tx.Delete(o.del)
		case o.chk != nil:
			tx.Check(o.chk)
		}
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

// errOutcomeUnknown is a transaction the request stopped waiting for: it
// may have reached DynamoDB, which may still apply it (an outside attack
// saw a PATCH answered 503 at its deadline, with DynamoDB paused, applied
// once DynamoDB resumed). The client is told that its write may have
// happened, not merely "retry later": a blind retry could apply it twice.
func errOutcomeUnknown(err error) error {
	return &errs.Error{Kind: errs.Unavailable, Code: errs.CodeWriteOutcomeUnknown,
		Message: "the request timed out after its write was sent, and the write may still be applied: read the resource before you retry, or retry with If-Match (a create, with the same Idempotency-Key)",
		Err:     err}
}

// failWith returns an onFail that always reports e.
func failWith(e error) onFail { return func(map[string]types.AttributeValue) error { return e } }

// versioned reports a missing item as notFound and an existing one (whose
// version moved on) as a failed precondition.
func versioned(notFound error) onFail {
	return func(old map[string]types.AttributeValue) error {
		if old != nil {
			return errVersion
		}
		return notFound
	}
}

var errVersion = ifmatch.ErrVersion

// liveItem is the condition of a write that needs its item (an org, team
// or ticket) to exist and not be under deletion: a child written under a
// parent then never outlives it, because every delete of a parent either
// changes what such writes condition on first (the deleting mark) or
// conditions itself on the children's count.
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

// liveVersioned is versioned for a liveItem condition: an item under
// deletion is not found.
func liveVersioned(notFound error) onFail {
	return func(old map[string]types.AttributeValue) error {
		if gone(old) {
			return notFound
		}
		return errVersion
	}
}

// Errors of the actor fence.
var (
	// errActorGone: the caller's membership ended (removed, or the org is
	// being offboarded) while the request ran. It reads as the
	// authorization read would now answer.
	errActorGone = authz.ErrOrgNotFound
	// errActorDemoted: the caller's org role changed, while the request
	// ran, to one that does not allow it.
	errActorDemoted = errs.E(errs.Forbidden, "forbidden", "your role in this organization no longer allows this")
)

// fenceCond is the actor fence for roles (those at least the floor): the
// caller's OrgUser edge still exists, is not the edge of an owner
// offboarding the org, and has one of roles.
func fenceCond(roles []string) (string, []any) {
	expr := "attribute_exists(pk) AND attribute_not_exists(deleting) AND $ IN ("
	args := []any{"role"}
	for i, r := range roles {
		if i > 0 {
			expr += ", "
		}
		expr += "?"
		args = append(args, r)
	}
	return expr + ")", args
}

// fenced wraps the onFail of an item that carries a fence: a failure is
// the fence's (gone when the edge is missing or deleting, demoted when its
// role is outside roles); otherwise the item's own condition failed.
func fenced(roles []string, gone, demoted error, inner onFail) onFail {
	return func(old map[string]types.AttributeValue) error {
		if old == nil {
			return gone
		}
		if _, ok := old["deleting"]; ok {
			return gone
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

// fenceEdge adds to t a fence on the edge at k: it must exist, outside any
// deletion, with a role at least floor. When t already touches k, the
// condition is ANDed onto that item.
func (d *DB) fenceEdge(t *txn, k key, floor string, gone, demoted error) {
	var roles []string
	for _, r := range authz.RolesFrom(authz.Role(floor)) {
		roles = append(roles, string(r))
	}
	if len(roles) == 0 {
		t.err = fmt.Errorf("fence on %s: unknown role %q", k.SK, floor)
		return
	}
	expr, args := fenceCond(roles)
	if o := t.op(k); o != nil {
		o.and(expr, args...)
		o.fail = fenced(roles, gone, demoted, o.fail)
		o.proof = true
		return
	}
	t.check(k, d.table.Check(attrPK, k.PK).Range(attrSK, k.SK).If(expr, args...), fenced(roles, gone, demoted, nil))
	t.ops[len(t.ops)-1].proof = true
}

// audited adds to t the change's audit event, so the event commits or fails
// with the change; and, when the event's actor acted as a member of the org
// (its ActorFloor is set), the actor fence on their OrgUser edge,
// so the write commits only while the actor still belongs to the org with
// the role they were authorized with, and never once the org's offboarding
// has cut its members off (see docs/data-model.md, "Fences"). When t already
// touches the actor's edge, the fence is ANDed onto that item.
// A write without its event (a zero Event) is refused: it would change
// the org and record nothing.
func (d *DB) audited(ev audit.Event, t *txn) *txn {
	if err := ev.Check(); err != nil {
		t.err = err
		return t
	}
	if !ids.ValidResource(ev.ID) {
		t.err = fmt.Errorf("audit event ID %q is not a ULID", ev.ID)
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

// teamFence adds to t the team fence of userID in teamID: their edge in
// the team must still exist with a team role at least floor (a grant that
// rested on it, authz.Grant). When t already touches that edge, the
// condition is ANDed onto it.
func (d *DB) teamFence(t *txn, orgID, teamID, userID, floor string) {
	if err := checkIDs(ids.Resource("orgId", orgID), ids.Resource("teamId", teamID), ids.User("userId", userID)); err != nil {
		t.err = err
		return
	}
	d.fenceEdge(t, memberKey(orgID, teamID, userID), floor, errTeamRoleLost, errTeamRoleLost)
}

// errTeamRoleLost: the team edge a write was authorized on is gone or has
// a lesser role now.
var errTeamRoleLost = errs.E(errs.Forbidden, "team_role_changed", "your role in this team no longer allows this")

// fence adds to t the actor fence of userID in orgID: their edge (an API
// key's actor: the key, actorKey) must still exist, outside any
// offboarding, with a role at least floor.
func (d *DB) fence(t *txn, orgID, userID, floor string) {
	if err := checkIDs(ids.Resource("orgId", orgID), ids.User("userId", userID)); err != nil {
		t.err = err
		return
	}
	d.fenceEdge(t, actorKey(orgID, userID), floor, errActorGone, errActorDemoted)
}
