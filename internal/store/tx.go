package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/guregu/dynamo/v2"

	"github.com/tenantd/tenantd/internal/errs"
)

// maxTxItems is DynamoDB's limit of items in one TransactWriteItems.
const maxTxItems = 100

// onFail says what a failed condition of one transaction item means; existed
// tells whether the item was there (its old image came back).
type onFail func(existed bool) error

// txn is a TransactWriteItems under construction that remembers, for each
// item, what its failed condition means, so a cancelled transaction turns
// into the domain error that names the condition.
type txn struct {
	tx    *dynamo.WriteTx
	fails []onFail
	err   error // set while building: run returns it without a call
}

func (d *DB) newTx() *txn {
	return &txn{tx: d.db.WriteTx().IncludeAllItemsInCondCheckFail(true)}
}

func (t *txn) put(p *dynamo.Put, f onFail) *txn {
	t.tx.Put(p)
	t.fails = append(t.fails, f)
	return t
}

func (t *txn) update(u *dynamo.Update, f onFail) *txn {
	t.tx.Update(u)
	t.fails = append(t.fails, f)
	return t
}

func (t *txn) delete(del *dynamo.Delete, f onFail) *txn {
	t.tx.Delete(del)
	t.fails = append(t.fails, f)
	return t
}

func (t *txn) check(c *dynamo.ConditionCheck, f onFail) *txn {
	t.tx.Check(c)
	t.fails = append(t.fails, f)
	return t
}

func (t *txn) len() int { return len(t.fails) }

// run executes the transaction; op names it in wrapped errors.
func (t *txn) run(ctx context.Context, op string) error {
	if t.err != nil {
		return fmt.Errorf("%s: %w", op, t.err)
	}
	if len(t.fails) > maxTxItems {
		return fmt.Errorf("%s: %d items exceed the transaction limit of %d", op, len(t.fails), maxTxItems)
	}
	err := t.tx.Run(ctx)
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if r.Code == nil || *r.Code != "ConditionalCheckFailed" || i >= len(t.fails) {
				continue
			}
			if t.fails[i] != nil {
				if derr := t.fails[i](r.Item != nil); derr != nil {
					return derr
				}
			}
			return errs.E(errs.Conflict, "conflict", "the change conflicts with the current state")
		}
	}
	return fmt.Errorf("%s: %w", op, translate(err))
}

// failWith returns an onFail that always reports e.
func failWith(e error) onFail { return func(bool) error { return e } }

// versioned reports a missing item as notFound and an existing one (whose
// version moved on) as a failed precondition.
func versioned(notFound error) onFail {
	return func(existed bool) error {
		if existed {
			return errVersion
		}
		return notFound
	}
}

var errVersion = errs.ErrVersion
